// What a run does while the store has not acknowledged one of its records.
// The order of events is forced, not hoped for: the run is spawned here with
// a store that holds one record's answer until the test releases it.
//
//  - A run whose activity record the store refuses after its next round has
//    opened: that round fails with storage_failure at once, rather than
//    being left unanswered (in CAF 0.17 a dropped promise answers nothing,
//    so the host would wait out its own timeout).
//  - Write-ahead: a call that may change something leaves only once its
//    round's decisions are acknowledged, and never when they are refused; a
//    read-only call leaves at once, but its output waits for them.
//
// The store is a stand-in by necessity: no real store can be told to answer
// one record only when a test says so. It accepts every other record. The
// MCP side is real: a connection to the SDK-built peer.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/mcp/mcp_connection.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/run/run.hpp"
#include "actors/run/tool_fixtures.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/node_peer.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct gated_store_state {
  std::optional<caf::typed_response_promise<append_result>> held;
  bool released = false;
};

/// Accepts every append but the first of type `held_type`, whose answer
/// waits: a health request releases it as a refusal, a verify request as
/// accepted.
event_store_actor::behavior_type
gated_store(event_store_actor::stateful_pointer<gated_store_state> self, std::string held_type) {
  return {
    [self, held_type](append_atom, append_request& req) -> caf::result<append_result> {
      auto& st = self->state;
      if (!st.held && !st.released && req.events.size() == 1 && req.events[0].type == held_type) {
        st.held = self->make_response_promise<append_result>();
        return *st.held;
      }
      return append_result{1, req.events.size()};
    },
    [](read_atom, stream_query&) -> caf::result<std::vector<event_record>> {
      return make_error(errc::unavailable, "not read in this test");
    },
    [](scan_atom, std::string&, uint32_t) -> caf::result<std::vector<event_record>> {
      return make_error(errc::unavailable, "not read in this test");
    },
    [](scan_atom, std::string&, std::string&, std::string&, uint64_t,
       uint32_t) -> caf::result<std::vector<event_record>> {
      return make_error(errc::unavailable, "not read in this test");
    },
    [](scan_atom, state_atom, std::string&, uint32_t) -> caf::result<std::vector<state_entry>> {
      return make_error(errc::unavailable, "not read in this test");
    },
    [self](verify_atom) -> caf::result<store_report> {
      auto& st = self->state;
      if (st.held) {
        st.held->deliver(append_result{1, 1});
        st.held.reset();
        st.released = true;
      }
      return store_report{};
    },
    [self](health_atom) {
      auto& st = self->state;
      if (st.held) {
        st.held->deliver(make_error(errc::storage_failure, "refused by the test"));
        st.held.reset();
        st.released = true;
      }
      return true;
    },
  };
}

/// The run's phase, from its health.
std::string phase_of(caf::scoped_actor& self, const run_actor& run) {
  std::string phase;
  self->request(run, std::chrono::seconds{10}, health_atom::value)
    .receive([&](const std::string& text) { phase = json::parse(text).value("phase", ""); },
             [&](caf::error& err) { FAIL("health failed: " << to_string(err)); });
  return phase;
}

