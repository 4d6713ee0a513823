// The npm test peers (tests/peers) start on kernel-picked loopback ports and
// answer HTTP: the SDK peer's counters start at zero, server-everything
// opens a session. The MCP-level tests against them live with the client.
#include <doctest/doctest.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/node_peer.hpp"

using namespace voxos;

namespace {

httplib::Client loopback_client(uint16_t port) {
  httplib::Client cli{"127.0.0.1", port};
  cli.set_connection_timeout(5);
  cli.set_read_timeout(30);
  return cli;
}

const char* const initialize_request = R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
  "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"peers_test","version":"1"}}})";

} // namespace

TEST_CASE("sdk peer listens on a kernel-picked port and reports zero calls") {
  REQUIRE_MESSAGE(!test::node_path().empty(), "no node on PATH: run scripts/setup");
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), "sdk_peer.mjs did not print its port: " << peer->error_output());
  CHECK(peer->url() == "http://127.0.0.1:" + std::to_string(peer->port()) + "/mcp");

  auto cli = loopback_client(peer->port());
  auto stats = cli.Get("/stats");
  REQUIRE(stats);
  CHECK(stats->status == 200);
  auto body = nlohmann::json::parse(stats->body, nullptr, false);
  REQUIRE(body.is_object());
  CHECK(body["tools_call_received"] == 0);
  CHECK(body["in_flight"] == 0);
  CHECK(body["peak_in_flight"] == 0);
  CHECK(body["cancelled"] == 0);
  CHECK(body["sessions"]["opened"] == 0);

  // In JSON mode an initialize is answered as application/json with a session.
  httplib::Headers accept{{"Accept", "application/json, text/event-stream"}};
  auto init = cli.Post("/mcp", accept, initialize_request, "application/json");
  REQUIRE(init);
  CHECK(init->status == 200);
  CHECK(init->get_header_value("Content-Type").find("application/json") != std::string::npos);
  CHECK_FALSE(init->get_header_value("Mcp-Session-Id").empty());

  // Reading the counters did not change them; the initialize did.
  auto after = nlohmann::json::parse(cli.Get("/stats")->body, nullptr, false);
  CHECK(after["methods"]["initialize"] == 1);
  CHECK(after["sessions"]["opened"] == 1);
  CHECK(after["tools_call_received"] == 0);
}

TEST_CASE("server-everything peer listens on loopback and opens a streamable HTTP session") {
  REQUIRE_MESSAGE(std::filesystem::exists(test::everything_script()),
                  "server-everything is not installed: run scripts/setup");
  auto peer = test::start_everything_peer("streamableHttp");
  REQUIRE_MESSAGE(peer->up(), "server-everything did not listen: " << peer->error_output());

  auto cli = loopback_client(peer->port());
  httplib::Headers accept{{"Accept", "application/json, text/event-stream"}};
  auto init = cli.Post("/mcp", accept, initialize_request, "application/json");
  REQUIRE(init);
  CHECK(init->status == 200);
  CHECK(init->get_header_value("Content-Type").find("text/event-stream") != std::string::npos);
  CHECK_FALSE(init->get_header_value("Mcp-Session-Id").empty());
  CHECK(init->body.find("\"protocolVersion\"") != std::string::npos);
}
