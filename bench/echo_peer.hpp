// The smallest JSON-RPC peer cpp-httplib makes, shared by the benchmarks
// that need a peer with no jitter of its own: the floor of mcp_client_bench,
// and run_bench's per-call overhead measured without the Node peer's
// millisecond tails. A stand-in for a server by design (no real server
// answers this fast and this evenly); the SDK-built peer is the real one.
#pragma once

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace voxos::bench {

/// Answers initialize, notifications (202), tools/list (two read-only tools,
/// `echo` {text} and `sleep` {ms}, and one annotated not read-only, `note`
/// {text}, which stores nothing) and tools/call (a fixed "ok" text), as JSON.
/// Connections stay open as long as a client likes (as Node's server keeps
/// them): httplib's default closes one every 5 requests, which would add a
/// reconnect every fifth call to both clients and blur what is measured.
inline void serve_echo(httplib::Server& svr) {
  svr.set_tcp_nodelay(true); // else delayed ACKs cost 40 ms a call
  svr.set_keep_alive_max_count(1'000'000);
  svr.Post("/mcp", [](const httplib::Request& req, httplib::Response& res) {
    auto msg = nlohmann::json::parse(req.body, nullptr, false);
    if (!msg.is_object() || !msg.contains("id")) {
      res.status = 202;
      return;
    }
    nlohmann::json result;
    if (msg.value("method", "") == "initialize")
      result = {{"protocolVersion", "2025-11-25"},
                {"capabilities", nlohmann::json::object()},
                {"serverInfo", {{"name", "floor"}, {"version", "1"}}}};
    else if (msg.value("method", "") == "tools/list") {
      auto tool = [](const char* name, const char* field, const char* type, bool read_only) {
        return nlohmann::json{{"name", name},
                              {"description", "Answers at once."},
                              {"inputSchema",
                               {{"type", "object"},
                                {"properties", {{field, {{"type", type}}}}},
                                {"required", {field}}}},
                              {"annotations", {{"readOnlyHint", read_only}}}};
      };
      result = {{"tools",
                 {tool("echo", "text", "string", true), tool("sleep", "ms", "integer", true),
                  tool("note", "text", "string", false)}}};
    } else
      result = {{"content", nlohmann::json::array({{{"type", "text"}, {"text", "ok"}}})}};
    res.set_content(
      nlohmann::json{{"jsonrpc", "2.0"}, {"id", msg["id"]}, {"result", result}}.dump(),
      "application/json");
  });
  svr.Get("/mcp", [](const httplib::Request&, httplib::Response& res) { res.status = 405; });
}

} // namespace voxos::bench
