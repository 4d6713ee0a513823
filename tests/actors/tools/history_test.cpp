// The account history and its two tools, over records as the store holds
// them: every event here is appended to a real RocksDB event store in a
// temporary directory, shaped as its writer writes it (turn.reported as the
// tenant actor, run.started with a snapshot from tenant_events::to_json,
// tools.round as the run actor writes it by hand), read back, and indexed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tenant/tenant_events.hpp"
#include "actors/tools/history.hpp"
#include "storage/event_db.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// One call of a tools.round record.
struct round_call {
  std::string call_id;
  std::string name;
  std::string status;
  std::string reason;
  std::string server_id; ///< empty for internal tools (no server_id, no tool)
  std::string tool;
};

/// A tools.round record's data, member for member as actors/run/run.cpp
/// (record_activity) writes it.
std::string round_data(uint64_t round, const std::vector<round_call>& calls) {
  std::string out = "{\"round\":" + std::to_string(round) + ",\"calls\":[";
  for (std::size_t idx = 0; idx < calls.size(); ++idx) {
    const auto& call = calls[idx];
    out += idx == 0 ? "{" : ",{";
    out += "\"call_id\":" + json(call.call_id).dump() + ",\"name\":" + json(call.name).dump()
           + ",\"status\":" + json(call.status).dump() + ",\"reason\":" + json(call.reason).dump()
           + ",\"us\":" + std::to_string(1200 + idx);
    if (!call.server_id.empty())
      out +=
        ",\"server_id\":" + json(call.server_id).dump() + ",\"tool\":" + json(call.tool).dump();
    out += "}";
  }
  return out + "]}";
}

/// A store and one tenant's history over it, fed what the store holds.
struct history_fixture {
  test::temp_dir dir;
  std::unique_ptr<event_db> db;
  std::unique_ptr<history_index> index;
  std::string tenant;
  int64_t now_us = 1'741'944'413'000'000; // 2025-03-14T09:26:53Z

  explicit history_fixture(std::string tenant_id = "t_acme", history_options opts = {})
      : tenant(std::move(tenant_id)) {
    event_db_options store_opts;
    store_opts.sync = false;
    auto opened = event_db::open(dir.str() + "/store", store_opts);
    REQUIRE(opened);
    db = std::move(*opened);
    auto made = history_index::open(tenant, std::move(opts));
    REQUIRE(made);
    index = std::move(*made);
  }

  /// Appends one event, reads it back from the store and indexes that.
  event_record record(const std::string& stream, const std::string& type, std::string data) {
    auto appended = store(stream, type, std::move(data));
    auto indexed = index->index(appended);
    REQUIRE_MESSAGE(indexed, (indexed ? "" : indexed.error().message()));
    return appended;
  }

  /// Appends one event and answers it as the store holds it (not indexed).
  event_record store(const std::string& stream, const std::string& type, std::string data) {
    append_request req{tenant, stream, {{type, std::move(data)}}, append_request::any_seq};
    auto appended = db->append(req, now_us);
    REQUIRE_MESSAGE(appended, (appended ? "" : appended.error().message()));
    now_us += 60'000'000;
    auto read = db->read_stream({tenant, stream, appended->first_seq, 1});
    REQUIRE(read);
    REQUIRE(read->size() == 1);
    return read->front();
  }

  event_record turn(const std::string& chat, const std::string& run, uint64_t turn_no,
                    const std::string& user, const std::string& assistant) {
    return record(
      "chat." + chat, "turn.reported",
      json{{"run_id", run}, {"turn", turn_no}, {"user", user}, {"assistant", assistant}}.dump());
  }

