#include "transport/jsonrpc.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

using voxos::errc;
using voxos::jsonrpc_error_response;
using voxos::jsonrpc_id;
using voxos::jsonrpc_message;
using voxos::jsonrpc_notification;
using voxos::jsonrpc_request;
using voxos::jsonrpc_response;
using voxos::parse_jsonrpc;

namespace {

/// The message of kind `Kind` parsed from `text`; fails the test otherwise.
template <class Kind>
Kind parse_as(std::string_view text) {
  auto parsed = parse_jsonrpc(text);
  if (!parsed.is_ok())
    FAIL("refused: " << parsed.error().message());
  auto* kind = std::get_if<Kind>(&*parsed);
  REQUIRE(kind != nullptr);
  return std::move(*kind);
}

/// The refusal of `text`: always bad_json, and the message never repeats
/// the marker the refused texts carry.
std::string refusal_of(std::string_view text) {
  auto parsed = parse_jsonrpc(text);
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.error().code() == errc::bad_json);
  CHECK(parsed.error().message().find("MARKER") == std::string::npos);
  return parsed.error().message();
}

} // namespace

TEST_CASE("a response carries its id and the result text exactly as received") {
  auto response = parse_as<jsonrpc_response>(
    R"({"jsonrpc":"2.0","id":1,"result":{"b":1.50,"a":"\u00e9","c":[ 1 , 2 ]}})");
  CHECK(response.id == jsonrpc_id{int64_t{1}});
  CHECK(response.result == R"({"b":1.50,"a":"\u00e9","c":[ 1 , 2 ]})");
}

TEST_CASE("whitespace around members is not part of the raw text") {
  auto response = parse_as<jsonrpc_response>(
    " {\n \"result\" : \t{ } \r\n, \"id\" : 2 , \"jsonrpc\" : \"2.0\" }\n");
  CHECK(response.result == "{ }");
  CHECK(response.id == jsonrpc_id{int64_t{2}});
}

TEST_CASE("results of every JSON type are passed as raw text") {
  for (const char* result : {"42", "-1.5e-3", "\"text with \\\" quote\"", "null", "true", "false",
                             "[1,[2],{\"x\":[]}]", "{}", "[]"}) {
    CAPTURE(result);
    auto response = parse_as<jsonrpc_response>(std::string{R"({"jsonrpc":"2.0","id":3,"result":)"}
                                               + result + " }");
    CHECK(response.result == result);
  }
}

TEST_CASE("a string id and an integer id keep their kind") {
  auto by_string = parse_as<jsonrpc_response>(R"({"jsonrpc":"2.0","id":"1","result":{}})");
  auto by_number = parse_as<jsonrpc_response>(R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(by_string.id == jsonrpc_id{std::string{"1"}});
  CHECK(by_number.id == jsonrpc_id{int64_t{1}});
  CHECK(by_string.id != by_number.id);
  auto extreme =
    parse_as<jsonrpc_response>(R"({"jsonrpc":"2.0","id":-9223372036854775808,"result":{}})");
  CHECK(extreme.id == jsonrpc_id{std::numeric_limits<int64_t>::min()});
  auto escaped = parse_as<jsonrpc_response>(R"({"jsonrpc":"2.0","id":"a\"b\u00e9","result":{}})");
  CHECK(escaped.id == jsonrpc_id{std::string{"a\"b\xC3\xA9"}});
}

TEST_CASE("an error response carries code and message and raw data") {
  auto error = parse_as<jsonrpc_error_response>(
    R"({"jsonrpc":"2.0","id":"req-7","error":{"code":-32602,"message":"Invalid params","data":{"field": "name"}}})");
  REQUIRE(error.id.has_value());
  CHECK(*error.id == jsonrpc_id{std::string{"req-7"}});
  CHECK(error.code == -32602);
  CHECK(error.message == "Invalid params");
  CHECK(error.data == std::optional<std::string>{R"({"field": "name"})"});

  auto plain = parse_as<jsonrpc_error_response>(
    R"({"jsonrpc":"2.0","id":4,"error":{"message":"Internal error","code":-32603}})");
  CHECK_FALSE(plain.data.has_value());
}

