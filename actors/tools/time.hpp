// get_current_time: the wall clock of a call, read in an IANA time zone.
// CAF-free; a pure function of the zone database, the call's context and its
// validated arguments (schema in config/internal_tools.cpp: an optional
// `timezone` string).
//
// Answers, for ctx.now_us (whole seconds, rounded down):
//   {"timezone": "Europe/London",            // the name asked for, or "UTC"
//    "local_time": "2024-07-01T13:34:56+01:00",  // ISO 8601 with the offset
//    "utc_time": "2024-07-01T12:34:56Z",
//    "abbreviation": "BST", "utc_offset_seconds": 3600, "is_dst": true,
//    "weekday": "Monday"}                    // the local date's weekday
// The offset is written +hh:mm (+hh:mm:ss only for a historical offset with
// seconds, which no current zone has). Without a timezone the answer is UTC,
// read without touching the zoneinfo.
//
// Typed errors (messages never repeat the rejected value):
//   invalid_timezone      the name breaks the zone-name grammar (time_zone.hpp)
//   unknown_timezone      no such zone in the node's zoneinfo
//   timezone_unavailable  the zone's file exists but cannot be read or parsed
//   invalid_arguments     `timezone` is present but not a string
// No writes: the tool reads only.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "actors/tools/tool_context.hpp"

namespace voxos {

class time_zone_db;

tool_outcome get_current_time(time_zone_db& zones, const tool_context& ctx,
                              const nlohmann::json& arguments);

} // namespace voxos
