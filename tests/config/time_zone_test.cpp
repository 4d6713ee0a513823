// config/time_zone: IANA zones read from the system zoneinfo (tzdata, as
// scripts/setup installs it). Expected readings follow from the zones' rules
// (EU: last Sunday of March and October at 01:00 UTC; US: second Sunday of
// March, first of November, at 02:00 local; New South Wales: first Sunday of
// October and of April); the C library's own reader is the second opinion
// for every zone of zone1970.tab.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

#include "config/time_zone.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;

namespace {

constexpr const char* system_zoneinfo = "/usr/share/zoneinfo";

int64_t utc_at(int64_t year, int month, int day, int hour = 0, int minute = 0, int second = 0) {
  return from_civil({year, month, day, hour, minute, second});
}

std::shared_ptr<const time_zone> zone(const std::string& name) {
  auto loaded = system_time_zones().load(name);
  REQUIRE_MESSAGE(loaded.is_ok(), name << ": " << loaded.error().message());
  return *loaded;
}

void check_reading(const time_zone& tz, int64_t utc_s, int32_t offset_s, const char* abbreviation,
                   bool is_dst) {
  const zone_type& type = tz.at(utc_s);
  INFO(tz.name() << " at " << utc_s);
  CHECK(type.utc_offset_s == offset_s);
  CHECK(type.abbreviation == abbreviation);
  CHECK(type.is_dst == is_dst);
}

struct expected_reading {
  int64_t utc_s;
  int32_t offset_s;
  const char* abbreviation;
  bool is_dst;
};

void check_readings(const time_zone& tz, std::initializer_list<expected_reading> expected) {
  for (const auto& reading : expected)
    check_reading(tz, reading.utc_s, reading.offset_s, reading.abbreviation, reading.is_dst);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  REQUIRE(in.good());
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out{path, std::ios::binary};
  out << bytes;
  REQUIRE(out.good());
}

/// The parts of a TZif version 2 file, written by build_tzif(); the tests
/// start from a valid one and break one part at a time.
struct tzif_parts {
  struct type {
    int32_t utc_offset_s;
    uint8_t is_dst;
    uint8_t abbreviation_idx;
  };
  char version = '2';
  std::vector<int64_t> transitions{utc_at(2024, 3, 10, 7), utc_at(2024, 11, 3, 6)};
  std::vector<uint8_t> transition_types{1, 0};
  std::vector<type> types{{-18000, 0, 0}, {-14400, 1, 4}};
  std::string chars{"EST\0EDT\0", 8};
  uint32_t leap_seconds = 0;
  std::string footer = "\nEST5EDT,M3.2.0,M11.1.0\n";
};

void put_u32(std::string& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out += static_cast<char>((value >> shift) & 0xff);
}

void put_i64(std::string& out, int64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out += static_cast<char>((static_cast<uint64_t>(value) >> shift) & 0xff);
}

std::string build_tzif(const tzif_parts& parts) {
  const auto header = [&parts](std::string& out, bool empty) {
    out += "TZif";
    out += parts.version;
    out += std::string(15, '\0');
    put_u32(out, 0); // isut
    put_u32(out, 0); // isstd
    put_u32(out, empty ? 0 : parts.leap_seconds);
    put_u32(out, empty ? 0 : static_cast<uint32_t>(parts.transitions.size()));
    put_u32(out, empty ? 0 : static_cast<uint32_t>(parts.types.size()));
    put_u32(out, empty ? 0 : static_cast<uint32_t>(parts.chars.size()));
  };
  std::string out;
  header(out, true); // an empty version 1 block, as `zic -b slim` writes
  header(out, false);
  for (const int64_t at : parts.transitions)
    put_i64(out, at);
  for (const uint8_t type_idx : parts.transition_types)
    out += static_cast<char>(type_idx);
  for (const auto& type : parts.types) {
    put_u32(out, static_cast<uint32_t>(type.utc_offset_s));
    out += static_cast<char>(type.is_dst);
    out += static_cast<char>(type.abbreviation_idx);
  }
  out += parts.chars;
  for (uint32_t leap_idx = 0; leap_idx < parts.leap_seconds; ++leap_idx) {
    put_i64(out, utc_at(2017, 1, 1) + leap_idx);
    put_u32(out, leap_idx + 1);
  }
  return out + parts.footer;
}

errc load_error(time_zone_db& zones, const std::string& name) {
  const auto loaded = zones.load(name);
  REQUIRE_FALSE(loaded.is_ok());
  return loaded.error().code();
}

errc parse_error(const tzif_parts& parts) {
  const auto parsed = time_zone::parse("Test/Zone", build_tzif(parts));
  REQUIRE_FALSE(parsed.is_ok());
  return parsed.error().code();
}

} // namespace

