// Runs calling an SDK-built peer whose connection or session fails under a
// call: a mutating call is never sent twice once the server may have
// received it, and its output says the change may or may not have happened;
// read-only and idempotent calls are still sent again on a fresh
// connection; a server that lost its session (HTTP 400, as the SDK's
// examples and server-everything answer after a restart) gets a new session
// and the call, which it never ran, again; a server's JSON-RPC error reaches
// the model as that error. Judged by the peer's own counters.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include <httplib.h>

#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

json call(const std::string& id, const std::string& name, json arguments) {
  return {{"call_id", id}, {"name", name}, {"arguments", std::move(arguments)}};
}

/// One round of `calls`; its outputs, in call order.
json round_outputs(test::run_fixture& f, const std::string& run_id, const json& calls) {
  auto answered = f.submit(run_id, calls);
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  REQUIRE(answered.body["outputs"].size() == calls.size());
  return answered.body["outputs"];
}

/// A run of the tenant, whose agent may also call `tools` of the peer, the
/// peer's counters zeroed after it started. (Few: from ten external tools,
/// with the tenant's two default ones, a run's view puts them behind its
/// catalog tools.)
struct safety_run {
  test::run_fixture f;
  std::string run_id;

  explicit safety_run(const std::vector<std::string>& tools,
                      std::vector<std::string> peer_args = {"--json"},
                      std::function<void(node_config&)> tweak = {})
      : f{options(tools, std::move(peer_args), std::move(tweak))} {
    run_id = f.start_run();
    REQUIRE(test::reset_peer_stats(f.peer->port()));
  }

  static test::run_fixture_options options(const std::vector<std::string>& tools,
                                           std::vector<std::string> peer_args,
                                           std::function<void(node_config&)> tweak) {
    test::run_fixture_options opts;
    opts.tweak = std::move(tweak);
    opts.peer_args = std::move(peer_args);
    opts.tools.insert(opts.tools.end(), tools.begin(), tools.end());
    return opts;
  }

  /// A round of one call; its output.
  json one(const json& the_call) { return round_outputs(f, run_id, json::array({the_call}))[0]; }

  /// A round of one call after a read-only call completed: the connection's
  /// request worker then holds a kept-alive connection, which the call
  /// reuses (the client's stale-connection case when the server closes it).
  json one_kept_alive(const json& the_call) {
    auto warm = one(call("w", "echo", {{"text", "warm"}}));
    REQUIRE_MESSAGE(warm["status"] == "ok", warm.dump());
    return one(the_call);
  }

  json stats() const { return test::peer_stats(f.peer->port()); }
};

int tool_calls(const json& stats, const std::string& tool) {
  return stats["tools"].contains(tool) ? stats["tools"][tool]["calls"].get<int>() : 0;
}

std::string message_in(const json& output) {
  return output["output"]["message"].get<std::string>();
}

void check_outcome_unknown(const json& output) {
  CHECK_MESSAGE(output["status"] == "failed", output.dump());
  CHECK(output["output"]["usable_result"] == false);
  CHECK(output["output"]["outcome"] == "unknown");
  auto said = message_in(output);
  CHECK(said.find("may or may not have happened") != std::string::npos);
  CHECK(said.find("It was not sent again.") != std::string::npos);
  CHECK(said.find("Check whether the change happened") != std::string::npos);
}

} // namespace

TEST_CASE("a mutating call whose server resets the connection while handling it is received once "
          "and its output says the change may or may not have happened") {
  safety_run r{{"place_order", "lookup_order"}};
  // On a kept-alive connection: no byte came back on a reused connection.
  check_outcome_unknown(
    r.one_kept_alive(call("o1", "place_order", {{"item", "desk"}, {"outcome", "reset"}})));
  auto stats = r.stats();
  CHECK(tool_calls(stats, "place_order") == 1);
  CHECK(stats["methods"]["tools/call"] == 2); // the warm-up and the order, once

  // On the fresh connection the reset left behind.
  check_outcome_unknown(r.one(call("o2", "place_order", {{"item", "lamp"}, {"outcome", "reset"}})));
  stats = r.stats();
  CHECK(tool_calls(stats, "place_order") == 2);
  CHECK(stats["methods"]["tools/call"] == 3);

  // The run goes on: the model can check, and order again.
  auto outputs = round_outputs(r.f, r.run_id,
                               json::array({call("l", "lookup_order", {{"item", "desk"}}),
                                            call("o3", "place_order", {{"item", "chair"}})}));
  CHECK(outputs[0]["status"] == "ok");
  CHECK(outputs[0]["output"]["content"][0]["text"] == "desk: 1 ordered");
  CHECK(outputs[1]["status"] == "ok");
}

