// The tenant's policy API over HTTP: defaults of a new tenant, grants, routes,
// runs and their frozen snapshots, audit, and refused input that changes
// nothing.
#include <doctest/doctest.h>

#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;
using test::admin_token;

namespace {

struct tenant_fixture {
  test::temp_dir dir;
  test::running_node node{dir};
  std::string tenant_id;
  std::string token;
  std::string agent_id;

  tenant_fixture() {
    std::tie(tenant_id, token) = node.make_tenant("Acme");
    auto agents = node.call("GET", "/v1/agents", token);
    REQUIRE(agents.status == 200);
    REQUIRE(agents.body.size() == 1);
    agent_id = agents.body[0]["agent_id"].get<std::string>();
  }

  json servers() { return node.call("GET", "/v1/servers", token).body; }

  std::string exa_id() {
    for (auto& s : servers())
      if (s["preset_id"] == "exa")
        return s["server_id"].get<std::string>();
    return {};
  }

  json start_run(const std::string& chan = "owner_text_chat", const std::string& caller = "") {
    json body{{"agent_id", agent_id}, {"channel", chan}};
    if (!caller.empty())
      body["caller_number"] = caller;
    auto run = node.call("POST", "/v1/runs", token, body.dump());
    REQUIRE_MESSAGE(run.status == 201, run.raw);
    return run.body;
  }

  test::http_reply set_grant(const std::string& server_id, const std::string& tool,
                             const std::string& decision) {
    return node.call("PUT", "/v1/agents/" + agent_id + "/grants", token,
                     json{{"server_id", server_id}, {"tool", tool}, {"decision", decision}}.dump());
  }

  json grants() { return node.call("GET", "/v1/agents/" + agent_id + "/grants", token).body; }
};

bool snapshot_has(const json& run, const std::string& tool) {
  for (auto& t : run["snapshot"]["tools"])
    if (t["name"] == tool)
      return true;
  return false;
}

std::string error_code(const test::http_reply& reply) {
  return reply.body.is_object() && reply.body.contains("error")
           ? reply.body["error"].value("code", "")
           : "<none>";
}

} // namespace

TEST_CASE("a new tenant starts with a default agent and the canonical keyless Exa server") {
  tenant_fixture f;
  auto agents = f.node.call("GET", "/v1/agents", f.token).body;
  CHECK(agents[0]["is_default"] == true);
  auto servers = f.servers();
  REQUIRE(servers.size() == 1);
  auto& exa = servers[0];
  CHECK(exa["preset_id"] == "exa");
  CHECK(exa["enabled"] == true);
  CHECK(exa["trusted"] == true);
  CHECK(exa["connected"] == true);
  CHECK(exa["allowed_tools"].size() == 2);
  auto run = f.start_run();
  CHECK(snapshot_has(run, "web_search_exa"));
  CHECK(snapshot_has(run, "web_fetch_exa"));
  // The view carries the curated schemas: no discovery request was needed.
  bool schema_seen = false;
  for (auto& e : run["view"]["direct"])
    if (e["tool"] == "web_search_exa")
      schema_seen = e["input_schema"].is_object() && e["input_schema"].contains("properties");
  CHECK(schema_seen);
}

TEST_CASE("defaults are applied once and survive a restart") {
  test::temp_dir dir;
  std::string token;
  {
    test::running_node node{dir};
    token = node.make_tenant("Acme").second;
    REQUIRE(node.call("GET", "/v1/servers", token).body.size() == 1);
  }
  test::running_node node{dir};
  CHECK(node.call("GET", "/v1/servers", token).body.size() == 1);
  CHECK(node.call("GET", "/v1/agents", token).body.size() == 1);
}

TEST_CASE("a grant toggled on the Tools page reaches new runs but never a running one") {
  tenant_fixture f;
  auto before = f.start_run();
  CHECK_FALSE(snapshot_has(before, "search_contacts"));
  auto granted = f.set_grant("", "search_contacts", "allow");
  REQUIRE(granted.status == 200);
  CHECK(granted.body["allowed"] == true);
  CHECK(snapshot_has(f.start_run(), "search_contacts"));
  auto again = f.node.call("GET", "/v1/runs/" + before["run_id"].get<std::string>(), f.token);
  REQUIRE(again.status == 200);
  CHECK_FALSE(snapshot_has(again.body, "search_contacts"));
  // Back to the default.
  CHECK(f.set_grant("", "search_contacts", "default").body["decision"] == "default");
  CHECK_FALSE(snapshot_has(f.start_run(), "search_contacts"));
}

