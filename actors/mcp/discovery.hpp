// What discovery keeps of a server's tools/list answer. CAF-free.
//
// A tool is kept only as the server described it: a name a tenant's records
// can keep (1 to 128 of [A-Za-z0-9_.-], is_storable_tool_name) and an
// inputSchema object are required (a tool without a schema is skipped, never
// given an invented empty one); title, description, outputSchema and the
// readOnlyHint and destructiveHint annotations are kept when present.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/tool_types.hpp"
#include "messages/status.hpp"

namespace voxos {

/// Longest tool name kept (MCP suggests at most 128 characters; the bound of
/// is_storable_tool_name).
inline constexpr std::size_t max_tool_name_bytes = 128;

struct discovered_tools {
  std::vector<tool_definition> tools; ///< in the server's order
  std::size_t skipped = 0;            ///< entries that were not a usable tool
  bool truncated = false;             ///< the connection stopped paging at its bound
};

/// Reads the answer of mcp_connection's discovery ({"tools":[...],
/// "truncated":bool}). Errors: bad_json when it is not that shape.
result<discovered_tools> read_discovery(std::string_view answer_json);

/// A server's cache bounded to `max` tools: the allowlisted ones first (in
/// the server's order), then the others, so a server exposing more than the
/// bound never loses a tool the tenant allowed.
std::vector<tool_definition> bound_cache(std::vector<tool_definition> tools,
                                         const std::vector<std::string>& allowed, std::size_t max);

} // namespace voxos
