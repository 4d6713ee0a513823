#include "actors/run/location.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace voxos {

namespace {

constexpr double max_accuracy_m = 100'000;
constexpr int64_t max_skew_us = 60'000'000;

status out_of_range(const char* field, const char* bound) {
  return status::error(errc::out_of_range,
                       std::string{"location."} + field + ": " + bound + " required");
}

} // namespace

result<location_snapshot> parse_location(const nlohmann::json& doc) {
  if (!doc.is_object())
    return status::error(errc::wrong_type, "location: expected an object");
  for (const auto& [key, value] : doc.items())
    if (key != "latitude" && key != "longitude" && key != "accuracy_m" && key != "captured_us")
      return status::error(errc::unknown_field,
                           "location: only latitude, longitude, accuracy_m and captured_us");
  auto number = [&](const char* field, double& out) -> status {
    auto found = doc.find(field);
    if (found == doc.end())
      return status::error(errc::missing_field, std::string{"location."} + field + ": required");
    if (!found->is_number())
      return status::error(errc::wrong_type, std::string{"location."} + field + ": a number");
    out = found->get<double>();
    return std::isfinite(out) ? status::ok() : out_of_range(field, "a finite number");
  };
  location_snapshot out;
  if (auto st = number("latitude", out.latitude); !st)
    return st;
  if (auto st = number("longitude", out.longitude); !st)
    return st;
  if (auto st = number("accuracy_m", out.accuracy_m); !st)
    return st;
  if (out.latitude < -90 || out.latitude > 90)
    return out_of_range("latitude", "-90 .. 90");
  if (out.longitude < -180 || out.longitude > 180)
    return out_of_range("longitude", "-180 .. 180");
  if (!(out.accuracy_m > 0) || out.accuracy_m > max_accuracy_m)
    return out_of_range("accuracy_m", "more than 0 and at most 100000 metres");
  auto captured = doc.find("captured_us");
  if (captured == doc.end())
    return status::error(errc::missing_field, "location.captured_us: required");
  if (!captured->is_number_integer() || captured->get<int64_t>() <= 0)
    return out_of_range("captured_us", "a positive integer (microseconds since the epoch)");
  out.captured_us = captured->get<int64_t>();
  return out;
}

std::optional<std::string> location_instructions(const location_snapshot& where, channel chan,
                                                 int64_t now_us, int64_t max_age_us) {
  if (chan != channel::owner_text_chat && chan != channel::in_app_voice)
    return std::nullopt;
  if (where.captured_us < now_us - max_age_us || where.captured_us > now_us + max_skew_us)
    return std::nullopt;
  std::time_t seconds = static_cast<std::time_t>(where.captured_us / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  char text[640];
  std::snprintf(
    text, sizeof text,
    "The user shared their location: latitude %.6f, longitude %.6f (WGS84), horizontal "
    "accuracy %.0f m, captured %s. Use it only when it materially helps the request, such as "
    "nearby places, maps, travel or local weather. Translate it into the shape each tool's "
    "schema asks for (latitude/longitude, lat/lon, a location bias, a structured location); "
    "GeoJSON coordinate arrays are [longitude, latitude]. Do not infer a street address or "
    "place name from these coordinates: resolve one with a map or geocoding tool.",
    where.latitude, where.longitude, where.accuracy_m, when);
  return std::string{text};
}

} // namespace voxos