TEST_CASE("Europe/London reads GMT in winter and BST in summer, changing at 01:00 UTC") {
  const auto london = zone("Europe/London");
  CHECK(london->name() == "Europe/London");
  check_readings(*london, {{utc_at(2024, 1, 15, 12), 0, "GMT", false},
                           {utc_at(2024, 7, 1, 12), 3600, "BST", true},
                           // 2024-03-31 and 2024-10-27 are the last Sundays of March and October.
                           {utc_at(2024, 3, 31, 0, 59, 59), 0, "GMT", false},
                           {utc_at(2024, 3, 31, 1), 3600, "BST", true},
                           {utc_at(2024, 10, 27, 0, 59, 59), 3600, "BST", true},
                           {utc_at(2024, 10, 27, 1), 0, "GMT", false}});
  CHECK(london->to_local(utc_at(2024, 7, 1, 12)) == utc_at(2024, 7, 1, 13));
}

TEST_CASE("America/New_York reads EST and EDT, changing at 02:00 local time") {
  const auto new_york = zone("America/New_York");
  check_readings(*new_york,
                 {{utc_at(2024, 1, 15, 12), -18000, "EST", false},
                  {utc_at(2024, 7, 1, 12), -14400, "EDT", true},
                  // 02:00 EST on 2024-03-10 is 07:00 UTC; 02:00 EDT on 2024-11-03 is 06:00 UTC.
                  {utc_at(2024, 3, 10, 6, 59, 59), -18000, "EST", false},
                  {utc_at(2024, 3, 10, 7), -14400, "EDT", true},
                  {utc_at(2024, 11, 3, 5, 59, 59), -14400, "EDT", true},
                  {utc_at(2024, 11, 3, 6), -18000, "EST", false}});
}

TEST_CASE("Australia/Sydney keeps daylight saving in January and standard time in July") {
  const auto sydney = zone("Australia/Sydney");
  check_readings(*sydney, {{utc_at(2024, 1, 15, 12), 39600, "AEDT", true},
                           {utc_at(2024, 7, 1, 12), 36000, "AEST", false},
                           // 03:00 AEDT on 2024-04-07 is 16:00 UTC the day before; 02:00 AEST on
                           // 2024-10-06 likewise.
                           {utc_at(2024, 4, 6, 15, 59, 59), 39600, "AEDT", true},
                           {utc_at(2024, 4, 6, 16), 36000, "AEST", false},
                           {utc_at(2024, 10, 5, 15, 59, 59), 36000, "AEST", false},
                           {utc_at(2024, 10, 5, 16), 39600, "AEDT", true}});
}

TEST_CASE("Asia/Kolkata is five and a half hours ahead of UTC all year") {
  const auto kolkata = zone("Asia/Kolkata");
  check_reading(*kolkata, utc_at(2024, 1, 15, 12), 19800, "IST", false);
  check_reading(*kolkata, utc_at(2024, 7, 1, 12), 19800, "IST", false);
  CHECK(kolkata->to_local(utc_at(2024, 7, 1, 20, 15)) == utc_at(2024, 7, 2, 1, 45));
  const auto back = kolkata->resolve(civil_time{2024, 7, 2, 1, 45, 0});
  CHECK(back.kind == local_time_kind::unique);
  CHECK(back.utc_s == utc_at(2024, 7, 1, 20, 15));
}

TEST_CASE("zones without daylight saving keep one offset all year") {
  const auto tokyo = zone("Asia/Tokyo");
  const auto phoenix = zone("America/Phoenix");
  const auto etc_utc = zone("Etc/UTC");
  for (const int month : {1, 3, 7, 11}) {
    check_reading(*tokyo, utc_at(2024, month, 10, 12), 32400, "JST", false);
    // Arizona keeps MST while the rest of the Mountain zone changes.
    check_reading(*phoenix, utc_at(2024, month, 10, 12), -25200, "MST", false);
    check_reading(*etc_utc, utc_at(2024, month, 10, 12), 0, "UTC", false);
    check_reading(*time_zone::utc(), utc_at(2024, month, 10, 12), 0, "UTC", false);
  }
  CHECK(time_zone::utc()->name() == "UTC");
  CHECK_FALSE(time_zone::utc()->last_transition().has_value());
}

