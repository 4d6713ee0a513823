#include "actors/run/maps_grounding.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/presets.hpp"
#include "transport/ascii.hpp"
#include "transport/unicode_categories.hpp"
#include "transport/url_policy.hpp"

namespace voxos::maps_grounding {

namespace {

using json = nlohmann::json;

// -- helpers -------------------------------------------------------------------

/// A status whose message is "<path>: <constraint>". Both are literals of this
/// file: nothing from the input reaches a message.
status fail(errc code, std::string_view path, std::string_view constraint) {
  std::string message{path};
  message += ": ";
  message += constraint;
  return status::error(code, std::move(message));
}

bool has_prefix(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool has_control_char(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char ch) {
    auto byte = static_cast<unsigned char>(ch);
    return byte < 0x20 || byte == 0x7f;
  });
}

bool is_ascii_letter(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

bool is_blank(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char ch) { return ch == ' '; });
}

/// Place IDs are base64url-like: letters, digits, '-' and '_'.
bool is_place_id(std::string_view text) {
  if (text.empty() || text.size() > max_place_id_bytes)
    return false;
  return std::all_of(text.begin(), text.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
           || ch == '-' || ch == '_';
  });
}

/// The place ID in `text`: the text itself or its "places/" resource name.
std::optional<std::string_view> place_id_of(std::string_view text) {
  static constexpr std::string_view prefix = "places/";
  if (has_prefix(text, prefix))
    text.remove_prefix(prefix.size());
  if (!is_place_id(text))
    return std::nullopt;
  return text;
}

/// An integer-valued JSON number (2026 or 2026.0) within [lo, hi].
std::optional<int64_t> integral_in(const json& value, int64_t lo, int64_t hi) {
  double number = 0;
  if (value.is_number_unsigned()) {
    auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi) || hi < 0)
      return std::nullopt;
    number = static_cast<double>(u);
  } else if (value.is_number()) {
    number = value.get<double>();
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(number) || std::floor(number) != number || number < static_cast<double>(lo)
      || number > static_cast<double>(hi))
    return std::nullopt;
  return static_cast<int64_t>(number);
}

/// A finite JSON number within [-limit, limit].
std::optional<double> degrees_in(const json& value, double limit) {
  if (!value.is_number())
    return std::nullopt;
  auto number = value.get<double>();
  if (!std::isfinite(number) || number < -limit || number > limit)
    return std::nullopt;
  return number;
}

bool only_keys(const json& object, std::initializer_list<std::string_view> allowed) {
  for (const auto& item : object.items())
    if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end())
      return false;
  return true;
}

bool is_leap_year(int64_t year) {
  return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
}

int64_t days_in_month(int64_t year, int64_t month) {
  static constexpr int64_t days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap_year(year) ? 29 : days[month - 1];
}

// -- lookup_weather --------------------------------------------------------------

constexpr std::string_view location_forms = "exactly one of address, placeId, latLng";

