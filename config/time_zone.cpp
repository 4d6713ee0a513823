#include "config/time_zone.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace voxos {

namespace {

constexpr int64_t unbounded_below = std::numeric_limits<int64_t>::min();
constexpr int64_t unbounded_above = std::numeric_limits<int64_t>::max();

/// UTC offsets lie within -25:59:59 and +25:59:59 (RFC 9636 section 3.2), so
/// the instants of one local time lie within this many seconds of it.
constexpr int64_t offset_reach_s = 93'600;

int64_t clamp_seconds(int64_t seconds) {
  return std::clamp(seconds, time_zone::min_seconds, time_zone::max_seconds);
}

status corrupt(const char* what) {
  return status::error(errc::corrupt_data, std::string{"TZif data: "} + what);
}

/// Big-endian fields of a TZif file, bounds-checked by the caller through has().
class tzif_reader {
public:
  explicit tzif_reader(std::string_view data) : data_(data) {}

  bool has(uint64_t count) const noexcept { return data_.size() - pos_ >= count; }
  std::string_view rest() const noexcept { return data_.substr(pos_); }
  std::string_view take(std::size_t count) noexcept {
    const auto out = data_.substr(pos_, count);
    pos_ += count;
    return out;
  }
  uint8_t u8() noexcept { return static_cast<uint8_t>(data_[pos_++]); }
  uint32_t u32() noexcept {
    uint32_t out = 0;
    for (int byte_idx = 0; byte_idx < 4; ++byte_idx)
      out = (out << 8) | u8();
    return out;
  }
  int64_t i64() noexcept {
    uint64_t out = 0;
    for (int byte_idx = 0; byte_idx < 8; ++byte_idx)
      out = (out << 8) | u8();
    return static_cast<int64_t>(out);
  }

private:
  std::string_view data_;
  std::size_t pos_ = 0;
};

/// The counts of one TZif header (RFC 9636 section 3.1).
struct tzif_header {
  char version = 0;
  uint64_t isut = 0, isstd = 0, leap = 0, time = 0, type = 0, chars = 0;
};

std::optional<tzif_header> read_header(tzif_reader& in) {
  constexpr std::size_t header_bytes = 44;
  if (!in.has(header_bytes) || in.take(4) != "TZif")
    return std::nullopt;
  tzif_header out;
  out.version = static_cast<char>(in.u8());
  in.take(15); // reserved
  out.isut = in.u32();
  out.isstd = in.u32();
  out.leap = in.u32();
  out.time = in.u32();
  out.type = in.u32();
  out.chars = in.u32();
  return out;
}

/// Abbreviations go into tool answers: printable ASCII only.
bool printable_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

/// Closes a descriptor on every path out.
struct fd_guard {
  int fd;
  ~fd_guard() { ::close(fd); }
};

} // namespace

// -- parsing ----------------------------------------------------------------

