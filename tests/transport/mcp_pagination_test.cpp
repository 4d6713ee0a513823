#include "transport/mcp_pagination.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using voxos::errc;
using voxos::mcp_cursor;
using voxos::mcp_page_of;

namespace {

/// Every key a client reads page by page from the first page on.
std::vector<std::string> read_all(const std::vector<std::string>& keys, std::size_t page_size,
                                  std::size_t& pages) {
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  pages = 0;
  do {
    auto page = mcp_page_of(keys, "tools", cursor, page_size);
    REQUIRE(page.is_ok());
    for (auto idx = page->begin; idx < page->end; ++idx)
      seen.push_back(keys[idx]);
    cursor = page->next_cursor;
    ++pages;
  } while (cursor && pages < 100);
  return seen;
}

} // namespace

TEST_CASE("pages cover every key in order and the last page has no next cursor") {
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e"};
  std::size_t pages = 0;
  CHECK(read_all(keys, 2, pages) == keys);
  CHECK(pages == 3);
  CHECK(read_all(keys, 5, pages) == keys);
  CHECK(pages == 1);
  CHECK(read_all({}, 3, pages).empty());
  CHECK(pages == 1);
}

TEST_CASE("a cursor continues after its key even when that key was removed meanwhile") {
  auto cursor = mcp_cursor("tools", "b");
  auto page = mcp_page_of({"a", "c", "d"}, "tools", cursor, 10);
  REQUIRE(page.is_ok());
  CHECK(page->begin == 1);
  CHECK(page->end == 3);
  CHECK_FALSE(page->next_cursor);
}

TEST_CASE("a cursor of another list, or not made by the server, is refused") {
  const std::vector<std::string> keys = {"a", "b"};
  for (const std::string& bad : {mcp_cursor("prompts", "a"), std::string{"not a cursor!"},
                                 std::string{"dG9vbHM"}, std::string{}}) {
    auto page = mcp_page_of(keys, "tools", bad, 10);
    REQUIRE_FALSE(page.is_ok());
    CHECK(page.error().code() == errc::out_of_range);
    CHECK(page.error().message() == "invalid cursor");
  }
}