TEST_CASE("instants far past the last transition follow the footer rule") {
  const auto london = zone("Europe/London");
  const auto new_york = zone("America/New_York");
  const auto sydney = zone("Australia/Sydney");
  for (const auto& tz : {london, new_york, sydney}) {
    REQUIRE(tz->last_transition().has_value());
    CHECK(*tz->last_transition() < utc_at(2100, 1, 1));
  }
  // 2100: March 14 and November 7 are the US Sundays, March 28 and October
  // 31 the EU ones.
  check_readings(*london, {{utc_at(2100, 3, 28, 0, 59, 59), 0, "GMT", false},
                           {utc_at(2100, 3, 28, 1), 3600, "BST", true},
                           {utc_at(2100, 10, 31, 1), 0, "GMT", false}});
  check_readings(*new_york, {{utc_at(2100, 3, 14, 6, 59, 59), -18000, "EST", false},
                             {utc_at(2100, 3, 14, 7), -14400, "EDT", true},
                             {utc_at(2100, 11, 7, 5, 59, 59), -14400, "EDT", true},
                             {utc_at(2100, 11, 7, 6), -18000, "EST", false}});
  // 2400 (a leap year whose March starts on a Wednesday): March 12, November 5.
  check_readings(*new_york, {{utc_at(2400, 3, 12, 6, 59, 59), -18000, "EST", false},
                             {utc_at(2400, 3, 12, 7), -14400, "EDT", true},
                             {utc_at(2400, 11, 5, 6), -18000, "EST", false}});
  check_reading(*sydney, utc_at(2400, 1, 15, 12), 39600, "AEDT", true);
  check_reading(*sydney, utc_at(2400, 7, 15, 12), 36000, "AEST", false);
  // The footer's reading round-trips through local time too.
  const auto back = new_york->resolve(new_york->to_local(utc_at(2400, 7, 4, 16)));
  CHECK(back.utc_s == utc_at(2400, 7, 4, 16));
}

TEST_CASE("a local time in the spring-forward gap is shifted forward by the gap") {
  // New York 2024-03-10: 02:00 EST jumps to 03:00 EDT; 02:30 never happens.
  const auto new_york = zone("America/New_York");
  const auto in_gap = new_york->resolve(civil_time{2024, 3, 10, 2, 30, 0});
  CHECK(in_gap.kind == local_time_kind::skipped);
  CHECK(in_gap.utc_s == utc_at(2024, 3, 10, 7, 30)); // 03:30 EDT
  CHECK(in_gap.later_utc_s == in_gap.utc_s);
  CHECK(new_york->to_local(in_gap.utc_s) == utc_at(2024, 3, 10, 3, 30));
  // The gap's first second, and the first second after it.
  CHECK(new_york->resolve(civil_time{2024, 3, 10, 2, 0, 0}).kind == local_time_kind::skipped);
  CHECK(new_york->resolve(civil_time{2024, 3, 10, 2, 0, 0}).utc_s == utc_at(2024, 3, 10, 7));
  const auto after_gap = new_york->resolve(civil_time{2024, 3, 10, 3, 0, 0});
  CHECK(after_gap.kind == local_time_kind::unique);
  CHECK(after_gap.utc_s == utc_at(2024, 3, 10, 7));
  CHECK(new_york->resolve(civil_time{2024, 3, 10, 1, 59, 59}).kind == local_time_kind::unique);
  // London 2024-03-31: 01:30 does not happen; it reads as 02:30 BST.
  const auto london = zone("Europe/London");
  const auto london_gap = london->resolve(civil_time{2024, 3, 31, 1, 30, 0});
  CHECK(london_gap.kind == local_time_kind::skipped);
  CHECK(london_gap.utc_s == utc_at(2024, 3, 31, 1, 30));
  // Sydney 2024-10-06: 02:00 AEST jumps to 03:00 AEDT.
  const auto sydney = zone("Australia/Sydney");
  const auto sydney_gap = sydney->resolve(civil_time{2024, 10, 6, 2, 15, 0});
  CHECK(sydney_gap.kind == local_time_kind::skipped);
  CHECK(sydney_gap.utc_s == utc_at(2024, 10, 5, 16, 15)); // 03:15 AEDT
}

