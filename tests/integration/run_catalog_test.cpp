// tool_call, the catalog's way to a long-tail tool, is audited as the tool
// it resolves to: the execution decisions ("calls.decided", the audit rows)
// and the run's activity name the target tool and its server with the
// reason, never tool_call alone, and only an allowed call reaches the
// server, judged by the SDK peer's own counters.
//
// Through the node a catalog id cannot resolve to a tool outside its run's
// snapshot: the run's catalog is built from its view, the view from its
// snapshot, and both are frozen for the run. A tool leaves the snapshot
// between runs (its grant revoked), and an id an earlier run handed out
// resolves to nothing in the next run (ids are keyed per run). The second
// case covers the check that stands behind that (decide_round's execution
// check of the resolved tool): a run actor is spawned here, with a real
// event store and a real connection to the peer, from a catalog built
// before a tool left the snapshot it is given.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/mcp/mcp_connection.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/run/run.hpp"
#include "actors/run/tool_fixtures.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/event_db.hpp"
#include "support/run_fixture.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// The peer's tools plus eight generated ones: twelve granted MCP tools, so
/// text runs put them behind the catalog tools.
test::run_fixture_options catalog_peer() {
  test::run_fixture_options opts;
  opts.peer_args = {"--json", "--tools", "8"};
  for (int n = 0; n < 8; ++n)
    opts.tools.push_back("gen_" + std::to_string(n));
  return opts;
}

/// The id of the first tool_search hit whose name ends with `tool`.
std::string hit_id(const json& output, const std::string& tool) {
  for (const auto& hit : output["results"]) {
    auto name = hit["name"].get<std::string>();
    if (name.size() >= tool.size()
        && name.compare(name.size() - tool.size(), tool.size(), tool) == 0)
      return hit["id"].get<std::string>();
  }
  return {};
}

/// The execute-phase audit rows of one run, as GET /v1/audit answers them.
std::vector<json> execute_rows(test::run_fixture& f, const std::string& run_id) {
  auto audit = f.node->call("GET", "/v1/audit?limit=1000", f.token);
  REQUIRE_MESSAGE(audit.status == 200, audit.raw);
  std::vector<json> out;
  for (const auto& row : audit.body)
    if (row.value("phase", "") == "execute" && row.value("run_id", "") == run_id)
      out.push_back(row);
  return out;
}

bool has_row(const std::vector<json>& rows, const std::string& tool, const std::string& server_id,
             const std::string& reason) {
  return std::any_of(rows.begin(), rows.end(), [&](const json& row) {
    return row["tool"] == tool && row["server_id"] == server_id && row["reason"] == reason;
  });
}

} // namespace

