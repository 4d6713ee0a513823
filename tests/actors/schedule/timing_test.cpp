// actors/schedule/timing: a schedule's timing checked at creation, its
// occurrences across daylight-saving changes in real zones of the system
// zoneinfo, what fires after a restart, and the stored form.
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/schedule/timing.hpp"
#include "config/civil_time.hpp"
#include "config/time_zone.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// A date and time as seconds counted as if UTC: an instant when read as
/// UTC, a wall-clock reading when read as local seconds.
int64_t seconds_at(int64_t year, int month, int day, int hour, int minute, int second = 0) {
  return from_civil({year, month, day, hour, minute, second});
}

std::shared_ptr<const time_zone> zone_named(const std::string& name) {
  auto loaded = system_time_zones().load(name);
  REQUIRE_MESSAGE(loaded.is_ok(), name);
  return *loaded;
}

/// A timing the tool would accept, parsed at `now_s` under the default bounds.
schedule_timing accepted(const json& timing, const std::string& zone, int64_t now_s) {
  auto parsed = parse_timing(timing, zone, now_s, schedule_bounds{}, system_time_zones());
  REQUIRE_MESSAGE(parsed.is_ok(), parsed.error().message());
  return *parsed;
}

/// The refusal of a timing (bounds default unless given); checks that its
/// message repeats none of `rejected`.
status refused(const json& timing, const std::string& zone, int64_t now_s,
               const std::vector<std::string>& rejected = {},
               const schedule_bounds& bounds = schedule_bounds{}) {
  auto parsed = parse_timing(timing, zone, now_s, bounds, system_time_zones());
  REQUIRE_FALSE(parsed.is_ok());
  for (const auto& value : rejected)
    CHECK_MESSAGE(parsed.error().message().find(value) == std::string::npos,
                  parsed.error().message());
  return parsed.error();
}

