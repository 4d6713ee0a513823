// JSON text written by hand where a document is built on a hot path (a tool
// round's audit and activity records): no DOM, no allocation beyond the
// output string. Everything else builds JSON with nlohmann.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace voxos {

/// Whether `text` is valid UTF-8 (what a JSON string may hold).
bool is_utf8(std::string_view text);

/// The longest prefix of `text` of at most `bytes` that ends on a UTF-8
/// character boundary.
std::string utf8_prefix(const std::string& text, std::size_t bytes);

/// Appends `text` as a JSON string: quoted; `"`, `\` and control characters
/// escaped; UTF-8 kept as is. Bytes that are not UTF-8 become U+FFFD (as
/// nlohmann's `error_handler_t::replace` does), so the output is always
/// valid JSON.
void append_json_string(std::string& out, std::string_view text);

/// Appends `"key":"value"` (both written as by append_json_string).
void append_json_member(std::string& out, std::string_view key, std::string_view value);

} // namespace voxos
