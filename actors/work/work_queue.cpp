#include "actors/work/work_queue.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/errc.hpp"
#include "messages/error.hpp"
#include "storage/digest.hpp"
#include "transport/json_text.hpp"

namespace voxos {

namespace {

using json = nlohmann::json;
using string_promise = caf::typed_response_promise<std::string>;

constexpr auto store_timeout = std::chrono::seconds(30);
/// An answer's text, as a chat turn's (the tenant's turn bound).
constexpr std::size_t max_answer_bytes = 64 * 1024;
constexpr std::size_t max_reason_bytes = 1024;
constexpr uint32_t max_worker_capacity = 64;
constexpr std::size_t max_waiting = 1024;

/// A worker actor registered through the run_host.
struct worker {
  caf::actor handle;
  std::string holder;
  uint32_t capacity = 1;
  uint32_t in_use = 0;
};

/// A lease request waiting for work (the HTTP long poll).
struct waiter {
  string_promise promise;
  int64_t deadline_us = 0;
  std::vector<work::kind> kinds;
};

struct work_queue_state {
  static inline const char* name = "work_queue";
  std::string tenant_id;
  event_store_actor store;
  work_queue_options opts;
  work::lease_book book;
  /// Items whose enqueue is being written.
  std::unordered_map<std::string, int> enqueuing;
  std::unordered_map<caf::actor_addr, worker> workers;
  std::unordered_map<std::string, caf::actor_addr> worker_by_holder;
  uint64_t next_worker = 0;
  std::deque<waiter> waiting;
  /// The tick armed, if any (its due time).
  int64_t armed_us = 0;
  /// What this queue added to the node's gauges (taken back when it ends).
  uint64_t counted_pending = 0;
  uint64_t counted_workers = 0;

  ~work_queue_state() {
    if (opts.metrics != nullptr) {
      opts.metrics->work_pending.fetch_sub(counted_pending);
      opts.metrics->work_workers.fetch_sub(counted_workers);
    }
  }

  /// Keeps the node's gauges in step with this queue.
  void count() {
    if (opts.metrics == nullptr)
      return;
    auto pending = book.size();
    auto workers_now = workers.size();
    opts.metrics->work_pending.fetch_add(pending - counted_pending);
    opts.metrics->work_workers.fetch_add(workers_now - counted_workers);
    counted_pending = pending;
    counted_workers = workers_now;
  }

