// ASCII case and whitespace for protocol text (header names and tokens, URL schemes and
// hosts, query field names): locale-independent; bytes outside A-Z are left
// as they are.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace voxos {

inline char ascii_lower(char ch) {
  return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch;
}

/// `text` with A-Z lower-cased. Header names compare case-insensitively
/// (RFC 9110), so they are stored and looked up in this form.
inline std::string ascii_lowered(std::string_view text) {
  std::string out{text};
  std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
  return out;
}

/// Whether `lhs` and `rhs` are equal ignoring ASCII case.
inline bool equals_ignoring_case(std::string_view lhs, std::string_view rhs) {
  return lhs.size() == rhs.size()
         && std::equal(lhs.begin(), lhs.end(), rhs.begin(),
                       [](char a, char b) { return ascii_lower(a) == ascii_lower(b); });
}

/// `text` without leading and trailing spaces and tabs (HTTP's OWS, around
/// field values and parameters).
inline std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

} // namespace voxos
