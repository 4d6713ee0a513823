// Civil (calendar and wall-clock) time without a time zone: the proleptic
// Gregorian calendar on seconds since the Unix epoch, as ISO 8601 counts it.
// CAF-free, header-only, no global state: every function is pure and
// thread-safe. The day arithmetic is H. Hinnant's public-domain
// days_from_civil / civil_from_days, on int64 so no year in the node's range
// can overflow.
#pragma once

#include <cstdint>

namespace voxos {

constexpr int64_t seconds_per_day = 86'400;

/// Floor division (rounds toward negative infinity); `divisor` > 0.
constexpr int64_t floor_div(int64_t value, int64_t divisor) {
  return value / divisor - (value % divisor < 0 ? 1 : 0);
}

/// A calendar date and wall-clock time, no zone attached.
struct civil_time {
  int64_t year = 1970;
  int month = 1;  ///< 1..12
  int day = 1;    ///< 1..31
  int hour = 0;   ///< 0..23
  int minute = 0; ///< 0..59
  int second = 0; ///< 0..59 (the node counts POSIX time: no leap seconds)
};

constexpr bool is_leap_year(int64_t year) {
  return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

constexpr int days_in_month(int64_t year, int month) {
  constexpr int lengths[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap_year(year) ? 29 : lengths[month - 1];
}

/// Days since 1970-01-01 of a date; `month` 1..12, `day` 1..31 (a day past
/// the month's end counts on into the next month).
constexpr int64_t days_from_civil(int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = floor_div(year, 400);
  const int64_t year_of_era = year - era * 400;
  const int64_t march_month = (month + 9) % 12; // March = 0
  const int64_t day_of_year = (153 * march_month + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146'097 + day_of_era - 719'468;
}

/// The date of a day counted from 1970-01-01 (hour, minute, second zero).
constexpr civil_time civil_from_days(int64_t days) {
  days += 719'468;
  const int64_t era = floor_div(days, 146'097);
  const int64_t day_of_era = days - era * 146'097;
  const int64_t year_of_era =
    (day_of_era - day_of_era / 1460 + day_of_era / 36'524 - day_of_era / 146'096) / 365;
  const int64_t day_of_year =
    day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t march_month = (5 * day_of_year + 2) / 153;
  civil_time out;
  out.day = static_cast<int>(day_of_year - (153 * march_month + 2) / 5 + 1);
  out.month = static_cast<int>(march_month < 10 ? march_month + 3 : march_month - 9);
  out.year = year_of_era + era * 400 + (out.month <= 2 ? 1 : 0);
  return out;
}

/// Day of the week of a day counted from 1970-01-01: 0 = Sunday .. 6 = Saturday.
constexpr int weekday_from_days(int64_t days) {
  return static_cast<int>(days - floor_div(days + 4, 7) * 7 + 4);
}

/// Seconds since the epoch, read as a civil time (no zone: the caller adds
/// the offset first for a local reading).
constexpr civil_time to_civil(int64_t seconds) {
  const int64_t days = floor_div(seconds, seconds_per_day);
  const int64_t of_day = seconds - days * seconds_per_day;
  civil_time out = civil_from_days(days);
  out.hour = static_cast<int>(of_day / 3600);
  out.minute = static_cast<int>(of_day / 60 % 60);
  out.second = static_cast<int>(of_day % 60);
  return out;
}

/// The inverse of to_civil; `month` 1..12, while day, hour, minute and second
/// past their range count on (61 minutes is one hour and one minute later).
constexpr int64_t from_civil(const civil_time& time) {
  return days_from_civil(time.year, time.month, time.day) * seconds_per_day
         + int64_t{time.hour} * 3600 + int64_t{time.minute} * 60 + time.second;
}

} // namespace voxos
