#include <doctest/doctest.h>

#include "actors/mcp/discovery.hpp"

using voxos::tool_definition;

TEST_CASE("discovery keeps schemas, annotations and output schemas as the server gave them") {
  auto found = voxos::read_discovery(R"({"truncated":false,"tools":[
    {"name":"echo","description":"Echoes","inputSchema":{"type":"object"},
     "annotations":{"readOnlyHint":true,"destructiveHint":false,"title":"Echo"}},
    {"name":"stats","inputSchema":{"type":"object"},"outputSchema":{"type":"object",
     "properties":{"n":{"type":"integer"}}}}]})");
  REQUIRE(found.is_ok());
  REQUIRE(found->tools.size() == 2);
  CHECK(found->skipped == 0);
  const auto& echo = found->tools[0];
  CHECK(echo.name == "echo");
  CHECK(echo.title == "Echo");
  CHECK(echo.description == "Echoes");
  CHECK(echo.input_schema == R"({"type":"object"})");
  CHECK(echo.read_only_hint);
  CHECK_FALSE(echo.destructive_hint);
  const auto& stats = found->tools[1];
  CHECK(stats.output_schema.find("integer") != std::string::npos);
  CHECK_FALSE(stats.read_only_hint);
  CHECK(stats.destructive_hint); // the MCP default when not annotated
}

TEST_CASE("a tool without a schema or a name a record can keep is skipped, never given an empty "
          "schema") {
  auto found = voxos::read_discovery(R"({"tools":[
    {"name":"no_schema"},
    {"name":"array_schema","inputSchema":[]},
    {"inputSchema":{"type":"object"}},
    {"name":"","inputSchema":{"type":"object"}},
    "not a tool",
    {"name":"<img src=x onerror=alert(1)>","inputSchema":{"type":"object"}},
    {"name":"two words","inputSchema":{"type":"object"}},
    {"name":"ok","inputSchema":{"type":"object"}},
    {"name":"v2.search-all_OK","inputSchema":{"type":"object"}}]})");
  REQUIRE(found.is_ok());
  REQUIRE(found->tools.size() == 2);
  CHECK(found->tools[0].name == "ok");
  CHECK(found->tools[1].name == "v2.search-all_OK");
  CHECK(found->skipped == 7);
  CHECK(voxos::read_discovery("[]").error().code() == voxos::errc::bad_json);
  CHECK(voxos::read_discovery(R"({"tools":{}})").error().code() == voxos::errc::bad_json);
}

TEST_CASE("a bounded cache keeps the allowlisted tools first") {
  std::vector<tool_definition> tools;
  for (int i = 0; i < 10; ++i)
    tools.push_back(tool_definition{"t" + std::to_string(i), "", "", "{}", "", false, true});
  auto kept = voxos::bound_cache(tools, {"t9", "t7"}, 4);
  REQUIRE(kept.size() == 4);
  CHECK(kept[0].name == "t7");
  CHECK(kept[1].name == "t9");
  CHECK(kept[2].name == "t0");
  CHECK(kept[3].name == "t1");
  CHECK(voxos::bound_cache(tools, {}, 20).size() == 10);
}
