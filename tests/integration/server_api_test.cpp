// A tenant's MCP servers over HTTP: create from a preset or as a custom
// server, the connection test against a real SDK-built peer, enable, trust,
// allowlist, delete; and every refused input leaving the servers as they were.
#include <doctest/doctest.h>

#include "support/node_peer.hpp"
#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct server_fixture {
  std::unique_ptr<test::node_peer> peer = test::start_sdk_peer({"--json"});
  test::temp_dir dir;
  std::unique_ptr<test::running_node> node;
  std::string token;

  server_fixture() {
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    node = std::make_unique<test::running_node>(
      dir, std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
    token = node->make_tenant("Acme").second;
  }

  test::http_reply create(const json& body) {
    return node->call("POST", "/v1/servers", token, body.dump());
  }
  json servers() { return node->call("GET", "/v1/servers", token).body; }
  json find(const std::string& id) {
    for (auto& s : servers())
      if (s["server_id"] == id)
        return s;
    return {};
  }
};

} // namespace

TEST_CASE("a custom server is created, tested against its peer, allowlisted and deleted") {
  server_fixture f;
  auto made = f.create({{"url", f.peer->url()}, {"label", "Weather"}});
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  auto id = made.body["server_id"].get<std::string>();
  CHECK(made.body["enabled"] == false);
  CHECK(made.body["trusted"] == false);
  CHECK(made.body["connected"] == false);
  CHECK(made.body["auth"] == "none");
  CHECK(made.body["transport"] == "streamable_http");
  CHECK(made.body["tool_count"] == 0);

  auto tested = f.node->call("POST", "/v1/servers/" + id + "/test", f.token);
  REQUIRE_MESSAGE(tested.status == 200, tested.raw);
  CHECK(tested.body["connected"] == true);
  CHECK(tested.body["discovered"].get<int>() >= 6);
  CHECK(tested.body["discovered_us"].get<int64_t>() > 0);
  CHECK_FALSE(tested.body["cache_version"].get<std::string>().empty());
  CHECK(f.find(id)["tool_count"] == tested.body["discovered"]);
  CHECK(tested.body["last_test"]["ok"] == true);
  CHECK(tested.body["last_test"]["at_us"] == tested.body["discovered_us"]);
  CHECK_FALSE(tested.body["last_test"].contains("error"));

  auto patched = f.node->call(
    "PATCH", "/v1/servers/" + id, f.token,
    json{{"enabled", true}, {"trusted", true}, {"allowed_tools", {"echo", "get_forecast"}}}.dump());
  REQUIRE_MESSAGE(patched.status == 200, patched.raw);
  CHECK(patched.body["allowed_tools"] == json{"echo", "get_forecast"});
  // A tool the server never advertised cannot be allowlisted.
  auto invented = f.node->call("PATCH", "/v1/servers/" + id, f.token,
                               json{{"allowed_tools", {"no_such_tool"}}}.dump());
  CHECK(invented.status == 404);

  // One server's view: its discovered tools, each marked allowed or not.
  auto one = f.node->call("GET", "/v1/servers/" + id, f.token);
  REQUIRE_MESSAGE(one.status == 200, one.raw);
  CHECK(one.body["tools"].size() == tested.body["discovered"]);
  for (const auto& tool : one.body["tools"]) {
    auto name = tool["name"].get<std::string>();
    CHECK(tool["allowed"] == (name == "echo" || name == "get_forecast"));
    CHECK(tool["description"].is_string());
    CHECK(tool["read_only"].is_boolean());
    CHECK(tool["idempotent"].is_boolean());
    CHECK(tool.contains("destructive") == !tool["read_only"].get<bool>());
  }
  CHECK(one.body["last_test"] == tested.body["last_test"]);

  auto gone = f.node->call("DELETE", "/v1/servers/" + id, f.token);
  REQUIRE_MESSAGE(gone.status == 200, gone.raw);
  CHECK(f.find(id).is_null());
  CHECK(f.node->call("POST", "/v1/servers/" + id + "/test", f.token).status == 404);
}

TEST_CASE("static headers are sealed: never listed, never answered back") {
  server_fixture f;
  const std::string secret = "sk-live-0123456789abcdef";
  auto made = f.create({{"url", f.peer->url()}, {"headers", {{"X-Api-Key", secret}}}});
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  CHECK(made.body["auth"] == "static_headers");
  CHECK(made.body["has_headers"] == true);
  CHECK(made.raw.find(secret) == std::string::npos);
  auto id = made.body["server_id"].get<std::string>();
  // The test opens the headers from the vault and sends them.
  auto tested = f.node->call("POST", "/v1/servers/" + id + "/test", f.token);
  REQUIRE_MESSAGE(tested.status == 200, tested.raw);
  CHECK(tested.raw.find(secret) == std::string::npos);
  CHECK(f.node->call("GET", "/v1/servers", f.token).raw.find(secret) == std::string::npos);
}

