// transport/mcp_server over loopback HTTP: what either wire shares (bad
// bodies, Origin and Host, pagination, extensions, stop). The wires
// themselves: mcp_server_stateless_test.cpp and mcp_server_session_test.cpp.
#include "transport/mcp_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/mcp_served.hpp"
#include "transport/mcp_pagination.hpp"

using nlohmann::json;
using namespace voxos;
using namespace voxos::test;

namespace {

/// A JSON-RPC error's code (0 when the body is not one).
int64_t code_of(const mcp_answer& answer) {
  auto message = answer.message();
  return message.is_object() && message.contains("error") ? message["error"].value("code", 0) : 0;
}

} // namespace

TEST_CASE("a body that is not JSON gets a parse error and HTTP 400") {
  mcp_served served;
  served.start();
  for (const char* body :
       {"", "{", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing", "\xff\xfe"}) {
    auto answer = mcp_send(served.port, "POST", body, accepting_both());
    CHECK(answer.status == 400);
    CHECK(code_of(answer) == mcp_code::parse_error);
    CHECK(answer.json()["id"].is_null());
  }
}

TEST_CASE("a batch is refused as an invalid request and none of it runs") {
  mcp_served served;
  std::atomic<int> runs{0};
  REQUIRE(served.server.add_tool(text_tool("count", "counted", &runs)).is_ok());
  served.start();
  auto call = rpc(1, "tools/call", {{"name", "count"}, {"_meta", modern_meta()}});
  auto answer = mcp_send(served.port, "POST", "[" + call + "," + call + "]",
                         modern_headers("tools/call", "count"));
  CHECK(answer.status == 400);
  CHECK(code_of(answer) == mcp_code::invalid_request);
  CHECK(answer.json()["error"]["message"].get<std::string>().find("batches") != std::string::npos);
  CHECK(runs == 0);
}

TEST_CASE("JSON that is not a JSON-RPC message, or params that are not an object, are refused") {
  mcp_served served;
  served.start();
  auto refused = [&](const std::string& body, int64_t code) {
    auto answer = mcp_send(served.port, "POST", body, modern_headers("tools/list"));
    CHECK(answer.status == 400);
    CHECK(code_of(answer) == code);
  };
  refused(R"({"id":1,"method":"tools/list"})", mcp_code::invalid_request); // no jsonrpc
  refused(R"({"jsonrpc":"2.0","id":true,"method":"tools/list"})", mcp_code::invalid_request);
  refused(R"("tools/list")", mcp_code::invalid_request);
  refused(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]})",
          mcp_code::invalid_params);
}

TEST_CASE("a body over max_message_bytes gets 413, and one not application/json 415") {
  mcp_server_options options;
  options.max_message_bytes = 1024;
  mcp_served served{options};
  served.start();
  auto big = rpc(1, "tools/list", {{"_meta", modern_meta()}, {"pad", std::string(2000, 'x')}});
  auto answer = mcp_send(served.port, "POST", big, modern_headers("tools/list"));
  CHECK(answer.status == 413);
  CHECK(answer.json()["error"]["message"] == "message exceeds 1024 bytes");

  auto small = rpc(1, "tools/list", {{"_meta", modern_meta()}});
  auto text = mcp_send(served.port, "POST", small, modern_headers("tools/list"), {}, "text/plain");
  CHECK(text.status == 415);
  auto html_only = mcp_send(served.port, "POST", small,
                            {{"MCP-Protocol-Version", "2026-07-28"},
                             {"Mcp-Method", "tools/list"},
                             {"Accept", "text/html"}});
  CHECK(html_only.status == 406);
}

TEST_CASE("an Origin not allowed is refused with 403 before the caller is authenticated") {
  int auth_calls = 0;
  mcp_served served{{}, &auth_calls};
  served.start();
  auto body = rpc(1, "server/discover", {{"_meta", modern_meta()}});
  auto headers = modern_headers("server/discover");
  headers.emplace_back("Origin", "http://evil.example.com");
  auto refused = mcp_send(served.port, "POST", body, headers);
  CHECK(refused.status == 403);
  CHECK(auth_calls == 0);

  headers.back().second = "http://localhost:" + std::to_string(served.port);
  auto admitted = mcp_send(served.port, "POST", body, headers);
  CHECK(admitted.status == 200);
  CHECK(auth_calls == 1);
  // The embedder's refusal is what the client sees.
  auto unauthenticated = modern_headers("server/discover");
  unauthenticated.emplace_back("X-Test-Principal", "refuse");
  CHECK(mcp_send(served.port, "POST", body, unauthenticated).status == 401);
}

