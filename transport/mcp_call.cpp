// One handler-backed call of the MCP server (mcp_server.hpp): the context a
// handler gets, its runs, the input rounds, and the answer, as JSON or as an
// SSE stream.
#include "transport/mcp_server_state.hpp"

#include <exception>
#include <utility>
#include <variant>

#include "config/log.hpp"
#include "transport/ascii.hpp"
#include "transport/sse_parser.hpp"

namespace voxos {

using namespace mcp_detail;

namespace {

constexpr std::string_view log_component = "mcp_server";

const char* const log_level_names[] = {"debug", "info",     "notice", "warning",
                                       "error", "critical", "alert",  "emergency"};

/// The capability an input request's method needs.
const char* capability_of(std::string_view method) {
  if (method == "elicitation/create")
    return "elicitation";
  if (method == "sampling/createMessage")
    return "sampling";
  if (method == "roots/list")
    return "roots";
  return nullptr;
}

} // namespace

// -- results and messages ----------------------------------------------------------

nlohmann::json mcp_text_result(std::string_view text) {
  return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", std::string{text}}}})}};
}

nlohmann::json mcp_tool_error(std::string_view text) {
  auto out = mcp_text_result(text);
  out["isError"] = true;
  return out;
}

mcp_error mcp_resource_not_found(std::string_view uri, const mcp_call_context& ctx) {
  auto code = mcp_is_session_version(ctx.protocol_version()) ? mcp_detail::code_resource_not_found
                                                             : mcp_code::invalid_params;
  return mcp_error{code, "Resource not found", nlohmann::json{{"uri", std::string{uri}}}};
}

namespace mcp_detail {

std::string response_text(const jsonrpc_id& id, const nlohmann::json& result_value) {
  if (auto text = make_jsonrpc_response(id, result_value))
    return std::move(*text);
  return std::move(*make_jsonrpc_error_response(id, mcp_code::internal_error,
                                                "the result holds a string that is not UTF-8"));
}

std::string error_text(const std::optional<jsonrpc_id>& id, int64_t code, std::string_view message,
                       const nlohmann::json& data) {
  if (auto text = make_jsonrpc_error_response(id, code, message, data))
    return std::move(*text);
  return std::move(*make_jsonrpc_error_response(id, code, "error"));
}

std::string notification_text(std::string_view method, const nlohmann::json& params) {
  if (auto text = make_jsonrpc_notification(method, params))
    return std::move(*text);
  return {};
}

void answer(httplib::Response& res, int http_status, std::string text) {
  res.status = http_status;
  res.set_content(std::move(text), "application/json");
}

void answer_error(httplib::Response& res, int http_status, const std::optional<jsonrpc_id>& id,
                  int64_t code, std::string_view message, const nlohmann::json& data) {
  answer(res, http_status, error_text(id, code, message, data));
}

std::optional<std::string> header_of(const httplib::Request& req, const char* name) {
  if (!req.has_header(name))
    return std::nullopt;
  return std::string{trim_ows(req.get_header_value(name))};
}

void set_stream_headers(httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
}

bool is_object_or_absent(const nlohmann::json& params, const char* member) {
  return !params.contains(member) || params[member].is_object();
}

nlohmann::json server_info(const mcp_server_options& options) {
  nlohmann::json info = {{"name", options.name}, {"version", options.version}};
  if (!options.title.empty())
    info["title"] = options.title;
  return info;
}

std::string call_key(const std::string& session_id, const jsonrpc_id& id) {
  return session_id + "\n"
         + std::visit([](const auto& value) { return nlohmann::json(value).dump(); }, id);
}

} // namespace mcp_detail

// -- one call -------------------------------------------------------------------

mcp_call_context mcp_call_run::context(const mcp_request_info& info,
                                       const mcp_call_channel& channel,
                                       std::shared_ptr<std::atomic<bool>> cancelled) {
  mcp_call_context ctx;
  ctx.caller_ = info.caller.get();
  ctx.protocol_version_ = info.version;
  ctx.client_capabilities_ = &info.capabilities;
  ctx.client_info_ = &info.client_info;
  ctx.progress_token_ = info.progress_token;
  if (info.wire == mcp_wire::stateless) {
    if (info.log_level)
      ctx.log_level_ = static_cast<mcp_log_level>(*info.log_level);
  } else {
    auto level = info.session ? info.session->log_level() : std::nullopt;
    if (level)
      ctx.log_level_ = static_cast<mcp_log_level>(*level);
    else
      ctx.log_all_ = true;
  }
  auto write = channel.write;
  auto emit_mutex = std::make_shared<std::mutex>();
  ctx.emit_ = [write, emit_mutex](std::string message) {
    // Empty: a notification that could not be written (not UTF-8).
    if (!write || message.empty())
      return;
    std::lock_guard lock{*emit_mutex};
    write(message);
  };
  auto gone = channel.gone;
  ctx.gone_ = [gone, cancelled] { return (cancelled && *cancelled) || (gone && gone()); };
  return ctx;
}

mcp_call_context mcp_call_run::task_context(const mcp_task_run& run, std::function<bool()> stopping,
                                            std::function<void(std::string)> status) {
  mcp_call_context ctx;
  const auto& job = *run.job;
  ctx.caller_ = job.caller.get();
  ctx.protocol_version_ = job.version;
  ctx.client_capabilities_ = &job.capabilities;
  ctx.client_info_ = &job.client_info;
  ctx.input_responses_ = run.input_responses;
  ctx.request_state_ = run.state;
  ctx.task_id_ = run.task_id;
  ctx.task_status_ = std::move(status);
  auto cancelled = run.cancelled;
  ctx.gone_ = [cancelled, stopping = std::move(stopping)] { return *cancelled || stopping(); };
  return ctx;
}

void mcp_call_run::set_input(mcp_call_context& ctx, nlohmann::json responses,
                             std::optional<nlohmann::json> state) {
  ctx.input_responses_ = std::move(responses);
  ctx.request_state_ = std::move(state);
}

void mcp_call_run::set_close_stream(mcp_call_context& ctx, std::function<void()> close) {
  ctx.close_stream_ = std::move(close);
}

bool mcp_call_context::client_supports(std::string_view name) const {
  const auto& caps = client_capabilities();
  auto found = caps.find(name);
  return found != caps.end() && !found->is_null() && *found != false;
}

void mcp_call_context::progress(double done, std::optional<double> total,
                                std::string_view message) {
  if (task_status_) {
    if (!message.empty())
      task_status_(std::string{message});
    return;
  }
  if (progress_token_.is_null() || !emit_)
    return;
  nlohmann::json params = {{"progressToken", progress_token_}, {"progress", done}};
  if (total)
    params["total"] = *total;
  if (!message.empty())
    params["message"] = std::string{message};
  emit_(notification_text("notifications/progress", params));
}

void mcp_call_context::log(mcp_log_level level, const nlohmann::json& data,
                           std::string_view logger) {
  if (!emit_ || (!log_all_ && (!log_level_ || level < *log_level_)))
    return;
  nlohmann::json params = {{"level", log_level_names[static_cast<int>(level)]}, {"data", data}};
  if (!logger.empty())
    params["logger"] = std::string{logger};
  emit_(notification_text("notifications/message", params));
}

bool mcp_call_context::cancelled() const {
  return gone_ && gone_();
}

void mcp_call_context::close_stream() {
  if (close_stream_)
    close_stream_();
}

namespace mcp_detail {

mcp_outcome invoke(const std::string& method,
                   const std::function<mcp_outcome(mcp_call_context&)>& run,
                   mcp_call_context& ctx) {
  try {
    return run(ctx);
  } catch (const std::exception&) {
    log::error(log_component, "a handler of " + method + " threw (text withheld)");
  } catch (...) {
    log::error(log_component, "a handler of " + method + " threw a non-standard exception");
  }
  return mcp_error{mcp_code::internal_error, "internal error", nullptr};
}

std::optional<mcp_error> check_input(const mcp_input_required& input, const mcp_call_context& ctx) {
  if (!input.input_requests.is_object()
      || (input.input_requests.empty() && !input.state.has_value()))
    return mcp_error{mcp_code::internal_error, "the handler asked for input without saying what",
                     nullptr};
  auto missing = nlohmann::json::object();
  for (const auto& [key, request] : input.input_requests.items()) {
    const char* capability =
      request.is_object() && request.contains("method") && request["method"].is_string()
        ? capability_of(request["method"].get<std::string>())
        : nullptr;
    if (!capability || (request.contains("params") && !request["params"].is_object()))
      return mcp_error{mcp_code::internal_error,
                       "the handler's input request " + key + " is not one a client answers",
                       nullptr};
    if (!ctx.client_supports(capability))
      missing[capability] = nlohmann::json::object();
  }
  if (!missing.empty())
    return mcp_error{mcp_code::missing_client_capability, "Missing required client capability",
                     nlohmann::json{{"requiredCapabilities", missing}}};
  return std::nullopt;
}

} // namespace mcp_detail

namespace {

/// A complete result, shaped for the wire.
std::string complete_text(const mcp_server_state& state, const mcp_request_info& info,
                          const mcp_call_spec& spec, const jsonrpc_id& id, nlohmann::json result,
                          bool retried) {
  if (!result.is_object())
    return error_text(id, mcp_code::internal_error, "the handler's result is not an object");
  if (info.wire == mcp_wire::stateless) {
    result["resultType"] = "complete";
    if (spec.cache) {
      // A retried request's result depends on its inputs: never cacheable.
      mcp_cache_hint hint = retried ? mcp_cache_hint{} : *spec.cache;
      if (!result.contains("ttlMs"))
        result["ttlMs"] = hint.ttl_ms;
      if (!result.contains("cacheScope"))
        result["cacheScope"] = hint.shared ? "public" : "private";
    }
  }
  (void)state;
  return response_text(id, result);
}

/// 2025-11-25: sends the input requests on the call's stream and waits for
/// the answers; the responses by key, or the error that ends the call.
std::variant<nlohmann::json, mcp_error> play_input_round(mcp_server_state& state,
                                                         const mcp_request_info& info,
                                                         const mcp_input_required& input,
                                                         const mcp_call_channel& channel) {
  if (!channel.write)
    return mcp_error{mcp_code::internal_error,
                     "this call needs input from the client, which needs an event stream "
                     "(Accept: text/event-stream)",
                     nullptr};
  std::map<std::string, std::string> key_of; // request id -> input key
  std::vector<std::string> ids;
  for (const auto& [key, request] : input.input_requests.items()) {
    auto id = state.inputs.expect(info.session->id());
    key_of[id] = key;
    ids.push_back(id);
    auto params = request.contains("params") ? request["params"] : nlohmann::json::object();
    auto text = make_jsonrpc_request(jsonrpc_id{id}, request["method"].get<std::string>(), params);
    if (!text || !channel.write(*text)) {
      state.inputs.await(ids, std::chrono::milliseconds(0), nullptr); // forget them
      return mcp_error{mcp_code::internal_error, "the input request could not be sent", nullptr};
    }
  }
  auto answers = state.inputs.await(ids, state.options.input_timeout, channel.gone);
  auto responses = nlohmann::json::object();
  for (const auto& id : ids) {
    auto found = answers.find(id);
    if (found == answers.end())
      return mcp_error{mcp_code::internal_error,
                       "the client did not answer input request " + key_of[id] + " in time",
                       nullptr};
    if (!found->second.ok)
      return mcp_error{mcp_code::internal_error, "the client refused input request " + key_of[id],
                       nullptr};
    responses[key_of[id]] = std::move(found->second.result);
  }
  return responses;
}

} // namespace

namespace mcp_detail {

/// Runs a call to its end: the final message (response or error), with
/// progress, logs and (2025-11-25) input requests sent on the way. A
/// hand-off becomes a task when the call may have one, else its work runs
/// here as the rest of the call.
std::string run_call(const std::shared_ptr<mcp_server_state>& state_ptr,
                     const mcp_request_info& info, const mcp_call_spec& spec, const jsonrpc_id& id,
                     mcp_call_context& ctx, const mcp_call_channel& channel) {
  auto& state = *state_ptr;
  bool retried = !ctx.input_responses().empty() || ctx.request_state().has_value();
  auto run = spec.run;
  bool handed_off = false;
  for (std::size_t round = 0;;) {
    auto outcome = invoke(spec.method, run, ctx);
    if (auto* result = std::get_if<nlohmann::json>(&outcome))
      return complete_text(state, info, spec, id, std::move(*result), retried);
    if (auto* error = std::get_if<mcp_error>(&outcome))
      return error_text(id, error->code, error->message, error->data);
    if (auto* handoff = std::get_if<mcp_run_as_task>(&outcome)) {
      if (handed_off || !handoff->work)
        return error_text(id, mcp_code::internal_error,
                          handed_off ? "the handed-off work handed off again"
                                     : "the handler handed off no work");
      if (spec.task)
        return start_task(state_ptr, info, spec.method, std::move(*handoff), id);
      run = std::move(handoff->work);
      handed_off = true;
      continue;
    }
    auto& input = std::get<mcp_input_required>(outcome);
    if (!spec.input)
      return error_text(id, mcp_code::internal_error,
                        "the handler asked for input on a method that cannot ask");
    if (auto refused = check_input(input, ctx))
      return error_text(id, refused->code, refused->message, refused->data);
    if (info.wire == mcp_wire::stateless) {
      nlohmann::json result = {{"resultType", "input_required"}};
      if (!input.input_requests.empty())
        result["inputRequests"] = input.input_requests;
      if (input.state)
        result["requestState"] =
          state.sealer.seal(*input.state, {info.caller->principal, spec.method, spec.target},
                            std::chrono::system_clock::now());
      return response_text(id, result);
    }
    if (++round >= state.options.max_input_rounds)
      return error_text(id, mcp_code::internal_error, "the call asked for input too many times");
    // A call waiting for input holds its worker as a stream does: bounded alike.
    if (!state.acquire_stream())
      return error_text(id, mcp_code::internal_error,
                        "too many calls are waiting for input; try again later");
    auto played = play_input_round(state, info, input, channel);
    state.release_stream();
    if (auto* error = std::get_if<mcp_error>(&played))
      return error_text(id, error->code, error->message, error->data);
    mcp_call_run::set_input(ctx, std::move(std::get<nlohmann::json>(played)),
                            std::move(input.state));
    retried = true;
  }
}

void answer_call(const std::shared_ptr<mcp_server_state>& state_ptr, mcp_request_info info,
                 mcp_call_spec spec, jsonrpc_id id, nlohmann::json input_responses,
                 std::optional<nlohmann::json> request_state, httplib::Response& res) {
  auto& state = *state_ptr;
  std::shared_ptr<std::atomic<bool>> cancelled;
  std::string key;
  if (info.session) {
    cancelled = std::make_shared<std::atomic<bool>>(false);
    key = call_key(info.session->id(), id);
    std::lock_guard lock{state.calls_mutex};
    state.calls[key] = cancelled;
  }
  auto forget = [state_ptr, key] {
    if (key.empty())
      return;
    std::lock_guard lock{state_ptr->calls_mutex};
    state_ptr->calls.erase(key);
  };

  if (!info.accepts_stream) {
    mcp_call_channel channel;
    channel.gone = [state_ptr] { return state_ptr->stopping.load(); };
    auto ctx = mcp_call_run::context(info, channel, cancelled);
    mcp_call_run::set_input(ctx, std::move(input_responses), std::move(request_state));
    answer(res, 200, run_call(state_ptr, info, spec, id, ctx, channel));
    forget();
    return;
  }
  info.http = nullptr; // the request is gone by the time the stream is written
  auto parts =
    std::make_shared<mcp_call_parts>(std::move(info), std::move(spec), std::move(id),
                                     std::move(input_responses), std::move(request_state));
  if (std::get<0>(*parts).session) {
    answer_session_stream(state_ptr, std::move(parts), std::move(cancelled), std::move(forget),
                          res);
    return;
  }
  res.status = 200;
  set_stream_headers(res);
  res.set_chunked_content_provider(
    "text/event-stream",
    [state_ptr, parts, cancelled](std::size_t, httplib::DataSink& sink) {
      auto& [call_info, call_spec, call_id, responses, call_state] = *parts;
      mcp_call_channel channel;
      channel.write = [&sink](const std::string& message) {
        auto event = sse_event_text(message);
        return sink.write(event.data(), event.size());
      };
      // 2026-07-28: closing the call's stream is the cancellation.
      channel.gone = [&sink, state_ptr] { return state_ptr->stopping || !sink.is_writable(); };
      auto ctx = mcp_call_run::context(call_info, channel, cancelled);
      mcp_call_run::set_input(ctx, std::move(responses), std::move(call_state));
      auto final_text = run_call(state_ptr, call_info, call_spec, call_id, ctx, channel);
      if (!channel.write(final_text))
        return false;
      sink.done();
      return true;
    },
    [forget](bool) { forget(); });
}

} // namespace mcp_detail

} // namespace voxos
