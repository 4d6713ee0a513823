// A tenant written by an earlier node (its events already in the store, no
// migrations applied): the next node applies the data migrations, and a run
// over its 2,000 cached tools starts and persists its snapshot.
#include <doctest/doctest.h>

#include "actors/tenant/tenant_events.hpp"
#include "storage/digest.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

constexpr const char* tenant_id = "t_existing";
constexpr const char* token = "vxt_existing-tenant-token-0123456789abcdef";

/// Appends `events` to one stream of a closed node's store.
void append_all(event_db& db, const std::string& tenant, const std::string& stream,
                std::vector<event_draft> events) {
  for (std::size_t from = 0; from < events.size(); from += 500) {
    append_request req;
    req.tenant = tenant;
    req.stream = stream;
    auto to = std::min(events.size(), from + 500);
    req.events.assign(events.begin() + static_cast<std::ptrdiff_t>(from),
                      events.begin() + static_cast<std::ptrdiff_t>(to));
    REQUIRE(db.append(req, 1));
  }
}

/// An existing tenant: one agent, 50 servers of 40 tools each, all granted,
/// no Exa server, no migration markers.
void write_existing_tenant(const test::temp_dir& dir) {
  event_db_options opts;
  opts.projectors = {&directory::project, &tenant_events::project};
  opts.max_event_bytes = 4 * 1024 * 1024;
  auto db = event_db::open(dir.str() + "/store", opts);
  REQUIRE(db);
  token_record tok{"tok_existing", tenant_id, "old", 1, false};
  append_all(**db, "_node", directory::stream,
             {{"tenant.created", directory::tenant_created({tenant_id, "Existing", 1})},
              {"token.issued", directory::token_issued(tok, digest::sha256_hex(token))}});
  std::vector<event_draft> cfg{tenant_events::agent_created({"a_old", "Assistant", true})};
  for (int server_idx = 0; server_idx < 50; ++server_idx) {
    mcp_server_record s;
    s.server_id = "s_" + std::to_string(server_idx);
    s.tenant_id = tenant_id;
    s.label = "Service " + std::to_string(server_idx);
    s.url = "https://mcp" + std::to_string(server_idx) + ".example.com/mcp";
    s.enabled = s.trusted = s.connected = true;
    s.cache_version = "v1";
    s.discovered_us = 1;
    std::vector<tool_definition> cached;
    for (int tool_idx = 0; tool_idx < 40; ++tool_idx) {
      tool_definition def;
      def.name = "svc" + std::to_string(server_idx) + "_tool_" + std::to_string(tool_idx);
      def.description = "Lists or updates records of service " + std::to_string(server_idx) + ".";
      def.input_schema = R"({"type":"object","properties":{"query":{"type":"string"}}})";
      s.allowed_tools.push_back(def.name);
      cached.push_back(def);
    }
    s.cached_tools = tool_cache{std::move(cached)};
    cfg.push_back(tenant_events::server_upserted(s));
    for (const auto& name : s.allowed_tools)
      cfg.push_back(tenant_events::grant_set({"a_old", s.server_id, name, grant_decision::allow}));
  }
  append_all(**db, tenant_id, tenant_events::stream, std::move(cfg));
}

} // namespace

TEST_CASE("an existing tenant gets the default Exa server by migration and keeps its agent") {
  test::temp_dir dir;
  write_existing_tenant(dir);
  test::running_node node{dir};
  auto agents = node.call("GET", "/v1/agents", token);
  REQUIRE(agents.status == 200);
  REQUIRE(agents.body.size() == 1);
  CHECK(agents.body[0]["agent_id"] == "a_old");
  int exa = 0;
  for (auto& s : node.call("GET", "/v1/servers", token).body)
    exa += s["preset_id"] == "exa" ? 1 : 0;
  CHECK(exa == 1);
}

TEST_CASE("a run over two thousand cached tools starts and persists its snapshot") {
  test::temp_dir dir;
  write_existing_tenant(dir);
  test::running_node node{dir};
  auto run = node.call("POST", "/v1/runs", token,
                       json{{"agent_id", "a_old"}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE_MESSAGE(run.status == 201, run.raw.substr(0, 300));
  CHECK(run.body["snapshot"]["tools"].size() > 2000);
  CHECK(run.body["view"]["catalog_mode"] == true);
  auto run_id = run.body["run_id"].get<std::string>();
  // After a restart the run answers from its persisted snapshot.
  node.stop();
  node.start();
  auto again = node.call("GET", "/v1/runs/" + run_id, token);
  REQUIRE(again.status == 200);
  CHECK(again.body["snapshot"] == run.body["snapshot"]);
}