TEST_CASE("with allowed_hosts set, a request for another Host is refused with 403") {
  mcp_server_options options;
  options.allowed_hosts = {"mcp.example.com"};
  mcp_served served{options};
  served.start();
  // The client names the host 127.0.0.1:<port>, which is not allowed here.
  auto answer = modern(served.port, "server/discover");
  CHECK(answer.status == 403);
  CHECK(answer.json()["error"]["message"] == "Forbidden: Host not allowed");
}

TEST_CASE("tools/list pages in name order with opaque cursors until the last page") {
  mcp_server_options options;
  options.page_size = 2;
  mcp_served served{options};
  for (const char* name : {"echo", "alpha", "delta", "charlie", "bravo"})
    REQUIRE(served.server.add_tool(text_tool(name, name)).is_ok());
  served.start();
  std::vector<std::string> names;
  json params = json::object();
  int pages = 0;
  for (;; ++pages) {
    REQUIRE(pages < 10);
    auto answer = modern(served.port, "tools/list", params);
    REQUIRE(answer.status == 200);
    auto result = answer.json()["result"];
    for (const auto& tool : result["tools"])
      names.push_back(tool["name"]);
    if (!result.contains("nextCursor"))
      break;
    params = {{"cursor", result["nextCursor"]}};
  }
  CHECK(pages == 2);
  CHECK(names == std::vector<std::string>{"alpha", "bravo", "charlie", "delta", "echo"});

  // The same pages at 2025-11-25.
  auto session = open_session(served.port);
  auto first = in_session_call(served.port, session, "tools/list").json()["result"];
  CHECK(first["tools"].size() == 2);
  auto second =
    in_session_call(served.port, session, "tools/list", {{"cursor", first["nextCursor"]}}).json();
  CHECK(second["result"]["tools"][0]["name"] == "charlie");
}

TEST_CASE("an invalid cursor is invalid params at either wire") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  REQUIRE(served.server.add_prompt(empty_prompt("p")).is_ok());
  served.start();
  for (const json& cursor : {json("garbage!"), json(mcp_cursor("prompts", "p")), json(42)}) {
    auto answer = modern(served.port, "tools/list", {{"cursor", cursor}});
    CHECK(answer.status == 200);
    CHECK(code_of(answer) == mcp_code::invalid_params);
  }
  auto session = open_session(served.port);
  CHECK(code_of(in_session_call(served.port, session, "tools/list", {{"cursor", "garbage!"}}))
        == mcp_code::invalid_params);
}

TEST_CASE("a list whose capability is not offered is method not found") {
  mcp_served served;
  served.start();
  auto answer = modern(served.port, "tools/list");
  CHECK(answer.status == 404);
  CHECK(code_of(answer) == mcp_code::method_not_found);
  auto discover = modern(served.port, "server/discover").json()["result"];
  CHECK_FALSE(discover["capabilities"].contains("tools"));
}

TEST_CASE("an extension's methods are served at both wires and it is advertised under its id") {
  mcp_served served;
  mcp_extension skills;
  skills.id = "io.modelcontextprotocol/skills";
  skills.settings = {{"directoryRead", true}};
  const std::vector<std::string> names = {"brew", "grind", "pour"};
  skills.methods["skills/list"].cacheable = true;
  skills.methods["skills/list"].handler = [names](const json& params,
                                                  mcp_call_context& ctx) -> mcp_outcome {
    std::optional<std::string> cursor;
    if (params.contains("cursor"))
      cursor = params["cursor"].get<std::string>();
    auto page = mcp_page_of(names, "skills", cursor, 2);
    if (!page)
      return mcp_error{mcp_code::invalid_params, "Invalid params: invalid cursor", nullptr};
    json result = {{"skills", json::array()}, {"principal", ctx.caller().principal}};
    for (auto idx = page->begin; idx < page->end; ++idx)
      result["skills"].push_back({{"name", names[idx]}});
    if (page->next_cursor)
      result["nextCursor"] = *page->next_cursor;
    return result;
  };
  REQUIRE(served.server.add_extension(skills).is_ok());
  served.start();

  auto discover = modern(served.port, "server/discover").json()["result"];
  CHECK(discover["capabilities"]["extensions"]["io.modelcontextprotocol/skills"]
        == json{{"directoryRead", true}});
  auto first = modern(served.port, "skills/list", json::object(), {{"X-Test-Principal", "ann"}});
  auto result = first.message()["result"];
  CHECK(result["skills"].size() == 2);
  CHECK(result["principal"] == "ann");
  CHECK(result["resultType"] == "complete");
  CHECK(result["ttlMs"] == 0);
  CHECK(result["cacheScope"] == "private");
  auto rest = modern(served.port, "skills/list", {{"cursor", result["nextCursor"]}}).message();
  CHECK(rest["result"]["skills"] == json::array({{{"name", "pour"}}}));

  auto session = open_session(served.port);
  auto legacy = in_session_call(served.port, session, "skills/list").message()["result"];
  CHECK(legacy["skills"].size() == 2);
  CHECK_FALSE(legacy.contains("resultType"));
}

