// Runs executing tool calls over HTTP against a real SDK-built MCP peer that
// counts its own requests in flight: waves of eight read-only calls, calls
// that are not read-only one at a time, the failure rules, cancellation.
// Judged by the peer's counters, never by wall-clock time.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <httplib.h>

#include "support/run_fixture.hpp"
#include "support/stream_reader.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

json sleep_calls(int count, int ms, const std::string& prefix = "s") {
  json calls = json::array();
  for (int n = 0; n < count; ++n)
    calls.push_back(
      {{"call_id", prefix + std::to_string(n)}, {"name", "sleep"}, {"arguments", {{"ms", ms}}}});
  return calls;
}

/// Whether the run is gone (its calls answer 404) within 5 s.
bool run_ends(test::run_fixture& f, const std::string& run_id) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (f.submit(run_id, sleep_calls(1, 1)).status == 404)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

void check_in_order(const json& outputs, const json& calls, const std::string& status) {
  REQUIRE(outputs.size() == calls.size());
  for (std::size_t idx = 0; idx < calls.size(); ++idx) {
    CHECK(outputs[idx]["call_id"] == calls[idx]["call_id"]);
    CHECK_MESSAGE(outputs[idx]["status"] == status, outputs[idx].dump());
  }
}

} // namespace

TEST_CASE("eight read-only calls reach the peer together") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto calls = sleep_calls(8, 300);
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  check_in_order(answered.body["outputs"], calls, "ok");
  auto stats = test::peer_stats(f.peer->port());
  CHECK(stats["tools_call_received"] == 8);
  CHECK(stats["peak_in_flight"] == 8);
}

TEST_CASE("sixteen read-only calls reach the peer as two waves of eight") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto calls = sleep_calls(16, 200);
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  check_in_order(answered.body["outputs"], calls, "ok");
  auto stats = test::peer_stats(f.peer->port());
  CHECK(stats["tools_call_received"] == 16);
  CHECK(stats["peak_in_flight"] == 8);
  auto health = f.node->call("GET", "/v1/runs/" + run_id + "/health", f.token);
  REQUIRE(health.status == 200);
  CHECK(health.body["waves"] == 2);
  CHECK(health.body["peak_wave"] == 8);
}

TEST_CASE("calls that are not read-only reach the peer one at a time") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  json calls = json::array();
  for (int n = 0; n < 3; ++n)
    calls.push_back({{"call_id", "n" + std::to_string(n)},
                     {"name", "record_note"},
                     {"arguments", {{"note", "note " + std::to_string(n)}}}});
  // A read-only call between them waits for the note before it.
  calls.push_back({{"call_id", "e"}, {"name", "echo"}, {"arguments", {{"text", "after"}}}});
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  check_in_order(answered.body["outputs"], calls, "ok");
  auto stats = test::peer_stats(f.peer->port());
  CHECK(stats["tools_call_received"] == 4);
  CHECK(stats["peak_in_flight"] == 1);
  CHECK(stats["tools"]["record_note"]["peak_in_flight"] == 1);
}

TEST_CASE("a seven-day forecast is one wave, answered in date order") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  json calls = json::array();
  for (int day = 1; day <= 7; ++day)
    calls.push_back({{"call_id", "d" + std::to_string(day)},
                     {"name", "get_forecast"},
                     {"arguments",
                      {{"location", {{"address", "Karl-Marx-Allee 1, Berlin"}}},
                       {"date", "2026-12-0" + std::to_string(day)}}}});
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  const auto& outputs = answered.body["outputs"];
  check_in_order(outputs, calls, "ok");
  for (int day = 1; day <= 7; ++day)
    CHECK(outputs[day - 1]["output"]["content"][0]["text"].get<std::string>().find(
            "2026-12-0" + std::to_string(day))
          != std::string::npos);
  CHECK(f.node->call("GET", "/v1/runs/" + run_id + "/health", f.token).body["waves"] == 1);
}

