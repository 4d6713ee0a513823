#include "actors/schedule/timing.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "config/civil_time.hpp"
#include "config/time_zone.hpp"

namespace voxos {

namespace {

using nlohmann::json;

/// The longest zone name a stored timing may carry (time_zone_db's default
/// bound, and the tool schema's).
constexpr std::size_t max_zone_name_length = 64;

/// Of a whole-day interval's candidate indices around an estimate, how many
/// days either side to try: a zone's offsets span less than 52 hours
/// (time_zone.cpp), so the occurrence sought is within three days of the
/// estimate read through any offset.
constexpr int64_t day_window = 3;

// -- reading the tool's arguments ---------------------------------------------

/// An integer argument: a JSON integer, or a float with no fractional part
/// (JSON Schema counts 60.0 as an integer). Magnitudes past int64 (or, for a
/// float, past 2^53) saturate, so a bound check refuses them as too large.
std::optional<int64_t> integer_of(const json& value) {
  if (value.is_number_unsigned()) {
    const auto number = value.get<uint64_t>();
    return number > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(number);
  }
  if (value.is_number_integer())
    return value.get<int64_t>();
  if (value.is_number_float()) {
    const double number = value.get<double>();
    constexpr double exact = 9'007'199'254'740'992.0; // 2^53
    if (std::isfinite(number) && std::floor(number) == number)
      return static_cast<int64_t>(std::clamp(number, -exact, exact));
  }
  return std::nullopt;
}

/// Two ASCII digits at `text[at]` as a number; -1 when either is not a digit.
int two_digits(std::string_view text, std::size_t at) {
  const char tens = text[at];
  const char ones = text[at + 1];
  if (tens < '0' || tens > '9' || ones < '0' || ones > '9')
    return -1;
  return (tens - '0') * 10 + (ones - '0');
}

/// "YYYY-MM-DDTHH:MM" or "YYYY-MM-DDTHH:MM:SS" as local seconds; nullopt
/// when the text breaks the format or names no calendar date and time.
std::optional<int64_t> parse_local_date_time(std::string_view text) {
  if (text.size() != 16 && text.size() != 19)
    return std::nullopt;
  if (text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':'
      || (text.size() == 19 && text[16] != ':'))
    return std::nullopt;
  const int century = two_digits(text, 0);
  const int year_of_century = two_digits(text, 2);
  civil_time time;
  time.month = two_digits(text, 5);
  time.day = two_digits(text, 8);
  time.hour = two_digits(text, 11);
  time.minute = two_digits(text, 14);
  time.second = text.size() == 19 ? two_digits(text, 17) : 0;
  if (century < 0 || year_of_century < 0 || time.month < 1 || time.month > 12 || time.day < 1
      || time.hour < 0 || time.hour > 23 || time.minute < 0 || time.minute > 59 || time.second < 0
      || time.second > 59)
    return std::nullopt;
  time.year = century * 100 + year_of_century;
  if (time.day > days_in_month(time.year, time.month))
    return std::nullopt;
  return from_civil(time);
}

/// Refuses members of `object` not in `allowed` (the schema's
/// additionalProperties: false).
status only_members(const json& object, std::initializer_list<std::string_view> allowed,
                    std::string_view path) {
  for (const auto& member : object.items()) {
    if (std::find(allowed.begin(), allowed.end(), member.key()) == allowed.end())
      return status::error(errc::unknown_field,
                           std::string{path} + " accepts no members beside its kind's own");
  }
  return status::ok();
}

/// The local time at `timing[key]`, whose path is "timing.<key>".
result<int64_t> local_time_member(const json& timing, const char* key) {
  const std::string path = std::string{"timing."} + key;
  const auto found = timing.find(key);
  if (found == timing.end())
    return status::error(errc::missing_field, path + " is required");
  if (!found->is_string())
    return status::error(errc::wrong_type, path + " must be a string");
  const auto local = parse_local_date_time(found->get_ref<const std::string&>());
  if (!local)
    return status::error(errc::out_of_range,
                         path
                           + " must be a local date and time YYYY-MM-DDTHH:MM or "
                             "YYYY-MM-DDTHH:MM:SS that exists on the calendar");
  return *local;
}

/// The zone, loaded; errors as time_zone_db reports them, under "timezone".
result<std::shared_ptr<const time_zone>> load_zone(std::string_view name, time_zone_db& zones) {
  auto loaded = zones.load(name);
  if (!loaded)
    return status::error(loaded.error().code(), "timezone: " + loaded.error().message()
                                                  + "; use an IANA name such as Europe/London");
  return loaded;
}

/// The first occurrence must lie after now and within the horizon.
status check_first_occurrence(int64_t first_utc_s, int64_t now_s, const schedule_bounds& bounds,
                              std::string_view path) {
  if (first_utc_s <= now_s)
    return status::error(errc::out_of_range,
                         std::string{path}
                           + " must be later than the current time in the given timezone");
  if (first_utc_s - now_s > bounds.max_horizon_s)
    return status::error(errc::out_of_range, std::string{path} + " must be at most "
                                               + std::to_string(bounds.max_horizon_s)
                                               + " seconds after the current time");
  return status::ok();
}

// -- occurrences ----------------------------------------------------------------

/// The index of the first occurrence strictly after `after_utc_s`; it may lie
/// past the series' end (occurrence_utc answers nullopt for it then).
uint64_t first_index_after(const schedule_timing& timing, const time_zone& zone,
                           int64_t after_utc_s) {
  after_utc_s = std::clamp(after_utc_s, time_zone::min_seconds, time_zone::max_seconds);
  if (timing.k == schedule_timing::kind::once)
    return zone.resolve(timing.first_local_s).utc_s > after_utc_s ? 0 : 1;
  if (!timing.steps_in_days()) {
    // Elapsed seconds: counted directly from the first instant.
    if (after_utc_s < timing.first_utc_s)
      return 0;
    return static_cast<uint64_t>((after_utc_s - timing.first_utc_s) / timing.every_s) + 1;
  }
  // Local days: estimate the index from the wall-clock reading at `after`,
  // then walk forward from a few days before it to the first occurrence
  // after it (occurrences never descend, and no occurrence `day_window`
  // days before the estimate lies after it, so this walks a few steps).
  const int64_t estimate =
    floor_div(zone.to_local(after_utc_s) - timing.first_local_s, timing.every_s);
  const int64_t days_per_step = timing.every_s / seconds_per_day;
  const int64_t margin = (day_window + days_per_step - 1) / days_per_step; // in steps
  for (uint64_t index = static_cast<uint64_t>(std::max<int64_t>(0, estimate - margin));; ++index) {
    const auto occurrence = occurrence_utc(timing, zone, index);
    if (!occurrence || *occurrence > after_utc_s)
      return index;
  }
}

} // namespace

// -- parsing --------------------------------------------------------------------

result<schedule_timing> parse_timing(const json& timing, std::string_view zone_name, int64_t now_s,
                                     const schedule_bounds& bounds, time_zone_db& zones) {
  // The shape: an object with a kind and that kind's members only.
  if (!timing.is_object())
    return status::error(errc::wrong_type, "timing must be an object");
  const auto kind = timing.find("kind");
  if (kind == timing.end())
    return status::error(errc::missing_field, "timing.kind is required");
  if (!kind->is_string())
    return status::error(errc::wrong_type, "timing.kind must be a string");
  schedule_timing out;
  if (*kind == "once") {
    out.k = schedule_timing::kind::once;
    if (auto shape = only_members(timing, {"kind", "at"}, "timing"); !shape)
      return shape;
  } else if (*kind == "interval") {
    out.k = schedule_timing::kind::interval;
    if (auto shape = only_members(timing, {"kind", "every_seconds", "starts_at"}, "timing"); !shape)
      return shape;
  } else {
    return status::error(errc::out_of_range, "timing.kind must be once or interval");
  }

  // The interval, against the bounds.
  if (out.k == schedule_timing::kind::interval) {
    const auto every = timing.find("every_seconds");
    if (every == timing.end())
      return status::error(errc::missing_field, "timing.every_seconds is required");
    if (!every->is_number())
      return status::error(errc::wrong_type, "timing.every_seconds must be an integer");
    const auto seconds = integer_of(*every);
    if (!seconds)
      return status::error(errc::out_of_range, "timing.every_seconds must be a whole number");
    const int64_t ceiling = std::min(bounds.max_interval_s, max_schedule_interval_s);
    if (*seconds < std::max<int64_t>(bounds.min_interval_s, 1))
      return status::error(errc::out_of_range,
                           "timing.every_seconds must be at least "
                             + std::to_string(std::max<int64_t>(bounds.min_interval_s, 1)));
    if (*seconds > ceiling)
      return status::error(errc::out_of_range,
                           "timing.every_seconds must be at most " + std::to_string(ceiling));
    out.every_s = *seconds;
  }

  // The zone.
  auto zone = load_zone(zone_name, zones);
  if (!zone)
    return zone.error();
  out.zone = (*zone)->name();

  // The first occurrence: a local time given, or one interval from now.
  const char* key = out.k == schedule_timing::kind::once ? "at" : "starts_at";
  std::string path = std::string{"timing."} + key;
  if (out.k == schedule_timing::kind::once || timing.contains(key)) {
    auto local = local_time_member(timing, key);
    if (!local)
      return local.error();
    out.first_local_s = *local;
    out.first_utc_s = (*zone)->resolve(out.first_local_s).utc_s;
  } else if (out.steps_in_days()) {
    // Whole days: now's wall-clock time, that many days on.
    path = "the first occurrence (the current local time plus timing.every_seconds)";
    out.first_local_s = (*zone)->to_local(now_s) + out.every_s;
    out.first_utc_s = (*zone)->resolve(out.first_local_s).utc_s;
  } else {
    path = "the first occurrence (the current time plus timing.every_seconds)";
    out.first_utc_s = now_s + out.every_s;
    out.first_local_s = (*zone)->to_local(out.first_utc_s);
  }
  if (auto when = check_first_occurrence(out.first_utc_s, now_s, bounds, path); !when)
    return when;
  return out;
}

// -- occurrences ----------------------------------------------------------------

std::optional<int64_t> occurrence_utc(const schedule_timing& timing, const time_zone& zone,
                                      uint64_t index) {
  if (timing.k == schedule_timing::kind::once) {
    if (index != 0)
      return std::nullopt;
    return zone.resolve(timing.first_local_s).utc_s;
  }
  // Past the end of year 9999: none (checked by division, so no product overflows).
  const int64_t base = timing.steps_in_days() ? timing.first_local_s : timing.first_utc_s;
  if (base > time_zone::max_seconds
      || index > static_cast<uint64_t>((time_zone::max_seconds - base) / timing.every_s))
    return std::nullopt;
  const int64_t offset = static_cast<int64_t>(index) * timing.every_s;
  if (timing.steps_in_days())
    return zone.resolve(timing.first_local_s + offset).utc_s;
  return timing.first_utc_s + offset;
}

std::optional<int64_t> next_occurrence(const schedule_timing& timing, const time_zone& zone,
                                       int64_t after_utc_s) {
  if (after_utc_s >= time_zone::max_seconds)
    return std::nullopt;
  return occurrence_utc(timing, zone, first_index_after(timing, zone, after_utc_s));
}

std::optional<int64_t> latest_occurrence(const schedule_timing& timing, const time_zone& zone,
                                         int64_t at_utc_s) {
  const uint64_t next = first_index_after(timing, zone, at_utc_s);
  if (next == 0)
    return std::nullopt;
  // The index before the first one after `at` is at or before it; past the
  // series' end, step back to its last occurrence.
  for (uint64_t index = next - 1;; --index) {
    if (auto occurrence = occurrence_utc(timing, zone, index))
      return occurrence;
    if (index == 0)
      return std::nullopt;
  }
}

due_decision decide_due(const schedule_timing& timing, const time_zone& zone,
                        std::optional<int64_t> last_fired_occurrence_utc_s, int64_t now_s) {
  due_decision out;
  // A one-shot fires at most once, whenever its time has come.
  if (timing.k == schedule_timing::kind::once) {
    if (last_fired_occurrence_utc_s)
      return out;
    const int64_t at = *occurrence_utc(timing, zone, 0);
    if (at <= now_s) {
      out.fire = true;
      out.occurrence_utc_s = at;
    } else {
      out.next_due_utc_s = at;
    }
    return out;
  }
  // An interval fires for its latest occurrence not yet fired, once.
  if (const auto latest = latest_occurrence(timing, zone, now_s);
      latest && (!last_fired_occurrence_utc_s || *latest > *last_fired_occurrence_utc_s)) {
    out.fire = true;
    out.occurrence_utc_s = *latest;
  }
  out.next_due_utc_s =
    next_occurrence(timing, zone, std::max(now_s, last_fired_occurrence_utc_s.value_or(now_s)));
  return out;
}

// -- the stored form ------------------------------------------------------------

json timing_to_json(const schedule_timing& timing) {
  json out = {{"kind", timing.k == schedule_timing::kind::once ? "once" : "interval"},
              {"first_local_s", timing.first_local_s},
              {"first_utc_s", timing.first_utc_s},
              {"zone", timing.zone}};
  if (timing.k == schedule_timing::kind::interval)
    out["every_s"] = timing.every_s;
  return out;
}

result<schedule_timing> timing_from_json(const json& stored) {
  const auto corrupt = [](const char* what) {
    return status::error(errc::corrupt_data, std::string{"stored schedule timing: "} + what);
  };
  if (!stored.is_object())
    return corrupt("not an object");
  schedule_timing out;
  const auto kind = stored.find("kind");
  if (kind == stored.end() || !kind->is_string())
    return corrupt("kind missing or not a string");
  if (*kind == "once") {
    out.k = schedule_timing::kind::once;
    if (stored.size() != 4)
      return corrupt("a one-shot has exactly kind, first_local_s, first_utc_s and zone");
  } else if (*kind == "interval") {
    out.k = schedule_timing::kind::interval;
    if (stored.size() != 5)
      return corrupt("an interval has exactly kind, first_local_s, first_utc_s, every_s and zone");
  } else {
    return corrupt("kind is neither once nor interval");
  }
  // Seconds within time_zone's range (the member count above and the finds
  // here together refuse unknown members).
  const auto seconds = [&stored](const char* key, int64_t low, int64_t high) {
    const auto found = stored.find(key);
    if (found == stored.end() || !found->is_number_integer())
      return std::optional<int64_t>{};
    const auto value = integer_of(*found);
    return value && *value >= low && *value <= high ? value : std::nullopt;
  };
  const auto local = seconds("first_local_s", time_zone::min_seconds, time_zone::max_seconds);
  const auto utc = seconds("first_utc_s", time_zone::min_seconds, time_zone::max_seconds);
  if (!local || !utc)
    return corrupt("first_local_s and first_utc_s must be integers within years 0000..9999");
  out.first_local_s = *local;
  out.first_utc_s = *utc;
  if (out.k == schedule_timing::kind::interval) {
    const auto every = seconds("every_s", 1, max_schedule_interval_s);
    if (!every)
      return corrupt("every_s must be an integer from 1 to ten years of seconds");
    out.every_s = *every;
  }
  const auto zone = stored.find("zone");
  if (zone == stored.end() || !zone->is_string()
      || !check_time_zone_name(zone->get_ref<const std::string&>(), max_zone_name_length))
    return corrupt("zone must be a time zone name");
  out.zone = zone->get<std::string>();
  return out;
}

} // namespace voxos
