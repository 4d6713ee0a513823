// Google Maps Grounding Lite: the lookup_weather normaliser, the search_places
// place cards, card selection for an answer, durable markers and the preset's
// read-only marks.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/run/maps_grounding.hpp"

using namespace voxos;
using namespace voxos::maps_grounding;
using json = nlohmann::json;

namespace {

/// Planted in every rejected value and key: no error message may contain it.
constexpr const char* sentinel = "SENTINEL-7c1f";

result<json> weather(const json& args) {
  return normalize_arguments("lookup_weather", args);
}

json normalised_weather(const json& args) {
  auto out = weather(args);
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  return *out;
}

/// Requires `args` to be refused with `code` and `message`, and the message
/// to carry nothing of the input.
void require_refused(const json& args, errc code, const std::string& message) {
  auto out = weather(args);
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().code() == code);
  CHECK(out.error().message() == message);
  CHECK(out.error().message().find(sentinel) == std::string::npos);
}

const std::string place_url = "https://maps.google.com/?cid=1234567890";
const std::string directions_url = "https://www.google.com/maps/dir/?api=1&destination=Louvre";

/// A PlaceView as Grounding Lite returns it.
json place_view(const std::string& id, const std::string& title) {
  return {{"place", "places/" + id},
          {"id", id},
          {"googleMapsLinks",
           {{"placeUrl", place_url + "&id=" + id},
            {"directionsUrl", directions_url + "&p=" + id},
            {"writeAReviewUrl", "https://www.google.com/maps/place//review"},
            {"reviewsUrl", "https://www.google.com/maps/place//reviews"},
            {"photosUrl", "https://www.google.com/maps/place//photos"}}},
          {"attribution", {{"title", title}, {"url", "https://maps.google.com/"}}},
          {"location", {{"latitude", 48.8606}, {"longitude", 2.3376}}}};
}

/// A successful CallToolResult carrying `places`.
std::string call_result(const json& places) {
  json structured = {{"summary", "Places [0]."}, {"places", places}};
  json out = {{"content", {{{"type", "text"}, {"text", structured.dump()}}}},
              {"structuredContent", structured},
              {"isError", false}};
  return out.dump();
}

place_cards cards_of(const json& places) {
  auto out = place_cards_from_result(call_result(places));
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  return *out;
}

place_card card(const std::string& id, const std::string& title) {
  place_card out;
  out.place_id = id;
  out.title = title;
  out.place_url = place_url + "&id=" + id;
  out.directions_url = directions_url + "&p=" + id;
  return out;
}

std::vector<std::string> ids_of(const std::vector<place_card>& cards) {
  std::vector<std::string> out;
  for (const auto& item : cards)
    out.push_back(item.place_id);
  return out;
}

} // namespace

// -- lookup_weather: location -----------------------------------------------------

TEST_CASE("weather accepts one address and sends it unchanged") {
  auto out = normalised_weather({{"location", {{"address", "London, UK"}}}});
  CHECK(out == json{{"location", {{"address", "London, UK"}}}});
}

TEST_CASE("places/ prefix is removed from a weather placeId") {
  auto out =
    normalised_weather({{"location", {{"placeId", "places/ChIJLU7jZClu5kcR4PcOOO6p3I0"}}}});
  CHECK(out["location"]["placeId"] == "ChIJLU7jZClu5kcR4PcOOO6p3I0");
}

TEST_CASE("a bare weather placeId is sent as it is") {
  auto out = normalised_weather({{"location", {{"placeId", "ChIJLU7jZClu5kcR4PcOOO6p3I0"}}}});
  CHECK(out["location"]["placeId"] == "ChIJLU7jZClu5kcR4PcOOO6p3I0");
}

TEST_CASE("weather accepts latLng within WGS84 range, integers included") {
  auto out = normalised_weather(
    {{"location", {{"latLng", {{"latitude", 34.0522}, {"longitude", -118.2437}}}}}});
  CHECK(out["location"]["latLng"]["latitude"].get<double>() == doctest::Approx(34.0522));
  CHECK(out["location"]["latLng"]["longitude"].get<double>() == doctest::Approx(-118.2437));

  for (auto point :
       {json{{"latitude", 90}, {"longitude", 180}}, json{{"latitude", -90}, {"longitude", -180}},
        json{{"latitude", 0}, {"longitude", 0}}})
    CHECK(weather(json{{"location", {{"latLng", point}}}}).is_ok());
}

TEST_CASE("weather rejects two location forms") {
  const std::string message = "/location: exactly one of address, placeId, latLng";
  require_refused(json{{"location", {{"address", sentinel}, {"placeId", "ChIJabc"}}}},
                  errc::out_of_range, message);
  require_refused(json{{"location",
                        {{"address", sentinel},
                         {"placeId", "ChIJabc"},
                         {"latLng", {{"latitude", 1}, {"longitude", 2}}}}}},
                  errc::out_of_range, message);
}

TEST_CASE("weather rejects a location without a form") {
  require_refused(json{{"location", json::object()}}, errc::missing_field,
                  "/location: exactly one of address, placeId, latLng");
}

TEST_CASE("weather requires a location") {
  require_refused(json::object(), errc::missing_field, "/location: required");
  require_refused(json{{"date", {{"year", 2026}, {"month", 5}, {"day", 1}}}}, errc::missing_field,
                  "/location: required");
}

