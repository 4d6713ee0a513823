// The OAuth 2.1 client of the node, for MCP servers (MCP Authorization;
// RFC 9728, 8414, 7591, 7636, 8707, 9207, 6749, 7523): discovery, client
// registration, the authorization request and its answer, and the token
// endpoint (authorization code, refresh, client credentials). One
// implementation, used by the node's MCP connections and by `voxosctl
// conformance`. CAF-free; every call blocks on HTTP (auth_fetcher).
//
// Registration order (MCP 2025-11-25 and 2026-07-28): a pre-registered
// client when one is given; else a client ID metadata document (the node's
// own HTTPS URL as client_id) when the authorization server advertises
// `client_id_metadata_document_supported`; else dynamic registration
// (RFC 7591) when it has a registration endpoint; else needs_auth ("no way
// to register a client"). A registration belongs to the issuer it was made
// with (`client_registration::issuer`): a server that moves to another
// authorization server is registered again.
//
// Scope (MCP scope selection): the 401 challenge's `scope`; else the
// protected resource's `scopes_supported`; else none sent. `offline_access`
// is added when the authorization server lists it in scopes_supported and
// the grant can return a refresh token (authorization code). Step-up (403
// insufficient_scope) asks for the union of the scopes held and the scopes
// the challenge names.
//
// Errors (messages name the step and, for the token endpoint, the OAuth
// error code when it is one RFC 6749 defines; never a URL, a token, a secret
// or a server's free text):
//   needs_auth    no authorization server found; no way to register; the
//                 token endpoint refused the grant (invalid_grant, ...)
//   forbidden     the URL policy refused a metadata or endpoint URL; a
//                 protected resource that names another resource; metadata
//                 whose issuer is not the one it was looked up for; an
//                 authorization answer with a wrong or missing `iss`; a
//                 redirect
//   unauthorized  an authorization answer carrying `error=`, or a state
//                 that does not match
//   bad_json      a document or token answer that is not JSON, or lacks a
//                 required field (access_token, token_type)
//   out_of_range  a token type other than Bearer; a server without PKCE S256
//   body_too_large, unavailable  from the fetch
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "messages/status.hpp"
#include "transport/auth/auth_fetch.hpp"
#include "transport/auth/oauth_metadata.hpp"
#include "transport/auth/www_authenticate.hpp"

namespace voxos::auth {

/// How the client authenticates at the token endpoint.
enum class client_auth_method { none, client_secret_basic, client_secret_post, private_key_jwt };
std::string_view to_string(client_auth_method x) noexcept;
std::optional<client_auth_method> client_auth_method_from(std::string_view text);

/// A client of one authorization server. Secret fields are sealed in the
/// vault by the node, never logged.
struct client_registration {
  std::string issuer; ///< the authorization server it was registered with
  std::string client_id;
  std::string client_secret; ///< secret
  client_auth_method method = client_auth_method::none;
  std::string private_key_pem; ///< secret; private_key_jwt
  std::string signing_alg;     ///< "ES256" or "RS256"; private_key_jwt
  bool dynamic = false;        ///< made by dynamic registration
  std::string redirect_uri;    ///< the one it was registered with, if any

  nlohmann::json to_json() const;
  static result<client_registration> from_json(const nlohmann::json& doc);
};

/// Tokens of one server. Secret; sealed by the node.
struct token_set {
  std::string access_token;
  std::string refresh_token;
  std::string scope;         ///< granted (the answer's), else requested
  int64_t expires_at_ms = 0; ///< wall clock; 0: not said
  std::string issuer;        ///< the authorization server that issued them

  nlohmann::json to_json() const;
  static result<token_set> from_json(const nlohmann::json& doc);
  /// Past `expires_at_ms - skew_ms` at `now_ms` (never, when not said).
  bool expired(int64_t now_ms, int64_t skew_ms) const;
};

/// What discovery found for one server.
struct discovery {
  std::string server_url;
  bool has_resource_metadata = false;
  resource_metadata resource;
  /// RFC 8707 `resource` sent with authorization and token requests: the
  /// protected resource's `resource`, else the server's URL.
  std::string resource_indicator;
  server_metadata server;
};

/// What the client says of itself when it registers or is looked up.
struct client_profile {
  std::string client_name = "Voxos";
  std::string redirect_uri;
  /// The node's client ID metadata document URL (HTTPS), or "".
  std::string metadata_document_url;
  /// A pre-registered client (client_id not empty), used as it is.
  std::optional<client_registration> pre_registered;
  /// Grant types to register: {"authorization_code","refresh_token"} for a
  /// browser flow, {"client_credentials"} for a machine client.
  std::vector<std::string> grant_types{"authorization_code", "refresh_token"};
};

/// A prepared authorization request: the URL to open, and what to keep
/// until its answer (the verifier is secret).
struct authorization_request {
  std::string url;
  std::string state;
  std::string verifier;
  std::string redirect_uri;
  std::string scope;
};

/// Scopes as a set: `a` plus the members of `b` it lacks, space-separated.
std::string scope_union(std::string_view a, std::string_view b);

class oauth_client {
public:
  explicit oauth_client(const auth_fetcher& fetch) : fetch_(fetch) {}

  /// Discovery for the server at `server_url`, starting from the challenge
  /// of its 401 (may be empty). See oauth_metadata.hpp for the order.
  result<discovery> discover(std::string_view server_url, const bearer_challenge& challenge) const;

  /// The scope to ask for (see the header comment); "" sends none.
  std::string select_scope(const discovery& found, const bearer_challenge& challenge,
                           bool wants_refresh) const;

  /// The client to use with `found`'s authorization server: `known` when it
  /// belongs to that issuer, else per the registration order.
  result<client_registration> client_for(const discovery& found, const client_profile& profile,
                                         const std::optional<client_registration>& known) const;

  /// A fresh authorization request (PKCE S256, state, resource, scope).
  /// `state`: the caller's (the node's signed state), or "" for a random one.
  result<authorization_request> authorize(const discovery& found, const client_registration& client,
                                          const std::string& redirect_uri, const std::string& scope,
                                          std::string state = {}) const;

  /// The code of an authorization answer (the redirect URI's query fields),
  /// after checking error=, state and iss (RFC 9207: when the server
  /// advertises the parameter it must be present; when present it must equal
  /// the issuer exactly).
  result<std::string> read_answer(const discovery& found, const form_fields& answer,
                                  const std::string& expected_state) const;

  result<token_set> exchange_code(const discovery& found, const client_registration& client,
                                  const std::string& code, const std::string& verifier,
                                  const std::string& redirect_uri) const;
  result<token_set> refresh(const discovery& found, const client_registration& client,
                            const token_set& held) const;
  result<token_set> client_credentials(const discovery& found, const client_registration& client,
                                       const std::string& scope) const;

  /// Sends `fields` to the token endpoint with the client's authentication,
  /// and reads the token answer (also for extension grants).
  result<token_set> token_request(const discovery& found, const client_registration& client,
                                  form_fields fields, const std::string& requested_scope) const;

  /// RFC 8693 token exchange at an enterprise identity provider: an ID
  /// token for an identity assertion JWT authorization grant (ID-JAG) for
  /// `found`'s authorization server (audience its issuer) and resource.
  result<std::string> exchange_for_id_jag(const std::string& idp_token_endpoint,
                                          const std::string& id_token,
                                          const std::string& idp_client_id,
                                          const discovery& found) const;

  const auth_fetcher& fetcher() const { return fetch_; }

private:
  result<nlohmann::json> fetch_json(const std::string& url) const;

  const auth_fetcher& fetch_;
};

} // namespace voxos::auth
