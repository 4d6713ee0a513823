#include <doctest/doctest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_protocol.hpp"

using nlohmann::json;
using voxos::jsonrpc_request;

namespace {

json answer(const std::string& method, const std::string& params) {
  jsonrpc_request req{int64_t{7}, method, params};
  return json::parse(voxos::answer_server_request(req));
}

} // namespace

TEST_CASE("initialize asks for the newest revision and declares form elicitation only") {
  auto params = voxos::initialize_params("1.2.3");
  CHECK(params["protocolVersion"] == "2025-11-25");
  CHECK(params["clientInfo"]["name"] == "voxos");
  CHECK(params["clientInfo"]["version"] == "1.2.3");
  CHECK(params["capabilities"].contains("elicitation"));
  CHECK_FALSE(params["capabilities"].contains("sampling"));
  CHECK_FALSE(params["capabilities"].contains("roots"));
}

TEST_CASE("an initialize answer is read, and an unknown revision is refused") {
  auto hello = voxos::read_initialize_result(
    R"({"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},
        "serverInfo":{"name":"peer","version":"9"},"instructions":"be brief"})");
  REQUIRE(hello.is_ok());
  CHECK(hello->protocol_version == "2025-06-18");
  CHECK(hello->server_name == "peer");
  CHECK(hello->server_version == "9");
  CHECK(hello->tools_list_changed);
  CHECK(hello->instructions == "be brief");
  for (auto version : voxos::mcp_protocol_versions)
    CHECK(voxos::is_supported_protocol_version(version));
  auto future = voxos::read_initialize_result(R"({"protocolVersion":"2099-01-01"})");
  REQUIRE_FALSE(future.is_ok());
  CHECK(future.error().code() == voxos::errc::out_of_range);
  auto none = voxos::read_initialize_result(R"({"capabilities":{}})");
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.error().code() == voxos::errc::bad_json);
  CHECK(voxos::read_initialize_result("[1]").error().code() == voxos::errc::bad_json);
}

TEST_CASE("a server ping is answered with an empty result") {
  auto out = answer("ping", "");
  CHECK(out["id"] == 7);
  CHECK(out["result"] == json::object());
}

TEST_CASE("elicitation is accepted with exactly the schema's defaults") {
  auto out = answer("elicitation/create", R"({"message":"details?","requestedSchema":{
    "type":"object","properties":{
      "name":{"type":"string","default":"Ada"},
      "age":{"type":"integer","default":36},
      "vip":{"type":"boolean","default":false},
      "colour":{"type":"string","enum":["red","blue"],"default":"blue"},
      "note":{"type":"string"}}}})");
  CHECK(out["result"]["action"] == "accept");
  CHECK(out["result"]["content"]
        == json{{"name", "Ada"}, {"age", 36}, {"vip", false}, {"colour", "blue"}});
}