TEST_CASE("invalid arguments are never sent and later calls to that tool are skipped") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  json calls = json::array(
    {{{"call_id", "bad"},
      {"name", "get_forecast"},
      {"arguments", {{"location", {{"address", "Secret Lane 7"}}}, {"date", "next tuesday"}}}},
     {{"call_id", "later"},
      {"name", "get_forecast"},
      {"arguments", {{"location", {{"address", "Main St"}}}, {"date", "2026-12-05"}}}},
     {{"call_id", "other"}, {"name", "echo"}, {"arguments", {{"text", "hello"}}}},
     {{"call_id", "nope"}, {"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}}});
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  const auto& outputs = answered.body["outputs"];
  REQUIRE(outputs.size() == 4);
  CHECK(outputs[0]["status"] == "invalid_arguments");
  CHECK(outputs[0]["output"]["problems"][0]["path"] == "/date");
  CHECK(outputs[0].dump().find("Secret Lane") == std::string::npos);
  CHECK(outputs[0].dump().find("next tuesday") == std::string::npos);
  CHECK(outputs[1]["status"] == "skipped");
  CHECK(outputs[2]["status"] == "ok");
  CHECK(outputs[3]["status"] == "denied"); // allowlisted but never granted
  // Only the valid, granted call reached the peer.
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 1);

  // Every decision is in the tenant's audit, at execution.
  auto audit = f.node->call("GET", "/v1/audit?limit=10", f.token);
  REQUIRE(audit.status == 200);
  int executed = 0;
  for (const auto& row : audit.body)
    if (row["phase"] == "execute" && row["run_id"] == run_id)
      ++executed;
  CHECK(executed == 4);

  // A round none of whose calls is sent is answered and audited all the same.
  json denied_only =
    json::array({{{"call_id", "again"}, {"name", "add"}, {"arguments", {{"a", 1}, {"b", 2}}}}});
  auto second = f.submit(run_id, denied_only);
  REQUIRE_MESSAGE(second.status == 200, second.raw);
  CHECK(second.body["outputs"][0]["status"] == "denied");
  audit = f.node->call("GET", "/v1/audit?limit=10", f.token);
  REQUIRE(audit.status == 200);
  executed = 0;
  for (const auto& row : audit.body)
    if (row["phase"] == "execute" && row["run_id"] == run_id)
      ++executed;
  CHECK(executed == 5);
}

TEST_CASE("a server's HTTP 422 is an argument rejection: the wave finishes, later waves and the "
          "exact request again are skipped") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto echo = [](const std::string& id, const std::string& text, bool reject) {
    json arguments{{"text", text}};
    if (reject)
      arguments["reject"] = "422"; // (the peer answers such a call HTTP 422)
    return json{{"call_id", id}, {"name", "echo"}, {"arguments", arguments}};
  };
  // Ten read-only calls: the first is refused by the server, the rest of its
  // wave of eight completes, the second wave of the tool is not sent.
  json calls = json::array({echo("c0", "first", true)});
  for (int idx = 1; idx < 10; ++idx)
    calls.push_back(echo("c" + std::to_string(idx), "t" + std::to_string(idx), false));
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  const auto& outputs = answered.body["outputs"];
  REQUIRE(outputs.size() == 10);
  CHECK(outputs[0]["status"] == "rejected");
  CHECK(outputs[0]["output"]["usable_result"] == false);
  for (int idx = 1; idx < 8; ++idx)
    CHECK(outputs[idx]["status"] == "ok");
  for (int idx : {8, 9}) {
    CHECK(outputs[idx]["status"] == "skipped");
    CHECK(outputs[idx]["output"]["message"].get<std::string>().find("rejected an earlier call")
          != std::string::npos);
  }
  auto stats = test::peer_stats(f.peer->port());
  CHECK(stats["tools_call_received"] == 8);
  CHECK(stats["http"]["rejected_422"] == 1);
  CHECK(stats["tools"]["echo"]["calls"] == 7); // (the rejected call reached no handler)

  // The exact rejected request, repeated in the next round, is not sent; a
  // changed one is.
  auto again =
    f.submit(run_id, json::array({echo("r0", "first", true), echo("r1", "next", false)}));
  REQUIRE_MESSAGE(again.status == 200, again.raw);
  CHECK(again.body["outputs"][0]["status"] == "skipped");
  CHECK(again.body["outputs"][1]["status"] == "ok");
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 9);
}

TEST_CASE("cancelling a run cancels every call in flight at the peer") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto calls = sleep_calls(8, 20'000);
  test::http_reply answered;
  std::thread submitter{[&] { answered = f.submit(run_id, calls); }};
  bool all_in_flight =
    test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 8; });
  auto cancelled = f.node->call("DELETE", "/v1/runs/" + run_id, f.token);
  submitter.join();
  REQUIRE(all_in_flight);
  REQUIRE_MESSAGE(cancelled.status == 200, cancelled.raw);
  CHECK(cancelled.body["cancelled_calls"] == 8);
  MESSAGE("cancel to last request closed: ", cancelled.body["cancel_to_closed_us"], " us");
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  check_in_order(answered.body["outputs"], calls, "cancelled");
  // The peer saw every call cancelled (notifications/cancelled) and holds none.
  CHECK(test::wait_for_stats(
    f.peer->port(), [](const json& s) { return s["cancelled"] == 8 && s["in_flight"] == 0; }));
  // The run is gone.
  CHECK(f.submit(run_id, sleep_calls(1, 1)).status == 404);
}

