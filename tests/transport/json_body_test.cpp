#include "transport/json_body.hpp"

#include <doctest/doctest.h>

#include <string>

using voxos::errc;
using voxos::field_spec;
using voxos::json_kind;
using voxos::parse_json_object;

namespace {

/// The fields of a typical entry point: one of each kind.
voxos::result<nlohmann::json> parse_run(std::string_view body) {
  return parse_json_object(body, {
                                   {"name", json_kind::string, true, 16},
                                   {"count", json_kind::integer},
                                   {"dry_run", json_kind::boolean},
                                   {"labels", json_kind::object},
                                   {"tags", json_kind::array, false, 3},
                                 });
}

/// The code and message of a failed parse.
std::pair<errc, std::string> failure_of(const voxos::result<nlohmann::json>& parsed) {
  REQUIRE_FALSE(parsed.is_ok());
  return {parsed.error().code(), parsed.error().message()};
}

} // namespace

TEST_CASE("a valid object with every kind of field is returned whole") {
  auto parsed =
    parse_run(R"({"name":"wave","count":3,"dry_run":true,"labels":{"a":"b"},"tags":["x","y"]})");
  REQUIRE(parsed.is_ok());
  CHECK(parsed->at("name") == "wave");
  CHECK(parsed->at("count") == 3);
  CHECK(parsed->at("dry_run") == true);
  CHECK(parsed->at("labels").at("a") == "b");
  CHECK(parsed->at("tags").size() == 2);
}

TEST_CASE("optional fields may be absent") {
  auto parsed = parse_run(R"({"name":"wave"})");
  REQUIRE(parsed.is_ok());
  CHECK(parsed->size() == 1);
}

TEST_CASE("an unknown field is refused and named") {
  auto [code, message] = failure_of(parse_run(R"({"name":"wave","tenant_id":"t-9"})"));
  CHECK(code == errc::unknown_field);
  CHECK(message == "unknown field 'tenant_id'");
}

TEST_CASE("a hostile unknown field name is shortened and defanged in the message") {
  // The key decodes to "k", NUL, "k", LF and 500 more "k".
  auto key = std::string{"k\\u0000k\\n"} + std::string(500, 'k');
  auto [code, message] = failure_of(parse_run("{\"" + key + "\":1}"));
  CHECK(code == errc::unknown_field);
  CHECK(message.size() < 100);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(message.find('\0') == std::string::npos);
  CHECK(message.find("...") != std::string::npos);
}

TEST_CASE("a missing required field is named") {
  auto [code, message] = failure_of(parse_run(R"({"count":1})"));
  CHECK(code == errc::missing_field);
  CHECK(message == "missing field 'name'");
}

TEST_CASE("a wrong type is refused for each kind and names the expected kind") {
  struct wrong_case {
    std::string body;
    std::string message;
  };
  const wrong_case cases[] = {
    {R"({"name":7})", "field 'name': expected a string"},
    {R"({"name":"w","count":"3"})", "field 'count': expected an integer"},
    {R"({"name":"w","count":1.0})", "field 'count': expected an integer"},
    {R"({"name":"w","dry_run":"true"})", "field 'dry_run': expected a boolean"},
    {R"({"name":"w","dry_run":1})", "field 'dry_run': expected a boolean"},
    {R"({"name":"w","labels":[]})", "field 'labels': expected an object"},
    {R"({"name":"w","tags":{}})", "field 'tags': expected an array"},
    {R"({"name":"w","tags":null})", "field 'tags': expected an array"},
  };
  for (const auto& wrong : cases) {
    CAPTURE(wrong.body);
    auto [code, message] = failure_of(parse_run(wrong.body));
    CHECK(code == errc::wrong_type);
    CHECK(message == wrong.message);
  }
}

TEST_CASE("a string longer than its bound in bytes is refused as out_of_range") {
  // 16 bytes (8 two-byte characters) fit; 17 bytes do not.
  CHECK(parse_run(R"({"name":"éééééééé"})").is_ok());
  auto [code, message] = failure_of(parse_run(R"({"name":"éééééééé!"})"));
  CHECK(code == errc::out_of_range);
  CHECK(message == "field 'name': longer than 16 bytes");
}

TEST_CASE("an array with more elements than its bound is refused as out_of_range") {
  CHECK(parse_run(R"({"name":"w","tags":[1,2,3]})").is_ok());
  auto [code, message] = failure_of(parse_run(R"({"name":"w","tags":[1,2,3,4]})"));
  CHECK(code == errc::out_of_range);
  CHECK(message == "field 'tags': more than 3 elements");
}