TEST_CASE("weather rejects snake_case location fields") {
  const std::string message =
    "/location: exactly one of address, placeId, latLng (camelCase); no other field";
  require_refused(json{{"location", {{"place_id", sentinel}}}}, errc::unknown_field, message);
  require_refused(json{{"location", {{"lat_lng", {{"latitude", 1}, {"longitude", 2}}}}}},
                  errc::unknown_field, message);
  require_refused(json{{"location", {{"PlaceId", "ChIJabc"}}}}, errc::unknown_field, message);
}

TEST_CASE("weather rejects extra fields at every level") {
  const std::string top = "/: only location, date, hour, unitsSystem and languageCode (camelCase)";
  require_refused(json{{"location", {{"address", "Paris"}}}, {"units_system", "IMPERIAL"}},
                  errc::unknown_field, top);
  require_refused(json{{"location", {{"address", "Paris"}}}, {sentinel, sentinel}},
                  errc::unknown_field, top);
  require_refused(json{{"location", {{"address", "Paris"}}}, {"capabilities", {"WEATHER"}}},
                  errc::unknown_field, top);
  require_refused(json{{"location", {{"address", "Paris"}, {sentinel, 1}}}}, errc::unknown_field,
                  "/location: exactly one of address, placeId, latLng (camelCase); no other field");
  require_refused(
    json{{"location", {{"latLng", {{"latitude", 1}, {"longitude", 2}, {"altitude", sentinel}}}}}},
    errc::unknown_field, "/location/latLng: only latitude and longitude");
  require_refused(json{{"location", {{"address", "Paris"}}},
                       {"date", {{"year", 2026}, {"month", 5}, {"day", 1}, {"hour", 3}}}},
                  errc::unknown_field, "/date: only year, month and day");
}

TEST_CASE("weather rejects latLng without both coordinates") {
  require_refused(json{{"location", {{"latLng", {{"latitude", 10}}}}}}, errc::missing_field,
                  "/location/latLng: latitude and longitude required");
}

TEST_CASE("weather rejects out-of-range and non-finite coordinates") {
  require_refused(json{{"location", {{"latLng", {{"latitude", 90.0001}, {"longitude", 0}}}}}},
                  errc::out_of_range, "/location/latLng/latitude: finite number in [-90, 90]");
  require_refused(json{{"location", {{"latLng", {{"latitude", 0}, {"longitude", -180.5}}}}}},
                  errc::out_of_range, "/location/latLng/longitude: finite number in [-180, 180]");
  // Not JSON text, but a json value can hold them.
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    require_refused(json{{"location", {{"latLng", {{"latitude", bad}, {"longitude", 0}}}}}},
                    errc::out_of_range, "/location/latLng/latitude: finite number in [-90, 90]");
    require_refused(json{{"location", {{"latLng", {{"latitude", 0}, {"longitude", bad}}}}}},
                    errc::out_of_range, "/location/latLng/longitude: finite number in [-180, 180]");
  }
  // 1e400 overflows a double as JSON text.
  auto overflow =
    json::parse(R"({"location":{"latLng":{"latitude":1e400,"longitude":0}}})", nullptr, false);
  if (!overflow.is_discarded())
    CHECK_FALSE(weather(overflow).is_ok());
}

// -- lookup_weather: date, hour, units ------------------------------------------------

TEST_CASE("weather accepts a complete date with an hour, units and language") {
  auto out = normalised_weather({{"location", {{"address", "Tokyo, Japan"}}},
                                 {"date", {{"year", 2026}, {"month", 7}, {"day", 18}}},
                                 {"hour", 9},
                                 {"unitsSystem", "IMPERIAL"},
                                 {"languageCode", "en_US"}});
  CHECK(out
        == json{{"location", {{"address", "Tokyo, Japan"}}},
                {"date", {{"year", 2026}, {"month", 7}, {"day", 18}}},
                {"hour", 9},
                {"unitsSystem", "IMPERIAL"},
                {"languageCode", "en_US"}});
}

TEST_CASE("integral floats in a weather date are sent as integers") {
  auto out = weather(json{{"location", {{"address", "Oslo, Norway"}}},
                          {"date", {{"year", 2026.0}, {"month", 2.0}, {"day", 1.0}}},
                          {"hour", 0.0}});
  REQUIRE(out.is_ok());
  CHECK(out->dump()
        == R"({"date":{"day":1,"month":2,"year":2026},"hour":0,)"
           R"("location":{"address":"Oslo, Norway"}})");
  CHECK((*out)["date"]["year"].is_number_integer());
}

TEST_CASE("weather rejects an incomplete date") {
  const std::string message = "/date: complete date required (year, month, day)";
  json location = {{"address", "Paris, France"}};
  require_refused(json{{"location", location}, {"date", {{"year", 2026}, {"month", 5}}}},
                  errc::missing_field, message);
  require_refused(json{{"location", location}, {"date", {{"day", 5}}}}, errc::missing_field,
                  message);
  require_refused(json{{"location", location}, {"date", json::object()}}, errc::missing_field,
                  message);
}

