// A run's wave against a real SDK-built peer: a connection that ends while
// it holds one of the wave's calls, and a run that ends (killed, or shut
// down) while its wave holds calls. (The run sets no timer for its calls; it
// watches the connections of the wave in flight instead.) Waves of whole
// rounds are tested in run_waves_test.cpp.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/run/run.hpp"
#include "actors/run/tool_fixtures.hpp"
#include "messages/register.hpp"
#include "support/actor_store.hpp"
#include "support/node_peer.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

constexpr const char* sleep_schema =
  R"({"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]})";
constexpr const char* echo_schema =
  R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})";

/// An SDK-built peer, a store, and runs over connections to the peer, one
/// per server id ("doomed", "lasting"), each offering `sleep` and `echo`
/// (read-only: one wave takes several).
struct peer_world : test::actor_store {
  std::unique_ptr<test::node_peer> peer = test::start_sdk_peer({"--json"});
  std::shared_ptr<const url_policy> policy;
  std::map<std::string, mcp_connection_actor> connections;
  test::tool_world world;

  peer_world() {
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    policy = std::make_shared<const url_policy>(
      std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
    for (const char* server_id : {"doomed", "lasting"}) {
      connections[server_id] = spawn_mcp_connection(
        *sys, mcp_endpoint{server_id, transport_kind::streamable_http, peer->url(), {}, {}}, policy,
        mcp_config{});
      world.server(server_id, server_id);
      world.allow_mcp(server_id, test::definition("sleep", "Waits.", sleep_schema), {}, true);
      world.allow_mcp(server_id, test::definition("echo", "Returns the text.", echo_schema), {},
                      true);
    }
  }

  ~peer_world() {
    for (auto& [server_id, conn] : connections)
      caf::anon_send_exit(conn, caf::exit_reason::kill);
  }

  run_actor start_run(const std::string& run_id) {
    run_setup setup;
    setup.tenant_id = "t_a";
    setup.run_id = run_id;
    setup.snapshot = world.snapshot;
    setup.view = world.view();
    setup.connections.insert(connections.begin(), connections.end());
    setup.store = store;
    return spawn_run(*sys, std::move(setup), metrics);
  }

  /// The model-facing name of `tool` on `server_id`.
  std::string name_of(const std::string& server_id, const std::string& tool) {
    for (const auto& e : world.view().direct)
      if (e.server_id() == server_id && e.tool() == tool)
        return std::string{e.model_name()};
    FAIL("no such tool in the view: " << server_id << "/" << tool);
    return {};
  }
};

} // namespace

TEST_CASE("a wave whose connection ends while it holds a call answers it unavailable") {
  peer_world f;
  auto run = f.start_run("r_down");
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  caf::scoped_actor self{*f.sys};
  std::vector<tool_call> calls{
    {"c1", f.name_of("doomed", "sleep"), R"({"ms":20000})"},
    {"c2", f.name_of("lasting", "echo"), R"({"text":"still here"})"},
  };
  // Once the peer holds the sleeping call, its connection is killed.
  std::thread killer{[&] {
    if (test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 1; }))
      caf::anon_send_exit(f.connections.at("doomed"), caf::exit_reason::kill);
  }};
  std::vector<tool_output> outputs;
  auto started = std::chrono::steady_clock::now();
  self->request(run, std::chrono::seconds{15}, tool_atom::value, std::move(calls))
    .receive([&](std::vector<tool_output>& got) { outputs = std::move(got); },
             [&](caf::error& err) { FAIL("the round did not answer: " << f.sys->render(err)); });
  killer.join();
  REQUIRE(outputs.size() == 2);
  CHECK(outputs[0].status == "failed");
  CHECK(outputs[0].output.find("unavailable") != std::string::npos);
  CHECK(outputs[1].status == "ok");
  CHECK(outputs[1].output.find("still here") != std::string::npos);
  // Answered when the connection ended, not at the call's deadline.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds{10});
  caf::anon_send_exit(run, caf::exit_reason::kill);
}

TEST_CASE("a wave whose run ends, even killed, cancels its calls in flight at the peer") {
  peer_world f;
  // (a kill is never trapped: no exit handler sees it)
  int runs = 0;
  for (auto reason : {caf::exit_reason::kill, caf::exit_reason::user_shutdown}) {
    CAPTURE(caf::to_string(reason));
    REQUIRE(test::reset_peer_stats(f.peer->port()));
    auto run = f.start_run("r_end_" + std::to_string(++runs));
    std::vector<tool_call> calls;
    for (int call_idx = 0; call_idx < 4; ++call_idx)
      calls.push_back(
        {"c" + std::to_string(call_idx), f.name_of("lasting", "sleep"), R"({"ms":20000})"});
    caf::scoped_actor self{*f.sys};
    self->send(run, tool_atom::value, std::move(calls)); // its answer never comes
    REQUIRE(
      test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 4; }));
    caf::anon_send_exit(run, reason);
    // The wave's record goes with its run and cancels each request: the peer
    // sees four cancellations, and nothing stays in flight.
    CHECK(test::wait_for_stats(
      f.peer->port(), [](const json& s) { return s["cancelled"] == 4 && s["in_flight"] == 0; }));
  }
}
