#include "actors/event_store/event_store.hpp"

#include <chrono>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "messages/error.hpp"
#include "storage/event_db.hpp"

namespace voxos {

namespace {

using clock_type = std::chrono::steady_clock;

/// One group commit, handed from the event_store to its writer and back.
struct commit_group {
  std::vector<append_request> requests;
  std::vector<result<append_result>> results;
  uint64_t write_us = 0;
};

using commit_group_ptr = std::shared_ptr<commit_group>;

} // namespace

} // namespace voxos

// Local only: never crosses the network.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(voxos::commit_group_ptr)

namespace voxos {

namespace {

using commit_atom = caf::atom_constant<caf::atom("commit")>;

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

uint64_t micros_since(clock_type::time_point start) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count());
}

// -- the writer: blocking RocksDB writes on its own thread ----------------------

caf::behavior writer_behavior(caf::event_based_actor* self, std::shared_ptr<event_db> db) {
  return {
    [db](commit_atom, commit_group_ptr& group) {
      std::vector<const append_request*> ptrs;
      ptrs.reserve(group->requests.size());
      for (auto& req : group->requests)
        ptrs.push_back(&req);
      auto started = clock_type::now();
      group->results = db->append_group(ptrs, wall_us());
      group->write_us = micros_since(started);
      return group;
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

struct event_store_state {
  static inline const char* name = "event_store";
  std::shared_ptr<event_db> db;
  caf::actor writer;
  node_metrics* metrics = nullptr;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
  event_store_options opts;
  // The group being collected, with a promise and arrival time per request.
  commit_group_ptr collecting = std::make_shared<commit_group>();
  std::vector<caf::typed_response_promise<append_result>> promises;
  std::vector<clock_type::time_point> arrivals;
  bool writing = false;
};

using self_pointer = event_store_actor::stateful_pointer<event_store_state>;

// Hands the collected group to the writer, if it is idle and there is one.
void dispatch(self_pointer self) {
  auto& st = self->state;
  if (st.writing || st.collecting->requests.empty())
    return;
  st.writing = true;
  commit_group_ptr group;
  std::vector<caf::typed_response_promise<append_result>> promises;
  std::vector<clock_type::time_point> arrivals;
  auto count = st.collecting->requests.size();
  if (count <= st.opts.max_batch_requests) {
    group = std::move(st.collecting);
    st.collecting = std::make_shared<commit_group>();
    promises = std::move(st.promises);
    arrivals = std::move(st.arrivals);
    st.promises.clear();
    st.arrivals.clear();
  } else {
    // Take the oldest max_batch_requests; the rest form the next group.
    auto take = static_cast<std::ptrdiff_t>(st.opts.max_batch_requests);
    group = std::make_shared<commit_group>();
    auto& reqs = st.collecting->requests;
    group->requests.assign(std::make_move_iterator(reqs.begin()),
                           std::make_move_iterator(reqs.begin() + take));
    reqs.erase(reqs.begin(), reqs.begin() + take);
    promises.assign(st.promises.begin(), st.promises.begin() + take);
    st.promises.erase(st.promises.begin(), st.promises.begin() + take);
    arrivals.assign(st.arrivals.begin(), st.arrivals.begin() + take);
    st.arrivals.erase(st.arrivals.begin(), st.arrivals.begin() + take);
  }
  self->request(st.writer, caf::infinite, commit_atom::value, group)
    .then(
      [self, promises, arrivals](commit_group_ptr& done) mutable {
        auto& st = self->state;
        st.metrics->sync_latency.observe(done->write_us);
        st.metrics->write_batches.fetch_add(1, std::memory_order_relaxed);
        for (std::size_t idx = 0; idx < done->results.size(); ++idx) {
          st.metrics->append_latency.observe(micros_since(arrivals[idx]));
          auto& res = done->results[idx];
          if (res) {
            st.metrics->appended_events.fetch_add(done->requests[idx].events.size(),
                                                  std::memory_order_relaxed);
            promises[idx].deliver(*res);
          } else {
            st.metrics->append_failures.fetch_add(1, std::memory_order_relaxed);
            promises[idx].deliver(to_error(res.error()));
          }
        }
        st.writing = false;
        dispatch(self);
      },
      [self, promises](caf::error& err) mutable {
        // The writer is gone: nothing of this group is known to be durable.
        for (auto& promise : promises)
          promise.deliver(make_error(errc::storage_failure, "the event store writer stopped"));
        self->quit(std::move(err));
      });
}

event_store_actor::behavior_type event_store_behavior(self_pointer self,
                                                      std::shared_ptr<event_db> db,
                                                      node_metrics* metrics,
                                                      event_store_options opts) {
  auto& st = self->state;
  st.db = db;
  st.writer = self->spawn<caf::detached + caf::linked>(writer_behavior, std::move(db));
  st.metrics = metrics;
  st.counters = &metrics->actor("event_store");
  st.running.emplace(*st.counters);
  st.opts = opts;
  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](append_atom, append_request& req) -> caf::result<append_result> {
      note();
      auto& st = self->state;
      st.metrics->append_requests.fetch_add(1, std::memory_order_relaxed);
      auto promise = self->make_response_promise<append_result>();
      st.collecting->requests.push_back(std::move(req));
      st.promises.push_back(promise);
      st.arrivals.push_back(clock_type::now());
      dispatch(self);
      return promise;
    },
    [self, note](read_atom, const stream_query& query) -> caf::result<std::vector<event_record>> {
      note();
      auto events = self->state.db->read_stream(query);
      if (!events)
        return to_error(events.error());
      return std::move(*events);
    },
    [self, note](scan_atom, const std::string& tenant,
                 uint32_t limit) -> caf::result<std::vector<event_record>> {
      note();
      auto events = self->state.db->read_tenant(tenant, limit);
      if (!events)
        return to_error(events.error());
      return std::move(*events);
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