result<std::shared_ptr<const time_zone>> time_zone::parse(std::string name, std::string_view tzif) {
  tzif_reader in{tzif};
  // The version 1 header and data block: skipped, the 64-bit block follows.
  const auto first = read_header(in);
  if (!first)
    return corrupt("no TZif header");
  if (first->version < '2' || first->version > '9')
    return corrupt("version 1 has no 64-bit data: the node reads version 2 and later");
  const uint64_t v1_bytes =
    first->time * 5 + first->type * 6 + first->chars + first->leap * 8 + first->isstd + first->isut;
  if (!in.has(v1_bytes))
    return corrupt("truncated version 1 data block");
  in.take(v1_bytes);
  const auto header = read_header(in);
  if (!header)
    return corrupt("no version 2 header after the version 1 data block");
  if (header->type == 0 || header->chars == 0)
    return corrupt("no local time type or no abbreviation characters");
  if ((header->isut != 0 && header->isut != header->type)
      || (header->isstd != 0 && header->isstd != header->type))
    return corrupt("standard/UT indicator counts differ from the type count");
  if (header->leap != 0)
    return status::error(errc::not_found,
                         "the zone counts leap seconds; the node's clock is POSIX time");
  const uint64_t v2_bytes =
    header->time * 9 + header->type * 6 + header->chars + header->isstd + header->isut;
  if (!in.has(v2_bytes))
    return corrupt("truncated version 2 data block");

  std::shared_ptr<time_zone> zone{new time_zone()};
  zone->name_ = std::move(name);
  // Transition times, strictly ascending, then the type of each.
  zone->transitions_.reserve(header->time);
  for (uint64_t transition_idx = 0; transition_idx < header->time; ++transition_idx) {
    const int64_t at = in.i64();
    if (!zone->transitions_.empty() && at <= zone->transitions_.back())
      return corrupt("transition times are not strictly ascending");
    zone->transitions_.push_back(at);
  }
  zone->transition_types_.reserve(header->time);
  for (uint64_t transition_idx = 0; transition_idx < header->time; ++transition_idx) {
    const uint8_t type_idx = in.u8();
    if (type_idx >= header->type)
      return corrupt("a transition names a local time type that does not exist");
    zone->transition_types_.push_back(type_idx);
  }
  // Local time types; their abbreviations index the characters after them.
  struct raw_type {
    int32_t utc_offset_s;
    uint8_t is_dst;
    uint8_t abbreviation_idx;
  };
  std::vector<raw_type> raw_types;
  for (uint64_t type_idx = 0; type_idx < header->type; ++type_idx) {
    raw_type raw{static_cast<int32_t>(in.u32()), in.u8(), in.u8()};
    if (raw.utc_offset_s < -89'999 || raw.utc_offset_s > 93'599)
      return corrupt("a UTC offset lies outside -25:59:59..+25:59:59");
    if (raw.is_dst > 1)
      return corrupt("a DST indicator is neither 0 nor 1");
    if (raw.abbreviation_idx >= header->chars)
      return corrupt("an abbreviation index lies past the characters");
    raw_types.push_back(raw);
  }
  const std::string_view chars = in.take(header->chars);
  for (const auto& raw : raw_types) {
    const auto end = chars.find('\0', raw.abbreviation_idx);
    if (end == std::string_view::npos)
      return corrupt("an abbreviation is not NUL-terminated");
    const auto abbreviation = chars.substr(raw.abbreviation_idx, end - raw.abbreviation_idx);
    if (!printable_ascii(abbreviation))
      return corrupt("an abbreviation is not printable ASCII");
    zone->types_.push_back({raw.utc_offset_s, raw.is_dst == 1, std::string{abbreviation}});
  }
  in.take(header->isstd + header->isut); // only POSIX-TZ-without-rules readers need them

  // The footer: "\n" TZ string "\n", and nothing after it.
  if (!in.has(1) || in.u8() != '\n')
    return corrupt("no footer after the version 2 data block");
  const std::string_view rest = in.rest();
  const auto newline = rest.find('\n');
  if (newline == std::string_view::npos)
    return corrupt("the footer is not terminated by a newline");
  if (newline + 1 != rest.size())
    return corrupt("bytes follow the footer");
  if (newline > 0) {
    zone->footer_ = parse_posix_tz(rest.substr(0, newline));
    if (!zone->footer_)
      return corrupt("the footer's TZ rule is malformed");
  }
  return std::shared_ptr<const time_zone>{std::move(zone)};
}

std::shared_ptr<const time_zone> time_zone::utc() {
  static const std::shared_ptr<const time_zone> zone = [] {
    std::shared_ptr<time_zone> out{new time_zone()};
    out->name_ = "UTC";
    out->types_.push_back({0, false, "UTC"});
    return std::shared_ptr<const time_zone>{std::move(out)};
  }();
  return zone;
}

// -- queries ----------------------------------------------------------------

time_zone::period time_zone::period_at(int64_t utc_s) const {
  const auto after = std::upper_bound(transitions_.begin(), transitions_.end(), utc_s);
  if (after != transitions_.end()) {
    if (after == transitions_.begin())
      return {&types_.front(), unbounded_below, *after};
    const auto idx = static_cast<std::size_t>(after - transitions_.begin()) - 1;
    return {&types_[transition_types_[idx]], transitions_[idx], *after};
  }
  // On or after the last transition: the footer rule, else the last type.
  const int64_t since = transitions_.empty() ? unbounded_below : transitions_.back();
  if (footer_) {
    const auto rule = footer_->period_at(utc_s);
    const zone_type* type = rule.daylight ? &*footer_->daylight : &footer_->standard;
    return {type, std::max(rule.begin, since), rule.end};
  }
  const zone_type* type =
    transitions_.empty() ? &types_.front() : &types_[transition_types_.back()];
  return {type, since, unbounded_above};
}