/// Checks `location` and writes its normalised form to `out`.
status normalize_location(const json& location, json& out) {
  if (!location.is_object())
    return fail(errc::wrong_type, "/location", "must be an object");
  if (!only_keys(location, {"address", "placeId", "latLng"}))
    return fail(errc::unknown_field, "/location",
                "exactly one of address, placeId, latLng (camelCase); no other field");
  if (location.size() == 0)
    return fail(errc::missing_field, "/location", location_forms);
  if (location.size() > 1)
    return fail(errc::out_of_range, "/location", location_forms);

  // address: free text for Google's geocoder.
  if (auto it = location.find("address"); it != location.end()) {
    if (!it->is_string())
      return fail(errc::wrong_type, "/location/address", "must be a string");
    const auto& text = it->get_ref<const std::string&>();
    if (text.empty() || text.size() > max_address_bytes || is_blank(text) || has_control_char(text))
      return fail(errc::out_of_range, "/location/address",
                  "non-blank string of at most 1024 bytes without control characters");
    out["address"] = text;
    return status::ok();
  }

  // placeId: a Place ID, or the resource name Google's name resolution returns.
  if (auto it = location.find("placeId"); it != location.end()) {
    if (!it->is_string())
      return fail(errc::wrong_type, "/location/placeId", "must be a string");
    auto id = place_id_of(it->get_ref<const std::string&>());
    if (!id)
      return fail(errc::out_of_range, "/location/placeId",
                  "a Place ID of 1..512 letters, digits, '-' or '_', optionally as places/{id}");
    out["placeId"] = std::string{*id};
    return status::ok();
  }

  // latLng: WGS84 degrees.
  const auto& point = location.at("latLng");
  if (!point.is_object())
    return fail(errc::wrong_type, "/location/latLng", "must be an object");
  if (!only_keys(point, {"latitude", "longitude"}))
    return fail(errc::unknown_field, "/location/latLng", "only latitude and longitude");
  auto lat = point.find("latitude");
  auto lng = point.find("longitude");
  if (lat == point.end() || lng == point.end())
    return fail(errc::missing_field, "/location/latLng", "latitude and longitude required");
  auto latitude = degrees_in(*lat, 90);
  if (!latitude)
    return fail(lat->is_number() ? errc::out_of_range : errc::wrong_type,
                "/location/latLng/latitude", "finite number in [-90, 90]");
  auto longitude = degrees_in(*lng, 180);
  if (!longitude)
    return fail(lng->is_number() ? errc::out_of_range : errc::wrong_type,
                "/location/latLng/longitude", "finite number in [-180, 180]");
  out["latLng"] = {{"latitude", *latitude}, {"longitude", *longitude}};
  return status::ok();
}

/// Checks `date` and writes its normalised form to `out`.
status normalize_date(const json& date, json& out) {
  constexpr std::string_view complete = "complete date required (year, month, day)";
  if (!date.is_object())
    return fail(errc::wrong_type, "/date", "must be an object (year, month, day)");
  if (!only_keys(date, {"year", "month", "day"}))
    return fail(errc::unknown_field, "/date", "only year, month and day");
  auto year_it = date.find("year");
  auto month_it = date.find("month");
  auto day_it = date.find("day");
  if (year_it == date.end() || month_it == date.end() || day_it == date.end())
    return fail(errc::missing_field, "/date", complete);

  auto year = integral_in(*year_it, 1, 9999);
  if (!year)
    return fail(year_it->is_number() ? errc::out_of_range : errc::wrong_type, "/date/year",
                "integer in [1, 9999]");
  auto month = integral_in(*month_it, 1, 12);
  if (!month)
    return fail(month_it->is_number() ? errc::out_of_range : errc::wrong_type, "/date/month",
                "integer in [1, 12]");
  auto day = integral_in(*day_it, 1, days_in_month(*year, *month));
  if (!day)
    return fail(day_it->is_number() ? errc::out_of_range : errc::wrong_type, "/date/day",
                "integer that is a day of that month");
  out = {{"year", *year}, {"month", *month}, {"day", *day}};
  return status::ok();
}

bool is_language_code(std::string_view text) {
  if (text.size() < 2 || text.size() > max_language_code_bytes)
    return false;
  return std::all_of(text.begin(), text.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
           || ch == '-' || ch == '_';
  });
}

