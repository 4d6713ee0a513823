// An mcp_server mounted on an http_server at 127.0.0.1:<port 0>/mcp, and the
// requests the transport tests send it over real loopback HTTP with the
// node's own http_client: raw bodies and headers (bad input included), the
// 2026-07-28 envelope, 2025-11-25 sessions, and the SSE events of an answer.
#pragma once

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/loopback_http.hpp"
#include "transport/http_server.hpp"
#include "transport/mcp_server.hpp"
#include "transport/sse_parser.hpp"

namespace voxos::test {

/// The caller the test authenticator makes of a request: the principal its
/// `X-Test-Principal` header names ("" without one). No header value
/// "refuse" gets 401, so a test can see the authenticator was not reached.
struct principal_authenticator {
  int* calls = nullptr;
  std::optional<mcp_caller> operator()(const httplib::Request& req, httplib::Response& res) const {
    if (calls)
      ++*calls;
    auto principal = req.get_header_value("X-Test-Principal");
    if (principal == "refuse") {
      write_error(res, errc::unauthorized, "refused");
      return std::nullopt;
    }
    return mcp_caller{principal, {}};
  }
};

/// A served mcp_server; stopped (streams first, then HTTP) when it goes.
struct mcp_served {
  explicit mcp_served(mcp_server_options options = {}, int* auth_calls = nullptr)
      : server(std::move(options)), http(http_options()) {
    server.mount(http.routes(), "/mcp", principal_authenticator{auth_calls});
  }
  ~mcp_served() {
    server.stop();
    http.stop();
  }

  /// Starts serving (after the test registered what it needs).
  void start() {
    auto started = http.start();
    REQUIRE_MESSAGE(started.is_ok(), started.error().message());
    port = *started;
  }

  static http_server::options http_options() {
    http_server::options opts;
    opts.threads = 8;
    opts.max_body_bytes = std::size_t{4} << 20;
    return opts;
  }

  mcp_server server;
  http_server http;
  uint16_t port = 0;
};

/// One HTTP answer: status, headers (names lowercased), body.
struct mcp_answer {
  int status = 0;
  std::multimap<std::string, std::string> headers;
  std::string body;

  std::string header(const std::string& name) const {
    auto found = headers.find(name);
    return found == headers.end() ? std::string{} : found->second;
  }
  /// The body as JSON (discarded when it is not).
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
  /// The data of each SSE event in the body, as JSON.
  std::vector<nlohmann::json> events() const {
    std::vector<nlohmann::json> out;
    sse_parser parser{[&out](sse_event&& event) {
      if (!event.data.empty())
        out.push_back(nlohmann::json::parse(event.data, nullptr, false));
    }};
    (void)parser.feed(body);
    return out;
  }
  /// Every SSE event in the body as parsed (priming events with empty data
  /// included), with its id and retry.
  std::vector<sse_event> sse_events() const {
    std::vector<sse_event> out;
    sse_parser parser{[&out](sse_event&& event) { out.push_back(std::move(event)); }};
    (void)parser.feed(body);
    return out;
  }
  /// The JSON-RPC message answering: the body, or the stream's last event.
  nlohmann::json message() const {
    if (header("content-type").rfind("text/event-stream", 0) == 0) {
      auto all = events();
      return all.empty() ? nlohmann::json{} : all.back();
    }
    return json();
  }
};

/// Sends one request; `until` (if any) sees the body so far and may end it
/// early (an endless stream) by returning true.
inline mcp_answer mcp_send(uint16_t port, const std::string& method, const std::string& body,
                           http_header_list headers,
                           const std::function<bool(const std::string&)>& until = {},
                           const std::string& content_type = "application/json") {
  http_client::options opts;
  opts.total_deadline = std::chrono::milliseconds(20'000);
  opts.keep_alive = false;
  auto client = loopback_client(port, opts);
  mcp_answer answer;
  auto on_chunk = [&](std::string_view chunk) {
    answer.body += chunk;
    return !(until && until(answer.body));
  };
  result<http_response> sent = status::error(errc::internal, "no method");
  if (method == "POST")
    sent = client->post("/mcp", headers, body, content_type, on_chunk);
  else if (method == "GET")
    sent = client->get("/mcp", headers, on_chunk);
  else if (method == "DELETE")
    sent = client->del("/mcp", headers, on_chunk);
  if (sent) {
    answer.status = sent->status;
    answer.headers = sent->headers;
  } else {
    // Ended early by `until` (or failed): what arrived is what there is.
    answer.status = -1;
  }
  return answer;
}

/// Waits, bounded (10 s), for `flag` another thread sets; its value then.
inline bool eventually(const std::atomic<bool>& flag) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!flag && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  return flag;
}

inline http_header_list accepting_both(http_header_list headers = {}) {
  headers.emplace_back("Accept", "application/json, text/event-stream");
  return headers;
}

/// `headers` with the value of `name` replaced (added when absent).
inline http_header_list with_header(http_header_list headers, const std::string& name,
                                    const std::string& value) {
  for (auto& [key, old] : headers)
    if (key == name) {
      old = value;
      return headers;
    }
  headers.emplace_back(name, value);
  return headers;
}

inline std::string rpc(const nlohmann::json& id, const std::string& method,
                       const nlohmann::json& params) {
  nlohmann::json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null())
    message["params"] = params;
  return message.dump();
}