  event_record run_started(const std::string& run, const std::string& chat,
                           channel chan = channel::owner_text_chat) {
    effective_policy snapshot;
    snapshot.tenant_id = tenant;
    snapshot.agent_id = "a_helper";
    snapshot.run_id = run;
    snapshot.chan = chan;
    snapshot.created_us = now_us;
    snapshot.tools.emplace_back(tool_origin::mcp, "get_forecast", "s_weather", risk_level::low,
                                true, false);
    snapshot.tools.emplace_back(tool_origin::internal, "search_agent_history", "",
                                risk_level::medium, true, false);
    return record(
      "run." + run, "run.started",
      json{{"run_id", run}, {"chat_id", chat}, {"snapshot", tenant_events::to_json(snapshot)}}
        .dump());
  }

  event_record round(const std::string& run, uint64_t round_no,
                     const std::vector<round_call>& calls) {
    return record("run." + run, "tools.round", round_data(round_no, calls));
  }

  tool_context ctx() const {
    tool_context out;
    out.tenant_id = tenant;
    out.agent_id = "a_helper";
    out.run_id = "r_now";
    out.chat_id = "c_now";
    return out;
  }

  json search(const std::string& query, int limit = 0) const {
    json args{{"query", query}};
    if (limit > 0)
      args["limit"] = limit;
    auto outcome = search_agent_history(*index, ctx(), args);
    REQUIRE_MESSAGE(!outcome.is_error, outcome.result.dump());
    return outcome.result["results"];
  }

  tool_outcome read(const std::string& evidence_id) const {
    return read_agent_history(*index, ctx(), json{{"evidence_id", evidence_id}});
  }
};

std::vector<std::string> ids_of(const json& results) {
  std::vector<std::string> out;
  for (const auto& hit : results)
    out.push_back(hit["evidence_id"].get<std::string>());
  return out;
}

std::vector<uint64_t> turns_of(const json& context) {
  std::vector<uint64_t> out;
  for (const auto& entry : context)
    out.push_back(entry["turn"].get<uint64_t>());
  return out;
}

} // namespace

TEST_CASE("a reported turn is found by its words with its evidence id, kind, chat, run, time "
          "and excerpt") {
  history_fixture f;
  f.turn("c_trip", "r_1", 1, "Can you book the train?",
         "I booked the overnight train to Lisbon for Friday.");
  f.turn("c_food", "r_2", 1, "Any risotto ideas?", "Try a mushroom risotto with thyme.");
  auto results = f.search("lisbon train");
  REQUIRE(results.size() == 1);
  const auto& hit = results[0];
  CHECK(hit["evidence_id"] == "t.c_trip.1");
  CHECK(hit["kind"] == "transcript");
  CHECK(hit["chat_id"] == "c_trip");
  CHECK(hit["run_id"] == "r_1");
  CHECK(hit["turn"] == 1);
  CHECK(hit["time"] == "2025-03-14T09:26:53Z");
  CHECK(hit["from"] == "assistant");
  CHECK(hit["excerpt"] == "I booked the overnight train to Lisbon for Friday.");
}

TEST_CASE("tool rounds are found by their tools' names and runs by their channel and outcome") {
  history_fixture f;
  f.run_started("r_1", "c_weather", channel::in_app_voice);
  f.round("r_1", 1,
          {{"call_a", "get_forecast", "ok", "completed", "s_weather", "get_forecast"},
           {"call_b", "search_agent_history", "failed", "invalid_arguments", "", ""}});
  f.record("run.r_1", "run.finished", json{{"run_id", "r_1"}, {"rounds", 1}, {"calls", 2}}.dump());

  auto rounds = f.search("forecast");
  REQUIRE(rounds.size() == 1);
  CHECK(rounds[0]["evidence_id"] == "a.r_1.2");
  CHECK(rounds[0]["kind"] == "tool_activity");
  CHECK(rounds[0]["run_id"] == "r_1");
  CHECK(rounds[0]["chat_id"] == "c_weather"); // from the run's start
  CHECK(rounds[0]["round"] == 1);
  CHECK(rounds[0]["from"] == "calls");
  CHECK(rounds[0]["excerpt"].get<std::string>().find("get_forecast") != std::string::npos);
  CHECK(ids_of(f.search("invalid arguments")) == std::vector<std::string>{"a.r_1.2"});

  auto runs = f.search("voice finished");
  REQUIRE(runs.size() == 1);
  CHECK(runs[0]["evidence_id"] == "r.r_1");
  CHECK(runs[0]["kind"] == "run");
  CHECK(runs[0]["chat_id"] == "c_weather");
  CHECK(runs[0]["excerpt"]
        == "Run on in app voice for agent a_helper, caller owner: finished (rounds: 1, calls: 2).");
}

