// The tape view (transport/json_tape.hpp) against simdjson's own element
// API on the same parsed documents: every value's type, text and number,
// every member and item in order, and the sizes.
#include "transport/json_tape.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using voxos::detail::tape_document;
using voxos::detail::tape_value;
using element_type = simdjson::dom::element_type;

namespace {

/// Checks `view` against `element` (the same value), recursively.
void check_same(tape_value view, simdjson::dom::element element) {
  REQUIRE(view.type() == element.type());
  switch (element.type()) {
  case element_type::STRING:
    CHECK(view.string() == element.get_string().value());
    break;
  case element_type::INT64:
    CHECK(view.int64() == element.get_int64().value());
    break;
  case element_type::UINT64:
    CHECK(view.uint64() == element.get_uint64().value());
    break;
  case element_type::DOUBLE:
    CHECK(view.float64() == element.get_double().value());
    break;
  case element_type::BOOL:
    CHECK(view.boolean() == element.get_bool().value());
    break;
  case element_type::NULL_VALUE:
    break;
  case element_type::ARRAY: {
    auto items = element.get_array().value();
    CHECK(view.array().size() == items.size());
    std::vector<tape_value> viewed;
    for (auto item : view.array())
      viewed.push_back(item);
    REQUIRE(viewed.size() == items.size());
    size_t idx = 0;
    for (auto item : items)
      check_same(viewed[idx++], item);
    break;
  }
  case element_type::OBJECT: {
    auto members = element.get_object().value();
    CHECK(view.object().size() == members.size());
    std::vector<voxos::detail::tape_field> viewed;
    for (auto member : view.object())
      viewed.push_back(member);
    REQUIRE(viewed.size() == members.size());
    size_t idx = 0;
    for (auto member : members) {
      CHECK(viewed[idx].key == member.key);
      check_same(viewed[idx].value, member.value);
      tape_value found = view;
      REQUIRE(view.object().find(member.key, found));
      ++idx;
    }
    break;
  }
  }
}

} // namespace

TEST_CASE("the tape view reads what simdjson's element API reads") {
  const std::vector<std::string> documents = {
    R"({"a": 1, "b": [true, false, null, -5, 18446744073709551615, 2.5e-3], "c": {}})",
    R"([[], {}, "", "with \"escapes\" \u00e9 and \ud83d\ude00", [[[1]]], {"x": {"y": [0]}}])",
    R"({"k": "v", "k": "repeated key", "": "empty key", "long key over eight bytes": 1e300})",
    R"(-9223372036854775808)",
    R"("a lone string")",
    R"(true)",
    R"(null)",
  };
  simdjson::dom::parser parser;
  for (const auto& text : documents) {
    CAPTURE(text);
    simdjson::dom::document doc;
    simdjson::dom::element root;
    REQUIRE(parser.parse_into_document(doc, text).get(root) == simdjson::SUCCESS);
    tape_document tape{doc};
    check_same(tape_value::root(tape), root);
  }
}

TEST_CASE("a member's value is found by key, the first of repeated keys") {
  simdjson::dom::parser parser;
  simdjson::dom::document doc;
  const std::string text = R"({"a": 1, "b": 2, "a": 3})";
  REQUIRE(parser.parse_into_document(doc, text).error() == simdjson::SUCCESS);
  tape_document tape{doc};
  auto object = tape_value::root(tape).object();
  tape_value found = tape_value::root(tape);
  REQUIRE(object.find("a", found));
  CHECK(found.int64() == 1);
  REQUIRE(object.find("b", found));
  CHECK(found.int64() == 2);
  CHECK_FALSE(object.find("c", found));
}

TEST_CASE("a container whose count the tape saturates is counted") {
  // simdjson saturates the count at 0xFFFFFF members or items; a real
  // document that large takes hundreds of MiB, so this tape is written by
  // hand: an array word claiming the saturated count around three nulls.
  std::vector<uint64_t> words = {
    uint64_t{'r'} << 56 | 6, uint64_t{'['} << 56 | uint64_t{0xFFFFFF} << 32 | 6,
    uint64_t{'n'} << 56,     uint64_t{'n'} << 56,
    uint64_t{'n'} << 56,     uint64_t{']'} << 56 | 1,
    uint64_t{'r'} << 56,
  };
  tape_document tape;
  tape.tape = words.data();
  CHECK(tape_value::root(tape).array().size() == 3);
  // the same for an object of one member (a key needs the string buffer)
  std::vector<uint8_t> strings = {1, 0, 0, 0, 'k', 0, 0, 0, 0, 0, 0, 0, 0};
  words = {
    uint64_t{'r'} << 56 | 5, uint64_t{'{'} << 56 | uint64_t{0xFFFFFF} << 32 | 5,
    uint64_t{'"'} << 56,     uint64_t{'n'} << 56,
    uint64_t{'}'} << 56 | 1, uint64_t{'r'} << 56,
  };
  tape.tape = words.data();
  tape.strings = strings.data();
  CHECK(tape_value::root(tape).object().size() == 1);
}
