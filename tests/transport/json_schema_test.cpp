#include "transport/json_schema.hpp"

#include <doctest/doctest.h>
#include <simdjson.h>

#include <regex>
#include <string>
#include <vector>

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
    text.append(error.instance_path)
      .append(" | ")
      .append(error.schema_path)
      .append(" | ")
      .append(error.constraint)
      .append("\n");
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

/// The result of both entry points on `instance`: is_valid's answer must be
/// validate's.
voxos::validation_result validate_both(const voxos::compiled_schema& schema, const json& instance,
                                       size_t max_errors = voxos::all_errors) {
  simdjson::dom::parser parser;
  auto text = instance.dump();
  REQUIRE_FALSE(parser.parse(text).error());
  auto result = voxos::validate(schema, parser.doc, max_errors);
  CHECK(voxos::is_valid(schema, parser.doc) == result.is_valid());
  return result;
}

TEST_CASE("a $ref cycle under anyOf, oneOf or not stops the whole pass at the depth bound") {
  // (each level tries both branches: without the stop, 2^256 evaluations)
  for (const char* text : {R"({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]})",
                           R"({"oneOf": [{"$ref": "#"}, {"$ref": "#"}]})",
                           R"({"type": "object", "anyOf": [{"$ref": "#"}, {"type": "object"}]})",
                           R"({"not": {"$ref": "#"}})"}) {
    CAPTURE(text);
    auto schema = compile_ok(json::parse(text));
    for (size_t max_errors : {size_t{1}, voxos::all_errors}) {
      auto result = validate_both(schema, json::object(), max_errors);
      REQUIRE_FALSE(result.is_valid()); // (a `not` must not turn the stop into a pass)
      REQUIRE(result.errors.size() == 1);
      CHECK(result.errors[0].instance_path == "");
      CHECK(result.errors[0].constraint.find("maximum depth of 256") != std::string_view::npos);
    }
  }
}

TEST_CASE("applicators that multiply without a cycle stop at the work bound") {
  // a0 .. a(n-1): anyOf over the next level twice; a(n) is `last`: 2^n
  // evaluations when `last` fails
  auto levels = [](int count, const json& last) {
    json defs = json::object();
    for (int level = 0; level < count; ++level) {
      std::string next = "#/$defs/a" + std::to_string(level + 1);
      defs["a" + std::to_string(level)] = {{"anyOf", {{{"$ref", next}}, {{"$ref", next}}}}};
    }
    defs["a" + std::to_string(count)] = last;
    return compile_ok(json{{"$defs", defs}, {"$ref", "#/$defs/a0"}});
  };
  auto deep = levels(40, false);
  for (size_t max_errors : {size_t{1}, voxos::all_errors}) {
    auto result = validate_both(deep, json{{"x", 1}}, max_errors);
    REQUIRE_FALSE(result.is_valid());
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].constraint.find("work bound") != std::string_view::npos);
  }
  // Shallower, the same shape is evaluated in full: 2^10 steps is no bound.
  CHECK(validate_both(levels(10, json{{"type", "object"}}), json{{"x", 1}}).is_valid());
  auto shallow = validate_both(levels(10, false), json{{"x", 1}});
  REQUIRE_FALSE(shallow.is_valid());
  CHECK(all_text(shallow).find("work bound") == std::string::npos);
}

TEST_CASE("a bound met inside propertyNames stops the pass, at the object it checks") {
  // (a member name is evaluated as a string of its own, outside the
  // instance: the error is placed at the root, not searched for there)
  json loop = json::parse(R"({"$defs": {"loop": {"anyOf": [{"$ref": "#/$defs/loop"},
                                                          {"type": "string"}]}},
                              "type": "object", "propertyNames": {"$ref": "#/$defs/loop"}})");
  auto schema = compile_ok(loop);
  for (size_t max_errors : {size_t{1}, voxos::all_errors}) {
    auto result = validate_both(schema, json{{"x", 1}}, max_errors);
    REQUIRE_FALSE(result.is_valid());
    CHECK(all_text(result).find("maximum depth of 256") != std::string::npos);
  }
}