TEST_CASE("weather rejects dates that are not on the calendar") {
  json location = {{"address", "Paris, France"}};
  auto date = [&](int year, int month, int day) {
    return weather(
      json{{"location", location}, {"date", {{"year", year}, {"month", month}, {"day", day}}}});
  };
  CHECK(date(2028, 2, 29).is_ok());
  CHECK(date(2000, 2, 29).is_ok());
  CHECK(date(2026, 12, 31).is_ok());
  CHECK_FALSE(date(2026, 2, 29).is_ok());
  CHECK_FALSE(date(1900, 2, 29).is_ok());
  CHECK_FALSE(date(2026, 4, 31).is_ok());
  CHECK_FALSE(date(2026, 2, 30).is_ok());
  CHECK(date(2026, 2, 30).error().message() == "/date/day: integer that is a day of that month");
  CHECK(date(2026, 13, 1).error().message() == "/date/month: integer in [1, 12]");
  CHECK(date(2026, 0, 1).error().message() == "/date/month: integer in [1, 12]");
  CHECK(date(0, 1, 1).error().message() == "/date/year: integer in [1, 9999]");
  CHECK(date(2026, 1, 0).error().code() == errc::out_of_range);
  CHECK_FALSE(
    weather(json{{"location", location}, {"date", {{"year", 2026}, {"month", 1.5}, {"day", 1}}}})
      .is_ok());
  CHECK_FALSE(
    weather(json{{"location", location}, {"date", {{"year", 1e300}, {"month", 1}, {"day", 1}}}})
      .is_ok());
  CHECK_FALSE(
    weather(
      json{{"location", location},
           {"date", {{"year", std::numeric_limits<uint64_t>::max()}, {"month", 1}, {"day", 1}}}})
      .is_ok());
}

TEST_CASE("weather rejects an hour outside 0-23 or without a date") {
  json location = {{"address", "Paris, France"}};
  json date = {{"year", 2026}, {"month", 5}, {"day", 1}};
  CHECK(weather(json{{"location", location}, {"date", date}, {"hour", 23}}).is_ok());
  require_refused(json{{"location", location}, {"date", date}, {"hour", 24}}, errc::out_of_range,
                  "/hour: integer in [0, 23]");
  require_refused(json{{"location", location}, {"date", date}, {"hour", -1}}, errc::out_of_range,
                  "/hour: integer in [0, 23]");
  require_refused(json{{"location", location}, {"hour", 5}}, errc::missing_field,
                  "/hour: requires /date");
}

TEST_CASE("weather accepts only METRIC and IMPERIAL units") {
  json location = {{"address", "Paris, France"}};
  CHECK(weather(json{{"location", location}, {"unitsSystem", "METRIC"}}).is_ok());
  for (auto name : {"metric", "UNITS_SYSTEM_UNSPECIFIED", "KELVIN", sentinel})
    require_refused(json{{"location", location}, {"unitsSystem", name}}, errc::out_of_range,
                    "/unitsSystem: one of METRIC, IMPERIAL");
}

// -- lookup_weather: hostile input ----------------------------------------------------

TEST_CASE("weather rejects arguments that are not an object") {
  for (const auto& args : {json::array({sentinel}), json(sentinel), json(42), json(nullptr),
                           json(true), json(json::value_t::discarded)})
    require_refused(args, errc::wrong_type, "/: arguments must be an object");
}

TEST_CASE("weather rejects wrong types") {
  json location = {{"address", "Paris, France"}};
  require_refused(json{{"location", sentinel}}, errc::wrong_type, "/location: must be an object");
  require_refused(json{{"location", json::array({sentinel})}}, errc::wrong_type,
                  "/location: must be an object");
  require_refused(json{{"location", {{"address", 42}}}}, errc::wrong_type,
                  "/location/address: must be a string");
  require_refused(json{{"location", {{"placeId", json::array({sentinel})}}}}, errc::wrong_type,
                  "/location/placeId: must be a string");
  require_refused(json{{"location", {{"latLng", sentinel}}}}, errc::wrong_type,
                  "/location/latLng: must be an object");
  require_refused(json{{"location", {{"latLng", {{"latitude", "48.8"}, {"longitude", 2}}}}}},
                  errc::wrong_type, "/location/latLng/latitude: finite number in [-90, 90]");
  require_refused(json{{"location", {{"latLng", {{"latitude", 48}, {"longitude", true}}}}}},
                  errc::wrong_type, "/location/latLng/longitude: finite number in [-180, 180]");
  require_refused(json{{"location", location}, {"date", "2026-05-01"}}, errc::wrong_type,
                  "/date: must be an object (year, month, day)");
  require_refused(
    json{{"location", location}, {"date", {{"year", "2026"}, {"month", 5}, {"day", 1}}}},
    errc::wrong_type, "/date/year: integer in [1, 9999]");
  require_refused(json{{"location", location},
                       {"date", {{"year", 2026}, {"month", 5}, {"day", 1}}},
                       {"hour", "5"}},
                  errc::wrong_type, "/hour: integer in [0, 23]");
  require_refused(json{{"location", location}, {"unitsSystem", 1}}, errc::wrong_type,
                  "/unitsSystem: must be a string (METRIC or IMPERIAL)");
  require_refused(json{{"location", location}, {"languageCode", json::object()}}, errc::wrong_type,
                  "/languageCode: must be a string");
}

TEST_CASE("weather rejects malformed Place IDs") {
  const std::string message = "/location/placeId: a Place ID of 1..512 letters, digits, '-' or "
                              "'_', optionally as places/{id}";
  for (std::string id :
       {std::string{}, std::string{"places/"}, std::string{"places/places/ChIJ"},
        std::string{"ChIJ abc"}, std::string{"../ChIJ"}, std::string{"ChIJ?x=1"},
        std::string{"PLACES/ChIJ"}, std::string(513, 'a'), std::string{"ChIJ"} + sentinel + "/"})
    require_refused(json{{"location", {{"placeId", id}}}}, errc::out_of_range, message);
  CHECK(weather(json{{"location", {{"placeId", std::string(512, 'a')}}}}).is_ok());
}