  void bump(std::atomic<uint64_t> node_metrics::*figure, uint64_t by = 1) {
    if (opts.metrics != nullptr)
      (opts.metrics->*figure).fetch_add(by);
  }
};

using self_pointer = work_queue_actor::stateful_pointer<work_queue_state>;

std::string new_lease_id() {
  return "l_" + digest::random_hex(16);
}

json lease_json(const work::lease& l, const work_queue_state& st) {
  auto out = work::to_json(l.it->item);
  out["lease_id"] = l.lease_id;
  out["lease_ms"] = st.opts.leases.lease_us / 1000;
  out["attempt"] = l.it->attempts;
  return out;
}

/// A worker's capacity is free again for one lease.
void freed(self_pointer self, const std::string& holder) {
  auto& st = self->state;
  auto addr = st.worker_by_holder.find(holder);
  if (addr == st.worker_by_holder.end())
    return;
  auto w = st.workers.find(addr->second);
  if (w != st.workers.end() && w->second.in_use > 0)
    --w->second.in_use;
}

void arm(self_pointer self);

/// Offers ready items: first to lease requests waiting (oldest first), then
/// to workers with room (least busy first).
void dispatch(self_pointer self) {
  auto& st = self->state;
  auto now = wall_clock_us();
  while (!st.waiting.empty() && st.book.any_ready(now)) {
    bool served = false;
    for (auto pos = st.waiting.begin(); pos != st.waiting.end(); ++pos) {
      auto got = st.book.take("http", new_lease_id(), now, pos->kinds);
      if (!got)
        continue;
      pos->promise.deliver(json{{"lease", lease_json(*got, st)}}.dump());
      st.waiting.erase(pos);
      served = true;
      break;
    }
    if (!served)
      break;
  }
  while (st.book.any_ready(now)) {
    worker* best = nullptr;
    for (auto& [addr, w] : st.workers)
      if (w.in_use < w.capacity && (best == nullptr || w.in_use < best->in_use))
        best = &w;
    if (best == nullptr)
      break;
    auto got = st.book.take(best->holder, new_lease_id(), now);
    if (!got)
      break;
    ++best->in_use;
    // (workers answer through the run_host with their token, not to the queue)
    caf::anon_send(best->handle, work_atom::value, offer_atom::value, lease_json(*got, st).dump());
  }
  st.count();
  arm(self);
}

/// Keeps one tick armed at the earliest deadline (a lease's expiry, an
/// item becoming ready, a waiting lease request's end).
void arm(self_pointer self) {
  auto& st = self->state;
  auto due = st.book.next_deadline();
  for (const auto& w : st.waiting)
    if (!due || w.deadline_us < *due)
      due = w.deadline_us;
  if (!due || (st.armed_us != 0 && st.armed_us <= *due))
    return;
  st.armed_us = *due;
  auto wait = std::max<int64_t>(0, *due - wall_clock_us());
  self->delayed_send(self, std::chrono::microseconds{wait} + std::chrono::milliseconds{1},
                     tick_atom::value);
}

/// Appends `events` to the item's chat; on an error that leaves the outcome
/// unknown, reads the item's projection entry to learn whether it landed:
/// `landed(true)` when the item is settled (for a settling write) or queued
/// (for an enqueue), as `expect_present` says.
template <class F>
void write(self_pointer self, const work::item& it, std::vector<event_draft> events,
           bool expect_present, F done) {
  auto& st = self->state;
  append_request req;
  req.tenant = st.tenant_id;
  req.stream = work::stream_of(it.chat_id);
  req.events = std::move(events);
  auto key = work::work_prefix(st.tenant_id) + it.item_id;
  self->request(st.store, store_timeout, append_atom::value, std::move(req))
    .then([done](const append_result& appended) mutable { done(true, appended.first_seq, ""); },
          [self, key, expect_present, done](caf::error& err) mutable {
            // A refusal of the store is definite; a storage failure, a
            // timeout or a lost answer (errc::internal) is not.
            auto code = code_of(err);
            if (code != errc::storage_failure && code != errc::unavailable
                && code != errc::internal) {
              done(false, 0, message_of(err));
              return;
            }
            // It may have landed: the projection says.
            self
              ->request(self->state.store, store_timeout, scan_atom::value, state_atom::value, key,
                        uint32_t{1})
              .then(
                [key, expect_present, done, err](std::vector<state_entry>& found) mutable {
                  bool present = !found.empty() && found.front().key == key;
                  done(present == expect_present, 0, message_of(err));
                },
                [done, err](caf::error&) mutable { done(false, 0, message_of(err)); });
          });
}

/// Records items settled by the queue itself (exhausted or cancelled).
void record_settled(self_pointer self, const std::vector<work::item>& items, std::string_view type,
                    const std::string& reason) {
  for (const auto& it : items)
    write(
      self, it, {work::settled_event(type, it, reason)}, false,
      [self, id = it.item_id, now = wall_clock_us()](bool ok, uint64_t, const std::string& why) {
        if (ok) {
          self->state.book.settled(id);
          return;
        }
        log::error("work_queue", "a settled item was not recorded: " + why);
        self->state.book.unsettle(id, now);
        dispatch(self);
      });
}

void on_tick(self_pointer self) {
  auto& st = self->state;
  st.armed_us = 0;
  auto now = wall_clock_us();
  std::vector<work::item> exhausted;
  for (const auto& holder : st.book.expire(now, exhausted)) {
    freed(self, holder);
    st.bump(&node_metrics::work_redelivered);
  }
  if (!exhausted.empty())
    record_settled(self, exhausted, work::failed,
                   "its lease expired " + std::to_string(st.book.options().max_attempts)
                     + " times (work.max_attempts)");
  while (!st.waiting.empty()) {
    auto pos = std::find_if(st.waiting.begin(), st.waiting.end(),
                            [now](const waiter& w) { return w.deadline_us <= now; });
    if (pos == st.waiting.end())
      break;
    pos->promise.deliver(json{{"lease", nullptr}}.dump());
    st.waiting.erase(pos);
  }
  dispatch(self);
}

// -- operations ------------------------------------------------------------------

std::string field(const json& body, const char* key) {
  auto found = body.find(key);
  return found != body.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

caf::result<std::string> lease_op(self_pointer self, const json& body) {
  auto& st = self->state;
  int64_t wait_ms = 0;
  if (auto w = body.find("wait_ms"); w != body.end()) {
    if (!w->is_number_integer() || w->get<int64_t>() < 0
        || w->get<int64_t>() > int64_t{st.opts.max_lease_wait_ms})
      return make_error(errc::out_of_range, "wait_ms: an integer from 0 to "
                                              + std::to_string(st.opts.max_lease_wait_ms)
                                              + " (work.max_lease_wait_ms)");
    wait_ms = w->get<int64_t>();
  }
  std::vector<work::kind> kinds;
  if (auto k = body.find("kinds"); k != body.end()) {
    if (!k->is_array() || k->size() > 8)
      return make_error(errc::out_of_range, "kinds: at most 8 kind names");
    for (const auto& name : *k) {
      auto parsed = name.is_string() ? work::parse_kind(name.get<std::string>()) : std::nullopt;
      if (!parsed)
        return make_error(errc::out_of_range, "kinds: each one of scheduled_turn, child_run");
      kinds.push_back(*parsed);
    }
  }
  auto now = wall_clock_us();
  if (auto got = st.book.take("http", new_lease_id(), now, kinds)) {
    arm(self);
    return json{{"lease", lease_json(*got, st)}}.dump();
  }
  if (wait_ms == 0)
    return json{{"lease", nullptr}}.dump();
  if (st.waiting.size() >= max_waiting)
    return make_error(errc::too_many_requests, "too many lease requests are waiting already");
  auto promise = self->make_response_promise<std::string>();
  st.waiting.push_back({promise, now + wait_ms * 1000, std::move(kinds)});
  arm(self);
  return promise;
}

caf::result<std::string> complete_op(self_pointer self, const json& body) {
  auto& st = self->state;
  auto answer = body.find("answer");
  if (answer == body.end() || !answer->is_string())
    return make_error(errc::missing_field, "answer: expected the run's answer text");
  const auto& text = answer->get_ref<const std::string&>();
  if (text.size() > max_answer_bytes)
    return make_error(errc::out_of_range, "answer: at most 64 KiB");
  if (!is_utf8(text))
    return make_error(errc::bad_json, "answer: must be valid UTF-8");
  auto item_id = field(body, "item_id");
  auto finished = st.book.finish(item_id, field(body, "lease_id"));
  if (!finished)
    return to_error(finished.error());
  auto it = std::move(*finished);
  const auto* e = st.book.find(item_id);
  auto holder = e != nullptr ? e->holder : std::string{};
  json turn{{"run_id", it.run_id},
            {"turn", 1},
            {"user", it.text},
            {"assistant", text},
            {"item_id", it.item_id}};
  auto turn_data = turn.dump();
  auto promise = self->make_response_promise<std::string>();
  write(
    self, it, {{"turn.reported", turn_data}, work::settled_event(work::completed, it)}, false,
    [self, promise, it, holder, turn_data](bool ok, uint64_t seq, const std::string& why) mutable {
      auto& st = self->state;
      if (!ok) {
        st.book.unsettle(it.item_id, wall_clock_us());
        arm(self);
        promise.deliver(
          make_error(errc::storage_failure, "the answer was not recorded; complete again: " + why));
        return;
      }
      st.book.settled(it.item_id);
      freed(self, holder);
      promise.deliver(json{{"item_id", it.item_id},
                           {"run_id", it.run_id},
                           {"chat_id", it.chat_id},
                           {"turn", 1},
                           {"turn_event",
                            {{"stream", work::stream_of(it.chat_id)},
                             {"seq", seq},
                             {"type", "turn.reported"},
                             {"data", turn_data}}}}
                        .dump());
      dispatch(self);
    });
  return promise;
}

caf::result<std::string> fail_op(self_pointer self, const json& body) {
  auto& st = self->state;
  auto reason = field(body, "reason");
  if (reason.empty() || reason.size() > max_reason_bytes)
    return make_error(errc::out_of_range, "reason: 1 to 1024 bytes");
  if (!is_utf8(reason))
    return make_error(errc::bad_json, "reason: must be valid UTF-8");
  auto item_id = field(body, "item_id");
  auto lease_id = field(body, "lease_id");
  bool retry = body.value("retry", false);
  const auto* e = st.book.find(item_id);
  if (retry && e != nullptr && e->attempts < st.book.options().max_attempts) {
    auto holder = e->holder;
    if (auto released = st.book.release(item_id, lease_id, wall_clock_us()); !released)
      return to_error(released);
    freed(self, holder);
    dispatch(self);
    return json{{"item_id", item_id}, {"state", "ready"}}.dump();
  }
  auto finished = st.book.finish(item_id, lease_id);
  if (!finished)
    return to_error(finished.error());
  auto holder = st.book.find(item_id)->holder;
  auto promise = self->make_response_promise<std::string>();
  write(self, *finished, {work::settled_event(work::failed, *finished, reason)}, false,
        [self, promise, item_id, holder](bool ok, uint64_t, const std::string& why) mutable {
          if (!ok) {
            self->state.book.unsettle(item_id, wall_clock_us());
            arm(self);
            promise.deliver(
              make_error(errc::storage_failure, "the failure was not recorded: " + why));
            return;
          }
          self->state.book.settled(item_id);
          self->state.bump(&node_metrics::work_failed);
          freed(self, holder);
          promise.deliver(json{{"item_id", item_id}, {"state", "failed"}}.dump());
          dispatch(self);
        });
  return promise;
}

caf::result<std::string> enqueue(self_pointer self, const std::string& text,
                                 std::vector<event_draft> with) {
  auto& st = self->state;
  auto parsed = work::item_from_json(json::parse(text, nullptr, false));
  if (!parsed)
    return make_error(errc::out_of_range, parsed.error().message());
  auto it = std::move(*parsed);
  if (st.book.seen(it.item_id) || st.enqueuing.count(it.item_id) != 0)
    return make_error(errc::conflict, "this work item is already queued or settled");
  if (st.book.size() + st.enqueuing.size() >= st.opts.max_pending)
    return make_error(errc::out_of_range, "this tenant has " + std::to_string(st.opts.max_pending)
                                            + " work items queued (work.max_pending)");
  with.push_back(work::enqueued_event(it));
  st.enqueuing[it.item_id] = 1;
  auto promise = self->make_response_promise<std::string>();
  write(self, it, std::move(with), true,
        [self, promise, it, text](bool ok, uint64_t, const std::string& why) mutable {
          auto& st = self->state;
          st.enqueuing.erase(it.item_id);
          if (!ok) {
            promise.deliver(make_error(errc::storage_failure, "the work was not queued: " + why));
            return;
          }
          (void)st.book.add(it, wall_clock_us());
          promise.deliver(text);
          dispatch(self);
        });
  return promise;
}

caf::result<std::string> host_op(self_pointer self, const std::string& op, const json& body) {
  auto& st = self->state;
  if (op == "lease")
    return lease_op(self, body);
  if (op == "complete")
    return complete_op(self, body);
  if (op == "fail")
    return fail_op(self, body);
  auto item_id = field(body, "item_id");
  auto lease_id = field(body, "lease_id");
  if (op == "check") {
    if (auto held = st.book.check(item_id, lease_id); !held)
      return to_error(held);
    return work::to_json(st.book.find(item_id)->item).dump();
  }
  if (op == "heartbeat") {
    auto extended = st.book.heartbeat(item_id, lease_id, wall_clock_us());
    if (!extended)
      return to_error(extended.error());
    return json{{"item_id", item_id}, {"lease_ms", st.opts.leases.lease_us / 1000}}.dump();
  }
  if (op == "list") {
    json items = json::array();
    for (const auto& [id, e] : st.book.entries()) {
      auto row = work::to_json(e.item);
      row["state"] = e.state == work::item_state::ready    ? "ready"
                     : e.state == work::item_state::leased ? "leased"
                                                           : "settling";
      row["attempts"] = e.attempts;
      items.push_back(std::move(row));
    }
    return json{{"items", std::move(items)}}.dump();
  }
  return make_error(errc::not_found, "unknown work operation");
}

/// Reads the unsettled items from the projection (awaited: nothing is
/// served before they are known).
void load(self_pointer self) {
  auto& st = self->state;
  auto prefix = work::work_prefix(st.tenant_id);
  self
    ->request(st.store, store_timeout, scan_atom::value, state_atom::value, prefix,
              static_cast<uint32_t>(st.opts.max_pending))
    .await(
      [self](std::vector<state_entry>& entries) {
        auto now = wall_clock_us();
        for (const auto& entry : entries) {
          auto it = work::item_from_json(json::parse(entry.value, nullptr, false));
          if (!it) {
            log::error("work_queue", "a stored work item was left out: " + it.error().message());
            continue;
          }
          (void)self->state.book.add(std::move(*it), now);
        }
        if (!entries.empty())
          log::info("work_queue", std::to_string(entries.size()) + " work items to offer again");
        dispatch(self);
      },
      [self](caf::error& err) {
        log::error("work_queue", "cannot read the queued work: " + message_of(err));
        self->quit(std::move(err));
      });
}

work_queue_actor::behavior_type queue_behavior(self_pointer self, std::string tenant_id,
                                               event_store_actor store, work_queue_options opts) {
  auto& st = self->state;
  st.tenant_id = std::move(tenant_id);
  st.store = std::move(store);
  st.opts = opts;
  st.book = work::lease_book{opts.leases};
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    auto found = st.workers.find(msg.source);
    if (found == st.workers.end())
      return;
    auto holder = found->second.holder;
    st.worker_by_holder.erase(holder);
    st.workers.erase(found);
    auto released = st.book.release_holder(holder, wall_clock_us());
    st.bump(&node_metrics::work_redelivered, released.size());
    if (!released.empty())
      log::info("work_queue", "a worker went away holding " + std::to_string(released.size())
                                + " leases; they are offered again");
    dispatch(self);
  });
  load(self);
  return {
    [self](enqueue_atom, const std::string& item, std::vector<event_draft>& with)
      -> caf::result<std::string> { return enqueue(self, item, std::move(with)); },
    [self](work_atom, const std::string& op, const std::string& body) -> caf::result<std::string> {
      auto doc = json::parse(body, nullptr, false);
      if (!doc.is_object())
        return make_error(errc::bad_json, "expected one JSON object");
      return host_op(self, op, doc);
    },
    [self](work_atom, caf::actor& handle, uint32_t capacity) -> caf::result<bool> {
      if (!handle)
        return make_error(errc::missing_field, "worker: expected an actor");
      if (capacity == 0 || capacity > max_worker_capacity)
        return make_error(errc::out_of_range, "capacity: from 1 to 64 leases");
      auto& st = self->state;
      auto addr = handle.address();
      auto found = st.workers.find(addr);
      if (found == st.workers.end()) {
        auto holder = "caf:" + std::to_string(++st.next_worker);
        st.worker_by_holder[holder] = addr;
        st.workers[addr] = worker{handle, holder, capacity, 0};
        self->monitor(handle);
      } else {
        found->second.capacity = capacity;
      }
      dispatch(self);
      return true;
    },
    [self](cancel_atom, const std::string& parent_run_id) -> std::vector<std::string> {
      auto picked = self->state.book.settle_if([&](const work::item& it) {
        return it.k == work::kind::child_run && it.parent_run_id == parent_run_id;
      });
      std::vector<work::item> items;
      std::vector<std::string> runs;
      for (auto& [it, holder] : picked) {
        if (!holder.empty())
          freed(self, holder);
        runs.push_back(it.run_id);
        items.push_back(std::move(it));
      }
      record_settled(self, items, work::cancelled, "its parent run was cancelled");
      return runs;
    },
    [self](health_atom) -> std::string {
      auto& st = self->state;
      return json{{"pending", st.book.size()},
                  {"ready", st.book.ready_count()},
                  {"leased", st.book.leased_count()},
                  {"workers", st.workers.size()},
                  {"waiting", st.waiting.size()}}
        .dump();
    },
    [self](tick_atom) { on_tick(self); },
  };
}

} // namespace

work_queue_actor spawn_work_queue(caf::local_actor* tenant, std::string tenant_id,
                                  event_store_actor store, work_queue_options options) {
  return tenant->spawn<caf::linked>(queue_behavior, std::move(tenant_id), std::move(store),
                                    options);
}

} // namespace voxos