TEST_CASE("an error response may have a null or absent id") {
  auto null_id = parse_as<jsonrpc_error_response>(
    R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})");
  CHECK_FALSE(null_id.id.has_value());
  auto no_id = parse_as<jsonrpc_error_response>(
    R"({"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}})");
  CHECK_FALSE(no_id.id.has_value());
}

TEST_CASE("a request from the server carries id and method and raw params") {
  auto request = parse_as<jsonrpc_request>(
    R"({"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"Name?"}})");
  CHECK(request.id == jsonrpc_id{std::string{"s-1"}});
  CHECK(request.method == "elicitation/create");
  CHECK(request.params == std::optional<std::string>{R"({"message":"Name?"})"});

  auto ping = parse_as<jsonrpc_request>(R"({"jsonrpc":"2.0","id":0,"method":"ping"})");
  CHECK(ping.id == jsonrpc_id{int64_t{0}});
  CHECK_FALSE(ping.params.has_value());

  auto positional =
    parse_as<jsonrpc_request>(R"({"jsonrpc":"2.0","id":5,"method":"m","params":[1,"two"]})");
  CHECK(positional.params == std::optional<std::string>{R"([1,"two"])"});
}

TEST_CASE("a notification has a method and no id") {
  auto progress = parse_as<jsonrpc_notification>(
    R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":50}})");
  CHECK(progress.method == "notifications/progress");
  CHECK(progress.params == std::optional<std::string>{R"({"progressToken":1,"progress":50})"});
  auto bare = parse_as<jsonrpc_notification>(
    R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
  CHECK_FALSE(bare.params.has_value());
}

TEST_CASE("unknown members are ignored and escaped member names are recognized") {
  auto response = parse_as<jsonrpc_response>(
    R"({"jsonrpc":"2.0","\u0069d":8,"extra":{"deep":[1,2,3]},"result":{"ok":true}})");
  CHECK(response.id == jsonrpc_id{int64_t{8}});
  CHECK(response.result == R"({"ok":true})");
}

TEST_CASE("a large result passes through as raw text unchanged") {
  std::string result = "{\"tools\":[";
  for (int tool_idx = 0; tool_idx < 25000; ++tool_idx) {
    if (tool_idx > 0)
      result += ",";
    result += "{\"name\":\"tool_" + std::to_string(tool_idx)
              + "\",\"description\":\"caf\\u00e9 \\\"quoted\\\" 1.0e+2\",\"weight\":"
              + std::to_string(tool_idx) + ".250,\"schema\":{\"type\":\"object\"}}";
  }
  result += "]}";
  REQUIRE(result.size() > 2 * 1024 * 1024);
  auto response =
    parse_as<jsonrpc_response>(R"({"jsonrpc":"2.0","id":"big","result":)" + result + "}");
  CHECK(response.result.size() == result.size());
  CHECK(response.result == result);
}

TEST_CASE("integers beyond 64 bits inside a result are kept as written") {
  auto response = parse_as<jsonrpc_response>(
    R"({"jsonrpc":"2.0","id":1,"result":{"big":123456789012345678901234567890,"x":1e300}})");
  CHECK(response.result == R"({"big":123456789012345678901234567890,"x":1e300})");
}

TEST_CASE("a number beyond the range of a double is refused") {
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":1,"result":{"MARKER":1e400}})")
        == "JSON-RPC message: a number is beyond the range of a double");
}

TEST_CASE("text that is not well-formed JSON is refused") {
  for (const char* text :
       {"", "   ", "MARKER", R"({"jsonrpc":"2.0","id":1,"result":)",
        R"({"jsonrpc":"2.0","id":1,"result":{}} MARKER)",
        R"({"jsonrpc":"2.0","id":1,"result":{"a":tru}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"MARKER":01}})",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xFF MARKER\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"MARKER\x01\"}",
        R"({"jsonrpc":"2.0","id":1,"result":123456789012345678901234567890,})"}) {
    CAPTURE(text);
    CHECK(refusal_of(text) == "JSON-RPC message: not well-formed JSON");
  }
}