TEST_CASE("a local time in the fall-back fold resolves to the earlier instant") {
  // New York 2024-11-03: 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
  const auto new_york = zone("America/New_York");
  const auto folded = new_york->resolve(civil_time{2024, 11, 3, 1, 30, 0});
  CHECK(folded.kind == local_time_kind::repeated);
  CHECK(folded.utc_s == utc_at(2024, 11, 3, 5, 30));       // 01:30 EDT
  CHECK(folded.later_utc_s == utc_at(2024, 11, 3, 6, 30)); // 01:30 EST
  CHECK(new_york->at(folded.utc_s).abbreviation == "EDT");
  CHECK(new_york->at(folded.later_utc_s).abbreviation == "EST");
  // The fold's edges: 01:00 is repeated, 02:00 is not.
  CHECK(new_york->resolve(civil_time{2024, 11, 3, 1, 0, 0}).kind == local_time_kind::repeated);
  const auto after_fold = new_york->resolve(civil_time{2024, 11, 3, 2, 0, 0});
  CHECK(after_fold.kind == local_time_kind::unique);
  CHECK(after_fold.utc_s == utc_at(2024, 11, 3, 7));
  // Sydney 2024-04-07: 03:00 AEDT falls back to 02:00 AEST.
  const auto sydney = zone("Australia/Sydney");
  const auto sydney_fold = sydney->resolve(civil_time{2024, 4, 7, 2, 30, 0});
  CHECK(sydney_fold.kind == local_time_kind::repeated);
  CHECK(sydney_fold.utc_s == utc_at(2024, 4, 6, 15, 30));
  CHECK(sydney_fold.later_utc_s == utc_at(2024, 4, 6, 16, 30));
}

TEST_CASE("a daily 09:00 stays 09:00 local across both transitions") {
  struct stretch {
    const char* zone_name;
    civil_time first_day;
    int days;
  };
  // Ten days around each of the year's two changes.
  for (const stretch& span :
       {stretch{"America/New_York", {2024, 3, 5}, 10},
        stretch{"America/New_York", {2024, 10, 29}, 10},
        stretch{"Europe/London", {2024, 3, 26}, 10}, stretch{"Europe/London", {2024, 10, 22}, 10},
        stretch{"Australia/Sydney", {2024, 4, 2}, 10},
        stretch{"Australia/Sydney", {2024, 10, 1}, 10}}) {
    const auto tz = zone(span.zone_name);
    INFO(span.zone_name);
    int64_t from_us = tz->resolve(span.first_day).utc_s * 1'000'000;
    std::vector<int32_t> offsets;
    for (int day_idx = 0; day_idx < span.days; ++day_idx) {
      const auto next = next_local_time(*tz, 9, 0, from_us);
      REQUIRE(next.is_ok());
      const int64_t at_s = *next / 1'000'000;
      civil_time expected = span.first_day;
      expected.day += day_idx;
      expected.hour = 9;
      // Each occurrence is 09:00:00 local on the next calendar day.
      CHECK(tz->to_local(at_s) == from_civil(expected));
      offsets.push_back(tz->at(at_s).utc_offset_s);
      from_us = *next + 1; // just after this occurrence
    }
    // The stretch crosses a change: the UTC instant of 09:00 moved by an hour.
    CHECK(offsets.front() != offsets.back());
    CHECK(std::abs(offsets.front() - offsets.back()) == 3600);
  }
}

TEST_CASE("a daily time in the gap fires at the shifted time and one in the fold fires once") {
  const auto new_york = zone("America/New_York");
  // 02:30 daily: on 2024-03-10 it does not exist and fires at 03:30 EDT.
  auto next = next_local_time(*new_york, 2, 30, utc_at(2024, 3, 9, 12) * 1'000'000);
  REQUIRE(next.is_ok());
  CHECK(*next == utc_at(2024, 3, 10, 7, 30) * 1'000'000);
  next = next_local_time(*new_york, 2, 30, *next + 1);
  REQUIRE(next.is_ok());
  CHECK(*next == utc_at(2024, 3, 11, 6, 30) * 1'000'000); // 02:30 EDT the next day
  // 01:30 daily: on 2024-11-03 it happens twice and fires at the first only.
  next = next_local_time(*new_york, 1, 30, utc_at(2024, 11, 2, 12) * 1'000'000);
  REQUIRE(next.is_ok());
  CHECK(*next == utc_at(2024, 11, 3, 5, 30) * 1'000'000); // 01:30 EDT
  next = next_local_time(*new_york, 1, 30, *next + 1);
  REQUIRE(next.is_ok());
  CHECK(*next == utc_at(2024, 11, 4, 6, 30) * 1'000'000); // 01:30 EST, a day later
}

