#include "transport/json_text.hpp"

#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

using voxos::append_json_member;
using voxos::append_json_string;

namespace {

std::string as_json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

} // namespace

TEST_CASE("a JSON string is written as nlohmann writes it") {
  for (std::string text :
       {std::string{"plain"}, std::string{""}, std::string{"quote \" and \\ back"},
        std::string{"line\nfeed\rtab\tbell\b\fform"}, std::string{"\x01\x1f control"},
        std::string{"caf\xc3\xa9 \xe2\x9c\x93"}, std::string{"nul \0 inside", 12}}) {
    CAPTURE(text);
    CHECK(as_json_string(text) == nlohmann::json(text).dump());
    CHECK(nlohmann::json::parse(as_json_string(text)).get<std::string>() == text);
  }
}

TEST_CASE("bytes that are not UTF-8 become U+FFFD, so the output stays valid JSON") {
  auto out = as_json_string("bad \xff\xfe byte and cut \xe2\x9c");
  auto parsed = nlohmann::json::parse(out, nullptr, false);
  REQUIRE_FALSE(parsed.is_discarded());
  CHECK(parsed.get<std::string>().find("\xef\xbf\xbd") != std::string::npos);
  CHECK(parsed.get<std::string>().rfind("bad ", 0) == 0);
}

TEST_CASE("a member is a key and a string value") {
  std::string out = "{";
  append_json_member(out, "tool", "get \"x\"");
  out += '}';
  CHECK(nlohmann::json::parse(out) == nlohmann::json{{"tool", "get \"x\""}});
}