TEST_CASE("nesting deeper than 1024 levels is refused") {
  std::string deep =
    R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(2000, '[') + std::string(2000, ']') + "}";
  CHECK(refusal_of(deep) == "JSON-RPC message: nested deeper than 1024 levels");
  std::string fine =
    R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(500, '[') + std::string(500, ']') + "}";
  CHECK(parse_as<jsonrpc_response>(fine).result.size() == 1000);
}

TEST_CASE("a batch is refused with its own message") {
  CHECK(refusal_of(R"([{"jsonrpc":"2.0","id":1,"result":{"MARKER":1}}])")
        == "JSON-RPC message: a batch (top-level array); MCP sends one message per text");
  CHECK(refusal_of("[123456789012345678901234567890]")
        == "JSON-RPC message: a batch (top-level array); MCP sends one message per text");
}

TEST_CASE("a value other than an object is refused") {
  for (const char* text : {R"("MARKER")", "42", "null", "true", "123456789012345678901234567890"}) {
    CAPTURE(text);
    CHECK(refusal_of(text) == "JSON-RPC message: not an object");
  }
}

TEST_CASE("a missing or wrong jsonrpc version is refused") {
  CHECK(refusal_of(R"({"id":1,"result":{"MARKER":1}})")
        == "JSON-RPC message: missing member 'jsonrpc'");
  for (const char* text :
       {R"({"jsonrpc":"1.0","id":1,"result":{}})", R"({"jsonrpc":2.0,"id":1,"result":{}})",
        R"({"jsonrpc":"2.0 ","id":1,"result":{}})", R"({"jsonrpc":null,"id":1,"result":{}})"}) {
    CAPTURE(text);
    CHECK(refusal_of(text) == "JSON-RPC message: member 'jsonrpc' must be the string \"2.0\"");
  }
}

TEST_CASE("result together with error is refused") {
  CHECK(
    refusal_of(R"({"jsonrpc":"2.0","id":1,"result":{"MARKER":1},"error":{"code":1,"message":"m"}})")
    == "JSON-RPC message: both 'result' and 'error'");
}

TEST_CASE("a message with neither method nor result nor error is refused") {
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":1,"MARKER":{}})")
        == "JSON-RPC message: none of 'method', 'result' and 'error'");
}

TEST_CASE("a method together with a result or an error is refused") {
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":1,"method":"MARKER","result":{}})")
        == "JSON-RPC message: 'method' together with 'result' or 'error'");
  CHECK(refusal_of(R"({"jsonrpc":"2.0","method":"MARKER","error":{"code":1,"message":"m"}})")
        == "JSON-RPC message: 'method' together with 'result' or 'error'");
}

