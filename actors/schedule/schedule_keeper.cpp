#include "actors/schedule/schedule_keeper.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/tools/json_fields.hpp"
#include "config/civil_time.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "config/time_zone.hpp"
#include "messages/errc.hpp"
#include "messages/error.hpp"

namespace voxos {

namespace {

using json = nlohmann::json;
using string_promise = caf::typed_response_promise<std::string>;

constexpr auto store_timeout = std::chrono::seconds(30);
/// The timer wakes at least this often, so a wall clock that was set
/// forward or back is noticed within it.
constexpr int64_t max_timer_wait_us = 60'000'000;
/// Records read at start: work.max_schedules' own upper bound, so a tenant
/// that holds more than a lowered bound keeps them all.
constexpr uint32_t max_loaded = 1'000'000;

/// An owner's operation waiting for a write of its schedule.
struct waiting_op {
  std::string op;
  json body;
  string_promise promise;
};

struct schedule_keeper_state {
  static inline const char* name = "schedule_keeper";
  std::string tenant_id;
  event_store_actor store;
  work_queue_actor queue;
  schedule_keeper_options opts;
  schedules::book book;
  /// Creates being written (they count against max_schedules).
  std::size_t creating = 0;
  std::unordered_map<std::string, std::deque<waiting_op>> waiting;
  /// The wall-clock time the armed tick is for (0: none armed).
  int64_t armed_us = 0;
  uint64_t fired = 0;
  uint64_t retried = 0;
};

using self_pointer = schedule_keeper_actor::stateful_pointer<schedule_keeper_state>;

int64_t now_seconds() {
  return floor_div(wall_clock_us(), 1'000'000);
}

void run_op(self_pointer self, const std::string& op, const json& body, string_promise promise);

// -- writing ------------------------------------------------------------------------

/// Appends `events` to the chat `chat_id`, then `done(landed, err)`. An
/// error that leaves the outcome unknown (the store failed, timed out or
/// lost its answer) is settled by the schedule's projection entry: landed
/// when it holds what the last event put there (or, for a deletion, none).
template <class F>
void write(self_pointer self, const std::string& chat_id, const std::string& schedule_id,
           std::vector<event_draft> events, F done) {
  auto& st = self->state;
  std::optional<std::string> expected;
  if (!events.empty() && events.back().type == work::schedule_saved)
    expected = events.back().data;
  append_request req;
  req.tenant = st.tenant_id;
  req.stream = work::stream_of(chat_id);
  req.events = std::move(events);
  auto key = work::schedule_prefix(st.tenant_id) + schedule_id;
  self->request(st.store, store_timeout, append_atom::value, std::move(req))
    .then([done](const append_result&) mutable { done(true, caf::error{}); },
          [self, key, expected, done](caf::error& err) mutable {
            auto code = code_of(err);
            if (code != errc::storage_failure && code != errc::unavailable
                && code != errc::internal) {
              done(false, err);
              return;
            }
            self
              ->request(self->state.store, store_timeout, scan_atom::value, state_atom::value, key,
                        uint32_t{1})
              .then(
                [key, expected, done, err](std::vector<state_entry>& found) mutable {
                  bool present = !found.empty() && found.front().key == key;
                  done(expected ? present && found.front().value == *expected : !present, err);
                },
                [done, err](caf::error&) mutable { done(false, err); });
          });
}

/// The write of `schedule_id` ended: the owner's next waiting operation on
/// it runs (it may start another write, or find the schedule gone).
void settled(self_pointer self, const std::string& schedule_id) {
  auto& st = self->state;
  auto found = st.waiting.find(schedule_id);
  if (found == st.waiting.end())
    return;
  auto next = std::move(found->second.front());
  found->second.pop_front();
  if (found->second.empty())
    st.waiting.erase(found);
  run_op(self, next.op, next.body, next.promise);
}

// -- firing -------------------------------------------------------------------------

void fire_due(self_pointer self);

/// Keeps one tick armed at the earliest due time (or within
/// max_timer_wait_us).
void arm(self_pointer self) {
  auto& st = self->state;
  auto next = st.book.next_due();
  if (!next)
    return;
  auto now_us = wall_clock_us();
  auto at_us = std::min(*next * 1'000'000, now_us + max_timer_wait_us);
  if (st.armed_us != 0 && st.armed_us <= at_us)
    return;
  st.armed_us = at_us;
  self->delayed_send(self, std::chrono::microseconds{std::max<int64_t>(0, at_us - now_us)},
                     tick_atom::value);
}

/// What a fire's answer needs of it (one allocation, shared by both of its
/// handlers: a pass fires thousands).
struct fire_note {
  std::string schedule_id;
  int64_t occurrence_s = 0;
  std::optional<int64_t> next_due_s;
};
using fire_note_ptr = std::shared_ptr<const fire_note>;

/// The fire's write ended: the record moves on (or goes), or, when nothing
/// was queued, it is asked again after the retry delay.
void fire_settled(self_pointer self, const fire_note& note, bool queued) {
  auto& st = self->state;
  if (queued && !note.next_due_s) {
    st.book.erase(note.schedule_id);
  } else {
    auto retry_at = now_seconds() + st.opts.retry_delay_s;
    st.book.update(note.schedule_id, [&](schedules::record& rec) {
      rec.busy = false;
      if (queued) {
        rec.last_fired_s = note.occurrence_s;
        rec.next_due_s = note.next_due_s;
      } else {
        rec.next_due_s = retry_at;
      }
    });
  }
  if (queued)
    ++st.fired;
  else
    ++st.retried;
  settled(self, note.schedule_id);
  arm(self);
}

/// Queues one due occurrence with the schedule's new record. (No timeout:
/// the queue answers every enqueue once its write is settled, and a queue
/// that ends takes the tenant, and so the keeper, with it.)
void send_fire(self_pointer self, std::string schedule_id, schedules::firing fired) {
  auto note = std::make_shared<const fire_note>(
    fire_note{std::move(schedule_id), fired.occurrence_s, fired.next_due_s});
  self
    ->request(self->state.queue, caf::infinite, enqueue_atom::value,
              schedules::item_text(fired.item), std::move(fired.with))
    .then(
      [self, note](const std::string&) { fire_settled(self, *note, true); },
      [self, note](caf::error& err) {
        if (code_of(err) != errc::conflict) {
          log::warn("schedule_keeper",
                    "a due schedule's turn was not queued; it is tried again: " + message_of(err));
          fire_settled(self, *note, false);
          return;
        }
        // Queued before (its answer was lost): the record is written
        // alone (memory still holds it as it was before the fire).
        const auto* rec = self->state.book.find(note->schedule_id);
        if (rec == nullptr) { // (never: owner operations wait for the fire)
          fire_settled(self, *note, true);
          return;
        }
        write(
          self, rec->chat_id, note->schedule_id,
          {schedules::fired_event(note->schedule_id, *rec, note->occurrence_s, note->next_due_s)},
          [self, note](bool landed, const caf::error&) { fire_settled(self, *note, landed); });
      });
}

/// Fires every schedule due now, each without waiting for the others; each
/// item carries the time it was fired at.
void fire_due(self_pointer self) {
  auto& st = self->state;
  for (auto id : st.book.due(now_seconds())) {
    const auto* rec = st.book.find(id);
    auto fired = schedules::fire(id, *rec, wall_clock_us());
    if (!fired.fire) {
      st.book.update(id, [&](schedules::record& r) { r.next_due_s = fired.next_due_s; });
      continue;
    }
    st.book.update(id, [](schedules::record& r) { r.busy = true; });
    send_fire(self, std::string{id}, std::move(fired));
  }
  arm(self);
}

// -- the owner's operations and the tool's create -----------------------------------

/// Replaces the record in memory with what the store holds (after a write
/// whose outcome was unknown), then `done`.
template <class F>
void reread(self_pointer self, const std::string& schedule_id, F done) {
  auto key = work::schedule_prefix(self->state.tenant_id) + schedule_id;
  self
    ->request(self->state.store, store_timeout, scan_atom::value, state_atom::value, key,
              uint32_t{1})
    .then(
      [self, key, schedule_id, done](std::vector<state_entry>& found) mutable {
        auto& book = self->state.book;
        if (found.empty() || found.front().key != key) {
          book.erase(schedule_id);
        } else if (auto loaded = schedules::from_json(
                     json::parse(found.front().value, nullptr, false), system_time_zones())) {
          book.put(schedule_id, std::move(loaded->second));
        } else {
          book.update(schedule_id, [](schedules::record& r) { r.busy = false; });
        }
        done();
      },
      [self, schedule_id, done](caf::error&) mutable {
        self->state.book.update(schedule_id, [](schedules::record& r) { r.busy = false; });
        done();
      });
}

caf::result<std::string> create(self_pointer self, const json& body) {
  auto& st = self->state;
  schedules::requester who{fields::text(body, "agent_id"), fields::text(body, "chat_id"),
                           fields::text(body, "run_id"), wall_clock_us()};
  if (who.agent_id.empty() || who.chat_id.empty() || who.run_id.empty())
    return make_error(errc::missing_field, "create: agent_id, chat_id and run_id are required");
  auto made = schedules::create(who, body.value("arguments", json::object()), st.opts.limits,
                                st.book.size() + st.creating, system_time_zones());
  if (made.refused)
    return json{{"error", made.refused->code}, {"message", made.refused->message}}.dump();
  ++st.creating;
  auto promise = self->make_response_promise<std::string>();
  auto id = made.schedule_id;
  std::vector<event_draft> events{schedules::saved_event(id, made.rec)};
  write(self, who.chat_id, id, std::move(events),
        [self, promise, id, rec = std::move(made.rec)](bool landed, const caf::error& err) mutable {
          auto& st = self->state;
          --st.creating;
          if (!landed) {
            promise.deliver(
              make_error(errc::storage_failure, "the schedule was not stored: " + message_of(err)));
            return;
          }
          auto listing = schedules::to_listing(id, rec);
          st.book.put(id, std::move(rec));
          arm(self);
          promise.deliver(json{{"schedule", std::move(listing)}}.dump());
        });
  return promise;
}

/// Writes an owner's change of a schedule, then answers `answer()`.
void change_schedule(self_pointer self, const std::string& schedule_id, schedules::change change,
                     string_promise promise) {
  auto& st = self->state;
  const auto* rec = st.book.find(schedule_id);
  auto chat_id = rec->chat_id;
  st.book.update(schedule_id, [](schedules::record& r) { r.busy = true; });
  auto events = std::vector<event_draft>{change.event};
  write(self, chat_id, schedule_id, std::move(events),
        [self, schedule_id, after = std::move(change.after),
         promise](bool landed, const caf::error& err) mutable {
          auto& st = self->state;
          auto answer = [self, schedule_id, promise]() mutable {
            const auto* now = self->state.book.find(schedule_id);
            if (now == nullptr)
              promise.deliver(json{{"deleted", schedule_id}}.dump());
            else
              promise.deliver(schedules::to_listing(schedule_id, *now).dump());
          };
          if (landed) {
            if (after)
              st.book.put(schedule_id, std::move(*after));
            else
              st.book.erase(schedule_id);
            answer();
            arm(self);
            settled(self, schedule_id);
            return;
          }
          // Not written, or not known to be: memory takes what is stored.
          reread(self, schedule_id, [self, schedule_id, promise, err]() mutable {
            promise.deliver(
              make_error(errc::storage_failure, "the change was not stored: " + message_of(err)));
            arm(self);
            settled(self, schedule_id);
          });
        });
}

void run_op(self_pointer self, const std::string& op, const json& body, string_promise promise) {
  auto& st = self->state;
  auto id = fields::text(body, "schedule_id");
  const auto* rec = st.book.find(id);
  if (rec == nullptr) {
    promise.deliver(make_error(errc::not_found, "no schedule has this id"));
    settled(self, id); // (operations that waited on a schedule since deleted)
    return;
  }
  if (rec->busy) {
    st.waiting[id].push_back({op, body, promise});
    return;
  }
  schedules::change change;
  if (op == "pause") {
    change = schedules::pause(id, *rec);
  } else if (op == "resume") {
    change = schedules::resume(id, *rec, now_seconds());
  } else {
    change.event = schedules::deleted_event(id);
  }
  if (change.refused) {
    promise.deliver(make_error(errc::conflict, change.refused->message));
    settled(self, id);
    return;
  }
  if (change.event.type.empty()) { // no change: already so
    promise.deliver(schedules::to_listing(id, *rec).dump());
    settled(self, id);
    return;
  }
  change_schedule(self, id, std::move(change), std::move(promise));
}

std::string list(const schedules::book& book) {
  std::vector<const schedules::book::map::value_type*> rows;
  rows.reserve(book.size());
  for (const auto& entry : book.records())
    rows.push_back(&entry);
  std::sort(rows.begin(), rows.end(), [](const auto* lhs, const auto* rhs) {
    return std::tie(lhs->second.created_us, lhs->first)
           < std::tie(rhs->second.created_us, rhs->first);
  });
  json out = json::array();
  for (const auto* row : rows)
    out.push_back(schedules::to_listing(row->first, row->second));
  return json{{"schedules", std::move(out)}}.dump();
}

caf::result<std::string> schedule_op(self_pointer self, const std::string& op, const json& body) {
  if (op == "create")
    return create(self, body);
  if (op == "list")
    return list(self->state.book);
  if (op == "pause" || op == "resume" || op == "delete") {
    auto promise = self->make_response_promise<std::string>();
    run_op(self, op, body, promise);
    return promise;
  }
  return make_error(errc::not_found, "unknown schedule operation");
}

// -- start --------------------------------------------------------------------------

/// Reads every schedule from the projection (awaited: nothing is served
/// before they are known), then asks each active one what is due now.
void load(self_pointer self) {
  auto& st = self->state;
  self
    ->request(st.store, store_timeout, scan_atom::value, state_atom::value,
              work::schedule_prefix(st.tenant_id), max_loaded)
    .await(
      [self](std::vector<state_entry>& entries) {
        auto& st = self->state;
        auto now_s = now_seconds();
        for (const auto& entry : entries) {
          auto loaded =
            schedules::from_json(json::parse(entry.value, nullptr, false), system_time_zones());
          if (!loaded) {
            log::error("schedule_keeper",
                       "a stored schedule was left out: " + loaded.error().message());
            continue;
          }
          auto& [id, rec] = *loaded;
          if (!rec.zone)
            log::error("schedule_keeper", "a schedule's time zone did not load; it cannot fire "
                                          "until the zone's data is installed");
          // Each active schedule is asked once now (a restart's missed turns).
          if (rec.st == schedules::state::active)
            rec.next_due_s = now_s;
          st.book.put(std::move(id), std::move(rec));
        }
        if (!entries.empty())
          log::info("schedule_keeper", std::to_string(entries.size()) + " schedules loaded");
        fire_due(self);
      },
      [self](caf::error& err) {
        log::error("schedule_keeper", "cannot read the schedules: " + message_of(err));
        self->quit(std::move(err));
      });
}

schedule_keeper_actor::behavior_type keeper_behavior(self_pointer self, std::string tenant_id,
                                                     event_store_actor store,
                                                     work_queue_actor queue,
                                                     schedule_keeper_options opts) {
  auto& st = self->state;
  st.tenant_id = std::move(tenant_id);
  st.store = std::move(store);
  st.queue = std::move(queue);
  st.opts = opts;
  load(self);
  return {
    [self](schedule_atom, const std::string& op,
           const std::string& body) -> caf::result<std::string> {
      auto doc = json::parse(body, nullptr, false);
      if (!doc.is_object())
        return make_error(errc::bad_json, "expected one JSON object");
      return schedule_op(self, op, doc);
    },
    [self](health_atom) -> std::string {
      auto& st = self->state;
      std::size_t active = 0;
      std::size_t writing = 0;
      for (const auto& [id, rec] : st.book.records()) {
        active += rec.st == schedules::state::active ? 1 : 0;
        writing += rec.busy ? 1 : 0;
      }
      auto next = st.book.next_due();
      return json{{"schedules", st.book.size()},
                  {"active", active},
                  {"paused", st.book.size() - active},
                  {"writing", writing + st.creating},
                  {"fired", st.fired},
                  {"retried", st.retried},
                  {"next_due_s", next ? json(*next) : json(nullptr)}}
        .dump();
    },
    [self](tick_atom) {
      self->state.armed_us = 0;
      fire_due(self);
    },
  };
}

} // namespace

schedule_keeper_actor spawn_schedule_keeper(caf::local_actor* tenant, std::string tenant_id,
                                            event_store_actor store, work_queue_actor queue,
                                            schedule_keeper_options options) {
  return tenant->spawn<caf::linked>(keeper_behavior, std::move(tenant_id), std::move(store),
                                    std::move(queue), options);
}

} // namespace voxos
