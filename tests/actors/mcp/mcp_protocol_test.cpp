#include <doctest/doctest.h>

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
