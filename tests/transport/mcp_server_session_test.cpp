// transport/mcp_server at 2025-11-25 (sessions) over loopback HTTP; input
// rounds played against the node's own MCP client wire layer (mcp_http).
#include "transport/mcp_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

#include "support/mcp_served.hpp"
#include "transport/mcp_http.hpp"

using nlohmann::json;
using namespace voxos;
using namespace voxos::test;

namespace {

/// A tool that samples the client for a haiku and answers it.
mcp_tool poet() {
  mcp_tool tool;
  tool.name = "poet";
  tool.handler = [](const json&, mcp_call_context& ctx) -> mcp_outcome {
    const auto& answers = ctx.input_responses();
    if (!answers.contains("haiku")) {
      mcp_input_required input;
      input.input_requests["haiku"] = {
        {"method", "sampling/createMessage"},
        {"params",
         {{"messages", {{{"role", "user"}, {"content", {{"type", "text"}, {"text", "a haiku"}}}}}},
          {"maxTokens", 50}}}};
      input.state = json{{"round", 1}};
      return input;
    }
    return mcp_text_result("poem: " + answers["haiku"]["content"].value("text", "")
                           + " state: " + ctx.request_state()->dump());
  };
  return tool;
}

} // namespace

TEST_CASE("initialize negotiates the client's version when supported, else the latest, and opens a "
          "session") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto init = [&](const std::string& version) {
    return mcp_send(served.port, "POST",
                    rpc(1, "initialize",
                        {{"protocolVersion", version},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", "t"}, {"version", "1"}}}}),
                    accepting_both());
  };
  auto older = init("2025-06-18");
  REQUIRE(older.status == 200);
  CHECK(older.json()["result"]["protocolVersion"] == "2025-06-18");
  CHECK(older.json()["result"]["capabilities"]["tools"] == json{{"listChanged", true}});
  auto unknown = init("2099-01-01");
  CHECK(unknown.json()["result"]["protocolVersion"] == "2025-11-25");
  auto id = unknown.header("mcp-session-id");
  CHECK(id.size() >= 22);
  CHECK(std::all_of(id.begin(), id.end(), [](char ch) { return ch >= 0x21 && ch <= 0x7e; }));
  CHECK(id != older.header("mcp-session-id"));
  CHECK(served.server.session_count() == 2);
  CHECK_FALSE(unknown.json()["result"].contains("resultType"));
}

TEST_CASE("a request without a session is 400, with an unknown or ended one 404") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto none = mcp_send(served.port, "POST", rpc(1, "tools/list", nullptr),
                       accepting_both({{"MCP-Protocol-Version", "2025-11-25"}}));
  CHECK(none.status == 400);
  CHECK(none.json()["error"]["code"] == -32000);
  auto unknown = in_session_call(served.port, "no-such-session", "tools/list");
  CHECK(unknown.status == 404);

  auto session = open_session(served.port);
  CHECK(in_session_call(served.port, session, "tools/list").status == 200);
  CHECK(mcp_send(served.port, "DELETE", "", in_session(session)).status == 200);
  CHECK(in_session_call(served.port, session, "tools/list").status == 404);
  CHECK(mcp_send(served.port, "DELETE", "", in_session(session)).status == 404);
  CHECK(served.server.session_count() == 0);
}

TEST_CASE("a session belongs to the principal that opened it") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto session = open_session(served.port, json::object(), {{"X-Test-Principal", "alice"}});
  CHECK(
    in_session_call(served.port, session, "ping", json::object(), {{"X-Test-Principal", "alice"}})
      .status
    == 200);
  CHECK(in_session_call(served.port, session, "ping", json::object(), {{"X-Test-Principal", "bob"}})
          .status
        == 404);
  CHECK(
    mcp_send(served.port, "DELETE", "", in_session(session, {{"X-Test-Principal", "bob"}})).status
    == 404);
  CHECK(served.server.session_count() == 1);
}

TEST_CASE("an MCP-Protocol-Version header no session can have is 400") {
  mcp_served served;
  served.start();
  auto session = open_session(served.port);
  auto headers = with_header(in_session(session), "MCP-Protocol-Version", "2024-01-01");
  auto answer = mcp_send(served.port, "POST", rpc(1, "ping", nullptr), headers);
  CHECK(answer.status == 400);
}

TEST_CASE("session methods answer, unknown ones -32601 with HTTP 200") {
  mcp_served served;
  served.start();
  auto session = open_session(served.port);
  CHECK(in_session_call(served.port, session, "ping").json()["result"] == json::object());
  auto unknown = in_session_call(served.port, session, "server/discover");
  CHECK(unknown.status == 200);
  CHECK(unknown.json()["error"]["code"] == mcp_code::method_not_found);
  auto bad_level = in_session_call(served.port, session, "logging/setLevel", {{"level", "loud"}});
  CHECK(bad_level.json()["error"]["code"] == mcp_code::invalid_params);
}

