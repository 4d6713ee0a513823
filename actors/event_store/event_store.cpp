#include "actors/event_store/event_store.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "storage/event_db.hpp"

namespace voxos {

namespace {

using clock_type = std::chrono::steady_clock;

/// One group commit: the requests the writer took, and their results.
struct commit_group {
  std::vector<append_request> requests;
  std::vector<result<append_result>> results;
  uint64_t write_us = 0;
  /// Written without a sync (every request deferred), and not yet synced.
  bool wal_unsynced = false;
};

using commit_group_ptr = std::shared_ptr<commit_group>;

/// The hand-off from the event_store to its writer. The event_store pushes
/// each append as it arrives; the writer takes everything pending when it
/// starts a group. A group therefore holds every append that arrived while
/// the previous group was being written, and the writer starts it without a
/// round trip through the event_store. One mutex, held for a push or a swap.
class commit_intake {
public:
  void push(append_request&& req) {
    std::lock_guard<std::mutex> guard{mtx_};
    pending_.push_back(std::move(req));
  }

  /// Moves the oldest pending requests, at most `max`, into `out` (empty).
  void take(std::vector<append_request>& out, std::size_t max) {
    std::lock_guard<std::mutex> guard{mtx_};
    if (pending_.size() <= max) {
      out.swap(pending_);
      // The next group is likely about as large: one allocation up front
      // instead of a regrowth every few pushes.
      pending_.reserve(out.size());
      return;
    }
    auto split = pending_.begin() + static_cast<std::ptrdiff_t>(max);
    out.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(split));
    pending_.erase(pending_.begin(), split);
  }

private:
  std::mutex mtx_;
  std::vector<append_request> pending_;
};

} // namespace

} // namespace voxos

// Local only: never crosses the network.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(voxos::commit_group_ptr)

namespace voxos {

namespace {

using commit_atom = caf::atom_constant<caf::atom("commit")>;
using wal_sync_atom = caf::atom_constant<caf::atom("walsync")>;

/// Commit requests the event_store keeps out at once: one the writer works
/// on, one waiting in its mailbox so it starts the next group as soon as the
/// current one is durable.
constexpr int max_commits_out = 2;

uint64_t micros_since(clock_type::time_point start) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count());
}

// -- the writer: blocking RocksDB writes on its own thread ----------------------

caf::behavior writer_behavior(caf::event_based_actor* self, std::shared_ptr<event_db> db,
                              std::shared_ptr<commit_intake> intake, std::size_t max_requests) {
  return {
    // Commits whatever is pending (possibly nothing) as one group.
    [db, intake, max_requests](commit_atom) {
      auto group = std::make_shared<commit_group>();
      intake->take(group->requests, max_requests);
      if (group->requests.empty())
        return group;
      std::vector<const append_request*> ptrs;
      ptrs.reserve(group->requests.size());
      for (auto& req : group->requests)
        ptrs.push_back(&req);
      auto started = clock_type::now();
      group->results = db->append_group(ptrs, wall_clock_us());
      group->write_us = micros_since(started);
      group->wal_unsynced = db->wal_unsynced();
      return group;
    },
    // Makes deferred groups durable, unless a synced write already did.
    [db](wal_sync_atom) {
      if (auto synced = db->sync_wal(); !synced)
        log::error("event_store", synced.error().message());
    },
    [db](verify_atom) -> caf::result<store_report> {
      auto report = db->verify();
      if (!report)
        return to_error(report.error());
      return *report;
    },
  };
}

// -- the event_store --------------------------------------------------------------

/// An append on its way: pushed to the intake, not yet acknowledged.
struct waiting_append {
  caf::typed_response_promise<append_result> promise;
  clock_type::time_point arrival;
};