TEST_CASE("control characters in a string field are refused but tab and line breaks are not") {
  CHECK(parse_run(R"({"name":"a\tb\nc\rd"})").is_ok());
  for (const char* escaped : {"\\u0000", "\\u0001", "\\u001b", "\\u007f", "\\u0085"}) {
    CAPTURE(escaped);
    auto [code, message] = failure_of(parse_run(std::string{R"({"name":"a)"} + escaped + R"("})"));
    CHECK(code == errc::out_of_range);
    CHECK(message == "field 'name': contains control characters");
  }
}

TEST_CASE("a raw control character or ill-formed UTF-8 is not valid JSON") {
  CHECK(failure_of(parse_run(std::string{"{\"name\":\"a\x01\"}"})).first == errc::bad_json);
  CHECK(failure_of(parse_run(std::string{"{\"name\":\"a\xC3\"}"})).first == errc::bad_json);
  CHECK(failure_of(parse_run(std::string{"{\"name\":\"\xED\xA0\x80\"}"})).first == errc::bad_json);
  CHECK(failure_of(parse_run(R"({"name":"\ud800"})")).first == errc::bad_json);
}

TEST_CASE("a body that is not JSON is refused without echoing it") {
  auto [code, message] = failure_of(parse_run(R"({"name":"secret-value-42")"));
  CHECK(code == errc::bad_json);
  CHECK(message == "body is not valid JSON");
  CHECK(message.find("secret") == std::string::npos);
}

TEST_CASE("rejected values never appear in messages") {
  for (std::string body :
       {R"({"name":"secret-value-42-is-too-long"})", R"({"name":"w","count":"secret-value"})",
        R"({"name":"secret\u0001value"})"}) {
    CAPTURE(body);
    CHECK(failure_of(parse_run(body)).second.find("secret") == std::string::npos);
  }
}

TEST_CASE("a JSON value that is not an object is refused as bad_json") {
  for (std::string body : {"[]", "\"name\"", "42", "null", "true"}) {
    CAPTURE(body);
    auto [code, message] = failure_of(parse_run(body));
    CHECK(code == errc::bad_json);
    CHECK(message == "body must be a JSON object");
  }
}

TEST_CASE("a key repeated in any object is refused as bad_json") {
  auto [code, message] = failure_of(parse_run(R"({"name":"a","name":"b"})"));
  CHECK(code == errc::bad_json);
  CHECK(message == "duplicate field 'name'");
  CHECK(failure_of(parse_run(R"({"name":"a","labels":{"k":1,"k":2}})")).first == errc::bad_json);
  // The same key in sibling objects is no repetition.
  CHECK(parse_json_object(R"({"list":[{"k":1},{"k":2}]})", {{"list", json_kind::array}}).is_ok());
}

TEST_CASE("200000 nested brackets are refused as bad_json without crashing") {
  auto [code, message] = failure_of(parse_run(std::string(200000, '[')));
  CHECK(code == errc::bad_json);
  CHECK(message == "body nests deeper than 64 levels");
  auto deep_object = std::string{R"({"labels":)"} + std::string(200000, '{');
  CHECK(failure_of(parse_run(deep_object)).first == errc::bad_json);
}

TEST_CASE("nesting of 64 levels is accepted and 65 refused with brackets in strings not counted") {
  auto nested = [](std::size_t depth) {
    // The body object is level 1; the "tags" array adds the rest.
    return std::string{R"({"name":"w","tags":)"} + std::string(depth - 1, '[')
           + std::string(depth - 1, ']') + "}";
  };
  auto accepts =
    parse_json_object(nested(64), {{"name", json_kind::string}, {"tags", json_kind::array}});
  CHECK(accepts.is_ok());
  auto refuses =
    parse_json_object(nested(65), {{"name", json_kind::string}, {"tags", json_kind::array}});
  CHECK_FALSE(refuses.is_ok());
  auto bracket_text = std::string{R"({"name":")"} + std::string(1000, '[') + R"(\"[{"})";
  CHECK(parse_json_object(bracket_text, {{"name", json_kind::string, false, 2000}}).is_ok());
}

TEST_CASE("an empty body is {} when no field is required") {
  auto parsed = parse_json_object("", {{"name", json_kind::string}});
  REQUIRE(parsed.is_ok());
  CHECK(*parsed == nlohmann::json::object());
  CHECK(parse_json_object(" \r\n\t", {{"name", json_kind::string}}).is_ok());
  CHECK(parse_json_object("", {}).is_ok());
}

TEST_CASE("an empty body names the first missing required field") {
  auto [code, message] = failure_of(parse_run(""));
  CHECK(code == errc::missing_field);
  CHECK(message == "missing field 'name'");
}

TEST_CASE("an object with no declared fields accepts only {}") {
  CHECK(parse_json_object("{}", {}).is_ok());
  CHECK(failure_of(parse_json_object(R"({"a":1})", {})).first == errc::unknown_field);
}

TEST_CASE("a NUL byte anywhere in a body is not valid JSON, whatever follows it") {
  using namespace std::string_literals;
  for (const auto& body : {"{\"name\":\"x\"}\0{\"name\":\"y\"}"s, "{\"name\":\"x\"}\0garbage"s,
                           "{\"name\":\"x\"}\0"s, "\0{\"name\":\"x\"}"s, "{\"name\":\"x\0\"}"s}) {
    CAPTURE(body.size());
    auto parsed = parse_run(body);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.error().code() == errc::bad_json);
    CHECK(parsed.error().message().find("NUL") != std::string::npos);
  }
}

TEST_CASE("any byte after the value other than JSON whitespace is not valid JSON") {
  for (const char* body : {R"({"name":"x"} x)", R"({"name":"x"}{})", R"({"name":"x"},)"}) {
    CAPTURE(body);
    auto parsed = parse_run(body);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.error().code() == errc::bad_json);
  }
  CHECK(parse_run("{\"name\":\"x\"} \t\r\n").is_ok());
}

TEST_CASE("only the media type application/json with at most charset=utf-8 names JSON") {
  using voxos::is_json_media_type;
  for (const char* type : {"application/json", "APPLICATION/Json", " application/json ",
                           "application/json; charset=utf-8", "application/json;charset=UTF-8",
                           "application/json ;\tcharset=\"utf-8\""}) {
    CAPTURE(type);
    CHECK(is_json_media_type(type));
  }
  for (const char* type :
       {"", "application/jsonx", "application/json5", "application/json-patch+json",
        "application/json\tx", "application/json; charset=latin1", "application/json; x=y",
        "application/json; charset=utf-8; x=y", "application/json;", "text/json",
        "application/ json", "application/json charset=utf-8"}) {
    CAPTURE(type);
    CHECK_FALSE(is_json_media_type(type));
  }
}