const zone_type& time_zone::at(int64_t utc_s) const {
  return *period_at(clamp_seconds(utc_s)).type;
}

int64_t time_zone::to_local(int64_t utc_s) const {
  const int64_t clamped = clamp_seconds(utc_s);
  return clamped + at(clamped).utc_offset_s;
}

std::optional<int64_t> time_zone::last_transition() const {
  if (transitions_.empty())
    return std::nullopt;
  return transitions_.back();
}

local_time_resolution time_zone::resolve(int64_t local_s) const {
  local_s = clamp_seconds(local_s);
  // Walk the periods that can hold an instant of this local time. A period
  // with offset o holds one when local_s - o lies inside it; a gap is where
  // the offset grows at a boundary and local_s - o falls before the boundary
  // for the new offset and on or after it for the old.
  std::optional<int64_t> earliest;
  std::optional<int64_t> latest;
  std::optional<int64_t> shifted;
  const zone_type* previous = nullptr;
  const int64_t stop = local_s + offset_reach_s;
  for (int64_t cursor = local_s - offset_reach_s;;) {
    const period current = period_at(cursor);
    const int64_t candidate = local_s - current.type->utc_offset_s;
    if (candidate >= current.begin && candidate < current.end) {
      if (!earliest)
        earliest = candidate;
      latest = candidate;
    } else if (previous != nullptr && !shifted && candidate < current.begin
               && local_s - previous->utc_offset_s >= current.begin) {
      shifted = local_s - previous->utc_offset_s;
    }
    if (current.end > stop)
      break;
    previous = current.type;
    cursor = current.end;
  }
  if (earliest && *latest != *earliest)
    return {*earliest, local_time_kind::repeated, *latest};
  if (earliest)
    return {*earliest, local_time_kind::unique, *earliest};
  if (shifted)
    return {*shifted, local_time_kind::skipped, *shifted};
  // Unreachable for a partition of time into periods; read with the offset
  // in effect at the local time taken as an instant.
  const int64_t fallback = local_s - at(local_s).utc_offset_s;
  return {fallback, local_time_kind::unique, fallback};
}

result<int64_t> next_local_time(const time_zone& zone, int hour, int minute, int64_t from_us) {
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59)
    return status::error(errc::out_of_range, "hour must be 0..23 and minute 0..59");
  constexpr int64_t us_per_s = 1'000'000;
  from_us =
    std::clamp(from_us, time_zone::min_seconds * us_per_s, time_zone::max_seconds * us_per_s);
  const int64_t from_s = -floor_div(-from_us, us_per_s); // the first whole second not before
  // From the local day before the one `from_s` falls on (a gap can shift that
  // day's occurrence past `from_s`). Offsets span less than 52 hours, so the
  // third day after it holds an occurrence at the latest.
  int64_t day = floor_div(zone.to_local(from_s), seconds_per_day) - 1;
  for (int attempt = 0; attempt < 5; ++attempt, ++day) {
    const auto occurrence =
      zone.resolve(day * seconds_per_day + int64_t{hour} * 3600 + int64_t{minute} * 60);
    if (occurrence.utc_s >= from_s)
      return occurrence.utc_s * us_per_s;
  }
  return status::error(errc::out_of_range, "no occurrence before the end of year 9999");
}

std::string iso_date_time(int64_t seconds) {
  const civil_time time = to_civil(seconds);
  char text[32];
  std::snprintf(text, sizeof text, "%04lld-%02d-%02dT%02d:%02d:%02d",
                static_cast<long long>(time.year), time.month, time.day, time.hour, time.minute,
                time.second);
  return text;
}

std::string iso_offset(int32_t utc_offset_s) {
  const char sign = utc_offset_s < 0 ? '-' : '+';
  const int32_t magnitude = std::abs(utc_offset_s);
  char text[16];
  if (magnitude % 60 == 0)
    std::snprintf(text, sizeof text, "%c%02d:%02d", sign, magnitude / 3600, magnitude / 60 % 60);
  else
    std::snprintf(text, sizeof text, "%c%02d:%02d:%02d", sign, magnitude / 3600,
                  magnitude / 60 % 60, magnitude % 60);
  return text;
}