struct event_store_state {
  static inline const char* name = "event_store";
  std::shared_ptr<event_db> db;
  std::shared_ptr<commit_intake> intake;
  caf::actor writer;
  node_metrics* metrics = nullptr;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
  // In intake order, which is commit order: each committed group answers
  // the oldest of these.
  std::deque<waiting_append> waiting;
  int commits_out = 0;
  /// Appends taken, and appends answered (both in arrival order).
  uint64_t appends_in = 0;
  uint64_t appends_done = 0;
  /// Reads that arrived while appends were on their way: each runs once
  /// every append that arrived before it is answered (read your writes).
  std::deque<std::pair<uint64_t, std::function<void()>>> deferred_reads;
  /// When the store's size was last sampled into the metrics.
  int64_t size_sampled_us = 0;
  /// Deferred groups are synced at most this long after they are written;
  /// until sync_due_us a sync is already on its way to the writer.
  caf::timespan deferred_sync{};
  int64_t sync_due_us = 0;
};

/// How often, at most, the store's size is sampled after write batches: a
/// RocksDB property read takes the database mutex briefly, not per batch.
constexpr int64_t size_sample_interval_us = 1'000'000;

void sample_size(event_store_state& st) {
  st.size_sampled_us = steady_clock_us();
  st.metrics->store_bytes.store(st.db->size_bytes(), std::memory_order_relaxed);
}

using self_pointer = event_store_actor::stateful_pointer<event_store_state>;

void on_committed(self_pointer self, commit_group& done);

// Keeps commit requests going to the writer while appends wait, at most
// max_commits_out at once.
void request_commit(self_pointer self) {
  auto& st = self->state;
  if (st.commits_out >= max_commits_out || st.waiting.empty())
    return;
  ++st.commits_out;
  self->request(st.writer, caf::infinite, commit_atom::value)
    .then([self](commit_group_ptr& done) { on_committed(self, *done); },
          [self](caf::error& err) {
            // The writer is gone: nothing still waiting is known to be durable.
            auto& st = self->state;
            for (auto& entry : st.waiting)
              entry.promise.deliver(
                make_error(errc::storage_failure, "the event store writer stopped"));
            st.waiting.clear();
            self->quit(std::move(err));
          });
}

// Answers the appends of one committed group, then keeps the writer fed.
void on_committed(self_pointer self, commit_group& done) {
  auto& st = self->state;
  --st.commits_out;
  if (!done.requests.empty()) {
    st.metrics->sync_latency.observe(done.write_us);
    st.metrics->write_batches.fetch_add(1, std::memory_order_relaxed);
  }
  for (std::size_t idx = 0; idx < done.results.size(); ++idx) {
    auto entry = std::move(st.waiting.front());
    st.waiting.pop_front();
    ++st.appends_done;
    st.metrics->append_latency.observe(micros_since(entry.arrival));
    auto& res = done.results[idx];
    if (res) {
      st.metrics->appended_events.fetch_add(done.requests[idx].events.size(),
                                            std::memory_order_relaxed);
      entry.promise.deliver(*res);
    } else {
      st.metrics->append_failures.fetch_add(1, std::memory_order_relaxed);
      entry.promise.deliver(to_error(res.error()));
    }
  }
  if (done.wal_unsynced && steady_clock_us() >= st.sync_due_us) {
    caf::delayed_anon_send(st.writer, st.deferred_sync, wal_sync_atom::value);
    st.sync_due_us =
      steady_clock_us()
      + std::chrono::duration_cast<std::chrono::microseconds>(st.deferred_sync).count();
  }
  if (!done.requests.empty() && steady_clock_us() - st.size_sampled_us >= size_sample_interval_us)
    sample_size(st);
  while (!st.deferred_reads.empty() && st.deferred_reads.front().first <= st.appends_done) {
    auto read = std::move(st.deferred_reads.front().second);
    st.deferred_reads.pop_front();
    read();
  }
  request_commit(self);
}

/// Runs `read(promise)` now, or once every append that arrived before it
/// is answered, so a reader sees what was appended before it asked.
template <class T, class F>
caf::result<T> read_after_appends(self_pointer self, F read) {
  auto& st = self->state;
  if (st.appends_done == st.appends_in) {
    auto answer = read();
    if (!answer)
      return std::move(answer.error());
    return std::move(*answer);
  }
  auto promise = self->make_response_promise<T>();
  st.deferred_reads.emplace_back(st.appends_in, [promise, read]() mutable {
    auto answer = read();
    if (answer)
      promise.deliver(std::move(*answer));
    else
      promise.deliver(std::move(answer.error()));
  });
  return promise;
}

