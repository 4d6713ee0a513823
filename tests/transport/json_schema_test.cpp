#include "transport/json_schema.hpp"

#include <doctest/doctest.h>

#include <string>

using nlohmann::json;
using voxos::compile_schema;
using voxos::schema_draft;
using voxos::validate;

namespace {

voxos::compiled_schema compile_ok(const json& schema,
                                  schema_draft draft = schema_draft::draft2020_12) {
  auto compiled = compile_schema(schema, draft);
  REQUIRE_MESSAGE(compiled.is_ok(), compiled.error().message());
  return *compiled;
}

/// Every error text of `result` joined, to search for leaked values.
std::string all_text(const voxos::validation_result& result) {
  std::string text;
  for (const auto& error : result.errors)
    text += error.instance_path + " | " + error.schema_path + " | " + error.constraint + "\n";
  return text;
}

const json tool_schema = json::parse(R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$",
             "enum": ["paris", "rome"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 7, "multipleOf": 1},
    "tags": {"type": "array", "items": {"type": "string", "const": "x"}, "uniqueItems": true, "maxItems": 1}
  },
  "required": ["city", "days", "units"],
  "additionalProperties": false
})");

} // namespace

TEST_CASE("schema validation reports an extra property and a missing required one at their paths") {
  auto schema = compile_ok(tool_schema);
  auto result =
    validate(schema, json{{"city", "rome"}, {"days", 3}, {"units", "metric"}, {"tags", {"x"}}});
  // "units" is required but covered by no property schema: additionalProperties false rejects it.
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].instance_path == "/units");
  CHECK(result.errors[0].schema_path == "/additionalProperties");
  CHECK(validate(schema, json{{"city", "rome"}, {"days", 3}}).errors.size() == 1);
}

TEST_CASE("schema errors name paths and constraints but never instance values") {
  auto schema = compile_ok(tool_schema);
  const std::string secret = "secret-value-123";
  json args = {{"city", secret}, {"days", 99.5}, {"tags", {secret, secret}}, {"extra", secret}};
  auto result = validate(schema, args);
  REQUIRE_FALSE(result.is_valid());
  std::string text = all_text(result);
  CHECK(text.find(secret) == std::string::npos);
  CHECK(text.find("99.5") == std::string::npos);
  CHECK(text.find("required property 'units' is missing") != std::string::npos);
  CHECK(text.find("/properties/city/maxLength") != std::string::npos);
  CHECK(text.find("/properties/city/pattern") != std::string::npos);
  CHECK(text.find("/properties/city/enum") != std::string::npos);
  CHECK(text.find("/properties/days/type") != std::string::npos);
  CHECK(text.find("/properties/days/maximum") != std::string::npos);
  CHECK(text.find("/properties/tags/uniqueItems") != std::string::npos);
  CHECK(text.find("/properties/tags/items/const") != std::string::npos);
  CHECK(text.find("/tags/1") != std::string::npos);
  CHECK(text.find("additional property is not allowed") != std::string::npos);
}

TEST_CASE("schema with a cyclic $ref compiles and validates recursive data") {
  auto schema = compile_ok(json::parse(R"({
    "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}},
    "$ref": "#/$defs/node"
  })"));
  json chain = {{"v", 1}};
  for (int link = 0; link < 10; ++link)
    chain = json{{"v", link}, {"next", chain}};
  CHECK(validate(schema, chain).is_valid());
  chain["next"]["next"]["v"] = "bad";
  auto result = validate(schema, chain);
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].instance_path == "/next/next/v");
  CHECK(result.errors[0].schema_path == "/$defs/node/properties/v/type");
}

TEST_CASE("schema evaluation of a $ref loop that consumes nothing stops at the depth bound") {
  auto schema =
    compile_ok(json::parse(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                                           "$ref": "#/$defs/a"})"));
  auto result = validate(schema, json{{"x", 1}});
  REQUIRE_FALSE(result.is_valid());
  CHECK(all_text(result).find("maximum depth of 256") != std::string::npos);
}

TEST_CASE("schema compile refuses a bad regex, a wrongly typed keyword and a dangling $ref") {
  auto bad_regex = compile_schema(json{{"pattern", "(unclosed"}}, schema_draft::draft2020_12);
  REQUIRE_FALSE(bad_regex.is_ok());
  CHECK(bad_regex.error().code() == voxos::errc::config_invalid);
  CHECK(bad_regex.error().message().find("/pattern") != std::string::npos);
  CHECK(bad_regex.error().message().find("regular expression") != std::string::npos);

  auto bad_type =
    compile_schema(json{{"properties", {{"n", {{"minLength", "three"}}}}}}, schema_draft::draft7);
  REQUIRE_FALSE(bad_type.is_ok());
  CHECK(bad_type.error().message().find("/properties/n/minLength") != std::string::npos);

  CHECK_FALSE(compile_schema(json{{"type", "text"}}, schema_draft::draft2020_12).is_ok());
  CHECK_FALSE(compile_schema(json{{"required", "x"}}, schema_draft::draft2020_12).is_ok());
  auto dangling = compile_schema(json{{"$ref", "#/$defs/missing"}}, schema_draft::draft2020_12);
  REQUIRE_FALSE(dangling.is_ok());
  CHECK(dangling.error().message().find("cannot be resolved") != std::string::npos);
}

TEST_CASE("schema draft selects items semantics and $ref sibling handling") {
  json tuple = {{"items", {{{"type", "integer"}}}}, {"additionalItems", false}};
  auto draft7 = compile_ok(tuple, schema_draft::draft7);
  CHECK(validate(draft7, json{1}).is_valid());
  CHECK_FALSE(validate(draft7, json{1, 2}).is_valid());

  json prefix = {{"prefixItems", {{{"type", "integer"}}}}, {"items", false}};
  auto modern = compile_ok(prefix);
  CHECK(validate(modern, json{1}).is_valid());
  CHECK_FALSE(validate(modern, json{1, 2}).is_valid());

  json ref_sibling = json::parse(
    R"({"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s", "maxLength": 1})");
  CHECK(validate(compile_ok(ref_sibling, schema_draft::draft7), "long").is_valid());
  CHECK_FALSE(validate(compile_ok(ref_sibling, schema_draft::draft2020_12), "long").is_valid());
}

TEST_CASE("schema unevaluatedProperties sees properties evaluated by applicators") {
  auto schema = compile_ok(json::parse(R"({
    "allOf": [{"properties": {"a": true}}],
    "if": {"required": ["b"]}, "then": {"properties": {"b": true}},
    "unevaluatedProperties": false
  })"));
  CHECK(validate(schema, json{{"a", 1}, {"b", 2}}).is_valid());
  auto result = validate(schema, json{{"a", 1}, {"c", 3}});
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].instance_path == "/c");
  CHECK(result.errors[0].schema_path == "/unevaluatedProperties");
}
