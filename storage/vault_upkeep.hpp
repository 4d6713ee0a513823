// The node keys' upkeep over the vault column family: the check a node makes
// at start, the usage of each key, and resealing under the active key. CAF-free.
//
// Rotation: the node's vault holds one active key, which seals everything
// new, and any retired keys, which only open. Every value of the vault column
// family is sealed by the node's vault for its own (tenant, record id) (see
// event_db.hpp), so reseal_batch can move each one that names a retired key
// to the active key without knowing what it is. Values sealed for a server
// sit in events, but under that server's data key (server_keys.hpp), which
// lives here: rotation never rewrites the append-only log. A retired key can
// be dropped from the configuration once no value of the vault column family
// names it.
//
// What a dropped key still leaves behind: values that nodes before per-server
// data keys sealed directly under a node key inside events (a server's static
// headers) stay in those events; they open while that key is configured, and
// once it is dropped nothing opens them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/status.hpp"

namespace voxos {

class event_db;
class vault;

namespace vault_upkeep {

/// How many values of the vault column family name one key id.
struct key_usage {
  std::string key_id;
  bool active = false;     ///< the key that seals new values
  bool configured = false; ///< the node holds it (active or retired)
  uint64_t values = 0;
};

/// The check a node makes at start, before it serves anything. Every key id
/// that a value of the vault column family names must be one of `keys`, and
/// the first value found under each must open with it; on a first start the
/// canary (a known text under the active key) is sealed, so a store always
/// holds a value proving its keys. Answers the usage of every key of `keys`
/// (the active one first, then by key id). Errors: config_invalid naming the key
/// id that is not configured ("... sealed under key 'k1', which is not
/// configured ..."), vault_open_failed naming a key id whose configured key
/// does not open its values (a wrong key under that id); storage_failure.
/// Never key bytes.
result<std::vector<key_usage>> check_at_start(event_db& db, const vault& keys);

/// The usage of every key id of `keys` and of any other id a value names
/// (not configured: a start would refuse it), active first.
result<std::vector<key_usage>> usage(const event_db& db, const vault& keys);

/// Where a reseal pass is, and what its last batch did.
struct reseal_cursor {
  std::string after_tenant; ///< empty: from the start
  std::string after_record;
  bool done = false;     ///< the pass reached the end of the column family
  uint64_t resealed = 0; ///< values moved to the active key, over the pass
  uint64_t unopened = 0; ///< values whose key did not open them (left as they are)
};

/// Reseals, under the active key of `keys`, the values among the next
/// `max_values` of the vault column family (after `cursor`) that name
/// another key, and moves the cursor past them. A value that changed or went
/// (erased) since it was read is left alone (event_db::replace_sealed).
/// Errors: storage_failure; the cursor is then as it was.
[[nodiscard]] status reseal_batch(event_db& db, const vault& keys, std::size_t max_values,
                                  reseal_cursor& cursor);

} // namespace vault_upkeep

} // namespace voxos
