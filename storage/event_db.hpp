// The event store over RocksDB: append-only events per (tenant, stream) with
// gap-free sequences, projections updated in the same write batch as the
// events that cause them, and a vault column family for sealed secrets.
// CAF-free; the event_store actor (actors/event_store) is its only owner in a
// running node.
//
// Threading: append_group/append/next_seq from one thread at a time (they
// keep the stream heads); reads may run concurrently on others. The vault
// functions touch no stream heads and may run on any thread: their writes
// take a lock of their own, so a conditional write (put_sealed_if_absent,
// replace_sealed) sees no other vault write between its read and its write.
// Durability: with `sync`, append_group returns only after one WAL fsync that
// covers every request of the group; every vault write is synced the same way.
//
// The vault column family holds values sealed by the node's vault
// (storage/vault.hpp) for the (tenant, record id) of their own key: the
// canary, the per-server data keys (storage/server_keys.hpp). That is what
// lets storage/vault_upkeep reseal each under a new node key knowing nothing
// else about it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "messages/status.hpp"
#include "messages/types.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
} // namespace rocksdb

namespace voxos {

/// One change to the `state` column family; no value means delete.
struct state_write {
  std::string key;
  std::optional<std::string> value;
};

/// Maps one event to the projection changes it causes. Must be a pure
/// function of the event: it runs on append and again on every rebuild.
/// A failure on append refuses that request; on rebuild it refuses to open.
using projector = std::function<status(const event_record&, std::vector<state_write>&)>;

struct event_db_options {
  bool sync = true;
  std::size_t max_event_bytes = 4 * 1024 * 1024;
  std::size_t max_events_per_append = 1024;
  std::vector<projector> projectors;
};

/// A page of one tenant's events in key order (stream name, then sequence):
/// those of streams whose name starts with `stream_prefix` (every stream
/// when empty), after the event (`after_stream`, `after_seq`), from the
/// first when `after_stream` is empty; at most `limit` (capped at 10,000).
/// To page through, pass the stream and sequence of a page's last event.
struct tenant_query {
  std::string tenant;
  std::string stream_prefix;
  std::string after_stream;
  uint64_t after_seq = 0;
  uint32_t limit = 1000;
};

/// One value of the vault column family.
struct sealed_entry {
  std::string tenant;
  std::string record_id;
  std::string sealed;
};

/// A conditional replacement of one vault value (replace_sealed).
struct sealed_replacement {
  std::string tenant;
  std::string record_id;
  std::string expected; ///< applies only while the record holds exactly this
  std::string replacement;
};

class event_db {
public:
  /// Opens (creating if missing, mode 0700) the database in `dir`, drops and
  /// rebuilds every projection from the events, and loads stream heads.
  /// Errors: data_dir_locked (another process holds it), corrupt_data (an
  /// event that does not decode, a sequence gap, a projector refusing an
  /// event), storage_failure (anything else RocksDB reports).
  static result<std::unique_ptr<event_db>> open(const std::string& dir, event_db_options opts);
  ~event_db();
  event_db(const event_db&) = delete;
  event_db& operator=(const event_db&) = delete;

  /// Appends every request of the group in one write batch (one WAL sync).
  /// Each request is validated on its own: a refused request (bad names,
  /// oversized or non-object data, sequence_conflict, projector refusal) gets
  /// its error and does not affect the others. If the write itself fails,
  /// every accepted request fails with storage_failure and nothing is applied.
  /// A group whose accepted requests are all `sync_deferred` is written
  /// without a sync; the next synced write (or sync_wal) makes it durable.
  std::vector<result<append_result>> append_group(const std::vector<const append_request*>& group,
                                                  int64_t now_us);

  /// Convenience for one request.
  result<append_result> append(const append_request& req, int64_t now_us);

  /// Whether a deferred group was written since the WAL was last synced
  /// (always false without WAL sync).
  bool wal_unsynced() const noexcept { return wal_unsynced_.load(std::memory_order_relaxed); }

  /// Syncs the WAL if a deferred group left it unsynced; answers whether it
  /// did. On any thread (RocksDB syncs the WAL beside writes).
  result<bool> sync_wal();

  /// Events of one stream from `from_seq` (or the newest, with
  /// stream_query::newest), at most `limit` (capped at 10,000), in order.
  result<std::vector<event_record>> read_stream(const stream_query& query) const;

