// Run traces: a run against a real SDK-built MCP peer records what crossed
// its boundary; `voxosctl replay` replays it against a fresh node with the
// MCP answers served from the trace and reports any output that differs.
// The traces checked in under tests/data/traces/ replay identically.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sys/stat.h>
#include <thread>

#include "actors/run/trace.hpp"
#include "support/child_process.hpp"
#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct replay_result {
  int code = -1;
  std::string out;
};

replay_result replay(const std::string& trace, const std::string& work_dir) {
  test::child_process ctl{{VOXOSCTL_PATH, "replay", trace}, work_dir, work_dir + "/replay.err"};
  replay_result result;
  result.out = ctl.read_all();
  result.code = ctl.wait();
  return result;
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// A node configuration that records run traces into `<data dir>/traces`,
/// whose path goes to `trace_dir`.
std::function<void(node_config&)> tracing_into(std::string& trace_dir) {
  return [&trace_dir](node_config& cfg) {
    trace_dir = cfg.data_dir + "/traces";
    std::filesystem::create_directories(trace_dir);
    cfg.run.trace_dir = trace_dir;
  };
}

json forecast(const std::string& id, const std::string& date) {
  return {{"call_id", id},
          {"name", "get_forecast"},
          {"arguments", {{"location", {{"address", "Main St 1"}}}, {"date", date}}}};
}

} // namespace

