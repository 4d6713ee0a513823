// The connection actor against a hostile peer: every misbehaviour ends its own
// request with a specific, bounded error, while the same connection keeps
// serving the well-behaved requests sent beside them.
//
// The peer is a scripted cpp-httplib server in this process: no MCP server
// can be made to send garbage, 20 MiB bodies, endless lines or resets on
// demand. The real peers are exercised in tests/integration/.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/loopback_http.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

std::string answer(const json& id, const json& result) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}}.dump();
}

json text_result(const std::string& text) {
  return json{{"content", json::array({{{"type", "text"}, {"text", text}}})}};
}

/// Keeps a response body streaming `piece` until the client goes away or the
/// server stops.
void stream_forever(test::loopback_server& server, httplib::Response& res, std::string head,
                    std::string piece) {
  auto started = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
    "text/event-stream", [&server, head, piece, started](size_t, httplib::DataSink& sink) {
      if (server.stopping.load())
        return false;
      if (!*started) {
        *started = true;
        return sink.write(head.data(), head.size());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
      return sink.write(piece.data(), piece.size());
    });
}

void script_peer(test::loopback_server& server) {
  server.svr.new_task_queue = [] { return new httplib::ThreadPool(32); };
  server.svr.Get("/mcp", [](const httplib::Request&, httplib::Response& res) { res.status = 405; });
  server.svr.Delete("/mcp",
                    [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  server.svr.Post("/mcp", [&server](const httplib::Request& req, httplib::Response& res) {
    auto msg = json::parse(req.body, nullptr, false);
    if (!msg.is_object() || !msg.contains("id")) {
      res.status = 202;
      return;
    }
    auto id = msg["id"];
    auto method = msg.value("method", "");
    res.set_header("Mcp-Session-Id", "hostile-session");
    if (method == "initialize") {
      res.set_content(answer(id, {{"protocolVersion", "2025-11-25"},
                                  {"capabilities", json::object()},
                                  {"serverInfo", {{"name", "hostile"}, {"version", "1"}}}}),
                      "application/json");
      return;
    }
    auto tool = msg["params"].value("name", "");
    if (tool == "echo") {
      res.set_content(answer(id, text_result("ok")), "application/json");
    } else if (tool == "garbage") {
      res.set_content(R"({"jsonrpc": "2.0", "id": )", "application/json");
    } else if (tool == "big_body") {
      res.set_content(answer(id, text_result(std::string(std::size_t{20} << 20, 'x'))),
                      "application/json");
    } else if (tool == "huge_line") {
      stream_forever(server, res, "data: ", std::string(std::size_t{1} << 20, 'x'));
    } else if (tool == "keepalive") {
      stream_forever(server, res, ": hello\n\n", ": keepalive\n\n");
    } else if (tool == "silent") {
      while (!server.stopping.load())
        std::this_thread::sleep_for(std::chrono::milliseconds{20});
    } else if (tool == "redirect") {
      res.status = 302;
      res.set_header("Location", "http://127.0.0.1:1/elsewhere");
    } else if (tool == "error500") {
      res.status = 500;
    } else if (tool == "reset") {
      test::reply_events(res, {"event: message\ndata: {\"jsonrpc\":\"2.0\""}, true);
    } else if (tool == "stray") {
      test::reply_events(res, {"data: " + answer(987654, text_result("not yours")) + "\n\n",
                               "data: " + answer(id, text_result("yours")) + "\n\n"});
    } else {
      res.status = 400;
    }
  });
}

struct call_outcome {
  bool ok = false;
  errc code = errc::internal;
  std::string message;
};

} // namespace

TEST_CASE("a hostile peer's every misbehaviour ends as a specific, bounded error") {
  test::loopback_server server;
  script_peer(server);
  server.start();
  const auto url = server.url("/mcp");

  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};
  mcp_config mcp;
  mcp.max_body_bytes = std::size_t{1} << 20;
  mcp.max_message_bytes = 256 * 1024;
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  auto conn = spawn_mcp_connection(
    sys, mcp_endpoint{"hostile", transport_kind::streamable_http, url, {}}, policy, mcp);

  // Expected error per tool; the two that never answer carry a 400 ms deadline.
  const std::map<std::string, errc> expected{
    {"garbage", errc::bad_json},         {"big_body", errc::body_too_large},
    {"huge_line", errc::body_too_large}, {"keepalive", errc::unavailable},
    {"silent", errc::unavailable},       {"redirect", errc::forbidden},
    {"error500", errc::unavailable},     {"reset", errc::unavailable},
  };
  std::map<std::string, call_outcome> outcomes;
  std::vector<std::thread> callers;
  std::mutex mtx;
  uint64_t key = 1;
  for (const auto& [tool, code] : expected) {
    callers.emplace_back([&, tool = tool, k = key++] {
      caf::scoped_actor self{sys};
      call_outcome out;
      self
        ->request(conn, std::chrono::seconds{30}, request_atom::value, k, std::string{"tools/call"},
                  json{{"name", tool}, {"arguments", json::object()}}.dump(),
                  uint32_t{tool == "keepalive" || tool == "silent" ? 400U : 20'000U})
        .receive([&](const std::string&) { out.ok = true; },
                 [&](caf::error& err) {
                   out.code = code_of(err);
                   out.message = message_of(err);
                 });
      std::lock_guard<std::mutex> guard{mtx};
      outcomes[tool] = out;
    });
  }
  // Meanwhile the well-behaved calls are answered.
  caf::scoped_actor self{sys};
  for (int round = 0; round < 5; ++round) {
    bool answered = false;
    self
      ->request(conn, std::chrono::seconds{30}, request_atom::value,
                static_cast<uint64_t>(100 + round), std::string{"tools/call"},
                json{{"name", "echo"}, {"arguments", {}}}.dump(), uint32_t{0})
      .receive([&](const std::string& text) { answered = text.find("ok") != std::string::npos; },
               [&](caf::error& err) { FAIL(message_of(err)); });
    CHECK(answered);
  }
  for (auto& caller : callers)
    caller.join();

  for (const auto& [tool, code] : expected) {
    CAPTURE(tool);
    const auto& out = outcomes[tool];
    CHECK_FALSE(out.ok);
    CHECK(to_string(out.code) == to_string(code));
    CHECK(out.message.find("127.0.0.1") == std::string::npos);
  }
  CHECK(outcomes["keepalive"].message == "request deadline exceeded");
  CHECK(outcomes["silent"].message == "request deadline exceeded");
  CHECK(outcomes["redirect"].message.find("redirect") != std::string::npos);

  // An answer with an id never asked is dropped and counted; the real one counts.
  std::string stray;
  self
    ->request(conn, std::chrono::seconds{30}, request_atom::value, uint64_t{200},
              std::string{"tools/call"}, json{{"name", "stray"}, {"arguments", {}}}.dump(),
              uint32_t{0})
    .receive([&](const std::string& text) { stray = text; },
             [&](caf::error& err) { FAIL(message_of(err)); });
  CHECK(stray.find("yours") != std::string::npos);
  CHECK(stray.find("not yours") == std::string::npos);
  json health;
  self->request(conn, std::chrono::seconds{10}, health_atom::value)
    .receive([&](const std::string& text) { health = json::parse(text); }, [&](caf::error&) {});
  CHECK(health["unexpected_answers"] == 1);
  CHECK(health["in_flight"] == 0);
  CHECK(health["phase"] == "ready");
  caf::anon_send_exit(conn, caf::exit_reason::kill);
}

TEST_CASE("a request key already in flight is refused, and a closed connection refuses all") {
  test::loopback_server server;
  script_peer(server);
  server.start();
  const auto url = server.url("/mcp");
  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  auto conn = spawn_mcp_connection(
    sys, mcp_endpoint{"hostile", transport_kind::streamable_http, url, {}}, policy, {});
  caf::scoped_actor self{sys};
  // Key 1 waits on a silent tool; a second request with key 1 is a conflict.
  caf::anon_send(conn, request_atom::value, uint64_t{1}, std::string{"tools/call"},
                 json{{"name", "silent"}, {"arguments", {}}}.dump(), uint32_t{5000});
  errc second = errc::internal;
  for (int attempt = 0; attempt < 50 && second != errc::conflict; ++attempt) {
    self
      ->request(conn, std::chrono::seconds{10}, request_atom::value, uint64_t{1},
                std::string{"tools/call"}, json{{"name", "echo"}, {"arguments", {}}}.dump(),
                uint32_t{0})
      .receive([&](const std::string&) { second = errc::internal; },
               [&](caf::error& err) { second = code_of(err); });
  }
  CHECK(second == errc::conflict);
  bool closed = false;
  self->request(conn, std::chrono::seconds{10}, close_atom::value)
    .receive([&](bool done) { closed = done; }, [&](caf::error&) {});
  CHECK(closed);
}