result<json> normalize_weather(const json& doc) {
  // Shape.
  if (!doc.is_object())
    return fail(errc::wrong_type, "/", "arguments must be an object");
  if (!only_keys(doc, {"location", "date", "hour", "unitsSystem", "languageCode"}))
    return fail(errc::unknown_field, "/",
                "only location, date, hour, unitsSystem and languageCode (camelCase)");

  // location: required, exactly one form.
  json out = json::object();
  auto location = doc.find("location");
  if (location == doc.end())
    return fail(errc::missing_field, "/location", "required");
  json normal_location = json::object();
  if (auto st = normalize_location(*location, normal_location); !st)
    return st;
  out["location"] = std::move(normal_location);

  // date: optional, complete.
  if (auto date = doc.find("date"); date != doc.end()) {
    json normal_date;
    if (auto st = normalize_date(*date, normal_date); !st)
      return st;
    out["date"] = std::move(normal_date);
  }

  // hour: optional, with a date.
  if (auto hour = doc.find("hour"); hour != doc.end()) {
    auto value = integral_in(*hour, 0, 23);
    if (!value)
      return fail(hour->is_number() ? errc::out_of_range : errc::wrong_type, "/hour",
                  "integer in [0, 23]");
    if (!out.contains("date"))
      return fail(errc::missing_field, "/hour", "requires /date");
    out["hour"] = *value;
  }

  // unitsSystem: optional enum.
  if (auto units = doc.find("unitsSystem"); units != doc.end()) {
    if (!units->is_string())
      return fail(errc::wrong_type, "/unitsSystem", "must be a string (METRIC or IMPERIAL)");
    const auto& name = units->get_ref<const std::string&>();
    if (name != "METRIC" && name != "IMPERIAL")
      return fail(errc::out_of_range, "/unitsSystem", "one of METRIC, IMPERIAL");
    out["unitsSystem"] = name;
  }

  // languageCode: optional BCP-47 tag.
  if (auto language = doc.find("languageCode"); language != doc.end()) {
    if (!language->is_string())
      return fail(errc::wrong_type, "/languageCode", "must be a string");
    const auto& code = language->get_ref<const std::string&>();
    if (!is_language_code(code))
      return fail(errc::out_of_range, "/languageCode",
                  "a language code of 2..35 letters, digits, '-' or '_'");
    out["languageCode"] = code;
  }
  return out;
}

// -- Maps URLs -------------------------------------------------------------------

bool is_credential_key(const std::string& key) {
  static constexpr std::string_view exact[] = {
    "sig",     "auth",      "authorization", "pwd", "jwt",  "bearer",
    "session", "sessionid", "session_id",    "sid", "code", "ak",
  };
  static constexpr std::string_view parts[] = {
    "token", "secret",    "pass",       "apikey",     "api_key",     "api-key",
    "oauth", "signature", "credential", "access_key", "private_key",
  };
  // "key" as the name's last word: key, client_key, license-key, api key
  // (not monkey or turkey)
  static constexpr std::string_view key_word = "key";
  if (key.size() >= key_word.size()
      && key.compare(key.size() - key_word.size(), key_word.size(), key_word) == 0
      && (key.size() == key_word.size() || !is_ascii_letter(key[key.size() - key_word.size() - 1])))
    return true;
  if (std::find(std::begin(exact), std::end(exact), key) != std::end(exact))
    return true;
  return std::any_of(std::begin(parts), std::end(parts),
                     [&](std::string_view part) { return key.find(part) != std::string::npos; });
}

int hex_value(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  ch = ascii_lower(ch);
  return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/// A query field's name or value percent-decoded ('+' as a space) and
/// ASCII-lowercased.
/// parse_url has already checked that every '%' has two hex digits.
std::string decoded(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (std::size_t pos = 0; pos < raw.size(); ++pos) {
    char ch = raw[pos];
    if (ch == '%' && pos + 2 < raw.size()) {
      int high = hex_value(raw[pos + 1]);
      int low = hex_value(raw[pos + 2]);
      if (high >= 0 && low >= 0) {
        out += static_cast<char>(high * 16 + low);
        pos += 2;
        continue;
      }
    }
    out += ch == '+' ? ' ' : ch;
  }
  return ascii_lowered(out);
}

/// Whether a decoded query value holds another URL (absolute, or
/// scheme-relative): a Maps destination never needs one, and a Google
/// redirector (`/url?q=`, a short link's `?link=`) forwards to it.
bool names_another_url(const std::string& value) {
  auto start = value.find_first_not_of(" \t");
  auto is_slash = [](char ch) { return ch == '/' || ch == '\\'; };
  return value.find("://") != std::string::npos || value.find(":\\") != std::string::npos
         || (start != std::string::npos && start + 1 < value.size() && is_slash(value[start])
             && is_slash(value[start + 1]));
}

/// A query field that carries a credential (by its name) or another URL (by
/// its value).
bool has_unsafe_field(std::string_view path_and_query) {
  auto query_start = path_and_query.find('?');
  if (query_start == std::string_view::npos)
    return false;
  auto query = path_and_query.substr(query_start + 1);
  while (!query.empty()) {
    auto end = query.find_first_of("&;");
    auto field = query.substr(0, end);
    auto equals = field.find('=');
    if (is_credential_key(decoded(field.substr(0, equals))))
      return true;
    if (equals != std::string_view::npos && names_another_url(decoded(field.substr(equals + 1))))
      return true;
    if (end == std::string_view::npos)
      break;
    query.remove_prefix(end + 1);
  }
  return false;
}

/// The path without its query.
std::string_view path_of(std::string_view path_and_query) {
  return path_and_query.substr(0, path_and_query.find('?'));
}

/// Whether `path` is `prefix` or starts with `prefix` + "/".
bool is_under(std::string_view path, std::string_view prefix) {
  return has_prefix(path, prefix) && (path.size() == prefix.size() || path[prefix.size()] == '/');
}

/// True for "/maps", "/maps/..." and "/maps?..." on www.google.com and
/// google.com.
bool is_maps_path(std::string_view path_and_query) {
  static constexpr std::string_view maps = "/maps";
  if (!has_prefix(path_and_query, maps))
    return false;
  auto rest = path_and_query.substr(maps.size());
  return rest.empty() || rest.front() == '/' || rest.front() == '?';
}

/// A maps.app.goo.gl short link's path: one code of letters, digits, '-' and
/// '_' (what the short link resolves to is Google's; a longer path or an
/// empty one is not a short link).
bool is_short_link_path(std::string_view path) {
  if (path.size() < 2 || path.size() > 65 || path.front() != '/')
    return false;
  return std::all_of(path.begin() + 1, path.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
           || ch == '-' || ch == '_';
  });
}

