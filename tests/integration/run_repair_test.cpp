// Discovery at run start: the single repair discovery: a server whose cache lacks the
// definition of an allowlisted tool is discovered live once (the cache is
// then repaired), and a tool the server no longer has costs one discovery
// per cache version, not one per run. The SDK-built peer is restarted on the
// same port with and without the tool; its own count of tools/list requests
// is the judge.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "support/node_peer.hpp"
#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// A tenant whose agent may call the peer's "echo" and "gen_1", both
/// allowlisted; then the peer is restarted without gen_1 and the server
/// tested again, so its cache lacks an allowlisted tool.
struct repair_fixture {
  std::unique_ptr<test::node_peer> peer = start_peer(0, true);
  uint16_t port = peer->port();
  test::temp_dir dir;
  std::unique_ptr<test::running_node> node;
  std::string token;
  std::string agent_id;
  std::string server_id;

  static std::unique_ptr<test::node_peer> start_peer(uint16_t port, bool with_gen) {
    std::vector<std::string> args{"--json", "--port", std::to_string(port)};
    if (with_gen) {
      args.emplace_back("--tools");
      args.emplace_back("2");
    }
    auto started = test::start_sdk_peer(std::move(args));
    REQUIRE_MESSAGE(started->up(), started->error_output());
    return started;
  }

  void restart_peer(bool with_gen) {
    peer.reset();
    peer = start_peer(port, with_gen);
  }