TEST_CASE("uniqueItems over a large array of scalars is checked in full, quickly") {
  auto schema = compile_ok(json{{"type", "array"}, {"uniqueItems", true}});
  json items = json::array();
  for (int idx = 0; idx < 60'000; ++idx)
    items.push_back(idx % 3 ? json(idx) : json("s" + std::to_string(idx)));
  // (integers that share a double are still different items)
  items.push_back(9007199254740993);
  items.push_back(9007199254740992);
  CHECK(validate_both(schema, items).is_valid());
  items.push_back(30'001.0); // equal to the integer 30001
  auto duplicate = validate_both(schema, items);
  REQUIRE_FALSE(duplicate.is_valid());
  CHECK(duplicate.errors[0].schema_path == "/uniqueItems");
  CHECK(duplicate.errors[0].constraint.find("unique") != std::string_view::npos);
}

TEST_CASE("uniqueItems over many objects and arrays is checked in full, whatever member order") {
  auto schema = compile_ok(json{{"type", "array"}, {"uniqueItems", true}});
  json items = json::array();
  for (int idx = 0; idx < 4'000; ++idx) // (8 million pairs, were each compared)
    items.push_back(idx % 2 ? json{{"k", idx}, {"v", {idx, "x"}}} : json::array({idx, {{"k", 1}}}));
  for (int idx = 0; idx < 1'500; ++idx)
    items.push_back(idx);
  CHECK(validate_both(schema, items).is_valid());
  // equal with its members in another order, deep inside
  auto text = items.dump() + "";
  text.insert(text.size() - 1, R"(,{"v":[7,"x"],"k":7})");
  simdjson::dom::parser parser;
  REQUIRE_FALSE(parser.parse(text).error());
  auto result = voxos::validate(schema, parser.doc);
  REQUIRE_FALSE(result.is_valid());
  CHECK(result.errors[0].constraint.find("unique") != std::string_view::npos);
}

TEST_CASE("uniqueItems over items crafted to share a hash stops at the work bound") {
  // 4,096 distinct integers from 2^63, where a double holds 2,048 of them:
  // three hash groups, 3 million comparisons
  auto schema = compile_ok(json{{"type", "array"}, {"uniqueItems", true}});
  json items = json::array();
  for (uint64_t idx = 0; idx < 4'096; ++idx)
    items.push_back((uint64_t{1} << 63) + idx);
  for (size_t max_errors : {size_t{1}, voxos::all_errors}) {
    auto result = validate_both(schema, items, max_errors);
    REQUIRE_FALSE(result.is_valid());
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].schema_path == "/uniqueItems");
    CHECK(result.errors[0].constraint.find("work bound") != std::string_view::npos);
  }
  // a few hundred of them are compared in full
  items.erase(items.begin() + 300, items.end());
  CHECK(validate_both(schema, items).is_valid());
  items.push_back((uint64_t{1} << 63) + 7);
  CHECK_FALSE(validate_both(schema, items).is_valid());
}

TEST_CASE("a large document within the work bound is validated in full") {
  // 200,000 items, each through a two-branch anyOf: a few steps per value
  auto schema = compile_ok(json::parse(
    R"({"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}})"));
  json items = json::array();
  for (int idx = 0; idx < 200'000; ++idx)
    items.push_back(idx % 2 ? json(idx) : json("s"));
  CHECK(validate_both(schema, items).is_valid());
  items.back() = 1.5;
  auto result = validate_both(schema, items);
  REQUIRE_FALSE(result.is_valid());
  CHECK(result.errors[0].instance_path == "/199999");
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

TEST_CASE("a $ref into an array by an index past 64 bits is a compile error at the $ref") {
  // 2^64 and a twenty-digit number: std::stoul threw out of compile_schema.
  for (const char* index : {"18446744073709551616", "99999999999999999999999"}) {
    CAPTURE(index);
    json schema = {{"$defs", {{"list", json::array({{{"type", "string"}}})}}},
                   {"properties", {{"a", {{"$ref", std::string{"#/$defs/list/"} + index}}}}}};
    auto compiled = compile_schema(schema, schema_draft::draft2020_12);
    REQUIRE_FALSE(compiled.is_ok());
    CHECK(compiled.error().code() == voxos::errc::config_invalid);
    CHECK(compiled.error().message().find("/properties/a/$ref") != std::string::npos);
    CHECK(compiled.error().message().find("cannot be resolved") != std::string::npos);
  }
  // The index that exists still resolves.
  json within = {{"$defs", {{"list", json::array({{{"type", "string"}}})}}},
                 {"properties", {{"a", {{"$ref", "#/$defs/list/0"}}}}}};
  CHECK(compile_schema(within, schema_draft::draft2020_12).is_ok());
}

TEST_CASE("a pattern matched by std::regex takes polynomial time on a text it backtracks over") {
  // (a+)+$ is exponential for a backtracking matcher on a's followed by a
  // mismatch (2^40 paths here); the breadth-first one answers at once.
  auto nested = compile_ok(json{{"pattern", "^(a+)+$"}});
  CHECK_FALSE(validate(nested, json(std::string(40, 'a') + "!")).is_valid());
  CHECK(validate(nested, json(std::string(40, 'a'))).is_valid());
  // (back-references, which need backtracking, are refused when compiled: below)
}

TEST_CASE("a std::regex pattern is matched in one pass, and its work is bounded") {
  // Found anywhere in the text, as a search finds it; `^` and `$` still
  // assert the text's ends, also beside an alternation.
  auto anywhere = compile_ok(json{{"pattern", "(?:x|y)z"}});
  CHECK(validate(anywhere, json("aaxzbb")).is_valid());
  CHECK_FALSE(validate(anywhere, json("aaxbzb")).is_valid());
  auto branches = compile_ok(json{{"pattern", "^(a|b)$|c"}});
  CHECK(validate(branches, json("zzc")).is_valid());
  CHECK(validate(branches, json("a")).is_valid());
  CHECK_FALSE(validate(branches, json("ab")).is_valid());
  // a lookahead reads `^`, `\b` and `\B` from where the text starts
  auto word = compile_ok(json{{"pattern", "(?=.*\\bfoo\\b)"}});
  CHECK_FALSE(validate(word, json("xfoo")).is_valid());
  CHECK(validate(word, json("x foo")).is_valid());
  CHECK(validate(compile_ok(json{{"pattern", "a(?!^)"}}), json("ba")).is_valid());
  CHECK_FALSE(validate(compile_ok(json{{"pattern", "(?=^a)"}}), json("ba")).is_valid());
  // and scans on from each position: its text's bound is squared
  auto ahead = compile_ok(json{{"pattern", "(?=.*z)"}});
  CHECK(validate(ahead, json(std::string(1000, 'a') + "z")).is_valid());
  auto ahead_long = validate(ahead, json(std::string(2000, 'a') + "z"));
  REQUIRE(ahead_long.errors.size() == 1);
  CHECK(ahead_long.errors[0].constraint.find("(bounded matching)") != std::string::npos);
  // (a stray parenthesis cannot close the wrapping group: still refused)
  for (const char* stray : {"a)(b", "a)|(b", "(a"}) {
    CAPTURE(stray);
    auto refused = compile_schema(json{{"pattern", stray}}, schema_draft::draft2020_12);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().message().find("invalid regular expression") != std::string::npos);
  }

  // A search restarting at each of 200,000 positions took minutes; one
  // pass answers.
  auto few_states = compile_ok(json{{"pattern", "(a|b)*c"}});
  std::string text(200'000, 'a');
  auto missing = validate(few_states, json(text + "!"));
  REQUIRE(missing.errors.size() == 1);
  CHECK(missing.errors[0].schema_path == "/pattern");
  CHECK(missing.errors[0].constraint.find("does not match") != std::string::npos);
  CHECK(validate(few_states, json(text + "c")).is_valid());

  // Thousands of states (std::regex copies the group 1,000 times), any of
  // which may be active at each step: a text past the work bound is refused
  // with its own error, naming the bound and not the text.
  auto many_states = compile_ok(json{{"pattern", "(a|b){1000}c"}});
  CHECK(validate(many_states, json(std::string(1000, 'a') + "c")).is_valid());
  CHECK_FALSE(validate(many_states, json(std::string(999, 'a') + "c")).is_valid());
  auto bounded = validate(many_states, json(std::string(8000, 'a') + "c"));
  REQUIRE(bounded.errors.size() == 1);
  CHECK(bounded.errors[0].schema_path == "/pattern");
  CHECK(bounded.errors[0].constraint.find("(bounded matching)") != std::string::npos);
  CHECK(bounded.errors[0].constraint.find("aaaa") == std::string::npos);
  // anchored too (a leading `^` does not keep the active states few)
  auto anchored = compile_ok(json{{"pattern", "^(a|b){1000}c"}});
  CHECK(validate(anchored, json(std::string(1000, 'a') + "c")).is_valid());
  auto anchored_long =
    validate(anchored, json(std::string(1000, 'a') + "c" + std::string(9000, 'a')));
  REQUIRE(anchored_long.errors.size() == 1);
  CHECK(anchored_long.errors[0].constraint.find("(bounded matching)") != std::string::npos);
  // a stacked quantifier repeats the repeated group: 90,000 copies here
  auto stacked =
    validate(compile_ok(json{{"pattern", "\\w{300}{300}"}}), json(std::string(1000, 'a')));
  REQUIRE(stacked.errors.size() == 1);
  CHECK(stacked.errors[0].constraint.find("(bounded matching)") != std::string::npos);

  // A member name past a patternProperties pattern's bound is refused, not
  // left unchecked (its subschema would never apply).
  auto named = compile_ok(json{{"patternProperties", {{"(x|y){1000}z", {{"type", "integer"}}}}}});
  CHECK(validate(named, json{{std::string(1000, 'x') + "z", 1}}).is_valid());
  auto wrong = validate(named, json{{std::string(1000, 'x') + "z", "one"}});
  REQUIRE(wrong.errors.size() == 1);
  CHECK(wrong.errors[0].schema_path == "/patternProperties/(x|y){1000}z/type");
  auto long_name = validate(named, json{{std::string(8000, 'x') + "z", "one"}});
  REQUIRE(long_name.errors.size() == 1);
  CHECK(long_name.errors[0].schema_path == "/patternProperties");
  CHECK(long_name.errors[0].constraint.find("(bounded matching)") != std::string::npos);
}

TEST_CASE("a length limit written as ^X{m,n}$ counts code points, whatever its bounds") {
  // past the simple subset's 63 positions: one atom and a count, no automaton
  // and no work bound
  auto any = compile_ok(json{{"pattern", "^.{0,5000}$"}});
  CHECK(validate(any, json(std::string(5000, 'x'))).is_valid());
  CHECK(validate(any, json("")).is_valid());
  CHECK_FALSE(validate(any, json(std::string(5001, 'x'))).is_valid());
  CHECK_FALSE(validate(any, json(std::string(10, 'x') + "\n")).is_valid()); // `.` is no line end
  std::string accented;
  for (int idx = 0; idx < 5000; ++idx)
    accented += "\u00e9"; // two bytes each: 5,000 code points
  CHECK(validate(any, json(accented)).is_valid());
  CHECK_FALSE(validate(any, json(accented + "\u00e9")).is_valid());

  auto slug = compile_ok(json{{"pattern", "^[A-Za-z0-9_-]{1,2048}$"}});
  CHECK(validate(slug, json(std::string(2048, 'x'))).is_valid());
  CHECK_FALSE(validate(slug, json(std::string(2049, 'x'))).is_valid());
  CHECK_FALSE(validate(slug, json(std::string(100, 'x') + "!")).is_valid());
  CHECK_FALSE(validate(slug, json("")).is_valid());

  auto at_least = compile_ok(json{{"pattern", "^[a-z]{100000,}$"}});
  CHECK(validate(at_least, json(std::string(100000, 'a'))).is_valid());
  CHECK_FALSE(validate(at_least, json(std::string(99999, 'a'))).is_valid());
  auto errors = validate(at_least, json(std::string(99999, 'a')));
  REQUIRE(errors.errors.size() == 1);
  CHECK(errors.errors[0].constraint.find("does not match") != std::string::npos);
}

TEST_CASE("a pattern with a backreference is refused when compiled, however long its number") {
  // Back-references need backtracking. (std::regex's parser overflowed
  // reading a long one, found by the fuzzer.)
  std::string long_number = "(?=.*\\" + std::string(90, '6') + "b)";
  for (const std::string& pattern : {std::string{"(a)\\1"}, std::string{"(a)[\\1]"}, long_number}) {
    CAPTURE(pattern);
    auto refused = compile_schema(json{{"pattern", pattern}}, schema_draft::draft2020_12);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().message().find("backreference") != std::string::npos);
  }
  // \0 is the NUL character, not a backreference
  CHECK(compile_schema(json{{"pattern", "(a)\\0"}}, schema_draft::draft2020_12).is_ok());
}

TEST_CASE("a pattern std::regex would expand past the repetition bound is refused when compiled") {
  // (a group keeps these patterns out of the simple subset)
  for (const char* pattern :
       {"^(ab){2,100001}$", "(x|y){5555555555555555555555}", "(a)?b{100001}"}) {
    CAPTURE(pattern);
    auto refused = compile_schema(json{{"pattern", pattern}}, schema_draft::draft2020_12);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().message().find("repetition bound over 100000") != std::string::npos);
  }
  // (common length limits, `^X{m,n}$`, are counted, not expanded: below)
  auto bounded = compile_ok(json{{"pattern", "^(ab){2,1000}$"}});
  CHECK(validate(bounded, json("ababab")).is_valid());
  CHECK_FALSE(validate(bounded, json("ab")).is_valid());
  // nested repetitions multiply: past std::regex's automaton limit, refused
  CHECK_FALSE(
    compile_schema(json{{"pattern", "(((ab){1000}){1000}){1000}"}}, schema_draft::draft2020_12)
      .is_ok());
  // braces in a class, or escaped, are not repetitions
  CHECK(
    validate(compile_ok(json{{"pattern", "^(a)[{9999}]\\{9999}$"}}), json("a}{9999}")).is_valid());
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

namespace {

/// A parsed simdjson document kept alive with its parser.
struct parsed_document {
  simdjson::dom::parser parser;
  simdjson::dom::document root;

  explicit parsed_document(const std::string& text) {
    REQUIRE(parser.parse_into_document(root, text).error() == simdjson::SUCCESS);
  }
};

} // namespace

TEST_CASE("schema validation of JSON text and of a parsed document agree") {
  auto schema = compile_ok(tool_schema);
  const std::string valid = R"({"city": "rome", "days": 3, "units": "x"})";
  const std::string invalid = R"({"city": "rome", "days": 3.5, "extra": 1})";
  // tool_schema forbids "units" (required but not a property): use a looser copy
  json loose = tool_schema;
  loose.erase("additionalProperties");
  auto loose_schema = compile_ok(loose);

  simdjson::dom::parser parser;
  CHECK(voxos::validate_json_text(loose_schema, valid, parser).is_valid());
  CHECK(voxos::validate_json_text(loose_schema, valid).is_valid());
  parsed_document doc{valid};
  CHECK(voxos::is_valid(loose_schema, doc.root));
  CHECK(validate(loose_schema, doc.root).is_valid());

  // (The nlohmann entry is the text entry over the document's dump: comparing
  // those would compare a path with itself; the parsed document is the other
  // entry.)
  auto from_text = voxos::validate_json_text(schema, invalid, parser);
  parsed_document bad{invalid};
  auto from_dom = validate(schema, bad.root);
  REQUIRE_FALSE(from_text.is_valid());
  REQUIRE(from_text.errors.size() == from_dom.errors.size());
  for (size_t error_idx = 0; error_idx < from_text.errors.size(); ++error_idx) {
    CHECK(from_text.errors[error_idx].instance_path == from_dom.errors[error_idx].instance_path);
    CHECK(from_text.errors[error_idx].schema_path == from_dom.errors[error_idx].schema_path);
    CHECK(from_text.errors[error_idx].constraint == from_dom.errors[error_idx].constraint);
  }
  CHECK_FALSE(voxos::is_valid(schema, bad.root));
}

TEST_CASE("schema validation of text that is not JSON names the parse failure, never the text") {
  auto schema = compile_ok(tool_schema);
  for (const std::string& text :
       {std::string(R"({"city": "secret-value-123")"), std::string("secret-value-123"),
        std::string(""), std::string(R"({"city": "secret-value-123"} trailing)")}) {
    auto result = voxos::validate_json_text(schema, text);
    REQUIRE(result.errors.size() == 1);
    CHECK(result.errors[0].instance_path.empty());
    CHECK(result.errors[0].schema_path.empty());
    CHECK(result.errors[0].constraint.find("not valid JSON") != std::string::npos);
    CHECK(result.errors[0].constraint.find("secret") == std::string::npos);
  }
}

TEST_CASE("schema validation refuses 100,000 nested arrays as too deep instead of crashing") {
  auto schema = compile_ok(json::parse(R"({"items": {"$ref": "#"}})"));
  std::string text = std::string(100000, '[') + std::string(100000, ']');
  auto result = voxos::validate_json_text(schema, text);
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].constraint.find("not valid JSON") != std::string::npos);
  // within simdjson's depth limit the recursive schema itself is bounded
  std::string deep = std::string(1000, '[') + std::string(1000, ']');
  auto bounded = voxos::validate_json_text(schema, deep);
  REQUIRE_FALSE(bounded.is_valid());
  CHECK(all_text(bounded).find("maximum depth of 256") != std::string::npos);
}

TEST_CASE("schema validation of a 50 MB argument string checks its length and pattern") {
  auto schema = compile_ok(json::parse(R"({
    "properties": {"short": {"maxLength": 100}, "letters": {"type": "string", "pattern": "^a*$"}}
  })"));
  std::string big(50u << 20, 'a');
  auto long_text = voxos::validate_json_text(schema, R"({"short": ")" + big + R"("})");
  REQUIRE(long_text.errors.size() == 1);
  CHECK(long_text.errors[0].instance_path == "/short");
  CHECK(long_text.errors[0].schema_path == "/properties/short/maxLength");
  CHECK(long_text.errors[0].constraint.size() < 100);
  CHECK(voxos::validate_json_text(schema, R"({"letters": ")" + big + R"("})").is_valid());
  big.back() = 'b';
  CHECK_FALSE(voxos::validate_json_text(schema, R"({"letters": ")" + big + R"("})").is_valid());
}

TEST_CASE("schema patterns recognised at compile time match as std::regex does on ASCII") {
  const std::vector<std::string> patterns = {"^[A-Z]{2}-[0-9]{4}$",
                                             "^[0-9A-Z -]{3,10}$",
                                             "a+b",
                                             "^a*$",
                                             "x?y{2,}",
                                             "[^abc]",
                                             "\\d+\\.\\d*",
                                             "^\\w+@\\w+\\.com$",
                                             "colou?r",
                                             ".",
                                             "^.$",
                                             "[a-]",
                                             "[-z]+$",
                                             "\\/",
                                             "a{0}b",
                                             "^$",
                                             "",
                                             "^[^\\d]+$",
                                             "a.c",
                                             "^ab|cd$",
                                             "^\\s*$",
                                             "[\\d.]{2,3}",
                                             "^x{2}y{0,2}$",
                                             "b*?c",
                                             "\\W\\D"};
  const std::vector<std::string> inputs = {
    "",        "a",     "AB-1234", "ab-1234", "AB-12345", "123 AB", "colour", "color", "xyy",
    "x@y.com", "a\nc",  "abc",     "d",       "-",        "/",      "3.14",   "...",   "xx",
    "xxyy",    "xxyyy", "  ",      "b",       "bbc",      "cd",     "ab",     "!?",    "zz-"};
  for (const auto& pattern : patterns) {
    auto schema = compile_ok(json{{"pattern", pattern}});
    std::regex reference(pattern, std::regex::ECMAScript);
    for (const auto& input : inputs) {
      INFO("pattern " << pattern << " on '" << input << "'");
      CHECK(validate(schema, json(input)).is_valid() == std::regex_search(input, reference));
    }
  }
  // over code points, as ECMAScript: one character, however many bytes
  auto one_char = compile_ok(json{{"pattern", "^.$"}});
  CHECK(validate(one_char, json("\u00e9")).is_valid());
  CHECK(validate(compile_ok(json{{"pattern", "^[^a]$"}}), json("\u00e9")).is_valid());
  CHECK_FALSE(validate(compile_ok(json{{"pattern", "^\\w$"}}), json("\u00e9")).is_valid());
}

TEST_CASE("schema patterns match Unicode General Categories with \\p{...} and \\P{...}") {
  auto letters = compile_ok(json{{"type", "string"}, {"pattern", "^\\p{Letter}+$"}});
  CHECK(validate(letters, json("Hello")).is_valid());
  CHECK(validate(letters, json("\u03c0\u0416\u4e2d")).is_valid()); // Greek, Cyrillic, Han
  CHECK_FALSE(validate(letters, json("abc1")).is_valid());
  auto not_digits = compile_ok(json{{"pattern", "^\\P{gc=Nd}*$"}});
  CHECK(validate(not_digits, json("x\u00e9")).is_valid());
  CHECK_FALSE(validate(not_digits, json("x\u0663")).is_valid()); // ARABIC-INDIC DIGIT THREE
  auto upper_then_mark = compile_ok(json{{"pattern", "^\\p{Lu}\\p{General_Category=Mn}$"}});
  CHECK(validate(upper_then_mark, json("E\u0301")).is_valid()); // E, COMBINING ACUTE ACCENT
  CHECK_FALSE(validate(upper_then_mark, json("e\u0301")).is_valid());
  // Outside what is recognised: refused when compiled, not misread as 'p'.
  for (const char* pattern : {"[\\p{L}]", "^\\p{Script=Greek}$", "^\\p{Alphabetic}$"}) {
    CAPTURE(pattern);
    auto refused = compile_schema(json{{"pattern", pattern}}, schema_draft::draft2020_12);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().code() == voxos::errc::config_invalid);
  }
}

TEST_CASE("schema with more than 64 property names keeps lookups and required names exact") {
  json properties = json::object();
  for (int prop_idx = 0; prop_idx < 70; ++prop_idx)
    properties["p" + std::to_string(prop_idx)] = {{"type", "integer"}};
  auto schema = compile_ok(
    {{"properties", properties}, {"required", {"p69", "p0"}}, {"additionalProperties", false}});
  json all = json::object();
  for (int prop_idx = 0; prop_idx < 70; ++prop_idx)
    all["p" + std::to_string(prop_idx)] = prop_idx;
  CHECK(validate(schema, all).is_valid());

  json missing = all;
  missing.erase("p69");
  missing["p5"] = "five";
  missing["q"] = 1;
  auto result = validate(schema, missing);
  std::string text = all_text(result);
  CHECK(result.errors.size() == 3);
  CHECK(text.find("required property 'p69' is missing") != std::string::npos);
  CHECK(text.find("/p5 | /properties/p5/type") != std::string::npos);
  CHECK(text.find("/q | /additionalProperties") != std::string::npos);
}

TEST_CASE("schema property names are told apart by every byte, whatever their lookup table") {
  // Names alike in their first and last 8 bytes and their size (which pick
  // a slot): only the bytes between tell them apart. With two such names no
  // table gives each its own slot; with one, a key alike in those bytes
  // lands in its slot.
  const std::string left = "prefix__AAAAAAAA__suffix";
  const std::string right = "prefix__BBBBBBBB__suffix";
  const std::string stranger = "prefix__CCCCCCCC__suffix";
  for (bool both : {true, false}) {
    CAPTURE(both);
    json properties = {{left, {{"type", "integer"}}},
                       {"", {{"type", "string"}}},
                       {"id", {{"type", "string"}}},
                       {"id_of_a_longer_name", {{"type", "integer"}}}};
    if (both)
      properties[right] = {{"type", "boolean"}};
    auto schema = compile_ok({{"properties", properties}, {"additionalProperties", false}});
    json good = {{left, 1}, {"", "empty name"}, {"id", "x"}, {"id_of_a_longer_name", 2}};
    if (both)
      good[right] = true;
    CHECK(validate(schema, good).is_valid());

    auto stray = validate(schema, json{{stranger, 1}});
    REQUIRE(stray.errors.size() == 1);
    CHECK(stray.errors[0].instance_path == "/" + stranger);
    CHECK(stray.errors[0].schema_path == "/additionalProperties");
    // each name keeps its own subschema
    auto wrong = validate(schema, json{{left, "no"}, {"", 0}, {"id_of_a_longer_nam", 1}, {"i", 1}});
    std::string text = all_text(wrong);
    CHECK(text.find("/" + left + " | /properties/" + left + "/type") != std::string::npos);
    CHECK(text.find(" | /properties//type") != std::string::npos);
    CHECK(text.find("/id_of_a_longer_nam | /additionalProperties") != std::string::npos);
    CHECK(text.find("/i | /additionalProperties") != std::string::npos);
    CHECK(wrong.errors.size() == 4);
  }
}

TEST_CASE("schema string enums of many values find each value exactly") {
  json values = json::array();
  for (int value_idx = 0; value_idx < 40; ++value_idx)
    values.push_back("value-" + std::to_string(value_idx));
  auto schema = compile_ok({{"enum", values}});
  for (const auto& value : values)
    CHECK(validate(schema, value).is_valid());
  CHECK_FALSE(validate(schema, "value-40").is_valid());
  CHECK_FALSE(validate(schema, "value-").is_valid());
  CHECK_FALSE(validate(schema, "").is_valid());
}

TEST_CASE("schema unevaluatedProperties tracks objects past 128 members") {
  auto schema = compile_ok(json::parse(R"({
    "allOf": [{"patternProperties": {"^p": true}}],
    "unevaluatedProperties": false
  })"));
  json wide = json::object();
  for (int member_idx = 0; member_idx < 200; ++member_idx)
    wide["p" + std::to_string(member_idx)] = member_idx;
  CHECK(validate(schema, wide).is_valid());
  wide["q"] = 1;
  auto result = validate(schema, wide);
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].instance_path == "/q");
}

