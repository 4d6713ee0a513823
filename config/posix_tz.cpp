#include "config/posix_tz.hpp"

#include <algorithm>
#include <array>
#include <limits>

#include "config/civil_time.hpp"

namespace voxos {

namespace {

/// Reads a TZ string left to right; every read either consumes what it
/// matched or reports failure.
class tz_cursor {
public:
  explicit tz_cursor(std::string_view text) : text_(text) {}

  bool done() const noexcept { return pos_ == text_.size(); }
  char peek() const noexcept { return done() ? '\0' : text_[pos_]; }
  bool eat(char expected) noexcept {
    if (done() || text_[pos_] != expected)
      return false;
    ++pos_;
    return true;
  }

  /// 1 to `max_digits` decimal digits.
  std::optional<int> number(int max_digits) noexcept {
    int value = 0;
    int digits = 0;
    while (digits < max_digits && !done() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (text_[pos_++] - '0');
      ++digits;
    }
    if (digits == 0)
      return std::nullopt;
    return value;
  }

  /// An abbreviation: 3+ letters, or <3+ of [A-Za-z0-9+-]>.
  std::optional<std::string> name() {
    const auto is_letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
    std::string out;
    if (eat('<')) {
      while (!done()
             && (is_letter(peek()) || (peek() >= '0' && peek() <= '9') || peek() == '+'
                 || peek() == '-'))
        out += text_[pos_++];
      if (!eat('>'))
        return std::nullopt;
    } else {
      while (!done() && is_letter(peek()))
        out += text_[pos_++];
    }
    if (out.size() < 3)
      return std::nullopt;
    return out;
  }

  /// [+-]hh[:mm[:ss]] in seconds, hh at most `max_hours`.
  std::optional<int32_t> hours_minutes_seconds(int max_hours) noexcept {
    int sign = 1;
    if (eat('-'))
      sign = -1;
    else
      eat('+');
    const auto hours = number(3);
    if (!hours || *hours > max_hours)
      return std::nullopt;
    int minutes = 0;
    int seconds = 0;
    if (eat(':')) {
      const auto mm = number(2);
      if (!mm || *mm > 59)
        return std::nullopt;
      minutes = *mm;
      if (eat(':')) {
        const auto ss = number(2);
        if (!ss || *ss > 59)
          return std::nullopt;
        seconds = *ss;
      }
    }
    return sign * (*hours * 3600 + minutes * 60 + seconds);
  }

  /// ,date[/time] of a DST rule.
  std::optional<posix_rule_date> rule_date() noexcept {
    posix_rule_date out;
    if (eat('J')) {
      const auto day = number(3);
      if (!day || *day < 1 || *day > 365)
        return std::nullopt;
      out.kind = posix_rule_date::form::julian_no_leap;
      out.day = *day;
    } else if (eat('M')) {
      const auto month = number(2);
      if (!month || *month < 1 || *month > 12 || !eat('.'))
        return std::nullopt;
      const auto week = number(1);
      if (!week || *week < 1 || *week > 5 || !eat('.'))
        return std::nullopt;
      const auto weekday = number(1);
      if (!weekday || *weekday > 6)
        return std::nullopt;
      out.kind = posix_rule_date::form::month_week_day;
      out.month = *month;
      out.week = *week;
      out.day = *weekday;
    } else {
      const auto day = number(3);
      if (!day || *day > 365)
        return std::nullopt;
      out.kind = posix_rule_date::form::day_of_year;
      out.day = *day;
    }
    if (eat('/')) {
      const auto time = hours_minutes_seconds(167);
      if (!time)
        return std::nullopt;
      out.time_s = *time;
    }
    return out;
  }

private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

/// Offsets of TZ strings count west of Greenwich; zone types count east.
constexpr int max_offset_hours = 24;

} // namespace

int64_t posix_rule_date::local_time_in(int64_t year) const {
  int64_t days = 0;
  switch (kind) {
  case form::julian_no_leap:
    days = days_from_civil(year, 1, 1) + day - 1 + (is_leap_year(year) && day >= 60 ? 1 : 0);
    break;
  case form::day_of_year:
    days = days_from_civil(year, 1, 1) + day;
    break;
  case form::month_week_day: {
    const int64_t first = days_from_civil(year, month, 1);
    int day_of_month = 1 + (day - weekday_from_days(first) + 7) % 7 + (week - 1) * 7;
    while (day_of_month > days_in_month(year, month))
      day_of_month -= 7;
    days = first + day_of_month - 1;
    break;
  }
  }
  return days * seconds_per_day + time_s;
}

posix_tz::period posix_tz::period_at(int64_t utc_s) const {
  constexpr int64_t unbounded_below = std::numeric_limits<int64_t>::min();
  constexpr int64_t unbounded_above = std::numeric_limits<int64_t>::max();
  if (!daylight)
    return {false, unbounded_below, unbounded_above};
  // The changes of the years around the instant's UTC year: rule times reach
  // 167 hours past a day and offsets a day either way, so two years on each
  // side always hold a change at or before the instant and one after it.
  struct change {
    int64_t at;
    bool to_daylight;
  };
  std::array<change, 10> changes{};
  const int64_t year = civil_from_days(floor_div(utc_s, seconds_per_day)).year;
  std::size_t count = 0;
  for (int64_t rule_year = year - 2; rule_year <= year + 2; ++rule_year) {
    changes[count++] = {dst_start.local_time_in(rule_year) - standard.utc_offset_s, true};
    changes[count++] = {dst_end.local_time_in(rule_year) - daylight->utc_offset_s, false};
  }
  // At one instant an end sorts before a start: a year's DST that ends where
  // the next one starts (DST all year) stays in effect.
  std::sort(changes.begin(), changes.end(), [](const change& lhs, const change& rhs) {
    return lhs.at != rhs.at ? lhs.at < rhs.at : !lhs.to_daylight && rhs.to_daylight;
  });
  const auto after = std::upper_bound(changes.begin(), changes.end(), utc_s,
                                      [](int64_t at, const change& item) { return at < item.at; });
  if (after == changes.begin())
    return {!changes.front().to_daylight, unbounded_below, changes.front().at};
  const auto& last = *(after - 1);
  return {last.to_daylight, last.at, after == changes.end() ? unbounded_above : after->at};
}

std::optional<posix_tz> parse_posix_tz(std::string_view text) {
  tz_cursor cursor{text};
  posix_tz out;
  // std offset
  auto standard_name = cursor.name();
  const auto standard_offset = cursor.hours_minutes_seconds(max_offset_hours);
  if (!standard_name || !standard_offset)
    return std::nullopt;
  out.standard = {-*standard_offset, false, std::move(*standard_name)};
  if (cursor.done())
    return out;
  // dst [offset]
  auto daylight_name = cursor.name();
  if (!daylight_name)
    return std::nullopt;
  int32_t daylight_offset = out.standard.utc_offset_s + 3600;
  if (cursor.peek() != ',') {
    const auto offset = cursor.hours_minutes_seconds(max_offset_hours);
    if (!offset)
      return std::nullopt;
    daylight_offset = -*offset;
  }
  out.daylight = zone_type{daylight_offset, true, std::move(*daylight_name)};
  // ,start[/time],end[/time]
  if (!cursor.eat(','))
    return std::nullopt;
  const auto start = cursor.rule_date();
  if (!start || !cursor.eat(','))
    return std::nullopt;
  const auto end = cursor.rule_date();
  if (!end || !cursor.done())
    return std::nullopt;
  out.dst_start = *start;
  out.dst_end = *end;
  return out;
}

} // namespace voxos
