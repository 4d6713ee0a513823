// The wave actor against a real SDK-built peer, on its own: a connection
// that ends while it holds the wave's call, and a run killed while its wave
// holds calls. (The wave sets no timer of its own; it watches its
// connections instead.) Waves inside runs are tested in run_waves_test.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "actors/run/wave.hpp"
#include "messages/errc.hpp"
#include "messages/register.hpp"
#include "support/node_peer.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// An SDK-built peer and an actor system whose connections may reach it.
struct peer_world {
  std::unique_ptr<test::node_peer> peer = test::start_sdk_peer({"--json"});
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::shared_ptr<const url_policy> policy;

  peer_world() {
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    policy = std::make_shared<const url_policy>(
      std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
  }

  mcp_connection_actor connect(const std::string& server_id) {
    return spawn_mcp_connection(
      *sys, mcp_endpoint{server_id, transport_kind::streamable_http, peer->url(), {}, {}}, policy,
      mcp_config{});
  }
};

} // namespace

TEST_CASE("a wave whose connection ends while it holds a call answers it unavailable") {
  peer_world world;
  auto& peer = world.peer;
  auto& sys = *world.sys;
  auto doomed = world.connect("doomed");
  auto lasting = world.connect("lasting");
  REQUIRE(test::reset_peer_stats(peer->port()));
  caf::scoped_actor self{sys};
  std::vector<wave_call> calls{
    {doomed, json{{"name", "sleep"}, {"arguments", {{"ms", 20'000}}}}.dump()},
    {lasting, json{{"name", "echo"}, {"arguments", {{"text", "still here"}}}}.dump()},
  };
  auto wave = spawn_wave(self.ptr(), std::move(calls), 60'000);
  // Once the peer holds the sleeping call, its connection is killed.
  std::thread killer{[&] {
    if (test::wait_for_stats(peer->port(), [](const json& s) { return s["in_flight"] == 1; }))
      caf::anon_send_exit(doomed, caf::exit_reason::kill);
  }};
  std::vector<wave_answer> answers;
  auto started = std::chrono::steady_clock::now();
  self->request(wave, std::chrono::seconds{15}, request_atom::value)
    .receive([&](std::vector<wave_answer>& got) { answers = std::move(got); },
             [&](caf::error& err) { FAIL("the wave did not answer: ", sys.render(err)); });
  killer.join();
  REQUIRE(answers.size() == 2);
  CHECK(answers[0].code == static_cast<uint8_t>(errc::unavailable));
  CHECK(answers[0].text == "the server's connection closed");
  CHECK(answers[1].code == 0);
  CHECK(answers[1].text.find("still here") != std::string::npos);
  // Answered when the connection ended, not at the call's deadline.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{10});
  caf::anon_send_exit(lasting, caf::exit_reason::kill);
}

TEST_CASE("a wave whose run ends, even killed, cancels its calls in flight at the peer") {
  peer_world world;
  auto& peer = world.peer;
  auto& sys = *world.sys;
  auto conn = world.connect("peer");
  // (a kill is never trapped: the wave's exit handler does not see it)
  for (auto reason : {caf::exit_reason::kill, caf::exit_reason::user_shutdown}) {
    CAPTURE(caf::to_string(reason));
    REQUIRE(test::reset_peer_stats(peer->port()));
    // A stand-in for the run: it spawns the wave (linked to it, as runs do)
    // and asks for its answers, which never come.
    auto run = sys.spawn([conn](caf::event_based_actor* self) {
      std::vector<wave_call> calls;
      for (int call_idx = 0; call_idx < 4; ++call_idx)
        calls.push_back({conn, json{{"name", "sleep"}, {"arguments", {{"ms", 20'000}}}}.dump()});
      auto wave = spawn_wave(self, std::move(calls), 60'000);
      self->request(wave, caf::infinite, request_atom::value)
        .then([](const std::vector<wave_answer>&) {}, [](caf::error&) {});
    });
    REQUIRE(test::wait_for_stats(peer->port(), [](const json& s) { return s["in_flight"] == 4; }));
    caf::anon_send_exit(run, reason);
    // The wave ends with its run and cancels each request as it goes: the
    // peer sees four cancellations, and nothing stays in flight.
    CHECK(test::wait_for_stats(
      peer->port(), [](const json& s) { return s["cancelled"] == 4 && s["in_flight"] == 0; }));
  }
  caf::anon_send_exit(conn, caf::exit_reason::kill);
}
