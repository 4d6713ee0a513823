// The one error vocabulary of the node. CAF-free: every layer may use it.
#pragma once

#include <cstdint>
#include <string_view>

namespace voxos {

/// Stable error codes. Values start at 1 (0 means "no error" to CAF) and are
/// never renumbered: they cross the CAF network and appear in the HTTP API
/// as their `to_string` names.
enum class errc : uint8_t {
  bad_json = 1,           ///< a body or message is not well-formed JSON
  unknown_field,          ///< an object carries a field the entry point does not accept
  wrong_type,             ///< a field has the wrong JSON type
  missing_field,          ///< a required field is absent
  out_of_range,           ///< a value is too long, too large or not in its allowed set
  body_too_large,         ///< a request body exceeds the configured limit
  unsupported_media_type, ///< a body that is not application/json
  unauthorized,           ///< no credential, or one that matches nothing
  forbidden,              ///< a valid credential that may not do this
  not_found,              ///< the addressed record does not exist (for this tenant)
  method_not_allowed,     ///< the route exists, the method does not
  conflict,               ///< the request contradicts stored state
  sequence_conflict,      ///< an append expected another next sequence number
  storage_failure,        ///< RocksDB refused a read or write
  data_dir_locked,        ///< the data directory is held by another process
  corrupt_data,           ///< a stored record does not decode
  vault_open_failed,      ///< a sealed value did not authenticate (tampered, moved or wrong key)
  config_invalid,         ///< a configuration entry is malformed or unsafe
  unavailable,            ///< a component is not running or timed out
  internal,               ///< a broken invariant; details go to the log, never to clients
  rejected,               ///< the server refused the request's content (HTTP 400/422)
  too_many_requests,      ///< the caller already has as many of these in progress as it may
  server_error,           ///< an MCP server answered a JSON-RPC error (its code says which)
  needs_auth,             ///< an MCP server's credentials are missing, revoked or past refresh
};

/// The stable snake_case name of `code`, e.g. "body_too_large".
std::string_view to_string(errc code) noexcept;

} // namespace voxos