  repair_fixture() {
    node = std::make_unique<test::running_node>(
      dir, std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
    token = node->make_tenant("Acme").second;
    agent_id = node->call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
    auto made = node->call("POST", "/v1/servers", token,
                           json{{"url", peer->url()}, {"label", "Peer"}}.dump());
    REQUIRE_MESSAGE(made.status == 201, made.raw);
    server_id = made.body["server_id"].get<std::string>();
    REQUIRE(test_server());
    auto patched = node->call(
      "PATCH", "/v1/servers/" + server_id, token,
      json{{"enabled", true}, {"trusted", true}, {"allowed_tools", {"echo", "gen_1"}}}.dump());
    REQUIRE_MESSAGE(patched.status == 200, patched.raw);
    REQUIRE(test_server());
    for (const auto* tool : {"echo", "gen_1"}) {
      auto granted =
        node->call("PUT", "/v1/agents/" + agent_id + "/grants", token,
                   json{{"server_id", server_id}, {"tool", tool}, {"decision", "allow"}}.dump());
      REQUIRE_MESSAGE(granted.status == 200, granted.raw);
    }
    // The server loses gen_1; a test refreshes the cache without it.
    restart_peer(false);
    REQUIRE(test_server());
  }

  bool test_server() {
    auto tested = node->call("POST", "/v1/servers/" + server_id + "/test", token);
    return tested.status == 200;
  }

  json start_run() {
    auto started = node->call("POST", "/v1/runs", token,
                              json{{"agent_id", agent_id}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(started.status == 201, started.raw);
    return started.body;
  }

  /// The composition decisions audited for one run.
  json run_decisions(const std::string& run_id) {
    auto audit = node->call("GET", "/v1/audit?limit=10000", token);
    json out = json::array();
    for (const auto& row : audit.body)
      if (row["run_id"] == run_id && row["phase"] == "compose")
        out.push_back(row);
    return out;
  }

  int discoveries() { return test::peer_stats(port)["methods"].value("tools/list", 0); }
};

/// The model-facing name of `tool` in a run's direct view, or "".
std::string model_name(const json& run, const std::string& tool) {
  for (const auto& entry : run["view"]["direct"])
    if (entry["tool"] == tool)
      return entry["model_name"].get<std::string>();
  return {};
}

} // namespace

TEST_CASE("an allowlisted tool missing from the cache is discovered once and then callable") {
  repair_fixture f;
  // The server has gen_1 again; the cache does not know yet.
  f.restart_peer(true);
  REQUIRE(test::reset_peer_stats(f.port));
  auto run = f.start_run();
  CHECK(f.discoveries() == 1);
  auto name = model_name(run, "gen_1");
  REQUIRE_MESSAGE(!name.empty(), run["view"].dump());
  auto answered = f.node->call(
    "POST", "/v1/runs/" + run["run_id"].get<std::string>() + "/tool-calls", f.token,
    json{{"calls", {{{"call_id", "c1"}, {"name", name}, {"arguments", {{"id", 3}}}}}}}.dump());
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  CHECK_MESSAGE(answered.body["outputs"][0]["status"] == "ok", answered.raw);
  // The repaired cache describes it: later runs need no discovery.
  auto again = f.start_run();
  CHECK(!model_name(again, "gen_1").empty());
  CHECK(f.discoveries() == 1);
}

TEST_CASE("a tool the server no longer has costs one discovery per cache version, not per run") {
  repair_fixture f;
  REQUIRE(test::reset_peer_stats(f.port));
  for (int run = 0; run < 4; ++run) {
    auto started = f.start_run();
    CHECK(model_name(started, "gen_1").empty());
    CHECK(!model_name(started, "echo").empty());
    // Why it stays out is audited.
    bool named = false;
    for (const auto& row : f.run_decisions(started["run_id"].get<std::string>()))
      named = named || (row["tool"] == "gen_1" && row["reason"] == "not_discovered");
    CHECK(named);
  }
  CHECK(f.discoveries() == 1);
}

TEST_CASE("a server's tools/list_changed makes the next run rediscover it, once") {
  auto peer = test::start_sdk_peer({"--sse", "--changing-tools"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  test::temp_dir dir;
  test::running_node node{dir, {{peer->url(), "mcp"}}};
  auto token = node.make_tenant("Acme").second;
  auto agent_id = node.call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
  auto made =
    node.call("POST", "/v1/servers", token, json{{"url", peer->url()}, {"label", "Peer"}}.dump());
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  auto server_id = made.body["server_id"].get<std::string>();
  auto test_server = [&] {
    return node.call("POST", "/v1/servers/" + server_id + "/test", token).status == 200;
  };
  auto allow = [&](const json& tools) {
    return node
             .call("PATCH", "/v1/servers/" + server_id, token,
                   json{{"enabled", true}, {"trusted", true}, {"allowed_tools", tools}}.dump())
             .status
           == 200;
  };
  auto grant = [&](const std::string& tool) {
    return node
             .call("PUT", "/v1/agents/" + agent_id + "/grants", token,
                   json{{"server_id", server_id}, {"tool", tool}, {"decision", "allow"}}.dump())
             .status
           == 200;
  };
  auto start_run = [&] {
    auto started = node.call("POST", "/v1/runs", token,
                             json{{"agent_id", agent_id}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(started.status == 201, started.raw);
    return started.body;
  };
  REQUIRE(test_server());
  REQUIRE(allow({"echo", "reveal_tool"}));
  REQUIRE(test_server());
  REQUIRE(grant("reveal_tool"));
  // late_tool is unknown: it cannot be allowlisted yet.
  CHECK_FALSE(allow({"echo", "reveal_tool", "late_tool"}));

  auto run = start_run();
  auto reveal = model_name(run, "reveal_tool");
  REQUIRE(!reveal.empty());
  auto answered = node.call(
    "POST", "/v1/runs/" + run["run_id"].get<std::string>() + "/tool-calls", token,
    json{{"calls", {{{"call_id", "c1"}, {"name", reveal}, {"arguments", json::object()}}}}}.dump());
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  REQUIRE(answered.body["outputs"][0]["status"] == "ok");

  // The announcement reached the tenant: the next run start rediscovers.
  REQUIRE(test::reset_peer_stats(peer->port()));
  start_run();
  CHECK(test::peer_stats(peer->port())["methods"].value("tools/list", 0) == 1);
  // late_tool is now known: it can be allowlisted and granted without a test.
  REQUIRE(allow({"echo", "reveal_tool", "late_tool"}));
  REQUIRE(grant("late_tool"));
  auto later = start_run();
  CHECK(!model_name(later, "late_tool").empty());
  CHECK(test::peer_stats(peer->port())["methods"].value("tools/list", 0) == 1);
}