// -- search_places -----------------------------------------------------------------

std::optional<place_card> card_of(const json& view) {
  if (!view.is_object())
    return std::nullopt;
  place_card card;

  // Place ID: `id`, or `place` ("places/{id}"); both must agree.
  auto id = view.find("id");
  auto name = view.find("place");
  std::optional<std::string_view> from_id;
  std::optional<std::string_view> from_name;
  if (id != view.end()) {
    if (!id->is_string() || !is_place_id(id->get_ref<const std::string&>()))
      return std::nullopt;
    from_id = id->get_ref<const std::string&>();
  }
  if (name != view.end()) {
    if (!name->is_string() || !has_prefix(name->get_ref<const std::string&>(), "places/"))
      return std::nullopt;
    from_name = place_id_of(name->get_ref<const std::string&>());
    if (!from_name)
      return std::nullopt;
  }
  if (!from_id && !from_name)
    return std::nullopt;
  if (from_id && from_name && *from_id != *from_name)
    return std::nullopt;
  card.place_id = std::string{from_id ? *from_id : *from_name};

  // Title: the required attribution.
  auto attribution = view.find("attribution");
  if (attribution == view.end() || !attribution->is_object())
    return std::nullopt;
  auto title = attribution->find("title");
  if (title == attribution->end() || !title->is_string())
    return std::nullopt;
  const auto& title_text = title->get_ref<const std::string&>();
  if (title_text.empty() || title_text.size() > max_title_bytes || is_blank(title_text)
      || has_control_char(title_text))
    return std::nullopt;
  card.title = title_text;

  // URLs: both, each a supported Maps destination.
  auto links = view.find("googleMapsLinks");
  if (links == view.end() || !links->is_object())
    return std::nullopt;
  auto place_url = links->find("placeUrl");
  auto directions_url = links->find("directionsUrl");
  if (place_url == links->end() || !place_url->is_string() || directions_url == links->end()
      || !directions_url->is_string())
    return std::nullopt;
  auto place = supported_maps_url(place_url->get_ref<const std::string&>());
  auto directions = supported_maps_url(directions_url->get_ref<const std::string&>());
  if (!place || !directions)
    return std::nullopt;
  card.place_url = std::move(*place);
  card.directions_url = std::move(*directions);

  // Coordinates: optional, but valid when present.
  if (auto location = view.find("location"); location != view.end()) {
    if (!location->is_object())
      return std::nullopt;
    auto lat = location->find("latitude");
    auto lng = location->find("longitude");
    if (lat == location->end() || lng == location->end())
      return std::nullopt;
    auto latitude = degrees_in(*lat, 90);
    auto longitude = degrees_in(*lng, 180);
    if (!latitude || !longitude)
      return std::nullopt;
    card.coordinates = lat_lng{*latitude, *longitude};
  }
  return card;
}

