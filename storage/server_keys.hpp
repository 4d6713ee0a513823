// Per-server data keys, for crypto-erasure of what is sealed for an MCP
// server. CAF-free.
//
// Each (tenant, server) gets a data key of its own: 32 random bytes, made on
// the first seal for that server and stored in the vault column family as
// record "server-key.<server id>" of the tenant, sealed by the node's vault
// under its active key (so key rotation reseals it like any vault value).
// The data key never enters the event log. Everything sealed for the server
// (its static headers today; OAuth client details, PKCE verifiers and tokens
// next) is sealed under that data key, so the sealed values may sit in
// events, projections and their backups: erasing the one record makes every
// copy of them impossible to open, with any key the node holds.
//
// A sealed value has the vault's format (storage/vault.hpp) with the key id
// "sk:<server id>" (node key ids cannot hold ':'), sealed for the tenant and
// the record "server/<server id>/<purpose>": it opens only for its tenant,
// server and purpose, and only under that server's data key.
//
// Threading: every member may be called from any thread. Opened data keys are
// cached in memory (wiped when erased or on destruction); one mutex guards
// the cache and the making of a key. Contract: nobody seals or opens for a
// server while its key is being erased (the tenant actor, the only caller for
// its servers, deletes a server before it erases the key).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/status.hpp"

namespace voxos {

class event_db;
class vault;

class server_keys {
public:
  /// `node_keys` seals new data keys under its active key and opens stored
  /// ones under whichever of its keys they name; `db` stores them.
  server_keys(std::shared_ptr<const vault> node_keys, std::shared_ptr<event_db> db);
  ~server_keys();
  server_keys(const server_keys&) = delete;
  server_keys& operator=(const server_keys&) = delete;

  /// Seals `plaintext` for (tenant, server, purpose) under the server's data
  /// key, making and storing the key (synced) if the server has none yet.
  /// Errors: out_of_range for a malformed tenant, server id or purpose (see
  /// valid_server_id, valid_purpose); vault_open_failed if the stored data
  /// key does not open with the node's keys; storage_failure; internal if
  /// the random generator or OpenSSL fails.
  [[nodiscard]] result<std::string> seal_for_server(std::string_view tenant,
                                                    std::string_view server_id,
                                                    std::string_view purpose,
                                                    std::string_view plaintext);

  /// Opens what seal_for_server sealed for the same (tenant, server,
  /// purpose). Never makes a key. Errors: out_of_range as above;
  /// vault_open_failed for a value that is tampered, truncated, moved to
  /// another tenant, server or purpose, or sealed under anything but this
  /// server's data key, and (with its own message) when the server has no
  /// data key (erased with the server); storage_failure. No message holds
  /// key or plaintext bytes.
  [[nodiscard]] result<std::string> open_for_server(std::string_view tenant,
                                                    std::string_view server_id,
                                                    std::string_view purpose,
                                                    std::string_view sealed);

  /// Erases the server's data key for good: from the cache (wiped), then
  /// from the database with event_db::erase_sealed (read there what remains).
  /// Everything ever sealed for the server stops opening. Erasing a key that
  /// does not exist is ok (and cheap). Blocks for a flush and a compaction.
  [[nodiscard]] status erase_server_key(std::string_view tenant, std::string_view server_id);

  /// Every (tenant, server id) that has a stored data key, in key order.
  result<std::vector<std::pair<std::string, std::string>>> stored_keys() const;

  /// 1 .. 53 characters of [a-z0-9_.-] (the record id keeps to keys.hpp).
  static bool valid_server_id(std::string_view server_id) noexcept;
  /// 1 .. 32 characters of [a-z0-9_.-], e.g. "headers", "oauth.client".
  static bool valid_purpose(std::string_view purpose) noexcept;
  /// The vault record a server's data key is stored under: "server-key.<id>".
  static std::string key_record(std::string_view server_id);
  /// The key id values sealed under a server's data key name: "sk:<id>".
  static std::string data_key_id(std::string_view server_id);

private:
  /// The server's data key as a vault, from the cache or the database; made
  /// and stored first when `make` and the server has none; nullptr when it
  /// has none and not `make`. Holds mtx_ meanwhile.
  result<std::shared_ptr<const vault>> data_key(const std::string& tenant,
                                                const std::string& server_id, bool make);

  std::shared_ptr<const vault> node_keys_;
  std::shared_ptr<event_db> db_;
  std::mutex mtx_;
  /// "<tenant>/<server id>" → the opened data key.
  std::map<std::string, std::shared_ptr<const vault>> cache_;
};

} // namespace voxos
