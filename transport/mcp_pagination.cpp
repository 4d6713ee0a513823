#include "transport/mcp_pagination.hpp"

#include <algorithm>

#include "config/base64.hpp"

namespace voxos {

namespace {

// "<list>\n<last key>": a list name holds no newline, a key may.
constexpr char separator = '\n';

status invalid_cursor() {
  return status::error(errc::out_of_range, "invalid cursor");
}

} // namespace

std::string mcp_cursor(std::string_view list, std::string_view last_key) {
  std::string plain{list};
  plain += separator;
  plain += last_key;
  return base64::encode(reinterpret_cast<const unsigned char*>(plain.data()), plain.size(),
                        base64::alphabet::url, false);
}

result<std::string> mcp_cursor_key(std::string_view list, std::string_view cursor) {
  auto plain = base64::decode_url(cursor);
  if (!plain)
    return invalid_cursor();
  auto cut = plain->find(separator);
  if (cut == std::string::npos || std::string_view{*plain}.substr(0, cut) != list)
    return invalid_cursor();
  return plain->substr(cut + 1);
}

result<mcp_page> mcp_page_of(const std::vector<std::string>& sorted_keys, std::string_view list,
                             const std::optional<std::string>& cursor, std::size_t page_size) {
  page_size = std::max<std::size_t>(page_size, 1);
  mcp_page page;
  if (cursor) {
    auto last = mcp_cursor_key(list, *cursor);
    if (!last)
      return last.error();
    page.begin = static_cast<std::size_t>(
      std::upper_bound(sorted_keys.begin(), sorted_keys.end(), *last) - sorted_keys.begin());
  }
  page.end = std::min(sorted_keys.size(), page.begin + page_size);
  if (page.end < sorted_keys.size())
    page.next_cursor = mcp_cursor(list, sorted_keys[page.end - 1]);
  return page;
}

} // namespace voxos