TEST_CASE("next_local_time counts on or after its start and refuses a time off the clock") {
  const auto kolkata = zone("Asia/Kolkata");
  const int64_t nine = utc_at(2024, 7, 1, 3, 30) * 1'000'000; // 09:00 IST
  CHECK(*next_local_time(*kolkata, 9, 0, nine) == nine);
  CHECK(*next_local_time(*kolkata, 9, 0, nine - 1) == nine);
  CHECK(*next_local_time(*kolkata, 9, 0, nine + 1) == nine + seconds_per_day * 1'000'000);
  CHECK(*next_local_time(*kolkata, 23, 59, nine) == utc_at(2024, 7, 1, 18, 29) * 1'000'000);
  for (const auto& [hour, minute] :
       std::vector<std::pair<int, int>>{{24, 0}, {-1, 0}, {9, 60}, {9, -1}}) {
    const auto refused = next_local_time(*kolkata, hour, minute, nine);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().code() == errc::out_of_range);
  }
}

TEST_CASE("hostile zone names are refused before the file system is touched") {
  // A real zone file sits one level above the database's directory, where
  // "../escape" would reach it if the name were not judged first.
  const test::temp_dir root;
  const std::string london = read_bytes(std::string{system_zoneinfo} + "/Europe/London");
  write_bytes(root.path() / "escape", london);
  write_bytes(root.path() / "zones" / "Good" / "Zone", london);
  time_zone_db_options options;
  options.directory = (root.path() / "zones").string();
  time_zone_db zones{options};
  REQUIRE(zones.load("Good/Zone").is_ok());
  const std::string absolute = (root.path() / "escape").string();
  const std::vector<std::string> hostile = {
    "",
    "../escape",
    "Good/../../escape",
    absolute,
    "/etc/passwd",
    ".",
    "..",
    "./Good/Zone",
    "Good//Zone",
    "Good/Zone/",
    "/Good/Zone",
    "-Good/Zone",
    "Good/-Zone",
    "a/b/c/d",
    "Good\\Zone",
    "Good/Zone.tab",
    "Good/Zo ne",
    std::string{"Good/Zone\0x", 11},
    "Good/Z\xc3\xb3ne",
    std::string(65, 'A'),
  };
  for (const auto& name : hostile) {
    INFO("name of " << name.size() << " bytes");
    const auto loaded = zones.load(name);
    REQUIRE_FALSE(loaded.is_ok());
    CHECK(loaded.error().code() == errc::out_of_range);
    // The message states the grammar; it never repeats the name.
    CHECK(loaded.error().message().find("time zone name") != std::string::npos);
    if (name.size() > 3)
      CHECK(loaded.error().message().find(name) == std::string::npos);
  }
  CHECK(zones.cached() == 1);
  // The longest accepted name is the bound itself.
  CHECK(check_time_zone_name(std::string(64, 'A'), 64).is_ok());
  CHECK(check_time_zone_name("America/Argentina/ComodRivadavia", 64).is_ok());
  CHECK(check_time_zone_name("Etc/GMT+5", 64).is_ok());
}

TEST_CASE("names of no zone are unknown") {
  const std::vector<std::string> unknown = {
    "Mars/Olympus_Mons",   // no such file
    "Europe",              // a directory
    "Europe/London/x",     // below a file
    "leapseconds",         // a text file of the zoneinfo, not TZif
    "right/Europe/London", // counts leap seconds
  };
  for (const auto& name : unknown) {
    INFO(name);
    CHECK(load_error(system_time_zones(), name) == errc::not_found);
  }
  // A FIFO in the directory is refused at once instead of blocking the read.
  const test::temp_dir root;
  REQUIRE(::mkfifo((root.path() / "Pipe").c_str(), 0600) == 0);
  time_zone_db_options options;
  options.directory = root.str();
  time_zone_db zones{options};
  CHECK(load_error(zones, "Pipe") == errc::not_found);
}

