// Internal to the MCP server (mcp_server.cpp, mcp_call.cpp, mcp_dispatch.cpp):
// the state one mcp_server shares with the HTTP workers serving it, what a
// request is once its wire is known, and the helpers its parts share. Not
// for embedders: they include mcp_server.hpp. CAF-free.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "transport/jsonrpc.hpp"
#include "transport/mcp_registry.hpp"
#include "transport/mcp_request_state.hpp"
#include "transport/mcp_server.hpp"
#include "transport/mcp_sessions.hpp"
#include "transport/mcp_wire.hpp"

namespace voxos {

/// A 2026-07-28 subscriptions/listen stream.
struct mcp_listener {
  mcp_listen_filter filter;
  nlohmann::json subscription_id;
  std::shared_ptr<mcp_stream> stream;
};

struct mcp_server_state {
  explicit mcp_server_state(mcp_server_options opts)
      : options(std::move(opts)),
        sessions(options.max_sessions, options.max_sessions_per_principal, options.session_idle),
        sealer(options.request_state_key, options.request_state_ttl) {}

  mcp_server_options options;
  mcp_registry registry;
  mcp_session_table sessions;
  mcp_pending_inputs inputs;
  mcp_state_sealer sealer;
  std::atomic<bool> stopping{false};

  // Open GET and listen streams (bounded by options.max_streams).
  std::mutex streams_mutex;
  std::condition_variable streams_ended;
  std::size_t open_streams = 0;
  std::vector<std::shared_ptr<mcp_listener>> listeners;

  // 2025-11-25 calls in flight, for notifications/cancelled: session and
  // request id -> the call's cancelled flag.
  std::mutex calls_mutex;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> calls;

  bool acquire_stream() {
    std::lock_guard lock{streams_mutex};
    if (stopping || open_streams >= options.max_streams)
      return false;
    ++open_streams;
    return true;
  }
  void release_stream() {
    std::lock_guard lock{streams_mutex};
    --open_streams;
    streams_ended.notify_all();
  }
};

/// What a request is, whichever wire carried it.
struct mcp_request_info {
  mcp_wire wire = mcp_wire::stateless;
  std::string version;
  std::shared_ptr<const mcp_caller> caller; ///< kept: a streamed call outlives its route
  std::shared_ptr<mcp_session> session;     ///< session wire only
  nlohmann::json capabilities = nlohmann::json::object();
  nlohmann::json client_info;
  nlohmann::json progress_token;
  std::optional<int> log_level; ///< stateless: _meta's logLevel
  bool accepts_stream = false;
  const httplib::Request* http = nullptr; ///< the HTTP request, for its headers
};

/// How a call reaches its client while it runs: `write` sends one message
/// on the call's stream (null when the call is answered as JSON); `gone`
/// says whether the client left.
struct mcp_call_channel {
  std::function<bool(const std::string&)> write;
  std::function<bool()> gone;
};

/// What runs for one handler-backed request, and how its outcome is shaped.
struct mcp_call_spec {
  std::string method;
  std::string target; ///< name or URI, for the sealed state
  std::function<mcp_outcome(mcp_call_context&)> run;
  bool input = false;                  ///< may answer mcp_input_required
  std::optional<mcp_cache_hint> cache; ///< stateless: the hints of a complete result
};

namespace mcp_detail {

// 2025-11-25: a session request without a session, and an unknown session.
inline constexpr int64_t code_no_session = -32000;
inline constexpr int64_t code_unknown_session = -32001;
// 2025-11-25: resources/read of an unknown URI (2026-07-28: invalid params).
inline constexpr int64_t code_resource_not_found = -32002;

/// JSON-RPC message texts. A value that cannot be written (a string that is
/// not UTF-8 in a handler's result) becomes an internal error; a
/// notification that cannot be written is empty (and never sent).
std::string response_text(const jsonrpc_id& id, const nlohmann::json& result_value);
std::string error_text(const std::optional<jsonrpc_id>& id, int64_t code, std::string_view message,
                       const nlohmann::json& data = nullptr);
std::string notification_text(std::string_view method, const nlohmann::json& params);

/// Answers with a JSON body.
void answer(httplib::Response& res, int http_status, std::string text);
void answer_error(httplib::Response& res, int http_status, const std::optional<jsonrpc_id>& id,
                  int64_t code, std::string_view message, const nlohmann::json& data = nullptr);
/// The value of header `name`, trimmed; nullopt when absent.
std::optional<std::string> header_of(const httplib::Request& req, const char* name);
/// The headers of an SSE answer (no caching, no proxy buffering).
void set_stream_headers(httplib::Response& res);
bool is_object_or_absent(const nlohmann::json& params, const char* member);
/// serverInfo.
nlohmann::json server_info(const mcp_server_options& options);
/// The key of a 2025-11-25 call in flight (state.calls).
std::string call_key(const std::string& session_id, const jsonrpc_id& id);

/// Answers a handler-backed request (mcp_call.cpp): as an SSE stream when
/// the client takes one, else as JSON. `input_responses` and
/// `request_state`: a stateless retry's, verified.
void answer_call(const std::shared_ptr<mcp_server_state>& state_ptr, mcp_request_info info,
                 mcp_call_spec spec, jsonrpc_id id, nlohmann::json input_responses,
                 std::optional<nlohmann::json> request_state, httplib::Response& res);

/// Serves one request of either wire once its envelope passed (mcp_dispatch.cpp).
void dispatch(const std::shared_ptr<mcp_server_state>& state_ptr, mcp_request_info info,
              const jsonrpc_id& id, const std::string& method, const nlohmann::json& params,
              httplib::Response& res);

/// Opens a 2026-07-28 subscriptions/listen stream (mcp_server.cpp).
void listen(const std::shared_ptr<mcp_server_state>& state_ptr, const jsonrpc_id& id,
            const nlohmann::json& params, httplib::Response& res);

} // namespace mcp_detail

} // namespace voxos