TEST_CASE("a run's record follows its end: finished or cancelled, with its counts") {
  history_fixture f;
  f.run_started("r_1", "c_1");
  auto started = f.read("r.r_1");
  REQUIRE_FALSE(started.is_error);
  CHECK(started.result["context"][0]["outcome"] == "started");
  CHECK(started.result["context"][0]["channel"] == "owner_text_chat");
  CHECK(started.result["context"][0]["agent"] == "a_helper");
  f.record("run.r_1", "run.cancelled",
           json{{"run_id", "r_1"}, {"cancelled_calls", 3}, {"cancel_to_closed_us", 900}}.dump());
  auto ended = f.read("r.r_1");
  REQUIRE_FALSE(ended.is_error);
  const auto& run = ended.result["context"][0];
  CHECK(run["outcome"] == "cancelled");
  CHECK(run["cancelled_calls"] == 3);
  CHECK(run["ended"] == "2025-03-14T09:27:53Z");
  CHECK(ids_of(f.search("cancelled")) == std::vector<std::string>{"r.r_1"});
  CHECK(f.search("started").empty());
}

TEST_CASE("events that are not history are passed over") {
  history_fixture f;
  auto audit = f.store("audit", "policy.composed", json{{"run_id", "r_1"}}.dump());
  auto config = f.store("tenant", "agent.created", json{{"agent_id", "a_lisbon"}}.dump());
  auto other_type = f.store("chat.c_1", "turn.redacted", json{{"turn", 1}}.dump());
  auto run_other = f.store("run.r_1", "run.noted", json{{"note", "lisbon"}}.dump());
  for (const auto& ev : {audit, config, other_type, run_other}) {
    auto indexed = f.index->index(ev);
    REQUIRE(indexed);
    CHECK_FALSE(*indexed);
  }
  auto size = f.index->size();
  REQUIRE(size);
  CHECK(*size == 0);
}

TEST_CASE("an event of another tenant is refused and not indexed") {
  history_fixture f{"t_acme"};
  history_fixture other{"t_other"};
  auto theirs = other.store(
    "chat.c_1", "turn.reported",
    json{{"run_id", "r_9"}, {"turn", 1}, {"user", "secret plans"}, {"assistant", "noted"}}.dump());
  auto indexed = f.index->index(theirs);
  REQUIRE_FALSE(indexed);
  CHECK(indexed.error().code() == errc::out_of_range);
  CHECK(f.search("secret plans").empty());
}

TEST_CASE("a history event whose data lacks its shape is refused, and a rebuild skips and counts "
          "it") {
  history_fixture f;
  auto bad_turn = f.store("chat.c_1", "turn.reported", json{{"turn", "one"}}.dump());
  auto bad_round = f.store("run.r_1", "tools.round", json{{"round", 1}, {"calls", 7}}.dump());
  for (const auto& ev : {bad_turn, bad_round}) {
    auto indexed = f.index->index(ev);
    REQUIRE_FALSE(indexed);
    CHECK(indexed.error().code() == errc::corrupt_data);
  }
  f.store("chat.c_1", "turn.reported",
          json{{"run_id", "r_1"}, {"turn", 2}, {"user", "kettle"}, {"assistant", "ok"}}.dump());
  auto fresh = history_index::open(f.tenant, {});
  REQUIRE(fresh);
  auto report = rebuild_history(**fresh, *f.db);
  REQUIRE(report);
  CHECK(report->events == 3);
  CHECK(report->indexed == 1);
  CHECK(report->skipped == 2);
}

