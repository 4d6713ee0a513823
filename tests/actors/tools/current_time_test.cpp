// actors/tools/time: the get_current_time tool over the system zoneinfo, at
// a fixed wall clock given through the call's context.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tools/time.hpp"
#include "config/civil_time.hpp"
#include "config/internal_tools.hpp"
#include "config/time_zone.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// The context of a call made at the given UTC time, plus some microseconds.
tool_context called_at(int64_t year, int month, int day, int hour, int minute, int second,
                       int64_t micros = 0) {
  tool_context ctx;
  ctx.tenant_id = "tenant-1";
  ctx.run_id = "run-1";
  ctx.now_us = from_civil({year, month, day, hour, minute, second}) * 1'000'000 + micros;
  return ctx;
}

json answer(const tool_context& ctx, const json& arguments) {
  const tool_outcome outcome = get_current_time(system_time_zones(), ctx, arguments);
  REQUIRE_MESSAGE(!outcome.is_error, outcome.result.dump());
  CHECK(outcome.writes.empty());
  return outcome.result;
}

json refusal(const json& arguments) {
  const tool_outcome outcome =
    get_current_time(system_time_zones(), called_at(2024, 7, 1, 12, 0, 0), arguments);
  REQUIRE(outcome.is_error);
  CHECK(outcome.writes.empty());
  return outcome.result;
}

} // namespace

TEST_CASE("get_current_time answers UTC when no timezone is given") {
  const json result = answer(called_at(2024, 7, 1, 12, 34, 56, 789'000), json::object());
  CHECK(result
        == json{{"timezone", "UTC"},
                {"local_time", "2024-07-01T12:34:56+00:00"},
                {"utc_time", "2024-07-01T12:34:56Z"},
                {"abbreviation", "UTC"},
                {"utc_offset_seconds", 0},
                {"is_dst", false},
                {"weekday", "Monday"}});
}

TEST_CASE("get_current_time reads summer time in Europe/London") {
  const json result =
    answer(called_at(2024, 7, 1, 12, 34, 56, 999'999), {{"timezone", "Europe/London"}});
  CHECK(result
        == json{{"timezone", "Europe/London"},
                {"local_time", "2024-07-01T13:34:56+01:00"},
                {"utc_time", "2024-07-01T12:34:56Z"},
                {"abbreviation", "BST"},
                {"utc_offset_seconds", 3600},
                {"is_dst", true},
                {"weekday", "Monday"}});
}

TEST_CASE("get_current_time gives the local date and weekday, not UTC's") {
  // 02:00 UTC on Tuesday is still Monday evening in New York...
  const json new_york = answer(called_at(2024, 7, 2, 2, 0, 0), {{"timezone", "America/New_York"}});
  CHECK(new_york["local_time"] == "2024-07-01T22:00:00-04:00");
  CHECK(new_york["utc_time"] == "2024-07-02T02:00:00Z");
  CHECK(new_york["weekday"] == "Monday");
  CHECK(new_york["abbreviation"] == "EDT");
  CHECK(new_york["utc_offset_seconds"] == -14'400);
  // ...and 20:00 UTC on Sunday is already Monday in Sydney's summer.
  const json sydney = answer(called_at(2024, 1, 14, 20, 0, 0), {{"timezone", "Australia/Sydney"}});
  CHECK(sydney["local_time"] == "2024-01-15T07:00:00+11:00");
  CHECK(sydney["weekday"] == "Monday");
  CHECK(sydney["is_dst"] == true);
}

TEST_CASE("get_current_time writes half-hour offsets and zones without daylight saving") {
  const json kolkata = answer(called_at(2024, 12, 31, 20, 0, 0), {{"timezone", "Asia/Kolkata"}});
  CHECK(kolkata["local_time"] == "2025-01-01T01:30:00+05:30");
  CHECK(kolkata["utc_offset_seconds"] == 19'800);
  CHECK(kolkata["abbreviation"] == "IST");
  CHECK(kolkata["is_dst"] == false);
  CHECK(kolkata["weekday"] == "Wednesday");
  const json phoenix = answer(called_at(2024, 7, 1, 12, 0, 0), {{"timezone", "America/Phoenix"}});
  CHECK(phoenix["local_time"] == "2024-07-01T05:00:00-07:00");
  CHECK(phoenix["is_dst"] == false);
}

TEST_CASE("get_current_time reads the wall clock of its context, to the second") {
  const json just_before =
    answer(called_at(2024, 3, 10, 6, 59, 59, 999'999), {{"timezone", "America/New_York"}});
  CHECK(just_before["local_time"] == "2024-03-10T01:59:59-05:00");
  CHECK(just_before["abbreviation"] == "EST");
  const json at_change =
    answer(called_at(2024, 3, 10, 7, 0, 0), {{"timezone", "America/New_York"}});
  CHECK(at_change["local_time"] == "2024-03-10T03:00:00-04:00");
  CHECK(at_change["abbreviation"] == "EDT");
  // Before the epoch the second rounds down, too.
  tool_context early;
  early.now_us = -1;
  CHECK(answer(early, json::object())["utc_time"] == "1969-12-31T23:59:59Z");
}

TEST_CASE("get_current_time refuses unknown and malformed zones without repeating them") {
  for (const std::string name : {"Mars/Olympus_Mons", "Europe/Atlantis", "Europe"}) {
    INFO(name);
    const json error = refusal({{"timezone", name}});
    CHECK(error["error"] == "unknown_timezone");
    CHECK(error["message"].get<std::string>().find(name) == std::string::npos);
  }
  for (const std::string& name :
       std::vector<std::string>{"../../etc/passwd", "/etc/localtime", "Europe/London/../Paris", "",
                                "Europe London", std::string(65, 'A')}) {
    INFO(name);
    const json error = refusal({{"timezone", name}});
    CHECK(error["error"] == "invalid_timezone");
    if (!name.empty())
      CHECK(error["message"].get<std::string>().find(name) == std::string::npos);
  }
  const json not_string = refusal({{"timezone", 5}});
  CHECK(not_string["error"] == "invalid_arguments");
}

TEST_CASE("get_current_time's timezone bound matches its schema's") {
  const internal_tool* tool = find_internal_tool("get_current_time");
  REQUIRE(tool != nullptr);
  const json schema = json::parse(tool->input_schema);
  CHECK(schema["properties"]["timezone"]["maxLength"]
        == system_time_zones().options().max_name_length);
  CHECK((!schema.contains("required") || schema["required"].empty())); // timezone is optional
}