event_store_actor::behavior_type event_store_behavior(self_pointer self,
                                                      std::shared_ptr<event_db> db,
                                                      node_metrics* metrics,
                                                      event_store_options opts) {
  auto& st = self->state;
  st.db = db;
  st.intake = std::make_shared<commit_intake>();
  st.writer = self->spawn<caf::detached + caf::linked>(
    writer_behavior, std::move(db), st.intake, std::max<std::size_t>(1, opts.max_batch_requests));
  st.deferred_sync = opts.deferred_sync;
  st.metrics = metrics;
  st.counters = &metrics->actor("event_store");
  st.running.emplace(*st.counters);
  sample_size(st);
  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](append_atom, append_request& req) -> caf::result<append_result> {
      note();
      auto& st = self->state;
      st.metrics->append_requests.fetch_add(1, std::memory_order_relaxed);
      auto promise = self->make_response_promise<append_result>();
      st.intake->push(std::move(req));
      st.waiting.push_back({promise, clock_type::now()});
      ++st.appends_in;
      request_commit(self);
      return promise;
    },
    [self, note](read_atom, const stream_query& query) -> caf::result<std::vector<event_record>> {
      note();
      using answer = std::vector<event_record>;
      return read_after_appends<answer>(self, [self, query]() -> caf::expected<answer> {
        auto events = self->state.db->read_stream(query);
        if (!events)
          return to_error(events.error());
        return std::move(*events);
      });
    },
    [self, note](scan_atom, const std::string& tenant,
                 uint32_t limit) -> caf::result<std::vector<event_record>> {
      note();
      using answer = std::vector<event_record>;
      return read_after_appends<answer>(self, [self, tenant, limit]() -> caf::expected<answer> {
        auto events = self->state.db->read_tenant(tenant, limit);
        if (!events)
          return to_error(events.error());
        return std::move(*events);
      });
    },
    [self, note](scan_atom, const std::string& tenant, const std::string& prefix,
                 const std::string& after_stream, uint64_t after_seq,
                 uint32_t limit) -> caf::result<std::vector<event_record>> {
      note();
      using answer = std::vector<event_record>;
      tenant_query query{tenant, prefix, after_stream, after_seq, limit};
      return read_after_appends<answer>(self, [self, query]() -> caf::expected<answer> {
        auto events = self->state.db->read_tenant(query);
        if (!events)
          return to_error(events.error());
        return std::move(*events);
      });
    },
    [self, note](scan_atom, state_atom, const std::string& prefix,
                 uint32_t limit) -> caf::result<std::vector<state_entry>> {
      note();
      using answer = std::vector<state_entry>;
      return read_after_appends<answer>(self, [self, prefix, limit]() -> caf::expected<answer> {
        auto entries = self->state.db->scan_state(prefix, limit);
        if (!entries)
          return to_error(entries.error());
        answer out;
        out.reserve(entries->size());
        for (auto& [key, value] : *entries)
          out.push_back({std::move(key), std::move(value)});
        return out;
      });
    },
    [self, note](verify_atom) -> caf::result<store_report> {
      note();
      // On the writer, between groups: the replay sees no append half-done.
      auto promise = self->make_response_promise<store_report>();
      self->request(self->state.writer, caf::infinite, verify_atom::value)
        .then([promise](store_report& report) mutable { promise.deliver(report); },
              [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](health_atom) {
      note();
      return self->state.db->check_health().is_ok();
    },
  };
}

} // namespace

event_store_actor spawn_event_store(caf::actor_system& sys, std::shared_ptr<event_db> db,
                                    node_metrics& metrics, event_store_options opts) {
  return sys.spawn(event_store_behavior, std::move(db), &metrics, opts);
}

} // namespace voxos