TEST_CASE("elicitation without defaults, or in URL mode, is declined") {
  CHECK(answer(
          "elicitation/create",
          R"({"requestedSchema":{"type":"object","properties":{"x":{"type":"string"}}}})")["result"]
                                                                                          ["action"]
        == "decline");
  CHECK(answer("elicitation/create",
               R"({"mode":"url","url":"https://example.com/x"})")["result"]["action"]
        == "decline");
  CHECK(answer("elicitation/create", "[1]")["error"]["code"] == -32602);
}

TEST_CASE("sampling, roots and unknown methods get method not found") {
  for (auto method : {"sampling/createMessage", "roots/list", "x/y"})
    CHECK(answer(method, "{}")["error"]["code"] == -32601);
}

TEST_CASE("the stateless revision puts its _meta first in every request's params") {
  auto meta_of = [](const std::string& params) {
    auto made = voxos::with_stateless_meta(params, "1.2.3");
    REQUIRE(made.is_ok());
    return json::parse(*made);
  };
  auto none = meta_of("");
  CHECK(none["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
  CHECK(none["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"].is_object());
  CHECK(none["_meta"]["io.modelcontextprotocol/clientInfo"]["version"] == "1.2.3");
  CHECK(none.size() == 1);
  CHECK(meta_of(" { } ").size() == 1);
  auto call = meta_of(R"({"name":"add","arguments":{"a":1}})");
  CHECK(call["name"] == "add");
  CHECK(call["arguments"]["a"] == 1);
  CHECK(call["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
  CHECK_FALSE(voxos::with_stateless_meta("[1]", "1").is_ok());
  CHECK_FALSE(voxos::with_stateless_meta("\"x\"", "1").is_ok());
}

TEST_CASE("the stateless revision names a call's tool, prompt or resource in Mcp-Name") {
  CHECK(voxos::stateless_name("tools/call", R"({"name":"add","arguments":{}})") == "add");
  CHECK(voxos::stateless_name("prompts/get", R"({"name":"greet"})") == "greet");
  CHECK(voxos::stateless_name("resources/read", R"({"uri":"file:///a"})") == "file:///a");
  CHECK(voxos::stateless_name("tools/list", R"({"cursor":"c"})").empty());
  CHECK(voxos::stateless_name("tools/call", "").empty());
}

TEST_CASE("an input_required result makes the retry's params: input responses and the state") {
  auto retry = [](const std::string& params, const std::string& result) {
    auto made = voxos::input_retry_params(params, result);
    REQUIRE_MESSAGE(made.is_ok(), made.error().message());
    REQUIRE(made->has_value());
    return json::parse(**made);
  };
  const std::string ask = R"({"message":"Confirm?","requestedSchema":{"type":"object",
    "properties":{"confirmed":{"type":"boolean","default":true}}}})";
  auto with_state = retry(
    R"({"name":"book","arguments":{"day":"mon"},"inputResponses":{"old":{}},"requestState":"x"})",
    R"({"resultType":"input_required","inputRequests":{"confirm":{"method":"elicitation/create",
      "params":)"
      + ask + R"(}},"requestState":"{\"nonce\":\"n1\",\"originalId\":3}"})");
  CHECK(with_state["name"] == "book");
  CHECK(with_state["arguments"] == json{{"day", "mon"}});
  // The latest answers only, by the server's keys; the state exactly as sent.
  CHECK(with_state["inputResponses"]
        == json{{"confirm", {{"action", "accept"}, {"content", {{"confirmed", true}}}}}});
  CHECK(with_state["requestState"] == "{\"nonce\":\"n1\",\"originalId\":3}");
  // No state from the server: none in the retry; no default to give: a decline.
  auto stateless = retry(R"({"name":"book","requestState":"stale"})",
                         R"({"resultType":"input_required","inputRequests":{"c":{
      "method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object",
      "properties":{"confirmed":{"type":"boolean"}}}}}}})");
  CHECK_FALSE(stateless.contains("requestState"));
  CHECK(stateless["inputResponses"]["c"] == json{{"action", "decline"}});
  CHECK(retry("", R"({"resultType":"input_required","inputRequests":{"c":{
      "method":"elicitation/create"}}})")["inputResponses"]["c"]["action"]
        == "decline");
}

TEST_CASE("a complete result needs no retry, whether it says so or not") {
  for (std::string result : {R"({"content":[]})", R"({"content":[],"resultType":"complete"})",
                             R"({"content":[{"type":"text","text":"input_required"}]})"}) {
    auto made = voxos::input_retry_params(R"({"name":"t"})", result);
    REQUIRE(made.is_ok());
    CHECK_FALSE(made->has_value());
  }
}

TEST_CASE("a malformed input_required result, or one asking for sampling, fails the request") {
  auto code_of = [](const std::string& result) {
    auto made = voxos::input_retry_params(R"({"name":"t"})", result);
    REQUIRE_FALSE(made.is_ok());
    return made.error().code();
  };
  CHECK(code_of(R"({"resultType":"input_required"})") == voxos::errc::bad_json);
  CHECK(code_of(R"({"resultType":"input_required","inputRequests":{}})") == voxos::errc::bad_json);
  CHECK(code_of(R"({"resultType":"input_required","inputRequests":{"a":{"params":{}}}})")
        == voxos::errc::bad_json);
  CHECK(code_of(R"({"resultType":"input_required","inputRequests":{"a":{
    "method":"elicitation/create"}},"requestState":7})")
        == voxos::errc::bad_json);
  CHECK(code_of(R"({"resultType":"input_required","inputRequests":{"a":{
    "method":"sampling/createMessage","params":{}}}})")
        == voxos::errc::rejected);
  CHECK(code_of(R"({"resultType":"input_required","inputRequests":{"a":{
    "method":"roots/list"}}})")
        == voxos::errc::rejected);
}

TEST_CASE("x-mcp-header marks name Mcp-Param headers, and invalid marks refuse the tool") {
  auto marks = voxos::param_headers_of(json::parse(R"({"type":"object","properties":{
    "region":{"type":"string","x-mcp-header":"Region"},
    "priority":{"type":"integer","x-mcp-header":"Priority"},
    "verbose":{"type":"boolean","x-mcp-header":"Verbose"},
    "query":{"type":"string"}}})"));
  REQUIRE(marks.is_ok());
  REQUIRE(marks->size() == 3);
  CHECK((*marks)[0].header.rfind("Mcp-Param-", 0) == 0);
  CHECK(voxos::param_headers_of(json::parse(R"({"type":"object"})"))->empty());
  auto refused = [](const std::string& props) {
    return !voxos::param_headers_of(json::parse(R"({"type":"object","properties":)" + props + "}"))
              .is_ok();
  };
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":""}})"));
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":"My Region"}})"));
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":"Region:Primary"}})"));
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":"R\u00e9gion"}})"));
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":"Region\t1"}})"));
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":7}})"));
  for (auto type : {"object", "array", "null", "number"})
    CHECK(refused(std::string{R"({"a":{"type":")"} + type + R"(","x-mcp-header":"A"}})"));
  CHECK(refused(R"({"a":{"x-mcp-header":"A"}})"));
  CHECK(refused(R"({"a":{"type":"string","x-mcp-header":"MyField"},
    "b":{"type":"string","x-mcp-header":"myfield"}})"));
}

