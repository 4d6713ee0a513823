// A run whose activity record the store refuses after its next round has
// opened: that round fails with storage_failure at once, rather than being
// left unanswered (in CAF 0.17 a dropped promise answers nothing, so the
// host would wait out its own timeout). The order of events is forced, not
// hoped for: the run is spawned here with a store that holds the record's
// answer until the test releases it.
//
// The store is a stand-in by necessity: no real store can be told to answer
// one record only after a later round has started. It accepts every other
// record. The MCP side is real: a connection to the SDK-built peer.
#include <doctest/doctest.h>

#include <chrono>
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
};

/// Accepts every append but the first "tools.round", whose answer waits;
/// a health request releases it as a refusal.
event_store_actor::behavior_type
gated_store(event_store_actor::stateful_pointer<gated_store_state> self) {
  return {
    [self](append_atom, append_request& req) -> caf::result<append_result> {
      if (!self->state.held && req.events.size() == 1 && req.events[0].type == "tools.round") {
        self->state.held = self->make_response_promise<append_result>();
        return *self->state.held;
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
    [](verify_atom) -> caf::result<store_report> {
      return make_error(errc::unavailable, "not verified in this test");
    },
    [self](health_atom) {
      if (self->state.held)
        self->state.held->deliver(make_error(errc::storage_failure, "refused by the test"));
      return true;
    },
  };
}

} // namespace

TEST_CASE("a round open when the store refuses the previous round's activity fails at once") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  node_metrics metrics; // outlives the actor system, whose actors count in it
  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};

  auto policy = std::make_shared<const url_policy>(
    std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
  auto conn = spawn_mcp_connection(
    sys, mcp_endpoint{"s_peer", transport_kind::streamable_http, peer->url(), {}}, policy, {});
  auto store = sys.spawn(gated_store);

  test::tool_world world;
  world.server("s_peer", "Peer");
  world.allow_mcp("s_peer",
                  test::definition("sleep", "Waits.",
                                   R"({"type":"object","properties":{"ms":{"type":"integer"}},)"
                                   R"("required":["ms"]})"),
                  {}, true);
  run_setup setup;
  setup.tenant_id = "t_a";
  setup.run_id = "r_1";
  setup.snapshot = world.snapshot;
  setup.view = world.view();
  REQUIRE(setup.view.direct.size() == 1);
  const std::string sleep_name{setup.view.direct[0].model_name()};
  setup.connections.emplace("s_peer", conn);
  setup.store = store;
  auto run = spawn_run(sys, std::move(setup), metrics);

  caf::scoped_actor self{sys};
  // Round 1: a tool outside the view, answered without a wave; its
  // activity record is held by the store.
  bool first_answered = false;
  self
    ->request(run, std::chrono::seconds{30}, tool_atom::value,
              std::vector<tool_call>{{"c1", "no_such_tool", "{}"}})
    .receive([&](const std::vector<tool_output>& outputs) { first_answered = outputs.size() == 1; },
             [&](caf::error& err) { FAIL("round 1 failed: " << to_string(err)); });
  REQUIRE(first_answered);

  // Round 2: a call the peer holds for 50 s, in flight when the refusal
  // comes.
  auto second = self->request(run, std::chrono::seconds{40}, tool_atom::value,
                              std::vector<tool_call>{{"c2", sleep_name, R"({"ms":50000})"}});
  for (int polls = 0;; ++polls) {
    REQUIRE(polls < 10'000);
    std::string phase;
    self->request(run, std::chrono::seconds{10}, health_atom::value)
      .receive([&](const std::string& text) { phase = json::parse(text).value("phase", ""); },
               [&](caf::error& err) { FAIL("health failed: " << to_string(err)); });
    if (phase == "executing")
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  self->request(store, std::chrono::seconds{10}, health_atom::value)
    .receive([](bool) {}, [](caf::error&) {});

  // The open round fails at once with storage_failure (well before the
  // peer's 50 s or the 40 s request timeout).
  std::optional<caf::error> failure;
  second.receive([&](const std::vector<tool_output>&) {}, [&](caf::error& err) { failure = err; });
  REQUIRE(failure.has_value());
  CHECK(code_of(*failure) == errc::storage_failure);
  CHECK(message_of(*failure) == "the run could not record its tool round");

  caf::anon_send_exit(conn, caf::exit_reason::kill);
}
