// A tenant of an in-process node with its token and default agent, and the
// calls an agent host makes to exercise tools: grants, runs, one call per
// round (the internal tools' and the node's MCP servers' tests).
#pragma once

#include <functional>
#include <string>
#include <tuple>

#include "support/running_node.hpp"

namespace voxos::test {

struct tool_session {
  temp_dir dir;
  running_node node;
  std::string tenant_id;
  std::string token;
  std::string agent_id;

  tool_session() : tool_session(nullptr) {}
  /// A node whose test configuration `tweak` changes first.
  explicit tool_session(std::function<void(node_config&)> tweak) : node{dir, {}, std::move(tweak)} {
    open_tenant();
  }

  void open_tenant() {
    std::tie(tenant_id, token) = node.make_tenant("Acme");
    auto agents = node.call("GET", "/v1/agents", token);
    REQUIRE(agents.status == 200);
    agent_id = agents.body[0]["agent_id"].template get<std::string>();
  }

  void grant(const std::string& tool, const std::string& decision = "allow") {
    auto set = node.call("PUT", "/v1/agents/" + agent_id + "/grants", token,
                         nlohmann::json{{"tool", tool}, {"decision", decision}}.dump());
    REQUIRE_MESSAGE(set.status == 200, set.raw);
  }

  std::string start_run(const std::string& chan = "owner_text_chat") {
    auto run = node.call("POST", "/v1/runs", token,
                         nlohmann::json{{"agent_id", agent_id}, {"channel", chan}}.dump());
    REQUIRE_MESSAGE(run.status == 201, run.raw);
    return run.body["run_id"].template get<std::string>();
  }

  /// One call in its own round: {call_id, status, output}.
  nlohmann::json call(const std::string& run_id, const std::string& tool, nlohmann::json args) {
    nlohmann::json body{
      {"calls", {{{"call_id", "c1"}, {"name", tool}, {"arguments", std::move(args)}}}}};
    auto answer = node.call("POST", "/v1/runs/" + run_id + "/tool-calls", token, body.dump());
    REQUIRE_MESSAGE(answer.status == 200, answer.raw);
    return answer.body["outputs"][0];
  }

  /// The structured result of a call that completed.
  nlohmann::json result_of(const std::string& run_id, const std::string& tool,
                           nlohmann::json args) {
    auto out = call(run_id, tool, std::move(args));
    REQUIRE_MESSAGE(out["status"] == "ok", out.dump());
    return out["output"]["structuredContent"];
  }
};

} // namespace voxos::test