// -- 2026-07-28 ---------------------------------------------------------------------

/// A request's _meta at 2026-07-28 with the given client capabilities.
inline nlohmann::json modern_meta(nlohmann::json capabilities = nlohmann::json::object()) {
  return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
          {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)}};
}

/// The 2026-07-28 headers of `method` (Mcp-Name when `name` is given).
inline http_header_list modern_headers(const std::string& method, const std::string& name = {}) {
  auto headers = accepting_both({{"MCP-Protocol-Version", "2026-07-28"}, {"Mcp-Method", method}});
  if (!name.empty())
    headers.emplace_back("Mcp-Name", name);
  return headers;
}

/// A well-formed 2026-07-28 request: `params` with a _meta added unless it
/// has one, the headers its method and name call for, then `extra` headers.
inline mcp_answer modern(uint16_t port, const std::string& method,
                         nlohmann::json params = nlohmann::json::object(),
                         http_header_list extra = {}, nlohmann::json id = 1) {
  if (!params.contains("_meta"))
    params["_meta"] = modern_meta();
  std::string name;
  if ((method == "tools/call" || method == "prompts/get") && params.contains("name"))
    name = params["name"].get<std::string>();
  if (method == "resources/read" && params.contains("uri"))
    name = params["uri"].get<std::string>();
  if (method.rfind("tasks/", 0) == 0 && params.contains("taskId") && params["taskId"].is_string())
    name = params["taskId"].get<std::string>();
  auto headers = modern_headers(method, name);
  headers.insert(headers.end(), extra.begin(), extra.end());
  return mcp_send(port, "POST", rpc(id, method, params), headers);
}

// -- 2025-11-25 ---------------------------------------------------------------------

/// Opens a 2025-11-25 session (initialize, then notifications/initialized);
/// its id. `capabilities`: what the client declares.
inline std::string open_session(uint16_t port,
                                nlohmann::json capabilities = nlohmann::json::object(),
                                http_header_list extra = {}) {
  auto headers = accepting_both(extra);
  auto init = mcp_send(port, "POST",
                       rpc(0, "initialize",
                           {{"protocolVersion", "2025-11-25"},
                            {"capabilities", std::move(capabilities)},
                            {"clientInfo", {{"name", "test"}, {"version", "1"}}}}),
                       headers);
  REQUIRE(init.status == 200);
  auto id = init.header("mcp-session-id");
  REQUIRE_FALSE(id.empty());
  headers.emplace_back("Mcp-Session-Id", id);
  headers.emplace_back("MCP-Protocol-Version", "2025-11-25");
  auto initialized =
    mcp_send(port, "POST", R"({"jsonrpc":"2.0","method":"notifications/initialized"})", headers);
  REQUIRE(initialized.status == 202);
  return id;
}

inline http_header_list in_session(const std::string& session_id, http_header_list extra = {}) {
  auto headers =
    accepting_both({{"Mcp-Session-Id", session_id}, {"MCP-Protocol-Version", "2025-11-25"}});
  headers.insert(headers.end(), extra.begin(), extra.end());
  return headers;
}

/// A request in a session.
inline mcp_answer in_session_call(uint16_t port, const std::string& session_id,
                                  const std::string& method,
                                  nlohmann::json params = nlohmann::json::object(),
                                  http_header_list extra = {}, nlohmann::json id = 1) {
  return mcp_send(port, "POST", rpc(id, method, params), in_session(session_id, extra));
}

/// A tool answering `text`, counting its runs in `runs` (if given).
inline mcp_tool text_tool(std::string name, std::string text, std::atomic<int>* runs = nullptr) {
  mcp_tool tool;
  tool.name = std::move(name);
  tool.description = "answers " + text;
  tool.handler = [text, runs](const nlohmann::json&, mcp_call_context&) -> mcp_outcome {
    if (runs)
      ++*runs;
    return mcp_text_result(text);
  };
  return tool;
}

/// A resource `uri` whose read answers `text`.
inline mcp_resource text_resource(std::string uri, std::string text) {
  mcp_resource resource;
  resource.uri = uri;
  resource.name = std::move(uri);
  resource.read = [text](const std::string& read_uri, const std::map<std::string, std::string>&,
                         mcp_call_context&) -> mcp_outcome {
    return nlohmann::json{{"contents", {{{"uri", read_uri}, {"text", text}}}}};
  };
  return resource;
}

/// A prompt without arguments or messages.
inline mcp_prompt empty_prompt(std::string name) {
  mcp_prompt prompt;
  prompt.name = std::move(name);
  prompt.get = [](const std::map<std::string, std::string>&, mcp_call_context&) -> mcp_outcome {
    return nlohmann::json{{"messages", nlohmann::json::array()}};
  };
  return prompt;
}

} // namespace voxos::test
