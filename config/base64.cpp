#include "config/base64.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace voxos::base64 {

namespace {

constexpr const char* base64_std_alphabet =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr const char* base64_url_alphabet =
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

} // namespace

std::string encode(const unsigned char* data, std::size_t size, alphabet chars, bool pad) {
  const char* table = chars == alphabet::standard ? base64_std_alphabet : base64_url_alphabet;
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (std::size_t pos = 0; pos < size; pos += 3) {
    uint32_t chunk = uint32_t{data[pos]} << 16;
    if (pos + 1 < size)
      chunk |= uint32_t{data[pos + 1]} << 8;
    if (pos + 2 < size)
      chunk |= uint32_t{data[pos + 2]};
    std::size_t chars = std::min<std::size_t>(size - pos, 3) + 1;
    for (std::size_t idx = 0; idx < 4; ++idx) {
      if (idx < chars)
        out += table[(chunk >> (18 - 6 * idx)) & 0x3f];
      else if (pad)
        out += '=';
    }
  }
  return out;
}

std::optional<std::string> decode(std::string_view text) {
  if (text.size() % 4 != 0)
    return std::nullopt;
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=')
    padding = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t chunk = 0;
  std::size_t data_chars = text.size() - padding;
  for (std::size_t pos = 0; pos < data_chars; ++pos) {
    const char* hit = std::strchr(base64_std_alphabet, text[pos]);
    if (text[pos] == '\0' || hit == nullptr)
      return std::nullopt;
    chunk = (chunk << 6) | static_cast<uint32_t>(hit - base64_std_alphabet);
    if (pos % 4 == 3) {
      out += static_cast<char>((chunk >> 16) & 0xff);
      out += static_cast<char>((chunk >> 8) & 0xff);
      out += static_cast<char>(chunk & 0xff);
      chunk = 0;
    }
  }
  // The last group: 2 data chars carry 1 byte (4 spare bits), 3 carry 2 bytes (2 spare bits).
  if (padding == 2) {
    if ((chunk & 0x0f) != 0)
      return std::nullopt;
    out += static_cast<char>((chunk >> 4) & 0xff);
  } else if (padding == 1) {
    if ((chunk & 0x03) != 0)
      return std::nullopt;
    out += static_cast<char>((chunk >> 10) & 0xff);
    out += static_cast<char>((chunk >> 2) & 0xff);
  }
  return out;
}

std::optional<std::string> decode_url(std::string_view text) {
  if (text.size() % 4 == 1)
    return std::nullopt;
  std::string standard;
  standard.reserve(text.size() + 3);
  for (char ch : text) {
    if (ch == '+' || ch == '/' || ch == '=')
      return std::nullopt;
    standard += ch == '-' ? '+' : ch == '_' ? '/' : ch;
  }
  while (standard.size() % 4 != 0)
    standard += '=';
  return decode(standard);
}

} // namespace voxos::base64
