// Location-aware runs: the host may share the user's location when it
// starts a run; for a foreground text turn or an owner's in-app voice
// session with a fresh location, the run's agent instructions carry it
// (WGS84 latitude, longitude, horizontal accuracy, capture time). Nothing
// injects coordinates into tool arguments: the model translates them into
// each tool's own location shape, as the instructions say. CAF-free.
//
// Bounds: latitude -90..90, longitude -180..180, accuracy 0 < a <= 100 km;
// "fresh" means captured at most `max_age_us` before the run starts
// (run.location_max_age_s, default 600 s) and not more than 60 s after it
// (clock skew). A stale location is not an error: it is simply not used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/tenant/policy.hpp"
#include "messages/status.hpp"

namespace voxos {

struct location_snapshot {
  double latitude = 0;
  double longitude = 0;
  double accuracy_m = 0;
  int64_t captured_us = 0; ///< capture time, microseconds since the Unix epoch
};

/// Reads {"latitude","longitude","accuracy_m","captured_us"} (all required,
/// nothing else). Errors name the field and the bound, never the value.
result<location_snapshot> parse_location(const nlohmann::json& doc);

/// The instructions' location paragraph, or nullopt when the channel is not
/// a foreground text chat or in-app voice, or the location is not fresh.
std::optional<std::string> location_instructions(const location_snapshot& where, channel chan,
                                                 int64_t now_us, int64_t max_age_us);

} // namespace voxos
