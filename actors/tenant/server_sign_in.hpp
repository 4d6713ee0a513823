// Signing in to an MCP server through the owner's browser, and the OAuth
// credentials of a tenant's connection: the CAF-free steps the tenant actor
// runs on a worker thread (each blocks on the authorization server).
//
//   start   discovery, the client (a replacement the owner gave, the stored
//           one if it belongs to the server's authorization server, else a
//           client ID metadata document or dynamic registration), a PKCE
//           verifier and a signed state: the provider URL to open, and the
//           pending sign-in to seal (its verifier stays in the vault)
//   finish  the callback's answer checked (error=, state, RFC 9207 iss, the
//           issuer the sign-in began with) and the code exchanged for tokens
//
// The state (transport/auth/signed_claims.hpp) names tenant, server and the
// pending sign-in's id; the callback finds the tenant from it and the tenant
// refuses a state whose pending sign-in it does not hold (another, a used or
// a replaced one).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "messages/status.hpp"
#include "transport/auth/oauth_client.hpp"
#include "transport/auth/signed_claims.hpp"

namespace voxos {
class url_policy;
}

namespace voxos::server_sign_in {

/// Where providers send the owner's browser back: the node's public base URL
/// plus this path (http://localhost:7100/api/mcp/auth/callback by default).
inline constexpr std::string_view sign_in_callback_path = "/api/mcp/auth/callback";

/// Where the node serves its client ID metadata document, under its public
/// base URL; used as client_id only when that URL is https (the document's
/// URL must be), and where the authorization server supports it.
inline constexpr std::string_view client_metadata_path = "/oauth/client-metadata.json";

/// What a node needs to sign its tenants in to servers. Shared, immutable.
struct context {
  std::shared_ptr<const auth::auth_fetcher> fetch;
  /// Signs and checks states (MCP_OAUTH_STATE_SIGNING_SECRET).
  std::shared_ptr<const auth::signing_key> state_key;
  std::string state_secret;
  /// The node's public base URL plus /api/mcp/auth/callback.
  std::string redirect_uri;
  /// The node's client ID metadata document URL (HTTPS), or "" (none:
  /// dynamic registration only).
  std::string metadata_document_url;
  std::string client_name = "Voxos";
  /// Signs broker assertions (HS256 under a key derived from the state
  /// secret: HMAC-SHA256(state secret, "voxos-broker-assertions-v1")), and
  /// its secret, for the broker route to check them.
  std::shared_ptr<const auth::signing_key> broker_key;
  std::string broker_secret;
  int64_t state_lifetime_ms = auth::default_state_lifetime_ms;
};

/// The context of a node: `policy` for every URL the authorization work
/// fetches, the public base URL, the state secret (at least 32 bytes, else
/// out_of_range).
result<std::shared_ptr<const context>> make_context(std::shared_ptr<const url_policy> policy,
                                                    const std::string& public_base_url,
                                                    const std::string& state_secret);

/// The node's client ID metadata document (served at client_metadata_path).
nlohmann::json client_metadata_document(const context& ctx);

/// A sign-in waiting for its callback (sealed; the verifier is secret).
struct pending {
  std::string flow;
  std::string verifier;
  std::string state;
  std::string redirect_uri;
  std::string scope;
  std::string issuer;
  int64_t expires_at_ms = 0;

  nlohmann::json to_json() const;
  static result<pending> from_json(const nlohmann::json& doc);

private:
  static pending read(const nlohmann::json& doc); ///< throws on wrong member types
};

struct started {
  std::string authorization_url;
  auth::client_registration client;
  pending sign_in;
};

result<started> start(const context& ctx, const std::string& tenant, const std::string& server_id,
                      const std::string& server_url,
                      const std::optional<auth::client_registration>& stored,
                      const std::optional<auth::client_registration>& replacement, int64_t now_ms);

/// A refresh of `held` (the tokens of a brokered server), at the
/// authorization server that issued them only (discovered afresh; one that
/// moved is needs_auth).
result<auth::token_set> refresh(const context& ctx, const std::string& server_url,
                                const auth::client_registration& client,
                                const auth::token_set& held);

result<auth::token_set> finish(const context& ctx, const std::string& server_url,
                               const auth::client_registration& client, const pending& sign_in,
                               const auth::form_fields& answer, int64_t now_ms);

} // namespace voxos::server_sign_in
