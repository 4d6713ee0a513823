// The Bearer challenge of a WWW-Authenticate header (RFC 9110 section 11.6.1,
// RFC 6750 section 3, RFC 9728 section 5.1), as an MCP server sends it with a
// 401 or 403. CAF-free.
//
// A header may hold several challenges ("Basic realm=x, Bearer scope=y"); only
// the first Bearer one (scheme compared without case) is read. Parameter
// names compare without case; values are tokens or quoted strings (with
// backslash escapes). A header that does not parse yields what was read
// before the fault: a server's malformed challenge must not stop discovery,
// which then falls back on the well-known locations.
#pragma once

#include <string>
#include <string_view>

namespace voxos::auth {

struct bearer_challenge {
  bool present = false;          ///< a Bearer challenge was found
  std::string resource_metadata; ///< RFC 9728 metadata URL, or ""
  std::string scope;             ///< space-separated scopes, or ""
  std::string error;             ///< e.g. "invalid_token", "insufficient_scope", or ""
  /// Whether the parameter was sent at all (an empty scope="" is sent).
  bool has_scope = false;
};

/// Reads the first Bearer challenge of `header` (bounded: headers longer than
/// 8 KiB are read no further).
bearer_challenge parse_bearer_challenge(std::string_view header);

} // namespace voxos::auth
