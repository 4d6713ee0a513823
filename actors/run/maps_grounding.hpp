// Google Maps Grounding Lite (preset `google_maps_grounding_lite`, the MCP
// server at https://mapstools.googleapis.com/mcp): the preset's argument
// normaliser for lookup_weather and the typed place-card adapter for
// search_places. CAF-free and pure: no I/O, no state; every function may be
// called from any thread.
//
// Call these only for tools of a server that qualifies as the curated preset
// (its canonical URL and preset_id); a look-alike server that advertises the
// same tool names gets neither the normaliser nor the cards.
//
// -- lookup_weather --------------------------------------------------------------
//
// Runs after the model's arguments passed the discovered schema and before
// the call is sent (tool_round.hpp, step 7). The runtime is stricter than the
// provider (a proto3 JSON endpoint, which also reads snake_case):
//
//   {                                       every other top-level field: refused
//     "location": {                         required; exactly one of
//       "address": string,                    1..1024 bytes, not blank, no
//                                             control characters
//       "placeId": string,                    "places/" prefix removed, then
//                                             1..512 of [A-Za-z0-9_-]
//       "latLng": {"latitude": n,             exactly these two numbers, finite,
//                  "longitude": n}            [-90, 90] and [-180, 180]
//     },
//     "date": {"year", "month", "day"},     optional; all three, integers, a real
//                                           Gregorian date, year 1..9999
//     "hour": 0..23,                        optional; requires date
//     "unitsSystem": "METRIC" | "IMPERIAL", optional
//     "languageCode": string                optional; 2..35 of [A-Za-z0-9_-]
//   }
//
// camelCase only: "place_id", "lat_lng", "units_system" and any other field
// are refused locally. Integral floats (2026.0) are accepted where integers
// are required and sent as integers. The answer holds the validated fields
// only, so what is sent is exactly what was checked. Tools other than
// lookup_weather pass through unchanged. The caller bounds the argument size
// (round_limits::max_argument_bytes).
//
// Sources: Google's LookupWeatherRequest reference (Maps Experience agent
// tools, formerly Grounding Lite: unitsSystem, location, date, hour,
// languageCode, plus capabilities, weatherOptions and airQualityOptions for
// the later air-quality and pollen additions), its Location type (oneof
// latLng | placeId | address), the MCP tool page for lookup_weather (date as
// {year, month, day} integers, hour 0-23, METRIC default, IMPERIAL on request).
// Assumptions, strict where the sources were silent:
//   - capabilities, weatherOptions and airQualityOptions are refused: the
//     preset curates weather only, and weatherOptions.unitsSystem would be a
//     second spelling of unitsSystem;
//   - hour requires date (the REST reference says so; the MCP page implies it);
//   - UNITS_SYSTEM_UNSPECIFIED is refused (omit the field instead);
//   - the length bounds above are ours, not Google's.
//
// Errors (status; the message names a schema path and a constraint, never a
// rejected value or key, e.g. "/location: exactly one of address, placeId,
// latLng"):
//   wrong_type     not an object / a field of the wrong JSON type
//   unknown_field  a field outside the contract (snake_case included)
//   missing_field  no location, no location form, an incomplete date,
//                  hour without date
//   out_of_range   a bound, range, enum or calendar violation; two location
//                  forms
//
// -- search_places ---------------------------------------------------------------
//
// The tool's structuredContent is a SearchPlacesResponse (Google's
// SearchTextResponse reference: {"summary", "places": [PlaceView],
// "contentToken"}); each PlaceView is
//   {"place": "places/{id}", "id": string,
//    "googleMapsLinks": {"placeUrl", "directionsUrl", "writeAReviewUrl",
//                        "reviewsUrl", "photosUrl"},
//    "attribution": {"title", "url"},
//    "location": {"latitude", "longitude"}}
// (PlaceView, GoogleMapsLinks and Attribution references; note "...Url", not
// the Places API's "...Uri"). A card takes the place ID, attribution.title,
// placeUrl, directionsUrl and, when present, location. Nothing else is read,
// and nothing is filled in:
//   - the ID is `id`, or `place` without its "places/" prefix when `id` is
//     absent; both present must agree; same character rule as placeId above;
//   - title: 1..512 bytes, not blank, no control characters;
//   - both URLs must pass `supported_maps_url`;
//   - location absent: no coordinates; present but incomplete, non-numeric,
//     non-finite or out of range: the card is invalid (a present field must be
//     valid; only absence is optional);
//   - an invalid entry is skipped and counted; the others still become cards;
//   - a repeated place ID within one result is skipped and counted;
//   - at most `max_places_per_result` entries are read; the rest are
//     counted as skipped.
// Proto3 JSON omits an empty list, so a result without "places" has no cards.
//
// References (developers.google.com/maps/ai/, stored copies read while
// writing this): maps-experience-agent-tools/reference/rest/Shared.Types/
// {LookupWeatherRequest, Location, SearchTextResponse, PlaceView,
// Attribution}; grounding-lite/reference/mcp/{lookup_weather, search_places}.
//
// Durable storage: the full result goes to the model and the live stream
// only. The run's durable tool event (`tools.round`, actors/run/run.cpp
// record_activity) keeps each call's status and reason, never an output, for
// every tool; the chat transcript keeps the turn's text, and the answer's
// cards go back to the host without being stored (actors/tenant/tenant.cpp).
// A run trace (trace.hpp), when an operator turns them on, records every
// Grounding Lite result redacted and the cards as their number.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace voxos::maps_grounding {