TEST_CASE("a host holding the activity stream that goes away has its run cancelled") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  CHECK(f.node->call("GET", "/v1/runs/" + run_id + "/events?hold=2", f.token).status == 400);
  std::atomic<bool> leave{false};
  test::stream_reader host{*f.node, f.token, "/v1/runs/" + run_id + "/events?hold=1",
                           [&](const std::string&) { return leave.load(); }};
  REQUIRE(host.status == 200);
  auto calls = sleep_calls(8, 20'000);
  test::http_reply answered;
  std::thread submitter{[&] { answered = f.submit(run_id, calls); }};
  REQUIRE(test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 8; }));
  // The host goes away at its next keepalive; nobody sends DELETE.
  leave = true;
  submitter.join();
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  check_in_order(answered.body["outputs"], calls, "cancelled");
  CHECK(test::wait_for_stats(
    f.peer->port(), [](const json& s) { return s["cancelled"] == 8 && s["in_flight"] == 0; }));
  // The run ends once its cancellation is recorded (no DELETE waits for it).
  CHECK(run_ends(f, run_id));
}

TEST_CASE("a listener that is not the host can go away without ending the run") {
  test::run_fixture f;
  auto run_id = f.start_run();
  {
    // Leaves at the round's first event; the writes that follow fail.
    test::stream_reader watcher{*f.node, f.token, "/v1/runs/" + run_id + "/events",
                                [](const std::string& events) {
                                  return events.find("event: activity") != std::string::npos;
                                }};
    REQUIRE(watcher.status == 200);
    auto first = f.submit(run_id, sleep_calls(2, 1));
    REQUIRE_MESSAGE(first.status == 200, first.raw);
    check_in_order(first.body["outputs"], sleep_calls(2, 1), "ok");
  }
  auto second = f.submit(run_id, sleep_calls(2, 1, "t"));
  REQUIRE_MESSAGE(second.status == 200, second.raw);
  check_in_order(second.body["outputs"], sleep_calls(2, 1, "t"), "ok");
}

TEST_CASE("malformed tool calls are refused whole and leave the run usable") {
  test::run_fixture f;
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto duplicate = f.submit(run_id, json::array({{{"call_id", "a"}, {"name", "echo"}},
                                                 {{"call_id", "a"}, {"name", "echo"}}}));
  CHECK(duplicate.status == 409);
  auto stray = f.submit(run_id, json::array({{{"call_id", "a"}, {"name", "echo"}, {"x", 1}}}));
  CHECK(stray.status == 400);
  auto not_object =
    f.submit(run_id, json::array({{{"call_id", "a"}, {"name", "echo"}, {"arguments", "text"}}}));
  CHECK(not_object.status == 400);
  auto too_many = f.submit(run_id, sleep_calls(129, 1));
  CHECK(too_many.status == 400);
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 0);
  auto fine = f.submit(
    run_id,
    json::array({{{"call_id", "a"}, {"name", "echo"}, {"arguments", {{"text", "still here"}}}}}));
  REQUIRE_MESSAGE(fine.status == 200, fine.raw);
  CHECK(fine.body["outputs"][0]["status"] == "ok");
}

TEST_CASE("a run of another tenant is not found") {
  test::run_fixture f;
  auto run_id = f.start_run();
  auto other = f.node->make_tenant("Other").second;
  auto foreign = f.node->call("POST", "/v1/runs/" + run_id + "/tool-calls", other,
                              json{{"calls", sleep_calls(1, 1)}}.dump());
  CHECK(foreign.status == 404);
  CHECK(f.node->call("DELETE", "/v1/runs/" + run_id, other).status == 404);
  // The owner's run is untouched.
  auto mine = f.submit(run_id, sleep_calls(1, 1));
  CHECK(mine.status == 200);
}

