// Short-lived values the node signs and later checks itself (HS256 JWTs),
// so that any node holding the same secret verifies them. CAF-free.
//
// OAuth state (the browser sign-in, MCP_OAUTH_STATE_SIGNING_SECRET): bound to
// tenant, server and the pending sign-in whose PKCE verifier waits in the
// vault (`flow`), with an expiry (default 10 min). The callback refuses a
// forged state (bad signature), an expired one, or one for another tenant or
// server; a replayed one finds its pending sign-in already used (the caller
// consumes the flow once).
//
// Broker assertions (a brokered connection, e.g. the Monzo container): minted
// afresh for every outbound HTTP request, never cached: bound to the user
// (tenant) and server, audience the node's broker, a fresh `jti`, a short
// life (default 60 s). The broker refuses an expired one, another audience,
// another server than the route names, and a `jti` it has seen (replay).
//
// Errors: unauthorized, naming the check ("state: expired", "assertion:
// replayed", ...), never the value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "messages/status.hpp"
#include "transport/auth/auth_crypto.hpp"

namespace voxos::auth {

/// Default lives (configurable by the callers' config).
inline constexpr int64_t default_state_lifetime_ms = 10 * 60 * 1000;
inline constexpr int64_t default_assertion_lifetime_ms = 60 * 1000;

struct oauth_state_claims {
  std::string tenant;
  std::string server;
  std::string flow; ///< the pending sign-in (its verifier's id in the vault)
  int64_t expires_at_ms = 0;
};

/// The state of a sign-in, signed with `key` (HS256).
result<std::string> sign_oauth_state(const signing_key& key, const oauth_state_claims& claims);

/// The claims of `state` if `secret` signed it and it has not expired at
/// `now_ms`. The caller compares tenant, server and flow with what it holds.
result<oauth_state_claims> verify_oauth_state(std::string_view state, std::string_view secret,
                                              int64_t now_ms);

struct broker_claims {
  std::string tenant; ///< the user the connection acts for
  std::string server;
  std::string jti;
  int64_t expires_at_ms = 0;
};

/// Audience of every broker assertion.
inline constexpr std::string_view broker_audience = "voxos-broker";

/// A fresh broker assertion for (tenant, server), living `lifetime_ms`.
result<std::string> mint_broker_assertion(const signing_key& key, std::string_view tenant,
                                          std::string_view server, int64_t now_ms,
                                          int64_t lifetime_ms = default_assertion_lifetime_ms);

/// Checks broker assertions: signature, audience, expiry, a life of at most
/// 5 min, the server the request names, and replay (each `jti` once,
/// remembered until its assertion expires). At most `max_remembered` are
/// remembered: past that the oldest is forgotten early (with the default
/// 100,000 and 60 s lives, that takes over 1,600 brokered requests a second).
/// Thread-safe.
class broker_verifier {
public:
  explicit broker_verifier(std::string secret, std::size_t max_remembered = 100'000);

  result<broker_claims> verify(std::string_view assertion, std::string_view server, int64_t now_ms);

private:
  std::string secret_;
  std::size_t max_remembered_;
  std::mutex mtx_;
  std::unordered_set<std::string> seen_;
  std::deque<std::pair<int64_t, std::string>> order_; ///< (expiry, jti)
};

} // namespace voxos::auth
