// The event_store actor: the node's only door to RocksDB (storage/event_db).
//
// Runs detached (its own thread) because a WAL sync blocks. Appends are group
// committed: every append already in the mailbox when a flush runs shares one
// write batch and one sync, so concurrent writers pay one fsync together.
// An append is acknowledged only after its batch is durable.
//
// Lifecycle:  serving --(exit message)--> closed (pending appends fail,
//             the database closes when the actor's state is destroyed)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "messages/atoms.hpp"
#include "messages/types.hpp"

namespace voxos {

class event_db;
class node_metrics;

using event_store_actor = caf::typed_actor<
  // Appends events to one stream durably, with their projection updates;
  // answers the sequence numbers, or a validation/sequence/storage error.
  caf::replies_to<append_atom, append_request>::with<append_result>,
  // Reads one stream from a sequence number (at most 10,000 events).
  caf::replies_to<read_atom, stream_query>::with<std::vector<event_record>>,
  // Reads the first `limit` events of one tenant across its streams.
  caf::replies_to<scan_atom, std::string, uint32_t>::with<std::vector<event_record>>,
  // Re-reads every event and projection; answers what it checked or corrupt_data.
  caf::replies_to<verify_atom>::with<store_report>,
  // Answers true if RocksDB serves reads.
  caf::replies_to<health_atom>::with<bool>,
  // Internal (sent to itself): commits the pending group.
  caf::reacts_to<flush_atom>>;

struct event_store_options {
  std::size_t max_batch_requests = 4096;  ///< a group larger than this flushes at once
};

/// Spawns the event store (detached) over an opened database.
event_store_actor spawn_event_store(caf::actor_system& sys, std::shared_ptr<event_db> db,
                                    node_metrics& metrics, event_store_options opts);

} // namespace voxos
