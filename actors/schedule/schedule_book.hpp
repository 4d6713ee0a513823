// The schedules of one tenant as its keeper holds them (schedule_keeper.hpp):
// compact records, the index of when each is next asked about, and the rules
// of creating, pausing, resuming, deleting and firing one, each answered as
// the record it becomes and the events that make it durable. CAF-free and
// clock-free (every rule takes the time). The book itself changes only
// when the keeper tells it an append landed.
//
// A schedule's life:
//
//   create --> active --pause--> paused --resume--> active
//                |  ^                                  |
//                |  +----- fired (an interval) --------+
//                +--fired (a one-shot) / delete--> (gone)
//
// A one-shot's record is deleted by the append that queues its turn: what is
// left of it is the work item and, later, the turn in its chat. An interval
// lives until its owner deletes it.
//
// Stored form (schedule.saved's data, the projection's value):
//   {"schedule_id", "agent_id", "chat_id", "created_by_run", "task_name",
//    "instruction", "timing": <timing_to_json>, "timezone",
//    "state": "active" | "paused", "created_us",
//    "last_fired_s": null | the occurrence last fired (UTC seconds),
//    "resumed_s": null | the last resume (UTC seconds),
//    "next_due_s": null | when it is next asked about (informational)}
//
// What fires when is the timing's (timing.hpp, decide_due): a missed
// one-shot once, an interval's missed occurrences once, none twice. A pause
// passes over what falls in it: an interval's occurrences at or before its
// resume never fire (they count as fired), and a one-shot whose time passed
// while it was paused cannot be resumed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/schedule/timing.hpp"
#include "actors/work/work_item.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"

