#include "transport/mcp_wire.hpp"

#include <doctest/doctest.h>

#include "transport/mcp_server.hpp"

using nlohmann::json;
using voxos::mcp_request_headers;
using voxos::mcp_wire;
using voxos::mcp_wire_of;

namespace {

json modern_params() {
  return {{"_meta",
           {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()}}}};
}

mcp_request_headers good_headers(const std::string& method) {
  return {std::string{"2026-07-28"}, method, std::nullopt};
}

} // namespace

TEST_CASE("a modern version header or _meta version selects the stateless wire, initialize or a "
          "session the other") {
  CHECK(mcp_wire_of(std::string{"2026-07-28"}, false, "tools/list", json::object())
        == mcp_wire::stateless);
  CHECK(mcp_wire_of(std::string{"2099-01-01"}, false, "tools/list", json::object())
        == mcp_wire::stateless);
  CHECK(mcp_wire_of(std::string{"2025-11-25"}, true, "tools/list", modern_params())
        == mcp_wire::session);
  CHECK(mcp_wire_of(std::nullopt, false, "initialize", json::object()) == mcp_wire::session);
  CHECK(mcp_wire_of(std::nullopt, true, "tools/list", json::object()) == mcp_wire::session);
  CHECK(mcp_wire_of(std::nullopt, false, "tools/list", modern_params()) == mcp_wire::stateless);
  // A 2025-11-25 progress token in _meta is not a modern request.
  CHECK(mcp_wire_of(std::nullopt, false, "tools/list", {{"_meta", {{"progressToken", 1}}}})
        == mcp_wire::session);
}

TEST_CASE("the stateless envelope is checked header first, then _meta, then the version") {
  using voxos::mcp_check_stateless;
  CHECK_FALSE(mcp_check_stateless(good_headers("tools/list"), "tools/list", modern_params()));

  auto refusal = [](mcp_request_headers headers, const std::string& method, json params) {
    auto refused = mcp_check_stateless(headers, method, params);
    REQUIRE(refused);
    CHECK(refused->http_status == 400);
    return *refused;
  };
  auto no_version = good_headers("tools/list");
  no_version.protocol_version.reset();
  CHECK(refusal(no_version, "tools/list", modern_params()).code
        == voxos::mcp_code::header_mismatch);
  auto no_method = good_headers("tools/list");
  no_method.method.reset();
  CHECK(refusal(no_method, "tools/list", modern_params()).message == "Missing Mcp-Method header");
  CHECK(refusal(good_headers("Tools/List"), "tools/list", modern_params()).code
        == voxos::mcp_code::header_mismatch);

  auto call = modern_params();
  call["name"] = "weather";
  CHECK(refusal(good_headers("tools/call"), "tools/call", call).message
        == "Missing Mcp-Name header");
  auto named = good_headers("tools/call");
  named.name = "=?base64?d2VhdGhlcg==?="; // "weather"
  CHECK_FALSE(mcp_check_stateless(named, "tools/call", call));
  named.name = "=?base64?d2VhdGhlcg?="; // no padding: refused, not guessed
  CHECK(refusal(named, "tools/call", call).message == "Mcp-Name header holds malformed base64");
  named.name = "climate";
  CHECK(refusal(named, "tools/call", call).code == voxos::mcp_code::header_mismatch);

  CHECK(refusal(good_headers("tools/list"), "tools/list", json::object()).code
        == voxos::mcp_code::invalid_params);
  auto no_capabilities = modern_params();
  no_capabilities["_meta"].erase("io.modelcontextprotocol/clientCapabilities");
  CHECK(refusal(good_headers("tools/list"), "tools/list", no_capabilities).code
        == voxos::mcp_code::invalid_params);

  auto other_version = good_headers("tools/list");
  other_version.protocol_version = "2099-01-01";
  CHECK(refusal(other_version, "tools/list", modern_params()).code
        == voxos::mcp_code::header_mismatch);
  auto future = modern_params();
  future["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
  auto unsupported = refusal(other_version, "tools/list", future);
  CHECK(unsupported.code == voxos::mcp_code::unsupported_protocol_version);
  CHECK(unsupported.data == json{{"supported", {"2026-07-28"}}, {"requested", "2099-01-01"}});

  auto loud = modern_params();
  loud["_meta"]["io.modelcontextprotocol/logLevel"] = "loud";
  CHECK(refusal(good_headers("tools/list"), "tools/list", loud).code
        == voxos::mcp_code::invalid_params);
}

TEST_CASE("without configured origins only loopback origins are allowed, with them exactly those") {
  using voxos::mcp_origin_allowed;
  CHECK(mcp_origin_allowed("http://localhost:3000", {}));
  CHECK(mcp_origin_allowed("https://127.0.0.1", {}));
  CHECK(mcp_origin_allowed("http://[::1]:8080", {}));
  CHECK_FALSE(mcp_origin_allowed("http://evil.example.com", {}));
  CHECK_FALSE(mcp_origin_allowed("http://localhost.evil.example.com", {}));
  CHECK_FALSE(mcp_origin_allowed("null", {}));
  CHECK_FALSE(mcp_origin_allowed("file://localhost", {}));
  const std::vector<std::string> node = {"https://node.example.com"};
  CHECK(mcp_origin_allowed("https://NODE.example.com", node));
  CHECK_FALSE(mcp_origin_allowed("https://node.example.com:8443", node));
  CHECK_FALSE(mcp_origin_allowed("http://localhost:3000", node));
}

TEST_CASE("hosts are checked only when configured, with or without a port") {
  using voxos::mcp_host_allowed;
  CHECK(mcp_host_allowed("evil.example.com", {}));
  const std::vector<std::string> hosts = {"localhost", "127.0.0.1:7100"};
  CHECK(mcp_host_allowed("localhost:1234", hosts));
  CHECK(mcp_host_allowed("127.0.0.1:7100", hosts));
  CHECK_FALSE(mcp_host_allowed("127.0.0.1:7101", hosts));
  CHECK_FALSE(mcp_host_allowed("evil.example.com", hosts));
}

TEST_CASE("Accept admits a media type exactly, by its family or by */*, and anything when absent") {
  using voxos::mcp_accepts;
  CHECK(mcp_accepts("application/json, text/event-stream", "text/event-stream"));
  CHECK(mcp_accepts("text/*;q=0.5", "text/event-stream"));
  CHECK(mcp_accepts("*/*", "application/json"));
  CHECK(mcp_accepts("", "application/json"));
  CHECK_FALSE(mcp_accepts("application/json", "text/event-stream"));
  CHECK_FALSE(mcp_accepts("text/html", "application/json"));
}
