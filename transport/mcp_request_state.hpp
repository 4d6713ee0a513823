// The `requestState` of MCP multi round-trip requests (2026-07-28, SEP-2322),
// sealed by the server so a client can carry it but not alter it. CAF-free,
// safe from any thread (the sealer is immutable).
//
// A handler that needs input from the client answers with its own state (any
// JSON value); the server seals it into the opaque string the client echoes
// on its retry, and opens it before the handler runs again. The seal binds
// the state to the caller (a hash of its principal), the request (method and
// tool, prompt or resource name) and an expiry, under HMAC-SHA256 with the
// server's key; a state failing any of these is refused, so a handler never
// sees state that another caller, another request or a tampering client
// produced. The spec's replay advice is followed; single use is not promised.
//
// Integrity, not secrecy: the state travels readable (base64url JSON), so a
// handler must not put secrets in it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace voxos {

/// What a sealed state is bound to.
struct mcp_state_binding {
  std::string_view principal; ///< the caller's principal ("" for anonymous)
  std::string_view method;    ///< e.g. "tools/call"
  std::string_view target;    ///< the tool or prompt name, or the resource URI
};

class mcp_state_sealer {
public:
  /// `key`: the HMAC key, at least 32 bytes; an empty key draws 32 random
  /// bytes (states then do not survive a restart, nor cross to another
  /// process). `ttl`: how long a sealed state may come back.
  mcp_state_sealer(std::string key, std::chrono::milliseconds ttl);

  /// The opaque string for `state`, valid until now + ttl.
  std::string seal(const nlohmann::json& state, const mcp_state_binding& binding,
                   std::chrono::system_clock::time_point now) const;

  /// The state a sealed string carries. Errors (out_of_range, the message
  /// naming the failed check, never the text): malformed, not authentic
  /// (altered or sealed under another key), bound to another caller or
  /// request, or expired.
  result<nlohmann::json> open(std::string_view sealed, const mcp_state_binding& binding,
                              std::chrono::system_clock::time_point now) const;

private:
  std::string tag(std::string_view payload) const;

  std::string key_;
  std::chrono::milliseconds ttl_;
};

} // namespace voxos