// -- loading ------------------------------------------------------------------

status check_time_zone_name(std::string_view name, std::size_t max_length) {
  const auto refuse = [max_length] {
    return status::error(errc::out_of_range,
                         "a time zone name is 1 to " + std::to_string(max_length)
                           + " characters: 1 to 3 parts joined by '/', each of ASCII letters, "
                             "digits, '_', '+' and '-', not starting with '-'");
  };
  if (name.empty() || name.size() > max_length)
    return refuse();
  int components = 1;
  bool component_start = true;
  for (const char c : name) {
    if (c == '/') {
      if (component_start || ++components > 3)
        return refuse();
      component_start = true;
      continue;
    }
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                         || c == '_' || c == '+' || (c == '-' && !component_start);
    if (!allowed)
      return refuse();
    component_start = false;
  }
  if (component_start) // a trailing '/'
    return refuse();
  return status::ok();
}

time_zone_db::time_zone_db(time_zone_db_options options) : options_(std::move(options)) {}

result<std::string> time_zone_db::read_zone_file(std::string_view name) const {
  const std::string path = options_.directory + "/" + std::string{name};
  // Non-blocking, so a FIFO planted in the directory cannot hold the caller.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR || error == ELOOP || error == ENAMETOOLONG)
      return status::error(errc::not_found, "no such time zone");
    return status::error(errc::unavailable, "the zone file could not be opened: "
                                              + std::generic_category().message(error));
  }
  const fd_guard guard{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    return status::error(errc::unavailable, "the zone file could not be examined");
  if (!S_ISREG(info.st_mode))
    return status::error(errc::not_found, "no such time zone (not a regular file)");
  const std::size_t limit = options_.max_file_bytes;
  const auto too_large = [limit] {
    return status::error(errc::corrupt_data,
                         "the zone file is larger than " + std::to_string(limit) + " bytes");
  };
  if (static_cast<uint64_t>(info.st_size) > limit)
    return too_large();
  // Read to the end (at most one byte past the bound: the file may grow).
  std::string bytes(limit + 1, '\0');
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + filled, bytes.size() - filled);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return status::error(errc::unavailable, "the zone file could not be read");
    if (got == 0)
      break;
    filled += static_cast<std::size_t>(got);
  }
  if (filled > limit)
    return too_large();
  bytes.resize(filled);
  return result<std::string>{std::move(bytes)};
}

result<std::shared_ptr<const time_zone>> time_zone_db::load(std::string_view name) {
  // The name is judged before any file system access.
  if (auto checked = check_time_zone_name(name, options_.max_name_length); !checked)
    return checked;
  std::string key{name};
  {
    const std::lock_guard<std::mutex> lock{mutex_};
    if (const auto found = zones_.find(key); found != zones_.end())
      return found->second;
  }
  // Read and parse outside the lock; a zone loaded by two threads at once
  // is kept once, and both answer the kept one.
  auto bytes = read_zone_file(name);
  if (!bytes)
    return bytes.error();
  if (std::string_view{*bytes}.substr(0, 4) != "TZif")
    return status::error(errc::not_found, "no such time zone (not a TZif file)");
  auto zone = time_zone::parse(key, *bytes);
  if (!zone)
    return zone.error();
  const std::lock_guard<std::mutex> lock{mutex_};
  if (const auto found = zones_.find(key); found != zones_.end())
    return found->second;
  if (zones_.size() < options_.max_cached_zones)
    zones_.emplace(std::move(key), *zone);
  return std::move(*zone);
}

std::size_t time_zone_db::cached() const {
  const std::lock_guard<std::mutex> lock{mutex_};
  return zones_.size();
}

time_zone_db& system_time_zones() {
  static time_zone_db zones{[] {
    time_zone_db_options options;
    if (const char* directory = std::getenv("TZDIR"); directory != nullptr && *directory != '\0')
      options.directory = directory;
    return options;
  }()};
  return zones;
}

} // namespace voxos
