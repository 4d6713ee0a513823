// config/posix_tz: the TZ rules of TZif footers, and config/civil_time under them.
#include <doctest/doctest.h>

#include <string>

#include "config/civil_time.hpp"
#include "config/posix_tz.hpp"

using namespace voxos;

namespace {

int64_t utc_at(int64_t year, int month, int day, int hour = 0, int minute = 0, int second = 0) {
  return from_civil({year, month, day, hour, minute, second});
}

posix_tz parsed(const std::string& text) {
  auto rule = parse_posix_tz(text);
  REQUIRE_MESSAGE(rule.has_value(), text);
  return *rule;
}

} // namespace

TEST_CASE("civil time counts days, weekdays and leap years as ISO 8601 does") {
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(2000, 3, 1) == 11'017);
  CHECK(days_from_civil(1969, 12, 31) == -1);
  CHECK(weekday_from_days(0) == 4);                             // Thursday
  CHECK(weekday_from_days(days_from_civil(2024, 7, 1)) == 1);   // Monday
  CHECK(weekday_from_days(days_from_civil(1969, 12, 28)) == 0); // Sunday
  CHECK(is_leap_year(2000));
  CHECK_FALSE(is_leap_year(2100));
  CHECK(days_in_month(2024, 2) == 29);
  CHECK(days_in_month(2100, 2) == 28);
  for (int64_t seconds : {int64_t{0}, int64_t{-1}, int64_t{951'782'400}, int64_t{-62'167'219'200},
                          int64_t{253'402'300'799}}) {
    const civil_time time = to_civil(seconds);
    CHECK(from_civil(time) == seconds);
  }
  const civil_time before_epoch = to_civil(-1);
  CHECK(before_epoch.year == 1969);
  CHECK(before_epoch.hour == 23);
  CHECK(before_epoch.second == 59);
  CHECK(utc_at(2024, 2, 30) == utc_at(2024, 3, 1)); // days past the month count on
}

TEST_CASE("POSIX TZ rules parse offsets, bracketed names and the three date forms") {
  const auto kolkata = parsed("IST-5:30");
  CHECK(kolkata.standard.utc_offset_s == 19'800);
  CHECK(kolkata.standard.abbreviation == "IST");
  CHECK_FALSE(kolkata.daylight.has_value());

  const auto bracketed = parsed("<-03>3");
  CHECK(bracketed.standard.abbreviation == "-03");
  CHECK(bracketed.standard.utc_offset_s == -10'800);

  const auto new_york = parsed("EST5EDT,M3.2.0,M11.1.0");
  REQUIRE(new_york.daylight.has_value());
  CHECK(new_york.daylight->utc_offset_s == -14'400); // one hour ahead by default
  CHECK(new_york.daylight->is_dst);
  CHECK(new_york.dst_start.kind == posix_rule_date::form::month_week_day);
  CHECK(new_york.dst_start.time_s == 7200); // 02:00 by default

  const auto sydney = parsed("AEST-10AEDT,M10.1.0,M4.1.0/3");
  CHECK(sydney.daylight->utc_offset_s == 39'600);
  CHECK(sydney.dst_end.time_s == 3 * 3600);

  const auto explicit_offset = parsed("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
  CHECK(explicit_offset.standard.utc_offset_s == 37'800);
  CHECK(explicit_offset.daylight->utc_offset_s == 39'600);

  // Jn never counts February 29; n does.
  const auto julian = parsed("AAA3BBB,J60/-1:30,300/167");
  CHECK(julian.dst_start.kind == posix_rule_date::form::julian_no_leap);
  CHECK(julian.dst_start.local_time_in(2024) == utc_at(2024, 3, 1) - 5400);
  CHECK(julian.dst_start.local_time_in(2023) == utc_at(2023, 3, 1) - 5400);
  CHECK(julian.dst_end.kind == posix_rule_date::form::day_of_year);
  CHECK(julian.dst_end.local_time_in(2024)
        == utc_at(2024, 1, 1) + 300 * seconds_per_day + 167 * 3600);

  // M.5 is the month's last such weekday: the last Sunday of March 2024 is the 31st.
  const auto london = parsed("GMT0BST,M3.5.0/1,M10.5.0");
  CHECK(london.dst_start.local_time_in(2024) == utc_at(2024, 3, 31, 1));
  CHECK(london.dst_end.local_time_in(2024) == utc_at(2024, 10, 27, 2));
}

TEST_CASE("malformed POSIX TZ rules are refused") {
  for (const char* text : {"",
                           "ES5",
                           "EST",
                           "5",
                           "EST25",
                           "EST5:60",
                           "EST5EDT",
                           "EST5EDT,M3.2.0",
                           "EST5EDT,M3.2.0,",
                           "EST5EDT,M13.1.0,M11.1.0",
                           "EST5EDT,M3.6.0,M11.1.0",
                           "EST5EDT,M3.2.7,M11.1.0",
                           "EST5EDT,M3.2,M11.1.0",
                           "EST5EDT,J0,J365",
                           "EST5EDT,366,0",
                           "EST5EDT,M3.2.0/168,M11.1.0",
                           "EST5EDT,M3.2.0,M11.1.0x",
                           "<EST5",
                           "<E>5",
                           "EST5 ",
                           "EST5EDT4,M3.2.0,M11.1.0,M12.1.0"}) {
    INFO("rule " << text);
    CHECK_FALSE(parse_posix_tz(text).has_value());
  }
}

TEST_CASE("a footer rule's periods change at the rule's instants in both hemispheres") {
  const auto new_york = parsed("EST5EDT,M3.2.0,M11.1.0");
  // 2030: March 10 and November 3, at 02:00 local.
  const auto winter = new_york.period_at(utc_at(2030, 1, 15));
  CHECK_FALSE(winter.daylight);
  CHECK(winter.begin == utc_at(2029, 11, 4, 6));
  CHECK(winter.end == utc_at(2030, 3, 10, 7));
  const auto summer = new_york.period_at(utc_at(2030, 3, 10, 7));
  CHECK(summer.daylight);
  CHECK(summer.begin == utc_at(2030, 3, 10, 7));
  CHECK(summer.end == utc_at(2030, 11, 3, 6));

  const auto sydney = parsed("AEST-10AEDT,M10.1.0,M4.1.0/3");
  // 2030: DST ends April 7 03:00 AEDT and starts October 6 02:00 AEST.
  const auto january = sydney.period_at(utc_at(2030, 1, 15));
  CHECK(january.daylight);
  CHECK(january.end == utc_at(2030, 4, 6, 16));
  const auto december = sydney.period_at(utc_at(2030, 12, 31, 23));
  CHECK(december.daylight);
  CHECK(december.begin == utc_at(2030, 10, 5, 16));
}

TEST_CASE("a rule with daylight saving all year stays in daylight saving") {
  // The TZif version 3 form: DST from January 1 00:00 to December 31 25:00,
  // which is where the next year's DST starts.
  const auto all_year = parsed("EST5EDT4,0/0,J365/25");
  for (int64_t year = 2020; year <= 2030; ++year)
    for (const int64_t probe : {utc_at(year, 1, 1, 4, 59, 59), utc_at(year, 1, 1, 5),
                                utc_at(year, 7, 1), utc_at(year, 12, 31, 23, 59, 59)}) {
      INFO(probe);
      CHECK(all_year.period_at(probe).daylight);
    }
}
