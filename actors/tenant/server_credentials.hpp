// A server's credentials: its static headers sealed under the server's data
// key (storage/server_keys.hpp), and the node's start-up upkeep of them.
// CAF-free.
//
// A record's `sealed_headers` is standard base64 of a value sealed with
// server_keys::seal_for_server for (tenant, server id, "headers"). Deleting
// the server erases its data key, and with it every copy of those headers in
// the append-only log.
//
// Nodes before per-server data keys sealed the headers directly under the
// node key, for the record "server/<id>/headers". upkeep_at_start reseals
// such headers under the server's data key (a server.upserted event with the
// new value). The earlier events keep the old value: it opens while the
// node key that sealed it is configured, and with nothing once that key is
// rotated out and dropped (storage/vault_upkeep.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/tenant_model.hpp"
#include "messages/status.hpp"
#include "transport/http_client.hpp"

namespace voxos {

class event_db;
class server_keys;
class vault;

namespace server_credentials {

/// The purpose a server's static headers are sealed for.
inline constexpr std::string_view headers_purpose = "headers";

/// `headers` sealed for the server: the text of mcp_server_record::sealed_headers.
/// Errors as server_keys::seal_for_server.
result<std::string> seal_headers(server_keys& keys, const std::string& tenant_id,
                                 const std::string& server_id, const http_header_list& headers);

/// The headers a server's requests carry: none when the record has none.
/// Errors: corrupt_data (not base64, or not the headers' text), and those of
/// server_keys::open_for_server.
result<http_header_list> open_headers(server_keys& keys, const std::string& tenant_id,
                                      const mcp_server_record& rec);

/// Purposes of a server's OAuth values (OAuth modes), sealed the same way.
inline constexpr std::string_view oauth_client_purpose = "oauth-client";
inline constexpr std::string_view oauth_tokens_purpose = "oauth-tokens";
inline constexpr std::string_view sign_in_purpose = "sign-in";

/// `plaintext` sealed for the server and `purpose`, as standard base64 (the
/// form a record keeps). Errors as server_keys::seal_for_server.
result<std::string> seal_text(server_keys& keys, const std::string& tenant_id,
                              const std::string& server_id, std::string_view purpose,
                              std::string_view plaintext);

/// What seal_text sealed. Errors: corrupt_data (not base64), and those of
/// server_keys::open_for_server.
result<std::string> open_text(server_keys& keys, const std::string& tenant_id,
                              const std::string& server_id, std::string_view purpose,
                              const std::string& sealed_base64);

/// What upkeep_at_start did.
struct upkeep_report {
  std::size_t resealed = 0; ///< servers whose headers moved to their data key
  std::size_t swept = 0;    ///< data keys erased whose server no longer exists
};

/// Run by the node at start, before any actor, on the thread that opened the
/// store: (1) for every server of `tenant_ids` whose headers are sealed under
/// a node key, reseals them under the server's data key and appends one
/// server.upserted event per server (one append per tenant); (2) erases the
/// data keys of servers that no longer exist: a deletion stopped between its
/// event and the erasure, or a creation stopped before its event. Errors:
/// config_invalid naming the node key id that sealed a server's headers when
/// it is not configured, vault_open_failed when it does not open them, and
/// storage errors; the store is then as the last completed tenant left it.
result<upkeep_report> upkeep_at_start(event_db& db, server_keys& keys, const vault& node_keys,
                                      const std::vector<std::string>& tenant_ids, int64_t now_us);

} // namespace server_credentials

} // namespace voxos
