// A node, an SDK-built MCP peer (JSON answers unless told otherwise)
// registered for "mcp", and a tenant whose default agent may call the peer's
// tools: the server is created, tested, enabled, trusted, allowlisted and
// tested again (enabling goes back through the test), and each tool but
// "add" is granted ("add" is allowlisted and never granted). Used by the run
// integration tests.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/node_peer.hpp"
#include "support/running_node.hpp"

namespace voxos::test {

inline const std::vector<std::string> peer_tools{"echo", "add", "sleep", "get_forecast",
                                                 "record_note"};

/// A tenant whose default agent may call the peer's tools (all but "add",
/// which is allowlisted on the server but never granted).
struct run_fixture {
  std::unique_ptr<node_peer> peer;
  temp_dir dir;
  std::unique_ptr<running_node> node;
  std::string token;
  std::string agent_id;
  std::string server_id;

  /// `tweak` adjusts the node's configuration before it starts.
  explicit run_fixture(std::function<void(node_config&)> tweak = {})
      : run_fixture({"--json"}, {}, std::move(tweak)) {}

  /// The peer started with `peer_args`; `extra_tools` of it allowlisted and
  /// granted besides peer_tools.
  run_fixture(std::vector<std::string> peer_args, const std::vector<std::string>& extra_tools,
              std::function<void(node_config&)> tweak = {})
      : peer(start_sdk_peer(std::move(peer_args))) {
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    auto allowed = peer_tools;
    allowed.insert(allowed.end(), extra_tools.begin(), extra_tools.end());
    node = std::make_unique<running_node>(
      dir, std::vector<node_config::registered_url>{{peer->url(), "mcp"}}, std::move(tweak));
    token = node->make_tenant("Acme").second;
    agent_id = node->call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
    auto made = node->call("POST", "/v1/servers", token,
                           nlohmann::json{{"url", peer->url()}, {"label", "Peer"}}.dump());
    REQUIRE_MESSAGE(made.status == 201, made.raw);
    server_id = made.body["server_id"].get<std::string>();
    auto tested = node->call("POST", "/v1/servers/" + server_id + "/test", token);
    REQUIRE_MESSAGE(tested.status == 200, tested.raw);
    auto patched = node->call(
      "PATCH", "/v1/servers/" + server_id, token,
      nlohmann::json{{"enabled", true}, {"trusted", true}, {"allowed_tools", allowed}}.dump());
    REQUIRE_MESSAGE(patched.status == 200, patched.raw);
    // Enabling goes back through the test-and-grant flow: test again.
    tested = node->call("POST", "/v1/servers/" + server_id + "/test", token);
    REQUIRE_MESSAGE(tested.status == 200, tested.raw);
    for (const auto& tool : allowed) {
      if (tool == "add")
        continue;
      auto granted = node->call(
        "PUT", "/v1/agents/" + agent_id + "/grants", token,
        nlohmann::json{{"server_id", server_id}, {"tool", tool}, {"decision", "allow"}}.dump());
      REQUIRE_MESSAGE(granted.status == 200, granted.raw);
    }
  }

  std::string start_run() {
    auto started =
      node->call("POST", "/v1/runs", token,
                 nlohmann::json{{"agent_id", agent_id}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(started.status == 201, started.raw);
    return started.body["run_id"].get<std::string>();
  }

  http_reply submit(const std::string& run_id, const nlohmann::json& calls) {
    return node->call("POST", "/v1/runs/" + run_id + "/tool-calls", token,
                      nlohmann::json{{"calls", calls}}.dump());
  }
};

} // namespace voxos::test
