// IANA time zones read from the system's zoneinfo (Debian package tzdata:
// /usr/share/zoneinfo), CAF-free. No process-wide TZ and no localtime_r:
// a zone is an immutable value, shared between threads through
// shared_ptr<const time_zone>, and every query on it is a pure function.
//
// A zone file is TZif version 2 or later (RFC 9636): the 64-bit transitions,
// their local time types, and the footer's POSIX TZ rule (posix_tz.hpp) for
// instants on or after the last transition. Instants before the first
// transition take the first local time type (RFC 9636); a file without a
// footer rule keeps its last transition's type forever. Zones whose files
// count leap seconds (zoneinfo's "right/" tree) are refused: the node's clock
// is POSIX time.
//
// Instants are int64 seconds since the Unix epoch (UTC, no leap seconds);
// "local seconds" are the wall-clock reading counted the same way, as if it
// were UTC (civil_time.hpp converts either to a date). Both are clamped to
// the years 0000..9999 (ISO 8601's four digits).
//
// Local time to UTC. A local time inside a gap (clocks jumped forward over
// it) is shifted forward by the length of the gap: it is read with the
// offset in effect before the gap, so New York's 02:30 on a spring-forward
// day is 03:30 EDT (07:30 UTC). A local time inside a fold (clocks went back
// over it) is the earlier of its two instants: New York's 01:30 on a
// fall-back day is 01:30 EDT (05:30 UTC); the later one is reported beside it.
//
// Errors (messages name the rule broken, never the rejected name):
//   out_of_range  the name breaks the grammar below; no file was touched
//   not_found     no such zone: no file, not a regular file, not TZif, or a
//                 leap-second zone
//   corrupt_data  a TZif file that breaks RFC 9636, or larger than the bound
//   unavailable   the file exists but could not be read (permissions, I/O)
// and next_local_time() answers out_of_range for an hour or minute off the clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/civil_time.hpp"
#include "config/posix_tz.hpp"
#include "messages/status.hpp"

namespace voxos {

/// How one local wall-clock time maps to instants.
enum class local_time_kind : uint8_t {
  unique,   ///< it occurs once
  skipped,  ///< it falls in a gap and never occurs: shifted forward by the gap
  repeated, ///< it falls in a fold and occurs twice: the earlier instant
};

struct local_time_resolution {
  /// The instant the policy picks (seconds since the epoch).
  int64_t utc_s = 0;
  local_time_kind kind = local_time_kind::unique;
  /// repeated: the later of the two instants; otherwise utc_s.
  int64_t later_utc_s = 0;
};

class time_zone {
public:
  /// Instants and local seconds are clamped to [min_seconds, max_seconds]:
  /// 0000-01-01T00:00:00 to 9999-12-31T23:59:59.
  static constexpr int64_t min_seconds = -62'167'219'200;
  static constexpr int64_t max_seconds = 253'402'300'799;

  /// UTC itself, built in (no file): the zone of a call that names none.
  static std::shared_ptr<const time_zone> utc();

  /// Parses TZif bytes (version 2 or later) into a zone called `name`;
  /// corrupt_data (or not_found for a leap-second zone) on failure.
  static result<std::shared_ptr<const time_zone>> parse(std::string name, std::string_view tzif);

  /// The IANA name it was loaded as ("UTC" for the built-in zone).
  const std::string& name() const noexcept { return name_; }

  /// UTC to local: the local time type in effect at `utc_s`. The reference
  /// lives as long as the zone.
  const zone_type& at(int64_t utc_s) const;

  /// The wall clock's reading at `utc_s`, in local seconds.
  int64_t to_local(int64_t utc_s) const;

  /// Local to UTC under the gap and fold policy above.
  local_time_resolution resolve(int64_t local_s) const;
  local_time_resolution resolve(const civil_time& local) const {
    return resolve(from_civil(local));
  }

  /// The last explicit transition of the file (the footer rule governs from
  /// there on); nullopt when it has none.
  std::optional<int64_t> last_transition() const;

private:
  /// A stretch of instants [begin, end) with one local time type.
  struct period {
    const zone_type* type;
    int64_t begin;
    int64_t end;
  };
  period period_at(int64_t utc_s) const;

  time_zone() = default;

  std::string name_;
  std::vector<int64_t> transitions_; ///< strictly ascending
  std::vector<uint8_t> transition_types_;
  std::vector<zone_type> types_; ///< at least one
  std::optional<posix_tz> footer_;
};

/// The first instant on or after `from_us` (microseconds since the epoch) at
/// which `zone`'s wall clock reads `hour`:`minute`:00, in microseconds: each
/// day's occurrence is resolve() of that day's local time, so in a gap it is
/// shifted forward by the gap and in a fold it is the earlier instant only (a
/// daily schedule fires once a day). `hour` 0..23, `minute` 0..59, else
/// out_of_range.
result<int64_t> next_local_time(const time_zone& zone, int hour, int minute, int64_t from_us);

/// "2024-07-01T13:34:56": `seconds` read as a civil time (ISO 8601, no
/// offset; an instant as UTC, local seconds as their wall-clock reading).
std::string iso_date_time(int64_t seconds);

/// "+05:30", "-04:00"; "+hh:mm:ss" when the offset has seconds.
std::string iso_offset(int32_t utc_offset_s);

/// Bounds of a zone database; each default suits the system zoneinfo.
struct time_zone_db_options {
  /// The zoneinfo directory read.
  std::string directory = "/usr/share/zoneinfo";
  /// The longest zone name accepted: the longest IANA name has 32 characters;
  /// 64 is also the get_current_time tool's schema bound.
  std::size_t max_name_length = 64;
  /// The largest file read: the system's largest TZif file has about 4 KiB.
  std::size_t max_file_bytes = 64 * 1024;
  /// Zones kept once loaded (the system has about 600 names); past it a zone
  /// is read again for each load.
  std::size_t max_cached_zones = 1024;
};

/// Checks a zone name against the grammar, touching nothing: 1 to 3
/// components joined by '/', each of ASCII letters, digits, '_', '+' and '-'
/// and not starting with '-' (so never "", ".", "..", an absolute path or
/// an empty component), `max_length` characters at most. Else out_of_range.
status check_time_zone_name(std::string_view name, std::size_t max_length);

/// Zones loaded by name from one zoneinfo directory and kept: loads are
/// thread-safe, and a name loaded once answers the same zone afterwards.
/// Failures are not kept (only zones that exist can fill the cache).
class time_zone_db {
public:
  explicit time_zone_db(time_zone_db_options options = {});

  /// The zone called `name`; the errors listed at the top of this file.
  result<std::shared_ptr<const time_zone>> load(std::string_view name);

  /// Zones currently kept.
  std::size_t cached() const;

  const time_zone_db_options& options() const noexcept { return options_; }

private:
  result<std::string> read_zone_file(std::string_view name) const;

  time_zone_db_options options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const time_zone>> zones_;
};

/// The node's zone database: the directory named by TZDIR when it is set and
/// not empty (read once, at first use), else /usr/share/zoneinfo; default
/// bounds. Created at first use; lives until exit.
time_zone_db& system_time_zones();

} // namespace voxos