TEST_CASE("weather rejects huge, blank and control-character input") {
  const std::string address_message =
    "/location/address: non-blank string of at most 1024 bytes without control characters";
  require_refused(json{{"location", {{"address", std::string(1025, 'x')}}}}, errc::out_of_range,
                  address_message);
  require_refused(json{{"location", {{"address", std::string{sentinel} + "\nx"}}}},
                  errc::out_of_range, address_message);
  require_refused(json{{"location", {{"address", "   "}}}}, errc::out_of_range, address_message);
  require_refused(json{{"location", {{"address", ""}}}}, errc::out_of_range, address_message);
  CHECK(weather(json{{"location", {{"address", std::string(1024, 'x')}}}}).is_ok());

  // A huge extra field, and deeply nested garbage where a date belongs.
  require_refused(json{{"location", {{"address", "Paris"}}}, {"pad", std::string(1 << 20, 'x')}},
                  errc::unknown_field,
                  "/: only location, date, hour, unitsSystem and languageCode (camelCase)");
  // Parsed in place: copying a json value this deep would recurse.
  const std::string garbage = std::string(20000, '[') + std::string(20000, ']');
  auto nested = json::parse(R"({"location":{"address":"Paris"},"date":)" + garbage + "}");
  require_refused(nested, errc::wrong_type, "/date: must be an object (year, month, day)");
  auto deep_day = json::parse(R"({"location":{"address":"Paris"},)"
                              R"("date":{"year":2026,"month":5,"day":)"
                              + garbage + "}}");
  require_refused(deep_day, errc::wrong_type, "/date/day: integer that is a day of that month");
}

TEST_CASE("weather rejects malformed language codes") {
  json location = {{"address", "Paris, France"}};
  for (std::string code :
       {std::string{"e"}, std::string{"en US"}, std::string(36, 'a'), std::string{sentinel} + "!"})
    require_refused(json{{"location", location}, {"languageCode", code}}, errc::out_of_range,
                    "/languageCode: a language code of 2..35 letters, digits, '-' or '_'");
}

TEST_CASE("weather sends only what it validated when keys repeat") {
  // nlohmann keeps the last of repeated keys; that value is the one checked.
  auto args =
    json::parse(R"({"location":{"address":"Paris"},"location":{"placeId":"places/ChIJabc"}})");
  auto out = weather(args);
  REQUIRE(out.is_ok());
  CHECK(out->dump() == R"({"location":{"placeId":"ChIJabc"}})");
}

TEST_CASE("tools other than lookup_weather pass through unchanged") {
  json search = {
    {"text_query", "coffee"}, {"location_bias", {{"circle", json::object()}}}, {"x", 1}};
  auto out = normalize_arguments("search_places", search);
  REQUIRE(out.is_ok());
  CHECK(*out == search);
  auto routes = normalize_arguments("compute_routes", json::array({sentinel}));
  REQUIRE(routes.is_ok());
  CHECK(*routes == json::array({sentinel}));
  json empty_location = {{"location", json::object()}};
  auto other = normalize_arguments("Lookup_Weather", empty_location);
  REQUIRE(other.is_ok());
  CHECK(*other == empty_location);
}

// -- Maps URLs ---------------------------------------------------------------------

TEST_CASE("Maps URLs must be https on a supported Maps host and path") {
  for (std::string url : {
         "https://maps.google.com/?cid=6897716614701924720",
         "https://maps.google.com/?cid=1&g_mp=CiVnb29nbGU&authuser=0",
         "https://www.google.com/maps/dir/?api=1&destination=Louvre",
         "https://www.google.com/maps/dir//'/data=!4m7!4m6!1m0!1m2!1m1!1s0x0:0x1!3e0",
         "https://www.google.com/maps/place/?q=place_id:ChIJLU7jZClu5kcR4PcOOO6p3I0",
         "https://www.google.com/maps/@48.8584,2.2945,15z",
         "https://www.google.com/maps?q=Louvre",
         "https://www.google.com/maps",
         "https://google.com/maps/search/?api=1&query=Louvre",
         "https://maps.app.goo.gl/abc123",
         "https://maps.app.goo.gl/Ab-c_123?g_st=ic",
         "https://maps.google.com/maps?q=Louvre",
       })
    CHECK_MESSAGE(supported_maps_url(url).has_value(), url);

  for (std::string url : {
         "http://maps.google.com/?cid=1",
         "https://www.google.com.evil.example/maps",
         "https://evil.example/www.google.com/maps",
         "https://maps.google.com.evil.example/",
         "https://user@www.google.com/maps",
         "https://user:pass@maps.google.com/",
         "https://www.google.com@evil.example/maps",
         "https://maps.google.com:8443/?cid=1",
         "https://maps.google.com:80/?cid=1",
         "https://maps.google.com/?cid=1#frag",
         "https://maps.google.com/#",
         "https://www.google.com/mapsevil",
         "https://www.google.com/search?q=maps",
         "https://www.google.com/",
         "https://www.google.de/maps",
         "https://mail.google.com/maps",
         "https://goo.gl/maps/abc",
         "https://142.250.74.46/maps",
         "https://[2a00:1450:4001::200e]/maps",
         "javascript:alert(1)",
         "//maps.google.com/",
         "maps.google.com/?cid=1",
         "https://maps.google.com/ ?cid=1",
         "https://maps.google.com\\@evil.example/",
         "",
         // Google's redirectors: a Maps host that forwards to any site
         "https://maps.app.goo.gl/?link=https://evil.example",
         "https://maps.app.goo.gl/abc?link=https%3A%2F%2Fevil.example",
         "https://maps.app.goo.gl/",
         "https://maps.app.goo.gl/abc/def",
         "https://maps.google.com/url?q=https://evil.example/&sa=D",
         "https://maps.google.com/url/x",
         "https://www.google.com/maps/url?q=https://evil.example",
         "https://google.com/maps/url",
         "https://www.google.com/maps/search/?api=1&query=%2F%2Fevil.example",
         "https://www.google.com/maps/search/?api=1&query=%5C%5Cevil.example",
         "https://maps.google.com/?q=HTTPS%3A%2F%2Fevil.example",
         "https://maps.google.com/?q=https:%5C%5Cevil.example",
       })
    CHECK_FALSE_MESSAGE(supported_maps_url(url).has_value(), url);
}