// -- card selection ------------------------------------------------------------------

/// The code point of the character starting at `pos` of `text` (UTF-8).
uint32_t code_point_at(std::string_view text, std::size_t pos) {
  uint32_t code_point = 0;
  decode_utf8(text, pos, code_point);
  return code_point;
}

/// The code point of the character that ends just before `end`.
uint32_t code_point_before(std::string_view text, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    --start;
  return code_point_at(text, start);
}

/// Scripts written without spaces between words (Thai, Lao, Tibetan,
/// Myanmar, Khmer, kana, Han): a name in them has no word edges to look
/// for.
bool is_spaceless_script(uint32_t code_point) {
  static constexpr std::pair<uint32_t, uint32_t> ranges[] = {
    {0x0E00, 0x0EFF},   // Thai, Lao
    {0x0F00, 0x0FFF},   // Tibetan
    {0x1000, 0x109F},   // Myanmar
    {0x1780, 0x17FF},   // Khmer
    {0x19E0, 0x19FF},   // Khmer symbols
    {0x2E80, 0x2FDF},   // CJK radicals
    {0x3005, 0x3007},   // ideographic iteration and zero
    {0x3040, 0x30FF},   // Hiragana, Katakana
    {0x31F0, 0x31FF},   // Katakana extensions
    {0x3400, 0x4DBF},   // CJK extension A
    {0x4E00, 0x9FFF},   // CJK unified ideographs
    {0xF900, 0xFAFF},   // CJK compatibility ideographs
    {0xFF66, 0xFF9F},   // halfwidth Katakana
    {0x20000, 0x3FFFF}, // CJK extensions B..
  };
  return std::any_of(std::begin(ranges), std::end(ranges), [&](const auto& range) {
    return code_point >= range.first && code_point <= range.second;
  });
}

/// Characters that continue a word: letters, combining marks, numbers and
/// connector punctuation, outside the scripts written without spaces.
/// Punctuation (an em dash, curly quotes), symbols and spaces end one.
bool is_word_character(uint32_t code_point) {
  if (is_spaceless_script(code_point))
    return false;
  switch (category_of(code_point)) {
  case unicode_category::Lu:
  case unicode_category::Ll:
  case unicode_category::Lt:
  case unicode_category::Lm:
  case unicode_category::Lo:
  case unicode_category::Mn:
  case unicode_category::Mc:
  case unicode_category::Me:
  case unicode_category::Nd:
  case unicode_category::Nl:
  case unicode_category::No:
  case unicode_category::Pc:
    return true;
  default:
    return false;
  }
}

/// Where a title occurs in an answer, both lowered.
struct title_span {
  std::size_t start;
  std::size_t end;
  std::size_t candidate_idx;
};

/// The first `max_title_occurrences` whole-word occurrences of `title` in
/// `text` (a title that starts or ends with a word character needs another
/// character, or the text's edge, on that side).
void add_title_spans(std::string_view text, std::string_view title, std::size_t candidate_idx,
                     std::vector<title_span>& out) {
  bool word_start = is_word_character(code_point_at(title, 0));
  bool word_end = is_word_character(code_point_before(title, title.size()));
  std::size_t found = 0;
  for (auto pos = text.find(title); pos != std::string_view::npos && found < max_title_occurrences;
       pos = text.find(title, pos + 1)) {
    std::size_t end = pos + title.size();
    if ((word_start && pos > 0 && is_word_character(code_point_before(text, pos)))
        || (word_end && end < text.size() && is_word_character(code_point_at(text, end))))
      continue;
    out.push_back({pos, end, candidate_idx});
    ++found;
  }
}

