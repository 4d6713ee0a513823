// Strict parsing of JSON request bodies and messages: one object, only the
// declared fields, each of its declared type and bounds. Errors name the field
// and the constraint, never the rejected value. CAF-free.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace voxos {

enum class json_kind { string, integer, boolean, object, array };

struct field_spec {
  std::string name;
  json_kind kind;
  bool required = false;
  std::size_t max_length = 1024; ///< for strings (bytes) and arrays (elements)
};

/// Whether a Content-Type header value names JSON: the media type
/// `application/json` in any case, with optional whitespace and at most the
/// parameter `charset=utf-8` (any case, quoted or not). `application/jsonx`,
/// `application/json5`, `application/json-patch+json`, another charset or
/// any other parameter are not.
bool is_json_media_type(std::string_view content_type);

/// Parses `body` as one JSON object with exactly the declared fields. The
/// body is read whole by its length: a NUL byte anywhere, or any byte after
/// the value other than JSON whitespace, is bad_json.
/// Errors: bad_json (not JSON, ill-formed UTF-8, not an object, nesting deeper
/// than 64, a key repeated in any object), unknown_field, missing_field,
/// wrong_type (also for null, and for 1.0 where an integer is declared),
/// out_of_range (too long; a declared string holding a control character
/// other than tab, LF and CR). An empty or all-whitespace body is accepted as
/// `{}` when no field is required. Checks stop at the first error: unknown
/// fields first, then the declared fields in order.
result<nlohmann::json> parse_json_object(std::string_view body,
                                         std::initializer_list<field_spec> fields);

/// Checks an object already parsed (e.g. an element of a parsed body) as
/// parse_json_object checks a body: only the declared fields, each present
/// if required, of its kind and within its bounds. Errors from unknown_field
/// on, as parse_json_object's. Precondition: `object` is an object.
status check_json_fields(const nlohmann::json& object, const field_spec* fields, std::size_t count);

inline status check_json_fields(const nlohmann::json& object,
                                std::initializer_list<field_spec> fields) {
  return check_json_fields(object, fields.begin(), fields.size());
}

/// Whether `text` holds a control character other than tab, line feed and
/// carriage return: C0 controls, DEL, and C1 controls (U+0080..U+009F,
/// encoded as 0xC2 0x80..0x9F).
bool has_control_characters(std::string_view text);

} // namespace voxos
