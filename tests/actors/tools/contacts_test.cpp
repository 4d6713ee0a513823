// search_contacts and the place-call tool (actors/tools/contacts.hpp): each
// rule, named after it.
#include <doctest/doctest.h>

#include "actors/tools/contacts.hpp"

using namespace voxos;
using json = nlohmann::json;

namespace {

std::vector<contact_record> saved() {
  std::vector<contact_record> out;
  out.push_back({"ct_ana", "Ana Silva", "+351912345678", true, "owes me lunch", "ana@example.com"});
  out.push_back(
    {"ct_ana2", "Ana Costa", "+351913333444", false, "met at the conference", "costa@example.com"});
  out.push_back({"ct_bob", "Bob Stone", "+14155550100", false, "", ""});
  return out;
}

tool_context context(channel c = channel::owner_text_chat, caller_class who = caller_class::owner) {
  tool_context ctx;
  ctx.tenant_id = "t_1";
  ctx.agent_id = "a_1";
  ctx.run_id = "r_0123456789abcdef";
  ctx.chat_id = "c_1";
  ctx.chan = c;
  ctx.caller = who;
  ctx.contacts = c == channel::sms || c == channel::whatsapp ? contact_detail::number_endings
                                                             : contact_detail::full_numbers;
  ctx.now_us = 7;
  return ctx;
}

json search(std::string query, tool_context ctx = context()) {
  return contacts::search(saved(), ctx, {{"query", std::move(query)}}).result;
}

phone_integration twilio() {
  return {"ph_1", phone_provider::twilio, true, true, "place_call"};
}

} // namespace

TEST_CASE("search_contacts resolves unique ambiguous and not_found") {
  auto unique = search("bob");
  CHECK(unique["resolution"] == "unique");
  CHECK(unique["contacts"][0]["contact_id"] == "ct_bob");
  CHECK(unique["contacts"][0]["phone"] == "+14155550100");
  auto ambiguous = search("Ana");
  CHECK(ambiguous["resolution"] == "ambiguous");
  CHECK(ambiguous["contacts"].size() == 2);
  auto exact = search("ana silva");
  CHECK(exact["resolution"] == "unique");
  CHECK(exact["contacts"][0]["contact_id"] == "ct_ana");
  CHECK(search("Carla")["resolution"] == "not_found");
  CHECK(search("+1 415 555 0100")["contacts"][0]["contact_id"] == "ct_bob");
  CHECK(search("0100")["resolution"] == "unique");
}

TEST_CASE("search_contacts never returns notes emails or admin flags") {
  for (auto query : {"ana", "bob", "Ana Silva"}) {
    auto text = search(query).dump();
    CAPTURE(text);
    for (auto hidden : {"owes me lunch", "ana@example.com", "conference", "costa@example.com",
                        "is_admin", "notes", "email"})
      CHECK(text.find(hidden) == std::string::npos);
  }
}

TEST_CASE("on SMS and WhatsApp only an admin sender gets contacts, with number endings only") {
  for (auto c : {channel::sms, channel::whatsapp}) {
    CAPTURE(to_string(c));
    auto admin = search("bob", context(c, caller_class::admin));
    CHECK(admin["resolution"] == "unique");
    CHECK(admin["contacts"][0]["phone_ending"] == "…0100");
    CHECK(admin.dump().find("+14155550100") == std::string::npos);
    auto stranger =
      contacts::search(saved(), context(c, caller_class::unknown), {{"query", "bob"}});
    CHECK(stranger.is_error);
    CHECK(stranger.result["error"] == "sender_not_admin");
  }
}

TEST_CASE("the place-call tool resolves a contact of this tenant and records the session") {
  auto out = contacts::place_call(
    saved(), twilio(), context(),
    {{"contact_id", "ct_bob"}, {"objective", "Confirm Thursday's delivery window for the sofa"}});
  REQUIRE_FALSE(out.is_error);
  CHECK(out.result["status"] == "queued");
  REQUIRE(out.writes.size() == 1);
  CHECK(out.writes[0].stream == "phone.sessions");
  auto data = json::parse(out.writes[0].events[0].data);
  CHECK(data["run_id"] == "r_0123456789abcdef"); // from the execution context
  CHECK(data["contact_id"] == "ct_bob");
  CHECK(data["integration_id"] == "ph_1");
  // The phone number never comes from the model, and is not in the answer.
  CHECK(out.result.dump().find("+14155550100") == std::string::npos);
}

TEST_CASE("the place-call tool refuses another tenant's contact and stores nothing") {
  auto out = contacts::place_call(
    saved(), twilio(), context(),
    {{"contact_id", "ct_other_tenant"}, {"objective", "Confirm Thursday's delivery window"}});
  CHECK(out.result["error"] == "not_found");
  CHECK(out.writes.empty());
}

TEST_CASE("the place-call objective must be complete bounded and caller-safe") {
  auto refuse = [](std::string objective, const char* code) {
    CAPTURE(objective);
    auto out = contacts::place_call(saved(), twilio(), context(),
                                    {{"contact_id", "ct_bob"}, {"objective", objective}});
    CHECK(out.result["error"] == code);
    CHECK(out.writes.empty());
    CHECK(out.result.dump().find(objective) == std::string::npos);
  };
  refuse("Call him", "objective_incomplete");
  refuse("     ", "objective_incomplete");
  refuse("Read the code sk-abcdefghijklmnopqrstuvwxyz0123 to him", "objective_not_caller_safe");
  refuse("Ask about the account of tenant t_0123456789abcdef please", "objective_not_caller_safe");
  refuse(std::string{"Ask about\x01 the delivery window"}, "objective_not_caller_safe");
}
