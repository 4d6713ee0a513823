// Pages of a list tool: `limit` (the schema bounds it) and an opaque cursor
// from the previous page. CAF-free.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace voxos {

struct page_range {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::string next_cursor; ///< empty on the last page
};

/// The page `args` asks for out of `total` items; a cursor this tool did not
/// hand out is invalid_cursor (out_of_range).
inline result<page_range> page_of(const nlohmann::json& args, std::size_t total,
                                  std::size_t default_limit) {
  std::size_t limit = default_limit;
  if (auto found = args.find("limit");
      found != args.end() && found->is_number_integer() && found->get<int64_t>() > 0)
    limit = found->get<std::size_t>();
  page_range out;
  if (auto found = args.find("cursor"); found != args.end() && found->is_string()) {
    const auto& text = found->get_ref<const std::string&>();
    std::size_t offset = 0;
    auto [end, code] = text.size() > 2
                         ? std::from_chars(text.data() + 2, text.data() + text.size(), offset)
                         : std::from_chars_result{text.data(), std::errc::invalid_argument};
    if (text.rfind("o:", 0) != 0 || code != std::errc{} || end != text.data() + text.size()
        || offset > total)
      return status::error(errc::out_of_range,
                           "the cursor is not one this list handed out; start again without it");
    out.begin = offset;
  }
  out.end = std::min(total, out.begin + limit);
  if (out.end < total)
    out.next_cursor = "o:" + std::to_string(out.end);
  return out;
}

} // namespace voxos