TEST_CASE(
  "Mcp-Param values: numbers and booleans as text, unsafe strings in base64, nulls left out") {
  auto marks = voxos::param_headers_of(json::parse(R"({"type":"object","properties":{
    "a":{"type":"string","x-mcp-header":"A"},"b":{"type":"integer","x-mcp-header":"B"},
    "c":{"type":"boolean","x-mcp-header":"C"},"d":{"type":"string","x-mcp-header":"D"},
    "e":{"type":"string","x-mcp-header":"E"},"f":{"type":"string","x-mcp-header":"F"},
    "g":{"type":"string","x-mcp-header":"G"},"h":{"type":"string","x-mcp-header":"H"}}})"));
  REQUIRE(marks.is_ok());
  auto values = voxos::param_header_values(
    *marks, json::parse(R"({"a":"us west 1","b":42,"c":false,"d":"Hello, \u4e16\u754c",
      "e":"line1\r\nline2","f":" padded","g":"","h":null,"query":"SELECT 1"})"));
  REQUIRE(values.is_ok());
  std::map<std::string, std::string> got(values->begin(), values->end());
  CHECK(got.size() == 7);
  CHECK(got["Mcp-Param-A"] == "us west 1");
  CHECK(got["Mcp-Param-B"] == "42");
  CHECK(got["Mcp-Param-C"] == "false");
  CHECK(got["Mcp-Param-D"] == "=?base64?SGVsbG8sIOS4lueVjA==?=");
  CHECK(got["Mcp-Param-E"] == "=?base64?bGluZTENCmxpbmUy?=");
  CHECK(got["Mcp-Param-F"] == "=?base64?IHBhZGRlZA==?=");
  CHECK(got["Mcp-Param-G"].empty());
  CHECK(got.count("Mcp-Param-H") == 0);
  // Never a raw control character in a header value.
  for (const auto& [name, value] : got)
    CHECK(value.find_first_of("\r\n\t") == std::string::npos);
}

TEST_CASE("a server/discover result offering 2026-07-28 is the stateless revision, else not") {
  auto hello = voxos::read_discover_result(
    R"({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
        "serverInfo":{"name":"s","version":"2"},"instructions":"hi","resultType":"complete"})");
  REQUIRE(hello.is_ok());
  CHECK(hello->protocol_version == "2026-07-28");
  CHECK(hello->server_name == "s");
  CHECK(hello->server_version == "2");
  CHECK(json::parse(hello->capabilities) == json{{"tools", json::object()}});
  CHECK(hello->instructions == "hi");
  auto in_meta = voxos::read_discover_result(
    R"({"supportedVersions":["2026-07-28"],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}})");
  REQUIRE(in_meta.is_ok());
  CHECK(in_meta->server_name == "m");
  CHECK(in_meta->capabilities == "{}");
  // What older servers answer to an unknown method, or a modern one without
  // our revision: the handshake it is.
  for (auto text : {"{}", R"({"supportedVersions":["2025-11-25"]})",
                    R"({"supportedVersions":"2026-07-28"})", "[]"})
    CHECK(voxos::read_discover_result(text).error().code() == voxos::errc::out_of_range);
}

TEST_CASE("an argument too long for its Mcp-Param header fails the call, naming no value") {
  auto marks = voxos::param_headers_of(
    json::parse(R"({"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Q"}}})"));
  REQUIRE(marks.is_ok());
  std::string longest(voxos::max_param_header_bytes, 'a');
  CHECK(voxos::param_header_values(*marks, json{{"q", longest}}).is_ok());
  auto refused = voxos::param_header_values(*marks, json{{"q", longest + "secret"}});
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.error().code() == voxos::errc::out_of_range);
  CHECK(refused.error().message().find("'q'") != std::string::npos);
  CHECK(refused.error().message().find("secret") == std::string::npos);
  // Base64 makes a string longer: the encoded length counts.
  std::string spaced = " " + std::string(voxos::max_param_header_bytes * 3 / 4, 'b');
  CHECK_FALSE(voxos::param_header_values(*marks, json{{"q", spaced}}).is_ok());
}
