// Unicode General Categories, for `\p{...}` in JSON Schema patterns
// (ECMA-262 in unicode mode). The table is generated: transport/
// unicode_categories.cpp, by scripts/unicode-categories.
#pragma once

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

} // namespace voxos