TEST_CASE("the index rebuilt from the store answers as the index fed live did") {
  history_fixture f;
  f.run_started("r_1", "c_trip");
  // Each turn says "ferry" a different number of times: no two rank alike.
  std::string ferries;
  for (uint64_t turn = 1; turn <= 30; ++turn) {
    ferries += " ferry";
    f.turn("c_trip", "r_1", turn, "question " + std::to_string(turn) + " about the" + ferries,
           "answer " + std::to_string(turn) + " about the timetable");
  }
  f.round("r_1", 1, {{"c1", "get_ferry_times", "ok", "completed", "s_ferry", "get_ferry_times"}});
  f.record("run.r_1", "run.finished", json{{"run_id", "r_1"}, {"rounds", 1}, {"calls", 1}}.dump());
  f.store("audit", "policy.composed", json{{"run_id", "r_1"}}.dump());

  history_options opts;
  opts.index.dir = f.dir.str() + "/index"; // on disk, as a node keeps it
  auto rebuilt = history_index::open(f.tenant, opts);
  REQUIRE(rebuilt);
  auto report = rebuild_history(**rebuilt, *f.db, 7); // pages of 7 events
  REQUIRE(report);
  CHECK(report->events == 33);
  CHECK(report->indexed == 33);
  CHECK(report->skipped == 0);
  for (const auto& [query, limit] :
       std::vector<std::pair<std::string, int>>{{"ferry timetable", 20}, {"ferry", 5}}) {
    auto live = f.search(query, limit);
    auto again = search_agent_history(**rebuilt, f.ctx(), json{{"query", query}, {"limit", limit}});
    REQUIRE_FALSE(again.is_error);
    CHECK(ids_of(again.result["results"]) == ids_of(live));
  }
  auto live_read = f.read("a.r_1.2");
  auto rebuilt_read = read_agent_history(**rebuilt, f.ctx(), json{{"evidence_id", "a.r_1.2"}});
  CHECK(rebuilt_read.result == live_read.result);
}

TEST_CASE("search answers at most its limit, five when none is given") {
  history_fixture f;
  for (uint64_t turn = 1; turn <= 25; ++turn)
    f.turn("c_1", "r_1", turn, "the umbrella question " + std::to_string(turn), "umbrella");
  CHECK(f.search("umbrella").size() == 5);
  CHECK(f.search("umbrella", 1).size() == 1);
  CHECK(f.search("umbrella", 20).size() == 20);
}

TEST_CASE("an oversized search query is refused out_of_range, naming the bound") {
  history_options opts;
  opts.index.max_query_terms = 4;
  history_fixture f{"t_acme", opts};
  f.turn("c_1", "r_1", 1, "alpha", "beta");
  auto refused =
    search_agent_history(*f.index, f.ctx(), json{{"query", "alpha beta gamma delta epsilon"}});
  REQUIRE(refused.is_error);
  CHECK(refused.result["error"] == "out_of_range");
  CHECK(refused.result["message"] == "query: at most 4 distinct words");
  auto too_long = search_agent_history(*f.index, f.ctx(), json{{"query", std::string(3000, 'a')}});
  REQUIRE(too_long.is_error);
  CHECK(too_long.result["error"] == "out_of_range");
  CHECK(too_long.result["message"] == "query: at most 2048 bytes");
}

