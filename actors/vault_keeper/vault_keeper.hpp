// The vault keeper: the node's upkeep of sealed values, on a thread of its own
// (detached) because each of its jobs blocks on RocksDB: it erases the data
// keys of deleted servers (a flush and a compaction each), reseals under the
// active node key every vault value that names a retired one, and reports
// which keys are in use. One per node.
//
// The reseal pass starts when the keeper does and runs in batches of
// `reseal_batch` values, one batch a message, so that erasures and reports
// are answered between batches; it never blocks the node's start. It reseals
// the vault column family only (storage/vault_upkeep.hpp): values sealed for
// a server sit in events under that server's data key, which is what the
// pass reseals.
//
// Lifecycle:  resealing --(pass reaches the end, or a storage error)--> idle
//             either --(exit message)--> gone; a batch in progress finishes first.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"

namespace voxos {

class event_db;
class server_keys;
class vault;

using vault_keeper_actor = caf::typed_actor<
  // Erases the data key of a deleted server (tenant id, server id) for good
  // (storage/server_keys.hpp); answers true once it is gone from the files,
  // or the storage error.
  caf::replies_to<erase_atom, server_atom, std::string, std::string>::with<bool>,
  // The keys report as JSON: {"active", "keys": [{"key_id", "state" (active |
  // retired | missing), "values", "droppable"}], "reseal": {"done",
  // "resealed", "unopened", "failed"}}. A retired key is droppable when no
  // value of the vault column family names it. With `true`, answers once the
  // reseal pass has ended.
  caf::replies_to<list_atom, vault_atom, bool>::with<std::string>,
  // To itself: the reseal pass's next batch.
  caf::reacts_to<reseal_atom>>;

struct vault_keeper_options {
  /// Values one reseal batch reads (and at most reseals, in one synced write).
  std::size_t reseal_batch = 64;
};

/// Spawns the keeper (detached) over the node's store, vault and server keys;
/// its reseal pass starts at once.
vault_keeper_actor spawn_vault_keeper(caf::actor_system& sys, std::shared_ptr<event_db> db,
                                      std::shared_ptr<const vault> node_keys,
                                      std::shared_ptr<server_keys> keys, vault_keeper_options opts);

} // namespace voxos