TEST_CASE("a preset server takes its identity from the catalog") {
  server_fixture f;
  auto made =
    f.create({{"preset_id", "exa_api_key"}, {"headers", {{"x-api-key", "exa-key-value"}}}});
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  CHECK(made.body["preset_id"] == "exa_api_key");
  CHECK(made.body["url"].get<std::string>().rfind("https://", 0) == 0);
  CHECK(made.body["auth"] == "api_key_header");
  // A preset's URL, transport and auth are not the caller's to choose.
  CHECK(f.create({{"preset_id", "exa_api_key"},
                  {"url", "https://example.com/mcp"},
                  {"headers", {{"x-api-key", "k"}}}})
          .status
        == 400);
  CHECK(f.create({{"preset_id", "exa_api_key"}}).status == 400);
  CHECK(f.create({{"preset_id", "no_such_preset"}}).status == 404);
  // The Local Compose presets need their exact URL registered.
  CHECK(f.create({{"preset_id", "monzo_local"}}).status == 403);
}

TEST_CASE("refused servers: stdio, loopback, look-alike hosts, bad headers, foreign ids") {
  server_fixture f;
  auto before = f.servers();
  struct bad_case {
    json body;
    int status;
  };
  const bad_case cases[] = {
    {{{"url", "npx -y @modelcontextprotocol/server-everything"}}, 403},
    {{{"url", "http://127.0.0.1:9/mcp"}}, 403},
    {{{"url", "https://localhost/mcp"}}, 403},
    {{{"url", "https://2130706433/mcp"}}, 403},
    {{{"url", "https://[::ffff:127.0.0.1]/mcp"}}, 403},
    {{{"url", "https://169.254.169.254/latest"}}, 403},
    {{{"url", "http://example.com/mcp"}}, 403},
    {{{"url", "https://user:pw@example.com/mcp"}}, 400},
    {{{"url", "https://example.com/mcp"}, {"transport", "stdio"}}, 400},
    {{{"url", "https://example.com/mcp"}, {"headers", {{"Host", "evil"}}}}, 400},
    {{{"url", "https://example.com/mcp"}, {"headers", {{"X-Key", "line\nbreak"}}}}, 400},
    {{{"url", "https://example.com/mcp"}, {"server_id", "s_mine"}}, 400},
    {{{"label", "no url"}}, 400},
  };
  for (const auto& bad : cases) {
    CAPTURE(bad.body.dump());
    auto reply = f.create(bad.body);
    CHECK(reply.status == bad.status);
    CHECK(reply.raw.find("127.0.0.1") == std::string::npos);
    CHECK(reply.raw.find("evil") == std::string::npos);
  }
  CHECK(f.servers() == before);

  // Another tenant's server id is unknown here, whatever the operation.
  auto mine = f.create({{"url", f.peer->url()}});
  REQUIRE(mine.status == 201);
  auto id = mine.body["server_id"].get<std::string>();
  auto other = f.node->make_tenant("Other").second;
  CHECK(f.node->call("POST", "/v1/servers/" + id + "/test", other).status == 404);
  CHECK(f.node->call("DELETE", "/v1/servers/" + id, other).status == 404);
  CHECK(f.node->call("PATCH", "/v1/servers/" + id, other, R"({"enabled":true})").status == 404);
  CHECK_FALSE(f.find(id).is_null());
}

TEST_CASE("a failed connection test answers the failure and leaves the server not connected") {
  server_fixture f;
  auto made = f.create({{"url", f.peer->url()}});
  REQUIRE(made.status == 201);
  auto id = made.body["server_id"].get<std::string>();
  REQUIRE(f.node->call("POST", "/v1/servers/" + id + "/test", f.token).status == 200);
  REQUIRE(f.find(id)["connected"] == true);
  f.peer.reset(); // the server goes away
  auto failed = f.node->call("POST", "/v1/servers/" + id + "/test", f.token);
  CHECK(failed.status == 503);
  CHECK(f.find(id)["connected"] == false);
  CHECK(f.find(id)["tool_count"].get<int>() >= 6); // the cache stays for the next test
  // The failure is the server's last test, with the error it answered.
  auto last = f.find(id)["last_test"];
  CHECK(last["ok"] == false);
  CHECK(last["at_us"].get<int64_t>() > 0);
  CHECK(last["error"]["code"] == failed.body["error"]["code"]);
  CHECK(last["error"]["message"] == failed.body["error"]["message"]);
  // A second failure is recorded too (the server was already not connected).
  auto again = f.node->call("POST", "/v1/servers/" + id + "/test", f.token);
  CHECK(again.status == 503);
  CHECK(f.find(id)["last_test"]["at_us"].get<int64_t>() > last["at_us"].get<int64_t>());
}
