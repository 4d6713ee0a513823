// The mcp_connection actor against real MCP servers: the SDK-built peer
// (tests/peers/sdk_peer.mjs) answering as JSON and as SSE, and the official
// server-everything over Streamable HTTP and the legacy HTTP+SSE transport.
// Each peer runs as a child process on a loopback port registered for the
// `mcp` purpose, as Local Compose entries are in a node's config.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/loopback_http.hpp"
#include "support/node_peer.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;
using test::peer_stats;
using test::wait_for_stats;

namespace {

struct actor_env {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::vector<caf::actor_addr> connections;
  actor_env() {
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  /// A connection lives until it is closed or killed, as its owner (the
  /// tenant actor) would do: the test kills what it made.
  ~actor_env() {
    for (auto& addr : connections)
      if (auto handle = caf::actor_cast<caf::actor>(addr))
        caf::anon_send_exit(handle, caf::exit_reason::kill);
  }
};

/// A connection to `url`, registered for the mcp purpose.
mcp_connection_actor connect_to(actor_env& env, const std::string& url,
                                transport_kind transport = transport_kind::streamable_http,
                                mcp_config cfg = {}) {
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  auto conn = spawn_mcp_connection(*env.sys, mcp_endpoint{"test", transport, url, {}}, policy, cfg);
  env.connections.push_back(caf::actor_cast<caf::actor_addr>(conn));
  return conn;
}

/// The outcome of one request: the result JSON, or the error.
struct outcome {
  std::optional<json> result;
  errc code = errc::internal;
  std::string message;
};

outcome call(caf::scoped_actor& self, const mcp_connection_actor& conn, uint64_t key,
             const std::string& method, const json& params, uint32_t timeout_ms = 0) {
  outcome out;
  self
    ->request(conn, std::chrono::seconds{60}, request_atom::value, key, method,
              params.is_null() ? std::string{} : params.dump(), timeout_ms)
    .receive([&](const std::string& text) { out.result = json::parse(text); },
             [&](caf::error& err) {
               out.code = code_of(err);
               out.message = message_of(err);
             });
  return out;
}

outcome call_tool(caf::scoped_actor& self, const mcp_connection_actor& conn, uint64_t key,
                  const std::string& tool, const json& args, uint32_t timeout_ms = 0) {
  return call(self, conn, key, "tools/call", json{{"name", tool}, {"arguments", args}}, timeout_ms);
}

json list_tools(caf::scoped_actor& self, const mcp_connection_actor& conn) {
  json out;
  self->request(conn, std::chrono::seconds{60}, list_atom::value, tool_atom::value)
    .receive([&](const std::string& text) { out = json::parse(text); },
             [&](caf::error& err) { FAIL("tools/list failed: " << message_of(err)); });
  return out;
}

json health(caf::scoped_actor& self, const mcp_connection_actor& conn) {
  json out;
  self->request(conn, std::chrono::seconds{10}, health_atom::value)
    .receive([&](const std::string& text) { out = json::parse(text); }, [&](caf::error&) {});
  return out;
}

std::string first_text(const json& tool_result) {
  for (const auto& item : tool_result.value("content", json::array()))
    if (item.value("type", "") == "text")
      return item.value("text", "");
  return {};
}

const json* find_tool(const json& listed, const std::string& name) {
  for (const auto& tool : listed["tools"])
    if (tool.value("name", "") == name)
      return &tool;
  return nullptr;
}

} // namespace

TEST_CASE("sdk peer in JSON mode: connect, discover with annotations and output schemas, call") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};

  json hello;
  self->request(conn, std::chrono::seconds{30}, connect_atom::value)
    .receive([&](const std::string& text) { hello = json::parse(text); },
             [&](caf::error& err) { FAIL(message_of(err)); });
  // The server/discover probe found no stateless revision (the SDK has
  // none): the handshake followed.
  CHECK(hello["protocol_version"] == "2025-11-25");
  CHECK(hello["transport"] == "streamable_http");
  CHECK(health(self, conn)["session"] == true);

  auto listed = list_tools(self, conn);
  CHECK(listed["truncated"] == false);
  const json* echo = find_tool(listed, "echo");
  REQUIRE(echo != nullptr);
  CHECK((*echo)["annotations"]["readOnlyHint"] == true);
  CHECK((*echo)["inputSchema"]["properties"].contains("text"));
  const json* stats_tool = find_tool(listed, "text_stats");
  REQUIRE(stats_tool != nullptr);
  CHECK(stats_tool->contains("outputSchema"));

  auto echoed = call_tool(self, conn, 1, "echo", json{{"text", "hello"}});
  REQUIRE_MESSAGE(echoed.result, echoed.message);
  CHECK(first_text(*echoed.result).find("hello") != std::string::npos);
  auto summed = call_tool(self, conn, 2, "add", json{{"a", 2}, {"b", 40}});
  REQUIRE_MESSAGE(summed.result, summed.message);
  CHECK(first_text(*summed.result).find("42") != std::string::npos);

  auto state = health(self, conn);
  CHECK(state["phase"] == "ready");
  CHECK(state["session"] == true);
  CHECK(state["in_flight"] == 0);
  self->request(conn, std::chrono::seconds{10}, close_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
  CHECK(wait_for_stats(peer->port(), [](const json& s) { return s["sessions"]["open"] == 0; }));
}