TEST_CASE("an uppercase Maps host and an explicit 443 are normalised") {
  CHECK(supported_maps_url("https://WWW.GOOGLE.COM/maps/place/x")
        == std::optional<std::string>{"https://www.google.com/maps/place/x"});
  CHECK(supported_maps_url("HTTPS://Maps.Google.Com:443/?cid=1")
        == std::optional<std::string>{"https://maps.google.com/?cid=1"});
  CHECK(supported_maps_url("https://maps.google.com./?cid=1")
        == std::optional<std::string>{"https://maps.google.com/?cid=1"});
}

TEST_CASE("Maps URLs with credential-like query fields are refused") {
  for (std::string query : {"key=AIza",
                            "KEY=AIza",
                            "Api_Key=x",
                            "apikey=x",
                            "x-goog-api-key=x",
                            "access_token=x",
                            "id_token=x",
                            "refreshToken=x",
                            "token",
                            "auth=x",
                            "Authorization=Bearer",
                            "signature=x",
                            "sig=x",
                            "client_secret=x",
                            "password=x",
                            "passwd=x",
                            "pwd=x",
                            "session=x",
                            "sessionid=x",
                            "%6B%65%79=AIza",
                            "%6bey=x",
                            "cid=1&key=x",
                            "cid=1;token=x",
                            "private_key=x",
                            "aws_access_key=x",
                            "jwt=x",
                            "client_key=x",
                            "license-key=x",
                            "map+key=x",
                            "passcode=x",
                            "code=x",
                            "oauth_verifier=x",
                            "ak=x"})
    CHECK_FALSE_MESSAGE(supported_maps_url("https://maps.google.com/?" + query).has_value(), query);
  for (std::string query :
       {"cid=1", "api=1&destination=x", "authuser=0", "query=key", "q=token", "keyword=x",
        "monkey=1", "g_mp=abc", "entry=ttu", "query=Rue%20de%20Rivoli", "query=a/b"})
    CHECK_MESSAGE(supported_maps_url("https://www.google.com/maps/search/?" + query).has_value(),
                  query);
}

// -- search_places: place cards ------------------------------------------------------

TEST_CASE("a valid place view becomes a card") {
  auto out = cards_of(json::array({place_view("ChIJD3uTd9hx5kcR1IQvGfr8dbk", "Musée du Louvre")}));
  REQUIRE(out.cards.size() == 1);
  CHECK(out.skipped == 0);
  const auto& louvre = out.cards.front();
  CHECK(louvre.place_id == "ChIJD3uTd9hx5kcR1IQvGfr8dbk");
  CHECK(louvre.title == "Musée du Louvre");
  CHECK(louvre.place_url == place_url + "&id=ChIJD3uTd9hx5kcR1IQvGfr8dbk");
  CHECK(louvre.directions_url == directions_url + "&p=ChIJD3uTd9hx5kcR1IQvGfr8dbk");
  REQUIRE(louvre.coordinates.has_value());
  CHECK(louvre.coordinates->latitude == doctest::Approx(48.8606));
  CHECK(louvre.coordinates->longitude == doctest::Approx(2.3376));
}

TEST_CASE("a card without coordinates is still valid") {
  auto view = place_view("ChIJabc", "Cafe Kitsune");
  view.erase("location");
  auto out = cards_of(json::array({view}));
  REQUIRE(out.cards.size() == 1);
  CHECK_FALSE(out.cards.front().coordinates.has_value());
}

TEST_CASE("a card with invalid coordinates is skipped") {
  json good = place_view("ChIJgood", "Good Place");
  std::vector<json> locations = {
    {{"latitude", 91}, {"longitude", 0}},
    {{"latitude", 0}, {"longitude", 181}},
    {{"latitude", "NaN"}, {"longitude", 0}},
    {{"latitude", nullptr}, {"longitude", 0}},
    {{"latitude", 10}},
    json::object(),
    json::array({48.8, 2.3}),
    json("48.8,2.3"),
  };
  json places = json::array({good});
  for (std::size_t idx = 0; idx < locations.size(); ++idx) {
    auto view = place_view("ChIJbad" + std::to_string(idx), "Bad Place");
    view["location"] = locations[idx];
    places.push_back(view);
  }
  auto out = cards_of(places);
  CHECK(ids_of(out.cards) == std::vector<std::string>{"ChIJgood"});
  CHECK(out.skipped == locations.size());
}

