// The owner's saved contacts and phone integrations over HTTP: listed after
// a put, deleted as one config event, another tenant's and malformed ids
// refused, and a deletion that outlives a node restart.
#include <doctest/doctest.h>

#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct contacts_fixture {
  test::temp_dir dir;
  std::unique_ptr<test::running_node> node = std::make_unique<test::running_node>(dir);
  std::string token;
  std::string other_token;

  contacts_fixture() {
    token = node->make_tenant("Acme").second;
    other_token = node->make_tenant("Other").second;
  }

  test::http_reply call(const std::string& method, const std::string& path,
                        const json& body = nullptr, const std::string& as = {}) {
    return node->call(method, path, as.empty() ? token : as, body.is_null() ? "" : body.dump());
  }

  void put_contact(const std::string& id, const std::string& name, const std::string& phone) {
    auto reply = call("PUT", "/v1/contacts",
                      {{"contact_id", id},
                       {"display_name", name},
                       {"phone", phone},
                       {"is_admin", id == "ada"},
                       {"notes", "met at the fair"},
                       {"email", id + "@example.com"}});
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
  }

  void put_phone(const std::string& id) {
    auto reply = call("PUT", "/v1/phones",
                      {{"integration_id", id},
                       {"provider", "telnyx"},
                       {"call_capable", true},
                       {"connected", true},
                       {"place_call_tool", "place_call"}});
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
  }

  std::vector<std::string> contact_ids(const std::string& as = {}) {
    auto reply = call("GET", "/v1/contacts", nullptr, as);
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    std::vector<std::string> out;
    for (const auto& c : reply.body["contacts"])
      out.push_back(c["contact_id"].get<std::string>());
    return out;
  }

  std::vector<std::string> phone_ids(const std::string& as = {}) {
    auto reply = call("GET", "/v1/phones", nullptr, as);
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    std::vector<std::string> out;
    for (const auto& p : reply.body["phones"])
      out.push_back(p["integration_id"].get<std::string>());
    return out;
  }
};

/// The error a refusal carries ({"code","message"}), or an empty object.
json error_of(const test::http_reply& reply) {
  return reply.body.is_object() ? reply.body.value("error", json::object()) : json::object();
}

using ids = std::vector<std::string>;

} // namespace

TEST_CASE("saved contacts are listed after a put with the owner's notes and email") {
  contacts_fixture f;
  CHECK(f.node->call("GET", "/v1/contacts").status == 401);
  CHECK(f.contact_ids().empty());
  f.put_contact("bob", "Bob", "+442071234567");
  f.put_contact("ada", "Ada", "+14155550100");
  auto reply = f.call("GET", "/v1/contacts");
  REQUIRE(reply.status == 200);
  const auto& contacts = reply.body["contacts"];
  REQUIRE(contacts.size() == 2);
  // By id, each as it was put.
  CHECK(contacts[0]
        == json{{"contact_id", "ada"},
                {"display_name", "Ada"},
                {"phone", "+14155550100"},
                {"is_admin", true},
                {"notes", "met at the fair"},
                {"email", "ada@example.com"}});
  CHECK(contacts[1]["contact_id"] == "bob");
  CHECK(contacts[1]["is_admin"] == false);
  // A put replaces: still two, the new name shown.
  f.put_contact("bob", "Robert", "+442071234567");
  CHECK(f.contact_ids() == ids{"ada", "bob"});
  CHECK(f.call("GET", "/v1/contacts").body["contacts"][1]["display_name"] == "Robert");
}

TEST_CASE("phone integrations are listed after a put") {
  contacts_fixture f;
  CHECK(f.node->call("GET", "/v1/phones").status == 401);
  CHECK(f.phone_ids().empty());
  f.put_phone("line-1");
  auto reply = f.call("GET", "/v1/phones");
  REQUIRE(reply.status == 200);
  CHECK(reply.body
        == json{{"phones",
                 {{{"integration_id", "line-1"},
                   {"provider", "telnyx"},
                   {"call_capable", true},
                   {"connected", true},
                   {"place_call_tool", "place_call"}}}}});
}