TEST_CASE("an id of another type is refused and named") {
  auto with_id = [](const char* id) {
    return std::string{R"({"jsonrpc":"2.0","result":{"MARKER":1},"id":)"} + id + "}";
  };
  CHECK(refusal_of(with_id("1.5"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not a fractional number");
  CHECK(refusal_of(with_id("1.0"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not a fractional number");
  CHECK(refusal_of(with_id("1e2"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not a fractional number");
  CHECK(refusal_of(with_id("true"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not a boolean");
  CHECK(refusal_of(with_id("{}"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not an object");
  CHECK(refusal_of(with_id("[1]"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not an array");
  CHECK(refusal_of(with_id("null"))
        == "JSON-RPC message: member 'id' must be a string or an integer, not null");
  CHECK(refusal_of(with_id("9223372036854775808"))
        == "JSON-RPC message: member 'id' is an integer outside the 64-bit signed range");
  CHECK(refusal_of(with_id("123456789012345678901234567890")).find("member 'id'")
        != std::string::npos);
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":null,"method":"MARKER"})")
        == "JSON-RPC message: member 'id' must be a string or an integer, not null");
}

TEST_CASE("a response without an id is refused") {
  CHECK(refusal_of(R"({"jsonrpc":"2.0","result":{"MARKER":1}})")
        == "JSON-RPC message: missing member 'id' in a response");
}

TEST_CASE("a method that is not a string is refused") {
  for (const char* method : {"42", "null", "[\"MARKER\"]", "{\"MARKER\":1}"}) {
    CAPTURE(method);
    CHECK(refusal_of(std::string{R"({"jsonrpc":"2.0","id":1,"method":)"} + method + "}")
          == "JSON-RPC message: member 'method' must be a string");
  }
}

TEST_CASE("params that are not an object or an array are refused") {
  for (const char* params : {R"("MARKER")", "1", "null", "true"}) {
    CAPTURE(params);
    CHECK(refusal_of(std::string{R"({"jsonrpc":"2.0","method":"m","params":)"} + params + "}")
          == "JSON-RPC message: member 'params' must be an object or an array");
  }
}

TEST_CASE("a repeated member is refused even when spelled with escapes") {
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":1,"\u0069d":2,"result":{"MARKER":1}})")
        == "JSON-RPC message: member 'id' appears twice");
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":1,"result":{},"result":{"MARKER":1}})")
        == "JSON-RPC message: member 'result' appears twice");
  CHECK(refusal_of(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":"MARKER"}})")
        == "JSON-RPC message: member 'error.code' appears twice");
}

TEST_CASE("a malformed error member is refused") {
  auto with_error = [](const char* error) {
    return std::string{R"({"jsonrpc":"2.0","id":1,"error":)"} + error + "}";
  };
  CHECK(refusal_of(with_error(R"("MARKER")"))
        == "JSON-RPC message: member 'error' must be an object");
  CHECK(refusal_of(with_error(R"({"message":"MARKER"})"))
        == "JSON-RPC message: missing member 'error.code'");
  CHECK(refusal_of(with_error(R"({"code":-32000})"))
        == "JSON-RPC message: missing member 'error.message'");
  CHECK(refusal_of(with_error(R"({"code":-32000.5,"message":"MARKER"})"))
        == "JSON-RPC message: member 'error.code' must be an integer in the 64-bit signed range");
  CHECK(refusal_of(with_error(R"({"code":"-32000","message":"MARKER"})"))
        == "JSON-RPC message: member 'error.code' must be an integer in the 64-bit signed range");
  CHECK(refusal_of(with_error(R"({"code":1,"message":["MARKER"]})"))
        == "JSON-RPC message: member 'error.message' must be a string");
}

TEST_CASE("builders write compact messages in the usual member order") {
  auto request = voxos::make_jsonrpc_request(jsonrpc_id{int64_t{1}}, "tools/call",
                                             nlohmann::json{{"name", "weather"}});
  REQUIRE(request.is_ok());
  CHECK(*request
        == R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather"}})");

  auto ping = voxos::make_jsonrpc_request(jsonrpc_id{std::string{"1"}}, "ping", nullptr);
  REQUIRE(ping.is_ok());
  CHECK(*ping == R"({"jsonrpc":"2.0","id":"1","method":"ping"})");

  auto notification =
    voxos::make_jsonrpc_notification("notifications/initialized", nlohmann::json(nullptr));
  REQUIRE(notification.is_ok());
  CHECK(*notification == R"({"jsonrpc":"2.0","method":"notifications/initialized"})");

  auto cancelled =
    voxos::make_jsonrpc_notification("notifications/cancelled", nlohmann::json{{"requestId", 4}});
  REQUIRE(cancelled.is_ok());
  CHECK(*cancelled
        == R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}})");

  auto response =
    voxos::make_jsonrpc_response(jsonrpc_id{std::string{"s-1"}}, nlohmann::json::object());
  REQUIRE(response.is_ok());
  CHECK(*response == R"({"jsonrpc":"2.0","id":"s-1","result":{}})");

  auto error =
    voxos::make_jsonrpc_error_response(jsonrpc_id{int64_t{-2}}, -32601, "Method \"x\" not found");
  REQUIRE(error.is_ok());
  CHECK(
    *error
    == R"({"jsonrpc":"2.0","id":-2,"error":{"code":-32601,"message":"Method \"x\" not found"}})");

  auto anonymous = voxos::make_jsonrpc_error_response(std::nullopt, -32700, "Parse error");
  REQUIRE(anonymous.is_ok());
  CHECK(*anonymous
        == R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})");
}

TEST_CASE("built messages parse back to the same kind and id") {
  auto request = voxos::make_jsonrpc_request(jsonrpc_id{std::string{"7"}}, "tools/list",
                                             nlohmann::json::object());
  REQUIRE(request.is_ok());
  auto parsed = parse_as<jsonrpc_request>(*request);
  CHECK(parsed.id == jsonrpc_id{std::string{"7"}});
  CHECK(parsed.method == "tools/list");
  CHECK(parsed.params == std::optional<std::string>{"{}"});

  auto error = voxos::make_jsonrpc_error_response(jsonrpc_id{int64_t{7}}, 1, "m");
  REQUIRE(error.is_ok());
  auto parsed_error = parse_as<jsonrpc_error_response>(*error);
  CHECK(parsed_error.id == std::optional<jsonrpc_id>{int64_t{7}});
}

TEST_CASE("builders refuse scalar params and strings that are not UTF-8") {
  auto scalar = voxos::make_jsonrpc_request(jsonrpc_id{int64_t{1}}, "m", nlohmann::json(5));
  REQUIRE_FALSE(scalar.is_ok());
  CHECK(scalar.error().code() == errc::wrong_type);
  auto scalar_notification = voxos::make_jsonrpc_notification("m", nlohmann::json("x"));
  REQUIRE_FALSE(scalar_notification.is_ok());
  CHECK(scalar_notification.error().code() == errc::wrong_type);

  auto bad_method = voxos::make_jsonrpc_request(jsonrpc_id{int64_t{1}}, "\xFF", nullptr);
  REQUIRE_FALSE(bad_method.is_ok());
  CHECK(bad_method.error().code() == errc::bad_json);
  auto bad_result =
    voxos::make_jsonrpc_response(jsonrpc_id{int64_t{1}}, nlohmann::json{{"text", "\xC3"}});
  REQUIRE_FALSE(bad_result.is_ok());
  CHECK(bad_result.error().code() == errc::bad_json);
  auto bad_id = voxos::make_jsonrpc_response(jsonrpc_id{std::string{"\x80"}}, nullptr);
  REQUIRE_FALSE(bad_id.is_ok());
  CHECK(bad_id.error().code() == errc::bad_json);
}

TEST_CASE("a request built around a params text keeps the text as written") {
  auto call = voxos::make_jsonrpc_request_text(
    jsonrpc_id{int64_t{12}}, "tools/call",
    " {\"name\":\"echo\", \"arguments\":{\"n\":1.50,\"s\":\"\\u00e9\"}}\n");
  REQUIRE(call.is_ok());
  CHECK(
    *call
    == R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo", "arguments":{"n":1.50,"s":"\u00e9"}}})");
  auto parsed = parse_as<jsonrpc_request>(*call);
  CHECK(parsed.id == jsonrpc_id{int64_t{12}});

  auto ping = voxos::make_jsonrpc_request_text(jsonrpc_id{std::string{"a\"b"}}, "ping", "");
  REQUIRE(ping.is_ok());
  CHECK(*ping == R"({"jsonrpc":"2.0","id":"a\"b","method":"ping"})");
  // The same text as the document builder writes.
  auto built = voxos::make_jsonrpc_request(jsonrpc_id{int64_t{3}}, "tools/list",
                                           nlohmann::json{{"cursor", "c"}});
  auto texted =
    voxos::make_jsonrpc_request_text(jsonrpc_id{int64_t{3}}, "tools/list", R"({"cursor":"c"})");
  REQUIRE(built.is_ok());
  REQUIRE(texted.is_ok());
  CHECK(*built == *texted);
}

TEST_CASE("a params text that is not one JSON object is refused") {
  for (const char* params : {"[1]", "5", "\"x\"", "{", "{} {}", "{\"a\":1,}", "{\"s\":\"\xC3\"}",
                             "   ", "{\"a\":tru}"}) {
    auto built = voxos::make_jsonrpc_request_text(jsonrpc_id{int64_t{1}}, "m", params);
    REQUIRE_FALSE(built.is_ok());
    CHECK(built.error().code() == errc::wrong_type);
  }
  auto bad_method = voxos::make_jsonrpc_request_text(jsonrpc_id{int64_t{1}}, "\xFF", "{}");
  REQUIRE_FALSE(bad_method.is_ok());
  CHECK(bad_method.error().code() == errc::bad_json);
}