TEST_CASE("sdk peer in SSE mode: answers arrive on the POST's event stream") {
  auto peer = test::start_sdk_peer({"--sse"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};
  auto echoed = call_tool(self, conn, 1, "echo", json{{"text", "over sse"}});
  REQUIRE_MESSAGE(echoed.result, echoed.message);
  CHECK(first_text(*echoed.result).find("over sse") != std::string::npos);
  auto forecast = call_tool(self, conn, 2, "get_forecast",
                            json{{"location", {{"address", "Paris"}}}, {"date", "2026-12-03"}});
  REQUIRE_MESSAGE(forecast.result, forecast.message);
  CHECK_FALSE(first_text(*forecast.result).empty());
}

TEST_CASE("cancelling a long call tells the server and closes its stream") {
  auto peer = test::start_sdk_peer({"--sse"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};
  REQUIRE(call_tool(self, conn, 1, "echo", json{{"text", "warm"}}).result);

  outcome long_call;
  std::thread caller{[&] {
    caf::scoped_actor other{*env.sys};
    long_call = call_tool(other, conn, 7, "sleep", json{{"ms", 30000}});
  }};
  REQUIRE(wait_for_stats(peer->port(), [](const json& s) { return s["in_flight"] == 1; }));
  caf::anon_send(conn, cancel_atom::value, uint64_t{7});
  caller.join();
  CHECK_FALSE(long_call.result);
  CHECK(long_call.code == errc::unavailable);
  CHECK(long_call.message == "request cancelled");
  // The server saw the cancellation, and nothing stays in flight.
  CHECK(wait_for_stats(peer->port(),
                       [](const json& s) { return s["cancelled"] == 1 && s["in_flight"] == 0; }));
  // The connection goes on serving.
  auto after = call_tool(self, conn, 8, "echo", json{{"text", "still here"}});
  REQUIRE_MESSAGE(after.result, after.message);
  CHECK(health(self, conn)["in_flight"] == 0);
}

TEST_CASE("a server's tools/list_changed is told to the listener, and discovery clears the mark") {
  auto peer = test::start_sdk_peer({"--sse", "--changing-tools"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  caf::scoped_actor self{*env.sys};
  auto url = peer->url();
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  auto conn = spawn_mcp_connection(
    *env.sys, mcp_endpoint{"changing", transport_kind::streamable_http, url, {}}, policy,
    mcp_config{}, caf::actor_cast<caf::actor>(self));
  env.connections.push_back(caf::actor_cast<caf::actor_addr>(conn));
  CHECK(find_tool(list_tools(self, conn), "late_tool") == nullptr);

  // The notification comes on the call's own event stream, before its answer.
  auto revealed = call_tool(self, conn, 1, "reveal_tool", json::object());
  REQUIRE_MESSAGE(revealed.result, revealed.message);
  CHECK(first_text(*revealed.result) == "revealed");
  std::string told;
  caf::actor_addr teller;
  self->receive(
    [&](changed_atom, tool_atom, const std::string& server_id) {
      told = server_id;
      teller = self->current_sender() ? self->current_sender()->address() : caf::actor_addr{};
    },
    caf::after(std::chrono::seconds{10}) >> [] {});
  CHECK(told == "changing");
  CHECK(teller == caf::actor_cast<caf::actor_addr>(conn));
  CHECK(health(self, conn)["tools_changed"] == true);

  // Discovery sees the new tool and clears the mark.
  CHECK(find_tool(list_tools(self, conn), "late_tool") != nullptr);
  CHECK(health(self, conn)["tools_changed"] == false);
  auto late = call_tool(self, conn, 2, "late_tool", json::object());
  REQUIRE_MESSAGE(late.result, late.message);
  CHECK(first_text(*late.result) == "late");
}

TEST_CASE("a JSON-mode call may stay silent past the read timeout, until its deadline") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  mcp_config cfg;
  cfg.read_timeout_ms = 300;
  auto conn = connect_to(env, peer->url(), transport_kind::streamable_http, cfg);
  caf::scoped_actor self{*env.sys};
  // The server says nothing for 1.2 s, then answers the whole result.
  auto slept =
    call(self, conn, 1, "tools/call", {{"name", "sleep"}, {"arguments", {{"ms", 1200}}}});
  REQUIRE_MESSAGE(slept.result, slept.message);
  CHECK((*slept.result)["content"][0]["text"] == "slept 1200 ms");
  // Its deadline still holds.
  auto late =
    call(self, conn, 2, "tools/call", {{"name", "sleep"}, {"arguments", {{"ms", 5000}}}}, 800);
  CHECK_FALSE(late.result);
  CHECK(late.code == errc::unavailable);
}

TEST_CASE("a request past its deadline is cancelled on the server") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};
  auto slow = call_tool(self, conn, 1, "sleep", json{{"ms", 30000}}, 300);
  CHECK_FALSE(slow.result);
  CHECK(slow.code == errc::unavailable);
  CHECK(slow.message == "request deadline exceeded");
  CHECK(wait_for_stats(peer->port(),
                       [](const json& s) { return s["cancelled"] == 1 && s["in_flight"] == 0; }));
  auto quick = call_tool(self, conn, 2, "echo", json{{"text", "after"}});
  CHECK(quick.result);
}

TEST_CASE("a killed and restarted peer: the next request starts a fresh session") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  auto port = peer->port();
  auto url = peer->url();
  actor_env env;
  auto conn = connect_to(env, url);
  caf::scoped_actor self{*env.sys};
  REQUIRE(call_tool(self, conn, 1, "echo", json{{"text", "one"}}).result);

  peer.reset(); // killed
  auto down = call_tool(self, conn, 2, "echo", json{{"text", "two"}});
  CHECK_FALSE(down.result);
  CHECK(down.code == errc::unavailable);

  peer = test::start_sdk_peer({"--json", "--port", std::to_string(port)});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  // The old session id is unknown to the new process: 404, initialise, resend.
  auto back = call_tool(self, conn, 3, "echo", json{{"text", "three"}});
  REQUIRE_MESSAGE(back.result, back.message);
  CHECK(first_text(*back.result).find("three") != std::string::npos);
  auto stats = peer_stats(port);
  CHECK(stats["methods"]["initialize"] == 1);
}

