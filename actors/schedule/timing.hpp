// When an agent schedule's turns come due: the timing a model asks for
// through create_agent_schedule, its occurrences in an IANA time zone, and
// what to fire after a restart. CAF-free; every function is pure (a zone is
// an immutable value, config/time_zone.hpp), so the schedule keeper calls
// them from any thread.
//
// Instants are int64 seconds since the Unix epoch (UTC); "local seconds" are
// a wall-clock reading in the schedule's zone counted the same way
// (time_zone.hpp). A local time becomes an instant under the zone's policy:
// one in a gap (clocks jumped forward over it) is shifted forward by the
// gap, one in a fold (clocks went back over it) is its earlier instant.
//
// A timing is one of
//   once      one turn at a local date and time (`at`);
//   interval  turns `every_s` seconds apart from a first occurrence: the
//             local `starts_at`, or, without it, one interval from now.
// The occurrences of an interval (index 0 is the first):
//   - a whole number of days (every_s % 86400 == 0) steps in local calendar
//     days at the first occurrence's wall-clock time: occurrence k is the
//     local time first + k * every_s resolved in the zone, so a daily 09:00
//     stays 09:00 local across daylight-saving changes (09:00 in a gap fires
//     at the shifted time, one in a fold once, at the earlier instant);
//   - any other interval steps in elapsed seconds from the first
//     occurrence's instant: occurrence k is first_utc + k * every_s, so
//     "every 90 minutes" stays 90 minutes apart across a change.
// A one-shot and a day-stepping interval keep their local reading and are
// resolved each time they are asked about, so a zone whose rules change
// (a tzdata upgrade) keeps their wall-clock time; an interval in elapsed
// seconds keeps its first instant. Occurrences end at the end of year 9999
// (time_zone's range). Finding one is O(log transitions) work, whatever the
// number of occurrences since the first.
//
// Errors are status values (messages/status.hpp) whose messages name the
// argument path and the rule broken, never the rejected value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "messages/status.hpp"

namespace voxos {

class time_zone;
class time_zone_db;

/// The bounds a new schedule's timing is checked against; each default is
/// what the node uses unless configured otherwise.
struct schedule_bounds {
  /// The shortest interval: one minute (the tool's schema allows 1 second;
  /// the node asks for more).
  int64_t min_interval_s = 60;
  /// The longest interval: ten years of 365.25 days (also the schema's bound).
  int64_t max_interval_s = 315'576'000;
  /// How far ahead a one-shot, or an interval's first occurrence, may lie:
  /// ten years of 365.25 days.
  int64_t max_horizon_s = 315'576'000;
};

/// The largest interval any timing may carry, whatever the bounds: the
/// schema's maximum, ten years of 365.25 days. Stored timings past it are
/// corrupt.
inline constexpr int64_t max_schedule_interval_s = 315'576'000;

/// A checked timing, as stored with its schedule.
struct schedule_timing {
  enum class kind : uint8_t { once, interval };
  kind k = kind::once;
  /// once: the wall-clock time it fires at; interval: its first occurrence's
  /// wall-clock reading. Local seconds in `zone`.
  int64_t first_local_s = 0;
  /// The first occurrence's instant when the timing was made: the anchor of
  /// an interval in elapsed seconds; for the others a record of what their
  /// local reading meant then (they are resolved again when asked).
  int64_t first_utc_s = 0;
  /// interval: seconds between occurrences (1 .. max_schedule_interval_s);
  /// once: 0.
  int64_t every_s = 0;
  /// The IANA zone name.
  std::string zone;