TEST_CASE("invalid cards are skipped independently without inventing fields") {
  auto no_title = place_view("ChIJ1", "x");
  no_title["attribution"].erase("title");
  auto blank_title = place_view("ChIJ2", "   ");
  auto no_attribution = place_view("ChIJ3", "Three");
  no_attribution.erase("attribution");
  auto display_name_only = place_view("ChIJ4", "Four");
  display_name_only.erase("attribution");
  display_name_only["displayName"] = {{"text", "Four"}};
  auto no_place_url = place_view("ChIJ5", "Five");
  no_place_url["googleMapsLinks"].erase("placeUrl");
  auto no_directions = place_view("ChIJ6", "Six");
  no_directions["googleMapsLinks"].erase("directionsUrl");
  auto uri_spelling = place_view("ChIJ7", "Seven");
  uri_spelling["googleMapsLinks"] = {{"placeUri", place_url}, {"directionsUri", directions_url}};
  auto no_id = place_view("ChIJ8", "Eight");
  no_id.erase("id");
  no_id.erase("place");
  auto no_links = place_view("ChIJ9", "Nine");
  no_links.erase("googleMapsLinks");

  auto out = cards_of(json::array({place_view("ChIJa", "Alpha"), no_title, blank_title,
                                   no_attribution, display_name_only, no_place_url, no_directions,
                                   uri_spelling, no_id, no_links, place_view("ChIJb", "Beta")}));
  CHECK(ids_of(out.cards) == std::vector<std::string>{"ChIJa", "ChIJb"});
  CHECK(out.skipped == 9);
}

TEST_CASE("the place resource name and the id must agree") {
  auto id_only = place_view("ChIJid", "Id Only");
  id_only.erase("place");
  auto name_only = place_view("ChIJname", "Name Only");
  name_only.erase("id");
  auto disagree = place_view("ChIJone", "Disagree");
  disagree["place"] = "places/ChIJother";
  auto bare_name = place_view("ChIJbare", "Bare Name");
  bare_name["place"] = "ChIJbare";
  auto out = cards_of(json::array({id_only, name_only, disagree, bare_name}));
  CHECK(ids_of(out.cards) == std::vector<std::string>{"ChIJid", "ChIJname"});
  CHECK(out.skipped == 2);
}

TEST_CASE("a card with a URL fragment is skipped") {
  auto view = place_view("ChIJfrag", "Fragment");
  view["googleMapsLinks"]["placeUrl"] = place_url + "#top";
  auto out = cards_of(json::array({view}));
  CHECK(out.cards.empty());
  CHECK(out.skipped == 1);
}

TEST_CASE("a card with an unsupported or credential-bearing URL is skipped") {
  std::vector<std::string> urls = {
    "https://www.google.com.evil.example/maps",
    "https://user@www.google.com/maps",
    "https://maps.google.com:8443/?cid=1",
    "http://maps.google.com/?cid=1",
    "https://maps.google.com/?cid=1&key=AIza",
    "https://maps.google.com/?access_token=x",
    std::string("https://maps.google.com/?q=") + std::string(3000, 'a'),
  };
  json places = json::array();
  for (std::size_t idx = 0; idx < urls.size(); ++idx) {
    auto view = place_view("ChIJu" + std::to_string(idx), "Url Test");
    view["googleMapsLinks"][idx % 2 == 0 ? "placeUrl" : "directionsUrl"] = urls[idx];
    places.push_back(view);
  }
  auto out = cards_of(places);
  CHECK(out.cards.empty());
  CHECK(out.skipped == urls.size());
}

TEST_CASE("hostile place entries are skipped") {
  auto huge_title = place_view("ChIJh1", std::string(513, 'T'));
  auto control_title = place_view("ChIJh2", "Tab\there");
  auto title_number = place_view("ChIJh3", "x");
  title_number["attribution"]["title"] = 42;
  auto id_number = place_view("ChIJh4", "x");
  id_number["id"] = 42;
  auto id_slash = place_view("ChIJh5", "x");
  id_slash["id"] = "ChIJ/../x";
  id_slash.erase("place");
  auto links_array = place_view("ChIJh6", "x");
  links_array["googleMapsLinks"] = json::array({place_url, directions_url});
  auto url_object = place_view("ChIJh7", "x");
  url_object["googleMapsLinks"]["placeUrl"] = {{"href", place_url}};
  json nested = json::array();
  for (int depth = 0; depth < 200; ++depth)
    nested = json::array({nested});

  auto out = cards_of(json::array({nullptr, 42, "places/ChIJx", nested, json::object(), huge_title,
                                   control_title, title_number, id_number, id_slash, links_array,
                                   url_object, place_view("ChIJok", "Okay")}));
  CHECK(ids_of(out.cards) == std::vector<std::string>{"ChIJok"});
  CHECK(out.skipped == 12);
}

TEST_CASE("deeply nested garbage in a result is skipped without recursion") {
  const std::string garbage = std::string(100000, '[') + std::string(100000, ']');
  auto out = place_cards_from_result(R"({"structuredContent":{"places":[)" + garbage + ","
                                     + place_view("ChIJok", "Okay").dump() + "]}}");
  REQUIRE(out.is_ok());
  CHECK(ids_of(out->cards) == std::vector<std::string>{"ChIJok"});
  CHECK(out->skipped == 1);
}

TEST_CASE("a repeated place id within one result is skipped") {
  auto out = cards_of(json::array({place_view("ChIJa", "Alpha"), place_view("ChIJa", "Alpha again"),
                                   place_view("ChIJb", "Beta")}));
  CHECK(ids_of(out.cards) == std::vector<std::string>{"ChIJa", "ChIJb"});
  CHECK(out.cards.front().title == "Alpha");
  CHECK(out.skipped == 1);
}

TEST_CASE("at most 64 places are read from one result") {
  json places = json::array();
  for (int idx = 0; idx < 70; ++idx)
    places.push_back(place_view("ChIJn" + std::to_string(idx), "Place " + std::to_string(idx)));
  auto out = cards_of(places);
  CHECK(out.cards.size() == max_places_per_result);
  CHECK(out.skipped == 6);
}

