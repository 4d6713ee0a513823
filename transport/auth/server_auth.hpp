// The credentials of one MCP connection, as its HTTP workers use them: the
// Authorization value for the next request, and what to do when the server
// refuses one (401, 403 insufficient_scope). CAF-free; the methods block on
// the authorization server and are called from the connection's worker
// threads, never from an actor's own thread.
//
// oauth_session, the OAuth implementation:
//
//   no tokens ----401----> discover, register, grant -------> tokens
//   tokens ---- expiring --> refresh (before the request) ---> tokens
//   tokens ----401--------> refresh once; refused again: a new grant
//   tokens ----403 insufficient_scope--> a new grant asking for the union of
//                           the held and the challenged scopes (none when the
//                           held scope covers the challenge: the server will
//                           not be satisfied by asking again)
//   no way to a grant ----> needs_auth (the server needs signing in)
//
// A grant is client credentials (a machine client: secret or private-key
// JWT), a JWT assertion (RFC 7523), or the authorization code flow through a `user_agent` (a test client
// playing the browser). The node's browser flow has no user agent here: the
// owner signs in through the HTTP API, and a connection without usable
// tokens fails needs_auth.
//
// One mutex serialises every refresh and grant: concurrent requests that all
// meet an expired token refresh it once (a refusal of a credential already
// replaced is answered "send again" at once). The opened access token is
// held here, in memory, for the connection's life; it is never unsealed per
// request. New tokens (and a new client) go to `on_tokens`, for the node to
// seal and store; rotated refresh tokens replace the old ones there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/status.hpp"
#include "transport/auth/oauth_client.hpp"

namespace voxos::auth {

class server_auth {
public:
  virtual ~server_auth() = default;
  /// The Authorization header value for the next request, "" for none yet.
  /// May refresh first (a token about to expire).
  virtual std::string authorization() = 0;
  /// The server refused a request sent with `sent` (its Authorization
  /// value) with `http_status` (401 or 403) and `challenge` (its
  /// WWW-Authenticate header). ok: a new credential is ready, send the
  /// request once more. Otherwise the error the request fails with:
  /// needs_auth (no way to a usable credential), forbidden (a 403 that no
  /// scope cures), or the authorization work's own error.
  virtual status refused(int http_status, std::string_view challenge, std::string_view sent) = 0;
  /// Headers made afresh for each exchange (a broker assertion), set beside
  /// the Authorization value; none by default.
  virtual std::vector<std::pair<std::string, std::string>> exchange_headers() { return {}; }
};

/// How an oauth_session gets its grants.
struct oauth_settings {
  /// authorization_code: the owner signs in (through `user_agent` here);
  /// client_credentials: a machine client (secret or private-key JWT);
  /// jwt_bearer: an assertion made by `assertion` (RFC 7523 section 2.1:
  /// an enterprise identity provider's ID-JAG, a workload's identity token).
  enum class grant { authorization_code, client_credentials, jwt_bearer };
  grant kind = grant::authorization_code;
  std::string server_url;
  client_profile profile;
  /// Refresh this long before the access token expires (default 60 s).
  int64_t refresh_skew_ms = 60'000;
  /// authorization_code only: opens the authorization URL and returns the
  /// answer's query fields (a test client plays the browser). Empty: the
  /// session cannot sign in by itself and answers needs_auth.
  std::function<result<form_fields>(const std::string& url)> user_agent;
  /// jwt_bearer only: the assertion for a grant at the authorization server
  /// discovery found (its issuer is the assertion's audience).
  std::function<result<std::string>(const discovery& found)> assertion;
  /// Hears when the session gives up (needs_auth): no usable credential.
  std::function<void()> on_needs_auth;
  /// Hears every new token set, with the client it was got with.
  std::function<void(const client_registration&, const token_set&)> on_tokens;
};

class oauth_session : public server_auth {
public:
  /// `fetch` must outlive the session. `client` and `tokens`: what the
  /// node holds already (opened from the vault), if anything.
  oauth_session(std::shared_ptr<const auth_fetcher> fetch, oauth_settings settings,
                std::optional<client_registration> client = std::nullopt,
                std::optional<token_set> tokens = std::nullopt);

  std::string authorization() override;
  status refused(int http_status, std::string_view challenge, std::string_view sent) override;

  /// For operators and tests: whether tokens are held, their scope.
  bool has_tokens() const;
  std::string scope() const;

private:
  status answer_refusal(int http_status, std::string_view challenge, std::string_view sent);
  /// A new grant for `scope`, with `found_` set. Caller holds mtx_.
  status grant(const std::string& scope);
  /// Whether a grant can be had without the owner (client credentials, or a
  /// user agent).
  bool can_grant() const;
  /// Whether discovery found the authorization server that issued the held
  /// tokens and the client (a refresh may go to it).
  bool same_issuer() const;
  status discover(const bearer_challenge& challenge);
  /// Holds `tokens` (and their Authorization value); keep() also tells
  /// on_tokens.
  void hold(token_set tokens);
  void keep(token_set tokens);

  std::shared_ptr<const auth_fetcher> fetch_;
  oauth_client client_api_;
  oauth_settings settings_;
  mutable std::mutex mtx_;
  std::optional<discovery> found_;
  std::optional<client_registration> client_;
  std::optional<token_set> tokens_;
  std::string header_; ///< "Bearer <access token>" or ""
  /// The header a refresh was last tried for: a second 401 to the same one
  /// goes to a new grant.
  std::string refreshed_for_;
};

} // namespace voxos::auth