/// The Maps URLs an answer quotes, normalised (supported_maps_url), with
/// where each starts: a run of URL characters from "https://" (any case),
/// read as it is and without trailing sentence punctuation (either may be
/// the URL meant). At most `max_cited_urls`.
std::vector<std::pair<std::size_t, std::string>> cited_urls(std::string_view lowered_answer,
                                                            std::string_view answer) {
  static constexpr std::string_view scheme = "https://";
  static constexpr std::string_view url_bytes =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    "0123456789-._~:/?#[]@!$&'()*+,;=%";
  std::vector<std::pair<std::size_t, std::string>> out;
  for (auto pos = lowered_answer.find(scheme);
       pos != std::string_view::npos && out.size() < max_cited_urls;
       pos = lowered_answer.find(scheme, pos + scheme.size())) {
    // (parse_url refuses a URL longer than max_url_bytes: no run of URL
    // characters is read further, whatever the answer holds)
    auto window = answer.substr(pos, max_url_bytes + 1);
    auto end = window.find_first_not_of(url_bytes);
    auto url = window.substr(0, end == std::string_view::npos ? window.size() : end);
    if (auto whole = supported_maps_url(url))
      out.emplace_back(pos, std::move(*whole));
    // (trailing punctuation is the run's own end only when the window did
    // not cut the run)
    bool whole_run = end != std::string_view::npos || window.size() <= max_url_bytes;
    auto last = url.find_last_not_of(".,;:!?)]'");
    if (whole_run && last != std::string_view::npos && last + 1 < url.size())
      if (auto trimmed = supported_maps_url(url.substr(0, last + 1)))
        out.emplace_back(pos, std::move(*trimmed));
  }
  return out;
}

} // namespace

result<json> normalize_arguments(std::string_view tool, const json& arguments) {
  if (tool != lookup_weather)
    return arguments;
  return normalize_weather(arguments);
}

std::optional<std::string> supported_maps_url(std::string_view url) {
  auto parsed = parse_url(url);
  if (!parsed)
    return std::nullopt;
  const auto& target = *parsed;
  if (target.scheme != "https" || target.port != 443 || target.kind != parsed_url::host_kind::name)
    return std::nullopt;
  std::string_view path = path_of(target.path_and_query);
  bool supported = false;
  if (target.host == "maps.google.com")
    supported = !is_under(path, "/url") && !is_under(path, "/maps/url");
  else if (target.host == "maps.app.goo.gl")
    supported = is_short_link_path(path);
  else if (target.host == "www.google.com" || target.host == "google.com")
    supported = is_maps_path(target.path_and_query) && !is_under(path, "/maps/url");
  if (!supported || has_unsafe_field(target.path_and_query))
    return std::nullopt;
  return normalised(target);
}

result<place_cards> place_cards_from_result(std::string_view call_tool_result_json) {
  // Bounds, syntax, a successful structured result.
  if (call_tool_result_json.size() > max_result_bytes)
    return fail(errc::out_of_range, "/", "result of at most 4 MiB");
  auto doc = json::parse(call_tool_result_json, nullptr, false);
  if (doc.is_discarded())
    return fail(errc::bad_json, "/", "result must be JSON");
  if (!doc.is_object())
    return fail(errc::wrong_type, "/", "result must be an object");
  if (auto is_error = doc.find("isError"); is_error != doc.end()) {
    if (!is_error->is_boolean())
      return fail(errc::wrong_type, "/isError", "must be a boolean");
    if (is_error->get<bool>())
      return fail(errc::rejected, "/isError", "the call failed; no place cards");
  }
  auto structured = doc.find("structuredContent");
  if (structured == doc.end())
    return fail(errc::missing_field, "/structuredContent", "required for place cards");
  if (!structured->is_object())
    return fail(errc::wrong_type, "/structuredContent", "must be an object");

  // Places: each entry on its own; proto3 JSON omits an empty list.
  place_cards out;
  auto places = structured->find("places");
  if (places == structured->end())
    return out;
  if (!places->is_array())
    return fail(errc::wrong_type, "/structuredContent/places", "must be an array");
  std::unordered_set<std::string> seen;
  for (std::size_t place_idx = 0; place_idx < places->size(); ++place_idx) {
    if (place_idx >= max_places_per_result) {
      out.skipped += places->size() - place_idx;
      break;
    }
    auto card = card_of((*places)[place_idx]);
    if (!card || !seen.insert(card->place_id).second) {
      ++out.skipped;
      continue;
    }
    out.cards.push_back(std::move(*card));
  }
  return out;
}