TEST_CASE("read gives the cited turn among its neighbours of the same chat, in order") {
  history_fixture f;
  for (uint64_t turn = 1; turn <= 5; ++turn) {
    f.turn("c_trip", "r_" + std::to_string(turn), turn, "trip question " + std::to_string(turn),
           "trip answer " + std::to_string(turn));
    f.turn("c_other", "r_x", turn, "other question", "other answer");
  }
  auto read = f.read("t.c_trip.3");
  REQUIRE_FALSE(read.is_error);
  const auto& result = read.result;
  CHECK(result["citation"]
        == json{{"evidence_id", "t.c_trip.3"},
                {"kind", "transcript"},
                {"chat_id", "c_trip"},
                {"run_id", "r_3"},
                {"time", "2025-03-14T09:30:53Z"},
                {"turn", 3}});
  const auto& context = result["context"];
  CHECK(turns_of(context) == std::vector<uint64_t>{1, 2, 3, 4, 5});
  for (const auto& entry : context) {
    CHECK(entry["user"].get<std::string>().rfind("trip question", 0) == 0);
    CHECK(entry.contains("cited") == (entry["turn"] == 3));
  }
  CHECK(context[2]["evidence_id"] == "t.c_trip.3");
  CHECK(context[2]["run_id"] == "r_3");
  CHECK(result["more_before"] == false);
  CHECK(result["more_after"] == false);
  CHECK(result["truncated"] == false);
}

TEST_CASE("read stays within its byte bound, nearest neighbours first, saying what was left out") {
  history_options opts;
  opts.max_read_bytes = 2048;
  history_fixture f{"t_acme", opts};
  std::string text(200, 'x');
  for (uint64_t turn = 1; turn <= 20; ++turn)
    f.turn("c_1", "r_1", turn, "user " + text, "assistant " + text);
  auto read = f.read("t.c_1.10");
  REQUIRE_FALSE(read.is_error);
  const auto& context = read.result["context"];
  CHECK(context.dump().size() <= opts.max_read_bytes);
  auto turns = turns_of(context);
  REQUIRE(turns.size() >= 2);
  CHECK(std::find(turns.begin(), turns.end(), 10) != turns.end());
  // Contiguous around the citation, balanced within one turn.
  for (std::size_t idx = 1; idx < turns.size(); ++idx)
    CHECK(turns[idx] == turns[idx - 1] + 1);
  auto before = static_cast<int>(10 - turns.front());
  auto after = static_cast<int>(turns.back() - 10);
  CHECK(std::abs(before - after) <= 1);
  CHECK(read.result["more_before"] == true);
  CHECK(read.result["more_after"] == true);
  CHECK(read.result["truncated"] == false);

  // At the chat's start nothing is before, and more fits after.
  auto first = f.read("t.c_1.1");
  REQUIRE_FALSE(first.is_error);
  CHECK(first.result["context"][0]["turn"] == 1);
  CHECK(first.result["more_before"] == false);
  CHECK(first.result["more_after"] == true);
}

TEST_CASE("a cited turn larger than the bound alone is cut to fit and marked truncated") {
  history_fixture f;
  std::string user(40 * 1024, 'u');
  std::string assistant;
  while (assistant.size() < 60 * 1024)
    assistant += "caf\xC3\xA9 "; // multi-byte characters at every cut
  f.turn("c_1", "r_1", 1, user, assistant);
  f.turn("c_1", "r_1", 2, "short", "short");
  auto read = f.read("t.c_1.1");
  REQUIRE_FALSE(read.is_error);
  const auto& context = read.result["context"];
  REQUIRE(context.size() == 1);
  CHECK(context.dump().size() <= 8 * 1024);
  CHECK(read.result["truncated"] == true);
  CHECK(read.result["more_after"] == true);
  auto kept = context[0]["assistant"].get<std::string>();
  CHECK_FALSE(kept.empty());
  CHECK(assistant.compare(0, kept.size(), kept) == 0);
  // Cut on a character boundary: the text still dumps as JSON.
  CHECK_NOTHROW((void)context.dump());
}