TEST_CASE(
  "the grants page rates each tool as a run's snapshot does, with an internal tool's kind") {
  tenant_fixture f;
  REQUIRE(f.set_grant("", "create_task_plan", "allow").status == 200);
  auto run = f.start_run();
  int compared = 0;
  for (auto& row : f.grants()) {
    if (row["tool"] == "get_current_time") {
      CHECK(row["origin"] == "internal");
      CHECK(row["risk"] == "low");
      CHECK(row["read_only"] == true);
      CHECK(row["kind"] == "Read-only, current time");
    }
    if (row["tool"] == "create_task_plan")
      CHECK(row["kind"] == "Mutating");
    if (row["origin"] == "mcp")
      CHECK_FALSE(row.contains("kind"));
    for (auto& t : run["snapshot"]["tools"])
      if (t["name"] == row["tool"] && t["server_id"] == row["server_id"]) {
        CHECK(t["origin"] == row["origin"]);
        CHECK(t["risk"] == row["risk"]);
        CHECK(t["read_only"] == row["read_only"]);
        ++compared;
      }
  }
  // The Exa tools and the granted internal ones at least.
  CHECK(compared >= 4);
}

TEST_CASE("grants for unknown tools or foreign servers are refused with an audit event") {
  tenant_fixture f;
  auto [other_id, other_token] = f.node.make_tenant("Other");
  std::string foreign_exa;
  for (auto& s : f.node.call("GET", "/v1/servers", other_token).body)
    foreign_exa = s["server_id"].get<std::string>();
  auto page_before = f.grants();
  auto unknown = f.set_grant("", "no_such_tool", "allow");
  CHECK(unknown.status == 404);
  auto foreign = f.set_grant(foreign_exa, "web_search_exa", "deny");
  CHECK(foreign.status == 404);
  CHECK(error_code(foreign) == "not_found");
  auto bad_decision = f.set_grant("", "search_contacts", "maybe");
  CHECK(bad_decision.status == 400);
  CHECK(f.grants() == page_before);
  // The other tenant's grant is untouched.
  auto other_agents = f.node.call("GET", "/v1/agents", other_token).body;
  auto other_page = f.node.call(
    "GET", "/v1/agents/" + other_agents[0]["agent_id"].get<std::string>() + "/grants", other_token);
  for (auto& row : other_page.body)
    CHECK(row["decision"] == "default");
  auto audit = f.node.call("GET", "/v1/audit?limit=50", f.token);
  REQUIRE(audit.status == 200);
  int refused = 0;
  for (auto& row : audit.body)
    if (row["phase"] == "config")
      ++refused;
  CHECK(refused >= 3);
}

TEST_CASE("a route pinned to another tenant's server is refused and changes nothing") {
  tenant_fixture f;
  auto [other_id, other_token] = f.node.make_tenant("Other");
  auto foreign_exa = f.node.call("GET", "/v1/servers", other_token).body[0]["server_id"];
  auto reply = f.node.call(
    "PUT", "/v1/agents/" + f.agent_id + "/routes/web.search", f.token,
    json{{"mode", "pinned"}, {"server_id", foreign_exa}, {"tool", "web_search_exa"}}.dump());
  CHECK(reply.status == 404);
  auto run = f.start_run();
  CHECK(run["snapshot"]["routes"][0]["mode"] == "automatic");
  CHECK(snapshot_has(run, "web_search_exa"));
  // Pinning the tenant's own Exa server works.
  auto pinned = f.node.call(
    "PUT", "/v1/agents/" + f.agent_id + "/routes/web.search", f.token,
    json{{"mode", "pinned"}, {"server_id", f.exa_id()}, {"tool", "web_search_exa"}}.dump());
  CHECK(pinned.status == 200);
  CHECK(f.start_run()["snapshot"]["routes"][0]["mode"] == "pinned");
}