TEST_CASE("a restarted peer that answers the old session HTTP 400: the next request starts a "
          "fresh session and is sent again") {
  auto peer = test::start_sdk_peer({"--json", "--unknown-session-400"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  auto port = peer->port();
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};
  REQUIRE(call_tool(self, conn, 1, "echo", json{{"text", "one"}}).result);

  peer.reset(); // killed, and started again on the same port
  peer = test::start_sdk_peer({"--json", "--unknown-session-400", "--port", std::to_string(port)});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  // The old session id is unknown to the new process: 400 with -32000, as
  // the SDK's examples answer; initialise, resend. A mutating call too: the
  // server ran nothing of it.
  auto back = call_tool(self, conn, 2, "record_note", json{{"note", "two"}});
  REQUIRE_MESSAGE(back.result, back.message);
  CHECK(first_text(*back.result) == "noted #1");
  auto stats = peer_stats(port);
  CHECK(stats["methods"]["initialize"] == 1);
  CHECK(stats["sessions"]["unknown"].get<int>() >= 1);
  CHECK(stats["tools"]["record_note"]["calls"] == 1);
}

TEST_CASE("requests in flight when the server loses the session start one new session") {
  auto peer = test::start_sdk_peer({"--json", "--unknown-session-400"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};
  REQUIRE(call_tool(self, conn, 1, "echo", json{{"text", "one"}}).result);
  httplib::Client control{"127.0.0.1", peer->port()};
  REQUIRE(control.Post("/sessions/forget"));
  REQUIRE(test::reset_peer_stats(peer->port()));
  // Three at once: each is answered 400 in the lost session; the first
  // answer starts the new one, and all three go again in it.
  auto asks = [&](uint64_t key) {
    return self->request(
      conn, std::chrono::seconds{60}, request_atom::value, key, std::string{"tools/call"},
      json{{"name", "echo"}, {"arguments", {{"text", std::to_string(key)}}}}.dump(), uint32_t{0});
  };
  auto first = asks(2);
  auto second = asks(3);
  auto third = asks(4);
  int answered = 0;
  for (auto* handle : {&first, &second, &third})
    handle->receive([&](const std::string&) { ++answered; },
                    [&](caf::error& err) { FAIL("a request failed: " << message_of(err)); });
  CHECK(answered == 3);
  auto stats = peer_stats(peer->port());
  CHECK(stats["methods"]["initialize"] == 1);
  CHECK(stats["sessions"]["opened"] == 1);
  CHECK(stats["tools"]["echo"]["calls"] == 3);
}

TEST_CASE("killing the connection actor aborts its exchanges") {
  auto peer = test::start_sdk_peer({"--sse"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url());
  caf::scoped_actor self{*env.sys};
  REQUIRE(call_tool(self, conn, 1, "echo", json{{"text", "warm"}}).result);
  for (uint64_t key = 10; key < 13; ++key)
    caf::anon_send(conn, request_atom::value, key, std::string{"tools/call"},
                   json{{"name", "sleep"}, {"arguments", {{"ms", 30000}}}}.dump(), uint32_t{0});
  REQUIRE(wait_for_stats(peer->port(), [](const json& s) { return s["in_flight"] == 3; }));
  caf::anon_send_exit(conn, caf::exit_reason::kill);
  // Each POST stream is closed from our side, with no cancellation notice
  // (the actor is gone): the peer sees three POSTs dropped before their answer.
  CHECK(
    wait_for_stats(peer->port(), [](const json& s) { return s["http"]["dropped_posts"] == 3; }));
}

TEST_CASE("server-everything over Streamable HTTP: discover, call, cancel a long operation") {
  auto peer = test::start_everything_peer("streamableHttp");
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url("/mcp"));
  caf::scoped_actor self{*env.sys};
  auto listed = list_tools(self, conn);
  REQUIRE(find_tool(listed, "echo") != nullptr);
  REQUIRE(find_tool(listed, "trigger-long-running-operation") != nullptr);
  auto echoed = call_tool(self, conn, 1, "echo", json{{"message", "everything"}});
  REQUIRE_MESSAGE(echoed.result, echoed.message);
  CHECK(first_text(*echoed.result) == "Echo: everything");

  // It keeps streaming progress after a cancel: the stream must be dropped
  // by us, and the connection must go on.
  outcome long_call;
  std::thread caller{[&] {
    caf::scoped_actor other{*env.sys};
    long_call = call_tool(other, conn, 2, "trigger-long-running-operation",
                          json{{"duration", 30}, {"steps", 30}});
  }};
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  caf::anon_send(conn, cancel_atom::value, uint64_t{2});
  caller.join();
  CHECK(long_call.message == "request cancelled");
  auto again = call_tool(self, conn, 3, "echo", json{{"message", "again"}});
  REQUIRE_MESSAGE(again.result, again.message);
  CHECK(health(self, conn)["in_flight"] == 0);
}

TEST_CASE("server-everything over the legacy HTTP+SSE transport") {
  auto peer = test::start_everything_peer("sse");
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto conn = connect_to(env, peer->url("/sse"), transport_kind::sse);
  caf::scoped_actor self{*env.sys};
  auto listed = list_tools(self, conn);
  REQUIRE(find_tool(listed, "echo") != nullptr);
  auto echoed = call_tool(self, conn, 1, "echo", json{{"message", "legacy"}});
  REQUIRE_MESSAGE(echoed.result, echoed.message);
  CHECK(first_text(*echoed.result) == "Echo: legacy");
  auto state = health(self, conn);
  CHECK(state["transport"] == "sse");
  CHECK(state["phase"] == "ready");
}

TEST_CASE("an unregistered loopback URL is refused before anything is sent") {
  auto peer = test::start_sdk_peer({"--json"});
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  auto policy = std::make_shared<const url_policy>(std::vector<node_config::registered_url>{});
  auto conn = spawn_mcp_connection(
    *env.sys, mcp_endpoint{"test", transport_kind::streamable_http, peer->url(), {}}, policy, {});
  caf::scoped_actor self{*env.sys};
  auto refused = call_tool(self, conn, 1, "echo", json{{"text", "x"}});
  CHECK_FALSE(refused.result);
  CHECK(refused.code == errc::forbidden);
  CHECK(peer_stats(peer->port())["http"]["requests"] == 0);
}

TEST_CASE("a Streamable HTTP record on a legacy-only server falls back to HTTP+SSE") {
  auto peer = test::start_everything_peer("sse");
  REQUIRE_MESSAGE(peer->up(), peer->error_output());
  actor_env env;
  // The record says Streamable HTTP; the server refuses the initialize POST.
  auto conn = connect_to(env, peer->url("/sse"));
  caf::scoped_actor self{*env.sys};
  auto echoed = call_tool(self, conn, 1, "echo", json{{"message", "fallback"}});
  REQUIRE_MESSAGE(echoed.result, echoed.message);
  CHECK(first_text(*echoed.result) == "Echo: fallback");
  CHECK(health(self, conn)["transport"] == "sse");
}

// A scripted peer, since no real server keeps asking for input: it speaks
// the 2026-07-28 revision (server/discover offers it) and answers every
// tools/call with input_required and a new requestState.
TEST_CASE("a server that keeps asking for input is answered at most mcp.max_input_rounds times") {
  test::loopback_server peer;
  std::atomic<int> calls{0};
  std::mutex seen_mtx;
  json last_call;
  peer.svr.Post("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    auto body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("id")) {
      res.status = 202;
      return;
    }
    json result = json::object();
    auto method = body.value("method", "");
    if (method == "server/discover") {
      result = {{"supportedVersions", {"2026-07-28"}},
                {"capabilities", {{"tools", json::object()}}}};
    } else if (method == "tools/list") {
      result = {{"tools", json::array()}};
    } else if (method == "tools/call") {
      int round = ++calls;
      {
        std::lock_guard<std::mutex> guard{seen_mtx};
        last_call = body["params"];
      }
      result = {{"resultType", "input_required"},
                {"inputRequests",
                 {{"confirm",
                   {{"method", "elicitation/create"},
                    {"params",
                     {{"message", "sure?"},
                      {"requestedSchema",
                       {{"type", "object"},
                        {"properties", {{"ok", {{"type", "boolean"}, {"default", true}}}}}}}}}}}}},
                {"requestState", "state-" + std::to_string(round)}};
    }
    res.set_content(json{{"jsonrpc", "2.0"}, {"id", body["id"]}, {"result", result}}.dump(),
                    "application/json");
  });
  peer.start();
  actor_env env;
  mcp_config cfg;
  cfg.max_input_rounds = 2;
  auto conn = connect_to(env, peer.url("/mcp"), transport_kind::streamable_http, cfg);
  caf::scoped_actor self{*env.sys};
  auto asked = call_tool(self, conn, 1, "book", json{{"day", "mon"}});
  CHECK_FALSE(asked.result);
  CHECK(asked.code == errc::rejected);
  CHECK(asked.message.find("mcp.max_input_rounds") != std::string::npos);
  // The first call and two answered retries, no more.
  CHECK(calls.load() == 3);
  std::lock_guard<std::mutex> guard{seen_mtx};
  CHECK(last_call["arguments"] == json{{"day", "mon"}});
  CHECK(last_call["requestState"] == "state-2");
  CHECK(last_call["inputResponses"]["confirm"]
        == json{{"action", "accept"}, {"content", {{"ok", true}}}});
}