namespace voxos {

class time_zone;
class time_zone_db;

namespace schedules {

enum class state : uint8_t { active, paused };

/// One schedule, compact: an idle schedule costs its strings, one map node
/// and one index node (the benchmark's bound is 1 KiB each at 10,000).
struct record {
  std::string agent_id;
  std::string chat_id; ///< where its turns return
  std::string created_by_run;
  std::string task_name;
  std::string instruction; ///< the one copy of the text
  schedule_timing timing;  ///< timing.zone is the schedule's timezone
  /// timing_to_json's text, kept in step with `timing` (which never
  /// changes once made): every fire writes it, and building it costs more
  /// than the rest of the record.
  std::string timing_json;
  /// The loaded zone, shared by every schedule in it; null when the zone
  /// did not load at start (the schedule is kept, listed, never due).
  std::shared_ptr<const time_zone> zone;
  int64_t created_us = 0;
  std::optional<int64_t> last_fired_s;
  std::optional<int64_t> resumed_s;
  /// When the keeper next asks decide_due (a retry's time after a failed
  /// write); nullopt: never (paused, or nothing left to fire).
  std::optional<int64_t> next_due_s;
  schedules::state st = state::active;
  /// A write of this schedule is on its way: it is out of the index, and
  /// owner operations on it wait for the write.
  bool busy = false;
};

/// A rule a request broke: a stable code and a model-facing message naming
/// the argument and the rule, never the rejected value.
struct refusal {
  std::string code;
  std::string message;
};

/// The bounds of new schedules (the keeper's options, from work_config).
struct create_limits {
  schedule_bounds timing;
  /// Schedules one tenant may hold (work.max_schedules).
  std::size_t max_schedules = 10'000;
};

/// Who asks for a schedule: from the run's execution context only.
struct requester {
  std::string agent_id;
  std::string chat_id;
  std::string run_id;
  int64_t now_us = 0;
};

/// A schedule made, or the rule it broke.
struct creation {
  std::optional<refusal> refused;
  std::string schedule_id;
  record rec;
};

/// Checks create_agent_schedule's arguments {task_name, instruction, timing,
/// timezone} (already validated against the tool's schema) at who.now_us;
/// `held` schedules exist or are being written. Codes:
///   too_many_schedules  `held` is at limits.max_schedules
///   unknown_timezone    the zone's name breaks the grammar or names no zone
///   timezone_unavailable the zone's data cannot be read
///   interval_too_short  under limits.timing.min_interval_s (work.min_schedule_interval_s)
///   interval_too_long   over limits.timing.max_interval_s
///   in_past             a one-shot, or an interval's starts_at, at or before now
///   too_far_ahead       more than limits.timing.max_horizon_s ahead
///   invalid_arguments   anything else (a missing or mistyped member, a
///                       local time not on the calendar)
creation create(const requester& who, const nlohmann::json& arguments, const create_limits& limits,
                std::size_t held, time_zone_db& zones);

/// The stored form (see the top of the file), written by hand: firing
/// thousands at once builds one per schedule.
std::string to_json_text(std::string_view schedule_id, const record& rec);
/// The owner's listing of one schedule: the stored form with its next due
/// time as ISO 8601 in UTC and in its zone ("next_due_utc", "next_due_local").
nlohmann::json to_listing(std::string_view schedule_id, const record& rec);
/// Reads a stored record; its zone is loaded from `zones` (a zone that does
/// not load leaves `zone` null). corrupt_data for anything malformed.
result<std::pair<std::string, record>> from_json(const nlohmann::json& stored, time_zone_db& zones);

/// "2025-03-09T09:00:00Z" and "2025-03-09T09:00:00-05:00" of an instant.
std::string iso_utc(int64_t utc_s);
std::string iso_local(const time_zone& zone, int64_t utc_s);

/// work::to_json(it).dump(), written by hand: firing thousands at once
/// builds one per schedule (the queue reads it as any item).
std::string item_text(const work::item& it);

event_draft saved_event(std::string_view schedule_id, const record& rec);
event_draft deleted_event(std::string_view schedule_id);

/// What the keeper does with a schedule that is due at `now_us`.
struct firing {
  bool fire = false;
  /// fire: the turn to queue (its item id a function of the schedule and
  /// the occurrence), and the events to append with it: the schedule with
  /// its last fired occurrence, or its deletion when nothing is left to
  /// fire (`gone`).
  work::item item;
  std::vector<event_draft> with;
  int64_t occurrence_s = 0;
  bool gone = false;
  /// When to ask again (with or without a fire); nullopt: never.
  std::optional<int64_t> next_due_s;
};
firing fire(std::string_view schedule_id, const record& rec, int64_t now_us);
/// The event a fire of `occurrence_s` appends with its item (fire's
/// `with`): the record with it as last fired and `next_due_s`, or, with no
/// next due time, the schedule's deletion.
event_draft fired_event(std::string_view schedule_id, const record& rec, int64_t occurrence_s,
                        const std::optional<int64_t>& next_due_s);

/// The owner's changes: the record after it, and the event to append.
struct change {
  std::optional<refusal> refused;
  std::optional<record> after; ///< nullopt: deleted
  event_draft event;
};
/// paused; already paused is no change (an empty event type).
change pause(std::string_view schedule_id, const record& rec);
/// active again, next due at its first occurrence strictly after now (what
/// fell in the pause never fires); already active is no change; a one-shot
/// whose time passed meanwhile is refused (`passed`).
change resume(std::string_view schedule_id, const record& rec, int64_t now_s);

/// The records and the index of their due times.
class book {
public:
  using map = std::map<std::string, record, std::less<>>;

  std::size_t size() const noexcept { return records_.size(); }
  const map& records() const noexcept { return records_; }
  const record* find(std::string_view schedule_id) const;

  /// Adds or replaces a record and indexes it when active, not busy and due.
  void put(std::string schedule_id, record rec);
  void erase(std::string_view schedule_id);
  /// Changes a record in place (`edit(record&)`), keeping the index right.
  void update(std::string_view schedule_id, const std::function<void(record&)>& edit);

  /// The earliest due time indexed.
  std::optional<int64_t> next_due() const;
  /// The schedules due at or before `now_s`, earliest first (their keys
  /// stay valid until they are erased).
  std::vector<std::string_view> due(int64_t now_s) const;

private:
  void unindex(const map::value_type& entry);
  void index(const map::value_type& entry);

  map records_;
  std::set<std::pair<int64_t, std::string_view>> due_;
};

} // namespace schedules
} // namespace voxos
