#include "actors/tools/time.hpp"

#include <array>

#include <nlohmann/json.hpp>

#include "config/civil_time.hpp"
#include "config/time_zone.hpp"

namespace voxos {

namespace {

constexpr std::array<const char*, 7> weekday_names = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                                      "Thursday", "Friday", "Saturday"};

/// The model-facing refusal for a zone that did not load.
tool_outcome zone_refusal(const status& failure) {
  switch (failure.code()) {
  case errc::out_of_range:
    return tool_outcome::error("invalid_timezone", "timezone must be an IANA time zone name "
                                                   "such as Europe/London: "
                                                     + failure.message());
  case errc::not_found:
    return tool_outcome::error("unknown_timezone",
                               "timezone is not an IANA time zone this node knows; use a "
                               "name such as America/New_York or UTC");
  default:
    return tool_outcome::error("timezone_unavailable",
                               "the node's data for this time zone cannot be read");
  }
}

} // namespace

tool_outcome get_current_time(time_zone_db& zones, const tool_context& ctx,
                              const nlohmann::json& arguments) {
  // The zone: UTC unless one is named.
  std::shared_ptr<const time_zone> zone = time_zone::utc();
  if (const auto named = arguments.find("timezone"); named != arguments.end()) {
    if (!named->is_string())
      return tool_outcome::error("invalid_arguments", "timezone must be a string");
    auto loaded = zones.load(named->get_ref<const std::string&>());
    if (!loaded)
      return zone_refusal(loaded.error());
    zone = std::move(*loaded);
  }
  // The reading, in whole seconds.
  const int64_t utc_s = floor_div(ctx.now_us, 1'000'000);
  const zone_type& type = zone->at(utc_s);
  const int64_t local_s = zone->to_local(utc_s);
  return tool_outcome::ok({
    {"timezone", zone->name()},
    {"local_time", iso_date_time(local_s) + iso_offset(type.utc_offset_s)},
    {"utc_time", iso_date_time(utc_s) + "Z"},
    {"abbreviation", type.abbreviation},
    {"utc_offset_seconds", type.utc_offset_s},
    {"is_dst", type.is_dst},
    {"weekday", weekday_names[weekday_from_days(floor_div(local_s, seconds_per_day))]},
  });
}

} // namespace voxos
