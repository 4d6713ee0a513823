// Authorization discovery for an MCP server (MCP Authorization, 2025-03-26 to
// 2026-07-28): where the metadata documents are, and what they say. CAF-free;
// the fetching is auth_fetcher's, the order of attempts is here.
//
//   401 + WWW-Authenticate resource_metadata=U  --> U
//   else  https://h/.well-known/oauth-protected-resource/<path>   (RFC 9728)
//         https://h/.well-known/oauth-protected-resource
//   none found: the 2025-03-26 revision's rule: the MCP server's origin is the
//         authorization server (its metadata at the origin's well-known
//         location, else the default endpoints /authorize, /token, /register)
//
//   issuer https://a/p (path p):                       issuer without a path:
//     https://a/.well-known/oauth-authorization-server/p   .../oauth-authorization-server
//     https://a/.well-known/openid-configuration/p         .../openid-configuration
//     https://a/p/.well-known/openid-configuration
//
// Checks: the protected resource's `resource` must be the server's URL (or a
// URL it lies under: same scheme, host and port, and a path prefix ending at
// a segment boundary); the authorization server's `issuer` must equal the
// issuer its metadata was looked up for, exactly (RFC 8414 section 3.3), and
// it must offer PKCE S256 (advertised, or, for the 2025-03-26 fallback,
// assumed) and an authorization or token endpoint.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "messages/status.hpp"

namespace voxos::auth {

/// RFC 9728 protected-resource metadata, the fields used.
struct resource_metadata {
  std::string resource;
  std::vector<std::string> authorization_servers;
  std::vector<std::string> scopes_supported;
  bool has_scopes_supported = false;
};

/// RFC 8414 / OpenID discovery, the fields used.
struct server_metadata {
  std::string issuer;
  std::string authorization_endpoint;
  std::string token_endpoint;
  std::string registration_endpoint;
  std::vector<std::string> scopes_supported;
  std::vector<std::string> response_types_supported;
  std::vector<std::string> grant_types_supported;
  std::vector<std::string> code_challenge_methods_supported;
  std::vector<std::string> token_endpoint_auth_methods_supported;
  bool client_id_metadata_document_supported = false;
  bool iss_parameter_supported = false; ///< authorization_response_iss_parameter_supported
  /// Taken from the 2025-03-26 defaults, not from a document.
  bool defaulted = false;
};

/// Whether `list` holds `value`.
bool lists(const std::vector<std::string>& list, std::string_view value);

/// The protected-resource metadata URLs to try for the server at `server_url`,
/// in order (the path-inserted one first, the root one second; one URL when
/// the server's path is "/").
std::vector<std::string> resource_metadata_urls(std::string_view server_url);

/// The authorization-server metadata URLs to try for `issuer`, in order.
std::vector<std::string> server_metadata_urls(std::string_view issuer);

/// The origin of `url` ("https://host[:port]"), or "" if it does not parse.
std::string origin_of(std::string_view url);

/// Reads a protected-resource metadata document. Errors (bad_json): not an
/// object, `resource` missing or not a string, a field of the wrong type.
result<resource_metadata> parse_resource_metadata(const nlohmann::json& doc);

/// Whether `resource` (from the metadata) names the server at `server_url`:
/// equal after normalisation, or the server's URL lies under it.
bool resource_matches(std::string_view resource, std::string_view server_url);

/// Reads an authorization-server metadata document. Errors (bad_json): not
/// an object, `issuer` missing, a field of the wrong type.
result<server_metadata> parse_server_metadata(const nlohmann::json& doc);

/// The 2025-03-26 defaults for an authorization server at `origin`.
server_metadata default_server_metadata(std::string_view origin);

} // namespace voxos::auth