  /// Events of one tenant across streams in key order, at most `limit`.
  result<std::vector<event_record>> read_tenant(const std::string& tenant, uint32_t limit) const;

  /// A page of one tenant's events (see tenant_query); a malformed tenant,
  /// prefix or stream name is out_of_range.
  result<std::vector<event_record>> read_tenant(const tenant_query& query) const;

  /// The next sequence number of (tenant, stream): 1 for an empty stream.
  result<uint64_t> next_seq(const std::string& tenant, const std::string& stream);

  /// A projection value, if present.
  result<std::optional<std::string>> get_state(const std::string& key) const;

  /// Projection entries whose key starts with `prefix`, in key order.
  result<std::vector<std::pair<std::string, std::string>>> scan_state(const std::string& prefix,
                                                                      std::size_t limit) const;

  /// Sealed secrets (see storage/vault.hpp), keyed "<tenant>/<record id>";
  /// a tenant or record id that keys.hpp does not allow is out_of_range.
  [[nodiscard]] status put_sealed(const std::string& tenant, const std::string& record_id,
                                  const std::string& sealed);
  result<std::optional<std::string>> get_sealed(const std::string& tenant,
                                                const std::string& record_id) const;

  /// Stores `sealed` unless the record holds a value already; answers the
  /// value the record holds afterwards (`sealed`, or the one found).
  result<std::string> put_sealed_if_absent(const std::string& tenant, const std::string& record_id,
                                           const std::string& sealed);

  /// Applies, in one synced write batch, each replacement whose record still
  /// holds exactly its `expected` value; the others (changed or erased since
  /// they were read) are skipped. Answers how many were applied.
  result<std::size_t> replace_sealed(const std::vector<sealed_replacement>& replacements);

  /// Deletes a vault record for good: the delete is synced, then every
  /// column family's memtable is flushed (so the write-ahead log files that
  /// held the value stop being needed), the vault column family's files are
  /// compacted down to the bottommost level, where the value and its
  /// tombstone both drop (and what an earlier erasure that failed half-way
  /// left), and before returning this thread deletes
  /// the files that became obsolete (file deletions are held off meanwhile,
  /// so no background job deletes them later instead). When it returns, no
  /// file of the database holds the value, unless a reader still pinned an
  /// old file (a read in flight): that file goes when the read ends.
  /// What it cannot reach: blocks of deleted files that the file system or
  /// the disk has not reused yet. Erasing an absent record is ok. Blocks for
  /// the flush and the compaction: call it off latency-sensitive threads.
  [[nodiscard]] status erase_sealed(const std::string& tenant, const std::string& record_id);

  /// Vault values in key order, from the first after the record
  /// (`after_tenant`, `after_record`) — from the start when `after_tenant` is
  /// empty — at most `limit` of them.
  result<std::vector<sealed_entry>> scan_sealed(const std::string& after_tenant,
                                                const std::string& after_record,
                                                std::size_t limit) const;

  /// Re-reads every event, checks each decodes and every stream is gap-free
  /// from 1, and compares the projections with a fresh replay.
  result<store_report> verify() const;

  /// Health probe: a read against RocksDB succeeds.
  [[nodiscard]] status check_health() const;

  /// Bytes in SST files and memtables across column families (RocksDB's
  /// figures; write-ahead log files not counted). Safe from any thread.
  uint64_t size_bytes() const;

private:
  event_db() = default;
  status rebuild_projections();
  status replay(const std::function<status(const event_record&)>& each) const;
  status project(const event_record& ev, std::vector<state_write>& out) const;

  event_db_options opts_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* events_ = nullptr;
  rocksdb::ColumnFamilyHandle* state_ = nullptr;
  rocksdb::ColumnFamilyHandle* vault_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_ = nullptr;
  // Next sequence per stream prefix "<tenant>/<stream>/", loaded lazily.
  std::unordered_map<std::string, uint64_t> heads_;
  // A deferred group was written after the last synced write (written on the
  // appending thread; read anywhere, e.g. by a test).
  std::atomic<bool> wal_unsynced_{false};
  // Held by every write to the vault column family.
  std::mutex vault_mtx_;
};

} // namespace voxos