TEST_CASE("malformed TZif data is refused as corrupt") {
  // The unbroken parts parse; each case below breaks one.
  const tzif_parts valid;
  const auto parsed = time_zone::parse("Test/Zone", build_tzif(valid));
  REQUIRE_MESSAGE(parsed.is_ok(), parsed.error().message());
  CHECK((*parsed)->at(utc_at(2024, 7, 1)).abbreviation == "EDT");
  CHECK((*parsed)->at(utc_at(2030, 7, 1)).abbreviation == "EDT"); // from the footer

  auto broken = valid;
  broken.version = '\0';
  CHECK(parse_error(broken) == errc::corrupt_data); // version 1
  broken = valid;
  broken.transitions = {utc_at(2024, 11, 3, 6), utc_at(2024, 3, 10, 7)};
  CHECK(parse_error(broken) == errc::corrupt_data); // not ascending
  broken = valid;
  broken.transition_types = {1, 2};
  CHECK(parse_error(broken) == errc::corrupt_data); // no type 2
  broken = valid;
  broken.types[1].is_dst = 2;
  CHECK(parse_error(broken) == errc::corrupt_data);
  broken = valid;
  broken.types[1].utc_offset_s = 100'000;
  CHECK(parse_error(broken) == errc::corrupt_data);
  broken = valid;
  broken.types[1].abbreviation_idx = 8;
  CHECK(parse_error(broken) == errc::corrupt_data); // past the characters
  broken = valid;
  broken.chars = std::string{"EST\0EDT", 7};
  CHECK(parse_error(broken) == errc::corrupt_data); // no terminating NUL
  broken = valid;
  broken.chars = std::string{"EST\0E\x01T\0", 8};
  CHECK(parse_error(broken) == errc::corrupt_data); // not printable
  broken = valid;
  broken.types.clear();
  broken.transitions.clear();
  broken.transition_types.clear();
  CHECK(parse_error(broken) == errc::corrupt_data); // no type at all
  for (const char* footer : {"", "\nEST5EDT,M3.2.0,M11.1.0", "\nEST5EDT,M3.2.0,M11.1.0\nX",
                             "\nEST5EDT\n", "EST5EDT,M3.2.0,M11.1.0\n"}) {
    broken = valid;
    broken.footer = footer;
    INFO("footer " << footer);
    CHECK(parse_error(broken) == errc::corrupt_data);
  }
  broken = valid;
  broken.leap_seconds = 2;
  CHECK(parse_error(broken) == errc::not_found); // a leap-second zone is none of ours
  // Every truncation of a valid file is refused.
  const std::string whole = build_tzif(valid);
  for (std::size_t size = 0; size < whole.size(); ++size) {
    INFO("truncated to " << size);
    CHECK_FALSE(time_zone::parse("Test/Zone", whole.substr(0, size)).is_ok());
  }

  // Through a database: a truncated system file, a file over the bound, a
  // file that is not TZif.
  const test::temp_dir root;
  const std::string london = read_bytes(std::string{system_zoneinfo} + "/Europe/London");
  write_bytes(root.path() / "Half", london.substr(0, london.size() / 2));
  write_bytes(root.path() / "Whole", london);
  write_bytes(root.path() / "Text", "not a zone\n");
  time_zone_db_options options;
  options.directory = root.str();
  options.max_file_bytes = london.size() - 1;
  time_zone_db zones{options};
  CHECK(load_error(zones, "Half") == errc::corrupt_data);
  CHECK(load_error(zones, "Whole") == errc::corrupt_data);
  CHECK(load_error(zones, "Text") == errc::not_found);
  options.max_file_bytes = london.size();
  CHECK(time_zone_db{options}.load("Whole").is_ok());
}

TEST_CASE("a zone is loaded once and shared between threads") {
  time_zone_db zones{};
  std::vector<std::shared_ptr<const time_zone>> seen(8);
  std::vector<std::thread> threads;
  for (std::size_t thread_idx = 0; thread_idx < seen.size(); ++thread_idx)
    threads.emplace_back([&zones, &seen, thread_idx] {
      auto loaded = zones.load("Europe/Paris");
      if (loaded)
        seen[thread_idx] = *loaded;
    });
  for (auto& thread : threads)
    thread.join();
  for (const auto& zone_seen : seen) {
    REQUIRE(zone_seen != nullptr);
    CHECK(zone_seen == seen.front());
  }
  CHECK(zones.cached() == 1);
  CHECK(*zones.load("Europe/Paris") == seen.front());
}

