// The node's own MCP servers (actors/tools/node_servers.hpp) mounted on the
// HTTP API at /mcp/<name>, on the MCP server implementation in transport/
// (mcp_server.hpp): the product docs, the Memory MCP and the Skill MCP.
//
// Each request is authenticated by a tenant token (`Authorization: Bearer`;
// a missing or unknown one is 401 with `WWW-Authenticate: Bearer`) and acts
// for one agent of that tenant: the default agent, or the one `?agent_id=`
// names (another tenant's or an unknown id is 404). The agent's grants
// decide which tools are listed and callable, exactly as for a run; each
// call's decision is audited by the tenant and the tool runs on the
// tenant's tool desk. Sessions (2025-11-25) belong to the (tenant, agent,
// token) that opened them.
#pragma once

#include <memory>
#include <vector>

#include <httplib.h>

#include "actors/directory/directory.hpp"

namespace voxos {

class mcp_server;

class node_mcp_servers {
public:
  node_mcp_servers(caf::actor_system& sys, directory_actor directory);
  ~node_mcp_servers();
  node_mcp_servers(const node_mcp_servers&) = delete;
  node_mcp_servers& operator=(const node_mcp_servers&) = delete;

  /// Serves every server at /mcp/<name> on `routes`.
  void mount(httplib::Server& routes);
  /// Ends the servers' open streams and waits; before the HTTP server stops.
  void stop();

private:
  caf::actor_system& sys_;
  directory_actor directory_;
  std::vector<std::unique_ptr<mcp_server>> servers_;
};

} // namespace voxos
