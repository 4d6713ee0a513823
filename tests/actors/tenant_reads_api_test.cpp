// The tenant's read-only views over HTTP: the preset catalog, one server with
// its tools, the run list, the audit's filters and each action route's
// resolution; each with its refused input and another tenant's token.
#include <set>

#include <doctest/doctest.h>

#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;
using test::admin_token;

namespace {

struct reads_fixture {
  test::temp_dir dir;
  std::unique_ptr<test::running_node> node = std::make_unique<test::running_node>(dir);
  std::string tenant_id;
  std::string token;
  std::string agent_id;

  reads_fixture() {
    std::tie(tenant_id, token) = node->make_tenant("Acme");
    agent_id = node->call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
  }

  test::http_reply get(const std::string& path, const std::string& as = {}) {
    return node->call("GET", path, as.empty() ? token : as);
  }

  std::string exa_id() {
    for (auto& s : get("/v1/servers").body)
      if (s["preset_id"] == "exa")
        return s["server_id"].get<std::string>();
    return {};
  }

  std::string start_run(const std::string& agent = {}) {
    auto run = node->call(
      "POST", "/v1/runs", token,
      json{{"agent_id", agent.empty() ? agent_id : agent}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(run.status == 201, run.raw);
    return run.body["run_id"].get<std::string>();
  }
};

std::string error_code(const test::http_reply& reply) {
  return reply.body.is_object() && reply.body.contains("error")
           ? reply.body["error"].value("code", "")
           : "<none>";
}

std::string error_message(const test::http_reply& reply) {
  return reply.body.is_object() && reply.body.contains("error")
           ? reply.body["error"].value("message", "")
           : "<none>";
}

const json* find_by(const json& rows, const char* key, const std::string& value) {
  for (const auto& row : rows)
    if (row.value(key, "") == value)
      return &row;
  return nullptr;
}

} // namespace

TEST_CASE("the catalog lists every offered preset with its variants and curated tools") {
  reads_fixture f;
  CHECK(f.node->call("GET", "/v1/catalog").status == 401);
  auto reply = f.get("/v1/catalog");
  REQUIRE_MESSAGE(reply.status == 200, reply.raw);
  const auto& presets = reply.body["presets"];
  REQUIRE(presets.is_array());

  const auto* exa = find_by(presets, "id", "exa");
  REQUIRE(exa != nullptr);
  CHECK((*exa)["url_required"] == false);
  CHECK((*exa)["url"].get<std::string>().rfind("https://", 0) == 0);
  CHECK((*exa)["auth"] == "none");
  CHECK((*exa)["platform_default"] == true);
  const auto* search = find_by((*exa)["tools"], "name", "web_search_exa");
  REQUIRE(search != nullptr);
  CHECK((*search)["read_only"] == true);
  CHECK((*search)["enabled_by_default"] == true);

  // A preset whose URL is the owner's has none of its own.
  const auto* deployed = find_by(presets, "id", "flightradar24_deployed");
  REQUIRE(deployed != nullptr);
  CHECK((*deployed)["url_required"] == true);
  CHECK_FALSE(deployed->contains("url"));
  // An API-key preset names its header (never a key).
  const auto* exa_key = find_by(presets, "id", "exa_api_key");
  REQUIRE(exa_key != nullptr);
  CHECK((*exa_key)["auth"] == "api_key_header");
  CHECK_FALSE((*exa_key)["api_key_header"].get<std::string>().empty());
  // Variants carry their id and label.
  bool variants_seen = false;
  for (const auto& p : presets)
    for (const auto& v : p["variants"]) {
      variants_seen = true;
      CHECK_FALSE(v["id"].get<std::string>().empty());
      CHECK_FALSE(v["label"].get<std::string>().empty());
    }
  CHECK(variants_seen);
  // Local Compose presets are offered only where their URL is registered.
  CHECK(find_by(presets, "id", "flightradar24_local") == nullptr);
  CHECK(find_by(presets, "id", "monzo_local") == nullptr);
  // Stable: the same answer twice, and the same for another tenant.
  CHECK(f.get("/v1/catalog").raw == reply.raw);
  auto other = f.node->make_tenant("Other");
  CHECK(f.get("/v1/catalog", other.second).raw == reply.raw);
}

TEST_CASE("one server answers its record and its discovered tools with their allowlist") {
  reads_fixture f;
  auto exa = f.exa_id();
  auto reply = f.get("/v1/servers/" + exa);
  REQUIRE_MESSAGE(reply.status == 200, reply.raw);
  // The record as the listing shows it, plus the tools.
  auto listed = *find_by(f.get("/v1/servers").body, "server_id", exa);
  auto record = reply.body;
  record.erase("tools");
  CHECK(record == listed);
  CHECK(reply.raw.find("sealed") == std::string::npos);
  const auto& tools = reply.body["tools"];
  REQUIRE(tools.size() == listed["tool_count"].get<std::size_t>());
  const auto* search = find_by(tools, "name", "web_search_exa");
  REQUIRE(search != nullptr);
  CHECK((*search)["allowed"] == true);
  CHECK((*search)["read_only"] == true);
  CHECK((*search)["description"].is_string());
  CHECK_FALSE(search->contains("destructive"));
  // Taking a tool off the allowlist shows at once.
  REQUIRE(f.node
            ->call("PATCH", "/v1/servers/" + exa, f.token,
                   json{{"allowed_tools", {"web_fetch_exa"}}}.dump())
            .status
          == 200);
  auto after = f.get("/v1/servers/" + exa).body["tools"];
  CHECK((*find_by(after, "name", "web_search_exa"))["allowed"] == false);
  CHECK((*find_by(after, "name", "web_fetch_exa"))["allowed"] == true);
}

TEST_CASE("a server of another tenant or a malformed server id is refused") {
  reads_fixture f;
  auto exa = f.exa_id();
  auto other = f.node->make_tenant("Other");
  auto foreign = f.get("/v1/servers/" + exa, other.second);
  CHECK(foreign.status == 404);
  CHECK(error_code(foreign) == "not_found");
  auto unknown = f.get("/v1/servers/srv_nothing");
  CHECK(unknown.status == 404);
  auto malformed = f.get("/v1/servers/Not%20An%20Id");
  CHECK(malformed.status == 400);
  CHECK(error_code(malformed) == "out_of_range");
  CHECK(error_message(malformed).rfind("server:", 0) == 0);
  CHECK(f.node->call("GET", "/v1/servers/" + exa).status == 401);
}

TEST_CASE("the run list answers the tenant's runs newest first with their states") {
  test::temp_dir dir;
  std::string token;
  std::string finished, cancelled, live;
  {
    test::running_node node{dir};
    token = node.make_tenant("Acme").second;
    auto agent = node.call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
    auto start = [&] {
      auto run = node.call("POST", "/v1/runs", token,
                           json{{"agent_id", agent}, {"channel", "owner_text_chat"}}.dump());
      REQUIRE_MESSAGE(run.status == 201, run.raw);
      return run.body["run_id"].get<std::string>();
    };
    finished = start();
    cancelled = start();
    live = start();
    REQUIRE(node.call("POST", "/v1/runs/" + finished + "/finish", token).status == 200);
    REQUIRE(node.call("DELETE", "/v1/runs/" + cancelled, token).status == 200);

    auto reply = node.call("GET", "/v1/runs", token);
    REQUIRE_MESSAGE(reply.status == 200, reply.raw);
    const auto& runs = reply.body["runs"];
    REQUIRE(runs.size() == 3);
    CHECK(runs[0]["run_id"] == live);
    CHECK(runs[1]["run_id"] == cancelled);
    CHECK(runs[2]["run_id"] == finished);
    CHECK(runs[0]["state"] == "live");
    CHECK_FALSE(runs[0].contains("ended_us"));
    CHECK(runs[1]["state"] == "cancelled");
    CHECK(runs[2]["state"] == "finished");
    for (const auto& run : runs) {
      CHECK(run["agent_id"] == agent);
      CHECK(run["channel"] == "owner_text_chat");
      CHECK_FALSE(run["chat_id"].get<std::string>().empty());
      CHECK(run["started_us"].get<int64_t>() > 0);
    }
    CHECK(runs[0]["started_us"].get<int64_t>() >= runs[1]["started_us"].get<int64_t>());
    CHECK(runs[2]["ended_us"].get<int64_t>() >= runs[2]["started_us"].get<int64_t>());
    // The limit counts from the newest.
    auto one = node.call("GET", "/v1/runs?limit=1", token).body["runs"];
    REQUIRE(one.size() == 1);
    CHECK(one[0]["run_id"] == live);
    // Another tenant sees none of them.
    auto other = node.make_tenant("Other");
    CHECK(node.call("GET", "/v1/runs", other.second).body["runs"].empty());
  }
  // After a restart the list is rebuilt from the store; the run that was
  // live when the node stopped never ended and has no actor now.
  test::running_node node{dir};
  auto runs = node.call("GET", "/v1/runs", token).body["runs"];
  REQUIRE(runs.size() == 3);
  CHECK(runs[0]["run_id"] == live);
  CHECK(runs[0]["state"] == "interrupted");
  CHECK(runs[1]["state"] == "cancelled");
  CHECK(runs[2]["state"] == "finished");
}

TEST_CASE("a malformed run list limit is refused naming the parameter") {
  reads_fixture f;
  for (const char* bad : {"0", "501", "abc", "", "-1", "99999999"}) {
    auto reply = f.get(std::string{"/v1/runs?limit="} + bad);
    CHECK_MESSAGE(reply.status == 400, bad);
    CHECK(error_code(reply) == "out_of_range");
    CHECK(error_message(reply) == "limit: an integer from 1 to 500");
  }
  CHECK(f.get("/v1/runs?limit=500").status == 200);
  CHECK(f.node->call("GET", "/v1/runs").status == 401);
}

TEST_CASE("audit filters by agent tool and phase apply before the limit") {
  reads_fixture f;
  auto second = f.node->call("POST", "/v1/agents", f.token, R"({"name":"Second"})");
  REQUIRE(second.status == 201);
  auto second_id = second.body["agent_id"].get<std::string>();
  auto first_run = f.start_run();
  auto second_run = f.start_run(second_id);
  // A refused change: a config row, older than the second agent's run.
  REQUIRE(f.node
            ->call("PUT", "/v1/agents/" + f.agent_id + "/grants", f.token,
                   json{{"tool", "no_such_tool"}, {"decision", "allow"}}.dump())
            .status
          == 404);
  auto second_run_again = f.start_run(second_id);

  auto by_agent = f.get("/v1/audit?agent_id=" + f.agent_id + "&limit=10000").body;
  REQUIRE_FALSE(by_agent.empty());
  std::set<std::string> runs_seen;
  for (const auto& row : by_agent) {
    CHECK(row["agent_id"] == f.agent_id);
    if (row.contains("run_id") && row["run_id"].is_string())
      runs_seen.insert(row["run_id"].get<std::string>());
  }
  CHECK(runs_seen.count(first_run) == 1);
  CHECK(runs_seen.count(second_run) == 0);

  auto by_tool = f.get("/v1/audit?tool=web_search_exa").body;
  REQUIRE(by_tool.size() == 3); // one composition decision per run
  for (const auto& row : by_tool)
    CHECK(row["tool"] == "web_search_exa");

  // The newest row is a composition of the second agent's last run; a
  // phase filter reaches past it to the refused change.
  auto config = f.get("/v1/audit?phase=config&limit=1").body;
  REQUIRE(config.size() == 1);
  CHECK(config[0]["phase"] == "config");
  CHECK(config[0]["op"] == "set_grant");
  auto combined = f.get("/v1/audit?phase=compose&agent_id=" + second_id + "&tool=web_fetch_exa");
  REQUIRE(combined.body.size() == 2);
  CHECK(combined.body[0]["run_id"] == second_run_again);
  CHECK(combined.body[1]["run_id"] == second_run);
  // Operators filter the same way.
  auto admin = f.node->call(
    "GET", "/v1/admin/tenants/" + f.tenant_id + "/audit?phase=config&limit=1", admin_token);
  CHECK(admin.body == config);
  // Another tenant's filtered audit holds none of it.
  auto other = f.node->make_tenant("Other");
  CHECK(f.get("/v1/audit?agent_id=" + f.agent_id, other.second).body.empty());
}

TEST_CASE("malformed audit filters are refused naming the parameter never the value") {
  reads_fixture f;
  struct bad_case {
    const char* query;
    const char* message;
  };
  const bad_case cases[] = {
    {"phase=approve", "phase: one of compose, execute, config"},
    {"phase=", "phase: one of compose, execute, config"},
    {"agent_id=Agent%21", "agent_id: 1 to 64 characters of [a-z0-9_-]"},
    {"agent_id=", "agent_id: 1 to 64 characters of [a-z0-9_-]"},
    {"tool=web%20search", "tool: 1 to 128 characters of [A-Za-z0-9_.-]"},
    {"limit=0", "limit: an integer from 1 to 10000"},
    {"limit=lots", "limit: an integer from 1 to 10000"},
  };
  for (const auto& c : cases) {
    auto reply = f.get(std::string{"/v1/audit?"} + c.query);
    CHECK_MESSAGE(reply.status == 400, c.query);
    CHECK(error_code(reply) == "out_of_range");
    CHECK(error_message(reply) == c.message);
    auto admin = f.node->call(
      "GET", "/v1/admin/tenants/" + f.tenant_id + "/audit?" + std::string{c.query}, admin_token);
    CHECK_MESSAGE(admin.status == 400, c.query);
  }
}

TEST_CASE("an agent's routes show which implementation the base policy resolves and why") {
  reads_fixture f;
  auto exa = f.exa_id();
  auto reply = f.get("/v1/agents/" + f.agent_id + "/routes");
  REQUIRE_MESSAGE(reply.status == 200, reply.raw);
  const auto* search = find_by(reply.body["routes"], "action", "web.search");
  REQUIRE(search != nullptr);
  CHECK((*search)["mode"] == "automatic");
  CHECK_FALSE(search->contains("pinned"));
  CHECK((*search)["resolved"] == json{{"server_id", exa}, {"tool", "web_search_exa"}});
  CHECK((*search)["reason"] == "automatic_selected");
  REQUIRE((*search)["candidates"].size() == 1);
  CHECK((*search)["candidates"][0]
        == json{{"server_id", exa},
                {"tool", "web_search_exa"},
                {"available", true},
                {"reason", "platform_default"}});
  // The same resolution a run's snapshot records.
  auto run = f.node->call("POST", "/v1/runs", f.token,
                          json{{"agent_id", f.agent_id}, {"channel", "owner_text_chat"}}.dump());
  CHECK(run.body["snapshot"]["routes"][0]["server_id"] == exa);

  // Pinned to Exa, then Exa denied: no substitute, and the reason says so.
  REQUIRE(f.node
            ->call("PUT", "/v1/agents/" + f.agent_id + "/routes/web.search", f.token,
                   json{{"mode", "pinned"}, {"server_id", exa}, {"tool", "web_search_exa"}}.dump())
            .status
          == 200);
  auto pinned = f.get("/v1/agents/" + f.agent_id + "/routes").body["routes"][0];
  CHECK(pinned["mode"] == "pinned");
  CHECK(pinned["pinned"] == json{{"server_id", exa}, {"tool", "web_search_exa"}});
  CHECK(pinned["reason"] == "pinned_selected");
  REQUIRE(
    f.node
      ->call("PUT", "/v1/agents/" + f.agent_id + "/grants", f.token,
             json{{"server_id", exa}, {"tool", "web_search_exa"}, {"decision", "deny"}}.dump())
      .status
    == 200);
  auto denied = f.get("/v1/agents/" + f.agent_id + "/routes").body["routes"][0];
  CHECK(denied["resolved"].is_null());
  CHECK(denied["reason"] == "pinned_route_unavailable");
  CHECK(denied["candidates"][0]["available"] == false);
  CHECK(denied["candidates"][0]["reason"] == "explicit_deny");

  // Automatic again, with the only implementation denied.
  REQUIRE(f.node
            ->call("PUT", "/v1/agents/" + f.agent_id + "/routes/web.search", f.token,
                   json{{"mode", "automatic"}}.dump())
            .status
          == 200);
  auto none = f.get("/v1/agents/" + f.agent_id + "/routes").body["routes"][0];
  CHECK(none["resolved"].is_null());
  CHECK(none["reason"] == "no_available_implementation");
}

TEST_CASE("the routes of another tenant's agent or a malformed agent id are refused") {
  reads_fixture f;
  auto other = f.node->make_tenant("Other");
  auto foreign = f.get("/v1/agents/" + f.agent_id + "/routes", other.second);
  CHECK(foreign.status == 404);
  CHECK(error_code(foreign) == "not_found");
  auto malformed = f.get("/v1/agents/UPPER/routes");
  CHECK(malformed.status == 400);
  CHECK(error_message(malformed).rfind("agent:", 0) == 0);
  CHECK(f.node->call("GET", "/v1/agents/" + f.agent_id + "/routes").status == 401);
}

TEST_CASE("a Local Compose preset is in the catalog where its URL is registered") {
  test::temp_dir dir;
  test::running_node node{dir, {{"http://flightradar24-mcp:8000/mcp", "mcp"}}};
  auto token = node.make_tenant("Acme").second;
  auto presets = node.call("GET", "/v1/catalog", token).body["presets"];
  const auto* local = find_by(presets, "id", "flightradar24_local");
  REQUIRE(local != nullptr);
  CHECK((*local)["local_compose"] == true);
  CHECK((*local)["url"] == "http://flightradar24-mcp:8000/mcp");
  CHECK(find_by(presets, "id", "monzo_local") == nullptr);
}
