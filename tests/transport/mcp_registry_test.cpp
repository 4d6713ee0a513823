#include "transport/mcp_registry.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

using nlohmann::json;
using voxos::errc;
using voxos::mcp_registry;
using voxos::mcp_tool;

namespace {

mcp_tool tool_named(std::string name, json input_schema = {{"type", "object"}}) {
  mcp_tool tool;
  tool.name = std::move(name);
  tool.description = "a tool";
  tool.input_schema = std::move(input_schema);
  tool.handler = [](const json&, voxos::mcp_call_context&) -> voxos::mcp_outcome {
    return json::object();
  };
  return tool;
}

/// The refusal message of registering `tool` (empty if it was accepted).
std::string refusal(mcp_tool tool) {
  mcp_registry registry;
  auto added = registry.add_tool(std::move(tool));
  if (added)
    return {};
  CHECK(added.code() == errc::config_invalid);
  return added.message();
}

json header_schema(json property) {
  return {{"type", "object"}, {"properties", {{"region", std::move(property)}}}};
}

} // namespace

TEST_CASE("tool names are 1 to 64 of letters, digits and _ . / -") {
  CHECK(refusal(tool_named("get_weather.v2/eu-west")).empty());
  CHECK(refusal(tool_named(std::string(64, 'a'))).empty());
  CHECK_FALSE(refusal(tool_named(std::string(65, 'a'))).empty());
  CHECK_FALSE(refusal(tool_named("")).empty());
  CHECK_FALSE(refusal(tool_named("get weather")).empty());
  CHECK_FALSE(refusal(tool_named("météo")).empty());
}

TEST_CASE("a tool's input schema must be an object schema that compiles") {
  CHECK(refusal(tool_named("t", {{"type", "string"}})).find("inputSchema must be an object schema")
        != std::string::npos);
  CHECK_FALSE(refusal(tool_named("t", json::array())).empty());
  CHECK(
    refusal(tool_named("t", {{"type", "object"}, {"properties", {{"a", {{"$ref", "#/nowhere"}}}}}}))
      .find("inputSchema")
    != std::string::npos);
  auto no_handler = tool_named("t");
  no_handler.handler = nullptr;
  CHECK(refusal(std::move(no_handler)) == "tool t: no handler");
}

TEST_CASE("a second tool of the same name is refused and the first kept") {
  mcp_registry registry;
  REQUIRE(registry.add_tool(tool_named("t")).is_ok());
  auto again = registry.add_tool(tool_named("t", {{"type", "object"}, {"title", "second"}}));
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.message() == "tool t is already registered");
  CHECK_FALSE(registry.tool("t")->tool.input_schema.contains("title"));
}

TEST_CASE("x-mcp-header marks are tokens, on primitives, unique ignoring case, reached by "
          "properties only") {
  CHECK(refusal(tool_named("t", header_schema({{"type", "string"}, {"x-mcp-header", "Region"}})))
          .empty());
  CHECK_FALSE(
    refusal(tool_named("t", header_schema({{"type", "string"}, {"x-mcp-header", ""}}))).empty());
  CHECK_FALSE(
    refusal(tool_named("t", header_schema({{"type", "string"}, {"x-mcp-header", "My Region"}})))
      .empty());
  CHECK_FALSE(
    refusal(tool_named("t", header_schema({{"type", "string"}, {"x-mcp-header", "Région"}})))
      .empty());
  CHECK_FALSE(
    refusal(tool_named("t", header_schema({{"type", "number"}, {"x-mcp-header", "Region"}})))
      .empty());
  CHECK_FALSE(
    refusal(tool_named("t", header_schema({{"type", "object"}, {"x-mcp-header", "Region"}})))
      .empty());
  json twice = {{"type", "object"},
                {"properties",
                 {{"a", {{"type", "string"}, {"x-mcp-header", "MyField"}}},
                  {"b", {{"type", "string"}, {"x-mcp-header", "myfield"}}}}}};
  CHECK(refusal(tool_named("t", twice)).find("unique") != std::string::npos);
  json in_items = {
    {"type", "object"},
    {"properties",
     {{"list", {{"type", "array"}, {"items", {{"type", "string"}, {"x-mcp-header", "Item"}}}}}}}};
  CHECK(refusal(tool_named("t", in_items)).find("reached from the root") != std::string::npos);

  json nested = {
    {"type", "object"},
    {"properties",
     {{"where",
       {{"type", "object"},
        {"properties", {{"zone", {{"type", "integer"}, {"x-mcp-header", "Zone"}}}}}}}}}};
  auto params = voxos::mcp_header_params(nested);
  REQUIRE(params.is_ok());
  REQUIRE(params->size() == 1);
  CHECK(params->front().path == std::vector<std::string>{"where", "zone"});
  CHECK(params->front().header == "Zone");
  CHECK(params->front().type == "integer");
}