TEST_CASE("schema propertyNames checks every member name") {
  auto schema =
    compile_ok(json::parse(R"({"propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3}})"));
  CHECK(validate(schema, json{{"ab", 1}, {"xyz", 2}}).is_valid());
  auto result = validate(schema, json{{"ab", 1}, {"aB", 2}, {"abcd", 3}});
  REQUIRE(result.errors.size() == 2);
  CHECK(result.errors[0].instance_path == "/aB");
  CHECK(result.errors[0].schema_path == "/propertyNames");
  CHECK(result.errors[1].instance_path == "/abcd");
}

TEST_CASE("schema validation with max_errors 1 stops at the first error of the full list") {
  auto schema = compile_ok(tool_schema);
  const std::string text =
    R"({"city": "secret-value-123", "days": 99.5, "tags": ["a", "a"], "extra": 1})";
  auto every = voxos::validate_json_text(schema, text);
  REQUIRE(every.errors.size() > 3);
  simdjson::dom::parser parser;
  auto first = voxos::validate_json_text(schema, text, parser, 1);
  REQUIRE(first.errors.size() == 1);
  CHECK(first.errors[0].instance_path == every.errors[0].instance_path);
  CHECK(first.errors[0].schema_path == every.errors[0].schema_path);
  CHECK(first.errors[0].constraint == every.errors[0].constraint);
  parsed_document doc{text};
  CHECK(validate(schema, doc.root, 3).errors.size() == 3);
  CHECK(validate(schema, doc.root, 0).errors.size() == 1);
  CHECK(validate(schema, doc.root).errors.size() == every.errors.size());
}