  /// An interval that steps in local calendar days (see the top of the file).
  bool steps_in_days() const noexcept { return k == kind::interval && every_s % 86'400 == 0; }
};

/// Checks create_agent_schedule's `timing` argument (schema in
/// config/internal_tools.cpp, already validated there; checked again here)
/// and its `timezone`, at `now_s`:
///   {"kind": "once", "at": "YYYY-MM-DDTHH:MM[:SS]"}
///   {"kind": "interval", "every_seconds": N, "starts_at": "YYYY-MM-DDTHH:MM[:SS]"}
///   (starts_at optional)
/// Local times are wall-clock readings in the zone and must exist on the
/// calendar (month 1..12, a day of that month, 00:00:00 .. 23:59:59).
/// Without starts_at, the first occurrence is now + every_seconds; for a
/// whole number of days it is the wall-clock time of now, that many days
/// later (resolved in the zone).
///
/// Errors:
///   wrong_type, missing_field, unknown_field  a malformed `timing`
///   out_of_range  `kind` not once or interval; a local time not in the
///                 format or not on the calendar; a one-shot, or an
///                 interval's starts_at, at or before now (a series cannot
///                 start in the past); an interval under
///                 bounds.min_interval_s or over bounds.max_interval_s; a
///                 one-shot or a first occurrence more than
///                 bounds.max_horizon_s after now
///   out_of_range, not_found, corrupt_data, unavailable  `timezone`, as
///                 time_zone_db::load reports (out_of_range: the name breaks
///                 the grammar; not_found: no such zone)
result<schedule_timing> parse_timing(const nlohmann::json& timing, std::string_view zone_name,
                                     int64_t now_s, const schedule_bounds& bounds,
                                     time_zone_db& zones);

/// Occurrence `index` (0 is the first) of `timing` in `zone` (the zone named
/// timing.zone), as an instant; nullopt past the end: a one-shot has index 0
/// only, and no occurrence lies after the end of year 9999.
std::optional<int64_t> occurrence_utc(const schedule_timing& timing, const time_zone& zone,
                                      uint64_t index);

/// The first occurrence strictly after `after_utc_s`; nullopt when none is
/// left (a one-shot at or before it, or past the end of year 9999).
std::optional<int64_t> next_occurrence(const schedule_timing& timing, const time_zone& zone,
                                       int64_t after_utc_s);

/// The latest occurrence at or before `at_utc_s`; nullopt before the first.
std::optional<int64_t> latest_occurrence(const schedule_timing& timing, const time_zone& zone,
                                         int64_t at_utc_s);

/// What a schedule does at `now_s`, given the occurrence it last fired for.
struct due_decision {
  /// Start a turn now, for `occurrence_utc_s`.
  bool fire = false;
  /// fire: the occurrence the turn is for (record it as the last fired);
  /// otherwise 0.
  int64_t occurrence_utc_s = 0;
  /// When to ask again; nullopt: never (a one-shot that fired or fires now,
  /// or a series past its last occurrence).
  std::optional<int64_t> next_due_utc_s;
};

/// Decides at `now_s`, on start (after a restart) as when a timer fires:
///   - before the first occurrence: nothing fires; next due is the first.
///   - once, not fired yet, its time come: fires once, however late (a
///     one-shot missed while the node was down still runs); no next.
///   - once, fired already (`last_fired` set): never again; no next.
///   - interval, an occurrence at or before now that is later than
///     `last_fired`: fires once, for the latest such occurrence (missed
///     ones collapse into it); next due is the first occurrence strictly
///     after now.
/// No occurrence fires twice: one at or before `last_fired` never fires,
/// and next due is strictly after both now and `last_fired` (so a clock
/// that moved back does not repeat one).
due_decision decide_due(const schedule_timing& timing, const time_zone& zone,
                        std::optional<int64_t> last_fired_occurrence_utc_s, int64_t now_s);

/// The stored form of a timing, for the event that records its schedule:
///   {"kind": "once", "first_local_s": N, "first_utc_s": N, "zone": "..."}
///   {"kind": "interval", "first_local_s": N, "first_utc_s": N,
///    "every_s": N, "zone": "..."}
nlohmann::json timing_to_json(const schedule_timing& timing);

/// Reads the stored form back; corrupt_data for anything else: not an
/// object, a member missing, of another type or not listed above, a kind
/// that is neither, seconds outside time_zone's range, an interval outside
/// 1 .. max_schedule_interval_s, a zone name that breaks the grammar. The
/// zone is not loaded (its file may be missing until tzdata is installed).
result<schedule_timing> timing_from_json(const nlohmann::json& stored);

} // namespace voxos