TEST_CASE("a URI template binds its variables, each one or more characters other than a slash") {
  mcp_registry registry;
  voxos::mcp_resource_template data;
  data.uri_template = "test://template/{id}/data";
  data.name = "template";
  data.read = [](const std::string&, const std::map<std::string, std::string>&,
                 voxos::mcp_call_context&) -> voxos::mcp_outcome { return json::object(); };
  REQUIRE(registry.add_resource_template(data).is_ok());
  auto match = registry.resource("test://template/123/data");
  REQUIRE(match);
  CHECK(match->variables == std::map<std::string, std::string>{{"id", "123"}});
  CHECK_FALSE(registry.resource("test://template//data"));
  CHECK_FALSE(registry.resource("test://template/1/2/data"));
  CHECK_FALSE(registry.resource("test://template/123/data/more"));

  auto bad = data;
  for (const char* pattern : {"test://{a}{b}", "test://{+path}", "test://{open", "test://plain"}) {
    bad.uri_template = pattern;
    CHECK_FALSE(registry.add_resource_template(bad).is_ok());
  }
}

TEST_CASE("an extension is advertised under its id and cannot take a method of the server's own") {
  mcp_registry registry;
  voxos::mcp_extension skills;
  skills.id = "io.modelcontextprotocol/skills";
  skills.methods["skills/list"].handler =
    [](const json&, voxos::mcp_call_context&) -> voxos::mcp_outcome { return json::object(); };
  auto taken = skills;
  taken.id = "example.com/other";
  taken.methods["tools/call"] = taken.methods["skills/list"];
  CHECK(registry.add_extension(taken).message()
        == "extension example.com/other: method tools/call is the server's own");
  auto unprefixed = skills;
  unprefixed.id = "skills";
  CHECK_FALSE(registry.add_extension(unprefixed).is_ok());

  REQUIRE(registry.add_extension(skills).is_ok());
  CHECK(registry.capabilities(false)["extensions"]
        == json{{"io.modelcontextprotocol/skills", json::object()}});
  CHECK(registry.extension_method("skills/list"));
  auto again = skills;
  again.id = "example.com/skills-too";
  CHECK_FALSE(registry.add_extension(again).is_ok()); // skills/list is already served
}

TEST_CASE("the tasks extension's id and methods are the server's own: no extension takes them") {
  mcp_registry registry;
  voxos::mcp_extension tasks;
  tasks.id = "io.modelcontextprotocol/tasks";
  CHECK(registry.add_extension(tasks).message()
        == "extension io.modelcontextprotocol/tasks is the server's own");
  for (const char* method : {"tasks/get", "tasks/result", "notifications/tasks"}) {
    voxos::mcp_extension squatter;
    squatter.id = "example.com/squatter";
    squatter.methods[method].handler =
      [](const json&, voxos::mcp_call_context&) -> voxos::mcp_outcome { return json::object(); };
    CHECK(registry.add_extension(squatter).message()
          == "extension example.com/squatter: method " + std::string{method}
               + " is reserved for the tasks extension");
  }
  CHECK_FALSE(registry.capabilities(false).contains("extensions"));
}

TEST_CASE("capabilities follow what is registered") {
  mcp_registry registry;
  CHECK(registry.capabilities(false) == json::object());
  CHECK(registry.capabilities(true) == json{{"logging", json::object()}});
  REQUIRE(registry.add_tool(tool_named("t")).is_ok());
  CHECK(registry.capabilities(false) == json{{"tools", {{"listChanged", true}}}});
  CHECK(registry.remove_tool("t"));
  CHECK_FALSE(registry.remove_tool("t"));
  CHECK(registry.capabilities(false) == json::object());
}

TEST_CASE("a resource provider owns its prefix: overlaps and resources under it are refused") {
  auto provider = [](std::string prefix) {
    voxos::mcp_resource_provider out;
    out.uri_prefix = std::move(prefix);
    out.list = [](const voxos::mcp_caller&) -> voxos::result<std::vector<voxos::mcp_resource>> {
      return std::vector<voxos::mcp_resource>{};
    };
    out.read = [](const std::string&, const std::map<std::string, std::string>&,
                  voxos::mcp_call_context&) -> voxos::mcp_outcome { return json::object(); };
    return out;
  };
  auto resource = [](std::string uri) {
    voxos::mcp_resource out;
    out.uri = uri;
    out.name = std::move(uri);
    out.read = [](const std::string&, const std::map<std::string, std::string>&,
                  voxos::mcp_call_context&) -> voxos::mcp_outcome { return json::object(); };
    return out;
  };
  mcp_registry registry;
  REQUIRE(registry.add_resource(resource("note://a")).is_ok());
  CHECK(registry.add_resource_provider(provider("note://")).message()
        == "resource provider note:// covers the registered resource note://a");
  CHECK_FALSE(registry.add_resource_provider(provider("")).is_ok());
  auto no_read = provider("skill://");
  no_read.read = nullptr;
  CHECK_FALSE(registry.add_resource_provider(no_read).is_ok());

  REQUIRE(registry.add_resource_provider(provider("skill://")).is_ok());
  CHECK(registry.capabilities(false).contains("resources"));
  CHECK_FALSE(registry.add_resource_provider(provider("skill://team/")).is_ok());
  CHECK_FALSE(registry.add_resource_provider(provider("skill:")).is_ok());
  CHECK(registry.add_resource(resource("skill://x/SKILL.md")).message()
        == "resource skill://x/SKILL.md lies under the prefix of a resource provider");
  // Every URI under the prefix is the provider's, none outside it.
  auto match = registry.resource("skill://anything/at/all");
  REQUIRE(match);
  CHECK(match->variables.empty());
  CHECK(registry.resource("note://a"));
  CHECK_FALSE(registry.resource("note://b"));
}
