// The node's own MCP servers and the internal tools each one offers. CAF-free.
//
// Each is served over Streamable HTTP at /mcp/<name> (actors/http_api/
// node_mcp.hpp), authenticated by a tenant token, for one agent of that
// tenant (the tenant's default agent unless `?agent_id=` names another),
// and subject to the same grants as a run: a tool the agent's grants do not
// allow is neither listed nor callable, and every call is audited. The
// tools keep their internal names, descriptions and schemas. Writes through
// them never become active knowledge by themselves: the Memory MCP submits
// inferred proposals and the Skill MCP drafts, both waiting for the owner's
// review whatever the automatic-saving consent (knowledge.hpp).
#pragma once

#include <string_view>
#include <vector>

namespace voxos {

struct node_server {
  std::string_view name;  ///< the path segment: /mcp/<name>
  std::string_view title; ///< serverInfo title
  std::string_view instructions;
  std::vector<std::string_view> tools;
};

/// docs, memory, skills.
const std::vector<node_server>& node_servers();

/// The server named `name`, or nullptr.
const node_server* find_node_server(std::string_view name);

} // namespace voxos