TEST_CASE("a traced run replays identically, and a changed answer is reported") {
  std::string trace_dir;
  test::run_fixture f{tracing_into(trace_dir)};
  auto run_id = f.start_run();
  auto first = f.submit(
    run_id,
    json::array({forecast("a", "2026-12-03"),
                 forecast("b", "2026-12-04"),
                 {{"call_id", "c"}, {"name", "echo"}, {"arguments", {{"text", "hello"}}}}}));
  REQUIRE_MESSAGE(first.status == 200, first.raw);
  // Between the rounds: a response refused whole, and a turn reported.
  auto repeated = f.submit(run_id, json::array({{{"call_id", "x"}, {"name", "echo"}},
                                                {{"call_id", "x"}, {"name", "echo"}}}));
  CHECK(repeated.status == 409);
  auto turn = f.node->call("POST", "/v1/runs/" + run_id + "/turns", f.token,
                           json{{"user", "forecast?"}, {"assistant", "Mild, then rain."}}.dump());
  REQUIRE_MESSAGE(turn.status == 201, turn.raw);
  auto second = f.submit(
    run_id,
    json::array({forecast("d", "tomorrow"),
                 forecast("e", "2026-12-05"),
                 {{"call_id", "f"}, {"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}},
                 {{"call_id", "g"}, {"name", "record_note"}, {"arguments", {{"note", "n"}}}}}));
  REQUIRE_MESSAGE(second.status == 200, second.raw);
  CHECK(second.body["outputs"][0]["status"] == "invalid_arguments");
  CHECK(second.body["outputs"][1]["status"] == "skipped");
  CHECK(second.body["outputs"][2]["status"] == "denied");
  CHECK(second.body["outputs"][3]["status"] == "ok");
  REQUIRE(f.node->call("POST", "/v1/runs/" + run_id + "/finish", f.token).status == 200);

  auto path = trace_dir + "/" + run_id + ".jsonl";
  struct stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);

  auto same = replay(path, f.dir.str());
  CHECK_MESSAGE(same.code == 0, same.out);
  CHECK(same.out.find("round 1: 3 outputs identical") != std::string::npos);
  CHECK(same.out.find("round 2: 4 outputs identical") != std::string::npos);
  CHECK(same.out.find("after round 1: the response refused alike") != std::string::npos);
  CHECK(same.out.find("after round 1: the turn's place cards identical") != std::string::npos);

  // The trace with `recorded` changed to `changed`, replayed.
  auto replay_changed = [&](const std::string& recorded, const std::string& changed) {
    auto text = read_file(path);
    auto at = text.find(recorded);
    REQUIRE(at != std::string::npos);
    text.replace(at, recorded.size(), changed);
    auto changed_path = f.dir.str() + "/changed.jsonl";
    std::ofstream{changed_path} << text;
    return replay(changed_path, f.dir.str());
  };
  // A recorded answer that differs from what the run answered is reported.
  auto changed = replay_changed("Forecast for Main St 1 on 2026-12-04", "Forecast of Main St 1");
  CHECK(changed.code == 1);
  CHECK(changed.out.find("round 1: outputs differ") != std::string::npos);
  CHECK(changed.out.find("b: output differs") != std::string::npos);
  // So is a refusal that differs from the recorded one.
  auto refused = replay_changed("call ids must be unique", "call ids may repeat");
  CHECK(refused.code == 1);
  CHECK(refused.out.find("after round 1: the refusal differs") != std::string::npos);

  // Not a trace: refused, not replayed.
  auto junk_path = f.dir.str() + "/junk.jsonl";
  std::ofstream{junk_path} << "{\"type\":\"calls\"}\n";
  CHECK(replay(junk_path, f.dir.str()).code == 2);
}

TEST_CASE("a trace stops at run.trace_max_bytes with a truncated line, and replay refuses it") {
  std::string trace_dir;
  auto tracing = tracing_into(trace_dir);
  test::run_fixture f{[&](node_config& cfg) {
    tracing(cfg);
    cfg.run.trace_max_bytes = uint64_t{1} << 20;
  }};
  auto run_id = f.start_run();
  // Rounds of 50 KB arguments (each traced about four times: the calls, the
  // request, the answer, the output): past the trace's 1 MiB within a few
  // rounds, and every round still answered
  for (int round = 0; round < 8; ++round) {
    auto big =
      f.submit(run_id, json::array({{{"call_id", "b" + std::to_string(round)},
                                     {"name", "echo"},
                                     {"arguments", {{"text", std::string(50'000, 'x')}}}}}));
    REQUIRE_MESSAGE(big.status == 200, big.raw.substr(0, 200));
    CHECK(big.body["outputs"][0]["status"] == "ok");
  }

  auto path = trace_dir + "/" + run_id + ".jsonl";
  auto text = read_file(path);
  CHECK(text.size() <= (std::size_t{1} << 20));
  CHECK(text.size() > (std::size_t{1} << 19)); // (the rounds before the bound are there)
  auto last_line = text.substr(text.rfind('\n', text.size() - 2) + 1);
  CHECK(json::parse(last_line) == json{{"type", "truncated"}, {"max_bytes", 1 << 20}});
  auto replayed = replay(path, f.dir.str());
  CHECK(replayed.code == 2);
  CHECK((replayed.out + read_file(f.dir.str() + "/replay.err")).find("truncated")
        != std::string::npos);
}

TEST_CASE("a run cancelled while idle after a round of two waves replays without a cancel") {
  std::string trace_dir;
  test::run_fixture f{tracing_into(trace_dir)};
  auto run_id = f.start_run();
  json calls = json::array();
  for (int day = 1; day <= 9; ++day) // nine read-only calls: waves of eight and one
    calls.push_back(forecast("d" + std::to_string(day), "2026-12-0" + std::to_string(day)));
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  REQUIRE(f.node->call("DELETE", "/v1/runs/" + run_id, f.token).status == 200);

  auto path = trace_dir + "/" + run_id + ".jsonl";
  auto text = read_file(path);
  REQUIRE(text.rfind("{\"type\":\"cancel\"}") > text.rfind("\"type\":\"outputs\""));
  // The cancel came after the round's outputs: replaying it during the round
  // would cancel its second wave.
  auto same = replay(path, f.dir.str());
  CHECK_MESSAGE(same.code == 0, same.out);
  CHECK(same.out.find("round 1: 9 outputs identical") != std::string::npos);
}

TEST_CASE("a turn reported while a round executes replays without its cards compared") {
  std::string trace_dir;
  test::run_fixture f{tracing_into(trace_dir)};
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  test::http_reply answered;
  std::thread submitter{[&] {
    answered = f.submit(
      run_id, json::array({{{"call_id", "s"}, {"name", "sleep"}, {"arguments", {{"ms", 500}}}}}));
  }};
  REQUIRE(test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 1; }));
  auto turn = f.node->call("POST", "/v1/runs/" + run_id + "/turns", f.token,
                           json{{"user", "wait"}, {"assistant", "Still waiting."}}.dump());
  submitter.join();
  REQUIRE_MESSAGE(turn.status == 201, turn.raw);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  auto path = trace_dir + "/" + run_id + ".jsonl";
  CHECK(read_file(path).find("\"during_round\":true") != std::string::npos);
  auto same = replay(path, f.dir.str());
  CHECK_MESSAGE(same.code == 0, same.out);
  CHECK(same.out.find("after round 1: a turn reported during that round, not compared")
        != std::string::npos);
}

TEST_CASE("a trace over a Grounding Lite maps search holds none of its places, and replays") {
  std::string trace_dir;
  test::run_fixture f{test::maps_peer(tracing_into(trace_dir))};
  f.as_grounding_lite();
  auto run_id = f.start_run();
  f.search_places(run_id);
  auto turn = f.report_turn(run_id, "Two bakeries are open.");
  REQUIRE(turn.body["place_cards"].size() == 2);
  auto echoed = f.submit(
    run_id, json::array({{{"call_id", "e"}, {"name", "echo"}, {"arguments", {{"text", "hi"}}}}}));
  REQUIRE_MESSAGE(echoed.status == 200, echoed.raw);
  REQUIRE(f.node->call("POST", "/v1/runs/" + run_id + "/finish", f.token).status == 200);

  auto path = trace_dir + "/" + run_id + ".jsonl";
  auto text = read_file(path);
  REQUIRE(text.find("\"type\":\"outputs\"") != std::string::npos);
  for (const auto& content : test::peer_maps_content)
    CHECK_MESSAGE(text.find(content) == std::string::npos, "the trace holds " << content);
  // The answer and the output are there, redacted; the cards as their number.
  CHECK(text.find(std::string{redacted_text}) != std::string::npos);
  CHECK(text.find("\"redacted\":true") != std::string::npos);
  CHECK(text.find("\"cards_redacted\":2") != std::string::npos);
  CHECK(text.find("Two bakeries are open.") != std::string::npos);
  CHECK(text.find("bakery nearby") != std::string::npos); // (what the model wrote)

  auto same = replay(path, f.dir.str());
  CHECK_MESSAGE(same.code == 0, same.out);
  CHECK_MESSAGE(same.out.find("round 1: 1 outputs identical (1 Grounding Lite results redacted in "
                              "the trace, compared redacted)")
                  != std::string::npos,
                same.out);
  CHECK(same.out.find("after round 1: the turn's 2 place cards redacted in the trace, not compared")
        != std::string::npos);
  // (echo is a tool of the same server, whose every result is redacted)
  CHECK_MESSAGE(same.out.find("round 2: 1 outputs identical (1 Grounding Lite results redacted")
                  != std::string::npos,
                same.out);
}

TEST_CASE("the traces checked in under tests/data/traces replay identically") {
  test::temp_dir work;
  std::size_t replayed = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator{std::string{VOXOS_SOURCE_DIR} + "/tests/data/traces"}) {
    if (entry.path().extension() != ".jsonl")
      continue;
    auto result = replay(entry.path().string(), work.str());
    CHECK_MESSAGE(result.code == 0, entry.path().filename().string() << ":\n" << result.out);
    CHECK_MESSAGE(result.out.find(" proves: ") != std::string::npos,
                  entry.path().filename().string() << " says what it proves");
    ++replayed;
  }
  CHECK(replayed >= 3);
}