TEST_CASE("the activity stream shows each round's calls as they settle, without arguments") {
  test::run_fixture f;
  auto run_id = f.start_run();
  std::promise<void> listening;
  std::string events;
  int status = 0;
  std::thread reader{[&] {
    httplib::Client cli{"127.0.0.1", f.node->get().http_port()};
    cli.set_read_timeout(30);
    auto res =
      cli.Get(("/v1/runs/" + run_id + "/events").c_str(), {{"Authorization", "Bearer " + f.token}},
              [&](const httplib::Response& head) {
                status = head.status;
                listening.set_value();
                return true;
              },
              [&](const char* data, std::size_t len) {
                events.append(data, len);
                return true;
              });
    if (!res && status == 0)
      listening.set_value();
  }};
  listening.get_future().wait();
  REQUIRE(status == 200);
  auto answered = f.submit(
    run_id,
    json::array({{{"call_id", "a"}, {"name", "echo"}, {"arguments", {{"text", "secret-arg"}}}},
                 {{"call_id", "b"}, {"name", "record_note"}, {"arguments", {{"x", 1}}}}}));
  REQUIRE(answered.status == 200);
  // The turn's text goes to the chat; no Grounding Lite search, no place cards.
  auto turn = f.node->call("POST", "/v1/runs/" + run_id + "/turns", f.token,
                           json{{"user", "say hello"}, {"assistant", "hello"}}.dump());
  REQUIRE_MESSAGE(turn.status == 201, turn.raw);
  CHECK(turn.body["turn"] == 1);
  CHECK(turn.body["place_cards"] == json::array());
  REQUIRE(f.node->call("POST", "/v1/runs/" + run_id + "/finish", f.token).status == 200);
  reader.join();
  CHECK(events.find("event: activity\ndata: {\"calls\":[{\"call_id\":\"a\"") != std::string::npos);
  CHECK(events.find("\"event\":\"wave\"") != std::string::npos);
  CHECK(events.find("\"call_id\":\"a\",\"event\":\"call\"") != std::string::npos);
  CHECK(events.find("\"status\":\"invalid_arguments\"") != std::string::npos);
  CHECK(events.find("\"event\":\"answered\"") != std::string::npos);
  CHECK(events.find("event: end") != std::string::npos);
  CHECK(events.find("secret-arg") == std::string::npos);
  // Another tenant cannot listen.
  auto other = f.node->make_tenant("Other").second;
  CHECK(f.node->call("GET", "/v1/runs/" + run_id + "/events", other).status == 404);
}

TEST_CASE("a shared location reaches the instructions of an owner text run, never the tools") {
  test::run_fixture f;
  auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  json where{
    {"latitude", 52.520008}, {"longitude", 13.404954}, {"accuracy_m", 20}, {"captured_us", now_us}};
  auto start = [&](const std::string& chan, const json& location) {
    return f.node->call(
      "POST", "/v1/runs", f.token,
      json{{"agent_id", f.agent_id}, {"channel", chan}, {"location", location}}.dump());
  };
  auto text_run = start("owner_text_chat", where);
  REQUIRE_MESSAGE(text_run.status == 201, text_run.raw);
  CHECK(text_run.body["instructions"].get<std::string>().find("latitude 52.520008")
        != std::string::npos);
  CHECK(text_run.body["view"].dump().find("52.52") == std::string::npos);
  auto webhook_run = start("webhook", where);
  REQUIRE(webhook_run.status == 201);
  CHECK(webhook_run.body["instructions"] == "");
  auto bad = where;
  bad["latitude"] = 123.25;
  auto refused = start("owner_text_chat", bad);
  CHECK(refused.status == 400);
  CHECK(refused.raw.find("123.25") == std::string::npos);
}

TEST_CASE("a run whose decisions cannot be recorded ends, and nothing else is disturbed") {
  // Events of at most 16 KiB: the run starts (its snapshot fits), but the
  // audit of a round of 128 calls with long names does not.
  test::run_fixture f{[](node_config& cfg) { cfg.event_store.max_event_bytes = 16 * 1024; }};
  auto run_id = f.start_run();
  auto other_run = f.start_run();
  json calls = json::array();
  for (int n = 0; n < 128; ++n)
    calls.push_back({{"call_id", "c" + std::to_string(n)},
                     {"name", "no_such_tool_" + std::string(100, 'x') + std::to_string(n)}});
  auto answered = f.submit(run_id, calls);
  // The round may have answered before the store refused its audit; either
  // way the run ends, with a storage failure if it was still open.
  if (answered.status != 200)
    CHECK_MESSAGE(answered.status == 503, answered.raw);
  CHECK(run_ends(f, run_id));
  // The tenant's other run, and new runs, go on.
  auto fine = f.submit(other_run, sleep_calls(2, 1));
  REQUIRE_MESSAGE(fine.status == 200, fine.raw);
  check_in_order(fine.body["outputs"], sleep_calls(2, 1), "ok");
  auto fresh = f.start_run();
  CHECK(f.submit(fresh, sleep_calls(1, 1)).status == 200);
}