TEST_CASE("a tool round's context holds its run's record and the rounds beside it") {
  history_fixture f;
  f.run_started("r_1", "c_1");
  for (uint64_t round = 1; round <= 3; ++round)
    f.round("r_1", round,
            {{"c" + std::to_string(round), "get_forecast", "ok", "completed", "s_weather",
              "get_forecast"}});
  f.record("run.r_1", "run.finished", json{{"run_id", "r_1"}, {"rounds", 3}, {"calls", 3}}.dump());
  auto read = f.read("a.r_1.3"); // the second round (the run's start is seq 1)
  REQUIRE_FALSE(read.is_error);
  CHECK(read.result["citation"]["kind"] == "tool_activity");
  CHECK(read.result["citation"]["round"] == 2);
  const auto& context = read.result["context"];
  REQUIRE(context.size() == 4);
  CHECK(context[0]["evidence_id"] == "r.r_1");
  CHECK(context[0]["outcome"] == "finished");
  CHECK(context[1]["round"] == 1);
  CHECK(context[2]["cited"] == true);
  CHECK(context[2]["calls"][0]["tool"] == "get_forecast");
  CHECK(context[2]["calls"][0]["server_id"] == "s_weather");
  CHECK(context[3]["round"] == 3);
}

TEST_CASE("an evidence id that is malformed or not in this tenant's index is not_found, the same "
          "for another tenant's") {
  history_fixture ours{"t_acme"};
  history_fixture theirs{"t_other"};
  ours.turn("c_1", "r_1", 1, "hello", "hi");
  theirs.turn("c_9", "r_9", 1, "their secret", "kept");
  // Their id reads in their index...
  auto own = theirs.read("t.c_9.1");
  REQUIRE_FALSE(own.is_error);
  // ...and is not found in ours, with the answer any unknown id gets.
  std::vector<std::string> ids{
    "t.c_9.1", "t.c_1.2", "r.r_9", "nonsense", "", std::string(128, 't'), "t.c_1.1.extra", "t..1"};
  for (const auto& id : ids) {
    auto read = ours.read(id);
    REQUIRE(read.is_error);
    CHECK(
      read.result
      == json{{"error", "not_found"}, {"message", "no such evidence in this account's history"}});
  }
}

TEST_CASE("a tool given another tenant's history answers internal and reads nothing") {
  history_fixture f{"t_acme"};
  f.turn("c_1", "r_1", 1, "hello", "hi");
  auto ctx = f.ctx();
  ctx.tenant_id = "t_other";
  auto searched = search_agent_history(*f.index, ctx, json{{"query", "hello"}});
  REQUIRE(searched.is_error);
  CHECK(searched.result["error"] == "internal");
  auto read = read_agent_history(*f.index, ctx, json{{"evidence_id", "t.c_1.1"}});
  REQUIRE(read.is_error);
  CHECK(read.result["error"] == "internal");
  CHECK(read.result.dump().find("hello") == std::string::npos);
}

TEST_CASE("search query text is never syntax through the tool either") {
  history_fixture f;
  f.turn("c_1", "r_1", 1, "garlic bread", "with butter");
  f.turn("c_1", "r_1", 2, "onion soup", "with garlic");
  CHECK(f.search("garlic NOT onion").size() == 2);
  CHECK(f.search("\"onion\" -garlic").size() == 2);
  CHECK(f.search("gar*").empty());
}

