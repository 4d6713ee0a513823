// The POSIX TZ rule a TZif file's footer carries for instants past its last
// transition (RFC 9636 section 3.3): POSIX.1 TZ strings with the TZif
// version 3 extension (rule times from -167 to 167 hours, so DST can be in
// effect all year). CAF-free; values are immutable once parsed and safe to
// share between threads.
//
// Grammar accepted (anything else is malformed):
//   std offset [dst [offset] ,start[/time] ,end[/time]]
//   std, dst: 3+ ASCII letters, or <3+ of [A-Za-z0-9+-]> (the brackets not
//             part of the abbreviation)
//   offset:   [+-]hh[:mm[:ss]], hh 0..24, POSIX sign (positive is west of
//             Greenwich); dst's offset defaults to one hour ahead of std
//   start, end: Jn (1..365, February 29 never counted), n (0..365, counted)
//             or Mm.w.d (month 1..12, week 1..5 with 5 the last, day 0..6
//             with 0 Sunday)
//   time:     [+-]hh[:mm[:ss]], hh 0..167, local time in effect before the
//             change, default 02:00:00
// A DST part without its two rules is refused (POSIX leaves the rules then
// to the implementation; tzcode always writes them into footers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace voxos {

/// A local time type: what the wall clock of a zone says during one period.
struct zone_type {
  /// Seconds east of UTC (New York in winter: -18000).
  int32_t utc_offset_s = 0;
  bool is_dst = false;
  /// "GMT", "BST", "+0530"... as the zone data spells it.
  std::string abbreviation;
};

/// The day (and local time) a DST rule changes the clock within a year.
struct posix_rule_date {
  enum class form : uint8_t {
    julian_no_leap, ///< Jn: day n of 1..365, February 29 never counted
    day_of_year,    ///< n: day n of 0..365, February 29 counted
    month_week_day, ///< Mm.w.d: weekday d of week w (5 = the last) of month m
  };
  form kind = form::month_week_day;
  int day = 0;   ///< Jn and n: n; Mm.w.d: d (0 = Sunday)
  int month = 1; ///< Mm.w.d only
  int week = 1;  ///< Mm.w.d only
  int32_t time_s = 7200;

  /// Seconds since the epoch of the change in `year`, read as local wall-clock
  /// time (the caller subtracts the offset in effect before the change).
  int64_t local_time_in(int64_t year) const;
};

struct posix_tz {
  zone_type standard;
  /// Present when the rule has daylight saving time, with its two dates.
  std::optional<zone_type> daylight;
  posix_rule_date dst_start;
  posix_rule_date dst_end;

  /// The period of constant local time type around one instant.
  struct period {
    bool daylight = false;
    /// [begin, end) in seconds since the epoch: the rule's changes nearest
    /// `utc_s` on either side. Unbounded ends are INT64_MIN and INT64_MAX. A
    /// boundary may separate two periods of the same type (DST all year).
    int64_t begin = 0;
    int64_t end = 0;
  };
  /// The period containing `utc_s` (seconds since the epoch, |utc_s| < 2^60).
  period period_at(int64_t utc_s) const;
};

/// Parses a footer's TZ string (without its newlines); nullopt when the text
/// does not follow the grammar above.
std::optional<posix_tz> parse_posix_tz(std::string_view text);

} // namespace voxos