std::vector<place_card> select_cards(std::string_view answer_text,
                                     const std::vector<std::vector<place_card>>& searches) {
  // Distinct candidates, the most recent search first.
  std::vector<const place_card*> candidates;
  std::unordered_set<std::string_view> candidate_ids;
  for (auto search = searches.rbegin(); search != searches.rend(); ++search)
    for (const auto& card : *search)
      if (candidates.size() < max_candidate_cards && candidate_ids.insert(card.place_id).second)
        candidates.push_back(&card);

  // Named or cited places, by first mention. A name inside a longer name
  // that the answer uses there ("Louvre" in "Musée du Louvre") does not count.
  struct mention {
    std::size_t pos;
    std::size_t title_bytes;
    std::size_t candidate_idx;
  };
  auto lowered_answer = ascii_lowered(answer_text);
  std::vector<title_span> spans;
  for (std::size_t candidate_idx = 0; candidate_idx < candidates.size(); ++candidate_idx) {
    const auto& title = candidates[candidate_idx]->title;
    if (title.size() >= min_named_title_bytes)
      add_title_spans(lowered_answer, ascii_lowered(title), candidate_idx, spans);
  }
  std::sort(spans.begin(), spans.end(), [](const title_span& lhs, const title_span& rhs) {
    return lhs.start != rhs.start ? lhs.start < rhs.start : lhs.end > rhs.end;
  });
  std::vector<std::optional<std::size_t>> first(candidates.size());
  auto consider = [&](std::size_t candidate_idx, std::size_t pos) {
    auto& at = first[candidate_idx];
    if (!at || pos < *at)
      at = pos;
  };
  // (spans starting no later, ending no earlier and longer contain a span;
  // identical spans, the same name, do not)
  std::size_t reach = 0; // furthest end of the spans before the current group
  for (std::size_t group = 0; group < spans.size();) {
    std::size_t next = group;
    while (next < spans.size() && spans[next].start == spans[group].start
           && spans[next].end == spans[group].end)
      ++next;
    if (reach < spans[group].end)
      for (std::size_t idx = group; idx < next; ++idx)
        consider(spans[idx].candidate_idx, spans[idx].start);
    reach = std::max(reach, spans[group].end);
    group = next;
  }
  auto urls = cited_urls(lowered_answer, answer_text);
  for (std::size_t candidate_idx = 0; candidate_idx < candidates.size(); ++candidate_idx) {
    const place_card& card = *candidates[candidate_idx];
    if (auto pos = answer_text.find(card.place_id);
        !card.place_id.empty() && pos != std::string_view::npos)
      consider(candidate_idx, pos);
    for (const auto& [pos, url] : urls)
      if (url == card.place_url || url == card.directions_url) {
        consider(candidate_idx, pos);
        break;
      }
  }
  std::vector<mention> mentions;
  for (std::size_t candidate_idx = 0; candidate_idx < candidates.size(); ++candidate_idx)
    if (first[candidate_idx])
      mentions.push_back(
        {*first[candidate_idx], candidates[candidate_idx]->title.size(), candidate_idx});
  std::sort(mentions.begin(), mentions.end(), [](const mention& lhs, const mention& rhs) {
    if (lhs.pos != rhs.pos)
      return lhs.pos < rhs.pos;
    if (lhs.title_bytes != rhs.title_bytes)
      return lhs.title_bytes > rhs.title_bytes;
    return lhs.candidate_idx < rhs.candidate_idx;
  });

  std::vector<place_card> out;
  std::unordered_set<std::string> chosen;
  auto take = [&](const place_card& card) {
    if (out.size() < max_cards && chosen.insert(card.place_id).second)
      out.push_back(card);
  };
  for (const auto& item : mentions)
    take(*candidates[item.candidate_idx]);

  // Then the most recent search.
  if (!searches.empty())
    for (const auto& card : searches.back())
      take(card);
  return out;
}

std::vector<std::string_view> read_only_tools() {
  std::vector<std::string_view> out;
  if (const auto* curated = find_preset(preset_id))
    for (const auto& tool : curated->tools)
      if (tool.read_only)
        out.push_back(tool.name);
  return out;
}

} // namespace voxos::maps_grounding