TEST_CASE("a catalog call is audited as its target tool and server, and only an allowed one is "
          "sent") {
  test::run_fixture f{catalog_peer()};
  auto run_id = f.start_run();
  auto run = f.node->call("GET", "/v1/runs/" + run_id, f.token);
  REQUIRE(run.status == 200);
  REQUIRE(run.body["view"].dump().find("tool_call") != std::string::npos);

  // Round 1: the ids, from the run's own catalog.
  auto searched = f.submit(run_id, json::array({{{"call_id", "s1"},
                                                 {"name", "tool_search"},
                                                 {"arguments", {{"query", "echo text"}}}},
                                                {{"call_id", "s2"},
                                                 {"name", "tool_search"},
                                                 {"arguments", {{"query", "weather forecast"}}}}}));
  REQUIRE_MESSAGE(searched.status == 200, searched.raw);
  REQUIRE(searched.body["outputs"][0]["status"] == "local");
  auto echo_id = hit_id(searched.body["outputs"][0]["output"], "echo");
  auto forecast_id = hit_id(searched.body["outputs"][1]["output"], "get_forecast");
  REQUIRE_MESSAGE(!echo_id.empty(), searched.raw);
  REQUIRE_MESSAGE(!forecast_id.empty(), searched.raw);

  // Round 2: a valid call and one with invalid arguments for its target.
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto called = f.submit(
    run_id,
    json::array(
      {{{"call_id", "ok"},
        {"name", "tool_call"},
        {"arguments", {{"id", echo_id}, {"arguments", {{"text", "hi"}}}}}},
       {{"call_id", "bad"},
        {"name", "tool_call"},
        {"arguments",
         {{"id", forecast_id},
          {"arguments", {{"location", {{"address", "Main St 1"}}}, {"date", "next tuesday"}}}}}}}));
  REQUIRE_MESSAGE(called.status == 200, called.raw);
  const auto& outputs = called.body["outputs"];
  CHECK(outputs[0]["status"] == "ok");
  CHECK(outputs[1]["status"] == "invalid_arguments");
  auto stats = test::peer_stats(f.peer->port());
  CHECK(stats["tools_call_received"] == 1);
  CHECK(stats["tools"]["echo"]["calls"] == 1);
  CHECK_FALSE(stats["tools"].contains("get_forecast"));

  auto rows = execute_rows(f, run_id);
  CHECK(has_row(rows, "echo", f.server_id, "allowed"));
  CHECK(has_row(rows, "get_forecast", f.server_id, "invalid_arguments"));
  for (const auto& row : rows)
    CHECK_MESSAGE(row["tool"] != "tool_call", row.dump());

  REQUIRE(f.node->call("POST", "/v1/runs/" + run_id + "/finish", f.token).status == 200);

  // echo leaves the snapshot: its grant is revoked, and a new run starts.
  auto revoked =
    f.node->call("PUT", "/v1/agents/" + f.agent_id + "/grants", f.token,
                 json{{"server_id", f.server_id}, {"tool", "echo"}, {"decision", "deny"}}.dump());
  REQUIRE_MESSAGE(revoked.status == 200, revoked.raw);
  auto next_run = f.start_run();
  auto stale = f.submit(
    next_run, json::array({{{"call_id", "old"},
                            {"name", "tool_call"},
                            {"arguments", {{"id", echo_id}, {"arguments", {{"text", "hi"}}}}}}}));
  REQUIRE_MESSAGE(stale.status == 200, stale.raw);
  CHECK(stale.body["outputs"][0]["status"] == "invalid_arguments");
  // The earlier run's id resolves to no tool here: nothing to name but the
  // catalog tool, and the reason says so.
  auto next_rows = execute_rows(f, next_run);
  CHECK(has_row(next_rows, "tool_call", "", "unknown_catalog_id"));
  CHECK_FALSE(has_row(next_rows, "echo", f.server_id, "allowed"));
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 1);

  // The first run's activity in the store names the targets alike.
  json round_two;
  for (const auto& ev : f.events_in_store())
    if (ev.stream == "run." + run_id && ev.type == "tools.round"
        && json::parse(ev.data)["round"] == 2)
      round_two = json::parse(ev.data)["calls"];
  REQUIRE_MESSAGE(round_two.size() == 2, round_two.dump());
  CHECK(round_two[0]["name"] == "tool_call");
  CHECK(round_two[0]["tool"] == "echo");
  CHECK(round_two[0]["server_id"] == f.server_id);
  CHECK(round_two[0]["reason"] == "completed");
  CHECK(round_two[1]["tool"] == "get_forecast");
  CHECK(round_two[1]["server_id"] == f.server_id);
  CHECK(round_two[1]["reason"] == "invalid_arguments");
}

