// Pagination of the MCP server's lists (tools, prompts, resources,
// resource templates, and any list an extension serves): opaque cursors and
// the page a cursor selects. CAF-free, stateless, safe from any thread.
//
// A list is served in ascending key order (a tool's or prompt's name, a
// resource's URI). A cursor names the list and the last key of the page
// before it, base64url-encoded; the next page starts after that key. Such a
// cursor stays valid while the list changes: an item added or removed before
// it shifts nothing, and a cursor whose key was removed still continues after
// where that key stood. Clients must treat it as opaque (MCP, pagination).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/status.hpp"

namespace voxos {

/// The cursor continuing `list` after `last_key`.
std::string mcp_cursor(std::string_view list, std::string_view last_key);

/// The last key a cursor of `list` carries. Errors (out_of_range, "invalid
/// cursor", naming neither the cursor nor the key): not base64url, not made
/// by mcp_cursor, or made for another list.
result<std::string> mcp_cursor_key(std::string_view list, std::string_view cursor);

/// One page: the items [begin, end) of the sorted keys, and the cursor of the
/// next page when more follow.
struct mcp_page {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::optional<std::string> next_cursor;
};

/// The page of `sorted_keys` (ascending, unique) that `cursor` selects, at
/// most `page_size` items (at least 1). No cursor: the first page. Errors as
/// mcp_cursor_key.
result<mcp_page> mcp_page_of(const std::vector<std::string>& sorted_keys, std::string_view list,
                             const std::optional<std::string>& cursor, std::size_t page_size);

} // namespace voxos
