// The history and knowledge tools end to end through a node's HTTP API over a
// real RocksDB store, as an agent host drives them: a run finds what an
// earlier run's transcript holds, reads the cited context, records an
// improvement that waits for review, the owner confirms it, and the next run
// sees the memory. Also: the index is rebuilt from events when the node
// starts again, and the history stays the tenant's own.
#include <doctest/doctest.h>

#include "support/tool_session.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// A tenant whose default agent may search and read its history and record
/// improvements; its host reports turns and finishes runs.
struct host : test::tool_session {
  host() {
    for (auto tool : {"search_agent_history", "read_agent_history", "record_agent_improvement"})
      grant(tool);
  }

  void turn(const std::string& run, const std::string& user, const std::string& assistant) {
    auto reported = node.call("POST", "/v1/runs/" + run + "/turns", token,
                              json{{"user", user}, {"assistant", assistant}}.dump());
    REQUIRE_MESSAGE(reported.status == 201, reported.raw);
  }

  void finish(const std::string& run) {
    REQUIRE(node.call("POST", "/v1/runs/" + run + "/finish", token).status == 200);
  }
};

} // namespace

TEST_CASE("a run finds an earlier transcript, cites it, and an improvement the owner confirms "
          "reaches the next run") {
  host h;
  auto earlier = h.start_run();
  h.turn(earlier, "Book the usual hotel in Lisbon",
         "Booked the Pestana Palace again: you asked for a quiet room facing the garden.");
  h.turn(earlier, "Thanks", "You're welcome.");
  h.finish(earlier);

  auto run = h.start_run();
  auto found = h.result_of(run, "search_agent_history", {{"query", "quiet room garden Lisbon"}});
  REQUIRE_FALSE(found["results"].empty());
  auto first = found["results"][0];
  CHECK(first["kind"] == "transcript");
  CHECK(first["run_id"] == earlier);
  auto evidence = first["evidence_id"].get<std::string>();
  auto context = h.result_of(run, "read_agent_history", {{"evidence_id", evidence}});
  CHECK(context.dump().find("facing the garden") != std::string::npos);

  auto submitted = h.result_of(run, "record_agent_improvement",
                               {{"kind", "memory"},
                                {"title", "Hotel room"},
                                {"content", "Prefers a quiet room facing the garden"},
                                {"rationale", "Found in an earlier booking"}});
  CHECK(submitted["status"] == "pending_review");
  CHECK(h.result_of(run, "list_agent_memories", json::object())["memories"].empty());
  auto id = submitted["candidate_id"].get<std::string>();
  auto confirmed = h.node.call("POST", "/v1/knowledge/candidates/" + id + "/confirm", h.token);
  REQUIRE_MESSAGE(confirmed.status == 200, confirmed.raw);
  h.finish(run);

  auto next = h.start_run();
  auto memories = h.result_of(next, "list_agent_memories", json::object());
  REQUIRE(memories["memories"].size() == 1);
  CHECK(memories["memories"][0]["content"] == "Prefers a quiet room facing the garden");
}

TEST_CASE("the history index is rebuilt from events when the node starts again") {
  host h;
  auto earlier = h.start_run();
  h.turn(earlier, "Remind me which dentist I use", "Dr. Okonkwo on Rua Augusta.");
  h.finish(earlier);
  h.node.stop();
  h.node.start();
  auto run = h.start_run();
  auto found = h.result_of(run, "search_agent_history", {{"query", "Okonkwo dentist"}});
  REQUIRE_FALSE(found["results"].empty());
  CHECK(found["results"][0]["run_id"] == earlier);
}

TEST_CASE("history search reaches only the tenant's own transcripts and evidence") {
  host h;
  auto mine = h.start_run();
  h.turn(mine, "Where is the spare key", "Under the blue flowerpot by the door.");
  auto evidence =
    h.result_of(mine, "search_agent_history", {{"query", "flowerpot"}})["results"][0]["evidence_id"]
      .get<std::string>();
  auto [other_id, other_token] = h.node.make_tenant("Other");
  auto other_agent =
    h.node.call("GET", "/v1/agents", other_token).body[0]["agent_id"].get<std::string>();
  for (auto tool : {"search_agent_history", "read_agent_history"})
    REQUIRE(h.node
              .call("PUT", "/v1/agents/" + other_agent + "/grants", other_token,
                    json{{"tool", tool}, {"decision", "allow"}}.dump())
              .status
            == 200);
  auto other_run =
    h.node.call("POST", "/v1/runs", other_token,
                json{{"agent_id", other_agent}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE(other_run.status == 201);
  auto ask = [&](const std::string& tool, json args) {
    json body{{"calls", {{{"call_id", "c1"}, {"name", tool}, {"arguments", std::move(args)}}}}};
    auto answer =
      h.node.call("POST", "/v1/runs/" + other_run.body["run_id"].get<std::string>() + "/tool-calls",
                  other_token, body.dump());
    REQUIRE(answer.status == 200);
    return answer.body["outputs"][0];
  };
  auto searched = ask("search_agent_history", {{"query", "flowerpot"}});
  CHECK(searched["output"]["structuredContent"]["results"].empty());
  auto read = ask("read_agent_history", {{"evidence_id", evidence}});
  CHECK(read["status"] == "tool_error");
  CHECK(read["output"]["result"]["structuredContent"]["error"] == "not_found");
  CHECK(read.dump().find("flowerpot") == std::string::npos);
}

TEST_CASE("history queries of query-syntax characters are plain text and a huge query is refused") {
  host h;
  auto run = h.start_run();
  h.turn(run, "What is NOT allowed", "Pets (other than cats) are not allowed: \"no dogs\".");
  for (auto query :
       {"NOT allowed", "\"no dogs\"", "(cats)", "dogs*", "title:pets", "-cats ~dogs"}) {
    CAPTURE(query);
    auto out = h.call(run, "search_agent_history", {{"query", query}});
    CHECK(out["status"] == "ok");
  }
  // Over the schema's 500 characters: not sent to the tool, nothing stored.
  auto before = h.node.stored_events();
  auto huge = h.call(run, "search_agent_history", {{"query", std::string(600, 'a')}});
  CHECK(huge["status"] == "invalid_arguments");
  CHECK(h.node.stored_events() == before + 2); // the round's audit row and activity
}
