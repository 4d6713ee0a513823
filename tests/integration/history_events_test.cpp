// The account history over what a real node stores: a run through the node
// (a tool round against the SDK peer, a reported turn, the finish), then the
// tenant's history rebuilt from the stopped node's store. The tools find the
// turn by its words, the round by its tool, the run by its outcome, and read
// each back with its citation: the events' shapes are the writers' own.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "actors/tools/history.hpp"
#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

TEST_CASE("a run through a node is found and read in the history rebuilt from its store") {
  test::run_fixture f;
  auto run_id = f.start_run();
  auto answered =
    f.submit(run_id, json::array({{{"call_id", "d1"},
                                   {"name", "get_forecast"},
                                   {"arguments",
                                    {{"location", {{"address", "Karl-Marx-Allee 1, Berlin"}}},
                                     {"date", "2026-12-01"}}}}}));
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  REQUIRE(answered.body["outputs"][0]["status"] == "ok");
  f.report_turn(run_id, "Bring an umbrella: drizzle in Berlin all afternoon.");
  REQUIRE(f.node->call("POST", "/v1/runs/" + run_id + "/finish", f.token).status == 200);

  auto db = f.open_store();
  auto index = history_index::open(f.tenant_id, {});
  REQUIRE(index);
  auto report = rebuild_history(**index, *db);
  REQUIRE_MESSAGE(report, (report ? "" : report.error().message()));
  CHECK(report->skipped == 0);
  CHECK(report->indexed == 4); // run.started, tools.round, turn.reported, run.finished

  tool_context ctx;
  ctx.tenant_id = f.tenant_id;
  auto search = [&](const std::string& query) {
    auto outcome = search_agent_history(**index, ctx, json{{"query", query}});
    REQUIRE_MESSAGE(!outcome.is_error, outcome.result.dump());
    REQUIRE(outcome.result["results"].size() == 1);
    return outcome.result["results"][0];
  };
  auto turn = search("umbrella drizzle");
  CHECK(turn["kind"] == "transcript");
  CHECK(turn["run_id"] == run_id);
  CHECK(turn["turn"] == 1);
  auto round = search("forecast");
  CHECK(round["kind"] == "tool_activity");
  CHECK(round["run_id"] == run_id);
  CHECK(round["chat_id"] == turn["chat_id"]);
  auto run = search("finished");
  CHECK(run["kind"] == "run");
  CHECK(run["evidence_id"] == "r." + run_id);

  auto read = read_agent_history(**index, ctx, json{{"evidence_id", turn["evidence_id"]}});
  REQUIRE_FALSE(read.is_error);
  CHECK(read.result["citation"]["chat_id"] == turn["chat_id"]);
  CHECK(read.result["context"][0]["user"] == "Where can I buy bread?");
  CHECK(read.result["context"][0]["assistant"]
        == "Bring an umbrella: drizzle in Berlin all afternoon.");
  auto activity = read_agent_history(**index, ctx, json{{"evidence_id", round["evidence_id"]}});
  REQUIRE_FALSE(activity.is_error);
  const auto& context = activity.result["context"];
  REQUIRE(context.size() == 2);
  CHECK(context[0]["kind"] == "run");
  CHECK(context[0]["agent"] == f.agent_id);
  CHECK(context[0]["channel"] == "owner_text_chat");
  CHECK(context[0]["rounds"] == 1);
  CHECK(context[1]["calls"][0]["name"] == "get_forecast");
  CHECK(context[1]["calls"][0]["status"] == "ok");
  CHECK(context[1]["calls"][0]["server_id"] == f.server_id);
}