TEST_CASE("the first error alone is a later declared member's when unevaluatedProperties refuses "
          "an earlier one") {
  // The collecting pass lists unevaluated members after every other
  // keyword; the boolean pass meets "zz" first and must not name it.
  auto schema = compile_ok(
    json::parse(R"({"properties": {"a": {"type": "integer"}}, "unevaluatedProperties": false})"));
  auto first = voxos::validate_json_text(schema, R"({"zz": 1, "a": "x"})", 1);
  REQUIRE(first.errors.size() == 1);
  CHECK(first.errors[0].instance_path == "/a");
  CHECK(first.errors[0].schema_path == "/properties/a/type");
  auto alone = voxos::validate_json_text(schema, R"({"zz": 1, "a": 2})", 1);
  REQUIRE(alone.errors.size() == 1);
  CHECK(alone.errors[0].instance_path == "/zz");
  CHECK(alone.errors[0].schema_path == "/unevaluatedProperties");
  // An unevaluatedProperties schema that fails inside: the error is the
  // keyword's, listed after required.
  auto inner = compile_ok(json::parse(
    R"({"properties": {"a": {}}, "required": ["a"],
        "unevaluatedProperties": {"type": "object", "required": ["x"]}})"));
  for (const char* text : {R"({"b": {}})", R"({"a": 1, "b": {}})"}) {
    CAPTURE(text);
    auto every = voxos::validate_json_text(inner, text);
    auto first = voxos::validate_json_text(inner, text, 1);
    REQUIRE(first.errors.size() == 1);
    CHECK(first.errors[0].instance_path == every.errors[0].instance_path);
    CHECK(first.errors[0].schema_path == every.errors[0].schema_path);
  }
}

