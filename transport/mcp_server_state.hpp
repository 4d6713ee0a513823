// Internal to the MCP server (mcp_server.cpp, mcp_call.cpp, mcp_dispatch.cpp,
// mcp_task_calls.cpp, mcp_session_streams.cpp):
// the state one mcp_server shares with the HTTP workers serving it, what a
// request is once its wire is known, and the helpers its parts share. Not
// for embedders: they include mcp_server.hpp. CAF-free.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "transport/jsonrpc.hpp"
#include "transport/mcp_registry.hpp"
#include "transport/mcp_request_state.hpp"
#include "transport/mcp_server.hpp"
#include "transport/mcp_sessions.hpp"
#include "transport/mcp_tasks.hpp"
#include "transport/mcp_wire.hpp"
#include "transport/sse_parser.hpp"

namespace voxos {

/// A 2026-07-28 subscriptions/listen stream.
struct mcp_listener {
  std::string principal; ///< whose tasks it may hear of
  mcp_listen_filter filter;
  nlohmann::json subscription_id;
  std::shared_ptr<mcp_stream> stream;
};

struct mcp_server_state {
  explicit mcp_server_state(mcp_server_options opts)
      : options(std::move(opts)),
        sessions(options.max_sessions, options.max_sessions_per_principal, options.session_idle),
        sealer(options.request_state_key, options.request_state_ttl),
        tasks({options.max_tasks, options.max_tasks_per_principal, options.task_ttl,
               options.task_poll_interval}),
        task_pool(options.task_workers) {}

  mcp_server_options options;
  mcp_registry registry;
  mcp_session_table sessions;
  mcp_pending_inputs inputs;
  mcp_state_sealer sealer;
  mcp_task_table tasks;
  mcp_task_pool task_pool;
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
  bool task = false;                   ///< a hand-off (mcp_run_as_task) becomes a task
  std::optional<mcp_cache_hint> cache; ///< stateless: the hints of a complete result
};

/// Builds the context a handler runs with (mcp_call.cpp); the one friend
/// of mcp_call_context.
struct mcp_call_run {
  /// A request's call: `channel` carries what it sends, `cancelled` (may be
  /// null) is set by notifications/cancelled.
  static mcp_call_context context(const mcp_request_info& info, const mcp_call_channel& channel,
                                  std::shared_ptr<std::atomic<bool>> cancelled);
  /// A run of a task's work: no notifications; progress messages become the
  /// task's statusMessage through `status`.
  static mcp_call_context task_context(const mcp_task_run& run, std::function<bool()> stopping,
                                       std::function<void(std::string)> status);
  static void set_input(mcp_call_context& ctx, nlohmann::json responses,
                        std::optional<nlohmann::json> state);
  static void set_close_stream(mcp_call_context& ctx, std::function<void()> close);
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

/// An open stream's idle clock: a keepalive comment once nothing went out
/// for `every`, so the client sees the stream live and a gone one is noticed.
class idle_clock {
public:
  explicit idle_clock(std::chrono::milliseconds every) : every_(every) {}
  /// After a pass that wrote something or not: writes a keepalive when one
  /// is due; false if that write failed.
  template <typename Write>
  bool tick(bool wrote, const Write& write) {
    auto now = std::chrono::steady_clock::now();
    if (wrote) {
      since_ = now;
    } else if (now - since_ >= every_) {
      if (!write(sse_keepalive_text))
        return false;
      since_ = now;
    }
    return true;
  }

private:
  std::chrono::milliseconds every_;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
};

/// Runs a handler once, never letting an exception out (mcp_call.cpp).
mcp_outcome invoke(const std::string& method,
                   const std::function<mcp_outcome(mcp_call_context&)>& run, mcp_call_context& ctx);
/// Checks a handler's input requests against the client's capabilities;
/// the refusal, or nullopt (mcp_call.cpp).
std::optional<mcp_error> check_input(const mcp_input_required& input, const mcp_call_context& ctx);

/// -32021 for a request that needs the tasks extension it did not declare.
mcp_error tasks_not_declared();
/// Makes a hand-off a task and starts its work (mcp_task_calls.cpp): the
/// CreateTaskResult's text, or the error's when the task cannot be made.
std::string start_task(const std::shared_ptr<mcp_server_state>& state_ptr,
                       const mcp_request_info& info, const std::string& method,
                       mcp_run_as_task handoff, const jsonrpc_id& id);
/// True for the methods of the tasks extension (tasks/get, tasks/update,
/// tasks/cancel).
bool is_task_method(std::string_view method);
/// Serves one of them at 2026-07-28 (mcp_task_calls.cpp).
void serve_task_method(const std::shared_ptr<mcp_server_state>& state_ptr,
                       const mcp_request_info& info, const jsonrpc_id& id,
                       const std::string& method, const nlohmann::json& params,
                       httplib::Response& res);

/// Runs a call to its end (mcp_call.cpp): the final message (response or
/// error), with progress, logs and (2025-11-25) input requests sent on
/// `channel` on the way. A hand-off becomes a task when the call may have
/// one, else its work runs here as the rest of the call.
std::string run_call(const std::shared_ptr<mcp_server_state>& state_ptr,
                     const mcp_request_info& info, const mcp_call_spec& spec, const jsonrpc_id& id,
                     mcp_call_context& ctx, const mcp_call_channel& channel);

/// A call's request, kept for its stream (written after the route returned):
/// what the request is, what runs, its id, a stateless retry's input
/// responses and request state.
using mcp_call_parts = std::tuple<mcp_request_info, mcp_call_spec, jsonrpc_id, nlohmann::json,
                                  std::optional<nlohmann::json>>;

/// 2025-11-25: answers a call as a resumable stream of its session
/// (mcp_session_streams.cpp); `forget` runs once the response is gone.
void answer_session_stream(const std::shared_ptr<mcp_server_state>& state_ptr,
                           std::shared_ptr<mcp_call_parts> parts,
                           std::shared_ptr<std::atomic<bool>> cancelled,
                           std::function<void()> forget, httplib::Response& res);
/// 2025-11-25: a session's GET (mcp_session_streams.cpp).
void open_session_stream(const std::shared_ptr<mcp_server_state>& state_ptr,
                         const std::shared_ptr<mcp_session>& session, const httplib::Request& req,
                         httplib::Response& res);

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
void listen(const std::shared_ptr<mcp_server_state>& state_ptr, const mcp_request_info& info,
            const jsonrpc_id& id, const nlohmann::json& params, httplib::Response& res);

} // namespace mcp_detail

} // namespace voxos