TEST_CASE("logging/setLevel filters the log notifications of the session's calls") {
  mcp_served served;
  mcp_tool tool;
  tool.name = "chatty";
  tool.handler = [](const json&, mcp_call_context& ctx) -> mcp_outcome {
    ctx.log(mcp_log_level::debug, "d");
    ctx.log(mcp_log_level::info, "i");
    ctx.log(mcp_log_level::error, "e");
    return mcp_text_result("ok");
  };
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto levels = [&] {
    std::vector<std::string> seen;
    for (const auto& event :
         in_session_call(served.port, session, "tools/call", {{"name", "chatty"}}).events())
      if (event.value("method", "") == "notifications/message")
        seen.push_back(event["params"]["level"]);
    return seen;
  };
  CHECK(levels() == std::vector<std::string>{"debug", "info", "error"}); // none set: all
  REQUIRE(in_session_call(served.port, session, "logging/setLevel", {{"level", "info"}}).status
          == 200);
  CHECK(levels() == std::vector<std::string>{"info", "error"});
}

TEST_CASE(
  "arguments failing the input schema get a tool error naming the schema path, not the value") {
  mcp_served served;
  std::atomic<int> runs{0};
  auto tool = text_tool("book", "booked", &runs);
  tool.input_schema = {{"type", "object"},
                       {"properties", {{"seats", {{"type", "integer"}, {"maximum", 4}}}}},
                       {"required", {"seats"}}};
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto result = in_session_call(served.port, session, "tools/call",
                                {{"name", "book"}, {"arguments", {{"seats", 987654}}}})
                  .message()["result"];
  CHECK(result["isError"] == true);
  auto text = result["content"][0]["text"].get<std::string>();
  CHECK(text.find("/seats") != std::string::npos);
  CHECK(text.find("maximum") != std::string::npos);
  CHECK(text.find("987654") == std::string::npos);
  CHECK(runs == 0);
  auto unknown = in_session_call(served.port, session, "tools/call", {{"name", "nope"}});
  CHECK(unknown.message()["error"]["code"] == mcp_code::invalid_params);
}

TEST_CASE("an unknown resource is -32002 with its uri at 2025-11-25") {
  mcp_served served;
  REQUIRE(served.server.add_resource(text_resource("test://note", "hi")).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto missing = in_session_call(served.port, session, "resources/read", {{"uri", "test://gone"}});
  CHECK(missing.message()["error"]["code"] == -32002);
  CHECK(missing.message()["error"]["data"] == json{{"uri", "test://gone"}});
}

TEST_CASE("a call's input round is sent on its stream and the answer posted back completes it") {
  mcp_served served;
  REQUIRE(served.server.add_tool(poet()).is_ok());
  served.start();
  auto session = open_session(served.port, {{"sampling", json::object()}});

  http_client::options opts;
  opts.total_deadline = std::chrono::milliseconds(20'000);
  auto caller = loopback_client(served.port, opts);
  auto answerer = loopback_client(served.port, opts);
  mcp_http_headers headers;
  headers.session_id = session;
  headers.protocol_version = "2025-11-25";
  std::vector<std::string> asked;
  auto sink = [&](jsonrpc_message&& message) {
    auto* request = std::get_if<jsonrpc_request>(&message);
    REQUIRE(request);
    asked.push_back(request->method);
    auto reply =
      make_jsonrpc_response(request->id, {{"role", "assistant"},
                                          {"content", {{"type", "text"}, {"text", "old pond"}}},
                                          {"model", "m"}});
    REQUIRE(reply.is_ok());
    auto sent = streamable_send(*answerer, "/mcp", headers, *reply);
    CHECK_MESSAGE(sent.is_ok(), sent.message());
  };
  auto exchange =
    streamable_request(*caller, "/mcp", headers, rpc(7, "tools/call", {{"name", "poet"}}),
                       jsonrpc_id{int64_t{7}}, sink, {});
  REQUIRE_MESSAGE(exchange.is_ok(), exchange.error().message());
  CHECK(asked == std::vector<std::string>{"sampling/createMessage"});
  auto* response = std::get_if<jsonrpc_response>(&exchange->answer);
  REQUIRE(response);
  auto result = json::parse(response->result);
  CHECK(result["content"][0]["text"] == R"(poem: old pond state: {"round":1})");
}

TEST_CASE("a call needing input from a client that did not declare it fails without asking") {
  mcp_served served;
  REQUIRE(served.server.add_tool(poet()).is_ok());
  served.start();
  auto session = open_session(served.port); // no sampling declared
  auto answer = in_session_call(served.port, session, "tools/call", {{"name", "poet"}});
  auto events = answer.events();
  REQUIRE(events.size() == 1);
  CHECK(events[0]["error"]["code"] == mcp_code::missing_client_capability);
}

TEST_CASE("an unanswered input request ends the call with an error once input_timeout passes") {
  mcp_server_options options;
  options.input_timeout = std::chrono::milliseconds(300);
  mcp_served served{options};
  REQUIRE(served.server.add_tool(poet()).is_ok());
  served.start();
  auto session = open_session(served.port, {{"sampling", json::object()}});
  auto answer = in_session_call(served.port, session, "tools/call", {{"name", "poet"}});
  auto events = answer.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0]["method"] == "sampling/createMessage");
  CHECK(events[1]["error"]["message"] == "the client did not answer input request haiku in time");
}