TEST_CASE("the cache keeps at most max_cached_zones zones and still answers past it") {
  time_zone_db_options options;
  options.max_cached_zones = 1;
  time_zone_db zones{options};
  const auto first = zones.load("Europe/Berlin");
  const auto second = zones.load("Europe/Rome");
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  CHECK(zones.cached() == 1);
  CHECK(*zones.load("Europe/Berlin") == *first); // kept
  CHECK(*zones.load("Europe/Rome") != *second);  // read again
  CHECK((*zones.load("Europe/Rome"))->name() == "Europe/Rome");
}

TEST_CASE("every zone of zone1970.tab reads as the C library reads it") {
  // The C library's reader of the same files is the second opinion. It needs
  // the process-wide TZ: fine in this single-threaded test, and the reason
  // the node itself does not use it.
  std::ifstream table{std::string{system_zoneinfo} + "/zone1970.tab"};
  REQUIRE(table.good());
  std::vector<std::string> names{"Europe/London", "Etc/GMT+5", "EST5EDT"};
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream fields{line};
    std::string codes, coordinates, name;
    fields >> codes >> coordinates >> name;
    names.push_back(name);
  }
  REQUIRE(names.size() > 300);
  const char* saved_tz = std::getenv("TZ");
  const std::string restore = saved_tz != nullptr ? saved_tz : "";
  struct reading {
    long offset;
    bool is_dst;
    std::string abbreviation;
    bool operator==(const reading& other) const {
      return offset == other.offset && is_dst == other.is_dst && abbreviation == other.abbreviation;
    }
  };
  const auto libc_reading = [](int64_t utc_s) {
    const std::time_t when = static_cast<std::time_t>(utc_s);
    std::tm local{};
    if (::localtime_r(&when, &local) == nullptr)
      return reading{0, false, "(localtime_r failed)"}; // matches no reading of ours
    return reading{local.tm_gmtoff, local.tm_isdst > 0, local.tm_zone};
  };
  const auto our_reading = [](const time_zone& tz, int64_t utc_s) {
    const zone_type& type = tz.at(utc_s);
    return reading{type.utc_offset_s, type.is_dst, type.abbreviation};
  };
  // Samples every 9 days and 5 hours from 1850 to 2250; where two samples
  // read differently, the change is found to the second and both sides of it
  // compared.
  const int64_t step = 9 * seconds_per_day + 5 * 3600 + 17;
  std::size_t compared = 0;
  std::size_t mismatches = 0;
  for (const auto& name : names) {
    const auto tz = zone(name);
    ::setenv("TZ", (":" + name).c_str(), 1);
    ::tzset();
    reading before = libc_reading(utc_at(1850, 1, 1));
    for (int64_t at = utc_at(1850, 1, 1); at < utc_at(2250, 1, 1); at += step) {
      const reading now = libc_reading(at);
      std::vector<int64_t> probes{at};
      if (!(now == before)) {
        int64_t low = at - step; // reads `before`
        int64_t high = at;       // reads otherwise
        while (high - low > 1) {
          const int64_t middle = low + (high - low) / 2;
          (libc_reading(middle) == before ? low : high) = middle;
        }
        probes.push_back(low);
        probes.push_back(high);
      }
      for (const int64_t probe : probes) {
        const reading expected = libc_reading(probe);
        const reading ours = our_reading(*tz, probe);
        ++compared;
        if (!(ours == expected) && ++mismatches <= 20)
          FAIL_CHECK(name << " at " << probe << ": ours " << ours.offset << " " << ours.abbreviation
                          << " dst " << ours.is_dst << ", C library " << expected.offset << " "
                          << expected.abbreviation << " dst " << expected.is_dst);
        // Local time leads back to the instant: it is the one, or one of
        // the two, instants of its wall-clock reading.
        const auto back = tz->resolve(tz->to_local(probe));
        if (back.kind == local_time_kind::skipped
            || (back.utc_s != probe && back.later_utc_s != probe)) {
          if (++mismatches <= 20)
            FAIL_CHECK(name << " at " << probe << ": local time does not resolve back");
        }
      }
      before = now;
    }
  }
  if (restore.empty())
    ::unsetenv("TZ");
  else
    ::setenv("TZ", restore.c_str(), 1);
  ::tzset();
  MESSAGE(compared << " readings compared over " << names.size() << " zones");
  CHECK(mismatches == 0);
}
