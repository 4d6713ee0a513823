#include "actors/run/view_naming.hpp"

namespace voxos::view_naming {

namespace {

bool name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
         || ch == '_' || ch == '-';
}

} // namespace

std::string sanitize_name(std::string_view name) {
  std::string out;
  out.reserve(std::min(name.size(), max_name_bytes));
  for (char ch : name.substr(0, max_name_bytes))
    out.push_back(name_char(ch) ? ch : '_');
  if (out.empty())
    out = "tool";
  return out;
}

std::string slug(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (out.size() >= max_slug_bytes)
      break;
    if (ch >= 'A' && ch <= 'Z')
      ch = static_cast<char>(ch - 'A' + 'a');
    bool keep = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (keep)
      out.push_back(ch);
    else if (!out.empty() && out.back() != '_')
      out.push_back('_');
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  return out.empty() ? std::string{"srv"} : out;
}

std::string server_slug(const mcp_server_record& server) {
  return slug(!server.variant.empty()     ? std::string_view{server.variant}
              : !server.preset_id.empty() ? std::string_view{server.preset_id}
                                          : std::string_view{server.label});
}

void append_short_hash(name_buffer& out, std::string_view text, const std::string_view* more) {
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](unsigned char ch) {
    h ^= ch;
    h *= 1099511628211ull;
  };
  for (unsigned char ch : text)
    mix(ch);
  if (more != nullptr) {
    mix(0);
    for (unsigned char ch : *more)
      mix(ch);
  }
  constexpr std::string_view digits = "0123456789abcdef";
  auto top = static_cast<unsigned>(h >> 40); // 24 bits
  char hex[6];
  for (std::size_t idx = 0; idx < 6; ++idx)
    hex[idx] = digits[(top >> (20 - 4 * idx)) & 0xf];
  out.append({hex, 6});
}

void append_suffixed(name_buffer& out, std::string_view base, std::string_view suffix) {
  auto keep = max_name_bytes > suffix.size() ? max_name_bytes - suffix.size() : 0;
  out.append(base.substr(0, keep));
  out.append(suffix);
}

} // namespace voxos::view_naming