TEST_CASE("a resource provider's resources are listed per caller among the registered ones in "
          "URI order, never as public") {
  mcp_server_options options;
  options.page_size = 2;
  options.list_cache = {60000, true};
  mcp_served served{options};
  REQUIRE(served.server.add_resource(text_resource("alpha://one", "one")).is_ok());
  REQUIRE(served.server.add_resource(text_resource("zeta://two", "two")).is_ok());
  mcp_resource_provider provider;
  provider.uri_prefix = "mem://";
  provider.list = [](const mcp_caller& caller) -> result<std::vector<mcp_resource>> {
    auto own = text_resource("mem://" + caller.principal + "/note", "");
    auto outside = text_resource("alpha://stolen", ""); // not under the prefix: dropped
    return std::vector<mcp_resource>{own, outside};
  };
  provider.read = [](const std::string& uri, const std::map<std::string, std::string>&,
                     mcp_call_context& ctx) -> mcp_outcome {
    if (uri != "mem://" + ctx.caller().principal + "/note")
      return mcp_resource_not_found(uri, ctx);
    return json{{"contents", {{{"uri", uri}, {"text", "for " + ctx.caller().principal}}}}};
  };
  REQUIRE(served.server.add_resource_provider(provider).is_ok());
  served.start();

  auto listed_for = [&](const std::string& principal) {
    std::vector<std::string> uris;
    json params = json::object();
    for (int page = 0; page < 5; ++page) {
      auto result = modern(served.port, "resources/list", params, {{"X-Test-Principal", principal}})
                      .message()["result"];
      CHECK(result["cacheScope"] == "private");
      for (const auto& item : result["resources"])
        uris.push_back(item["uri"].get<std::string>());
      if (!result.contains("nextCursor"))
        break;
      params = {{"cursor", result["nextCursor"]}};
    }
    return uris;
  };
  CHECK(listed_for("ann")
        == std::vector<std::string>{"alpha://one", "mem://ann/note", "zeta://two"});
  CHECK(listed_for("bob")
        == std::vector<std::string>{"alpha://one", "mem://bob/note", "zeta://two"});

  auto read = [&](const std::string& uri, const std::string& principal) {
    return modern(served.port, "resources/read", {{"uri", uri}}, {{"X-Test-Principal", principal}})
      .message();
  };
  CHECK(read("mem://ann/note", "ann")["result"]["contents"][0]["text"] == "for ann");
  auto foreign = read("mem://ann/note", "bob");
  CHECK(foreign["error"]["code"] == mcp_code::invalid_params);
  CHECK(foreign["error"]["data"]["uri"] == "mem://ann/note");
  auto session = open_session(served.port, json::object(), {{"X-Test-Principal", "bob"}});
  auto legacy = in_session_call(served.port, session, "resources/read", {{"uri", "mem://ann/note"}},
                                {{"X-Test-Principal", "bob"}})
                  .message();
  CHECK(legacy["error"]["code"] == -32002);
}

TEST_CASE("a handler that throws answers an internal error without its text") {
  mcp_served served;
  mcp_tool tool;
  tool.name = "boom";
  tool.handler = [](const json&, mcp_call_context&) -> mcp_outcome {
    throw std::runtime_error("secret detail");
  };
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto answer = modern(served.port, "tools/call", {{"name", "boom"}});
  CHECK(answer.status == 200);
  auto message = answer.message();
  CHECK(message["error"]["code"] == mcp_code::internal_error);
  CHECK(answer.body.find("secret") == std::string::npos);
}

TEST_CASE("stop ends open streams and refuses what comes after with 503") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto session = open_session(served.port);
  std::thread listener([&] {
    // The GET stream opens with a comment; stop() then ends it.
    mcp_send(served.port, "GET", "", in_session(session, {{"Accept", "text/event-stream"}}),
             [&](const std::string& body) {
               if (body.find(':') != std::string::npos)
                 served.server.stop();
               return false;
             });
  });
  listener.join();
  CHECK(served.server.open_streams() == 0);
  CHECK(served.server.session_count() == 0);
  CHECK(modern(served.port, "tools/list").status == 503);
}