TEST_CASE("a catalog id whose tool left the snapshot is denied as that tool, audited not in "
          "snapshot") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  test::temp_dir dir;
  auto db = event_db::open(dir.str() + "/store", {});
  REQUIRE(db);
  node_metrics metrics; // outlives the actor system, whose actors count in it
  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};
  auto store = spawn_event_store(sys, std::shared_ptr<event_db>(std::move(*db)), metrics, {});
  auto policy = std::make_shared<const url_policy>(
    std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
  auto conn = spawn_mcp_connection(
    sys, mcp_endpoint{"s_peer", transport_kind::streamable_http, peer->url(), {}}, policy, {});

  // Twelve tools of the peer's server when the catalog was built.
  test::tool_world world;
  world.server("s_peer", "Peer");
  // (each with one required property, as the peer has it)
  auto allow = [&](const std::string& tool, const std::string& property,
                   const std::string& property_schema) {
    world.allow_mcp("s_peer",
                    test::definition(tool, "A tool of the peer.",
                                     R"({"type":"object","properties":{")" + property
                                       + "\":" + property_schema + R"(},"required":[")" + property
                                       + "\"]}"),
                    {}, true);
  };
  allow("echo", "text", R"({"type":"string"})");
  allow("get_forecast", "date", R"({"type":"string","pattern":"^\\d{4}-\\d{2}-\\d{2}$"})");
  allow("sleep", "ms", R"({"type":"integer"})");
  world.allow_many("s_peer", "gen", 9);
  auto view = world.view();
  REQUIRE(view.catalog_mode);
  auto catalog = std::make_shared<const tool_catalog>(test::catalog_of(view, 3));
  auto id_of = [&](const std::string& tool) {
    for (std::size_t idx = 0; idx < catalog->size(); ++idx)
      if (auto target = catalog->resolve(catalog->id_at(idx)); target && target->tool == tool)
        return catalog->id_at(idx);
    FAIL("no catalog id for " << tool);
    return std::string{};
  };
  auto echo_id = id_of("echo");
  auto forecast_id = id_of("get_forecast");
  auto sleep_id = id_of("sleep");

  // The run's snapshot no longer holds sleep.
  run_setup setup;
  setup.tenant_id = "t_a";
  setup.run_id = "r_1";
  setup.snapshot = world.snapshot;
  auto& tools = setup.snapshot.tools;
  tools.erase(std::remove_if(tools.begin(), tools.end(),
                             [](const snapshot_tool& t) { return t.name() == "sleep"; }),
              tools.end());
  REQUIRE(setup.snapshot.find("s_peer", "sleep") == nullptr);
  setup.view = std::move(view);
  setup.catalog = catalog;
  setup.connections.emplace("s_peer", conn);
  setup.store = store;
  auto run = spawn_run(sys, std::move(setup), metrics);

  REQUIRE(test::reset_peer_stats(peer->port()));
  auto call = [](const std::string& call_id, const std::string& id, const json& args) {
    return tool_call{call_id, "tool_call", json{{"id", id}, {"arguments", args}}.dump()};
  };
  caf::scoped_actor self{sys};
  std::vector<tool_output> outputs;
  self
    ->request(run, std::chrono::seconds{30}, tool_atom::value,
              std::vector<tool_call>{call("ok", echo_id, {{"text", "hi"}}),
                                     call("bad", forecast_id, {{"date", "next tuesday"}}),
                                     call("gone", sleep_id, {{"ms", 1}})})
    .receive([&](std::vector<tool_output>& out) { outputs = std::move(out); },
             [&](caf::error& err) { FAIL("the round failed: " << to_string(err)); });
  REQUIRE(outputs.size() == 3);
  CHECK(outputs[0].status == "ok");
  CHECK(outputs[1].status == "invalid_arguments");
  CHECK(outputs[2].status == "denied");
  auto stats = test::peer_stats(peer->port());
  CHECK(stats["tools_call_received"] == 1);
  CHECK(stats["tools"]["echo"]["calls"] == 1);
  CHECK_FALSE(stats["tools"].contains("sleep"));

  // What the store holds: the decisions and the activity, by target.
  auto read = [&](const std::string& stream) {
    std::vector<event_record> events;
    self
      ->request(store, std::chrono::seconds{10}, read_atom::value,
                stream_query{"t_a", stream, 1, 100})
      .receive([&](std::vector<event_record>& got) { events = std::move(got); },
               [&](caf::error& err) { FAIL("read failed: " << to_string(err)); });
    return events;
  };
  auto audit = read("audit");
  REQUIRE(audit.size() == 1);
  CHECK(audit[0].type == "calls.decided");
  CHECK(json::parse(audit[0].data)["decisions"]
        == json::array({{"echo", "s_peer", "allowed"},
                        {"get_forecast", "s_peer", "invalid_arguments"},
                        {"sleep", "s_peer", "not_in_snapshot"}}));
  auto activity = read("run.r_1");
  REQUIRE(activity.size() == 1);
  CHECK(activity[0].type == "tools.round");
  auto calls = json::parse(activity[0].data)["calls"];
  REQUIRE(calls.size() == 3);
  const char* targets[] = {"echo", "get_forecast", "sleep"};
  const char* reasons[] = {"completed", "invalid_arguments", "not_in_snapshot"};
  for (std::size_t idx = 0; idx < 3; ++idx) {
    CHECK(calls[idx]["name"] == "tool_call");
    CHECK(calls[idx]["tool"] == targets[idx]);
    CHECK(calls[idx]["server_id"] == "s_peer");
    CHECK(calls[idx]["reason"] == reasons[idx]);
  }

  caf::anon_send_exit(run, caf::exit_reason::kill);
  caf::anon_send_exit(conn, caf::exit_reason::kill);
  caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
}
