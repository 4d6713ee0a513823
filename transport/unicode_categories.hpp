// Unicode General Categories, for `\p{...}` in JSON Schema patterns
// (ECMA-262 in unicode mode). The table is generated: transport/
// unicode_categories.cpp, by scripts/unicode-categories.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace voxos {

enum class unicode_category : uint8_t {
  Lu,
  Ll,
  Lt,
  Lm,
  Lo,
  Mn,
  Mc,
  Me,
  Nd,
  Nl,
  No,
  Pc,
  Pd,
  Ps,
  Pe,
  Pi,
  Pf,
  Po,
  Sm,
  Sc,
  Sk,
  So,
  Zs,
  Zl,
  Zp,
  Cc,
  Cf,
  Cs,
  Co,
  Cn
};

/// The category of `code_point` (Cn past U+10FFFF's assigned ones).
unicode_category category_of(uint32_t code_point);

/// The categories a General_Category value names (short or long, e.g. "L" or
/// "Letter", "Nd" or "digit"), one bit per unicode_category; nullopt for
/// another name.
std::optional<uint32_t> category_mask(std::string_view name);

/// The Unicode version of the table.
std::string_view unicode_version();

/// Length of the UTF-8 sequence at `text[pos]` and its code point, for text
/// already known to be UTF-8 (a sequence cut short by the end reads as its
/// first byte alone).
inline std::size_t decode_utf8(std::string_view text, std::size_t pos, uint32_t& code_point) {
  auto byte = static_cast<unsigned char>(text[pos]);
  std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
  if (pos + length > text.size())
    length = 1;
  code_point = length == 1 ? byte : byte & (0x7F >> length);
  for (std::size_t idx = 1; idx < length; ++idx)
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + idx]) & 0x3F);
  return length;
}

} // namespace voxos