TEST_CASE("a result without places has no cards") {
  auto out = place_cards_from_result(R"({"structuredContent":{"summary":"Nothing found."}})");
  REQUIRE(out.is_ok());
  CHECK(out->cards.empty());
  CHECK(out->skipped == 0);
  auto empty = place_cards_from_result(R"({"structuredContent":{"places":[]}})");
  REQUIRE(empty.is_ok());
  CHECK(empty->cards.empty());
}

TEST_CASE("a failed or unstructured result gives an error, not cards") {
  struct refusal {
    std::string text;
    errc code;
    std::string message;
  };
  std::vector<refusal> cases = {
    {R"({"isError":true,"structuredContent":{"places":[]}})", errc::rejected,
     "/isError: the call failed; no place cards"},
    {R"({"isError":"SENTINEL-7c1f","structuredContent":{}})", errc::wrong_type,
     "/isError: must be a boolean"},
    {R"({"content":[{"type":"text","text":"SENTINEL-7c1f"}]})", errc::missing_field,
     "/structuredContent: required for place cards"},
    {R"({"structuredContent":"SENTINEL-7c1f"})", errc::wrong_type,
     "/structuredContent: must be an object"},
    {R"({"structuredContent":{"places":{"SENTINEL-7c1f":1}}})", errc::wrong_type,
     "/structuredContent/places: must be an array"},
    {R"(["SENTINEL-7c1f"])", errc::wrong_type, "/: result must be an object"},
    {"SENTINEL-7c1f", errc::bad_json, "/: result must be JSON"},
    {"", errc::bad_json, "/: result must be JSON"},
    {std::string(max_result_bytes + 1, ' '), errc::out_of_range, "/: result of at most 4 MiB"},
  };
  for (const auto& item : cases) {
    auto out = place_cards_from_result(item.text);
    REQUIRE_FALSE(out.is_ok());
    CHECK(out.error().code() == item.code);
    CHECK(out.error().message() == item.message);
    CHECK(out.error().message().find(sentinel) == std::string::npos);
  }
}

// -- card selection ---------------------------------------------------------------------

TEST_CASE("at most six cards, named places first") {
  std::vector<place_card> older = {card("ChIJo1", "Le Comptoir"), card("ChIJo2", "Septime")};
  std::vector<place_card> recent;
  for (int idx = 1; idx <= 8; ++idx)
    recent.push_back(card("ChIJr" + std::to_string(idx), "Recent Place " + std::to_string(idx)));
  auto out = select_cards("Try Septime tonight, or Le Comptoir for lunch.", {older, recent});
  CHECK(ids_of(out)
        == std::vector<std::string>{"ChIJo2", "ChIJo1", "ChIJr1", "ChIJr2", "ChIJr3", "ChIJr4"});
}

TEST_CASE("named places keep the order they appear in the answer") {
  std::vector<place_card> search = {card("ChIJa", "Alpha Cafe"), card("ChIJb", "Beta Bar"),
                                    card("ChIJc", "Gamma Grill")};
  auto out =
    select_cards("Gamma Grill is best; Alpha Cafe is closer. Gamma Grill again.", {search});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJc", "ChIJa", "ChIJb"});
}

TEST_CASE("name matching ignores ASCII case") {
  std::vector<place_card> search = {card("ChIJa", "Alpha Cafe"), card("ChIJb", "Beta Bar")};
  auto out = select_cards("I'd pick BETA BAR.", {search});
  CHECK(ids_of(out).front() == "ChIJb");
}

TEST_CASE("more than six named places are cut at six") {
  std::vector<place_card> search;
  std::string answer;
  for (int idx = 1; idx <= 8; ++idx) {
    auto title = "Named Spot " + std::string(1, static_cast<char>('A' + idx));
    search.push_back(card("ChIJn" + std::to_string(idx), title));
    answer = title + ", " + answer;
  }
  auto out = select_cards(answer, {search});
  CHECK(ids_of(out)
        == std::vector<std::string>{"ChIJn8", "ChIJn7", "ChIJn6", "ChIJn5", "ChIJn4", "ChIJn3"});
}