json daily(const std::string& starts_at) {
  return {{"kind", "interval"}, {"every_seconds", 86'400}, {"starts_at", starts_at}};
}

/// The wall-clock reading of `utc_s` in `zone`, as seconds of its day.
int64_t local_time_of_day(const time_zone& zone, int64_t utc_s) {
  const int64_t local = zone.to_local(utc_s);
  return local - floor_div(local, seconds_per_day) * seconds_per_day;
}

/// Checks that the first occurrences of `timing` are `expected`, in order.
void check_first_occurrences(const schedule_timing& timing, const time_zone& zone,
                             std::initializer_list<int64_t> expected) {
  uint64_t index = 0;
  for (const int64_t instant : expected) {
    INFO("occurrence " << index);
    CHECK(occurrence_utc(timing, zone, index++) == instant);
  }
}

const int64_t before_2024 = seconds_at(2023, 12, 1, 0, 0);

} // namespace

// -- occurrences across daylight-saving changes -------------------------------

TEST_CASE("a daily 09:00 schedule in New York stays 09:00 local across the spring-forward day") {
  const auto new_york = zone_named("America/New_York");
  const auto timing = accepted(daily("2024-03-08T09:00"), "America/New_York", before_2024);
  CHECK(timing.steps_in_days());
  // 09:00 EST is 14:00 UTC; from Sunday 10 March, 09:00 EDT is 13:00 UTC.
  check_first_occurrences(timing, *new_york,
                          {seconds_at(2024, 3, 8, 14, 0), seconds_at(2024, 3, 9, 14, 0),
                           seconds_at(2024, 3, 10, 13, 0), seconds_at(2024, 3, 11, 13, 0)});
  // Found from any instant, each at 09:00 local.
  CHECK(next_occurrence(timing, *new_york, seconds_at(2024, 3, 9, 14, 0))
        == seconds_at(2024, 3, 10, 13, 0));
  CHECK(next_occurrence(timing, *new_york, seconds_at(2024, 3, 10, 12, 59, 59))
        == seconds_at(2024, 3, 10, 13, 0));
  for (uint64_t index = 0; index < 10; ++index)
    CHECK(local_time_of_day(*new_york, *occurrence_utc(timing, *new_york, index)) == 9 * 3600);
}

TEST_CASE("a daily 09:00 schedule in New York stays 09:00 local across the fall-back day") {
  const auto new_york = zone_named("America/New_York");
  const auto timing = accepted(daily("2024-11-02T09:00"), "America/New_York", before_2024);
  // 09:00 EDT is 13:00 UTC; from Sunday 3 November, 09:00 EST is 14:00 UTC.
  check_first_occurrences(timing, *new_york,
                          {seconds_at(2024, 11, 2, 13, 0), seconds_at(2024, 11, 3, 14, 0)});
  CHECK(next_occurrence(timing, *new_york, seconds_at(2024, 11, 3, 13, 0))
        == seconds_at(2024, 11, 3, 14, 0));
  CHECK(latest_occurrence(timing, *new_york, seconds_at(2024, 11, 3, 13, 59, 59))
        == seconds_at(2024, 11, 2, 13, 0));
}

TEST_CASE("a wall time in the spring-forward gap shifts forward") {
  const auto new_york = zone_named("America/New_York");
  // 02:30 does not exist on 10 March 2024: it is read as 03:30 EDT (07:30 UTC).
  const auto timing = accepted(daily("2024-03-09T02:30"), "America/New_York", before_2024);
  // 02:30 EST, then 03:30 EDT, then 02:30 EDT again the day after.
  check_first_occurrences(timing, *new_york,
                          {seconds_at(2024, 3, 9, 7, 30), seconds_at(2024, 3, 10, 7, 30),
                           seconds_at(2024, 3, 11, 6, 30)});
  CHECK(local_time_of_day(*new_york, *occurrence_utc(timing, *new_york, 1)) == 3 * 3600 + 1800);
  // A one-shot in the gap likewise.
  const auto once =
    accepted({{"kind", "once"}, {"at", "2024-03-10T02:30"}}, "America/New_York", before_2024);
  CHECK(occurrence_utc(once, *new_york, 0) == seconds_at(2024, 3, 10, 7, 30));
}

TEST_CASE("a wall time in the fall-back fold fires once, at its earlier instant") {
  const auto new_york = zone_named("America/New_York");
  const auto timing = accepted(daily("2024-11-02T01:30"), "America/New_York", before_2024);
  // 01:30 on 3 November happens at 05:30 UTC (EDT) and 06:30 UTC (EST): only the first counts.
  CHECK(occurrence_utc(timing, *new_york, 1) == seconds_at(2024, 11, 3, 5, 30));
  CHECK(next_occurrence(timing, *new_york, seconds_at(2024, 11, 3, 5, 30))
        == seconds_at(2024, 11, 4, 6, 30));
}

TEST_CASE("Lord Howe's half-hour change shifts a wall time in its gap by thirty minutes") {
  const auto lord_howe = zone_named("Australia/Lord_Howe");
  // On 6 October 2024 clocks go from 02:00 (+10:30) to 02:30 (+11:00).
  const auto timing = accepted(daily("2024-10-05T02:15"), "Australia/Lord_Howe", before_2024);
  const auto in_gap = occurrence_utc(timing, *lord_howe, 1);
  REQUIRE(in_gap);
  CHECK(*in_gap == seconds_at(2024, 10, 5, 15, 45)); // 02:15 read at +10:30
  CHECK(local_time_of_day(*lord_howe, *in_gap) == 2 * 3600 + 45 * 60);
  CHECK(local_time_of_day(*lord_howe, *occurrence_utc(timing, *lord_howe, 2))
        == 2 * 3600 + 15 * 60);
}

TEST_CASE("a weekly interval keeps its weekday and wall time in London across summer time") {
  const auto london = zone_named("Europe/London");
  const auto timing = accepted(
    {{"kind", "interval"}, {"every_seconds", 7 * 86'400}, {"starts_at", "2024-03-25T09:00:00"}},
    "Europe/London", before_2024);
  // Monday 25 March 09:00 GMT, then Monday 1 April 09:00 BST.
  CHECK(occurrence_utc(timing, *london, 0) == seconds_at(2024, 3, 25, 9, 0));
  CHECK(occurrence_utc(timing, *london, 1) == seconds_at(2024, 4, 1, 8, 0));
  CHECK(next_occurrence(timing, *london, seconds_at(2024, 3, 26, 0, 0))
        == seconds_at(2024, 4, 1, 8, 0));
}

TEST_CASE("an interval of 90 minutes steps in absolute time across a DST change") {
  const auto new_york = zone_named("America/New_York");
  const auto timing =
    accepted({{"kind", "interval"}, {"every_seconds", 5'400}, {"starts_at", "2024-03-10T00:00"}},
             "America/New_York", before_2024);
  CHECK_FALSE(timing.steps_in_days());
  // 00:00 EST is 05:00 UTC; every occurrence 90 minutes after the one before.
  for (uint64_t index = 0; index < 6; ++index)
    CHECK(occurrence_utc(timing, *new_york, index)
          == seconds_at(2024, 3, 10, 5, 0) + static_cast<int64_t>(index) * 5'400);
  // The third is 08:00 UTC: 04:00 EDT, not 03:00 (the clock skipped an hour).
  CHECK(local_time_of_day(*new_york, *occurrence_utc(timing, *new_york, 2)) == 4 * 3600);
  CHECK(next_occurrence(timing, *new_york, seconds_at(2024, 3, 10, 7, 0))
        == seconds_at(2024, 3, 10, 8, 0));
}

TEST_CASE("an interval of 90 minutes keeps elapsed time through the fall-back fold") {
  const auto new_york = zone_named("America/New_York");
  // Created at 05:00 UTC (01:00 EDT) with no start: the first is one interval later.
  const auto timing = accepted({{"kind", "interval"}, {"every_seconds", 5'400}}, "America/New_York",
                               seconds_at(2024, 11, 3, 5, 0));
  CHECK(occurrence_utc(timing, *new_york, 0) == seconds_at(2024, 11, 3, 6, 30)); // 01:30 EST
  CHECK(occurrence_utc(timing, *new_york, 1) == seconds_at(2024, 11, 3, 8, 0));
}

TEST_CASE("a 60-second interval ten years in finds its next occurrence without walking every "
          "one") {
  const auto new_york = zone_named("America/New_York");
  const int64_t created = seconds_at(2024, 1, 1, 0, 0, 7);
  const auto timing =
    accepted({{"kind", "interval"}, {"every_seconds", 60}}, "America/New_York", created);
  const int64_t first = created + 60;
  // Ten years and a few seconds on: about 5.26 million occurrences later.
  const int64_t later = seconds_at(2034, 1, 1, 0, 0, 30);
  const int64_t expected = seconds_at(2034, 1, 1, 0, 1, 7);
  CHECK(next_occurrence(timing, *new_york, later) == expected);
  CHECK(latest_occurrence(timing, *new_york, later) == expected - 60);
  CHECK(occurrence_utc(timing, *new_york, static_cast<uint64_t>((expected - first) / 60))
        == expected);
  const auto due = decide_due(timing, *new_york, first, later);
  CHECK(due.fire);
  CHECK(due.occurrence_utc_s == expected - 60);
  CHECK(due.next_due_utc_s == expected);
}

TEST_CASE("a daily schedule ten years in finds its next occurrence by its date") {
  const auto new_york = zone_named("America/New_York");
  const auto timing = accepted(daily("2024-01-01T09:00"), "America/New_York", before_2024);
  // 16 July 2033 is in summer time: 09:00 EDT is 13:00 UTC.
  CHECK(next_occurrence(timing, *new_york, seconds_at(2033, 7, 15, 13, 0))
        == seconds_at(2033, 7, 16, 13, 0));
  const uint64_t days =
    static_cast<uint64_t>(days_from_civil(2033, 7, 16) - days_from_civil(2024, 1, 1));
  CHECK(occurrence_utc(timing, *new_york, days) == seconds_at(2033, 7, 16, 13, 0));
}

TEST_CASE("a series ends at the end of year 9999") {
  const auto utc = time_zone::utc();
  schedule_timing timing;
  timing.k = schedule_timing::kind::interval;
  timing.first_local_s = timing.first_utc_s = seconds_at(9999, 12, 31, 0, 0);
  timing.every_s = 86'400;
  timing.zone = "UTC";
  CHECK(occurrence_utc(timing, *utc, 0) == timing.first_utc_s);
  CHECK_FALSE(occurrence_utc(timing, *utc, 1));
  CHECK_FALSE(occurrence_utc(timing, *utc, UINT64_MAX));
  CHECK_FALSE(next_occurrence(timing, *utc, timing.first_utc_s));
  CHECK(latest_occurrence(timing, *utc, time_zone::max_seconds) == timing.first_utc_s);
  const auto due = decide_due(timing, *utc, std::nullopt, time_zone::max_seconds);
  CHECK(due.fire);
  CHECK_FALSE(due.next_due_utc_s);
}

TEST_CASE("a day the zone skips whole runs its wall time on the next day, once") {
  // Samoa moved across the date line: 29 December 2011 at 24:00 (-10:00) was
  // followed by 31 December 00:00 (+14:00), so 30 December never happened.
  const auto apia = zone_named("Pacific/Apia");
  schedule_timing timing;
  timing.k = schedule_timing::kind::interval;
  timing.every_s = 86'400;
  timing.zone = "Pacific/Apia";
  timing.first_local_s = seconds_at(2011, 12, 28, 9, 0);
  timing.first_utc_s = apia->resolve(timing.first_local_s).utc_s;
  const int64_t on_29th = seconds_at(2011, 12, 29, 19, 0); // 09:00 at -10:00
  const int64_t on_31st = seconds_at(2011, 12, 30, 19, 0); // 09:00 at +14:00
  CHECK(occurrence_utc(timing, *apia, 1) == on_29th);
  // 30 December 09:00 is shifted by the whole day onto 31 December's.
  CHECK(occurrence_utc(timing, *apia, 2) == on_31st);
  CHECK(occurrence_utc(timing, *apia, 3) == on_31st);
  CHECK(next_occurrence(timing, *apia, on_29th) == on_31st);
  CHECK(next_occurrence(timing, *apia, on_31st) == seconds_at(2011, 12, 31, 19, 0));
  const auto due = decide_due(timing, *apia, on_29th, on_31st);
  CHECK(due.fire);
  CHECK(due.occurrence_utc_s == on_31st);
  CHECK_FALSE(decide_due(timing, *apia, on_31st, on_31st + 60).fire);
}

TEST_CASE("next and latest occurrences agree with a walk through every occurrence") {
  // Zones with gaps and folds of an hour and of half an hour, the largest
  // offsets, and days skipped or repeated whole at the date line (Samoa in
  // 2011; Alaska, bought in 1867, set its clocks back a day); intervals in
  // days and in elapsed seconds, over two years from the given one.
  struct zone_case {
    const char* name;
    int64_t year;
  };
  std::mt19937_64 random{20'240'310};
  for (const auto& [name, year] :
       {zone_case{"America/New_York", 2010}, zone_case{"Australia/Lord_Howe", 2010},
        zone_case{"Pacific/Apia", 2010}, zone_case{"America/Juneau", 1866},
        zone_case{"Pacific/Kiritimati", 2010}, zone_case{"Pacific/Pago_Pago", 2010},
        zone_case{"Europe/London", 2010}}) {
    const auto zone = zone_named(name);
    for (const int64_t every : {int64_t{86'400}, int64_t{3 * 86'400}, int64_t{5'400}}) {
      schedule_timing timing;
      timing.k = schedule_timing::kind::interval;
      timing.every_s = every;
      timing.zone = name;
      timing.first_local_s = seconds_at(year, 3, 1, 2, 30);
      timing.first_utc_s = zone->resolve(timing.first_local_s).utc_s;
      // Every occurrence over two years, in order.
      std::vector<int64_t> walk;
      for (uint64_t index = 0; walk.empty() || walk.back() < seconds_at(year + 2, 3, 1, 0, 0);
           ++index)
        walk.push_back(*occurrence_utc(timing, *zone, index));
      for (int probe = 0; probe < 300; ++probe) {
        const int64_t after =
          walk.front() - 86'400
          + static_cast<int64_t>(random() % static_cast<uint64_t>(walk.back() - walk.front()));
        INFO(name << " every " << every << " after " << after);
        const auto next = std::upper_bound(walk.begin(), walk.end(), after);
        REQUIRE(next != walk.end());
        CHECK(next_occurrence(timing, *zone, after) == *next);
        CHECK(next_occurrence(timing, *zone, *next - 1) == *next);
        CHECK(next_occurrence(timing, *zone, *next) > *next);
        if (next == walk.begin())
          CHECK_FALSE(latest_occurrence(timing, *zone, after));
        else
          CHECK(latest_occurrence(timing, *zone, after) == *std::prev(next));
      }
    }
  }
}

// -- checks at creation -------------------------------------------------------

TEST_CASE("a one-shot is kept as its local time in its zone") {
  const auto timing =
    accepted({{"kind", "once"}, {"at", "2024-07-01T18:45:30"}}, "Europe/London", before_2024);
  CHECK(timing.k == schedule_timing::kind::once);
  CHECK(timing.first_local_s == seconds_at(2024, 7, 1, 18, 45, 30));
  CHECK(timing.first_utc_s == seconds_at(2024, 7, 1, 17, 45, 30)); // BST
  CHECK(timing.every_s == 0);
  CHECK(timing.zone == "Europe/London");
}

TEST_CASE("without starts_at an interval's first occurrence is one interval from now") {
  const auto new_york = zone_named("America/New_York");
  const int64_t now = seconds_at(2024, 3, 9, 14, 0, 17); // Saturday 09:00:17 EST
  const auto hourly =
    accepted({{"kind", "interval"}, {"every_seconds", 3'600}}, "America/New_York", now);
  CHECK(hourly.first_utc_s == now + 3'600);
  CHECK(occurrence_utc(hourly, *new_york, 0) == now + 3'600);
  // A whole day keeps now's wall time: Sunday 09:00:17 EDT, 23 hours later.
  const auto every_day =
    accepted({{"kind", "interval"}, {"every_seconds", 86'400}}, "America/New_York", now);
  CHECK(occurrence_utc(every_day, *new_york, 0) == seconds_at(2024, 3, 10, 13, 0, 17));
}

TEST_CASE("a one-shot in the past is refused") {
  const int64_t now = seconds_at(2024, 7, 1, 12, 0); // 08:00 EDT
  for (const char* at : {"2024-07-01T07:59:59", "2024-07-01T08:00:00", "2001-01-01T00:00"}) {
    const status refusal =
      refused({{"kind", "once"}, {"at", at}}, "America/New_York", now, {at, "2024", "07:59"});
    CHECK(refusal.code() == errc::out_of_range);
    CHECK(refusal.message().find("timing.at") != std::string::npos);
    CHECK(refusal.message().find("later than the current time") != std::string::npos);
  }
  CHECK(parse_timing({{"kind", "once"}, {"at", "2024-07-01T08:00:01"}}, "America/New_York", now,
                     schedule_bounds{}, system_time_zones())
          .is_ok());
}

TEST_CASE("an interval whose starts_at is in the past is refused") {
  const int64_t now = seconds_at(2024, 7, 1, 12, 0);
  const status refusal = refused(daily("2024-06-30T09:00"), "Europe/London", now, {"2024-06-30"});
  CHECK(refusal.code() == errc::out_of_range);
  CHECK(refusal.message().find("timing.starts_at") != std::string::npos);
}

TEST_CASE("an interval under the minimum is refused") {
  const status refusal =
    refused({{"kind", "interval"}, {"every_seconds", 30}}, "Europe/London", before_2024, {"30"});
  CHECK(refusal.code() == errc::out_of_range);
  CHECK(refusal.message() == "timing.every_seconds must be at least 60");
  // The bound is the configured one.
  schedule_bounds bounds;
  bounds.min_interval_s = 10;
  CHECK(parse_timing({{"kind", "interval"}, {"every_seconds", 30}}, "Europe/London", before_2024,
                     bounds, system_time_zones())
          .is_ok());
}

TEST_CASE("an interval over ten years is refused") {
  const status refusal = refused({{"kind", "interval"}, {"every_seconds", 315'576'001}},
                                 "Europe/London", before_2024, {"315576001"});
  CHECK(refusal.code() == errc::out_of_range);
  CHECK(refusal.message().find("timing.every_seconds must be at most 315576000")
        != std::string::npos);
  // Exactly ten years is allowed; a configured bound lower than that applies.
  accepted({{"kind", "interval"}, {"every_seconds", 315'576'000}}, "Europe/London", before_2024);
  schedule_bounds bounds;
  bounds.max_interval_s = 86'400;
  CHECK(refused({{"kind", "interval"}, {"every_seconds", 86'401}}, "Europe/London", before_2024,
                {"86401"}, bounds)
          .message()
        == "timing.every_seconds must be at most 86400");
}

TEST_CASE("a one-shot or a first occurrence past the horizon is refused") {
  const int64_t now = seconds_at(2024, 1, 1, 0, 0);
  const status once =
    refused({{"kind", "once"}, {"at", "2034-01-02T00:00"}}, "UTC", now, {"2034", "01-02"});
  CHECK(once.code() == errc::out_of_range);
  CHECK(once.message() == "timing.at must be at most 315576000 seconds after the current time");
  const status series = refused(daily("2035-06-01T09:00"), "UTC", now, {"2035"});
  CHECK(series.message().find("timing.starts_at must be at most") != std::string::npos);
  // Exactly at the horizon is allowed.
  accepted({{"kind", "once"}, {"at", "2033-12-31T12:00"}}, "UTC", now);
  // A configured horizon shorter than the interval refuses the implicit first occurrence.
  schedule_bounds bounds;
  bounds.max_horizon_s = 3'600;
  const status implicit =
    refused({{"kind", "interval"}, {"every_seconds", 7'200}}, "UTC", now, {"7200"}, bounds);
  CHECK(implicit.message().find("the first occurrence") != std::string::npos);
}

TEST_CASE("an unknown timezone is refused") {
  const json once = {{"kind", "once"}, {"at", "2030-01-01T09:00"}};
  const status unknown = refused(once, "Mars/Olympus", before_2024, {"Mars", "Olympus"});
  CHECK(unknown.code() == errc::not_found);
  CHECK(unknown.message().find("timezone") == 0);
  // A name that breaks the grammar never reaches the file system.
  const status hostile = refused(once, "../../etc/passwd", before_2024, {"etc", "passwd", ".."});
  CHECK(hostile.code() == errc::out_of_range);
  CHECK(hostile.message().find("timezone") == 0);
  CHECK(refused(once, "", before_2024).code() == errc::out_of_range);
}

TEST_CASE("a local time that is not on the calendar is refused") {
  for (const char* at :
       {"2030-02-29T09:00", "2030-13-01T09:00", "2030-04-31T09:00", "2030-01-01T24:00",
        "2030-01-01T09:60", "2030-01-01T09:00:60", "2030-01-01 09:00", "2030-01-01T9:00",
        "2030-01-01T09:00Z", "2030-01-01T09:00+01:00", "+2030-01-01T09:00", ""}) {
    INFO(at);
    const status refusal = refused({{"kind", "once"}, {"at", at}}, "UTC", before_2024,
                                   {std::string{at}.empty() ? "\"\"" : at});
    CHECK(refusal.code() == errc::out_of_range);
    CHECK(refusal.message().find("timing.at must be a local date and time") == 0);
  }
  // 29 February exists in a leap year.
  accepted({{"kind", "once"}, {"at", "2028-02-29T09:00"}}, "UTC", before_2024);
}

TEST_CASE("a malformed timing is refused with the rule it breaks") {
  struct refusal_case {
    json timing;
    errc code;
    std::string message;
  };
  const std::vector<refusal_case> cases = {
    {json::array(), errc::wrong_type, "timing must be an object"},
    {json::object(), errc::missing_field, "timing.kind is required"},
    {{{"kind", 1}}, errc::wrong_type, "timing.kind must be a string"},
    {{{"kind", "cron"}}, errc::out_of_range, "timing.kind must be once or interval"},
    {{{"kind", "once"}}, errc::missing_field, "timing.at is required"},
    {{{"kind", "once"}, {"at", 5}}, errc::wrong_type, "timing.at must be a string"},
    {{{"kind", "once"}, {"at", "2030-01-01T09:00"}, {"every_seconds", 60}},
     errc::unknown_field,
     "timing accepts no members beside its kind's own"},
    {{{"kind", "interval"}}, errc::missing_field, "timing.every_seconds is required"},
    {{{"kind", "interval"}, {"every_seconds", "60"}},
     errc::wrong_type,
     "timing.every_seconds must be an integer"},
    {{{"kind", "interval"}, {"every_seconds", 90.5}},
     errc::out_of_range,
     "timing.every_seconds must be a whole number"},
    {{{"kind", "interval"}, {"every_seconds", 60}, {"at", "2030-01-01T09:00"}},
     errc::unknown_field,
     "timing accepts no members beside its kind's own"},
    {{{"kind", "interval"}, {"every_seconds", UINT64_MAX}},
     errc::out_of_range,
     "timing.every_seconds must be at most 315576000"},
    {{{"kind", "interval"}, {"every_seconds", 1e300}},
     errc::out_of_range,
     "timing.every_seconds must be at most 315576000"},
    {{{"kind", "interval"}, {"every_seconds", -60}},
     errc::out_of_range,
     "timing.every_seconds must be at least 60"},
  };
  for (const auto& each : cases) {
    INFO(each.timing.dump());
    const status refusal = refused(each.timing, "UTC", before_2024);
    CHECK(refusal.code() == each.code);
    CHECK(refusal.message() == each.message);
  }
  // JSON Schema counts 120.0 as an integer: so does the check.
  CHECK(accepted({{"kind", "interval"}, {"every_seconds", 120.0}}, "UTC", before_2024).every_s
        == 120);
}

TEST_CASE("refusals never repeat the rejected value") {
  const json once = {{"kind", "once"}, {"at", "2030-01-01T09:00"}};
  CHECK(refused(once, "Mars/Olympus", before_2024, {"Mars", "Olympus"}).code() == errc::not_found);
  refused(once, "Mars/../../Olympus_Mons", before_2024, {"Mars", "Olympus", ".."});
  refused({{"kind", "olympus_kind"}}, "UTC", before_2024, {"olympus"});
  refused({{"kind", "once"}, {"at", "2030-01-01T09:00"}, {"olympus_member", 1}}, "UTC", before_2024,
          {"olympus"});
  refused({{"kind", "once"}, {"at", "2031-02-30T09:17"}}, "UTC", before_2024, {"2031", "09:17"});
  refused({{"kind", "once"}, {"at", "2019-05-05T09:17"}}, "UTC", before_2024, {"2019", "09:17"});
  refused({{"kind", "interval"}, {"every_seconds", 47}}, "UTC", before_2024, {"47"});
  refused({{"kind", "interval"}, {"every_seconds", 987'654'321}}, "UTC", before_2024,
          {"987654321"});
  refused({{"kind", "interval"}, {"every_seconds", 86'400}, {"starts_at", "2047-04-04T04:47"}},
          "UTC", before_2024, {"2047", "04:47"});
}

// -- what fires ---------------------------------------------------------------

TEST_CASE("a one-shot waits for its time and then fires once") {
  const auto utc = time_zone::utc();
  const int64_t created = seconds_at(2024, 7, 1, 12, 0);
  const auto timing = accepted({{"kind", "once"}, {"at", "2024-07-01T15:00"}}, "UTC", created);
  const int64_t at = seconds_at(2024, 7, 1, 15, 0);

  const auto early = decide_due(timing, *utc, std::nullopt, at - 1);
  CHECK_FALSE(early.fire);
  CHECK(early.next_due_utc_s == at);

  const auto on_time = decide_due(timing, *utc, std::nullopt, at);
  CHECK(on_time.fire);
  CHECK(on_time.occurrence_utc_s == at);
  CHECK_FALSE(on_time.next_due_utc_s);
}

TEST_CASE("a missed one-shot fires once after a restart") {
  const auto utc = time_zone::utc();
  const auto timing =
    accepted({{"kind", "once"}, {"at", "2024-07-01T15:00"}}, "UTC", seconds_at(2024, 7, 1, 12, 0));
  const int64_t at = seconds_at(2024, 7, 1, 15, 0);
  // The node was down from 14:00 to 21:30.
  const auto late = decide_due(timing, *utc, std::nullopt, seconds_at(2024, 7, 1, 21, 30));
  CHECK(late.fire);
  CHECK(late.occurrence_utc_s == at);
  CHECK_FALSE(late.next_due_utc_s);
  // Once fired, never again, nor anything to wait for.
  for (int64_t now : {at, at + 60, seconds_at(2030, 1, 1, 0, 0)}) {
    const auto after = decide_due(timing, *utc, at, now);
    CHECK_FALSE(after.fire);
    CHECK_FALSE(after.next_due_utc_s);
  }
}

TEST_CASE("before its first occurrence an interval fires nothing and waits for the first") {
  const auto london = zone_named("Europe/London");
  const auto timing = accepted(daily("2024-07-01T09:00"), "Europe/London", before_2024);
  const auto due = decide_due(timing, *london, std::nullopt, seconds_at(2024, 7, 1, 7, 59, 59));
  CHECK_FALSE(due.fire);
  CHECK(due.next_due_utc_s == seconds_at(2024, 7, 1, 8, 0));
}

TEST_CASE("an interval that missed several occurrences fires once and goes on from now") {
  const auto utc = time_zone::utc();
  const auto timing =
    accepted({{"kind", "interval"}, {"every_seconds", 3'600}, {"starts_at", "2024-07-01T10:00"}},
             "UTC", before_2024);
  const int64_t first = seconds_at(2024, 7, 1, 10, 0);
  // Fired at 10:00, then down until 15:10: 11:00 .. 15:00 were missed.
  const auto due = decide_due(timing, *utc, first, seconds_at(2024, 7, 1, 15, 10));
  CHECK(due.fire);
  CHECK(due.occurrence_utc_s == seconds_at(2024, 7, 1, 15, 0));
  CHECK(due.next_due_utc_s == seconds_at(2024, 7, 1, 16, 0));
  // Never fired at all: the same single turn.
  const auto never = decide_due(timing, *utc, std::nullopt, seconds_at(2024, 7, 1, 15, 10));
  CHECK(never.fire);
  CHECK(never.occurrence_utc_s == seconds_at(2024, 7, 1, 15, 0));
}

TEST_CASE("a daily schedule that missed days fires once for today's occurrence") {
  const auto new_york = zone_named("America/New_York");
  const auto timing = accepted(daily("2024-03-08T09:00"), "America/New_York", before_2024);
  // Fired on 8 March, down until 11 March 10:00 EDT: 9, 10 and 11 March collapse into 11 March.
  const auto due =
    decide_due(timing, *new_york, seconds_at(2024, 3, 8, 14, 0), seconds_at(2024, 3, 11, 14, 0));
  CHECK(due.fire);
  CHECK(due.occurrence_utc_s == seconds_at(2024, 3, 11, 13, 0));
  CHECK(due.next_due_utc_s == seconds_at(2024, 3, 12, 13, 0));
}

TEST_CASE("no occurrence fires twice") {
  const auto new_york = zone_named("America/New_York");
  const auto timing =
    accepted({{"kind", "interval"}, {"every_seconds", 5'400}, {"starts_at", "2024-11-02T20:00"}},
             "America/New_York", before_2024);
  const int64_t first = *occurrence_utc(timing, *new_york, 0);

  SUBCASE("asked again at the same instant") {
    const auto fired = decide_due(timing, *new_york, std::nullopt, first);
    REQUIRE(fired.fire);
    const auto again = decide_due(timing, *new_york, fired.occurrence_utc_s, first);
    CHECK_FALSE(again.fire);
    CHECK(again.next_due_utc_s == first + 5'400);
  }
  SUBCASE("after the clock moved back") {
    const int64_t last = first + 4 * 5'400;
    const auto due = decide_due(timing, *new_york, last, first + 5'400 + 1);
    CHECK_FALSE(due.fire);
    CHECK(due.next_due_utc_s == last + 5'400);
  }
  SUBCASE("a timer driven through the fall-back night") {
    // Fire at each next due, and at odd instants between: each occurrence once, in order.
    std::optional<int64_t> last;
    std::vector<int64_t> fired;
    int64_t now = first - 1;
    for (int step = 0; step < 40; ++step) {
      const auto due = decide_due(timing, *new_york, last, now);
      if (due.fire) {
        CHECK((!last || due.occurrence_utc_s > *last));
        last = due.occurrence_utc_s;
        fired.push_back(due.occurrence_utc_s);
      }
      REQUIRE(due.next_due_utc_s);
      CHECK(*due.next_due_utc_s > now);
      now = step % 3 == 2 ? now + 1'000 : *due.next_due_utc_s;
    }
    REQUIRE(fired.size() > 20);
    for (std::size_t index = 0; index < fired.size(); ++index)
      CHECK(fired[index] == first + static_cast<int64_t>(index) * 5'400);
  }
}

// -- the stored form ----------------------------------------------------------

TEST_CASE("a stored timing reads back as it was written") {
  const auto once =
    accepted({{"kind", "once"}, {"at", "2024-07-01T18:45:30"}}, "Europe/London", before_2024);
  const auto series = accepted(daily("2024-03-08T09:00"), "America/New_York", before_2024);
  for (const auto& timing : {once, series}) {
    const json stored = timing_to_json(timing);
    auto read = timing_from_json(json::parse(stored.dump()));
    REQUIRE_MESSAGE(read.is_ok(), read.error().message());
    CHECK(read->k == timing.k);
    CHECK(read->first_local_s == timing.first_local_s);
    CHECK(read->first_utc_s == timing.first_utc_s);
    CHECK(read->every_s == timing.every_s);
    CHECK(read->zone == timing.zone);
  }
  CHECK(timing_to_json(series)
        == json{{"kind", "interval"},
                {"first_local_s", seconds_at(2024, 3, 8, 9, 0)},
                {"first_utc_s", seconds_at(2024, 3, 8, 14, 0)},
                {"every_s", 86'400},
                {"zone", "America/New_York"}});
}

TEST_CASE("a malformed stored timing is refused as corrupt data") {
  const json good = {{"kind", "interval"},
                     {"first_local_s", 1'700'000'000},
                     {"first_utc_s", 1'700'000'000},
                     {"every_s", 3'600},
                     {"zone", "Europe/London"}};
  REQUIRE(timing_from_json(good).is_ok());
  const auto with = [&good](const char* key, json value) {
    json changed = good;
    changed[key] = std::move(value);
    return changed;
  };
  const auto without = [&good](const char* key) {
    json changed = good;
    changed.erase(key);
    return changed;
  };
  const std::vector<json> corrupt = {
    json::array(),
    "interval",
    without("kind"),
    with("kind", "cron"),
    with("kind", "once"), // a one-shot with an interval
    without("every_s"),
    with("every_s", 0),
    with("every_s", 315'576'001),
    with("every_s", 3'600.0),
    with("every_s", "3600"),
    with("first_local_s", time_zone::max_seconds + 1),
    with("first_utc_s", nullptr),
    without("first_utc_s"),
    with("zone", "../etc/passwd"),
    with("zone", 7),
    with("extra", true),
  };
  for (const auto& stored : corrupt) {
    INFO(stored.dump());
    const auto read = timing_from_json(stored);
    REQUIRE_FALSE(read.is_ok());
    CHECK(read.error().code() == errc::corrupt_data);
  }
}
