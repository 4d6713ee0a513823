#include "transport/json_body.hpp"

#include "transport/ascii.hpp"

#include <exception>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace voxos {

namespace {

constexpr std::size_t max_nesting_depth = 64;
constexpr std::size_t max_echoed_name_bytes = 64;

bool is_json_whitespace(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

bool is_blank(std::string_view text) {
  for (char ch : text)
    if (!is_json_whitespace(ch))
      return false;
  return true;
}

/// True if arrays and objects in `text` nest deeper than `limit`. Brackets
/// inside strings do not count. Runs before the parser so that hostile input
/// is refused before anything is allocated for it.
bool nests_deeper_than(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (ch == '\\')
        escaped = true;
      else if (ch == '"')
        in_string = false;
      continue;
    }
    switch (ch) {
    case '"':
      in_string = true;
      break;
    case '[':
    case '{':
      if (++depth > limit)
        return true;
      break;
    case ']':
    case '}':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return false;
}

/// A field name as it may appear in an error message: at most
/// `max_echoed_name_bytes` (cut on a UTF-8 boundary), control characters
/// shown as '?'. Names come from the client for unknown and duplicate fields.
std::string printable_name(std::string_view name) {
  std::size_t cut = name.size();
  if (cut > max_echoed_name_bytes) {
    cut = max_echoed_name_bytes;
    while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80)
      --cut;
  }
  std::string out;
  out.reserve(cut + 3);
  for (std::size_t pos = 0; pos < cut; ++pos) {
    auto byte = static_cast<unsigned char>(name[pos]);
    if (byte < 0x20 || byte == 0x7F)
      out += '?';
    else
      out += name[pos];
  }
  if (cut < name.size())
    out += "...";
  return out;
}

bool has_kind(const nlohmann::json& value, json_kind kind) {
  switch (kind) {
  case json_kind::string:
    return value.is_string();
  case json_kind::integer:
    return value.is_number_integer();
  case json_kind::boolean:
    return value.is_boolean();
  case json_kind::object:
    return value.is_object();
  case json_kind::array:
    return value.is_array();
  }
  return false;
}

const char* describe(json_kind kind) {
  switch (kind) {
  case json_kind::string:
    return "a string";
  case json_kind::integer:
    return "an integer";
  case json_kind::boolean:
    return "a boolean";
  case json_kind::object:
    return "an object";
  case json_kind::array:
    return "an array";
  }
  return "a value";
}

status field_error(errc code, const std::string& name, const std::string& what) {
  return status::error(code, "field '" + name + "': " + what);
}

/// Checks one declared field that is present in the object.
status check_field(const field_spec& spec, const nlohmann::json& value) {
  if (!has_kind(value, spec.kind))
    return field_error(errc::wrong_type, spec.name, std::string{"expected "} + describe(spec.kind));
  if (spec.kind == json_kind::string) {
    const auto& text = value.get_ref<const std::string&>();
    if (text.size() > spec.max_length)
      return field_error(errc::out_of_range, spec.name,
                         "longer than " + std::to_string(spec.max_length) + " bytes");
    if (has_control_characters(text))
      return field_error(errc::out_of_range, spec.name, "contains control characters");
  }
  if (spec.kind == json_kind::array && value.size() > spec.max_length)
    return field_error(errc::out_of_range, spec.name,
                       "more than " + std::to_string(spec.max_length) + " elements");
  return status::ok();
}

/// Parses `body` (already depth-checked) into `out`. Refuses invalid JSON
/// (including ill-formed UTF-8, which nlohmann rejects) and objects, at any
/// depth, that repeat a key: parsers disagree on which copy wins.
status parse_strict(std::string_view body, nlohmann::json& out) {
  // nlohmann's reader takes a NUL as the end of its input: what follows one
  // would be ignored, not refused.
  if (body.find('\0') != std::string_view::npos)
    return status::error(errc::bad_json, "body is not valid JSON: it holds a NUL byte");
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> duplicate;
  auto on_event = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using event_t = nlohmann::json::parse_event_t;
    switch (event) {
    case event_t::object_start:
      open_objects.emplace_back();
      break;
    case event_t::object_end:
      if (!open_objects.empty())
        open_objects.pop_back();
      break;
    case event_t::key:
      if (!open_objects.empty() && !duplicate
          && !open_objects.back().insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
      break;
    default:
      break;
    }
    return true;
  };
  out = nlohmann::json::parse(body.data(), body.data() + body.size(), on_event,
                              /*allow_exceptions=*/false);
  if (out.is_discarded())
    return status::error(errc::bad_json, "body is not valid JSON");
  if (duplicate)
    return status::error(errc::bad_json, "duplicate field '" + printable_name(*duplicate) + "'");
  return status::ok();
}

} // namespace

bool is_json_media_type(std::string_view content_type) {
  auto semicolon = content_type.find(';');
  if (!equals_ignoring_case(trim_ows(content_type.substr(0, semicolon)), "application/json"))
    return false;
  if (semicolon == std::string_view::npos)
    return true;
  auto parameter = trim_ows(content_type.substr(semicolon + 1));
  return equals_ignoring_case(parameter, "charset=utf-8")
         || equals_ignoring_case(parameter, "charset=\"utf-8\"");
}

result<nlohmann::json> parse_json_object(std::string_view body,
                                         std::initializer_list<field_spec> fields) {
  try {
    // Parse: an empty body stands for {}.
    nlohmann::json object = nlohmann::json::object();
    if (!is_blank(body)) {
      if (nests_deeper_than(body, max_nesting_depth))
        return status::error(errc::bad_json, "body nests deeper than "
                                               + std::to_string(max_nesting_depth) + " levels");
      if (auto parsed = parse_strict(body, object); !parsed)
        return parsed;
      if (!object.is_object())
        return status::error(errc::bad_json, "body must be a JSON object");
    }
    if (auto checked = check_json_fields(object, fields); !checked)
      return checked;
    return object;
  } catch (const std::exception&) {
    // Only allocation failures can get here: parsing runs without exceptions.
    return status::error(errc::internal, "cannot parse body");
  }
}

status check_json_fields(const nlohmann::json& object, const field_spec* fields,
                         std::size_t count) {
  const field_spec* const end = fields + count;
  // Only declared fields.
  for (const auto& member : object.items()) {
    bool declared = false;
    for (const auto* spec = fields; spec != end; ++spec)
      declared = declared || spec->name == member.key();
    if (!declared)
      return status::error(errc::unknown_field,
                           "unknown field '" + printable_name(member.key()) + "'");
  }

  // Each declared field: present if required, of its kind, within bounds.
  for (const auto* spec = fields; spec != end; ++spec) {
    auto found = object.find(spec->name);
    if (found == object.end()) {
      if (spec->required)
        return status::error(errc::missing_field, "missing field '" + spec->name + "'");
      continue;
    }
    if (auto checked = check_field(*spec, *found); !checked)
      return checked;
  }
  return status::ok();
}

bool has_control_characters(std::string_view text) {
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    auto byte = static_cast<unsigned char>(text[pos]);
    if (byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r')
      return true;
    if (byte == 0x7F)
      return true;
    if (byte == 0xC2 && pos + 1 < text.size()) {
      auto next = static_cast<unsigned char>(text[pos + 1]);
      if (next >= 0x80 && next <= 0x9F)
        return true;
    }
  }
  return false;
}

} // namespace voxos
