#include "actors/event_store/event_store.hpp"

#include <chrono>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "messages/error.hpp"
#include "storage/event_db.hpp"

namespace voxos {

namespace {

using clock_type = std::chrono::steady_clock;

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

uint64_t micros_since(clock_type::time_point start) {
  return static_cast<uint64_t>(
    std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - start).count());
}

struct pending_append {
  append_request request;
  caf::typed_response_promise<append_result> promise;
  clock_type::time_point arrived;
};

struct event_store_state {
  static inline const char* name = "event_store";
  std::shared_ptr<event_db> db;
  node_metrics* metrics = nullptr;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
  event_store_options opts;
  std::vector<pending_append> pending;
  bool flush_scheduled = false;
};

using self_pointer = event_store_actor::stateful_pointer<event_store_state>;

// Commits every pending append in one batch and answers each promise.
void flush(self_pointer self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  if (st.pending.empty())
    return;
  std::vector<const append_request*> group;
  group.reserve(st.pending.size());
  for (auto& p : st.pending)
    group.push_back(&p.request);
  auto started = clock_type::now();
  auto results = st.db->append_group(group, wall_us());
  st.metrics->sync_latency.observe(micros_since(started));
  st.metrics->write_batches.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t idx = 0; idx < results.size(); ++idx) {
    auto& p = st.pending[idx];
    st.metrics->append_latency.observe(micros_since(p.arrived));
    if (results[idx]) {
      st.metrics->appended_events.fetch_add(p.request.events.size(), std::memory_order_relaxed);
      p.promise.deliver(*results[idx]);
    } else {
      st.metrics->append_failures.fetch_add(1, std::memory_order_relaxed);
      p.promise.deliver(to_error(results[idx].error()));
    }
  }
  st.pending.clear();
}

event_store_actor::behavior_type event_store_behavior(self_pointer self,
                                                      std::shared_ptr<event_db> db,
                                                      node_metrics* metrics,
                                                      event_store_options opts) {
  auto& st = self->state;
  st.db = std::move(db);
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
      st.pending.push_back({std::move(req), promise, clock_type::now()});
      if (st.pending.size() >= st.opts.max_batch_requests) {
        flush(self);
      } else if (!st.flush_scheduled) {
        // The flush message queues behind every append already waiting, so
        // they all join this group.
        st.flush_scheduled = true;
        self->send(self, flush_atom::value);
      }
      return promise;
    },
    [self, note](flush_atom) {
      note();
      flush(self);
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
      auto report = self->state.db->verify();
      if (!report)
        return to_error(report.error());
      return *report;
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
  return sys.spawn<caf::detached>(event_store_behavior, std::move(db), &metrics, opts);
}

} // namespace voxos
