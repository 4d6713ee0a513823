// Creating a tenant's MCP server record, from a preset or as a custom server,
// and folding a connection test's discovery into it. CAF-free.
//
// A create request (HTTP `POST /v1/servers`) is a JSON object:
//   preset_id   a preset of the catalog (config/presets.hpp); its identity,
//               transport, URL (or the variant's) and auth mode are taken
//               from the preset, its starter grants become the allowlist
//   variant     the preset variant, where the preset has variants
//   url         required for a custom server and for presets whose URL is a
//               rule ("https_any"); refused otherwise (a preset's URL is its
//               identity)
//   transport   custom only: "streamable_http" (default) or "sse"
//   auth        custom only: "oauth_authorization_code" (the owner signs in
//               through the browser), "oauth_client_credentials" or
//               "private_key_jwt" (a machine client given afterwards), or
//               "brokered_oauth" (signs in by browser; takes exactly its
//               endpoint bearer in headers, and its requests carry broker
//               assertions, never the provider's token); such a server
//               starts needing auth
//   label       1..200 bytes; defaults to the preset's label or the host
//   headers     {name: value}: static request headers (at most 16; names of
//               1..64 token characters, values 1..4096 visible ASCII). A
//               custom server with headers gets auth "static_headers"; a
//               preset with an API-key header requires exactly that header,
//               a static-bearer one exactly "Authorization: Bearer ...".
//               Headers the transport owns (Host, Accept, Content-Type,
//               Mcp-Session-Id, ...) are refused.
// The URL passes url_policy::check for the "mcp" purpose: https and public,
// or registered exactly (Local Compose presets are offered only then).
// stdio command lines are refused. A new server is disabled, untrusted and
// not connected: it goes through the test-and-grant flow.
//
// Errors name fields and rules, never values: missing_field, unknown_field,
// wrong_type, out_of_range, not_found (preset, variant), forbidden (URL
// policy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/tenant/tenant_model.hpp"
#include "messages/status.hpp"
#include "transport/http_client.hpp"
#include "transport/url_policy.hpp"

namespace voxos::server_setup {

struct new_server {
  mcp_server_record record; ///< sealed_headers still empty: the caller seals `headers`
  http_header_list headers;
};

result<new_server> from_request(const nlohmann::json& body, const url_policy& policy,
                                const std::string& tenant_id, const std::string& server_id);

/// Whether `mode` is one of the OAuth modes (a sign-in or a client, then tokens).
inline bool is_oauth(auth_mode mode) {
  return mode == auth_mode::oauth_authorization_code || mode == auth_mode::oauth_client_credentials
         || mode == auth_mode::private_key_jwt || mode == auth_mode::brokered_oauth;
}

/// Whether the owner signs in to `mode`'s server through the browser.
inline bool signs_in_by_browser(auth_mode mode) {
  return mode == auth_mode::oauth_authorization_code || mode == auth_mode::brokered_oauth;
}

/// The headers as the text that is sealed, and back.
std::string headers_to_text(const http_header_list& headers);
result<http_header_list> headers_from_text(std::string_view text);

/// A record after a successful connection test that discovered `tools`: the
/// cache bounded to `max_tools` (allowlisted tools first), a new cache
/// version, the discovery time, connected, and the test recorded as passed.
mcp_server_record with_discovery(mcp_server_record rec, std::vector<tool_definition> tools,
                                 std::size_t max_tools, int64_t now_us);

/// A record after a failed connection test: not connected (its cache stays
/// for the next test), and the test recorded with the error it answered.
mcp_server_record with_failed_test(mcp_server_record rec, errc code, std::string message,
                                   int64_t now_us);

/// The preset catalog as an owner may create from it (HTTP `GET
/// /v1/catalog`), in catalog order: per preset its id, label, transport,
/// auth mode (with the API-key header's name, or whether the provider
/// registers clients itself), whether the URL is the owner's (`url_required`)
/// or fixed (`url`), its variants {id, label, url}, and its curated tools
/// {name, read_only, enabled_by_default, starter_grant, risk}. Local Compose
/// presets are listed only where `policy` registers their exact URL (as
/// from_request requires). The catalog holds no secret.
nlohmann::json offered_catalog(const url_policy& policy);

} // namespace voxos::server_setup
