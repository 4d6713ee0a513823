// The event_store actor: the node's only door to RocksDB (storage/event_db).
//
// Group commit with two actors: the event_store itself (scheduled) takes
// appends and answers them, and a detached writer (its own thread, because a
// WAL sync blocks) commits one group at a time. Appends go into an intake the
// two share; each time the writer starts a group it takes everything pending
// (up to max_batch_requests), so every append that arrives while a group is
// being written joins the next one, concurrent writers share one fsync, and an
// idle store adds no delay. The event_store keeps up to two commit requests
// out, so the writer starts the next group as soon as the current one is
// durable, while the event_store answers the finished one. An append is
// acknowledged only after its group is durable, in the order appends arrived,
// except a `sync_deferred` one (a record of what already happened): a group
// of only those is written without a sync and acknowledged, and becomes
// durable with the next synced group, or by a WAL sync `deferred_sync`
// later at the latest.
// Reads run on the event_store's own turn, concurrently with the writer
// (RocksDB allows that; event_db keeps its append state to one thread), but
// never ahead of an append: a read that arrives while appends are on their
// way runs once every append that arrived before it is answered, so a
// reader sees what was appended before it asked (read your writes).
//
// Lifecycle:  serving --(exit message)--> closed: the writer is linked and
//             exits with it; unanswered appends get broken-promise errors;
//             RocksDB closes when the last of the two states is destroyed.
#pragma once

#include <chrono>
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
  // A page of one tenant's events in key order (storage/event_db.hpp,
  // tenant_query): tenant, stream name prefix, the last event read (stream
  // and sequence; "" from the first), at most `limit` (capped at 10,000).
  caf::replies_to<scan_atom, std::string, std::string, std::string, uint64_t,
                  uint32_t>::with<std::vector<event_record>>,
  // Reads projection entries whose key starts with a prefix (at most `limit`).
  caf::replies_to<scan_atom, state_atom, std::string, uint32_t>::with<std::vector<state_entry>>,
  // Re-reads every event and projection; answers what it checked or corrupt_data.
  caf::replies_to<verify_atom>::with<store_report>,
  // Answers true if RocksDB serves reads.
  caf::replies_to<health_atom>::with<bool>>;

struct event_store_options {
  /// The most append requests one group (one write batch, one sync) takes;
  /// the rest wait for the next group.
  std::size_t max_batch_requests = 4096;
  /// The longest a `sync_deferred` append stays written but not synced
  /// (unless a synced group comes first): one WAL sync at most this often
  /// for a store that takes only deferred appends.
  std::chrono::milliseconds deferred_sync{100};
};

/// Spawns the event store and its writer over an opened database.
event_store_actor spawn_event_store(caf::actor_system& sys, std::shared_ptr<event_db> db,
                                    node_metrics& metrics, event_store_options opts);

} // namespace voxos