TEST_CASE("resource updates reach the session's GET stream once subscribed, and a second GET "
          "stream is 409") {
  mcp_served served;
  REQUIRE(served.server.add_resource(text_resource("test://watched", "v1")).is_ok());
  served.start();
  auto session = open_session(served.port);
  REQUIRE(
    in_session_call(served.port, session, "resources/subscribe", {{"uri", "test://watched"}}).status
    == 200);
  auto stream_headers = in_session(session, {{"Accept", "text/event-stream"}});
  bool second_refused = false;
  auto answer = mcp_send(served.port, "GET", "", stream_headers, [&](const std::string& body) {
    if (!second_refused) {
      second_refused = mcp_send(served.port, "GET", "", stream_headers).status == 409;
      served.server.notify_resource_updated("test://other");
      served.server.notify_resource_updated("test://watched");
    }
    return body.find("resources/updated") != std::string::npos;
  });
  CHECK(second_refused);
  auto events = answer.events();
  REQUIRE(events.size() == 1);
  CHECK(events[0]
        == json{{"jsonrpc", "2.0"},
                {"method", "notifications/resources/updated"},
                {"params", {{"uri", "test://watched"}}}});
}

TEST_CASE("notifications/cancelled reaches the call it names") {
  mcp_served served;
  auto started = std::make_shared<std::promise<void>>();
  auto ended = std::make_shared<std::promise<bool>>();
  mcp_tool tool;
  tool.name = "long";
  tool.handler = [started, ended](const json&, mcp_call_context& ctx) -> mcp_outcome {
    started->set_value();
    // Bounded: a server that never notices fails the test, not the run.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ctx.cancelled() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ended->set_value(ctx.cancelled());
    return mcp_text_result("stopped");
  };
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto session = open_session(served.port);
  std::thread call([&] {
    in_session_call(served.port, session, "tools/call", {{"name", "long"}}, {}, "c-1");
  });
  started->get_future().wait();
  auto cancel =
    mcp_send(served.port, "POST",
             R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1"}})",
             in_session(session));
  CHECK(cancel.status == 202);
  auto noticed = ended->get_future();
  REQUIRE(noticed.wait_for(std::chrono::seconds(15)) == std::future_status::ready);
  CHECK(noticed.get());
  call.join();
}

TEST_CASE("one caller's sessions are bounded, and the bound leaves other callers room") {
  mcp_server_options options;
  options.max_sessions_per_principal = 2;
  mcp_served served{options};
  served.start();
  auto initialize = [&](const std::string& principal) {
    return mcp_send(
      served.port, "POST",
      rpc(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()}}),
      accepting_both({{"X-Test-Principal", principal}}));
  };
  CHECK(initialize("alice").status == 200);
  auto kept = initialize("alice");
  CHECK(kept.status == 200);
  auto refused = initialize("alice");
  CHECK(refused.status == 503);
  CHECK(refused.json()["error"]["message"]
        == "too many sessions of this caller; end one (DELETE) or try later");
  CHECK(initialize("bob").status == 200);
  CHECK(mcp_send(served.port, "DELETE", "",
                 in_session(kept.header("mcp-session-id"), {{"X-Test-Principal", "alice"}}))
          .status
        == 200);
  CHECK(initialize("alice").status == 200);
}

TEST_CASE(
  "a call that would wait for input past max_streams fails at once instead of holding a worker") {
  mcp_server_options options;
  options.max_streams = 0;
  mcp_served served{options};
  REQUIRE(served.server.add_tool(poet()).is_ok());
  served.start();
  auto session = open_session(served.port, {{"sampling", json::object()}});
  auto events = in_session_call(served.port, session, "tools/call", {{"name", "poet"}}).events();
  REQUIRE(events.size() == 1); // no input request went out
  CHECK(events[0]["error"]["message"] == "too many calls are waiting for input; try again later");
}