TEST_CASE("the run list keeps the newest runs by start time, however the events arrive") {
  history_options opts;
  opts.recent_runs = 3;
  history_fixture f{"t_acme", opts};
  f.run_started("r_1", "c_1");
  f.run_started("r_2", "c_1");
  f.record("run.r_1", "run.finished", json{{"run_id", "r_1"}, {"rounds", 0}, {"calls", 0}}.dump());
  f.run_started("r_3", "c_2", channel::in_app_voice);
  auto runs = f.index->recent_runs(10);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].run_id == "r_3");
  CHECK(runs[0].chan == "in_app_voice");
  CHECK(runs[0].chat_id == "c_2");
  CHECK(runs[0].agent_id == "a_helper");
  CHECK(runs[2].run_id == "r_1");
  CHECK(runs[2].outcome == "finished");
  CHECK(runs[2].ended_us > runs[2].started_us);
  CHECK(runs[1].outcome == "started");
  CHECK(runs[1].ended_us == 0);
  // A fourth start pushes out the oldest; its late end changes nothing.
  f.run_started("r_4", "c_3");
  f.record("run.r_1", "run.cancelled",
           json{{"run_id", "r_1"}, {"cancelled_calls", 0}, {"cancel_to_closed_us", 1}}.dump());
  runs = f.index->recent_runs(10);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].run_id == "r_4");
  CHECK(runs[2].run_id == "r_2");
  CHECK(f.index->recent_runs(1).size() == 1);

  // Rebuilt from the store (streams in key order, not start order), the
  // list is the same.
  history_fixture copy{"t_acme", opts};
  copy.db = std::move(f.db);
  auto rebuilt = rebuild_history(*copy.index, *copy.db);
  REQUIRE(rebuilt);
  auto again = copy.index->recent_runs(10);
  REQUIRE(again.size() == 3);
  for (std::size_t run_idx = 0; run_idx < again.size(); ++run_idx) {
    CHECK(again[run_idx].run_id == runs[run_idx].run_id);
    CHECK(again[run_idx].outcome == runs[run_idx].outcome);
  }
}

TEST_CASE("queued events wait for a flush, and a search or a read flushes them first") {
  history_options opts;
  opts.batch_events = 3;
  history_fixture f{"t_acme", opts};
  auto turn = [&](uint64_t turn_no, const std::string& text) {
    return f.store(
      "chat.c_1", "turn.reported",
      json{{"run_id", "r_1"}, {"turn", turn_no}, {"user", text}, {"assistant", "noted"}}.dump());
  };
  CHECK_FALSE(f.index->queue(turn(1, "the blue kettle")));
  CHECK_FALSE(f.index->queue(turn(2, "the red kettle")));
  CHECK(f.index->queued() == 2);
  auto size = f.index->size();
  REQUIRE(size);
  CHECK(*size == 0); // nothing indexed before a flush...
  // ...yet a search sees both.
  CHECK(ids_of(f.search("kettle")) == std::vector<std::string>{"t.c_1.2", "t.c_1.1"});
  CHECK(f.index->queued() == 0);

  // A read flushes as well.
  CHECK_FALSE(f.index->queue(turn(3, "the green kettle")));
  auto read = f.read("t.c_1.3");
  REQUIRE_FALSE(read.is_error);
  CHECK(read.result["citation"]["turn"] == 3);

  // The batch's last event says: flush now.
  CHECK_FALSE(f.index->queue(turn(4, "a")));
  CHECK_FALSE(f.index->queue(turn(5, "b")));
  CHECK(f.index->queue(turn(6, "c")));
  auto flushed = f.index->flush();
  CHECK(flushed.indexed == 3);
  CHECK(flushed.left_out == 0);
  CHECK(f.index->queued() == 0);
}

TEST_CASE("a flush indexes in the order queued and leaves out only what does not index") {
  history_fixture f;
  auto started = f.store("run.r_1", "run.started",
                         json{{"run_id", "r_1"},
                              {"chat_id", "c_1"},
                              {"snapshot", {{"agent_id", "a_helper"}, {"chan", "owner_text_chat"}}}}
                           .dump());
  auto round = f.store(
    "run.r_1", "tools.round",
    round_data(1, {{"c1", "get_forecast", "ok", "completed", "s_weather", "get_forecast"}}));
  auto bad = f.store("run.r_1", "tools.round", json{{"round", 2}, {"calls", 7}}.dump());
  auto theirs =
    event_record{"t_other",
                 "chat.c_9",
                 1,
                 f.now_us,
                 "turn.reported",
                 json{{"run_id", "r_9"}, {"turn", 1}, {"user", "x"}, {"assistant", "y"}}.dump()};
  auto audit = f.store("audit", "policy.composed", json{{"run_id", "r_1"}}.dump());
  for (auto ev : {started, round, bad, theirs, audit})
    f.index->queue(ev);
  auto flushed = f.index->flush();
  CHECK(flushed.indexed == 2);  // the run and its round (its start came first)
  CHECK(flushed.left_out == 2); // the malformed round, the other tenant's turn
  auto found = f.search("forecast");
  REQUIRE(found.size() == 1);
  CHECK(found[0]["chat_id"] == "c_1");
}

