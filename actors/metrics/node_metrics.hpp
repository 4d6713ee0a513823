// Metrics the node keeps itself (CAF 0.17 has no telemetry). CAF-free: actors
// update it, the HTTP API renders it. One instance per node, created before
// and destroyed after every actor that writes to it.
//
// Threading: every update is a relaxed atomic; readers see a consistent-enough
// snapshot for monitoring, not a transaction.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace voxos {

/// Counters for one kind of actor (event_store, directory, run_host, ...).
struct actor_counters {
  std::atomic<int64_t> running{0};
  std::atomic<uint64_t> messages{0};
  std::atomic<uint64_t> mailbox_depth{0};     ///< last sampled
  std::atomic<uint64_t> mailbox_depth_max{0}; ///< highest sampled

  /// Called by the actor inside each handler with its own mailbox size.
  void on_message(uint64_t depth) noexcept;
};

/// A latency histogram with fixed microsecond buckets.
class latency_histogram {
public:
  static constexpr std::array<uint64_t, 12> bounds_us{50,   100,   250,   500,   1000,   2500,
                                                      5000, 10000, 25000, 50000, 100000, 1000000};

  void observe(uint64_t micros) noexcept;
  uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
  uint64_t sum_us() const noexcept { return sum_us_.load(std::memory_order_relaxed); }
  /// Appends Prometheus `_bucket`, `_sum` (seconds) and `_count` lines for `name`.
  void render(std::string& out, const std::string& name) const;

private:
  std::array<std::atomic<uint64_t>, bounds_us.size() + 1> buckets_{};
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_us_{0};
};

class node_metrics {
public:
  node_metrics();

  /// The counters of one actor kind; the reference stays valid for the
  /// lifetime of this object. Kinds are created on first use.
  actor_counters& actor(const std::string& kind);

  // -- event store ---------------------------------------------------------
  std::atomic<uint64_t> appended_events{0};
  std::atomic<uint64_t> append_requests{0};
  std::atomic<uint64_t> append_failures{0};
  std::atomic<uint64_t> write_batches{0};
  latency_histogram sync_latency;   ///< one RocksDB write (with WAL sync) per batch
  latency_histogram append_latency; ///< request arrival to acknowledgement
  /// Bytes the store holds in SST files and memtables, across column
  /// families (write-ahead log files not counted): sampled at its start and
  /// after write batches, at most once a second (event_store.cpp).
  std::atomic<uint64_t> store_bytes{0};

  // -- runs ----------------------------------------------------------------
  /// One wave of a tool-calls round: sent until its last call answered.
  latency_histogram wave_latency;
  /// One call sent in a wave: its round's start to its answer (earlier waves
  /// of the round included), the duration the run's activity shows.
  latency_histogram call_latency;

  // -- HTTP API ------------------------------------------------------------
  std::atomic<uint64_t> http_requests{0};
  std::atomic<uint64_t> http_errors{0}; ///< responses with status >= 400
  /// Requests holding a worker thread while they wait (activity streams,
  /// tool-call rounds), and those refused for want of a held slot.
  std::atomic<uint64_t> http_held_requests{0};
  std::atomic<uint64_t> http_held_refused{0};

  // -- CAF run host --------------------------------------------------------
  /// Runs the run host remembers for the agent hosts that started them (to
  /// cancel them when their host becomes unreachable).
  std::atomic<uint64_t> hosted_runs{0};

  // -- queued work (actors/work) ---------------------------------------------
  /// Items queued and not settled, across tenants; worker actors registered.
  std::atomic<uint64_t> work_pending{0};
  std::atomic<uint64_t> work_workers{0};
  /// Items queued, completed, failed or cancelled; leases that expired or
  /// whose host went away (each such item is offered again).
  std::atomic<uint64_t> work_enqueued{0};
  std::atomic<uint64_t> work_completed{0};
  std::atomic<uint64_t> work_failed{0};
  std::atomic<uint64_t> work_redelivered{0};

  // -- MCP server authorization ---------------------------------------------
  /// Servers found to need signing in (again): credentials missing, revoked
  /// or past refresh (each time a server goes to needs_auth).
  std::atomic<uint64_t> servers_needing_auth{0};
  /// Browser sign-ins completed, and refused (bad state, error=, a failed
  /// code exchange).
  std::atomic<uint64_t> sign_ins{0};
  std::atomic<uint64_t> sign_ins_refused{0};

  /// Prometheus text exposition (version 0.0.4). `running_actors` is the
  /// actor system's registry count, sampled by the caller.
  std::string prometheus(int64_t running_actors) const;

  /// The same figures as a JSON object, for `voxosctl status`.
  nlohmann::json snapshot(int64_t running_actors) const;

  int64_t started_us() const noexcept { return started_us_; }

private:
  int64_t started_us_;
  mutable std::mutex kinds_mutex_;
  std::map<std::string, std::unique_ptr<actor_counters>> kinds_;
};

/// RAII: counts an actor of one kind as running while it lives. Put one in
/// each actor's state so the count falls when the state is destroyed.
class running_guard {
public:
  explicit running_guard(actor_counters& counters) noexcept : counters_(&counters) {
    counters_->running.fetch_add(1, std::memory_order_relaxed);
  }
  ~running_guard() { counters_->running.fetch_sub(1, std::memory_order_relaxed); }
  running_guard(const running_guard&) = delete;
  running_guard& operator=(const running_guard&) = delete;

private:
  actor_counters* counters_;
};

} // namespace voxos
