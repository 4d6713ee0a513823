#include "transport/json_text.hpp"

#include <simdjson.h>

#include <nlohmann/json.hpp>

namespace voxos {

bool is_utf8(std::string_view text) {
  return simdjson::validate_utf8(text.data(), text.size());
}

std::string utf8_prefix(const std::string& text, std::size_t bytes) {
  if (bytes >= text.size())
    return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80)
    --bytes;
  return text.substr(0, bytes);
}

void append_json_string(std::string& out, std::string_view text) {
  if (!is_utf8(text)) {
    out += nlohmann::json(std::string{text})
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  static constexpr char hex[] = "0123456789abcdef";
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  std::size_t plain = 0; // start of the run of bytes copied as they are
  for (std::size_t idx = 0; idx < text.size(); ++idx) {
    auto byte = static_cast<unsigned char>(text[idx]);
    if (byte >= 0x20 && byte != '"' && byte != '\\')
      continue;
    out.append(text.data() + plain, idx - plain);
    plain = idx + 1;
    switch (byte) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      out += "\\u00";
      out += hex[byte >> 4];
      out += hex[byte & 0xf];
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out += '"';
}

void append_json_member(std::string& out, std::string_view key, std::string_view value) {
  append_json_string(out, key);
  out += ':';
  append_json_string(out, value);
}

} // namespace voxos