TEST_CASE("read-only and idempotent calls whose connection is reset are sent again, fresh, and "
          "complete") {
  safety_run r{{"lookup_order", "set_status"}};
  auto looked_up =
    r.one_kept_alive(call("l", "lookup_order", {{"item", "desk"}, {"reset_once", true}}));
  CHECK_MESSAGE(looked_up["status"] == "ok", looked_up.dump());
  CHECK(tool_calls(r.stats(), "lookup_order") == 2);

  auto set = r.one_kept_alive(call("s", "set_status", {{"status", "open"}, {"reset_once", true}}));
  CHECK_MESSAGE(set["status"] == "ok", set.dump());
  CHECK(set["output"]["content"][0]["text"] == "status open");
  CHECK(tool_calls(r.stats(), "set_status") == 2);
}

TEST_CASE("a mutating call past its deadline is received once and its output says the change may "
          "still happen") {
  safety_run r{
    {"place_order"}, {"--json"}, [](node_config& cfg) { cfg.run.call_timeout_ms = 500; }};
  auto output = r.one(call("o", "place_order", {{"item", "desk"}, {"outcome", "stall"}}));
  check_outcome_unknown(output);
  CHECK(message_in(output).find("Its deadline passed while the server may still have been "
                                "running it")
        != std::string::npos);
  CHECK(message_in(output).find("or may still happen") != std::string::npos);
  // The server heard it once, and its cancellation.
  CHECK(test::wait_for_stats(r.f.peer->port(), [](const json& s) {
    return s["tools"]["place_order"]["cancelled"] == 1 && s["in_flight"] == 0;
  }));
  CHECK(tool_calls(r.stats(), "place_order") == 1);
}

TEST_CASE("a server that lost the session answers HTTP 400 and gets a new one: the call goes again "
          "and completes, in this run and the next, and spends no correction") {
  safety_run r{{}, {"--json", "--unknown-session-400"}};
  REQUIRE(r.one(call("e", "echo", {{"text", "in the first session"}}))["status"] == "ok");
  REQUIRE(test::reset_peer_stats(r.f.peer->port()));
  httplib::Client peer{"127.0.0.1", r.f.peer->port()};
  // More losses than the tool's corrections (max_corrections, 3): none is
  // a rejection, so none is spent and every call is sent.
  for (int loss = 1; loss <= 4; ++loss) {
    CAPTURE(loss);
    auto forgotten = peer.Post("/sessions/forget");
    REQUIRE(forgotten);
    REQUIRE(json::parse(forgotten->body)["forgotten"].get<int>() >= 1);
    // A mutating call, which the server did not run: sent again all the same.
    auto output =
      r.one(call("n" + std::to_string(loss), "record_note", {{"note", "after a loss"}}));
    CHECK_MESSAGE(output["status"] == "ok", output.dump());
    auto stats = r.stats();
    CHECK(stats["sessions"]["unknown"].get<int>() >= loss);
    CHECK(stats["sessions"]["opened"] == loss);
    CHECK(tool_calls(stats, "record_note") == loss); // the refused request reached no handler
  }
  // A new run of the tenant goes on in the new session.
  auto next_run = r.f.start_run();
  auto outputs = round_outputs(r.f, next_run, json::array({call("e", "echo", {{"text", "next"}})}));
  CHECK(outputs[0]["status"] == "ok");
  CHECK(r.stats()["sessions"]["opened"] == 4);
}

TEST_CASE("a server's JSON-RPC internal error reaches the model as the server's error, not as a "
          "rejection") {
  safety_run r{{"fail_internal"}};
  // More rounds than the tool's corrections: an internal error spends none.
  for (int round = 1; round <= 4; ++round) {
    CAPTURE(round);
    auto output = r.one(call("f" + std::to_string(round), "fail_internal", json::object()));
    CHECK(output["status"] == "failed");
    CHECK(output["output"]["error"] == "failed");
    auto said = message_in(output);
    CHECK(said.find("the server answered with an error: server error -32603 (internal error)")
          != std::string::npos);
    CHECK(said.find("reject") == std::string::npos);
    CHECK(output.dump().find("the tool's backend failed") == std::string::npos);
    CHECK(tool_calls(r.stats(), "fail_internal") == round);
  }
}

TEST_CASE("a server's plain HTTP 400 in a session goes once more in a new session, then reads as "
          "an argument rejection") {
  safety_run r{{}};
  REQUIRE(r.one(call("e", "echo", {{"text", "in the first session"}}))["status"] == "ok");
  REQUIRE(test::reset_peer_stats(r.f.peer->port()));
  // The peer answers this call a bare HTTP 400 (no JSON-RPC body): in a
  // session, the answer a lost session gets too. Once a session begun for
  // it refuses it again, it is the server refusing the arguments.
  auto output = r.one(call("r", "echo", {{"text", "x"}, {"reject", "400"}}));
  CHECK_MESSAGE(output["status"] == "rejected", output.dump());
  CHECK(output["output"]["usable_result"] == false);
  auto stats = r.stats();
  CHECK(stats["http"]["rejected_400"] == 2);
  CHECK(stats["sessions"]["opened"] == 1);
  CHECK(tool_calls(stats, "echo") == 0);
  // The tenant's calls go on in the new session.
  CHECK(r.one(call("n", "echo", {{"text", "next"}}))["status"] == "ok");
}