TEST_CASE("a model-supplied tenant agent or server id in a body is refused") {
  tenant_fixture f;
  auto run = f.node.call(
    "POST", "/v1/runs", f.token,
    json{{"agent_id", f.agent_id}, {"channel", "owner_text_chat"}, {"tenant_id", "t_other"}}
      .dump());
  CHECK(run.status == 400);
  CHECK(error_code(run) == "unknown_field");
  auto unknown_agent =
    f.node.call("POST", "/v1/runs", f.token,
                json{{"agent_id", "a_not_mine"}, {"channel", "owner_text_chat"}}.dump());
  CHECK(unknown_agent.status == 404);
  auto bad_channel = f.node.call("POST", "/v1/runs", f.token,
                                 json{{"agent_id", f.agent_id}, {"channel", "telepathy"}}.dump());
  CHECK(bad_channel.status == 400);
  auto subagent = f.node.call("POST", "/v1/runs", f.token,
                              json{{"agent_id", f.agent_id}, {"channel", "subagent"}}.dump());
  CHECK(subagent.status == 400);
}

TEST_CASE(
  "connecting a call-capable phone adds the contact-search prerequisite unless a decision exists") {
  tenant_fixture f;
  json phone{{"integration_id", "ph_1"},
             {"provider", "twilio"},
             {"call_capable", true},
             {"connected", true},
             {"place_call_tool", "place_call"}};
  REQUIRE(f.node.call("PUT", "/v1/phones", f.token, phone.dump()).status == 200);
  CHECK(snapshot_has(f.start_run(), "search_contacts"));

  tenant_fixture denied;
  REQUIRE(denied.set_grant("", "search_contacts", "deny").status == 200);
  REQUIRE(denied.node.call("PUT", "/v1/phones", denied.token, phone.dump()).status == 200);
  REQUIRE(denied.set_grant("ph_1", "place_call", "allow").status == 200);
  auto run = denied.start_run();
  CHECK_FALSE(snapshot_has(run, "search_contacts"));
  // While contact search is denied, the place-call tool is not advertised.
  CHECK_FALSE(snapshot_has(run, "place_call"));
}

TEST_CASE("disabling the Exa server removes it from new runs and enabling it needs a new test") {
  tenant_fixture f;
  auto exa = f.exa_id();
  auto disabled = f.node.call("PATCH", "/v1/servers/" + exa, f.token, R"({"enabled":false})");
  REQUIRE(disabled.status == 200);
  CHECK_FALSE(snapshot_has(f.start_run(), "web_search_exa"));
  CHECK_FALSE(snapshot_has(f.start_run("in_app_voice"), "web_search_exa"));
  auto enabled = f.node.call("PATCH", "/v1/servers/" + exa, f.token, R"({"enabled":true})");
  REQUIRE(enabled.status == 200);
  CHECK(enabled.body["connected"] == false);
  CHECK_FALSE(snapshot_has(f.start_run(), "web_search_exa"));
}

TEST_CASE("an inbound SMS from an unknown sender gets only the messaging intersection") {
  tenant_fixture f;
  REQUIRE(f.set_grant("", "search_contacts", "allow").status == 200);
  REQUIRE(f.set_grant("", "create_agent_memory", "allow").status == 200);
  auto run = f.start_run("sms", "+15550000002");
  CHECK(run["snapshot"]["caller"] == "unknown");
  CHECK(snapshot_has(run, "web_search_exa"));
  CHECK_FALSE(snapshot_has(run, "search_contacts"));
  CHECK_FALSE(snapshot_has(run, "create_agent_memory"));
  // A saved Admin contact with that exact number keeps the contact search.
  json contact{{"contact_id", "c_1"},
               {"display_name", "Owner"},
               {"phone", "+15550000002"},
               {"is_admin", true}};
  REQUIRE(f.node.call("PUT", "/v1/contacts", f.token, contact.dump()).status == 200);
  auto admin = f.start_run("sms", "+15550000002");
  CHECK(admin["snapshot"]["caller"] == "admin");
  CHECK(snapshot_has(admin, "search_contacts"));
  CHECK_FALSE(snapshot_has(admin, "create_agent_memory"));
}

