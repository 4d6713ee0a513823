// The event store over RocksDB: append-only events per (tenant, stream) with
// gap-free sequences, projections updated in the same write batch as the
// events that cause them, and a vault column family for sealed secrets.
// CAF-free; the event_store actor (actors/event_store) is its only owner in a
// running node.
//
// Threading: append_group/append/next_seq/put_sealed from one thread at a
// time (they keep the stream heads); reads may run concurrently on others.
// Durability: with `sync`, append_group returns only after one WAL fsync that
// covers every request of the group.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
  std::vector<result<append_result>> append_group(const std::vector<const append_request*>& group,
                                                  int64_t now_us);

  /// Convenience for one request.
  result<append_result> append(const append_request& req, int64_t now_us);

  /// Events of one stream from `from_seq` (or the newest, with
  /// stream_query::newest), at most `limit` (capped at 10,000), in order.
  result<std::vector<event_record>> read_stream(const stream_query& query) const;

  /// Events of one tenant across streams in key order, at most `limit`.
  result<std::vector<event_record>> read_tenant(const std::string& tenant, uint32_t limit) const;

  /// The next sequence number of (tenant, stream): 1 for an empty stream.
  result<uint64_t> next_seq(const std::string& tenant, const std::string& stream);

  /// A projection value, if present.
  result<std::optional<std::string>> get_state(const std::string& key) const;

  /// Projection entries whose key starts with `prefix`, in key order.
  result<std::vector<std::pair<std::string, std::string>>> scan_state(const std::string& prefix,
                                                                      std::size_t limit) const;

  /// Sealed secrets (see storage/vault.hpp), keyed "<tenant>/<record id>".
  [[nodiscard]] status put_sealed(const std::string& tenant, const std::string& record_id,
                                  const std::string& sealed);
  result<std::optional<std::string>> get_sealed(const std::string& tenant,
                                                const std::string& record_id) const;

  /// Re-reads every event, checks each decodes and every stream is gap-free
  /// from 1, and compares the projections with a fresh replay.
  result<store_report> verify() const;

  /// Health probe: a read against RocksDB succeeds.
  [[nodiscard]] status check_health() const;

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
};

} // namespace voxos