TEST_CASE("schema validation of text takes 1.0 as an integer and refuses numbers past 64 bits") {
  auto schema = compile_ok(json::parse(R"({"type": "integer", "multipleOf": 0.5})"));
  CHECK(voxos::validate_json_text(schema, "1.0").is_valid());
  CHECK(voxos::validate_json_text(schema, "-9223372036854775808").is_valid());
  CHECK(voxos::validate_json_text(schema, "18446744073709551615").is_valid());
  CHECK_FALSE(voxos::validate_json_text(schema, "1.5").is_valid());
  auto big = voxos::validate_json_text(schema, "18446744073709551616");
  REQUIRE(big.errors.size() == 1);
  CHECK(big.errors[0].constraint.find("not valid JSON") != std::string::npos);
}

TEST_CASE("a minLength too large to multiply still refuses a short string, in both passes") {
  auto schema = compile_ok(json{{"type", "string"}, {"minLength", 4611686018427387904ull}});
  // validate runs the boolean pass, then (on failure) the collecting one
  auto result = validate(schema, json("abc"));
  REQUIRE(result.errors.size() == 1);
  CHECK(result.errors[0].schema_path == "/minLength");
}

TEST_CASE(
  "a length or count bound written as a float past 64 bits is a bound no instance reaches") {
  auto at_least = compile_ok(json::parse(R"({"minLength": 2.6e64, "minItems": 1e30})"));
  auto refused = validate(at_least, json("abc"));
  REQUIRE(refused.errors.size() == 1);
  CHECK(refused.errors[0].schema_path == "/minLength");
  CHECK_FALSE(validate(at_least, json::array({1, 2})).is_valid());
  auto at_most = compile_ok(json::parse(R"({"maxLength": 2.6e64, "maxProperties": 1e300})"));
  CHECK(validate(at_most, json("abc")).is_valid());
  CHECK(validate(at_most, json{{"a", 1}}).is_valid());
}

TEST_CASE("schema errors stay readable after the compiled schema that wrote them is gone") {
  voxos::validation_result result;
  {
    auto schema = compile_ok(json::parse(R"({
      "type": "object",
      "properties": {"when": {"type": "string"},
                     "dates": {"type": "array", "items": {"type": "string", "minLength": 10}}},
      "required": ["when", "where"],
      "dependentRequired": {"when": ["zone"]},
      "additionalProperties": false
    })"));
    result = voxos::validate_json_text(schema, R"({"when": 1, "dates": ["2026"], "x": 0})");
  } // the schema's store is released here unless the result keeps it
  std::vector<std::string> listed;
  for (const auto& error : result.errors)
    listed.push_back(error.instance_path + " " + std::string(error.schema_path) + " "
                     + std::string(error.constraint));
  // members in order, then required, then dependentRequired, as `check` lists them
  CHECK(listed
        == std::vector<std::string>{
          "/when /properties/when/type expected type string",
          "/dates/0 /properties/dates/items/minLength string is shorter than 10 characters",
          "/x /additionalProperties additional property is not allowed",
          " /required required property 'where' is missing",
          " /dependentRequired/when property 'zone' is required when 'when' is present"});
}
