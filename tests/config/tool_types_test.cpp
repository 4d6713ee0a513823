// One server's discovery cache: immutable, shared, indexed by name.
#include <doctest/doctest.h>

#include "config/tool_types.hpp"

using namespace voxos;

namespace {

tool_definition def(std::string name, std::string description = {},
                    std::string schema = R"({"type":"object"})") {
  tool_definition out;
  out.name = std::move(name);
  out.description = std::move(description);
  out.input_schema = std::move(schema);
  return out;
}

} // namespace

TEST_CASE("a tool cache finds the first definition of each name") {
  tool_cache cache{{def("b", "first b"), def("a"), def("b", "second b")}};
  REQUIRE(cache.size() == 3); // as discovered, repeats included
  CHECK(cache.definitions()[2].description == "second b");
  REQUIRE(cache.by_name().size() == 2);
  CHECK(cache.by_name()[0].name == "a");
  CHECK(cache.by_name()[1].name == "b");
  CHECK(cache.by_name()[1].def->description == "first b");
  CHECK(cache.find("b")->description == "first b");
  CHECK(cache.find("c") == nullptr);
}

TEST_CASE("a tool cache computes what views ask of each name once") {
  tool_cache cache{{def("web.search", "Find.", " { } "), def("list", "", "[]")}};
  const auto& list = cache.by_name()[0];
  const auto& web = cache.by_name()[1];
  CHECK(list.name == "list");
  CHECK(list.name_is_model_facing);
  CHECK_FALSE(list.input_schema_is_object);
  CHECK(list.text_bytes == 4 + 0 + 2);
  CHECK_FALSE(web.name_is_model_facing);
  CHECK(web.input_schema_is_object);
}

TEST_CASE("copies of a tool cache share one block that outlives the original") {
  std::string_view name;
  tool_cache copy;
  {
    tool_cache cache{{def("search")}};
    copy = cache;
    name = cache.by_name()[0].name;
    CHECK((copy.owner() == cache.owner()));
  }
  CHECK(name == "search");
  CHECK(copy.find("search") != nullptr);
  CHECK(tool_cache{}.empty());
  CHECK((tool_cache{}.owner() == nullptr));
}

TEST_CASE("model-facing names and JSON object schemas are told apart") {
  CHECK(is_model_facing_name("a-b_C9"));
  CHECK_FALSE(is_model_facing_name(""));
  CHECK_FALSE(is_model_facing_name(std::string(65, 'a')));
  CHECK(looks_like_json_object("\n{}\t"));
  CHECK_FALSE(looks_like_json_object("{"));
}