inline constexpr std::string_view preset_id = "google_maps_grounding_lite";
inline constexpr std::string_view lookup_weather = "lookup_weather";
inline constexpr std::string_view search_places = "search_places";
inline constexpr std::string_view compute_routes = "compute_routes";

inline constexpr std::size_t max_address_bytes = 1024;
inline constexpr std::size_t max_place_id_bytes = 512;
inline constexpr std::size_t max_language_code_bytes = 35;
inline constexpr std::size_t max_result_bytes = 4 * 1024 * 1024;
inline constexpr std::size_t max_places_per_result = 64;
inline constexpr std::size_t max_title_bytes = 512;
inline constexpr std::size_t max_cards = 6;
/// Titles shorter than this are not matched as names in an answer ("Bo"
/// would match everywhere); their ID or URLs still count as citations.
inline constexpr std::size_t min_named_title_bytes = 3;
/// Distinct cards `select_cards` considers across all searches.
inline constexpr std::size_t max_candidate_cards = 256;
/// Occurrences of one title `select_cards` looks at (the first ones), and
/// Maps URLs it reads from one answer: bounds on the work one answer costs.
inline constexpr std::size_t max_title_occurrences = 16;
inline constexpr std::size_t max_cited_urls = 64;

/// Normalises the arguments of a Grounding Lite call (see the contract
/// above). For `tool` == "lookup_weather": the object to send, or the status
/// naming the path and constraint violated. Any other tool: `arguments`
/// unchanged.
result<nlohmann::json> normalize_arguments(std::string_view tool, const nlohmann::json& arguments);

/// WGS84 degrees, finite, latitude in [-90, 90], longitude in [-180, 180].
struct lat_lng {
  double latitude = 0;
  double longitude = 0;
};

/// One place from a successful search_places result.
struct place_card {
  std::string place_id;               ///< without the "places/" prefix
  std::string title;                  ///< attribution.title, as returned
  std::string place_url;              ///< supported_maps_url(placeUrl)
  std::string directions_url;         ///< supported_maps_url(directionsUrl)
  std::optional<lat_lng> coordinates; ///< only when the result carried them
};

/// The cards of one search_places result.
struct place_cards {
  std::vector<place_card> cards; ///< in result order
  std::size_t skipped = 0;       ///< entries that did not become cards
};

/// Validates a search_places CallToolResult (the JSON text of the MCP
/// `result` object: {"content", "structuredContent", "isError"}, as a
/// round's "ok" output carries it) into cards. Errors, for a result that is
/// not a successful structured one:
///   out_of_range  over `max_result_bytes`
///   bad_json      not JSON
///   wrong_type    not an object; isError, structuredContent or places of the
///                 wrong type
///   rejected      isError is true
///   missing_field no structuredContent
result<place_cards> place_cards_from_result(std::string_view call_tool_result_json);

/// `url` in its normalised form (transport/url_policy.hpp `parse_url`: host
/// lowercased, trailing dot and an explicit :443 dropped, percent escapes
/// upper-cased) if it is a supported Google Maps destination, else nothing:
///   - https only; no user info; no fragment; port 443 only; a host name,
///     never an address literal; parse_url's syntax rules (at most 2048
///     bytes, RFC 3986 characters, no dot segments);
///   - host `maps.google.com` (any path but Google's redirector, "/url" and
///     "/maps/url"), `maps.app.goo.gl` with one short code as its path
///     ("/" + 1..64 letters, digits, '-', '_'), or `www.google.com` /
///     `google.com` with the path "/maps" or "/maps/..." (not "/maps/url");
///     nothing else (no country domains, no look-alike suffixes);
///   - no query field whose name, percent-decoded and ASCII-lowercased, looks
///     like a credential: exactly sig, auth, authorization, pwd, jwt, bearer,
///     session, sessionid, session_id, sid, code, ak; "key" as its last word
///     (key, client_key, api-key; not monkey); or containing token, secret,
///     pass, apikey, oauth, signature, credential, access_key, private_key.
///     ("authuser", Google's account index, is fine.)
///   - no query value that, decoded, holds another URL ("://", or starting
///     with two slashes or backslashes): a Maps destination never needs one,
///     and a redirector forwards to it (`?link=`, `?q=`).
std::optional<std::string> supported_maps_url(std::string_view url);

/// The cards an answer receives: at most `max_cards`, without repeating a
/// place ID.
///  1. Places the answer names or cites, in the order they first appear: a
///     name is the title as whole words, ASCII-case-insensitive (titles of
///     at least `min_named_title_bytes`; "Bar" is not named by "Barcelona";
///     word edges by Unicode category, none in scripts written without
///     spaces such as Han, kana or Thai), and not inside a longer title the
///     answer uses at that place ("Louvre" in "Musée du Louvre"); a citation is the exact place ID, or a Maps URL
///     in the answer whose normalised form (supported_maps_url) is the
///     card's place or directions URL. Ties at one position go to the longer
///     title, then the more recent search.
///  2. Then cards of the most recent search (`searches.back()`), in its order.
/// `searches`: the cards of each successful search_places call of the turn,
/// in call order. A place found by several searches is taken from the most
/// recent one.
std::vector<place_card> select_cards(std::string_view answer_text,
                                     const std::vector<std::vector<place_card>>& searches);

/// The Grounding Lite tools the curated preset marks read-only (read from the
/// preset catalog, config/presets.cpp, in preset order), so they may run in
/// concurrent waves. Empty if the preset is missing.
std::vector<std::string_view> read_only_tools();

} // namespace voxos::maps_grounding