TEST_CASE("every composition decision is audited per tenant") {
  tenant_fixture f;
  auto run = f.start_run();
  auto run_id = run["run_id"].get<std::string>();
  auto rows = f.node.call("GET", "/v1/audit?limit=500", f.token);
  REQUIRE(rows.status == 200);
  bool allow_seen = false;
  bool deny_seen = false;
  for (auto& row : rows.body) {
    if (row["run_id"] != run_id)
      continue;
    CHECK(row["agent_id"] == f.agent_id);
    CHECK(row["channel"] == "owner_text_chat");
    if (row["tool"] == "web_search_exa" && row["reason"] == "platform_default")
      allow_seen = true;
    if (row["tool"] == "search_contacts" && row["reason"] == "not_granted")
      deny_seen = true;
  }
  CHECK(allow_seen);
  CHECK(deny_seen);
  // Operators read the same through the admin route; other tenants see none of it.
  auto admin_rows =
    f.node.call("GET", "/v1/admin/tenants/" + f.tenant_id + "/audit?limit=500", admin_token);
  CHECK(admin_rows.body.size() == rows.body.size());
  auto other = f.node.make_tenant("Other");
  for (auto& row : f.node.call("GET", "/v1/audit?limit=500", other.second).body)
    CHECK(row["run_id"] != run_id);
}

TEST_CASE("a run of another tenant is not found") {
  tenant_fixture f;
  auto run_id = f.start_run()["run_id"].get<std::string>();
  auto other = f.node.make_tenant("Other");
  auto reply = f.node.call("GET", "/v1/runs/" + run_id, other.second);
  CHECK(reply.status == 404);
}

TEST_CASE("a call inside a run is checked against its snapshot and audited") {
  tenant_fixture f;
  auto run_id = f.start_run()["run_id"].get<std::string>();
  auto check = [&](const std::string& server_id, const std::string& tool) {
    return f.node.call("POST", "/v1/runs/" + run_id + "/checks", f.token,
                       json{{"server_id", server_id}, {"tool", tool}}.dump());
  };
  auto allowed = check(f.exa_id(), "web_search_exa");
  REQUIRE_MESSAGE(allowed.status == 200, allowed.raw);
  CHECK(allowed.body["allowed"] == true);
  auto refused = check("", "search_contacts");
  CHECK(refused.body["allowed"] == false);
  CHECK(refused.body["reason"] == "not_in_snapshot");
  // A grant made after the run started does not reach it.
  REQUIRE(f.set_grant("", "search_contacts", "allow").status == 200);
  CHECK(check("", "search_contacts").body["allowed"] == false);
  int executed = 0;
  for (auto& row : f.node.call("GET", "/v1/audit?limit=50", f.token).body)
    if (row["phase"] == "execute" && row["run_id"] == run_id)
      ++executed;
  CHECK(executed == 3);
  // Another tenant's token cannot check this run.
  auto other = f.node.make_tenant("Other");
  auto foreign = f.node.call("POST", "/v1/runs/" + run_id + "/checks", other.second,
                             json{{"tool", "web_search_exa"}}.dump());
  CHECK(foreign.status == 404);
}

TEST_CASE(
  "a saved browser profile is offered to web chat of its agent and never to a phone caller") {
  tenant_fixture f;
  json profile{{"handle", "bp_mail"},
               {"label", "Work mail"},
               {"primary_origin", "https://mail.example.com"},
               {"agent_ids", {f.agent_id}},
               {"server_id", ""},
               {"tool", ""}};
  auto saved = f.node.call("PUT", "/v1/profiles", f.token, profile.dump());
  REQUIRE_MESSAGE(saved.status == 200, saved.raw);
  auto chat = f.start_run();
  REQUIRE(chat["snapshot"]["profiles"].size() == 1);
  CHECK(chat["snapshot"]["profiles"][0]["handle"] == "bp_mail");
  CHECK(f.start_run("phone_call", "+15550000009")["snapshot"]["profiles"].empty());

  // A hosted profile must name one of this tenant's servers.
  auto [other_id, other_token] = f.node.make_tenant("Other");
  auto foreign = f.node.call("GET", "/v1/servers", other_token).body[0]["server_id"];
  profile["handle"] = "bp_hosted";
  profile["server_id"] = foreign;
  profile["tool"] = "web_search_exa";
  CHECK(f.node.call("PUT", "/v1/profiles", f.token, profile.dump()).status == 404);
  profile["server_id"] = "";
  profile["agent_ids"] = {"a_not_mine"};
  CHECK(f.node.call("PUT", "/v1/profiles", f.token, profile.dump()).status == 404);
  CHECK(f.start_run()["snapshot"]["profiles"].size() == 1);
}