TEST_CASE("a deletion is one config event answering the id and a second one is not found") {
  contacts_fixture f;
  f.put_contact("ada", "Ada", "+14155550100");
  f.put_contact("bob", "Bob", "+442071234567");
  f.put_phone("line-1");
  f.put_phone("line-2");

  auto before = f.node->stored_events();
  auto deleted = f.call("DELETE", "/v1/contacts/ada");
  REQUIRE_MESSAGE(deleted.status == 200, deleted.raw);
  CHECK(deleted.body == json{{"deleted", "ada"}});
  CHECK(f.node->stored_events() == before + 1);
  CHECK(f.contact_ids() == ids{"bob"});

  auto dropped = f.call("DELETE", "/v1/phones/line-1");
  REQUIRE_MESSAGE(dropped.status == 200, dropped.raw);
  CHECK(dropped.body == json{{"deleted", "line-1"}});
  CHECK(f.node->stored_events() == before + 2);
  CHECK(f.phone_ids() == ids{"line-2"});

  // Gone: a second deletion is refused (and audited as a refused change).
  auto again = f.call("DELETE", "/v1/contacts/ada");
  CHECK(again.status == 404);
  CHECK(error_of(again).value("code", "") == "not_found");
  CHECK(f.call("DELETE", "/v1/phones/line-1").status == 404);
  auto audit = f.call("GET", "/v1/audit?limit=50");
  REQUIRE(audit.status == 200);
  int refused_deletes = 0;
  for (const auto& row : audit.body) {
    auto text = row.dump();
    if (text.find("delete_contact") != std::string::npos
        || text.find("delete_phone") != std::string::npos)
      ++refused_deletes;
  }
  CHECK(refused_deletes == 2);
}

TEST_CASE("another tenant's contacts and phones are neither listed nor deleted") {
  contacts_fixture f;
  f.put_contact("ada", "Ada", "+14155550100");
  f.put_phone("line-1");
  CHECK(f.contact_ids(f.other_token).empty());
  CHECK(f.phone_ids(f.other_token).empty());
  auto events = f.node->stored_events();
  auto contact = f.call("DELETE", "/v1/contacts/ada", nullptr, f.other_token);
  CHECK(contact.status == 404);
  CHECK(error_of(contact).value("code", "") == "not_found");
  auto phone = f.call("DELETE", "/v1/phones/line-1", nullptr, f.other_token);
  CHECK(phone.status == 404);
  CHECK(error_of(phone).value("code", "") == "not_found");
  // Nothing of the owner's changed (the refusals add audit rows only).
  CHECK(f.contact_ids() == ids{"ada"});
  CHECK(f.phone_ids() == ids{"line-1"});
  CHECK(f.node->stored_events() == events + 2);
}

TEST_CASE("a malformed contact or phone id is refused naming the parameter") {
  contacts_fixture f;
  f.put_contact("ada", "Ada", "+14155550100");
  for (const char* bad : {"Not%20An%20Id", "UPPER", "a.b",
                          "x123456789012345678901234567890123456789012345678901234567890123456"}) {
    auto contact = f.call("DELETE", std::string{"/v1/contacts/"} + bad);
    CHECK_MESSAGE(contact.status == 400, bad);
    CHECK(error_of(contact).value("code", "") == "out_of_range");
    CHECK(error_of(contact).value("message", "").rfind("contact:", 0) == 0);
    auto phone = f.call("DELETE", std::string{"/v1/phones/"} + bad);
    CHECK_MESSAGE(phone.status == 400, bad);
    CHECK(error_of(phone).value("message", "").rfind("phone:", 0) == 0);
  }
  CHECK(f.contact_ids() == ids{"ada"});
}

TEST_CASE("a deleted contact and phone stay deleted after a node restart") {
  contacts_fixture f;
  f.put_contact("ada", "Ada", "+14155550100");
  f.put_contact("bob", "Bob", "+442071234567");
  f.put_phone("line-1");
  f.put_phone("line-2");
  REQUIRE(f.call("DELETE", "/v1/contacts/ada").status == 200);
  REQUIRE(f.call("DELETE", "/v1/phones/line-2").status == 200);
  f.node->stop();
  f.node = std::make_unique<test::running_node>(f.dir);
  CHECK(f.contact_ids() == ids{"bob"});
  CHECK(f.phone_ids() == ids{"line-1"});
  CHECK(f.call("GET", "/v1/contacts").body["contacts"][0]["email"] == "bob@example.com");
}