TEST_CASE("rounds of interleaved runs name each its own run's chat") {
  history_fixture f;
  f.run_started("r_1", "c_one");
  f.run_started("r_2", "c_two");
  for (uint64_t round = 1; round <= 3; ++round) {
    f.round("r_1", round,
            {{"a" + std::to_string(round), "get_alpha", "ok", "completed", "s_x", "get_alpha"}});
    f.round("r_2", round,
            {{"b" + std::to_string(round), "get_beta", "ok", "completed", "s_x", "get_beta"}});
  }
  // The first run ends; a round recorded after its end (read again from the
  // store, say) still finds its chat in the run's record.
  f.record("run.r_1", "run.finished", json{{"run_id", "r_1"}, {"rounds", 3}, {"calls", 3}}.dump());
  auto late = f.store("run.r_1", "tools.round",
                      round_data(4, {{"a4", "get_gamma", "ok", "completed", "s_x", "get_gamma"}}));
  REQUIRE(f.index->index(late));
  for (const auto& [query, chat] : std::vector<std::pair<std::string, std::string>>{
         {"alpha", "c_one"}, {"beta", "c_two"}, {"gamma", "c_one"}}) {
    auto found = f.search(query, 20);
    REQUIRE(!found.empty());
    for (const auto& hit : found)
      CHECK(hit["chat_id"] == chat);
  }
  CHECK(f.search("alpha", 20).size() == 3);
}

TEST_CASE("events queued and never flushed (the desk stopped or crashed) are indexed by the "
          "rebuild on the next start, in stream order") {
  history_fixture f;
  f.run_started("r_1", "c_trip"); // indexed
  // Durable, queued, and lost with the index before any flush.
  std::vector<event_record> queued{
    f.store("chat.c_trip", "turn.reported",
            json{{"run_id", "r_1"}, {"turn", 1}, {"user", "the night ferry"}, {"assistant", "ok"}}
              .dump()),
    f.store(
      "run.r_1", "tools.round",
      round_data(1, {{"c1", "get_ferry_times", "ok", "completed", "s_x", "get_ferry_times"}})),
    f.store("run.r_1", "run.finished",
            json{{"run_id", "r_1"}, {"rounds", 1}, {"calls", 1}}.dump())};
  for (auto ev : queued)
    f.index->queue(std::move(ev));
  REQUIRE(f.index->queued() == 3);
  f.index.reset();

  // The next start: a fresh index, rebuilt from the store.
  history_options on_disk;
  on_disk.index.dir = f.dir.str() + "/index";
  auto made = history_index::open(f.tenant, on_disk);
  REQUIRE(made);
  f.index = std::move(*made);
  auto report = rebuild_history(*f.index, *f.db);
  REQUIRE(report);
  CHECK(report->indexed == 4);
  auto found = f.search("ferry", 20);
  auto ids = ids_of(found);
  std::sort(ids.begin(), ids.end());
  CHECK(ids == std::vector<std::string>{"a.r_1.2", "t.c_trip.1"});
  for (const auto& hit : found)
    CHECK(hit["chat_id"] == "c_trip"); // (the round's chat, from its run's start)
  // The run's record holds its end, which came after its round.
  auto round = f.read("a.r_1.2");
  REQUIRE_FALSE(round.is_error);
  REQUIRE_FALSE(round.result["context"].empty());
  CHECK(round.result["context"][0]["evidence_id"] == "r.r_1");
  CHECK(round.result["context"][0]["outcome"] == "finished");
}