/// Polls the run's health until its phase is `phase` (at most 10 s).
void wait_for_phase(caf::scoped_actor& self, const run_actor& run, const std::string& phase) {
  for (int polls = 0; phase_of(self, run) != phase; ++polls) {
    REQUIRE(polls < 10'000);
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

/// The outputs of a round asked with `self->request`, or a failed check.
template <class Handle>
std::vector<tool_output> outputs_of(Handle& round) {
  std::vector<tool_output> outputs;
  round.receive([&](std::vector<tool_output>& out) { outputs = std::move(out); },
                [&](caf::error& err) { FAIL("the round failed: " << to_string(err)); });
  return outputs;
}

/// A run over the SDK-built peer's `echo` (read-only) and `record_note`
/// (not read-only), with a store that holds the first `held_type` record.
struct gated_run {
  node_metrics metrics; // outlives the actor system, whose actors count in it
  std::unique_ptr<test::node_peer> peer;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  mcp_connection_actor conn;
  event_store_actor store;
  run_actor run;
  /// Each tool's model-facing name.
  std::map<std::string, std::string, std::less<>> names;

  explicit gated_run(const std::string& held_type) {
    peer = test::start_sdk_peer({"--json"});
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    auto policy = std::make_shared<const url_policy>(
      std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
    conn = spawn_mcp_connection(
      *sys, mcp_endpoint{"s_peer", transport_kind::streamable_http, peer->url(), {}}, policy, {});
    store = sys->spawn(gated_store, held_type);
    test::tool_world world;
    world.server("s_peer", "Peer");
    auto schema = [](const char* property, const char* type) {
      return std::string{R"({"type":"object","properties":{")"} + property + R"(":{"type":")" + type
             + R"("}},"required":[")" + property + R"("]})";
    };
    world.allow_mcp(
      "s_peer", test::definition("echo", "Returns the text.", schema("text", "string")), {}, true);
    world.allow_mcp("s_peer", test::definition("sleep", "Waits.", schema("ms", "integer")), {},
                    true);
    world.allow_mcp("s_peer",
                    test::definition("record_note", "Stores a note.", schema("note", "string")));
    run_setup setup;
    setup.tenant_id = "t_a";
    setup.run_id = "r_1";
    setup.snapshot = world.snapshot;
    setup.view = world.view();
    REQUIRE(setup.view.direct.size() == 3);
    for (const auto& e : setup.view.direct)
      names.emplace(e.tool(), e.model_name());
    setup.connections.emplace("s_peer", conn);
    setup.store = store;
    run = spawn_run(*sys, std::move(setup), metrics);
  }

  ~gated_run() {
    caf::anon_send_exit(run, caf::exit_reason::kill);
    caf::anon_send_exit(conn, caf::exit_reason::kill);
  }

  int calls_received() const {
    return test::peer_stats(peer->port())["tools_call_received"].get<int>();
  }

  /// Asks the run for a round of one call of `tool` (a tool outside the
  /// view keeps its name).
  auto call(caf::scoped_actor& self, const std::string& tool, std::string arguments) {
    auto name = names.count(tool) != 0 ? names.at(tool) : tool;
    return self->request(run, std::chrono::seconds{40}, tool_atom::value,
                         std::vector<tool_call>{{"c1", name, std::move(arguments)}});
  }

  /// Releases the held record: accepted, or refused.
  void release(caf::scoped_actor& self, bool accepted) {
    if (accepted)
      self->request(store, std::chrono::seconds{10}, verify_atom::value)
        .receive([](const store_report&) {}, [](caf::error&) {});
    else
      self->request(store, std::chrono::seconds{10}, health_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
  }
};

} // namespace

TEST_CASE("a round open when the store refuses the previous round's activity fails at once") {
  gated_run f{"tools.round"};
  caf::scoped_actor self{*f.sys};
  // Round 1: a tool outside the view, answered without a wave; its
  // activity record is held by the store.
  auto first = f.call(self, "no_such_tool", "{}");
  CHECK(outputs_of(first).size() == 1);

  // Round 2: a call the peer holds for 50 s, in flight when the refusal
  // comes.
  auto second = f.call(self, "sleep", R"({"ms":50000})");
  wait_for_phase(self, f.run, "executing");
  f.release(self, false);

  // The open round fails at once with storage_failure (well before the
  // peer's 50 s or the 40 s request timeout).
  std::optional<caf::error> failure;
  second.receive([&](const std::vector<tool_output>&) {}, [&](caf::error& err) { failure = err; });
  REQUIRE(failure.has_value());
  CHECK(code_of(*failure) == errc::storage_failure);
  CHECK(message_of(*failure) == "the run could not record its tool round");
}

TEST_CASE("a call that may change something leaves only once its round's decisions are recorded") {
  gated_run f{"calls.decided"};
  caf::scoped_actor self{*f.sys};
  auto round = f.call(self, "record_note", R"({"note":"n"})");
  wait_for_phase(self, f.run, "executing");
  // The decisions are held: nothing has gone to the server. (Absence can only
  // be shown by waiting; a call that left would arrive in a few ms.)
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  CHECK(f.calls_received() == 0);
  f.release(self, true);
  auto outputs = outputs_of(round);
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].status == "ok");
  CHECK(outputs[0].output.find("noted #1") != std::string::npos);
  CHECK(f.calls_received() == 1);
}

TEST_CASE("a call that may change something is never sent when its decisions are refused") {
  gated_run f{"calls.decided"};
  caf::scoped_actor self{*f.sys};
  auto round = f.call(self, "record_note", R"({"note":"n"})");
  wait_for_phase(self, f.run, "executing");
  f.release(self, false);
  std::optional<caf::error> failure;
  round.receive([&](const std::vector<tool_output>&) {}, [&](caf::error& err) { failure = err; });
  REQUIRE(failure.has_value());
  CHECK(code_of(*failure) == errc::storage_failure);
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  CHECK(f.calls_received() == 0);
}

TEST_CASE("a read-only call leaves beside its decisions, and its output waits for them") {
  gated_run f{"calls.decided"};
  caf::scoped_actor self{*f.sys};
  auto round = f.call(self, "echo", R"({"text":"hi"})");
  // The call reaches the server while the decisions are held...
  REQUIRE(test::wait_for_stats(
    f.peer->port(), [](const json& stats) { return stats["tools_call_received"] == 1; }));
  // ...and the answer it gave (at once) is not released: the round is still
  // open (its output would have come back within a few ms).
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  CHECK(phase_of(self, f.run) == "executing");
  f.release(self, true);
  auto outputs = outputs_of(round);
  REQUIRE(outputs.size() == 1);
  CHECK(outputs[0].output.find("hi") != std::string::npos);
}