TEST_CASE("a cited place id or URL counts as naming the place") {
  std::vector<place_card> older = {card("ChIJcited", "Xy"), card("ChIJurl", "Hidden Name")};
  std::vector<place_card> recent = {card("ChIJr1", "Recent One")};
  auto answer = "See " + older[1].place_url + " and place ChIJcited.";
  auto out = select_cards(answer, {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJurl", "ChIJcited", "ChIJr1"});
}

TEST_CASE("a title counts as named only as whole words") {
  std::vector<place_card> older = {card("ChIJinn", "Inn"), card("ChIJbar", "Bar")};
  std::vector<place_card> recent;
  for (int idx = 1; idx <= 6; ++idx)
    recent.push_back(card("ChIJr" + std::to_string(idx), "Recent " + std::to_string(idx)));
  auto out = select_cards("After dinner in Barcelona, see the Recent 1.", {older, recent});
  CHECK(ids_of(out)
        == std::vector<std::string>{"ChIJr1", "ChIJr2", "ChIJr3", "ChIJr4", "ChIJr5", "ChIJr6"});
  // punctuation and the text's edges are boundaries; a letter of a
  // multibyte character is not
  CHECK(ids_of(select_cards("Bar, then (inn).", {older}))
        == std::vector<std::string>{"ChIJbar", "ChIJinn"});
  CHECK(select_cards("Bar\xc3\xa9 and \xc3\xa9Inn", {older, {}}).empty());
}

TEST_CASE("punctuation beyond ASCII bounds a name, and scripts without spaces match inside text") {
  std::vector<place_card> search = {card("ChIJl", "Louvre"), card("ChIJc", "Café de Flore"),
                                    card("ChIJt", "東京タワー"), card("ChIJo", "Orsay")};
  auto named = [&](const std::string& answer) {
    return ids_of(select_cards(answer, {search, {}}));
  };
  CHECK(named("Visit the Louvre\u2014it opens at 9.") == std::vector<std::string>{"ChIJl"});
  CHECK(named("the Louvre\u2019s wing") == std::vector<std::string>{"ChIJl"});
  CHECK(named("\u201cCafé de Flore\u201d is nearby") == std::vector<std::string>{"ChIJc"});
  CHECK(named("東京タワーは素晴らしい") == std::vector<std::string>{"ChIJt"});
  // a letter beyond ASCII still continues a word, in scripts written with
  // spaces too (Hangul, Arabic)
  CHECK(named("Orsayé, Louvreß").empty());
  std::vector<place_card> spaced = {card("ChIJs", "서울"), card("ChIJm", "مصر")};
  auto named_spaced = [&](const std::string& answer) {
    return ids_of(select_cards(answer, {spaced, {}}));
  };
  CHECK(named_spaced("서울역 앞에서 만나요, مصري").empty());
  CHECK(named_spaced("서울 and مصر.") == std::vector<std::string>{"ChIJs", "ChIJm"});
}

TEST_CASE("a title inside a longer title the answer uses is not a mention") {
  std::vector<place_card> older = {card("ChIJshort", "Louvre")};
  std::vector<place_card> recent = {card("ChIJlong", "Musée du Louvre"),
                                    card("ChIJr1", "Recent One")};
  auto out = select_cards("Start at the Musée du Louvre.", {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJlong", "ChIJr1"});
  // named on its own elsewhere, it counts from there
  out = select_cards("The Musée du Louvre, then the Louvre gardens.", {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJlong", "ChIJshort", "ChIJr1"});
}

TEST_CASE("a cited Maps URL counts in any spelling that normalises to the card's") {
  std::vector<place_card> older = {card("ChIJx1", "Xa"), card("ChIJx2", "Xb"),
                                   card("ChIJx3", "Xc")};
  older[0].place_url = *supported_maps_url("https://www.google.com/maps/place/Caf%c3%a9");
  older[1].place_url = *supported_maps_url("https://maps.google.com/?cid=77");
  older[2].directions_url = *supported_maps_url("https://www.google.com/maps/dir/?api=1&d=x");
  std::vector<place_card> recent = {card("ChIJr1", "Recent One")};
  auto answer = std::string("Directions: HTTPS://WWW.Google.com:443/maps/dir/?api=1&d=x. ")
                + "Then https://maps.google.com:443?cid=77, and "
                + "(https://www.google.com/maps/place/Caf%c3%a9).";
  auto out = select_cards(answer, {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJx3", "ChIJx2", "ChIJx1", "ChIJr1"});
  // a long URL followed by more URL characters is not read as that URL
  // with its punctuation trimmed: the run is longer than any URL
  auto long_card = card("ChIJlong", "Yy");
  std::string long_url = "https://maps.google.com/?q=";
  long_url += std::string(2045 - long_url.size(), 'a');
  long_card.place_url = *supported_maps_url(long_url);
  CHECK(select_cards(long_url + "....xyz", {{long_card}, {}}).empty());
  CHECK(ids_of(select_cards("See " + long_url + ".", {{long_card}, {}}))
        == std::vector<std::string>{"ChIJlong"});
  // a URL that is not a supported Maps destination cites nothing
  CHECK(
    select_cards("https://maps.google.com/url?q=https://x.example&cid=77", {older, {}}).empty());
}

TEST_CASE("short titles are not matched as names") {
  std::vector<place_card> older = {card("ChIJshort", "Bo")};
  std::vector<place_card> recent = {card("ChIJr1", "Recent One")};
  auto out = select_cards("Both are nice.", {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJr1"});
}

TEST_CASE("without names, cards come from the most recent search") {
  std::vector<place_card> older = {card("ChIJo1", "Older One"), card("ChIJo2", "Older Two")};
  std::vector<place_card> recent = {card("ChIJr1", "Recent One"), card("ChIJr2", "Recent Two")};
  auto out = select_cards("Here are a few options nearby.", {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJr1", "ChIJr2"});
  CHECK(select_cards("Nothing matched.", {older, {}}).empty());
  CHECK(select_cards("Older One", {}).empty());
}

TEST_CASE("cards are not duplicated by place id across searches") {
  auto stale = card("ChIJsame", "Same Place");
  stale.title = "Same Place (old)";
  std::vector<place_card> older = {stale, card("ChIJo1", "Older One")};
  std::vector<place_card> recent = {card("ChIJsame", "Same Place"), card("ChIJr1", "Recent One")};
  auto out = select_cards("Same Place and Older One.", {older, recent});
  CHECK(ids_of(out) == std::vector<std::string>{"ChIJsame", "ChIJo1", "ChIJr1"});
  CHECK(out.front().title == "Same Place"); // the most recent search's card
}

// -- read-only marks ------------------------------------------------------------------------

TEST_CASE("the curated preset marks every Grounding Lite tool read-only") {
  auto tools = read_only_tools();
  CHECK(tools
        == std::vector<std::string_view>{"search_places", "lookup_weather", "compute_routes"});
}
