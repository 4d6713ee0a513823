// Location snapshots reach the instructions of foreground text and owner
// voice runs only, when fresh; malformed locations are refused by field.
#include <doctest/doctest.h>

#include "actors/run/location.hpp"

namespace voxos {

namespace {

constexpr int64_t now_us = 1'800'000'000'000'000;
constexpr int64_t ten_minutes_us = 600'000'000;

nlohmann::json berlin(int64_t captured_us = now_us - 5'000'000) {
  return {{"latitude", 52.520008},
          {"longitude", 13.404954},
          {"accuracy_m", 35.0},
          {"captured_us", captured_us}};
}

} // namespace

TEST_CASE("a fresh location reaches foreground text and owner voice instructions only") {
  auto where = parse_location(berlin());
  REQUIRE(where.is_ok());
  auto text = location_instructions(*where, channel::owner_text_chat, now_us, ten_minutes_us);
  REQUIRE(text.has_value());
  CHECK(text->find("latitude 52.520008, longitude 13.404954 (WGS84)") != std::string::npos);
  CHECK(text->find("accuracy 35 m") != std::string::npos);
  CHECK(text->find("[longitude, latitude]") != std::string::npos);
  CHECK(location_instructions(*where, channel::in_app_voice, now_us, ten_minutes_us));
  for (auto other : {channel::phone_call, channel::sms, channel::whatsapp, channel::scheduled_run,
                     channel::webhook, channel::manual_worker_run, channel::subagent})
    CHECK_FALSE(location_instructions(*where, other, now_us, ten_minutes_us));
}

TEST_CASE("the location instructions use the location only when it materially helps and "
          "resolve addresses and place names with a map or geocoding tool") {
  auto where = parse_location(berlin());
  REQUIRE(where.is_ok());
  for (auto chan : {channel::owner_text_chat, channel::in_app_voice}) {
    auto text = location_instructions(*where, chan, now_us, ten_minutes_us);
    REQUIRE(text.has_value());
    // Rule one: the location is used only when it materially helps the request.
    CHECK(text->find("Use it only when it materially helps the request") != std::string::npos);
    // Rule two: an address or place name is resolved by a map or geocoding
    // tool, never inferred from the coordinates.
    CHECK(text->find("Do not infer a street address or place name from these coordinates")
          != std::string::npos);
    CHECK(text->find("resolve one with a map or geocoding tool.") != std::string::npos);
    // The paragraph is whole: the last rule is not cut off by the buffer.
    CHECK(text->substr(text->size() - 22) == "map or geocoding tool.");
  }
  // The widest values the bounds allow still leave the paragraph whole.
  auto widest = parse_location({{"latitude", -89.999999},
                                {"longitude", -179.999999},
                                {"accuracy_m", 100000.0},
                                {"captured_us", now_us}});
  REQUIRE(widest.is_ok());
  auto text = location_instructions(*widest, channel::owner_text_chat, now_us, ten_minutes_us);
  REQUIRE(text.has_value());
  CHECK(text->find("resolve one with a map or geocoding tool.") != std::string::npos);
}

TEST_CASE("a stale or future location is not used") {
  auto stale = parse_location(berlin(now_us - ten_minutes_us - 1));
  REQUIRE(stale.is_ok());
  CHECK_FALSE(location_instructions(*stale, channel::owner_text_chat, now_us, ten_minutes_us));
  auto future = parse_location(berlin(now_us + 120'000'000));
  REQUIRE(future.is_ok());
  CHECK_FALSE(location_instructions(*future, channel::owner_text_chat, now_us, ten_minutes_us));
}

TEST_CASE("malformed locations are refused by field, never echoing the value") {
  auto bad = [](nlohmann::json doc) {
    auto parsed = parse_location(doc);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.error().message().find("91.5") == std::string::npos);
    return parsed.error().message();
  };
  auto doc = berlin();
  doc["latitude"] = 91.5;
  CHECK(bad(doc).find("location.latitude") != std::string::npos);
  doc = berlin();
  doc["longitude"] = "east";
  CHECK(bad(doc).find("location.longitude") != std::string::npos);
  doc = berlin();
  doc["accuracy_m"] = 0;
  CHECK(bad(doc).find("location.accuracy_m") != std::string::npos);
  doc = berlin();
  doc.erase("captured_us");
  CHECK(bad(doc).find("location.captured_us") != std::string::npos);
  doc = berlin();
  doc["street"] = "Main St";
  CHECK(bad(doc).find("only latitude") != std::string::npos);
  CHECK(bad(nlohmann::json::array()).find("an object") != std::string::npos);
}

} // namespace voxos
