#include "transport/mcp_server.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <utility>

#include "config/log.hpp"
#include "transport/ascii.hpp"
#include "transport/jsonrpc.hpp"
#include "transport/mcp_registry.hpp"
#include "transport/mcp_request_state.hpp"
#include "transport/mcp_sessions.hpp"
#include "transport/mcp_wire.hpp"
#include "transport/sse_parser.hpp"

namespace voxos {

namespace {

constexpr std::string_view log_component = "mcp_server";
// 2025-11-25: a session request without a session, and an unknown session.
constexpr int64_t code_no_session = -32000;
constexpr int64_t code_unknown_session = -32001;
// 2025-11-25: resources/read of an unknown URI (2026-07-28: invalid params).
constexpr int64_t code_resource_not_found = -32002;
// How often an open stream looks whether its client is still there.
constexpr std::chrono::milliseconds liveness_slice{250};
// How long stop() waits for open streams to end.
constexpr std::chrono::seconds stop_wait{5};

const char* const log_level_names[] = {"debug", "info",     "notice", "warning",
                                       "error", "critical", "alert",  "emergency"};

} // namespace

// -- shared state ---------------------------------------------------------------

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

// -- results and messages ---------------------------------------------------------

nlohmann::json mcp_text_result(std::string_view text) {
  return {{"content", nlohmann::json::array({{{"type", "text"}, {"text", std::string{text}}}})}};
}

nlohmann::json mcp_tool_error(std::string_view text) {
  auto out = mcp_text_result(text);
  out["isError"] = true;
  return out;
}

namespace {

/// A JSON-RPC message text. A value that cannot be written (a string that
/// is not UTF-8 in a handler's result) becomes an internal error.
std::string response_text(const jsonrpc_id& id, const nlohmann::json& result_value) {
  if (auto text = make_jsonrpc_response(id, result_value))
    return std::move(*text);
  return std::move(*make_jsonrpc_error_response(id, mcp_code::internal_error,
                                                "the result holds a string that is not UTF-8"));
}

std::string error_text(const std::optional<jsonrpc_id>& id, int64_t code, std::string_view message,
                       const nlohmann::json& data = nullptr) {
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
                  int64_t code, std::string_view message, const nlohmann::json& data = nullptr) {
  answer(res, http_status, error_text(id, code, message, data));
}

/// The value of header `name`, trimmed; nullopt when absent.
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

} // namespace

// -- one call -------------------------------------------------------------------

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

struct mcp_call_run {
  static mcp_call_context context(const mcp_request_info& info, const mcp_call_channel& channel,
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

  static void set_input(mcp_call_context& ctx, nlohmann::json responses,
                        std::optional<nlohmann::json> state) {
    ctx.input_responses_ = std::move(responses);
    ctx.request_state_ = std::move(state);
  }
};

bool mcp_call_context::client_supports(std::string_view name) const {
  const auto& caps = client_capabilities();
  auto found = caps.find(name);
  return found != caps.end() && !found->is_null() && *found != false;
}

void mcp_call_context::progress(double done, std::optional<double> total,
                                std::string_view message) {
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

namespace {

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

/// Runs the handler once, never letting an exception out.
mcp_outcome invoke(const mcp_call_spec& spec, mcp_call_context& ctx) {
  try {
    return spec.run(ctx);
  } catch (const std::exception&) {
    log::error(log_component, "a handler of " + spec.method + " threw (text withheld)");
  } catch (...) {
    log::error(log_component, "a handler of " + spec.method + " threw a non-standard exception");
  }
  return mcp_error{mcp_code::internal_error, "internal error", nullptr};
}

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

/// Checks a handler's input requests; the refusal's text, or nullopt.
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

/// Runs a call to its end: the final message (response or error), with
/// progress, logs and (2025-11-25) input requests sent on the way.
std::string run_call(mcp_server_state& state, const mcp_request_info& info,
                     const mcp_call_spec& spec, const jsonrpc_id& id, mcp_call_context& ctx,
                     const mcp_call_channel& channel) {
  bool retried = !ctx.input_responses().empty() || ctx.request_state().has_value();
  for (std::size_t round = 0;; ++round) {
    auto outcome = invoke(spec, ctx);
    if (auto* result = std::get_if<nlohmann::json>(&outcome))
      return complete_text(state, info, spec, id, std::move(*result), retried);
    if (auto* error = std::get_if<mcp_error>(&outcome))
      return error_text(id, error->code, error->message, error->data);
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
    if (round + 1 >= state.options.max_input_rounds)
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

/// The key of a 2025-11-25 call in flight.
std::string call_key(const std::string& session_id, const jsonrpc_id& id) {
  return session_id + "\n"
         + std::visit([](const auto& value) { return nlohmann::json(value).dump(); }, id);
}

/// Answers a handler-backed request: as an SSE stream when the client takes
/// one, else as JSON. `input` holds a stateless retry's verified inputs.
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
    answer(res, 200, run_call(state, info, spec, id, ctx, channel));
    forget();
    return;
  }
  res.status = 200;
  set_stream_headers(res);
  info.http = nullptr; // the request is gone by the time the stream is written
  auto shared = std::make_shared<std::tuple<mcp_request_info, mcp_call_spec, jsonrpc_id,
                                            nlohmann::json, std::optional<nlohmann::json>>>(
    std::move(info), std::move(spec), std::move(id), std::move(input_responses),
    std::move(request_state));
  res.set_chunked_content_provider(
    "text/event-stream",
    [state_ptr, shared, cancelled](std::size_t, httplib::DataSink& sink) {
      auto& [call_info, call_spec, call_id, responses, call_state] = *shared;
      mcp_call_channel channel;
      channel.write = [&sink](const std::string& message) {
        auto event = sse_event_text(message);
        return sink.write(event.data(), event.size());
      };
      channel.gone = [&sink, state_ptr] { return state_ptr->stopping || !sink.is_writable(); };
      auto ctx = mcp_call_run::context(call_info, channel, cancelled);
      mcp_call_run::set_input(ctx, std::move(responses), std::move(call_state));
      auto final_text = run_call(*state_ptr, call_info, call_spec, call_id, ctx, channel);
      if (!channel.write(final_text))
        return false;
      sink.done();
      return true;
    },
    [forget](bool) { forget(); });
}

// -- list, discover and the other plain methods --------------------------------------

std::optional<mcp_list> list_of(std::string_view method) {
  if (method == "tools/list")
    return mcp_list::tools;
  if (method == "resources/list")
    return mcp_list::resources;
  if (method == "resources/templates/list")
    return mcp_list::resource_templates;
  if (method == "prompts/list")
    return mcp_list::prompts;
  return std::nullopt;
}

const char* list_member(mcp_list list) {
  switch (list) {
  case mcp_list::tools:
    return "tools";
  case mcp_list::resources:
    return "resources";
  case mcp_list::resource_templates:
    return "resourceTemplates";
  case mcp_list::prompts:
    return "prompts";
  }
  return "items";
}

const char* capability_of(mcp_list list) {
  switch (list) {
  case mcp_list::tools:
    return "tools";
  case mcp_list::resources:
  case mcp_list::resource_templates:
    return "resources";
  case mcp_list::prompts:
    return "prompts";
  }
  return "";
}

/// Adds the 2026-07-28 result fields to a complete result of a cacheable method.
void stamp(nlohmann::json& result, const mcp_request_info& info, const mcp_cache_hint& hint) {
  if (info.wire != mcp_wire::stateless)
    return;
  result["resultType"] = "complete";
  result["ttlMs"] = hint.ttl_ms;
  result["cacheScope"] = hint.shared ? "public" : "private";
}

nlohmann::json server_info(const mcp_server_options& options) {
  nlohmann::json info = {{"name", options.name}, {"version", options.version}};
  if (!options.title.empty())
    info["title"] = options.title;
  return info;
}

/// The answer of a method that needs no handler of the embedder: a result
/// or an error (nullopt: not one of these methods).
using plain_answer = std::variant<nlohmann::json, mcp_error>;

std::optional<plain_answer> plain_method(mcp_server_state& state, const mcp_request_info& info,
                                         const std::string& method, const nlohmann::json& params) {
  const bool stateless = info.wire == mcp_wire::stateless;
  if (auto list = list_of(method)) {
    auto caps = state.registry.capabilities(state.options.logging);
    if (!caps.contains(capability_of(*list)))
      return std::nullopt; // not offered: method not found
    std::optional<std::string> cursor;
    if (params.contains("cursor")) {
      if (!params["cursor"].is_string())
        return plain_answer{
          mcp_error{mcp_code::invalid_params, "Invalid params: cursor must be a string", nullptr}};
      cursor = params["cursor"].get<std::string>();
    }
    auto page = state.registry.page(*list, cursor, state.options.page_size);
    if (!page)
      return plain_answer{
        mcp_error{mcp_code::invalid_params, "Invalid params: invalid cursor", nullptr}};
    nlohmann::json result = {{list_member(*list), std::move(page->items)}};
    if (page->next_cursor)
      result["nextCursor"] = *page->next_cursor;
    stamp(result, info, state.options.list_cache);
    return plain_answer{std::move(result)};
  }
  if (method == "server/discover" && stateless) {
    nlohmann::json result = {{"supportedVersions", mcp_stateless_versions()},
                             {"capabilities", state.registry.capabilities(state.options.logging)}};
    if (!state.options.instructions.empty())
      result["instructions"] = state.options.instructions;
    result["_meta"] = {{std::string{mcp_meta::server_info}, server_info(state.options)}};
    stamp(result, info, state.options.discover_cache);
    return plain_answer{std::move(result)};
  }
  if (stateless)
    return std::nullopt;
  // The session wire's own methods.
  if (method == "ping")
    return plain_answer{nlohmann::json::object()};
  if (method == "logging/setLevel") {
    if (!state.options.logging)
      return std::nullopt;
    auto level = params.contains("level") && params["level"].is_string()
                   ? mcp_log_level_index(params["level"].get<std::string>())
                   : std::nullopt;
    if (!level)
      return plain_answer{
        mcp_error{mcp_code::invalid_params, "Invalid params: level must be a log level", nullptr}};
    info.session->set_log_level(*level);
    return plain_answer{nlohmann::json::object()};
  }
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    if (!state.registry.capabilities(false).contains("resources"))
      return std::nullopt;
    if (!params.contains("uri") || !params["uri"].is_string())
      return plain_answer{
        mcp_error{mcp_code::invalid_params, "Invalid params: uri must be a string", nullptr}};
    auto uri = params["uri"].get<std::string>();
    if (method == "resources/subscribe")
      info.session->subscribe(uri);
    else
      info.session->unsubscribe(uri);
    return plain_answer{nlohmann::json::object()};
  }
  return std::nullopt;
}

// -- handler-backed methods -------------------------------------------------------------

/// A request refused with a JSON-RPC error before its handler runs.
struct refused_call {
  int http_status;
  mcp_error error;
};

refused_call bad_params(std::string message, nlohmann::json data = nullptr) {
  return {200, mcp_error{mcp_code::invalid_params, "Invalid params: " + std::move(message),
                         std::move(data)}};
}

/// Capabilities a tool needs that the client did not declare.
nlohmann::json missing_capabilities(const mcp_tool& tool, const nlohmann::json& declared) {
  auto missing = nlohmann::json::object();
  for (const auto& name : tool.required_capabilities) {
    auto found = declared.find(name);
    if (found == declared.end() || found->is_null() || *found == false)
      missing[name] = nlohmann::json::object();
  }
  return missing;
}

/// The text of a tool error for arguments failing the input schema.
std::string argument_errors(const validation_result& checked) {
  std::string text = "Invalid arguments:";
  std::size_t shown = 0;
  for (const auto& error : checked.errors) {
    if (++shown > 8) {
      text += " (more errors not shown)";
      break;
    }
    text += " ";
    text += error.instance_path.empty() ? std::string{"(root)"} : error.instance_path;
    text += ": ";
    text += error.constraint;
    text += " (schema ";
    text += error.schema_path;
    text += ");";
  }
  return text;
}

refused_call header_mismatch(std::string message) {
  return {400, mcp_error{mcp_code::header_mismatch, std::move(message), nullptr}};
}

/// True if a plain header value holds only what HTTP allows unencoded.
bool plain_header_chars(std::string_view value) {
  return std::all_of(value.begin(), value.end(), [](char ch) {
    auto byte = static_cast<unsigned char>(ch);
    return byte == '\t' || (byte >= 0x20 && byte <= 0x7e);
  });
}

/// 2026-07-28: each argument a tool mirrors into `Mcp-Param-<name>` must
/// come with that header, equal to it after decoding (numerically for an
/// integer); an argument absent or null expects no header.
std::optional<refused_call> check_header_params(const mcp_tool_entry& entry,
                                                const nlohmann::json& arguments,
                                                const httplib::Request& req) {
  for (const auto& param : entry.header_params) {
    const nlohmann::json* value = &arguments;
    for (const auto& step : param.path) {
      if (!value->is_object() || !value->contains(step)) {
        value = nullptr;
        break;
      }
      value = &(*value)[step];
    }
    if (!value || value->is_null())
      continue;
    auto name = "Mcp-Param-" + param.header;
    auto given = header_of(req, name.c_str());
    if (!given)
      return header_mismatch("Missing " + name + " header");
    if (!plain_header_chars(*given))
      return header_mismatch(name + " header holds invalid characters");
    auto decoded = mcp_header_value(*given);
    if (!decoded)
      return header_mismatch(name + " header holds malformed base64");
    bool same = false;
    if (value->is_string()) {
      same = *decoded == value->get_ref<const std::string&>();
    } else if (value->is_boolean()) {
      same = *decoded == (value->get<bool>() ? "true" : "false");
    } else if (value->is_number()) {
      char* end = nullptr;
      double number = std::strtod(decoded->c_str(), &end);
      same = !decoded->empty() && end == decoded->c_str() + decoded->size()
             && number == value->get<double>();
    } else {
      continue; // the wrong type: the schema check reports it
    }
    if (!same)
      return header_mismatch(name + " header does not match the argument");
  }
  return std::nullopt;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json>
tool_call(mcp_server_state& state, const mcp_request_info& info, const nlohmann::json& params) {
  if (!params.contains("name") || !params["name"].is_string())
    return bad_params("name must be a string");
  auto name = params["name"].get<std::string>();
  auto entry = state.registry.tool(name);
  if (!entry)
    return bad_params("unknown tool");
  if (!is_object_or_absent(params, "arguments"))
    return bad_params("arguments must be an object");
  auto arguments = params.contains("arguments") ? params["arguments"] : nlohmann::json::object();
  if (info.wire == mcp_wire::stateless && info.http)
    if (auto refused = check_header_params(*entry, arguments, *info.http))
      return *refused;
  auto missing = missing_capabilities(entry->tool, info.capabilities);
  if (!missing.empty()) {
    if (info.wire == mcp_wire::stateless)
      return refused_call{400, mcp_error{mcp_code::missing_client_capability,
                                         "Missing required client capability",
                                         nlohmann::json{{"requiredCapabilities", missing}}}};
    return nlohmann::json(mcp_tool_error("This tool needs client capabilities the client did "
                                         "not declare: "
                                         + missing.dump()));
  }
  auto checked = validate(entry->arguments, arguments);
  if (!checked.is_valid())
    return nlohmann::json(mcp_tool_error(argument_errors(checked)));
  mcp_call_spec spec;
  spec.method = "tools/call";
  spec.target = name;
  spec.input = true;
  spec.run = [entry, arguments = std::move(arguments)](mcp_call_context& ctx) {
    return entry->tool.handler(arguments, ctx);
  };
  return spec;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json> prompt_get(mcp_server_state& state,
                                                                     const nlohmann::json& params) {
  if (!params.contains("name") || !params["name"].is_string())
    return bad_params("name must be a string");
  auto name = params["name"].get<std::string>();
  auto prompt = state.registry.prompt(name);
  if (!prompt)
    return bad_params("unknown prompt");
  if (!is_object_or_absent(params, "arguments"))
    return bad_params("arguments must be an object");
  std::map<std::string, std::string> arguments;
  if (params.contains("arguments"))
    for (const auto& [key, value] : params["arguments"].items()) {
      if (!value.is_string())
        return bad_params("arguments." + key + " must be a string");
      arguments[key] = value.get<std::string>();
    }
  for (const auto& argument : prompt->arguments)
    if (argument.required && arguments.count(argument.name) == 0)
      return bad_params("missing required argument " + argument.name);
  mcp_call_spec spec;
  spec.method = "prompts/get";
  spec.target = name;
  spec.input = true;
  spec.run = [prompt, arguments = std::move(arguments)](mcp_call_context& ctx) {
    return prompt->get(arguments, ctx);
  };
  return spec;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json>
resource_read(mcp_server_state& state, const mcp_request_info& info, const nlohmann::json& params) {
  if (!params.contains("uri") || !params["uri"].is_string())
    return bad_params("uri must be a string");
  auto uri = params["uri"].get<std::string>();
  auto match = state.registry.resource(uri);
  if (!match) {
    nlohmann::json data = {{"uri", uri}};
    if (info.wire == mcp_wire::stateless)
      return refused_call{200, mcp_error{mcp_code::invalid_params, "Resource not found", data}};
    return refused_call{200, mcp_error{code_resource_not_found, "Resource not found", data}};
  }
  mcp_call_spec spec;
  spec.method = "resources/read";
  spec.target = uri;
  spec.input = true;
  spec.cache = match->cache ? *match->cache : state.options.read_cache;
  spec.run = [read = std::move(match->read), uri, variables = std::move(match->variables)](
               mcp_call_context& ctx) { return read(uri, variables, ctx); };
  return spec;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json>
completion_complete(mcp_server_state& state, const nlohmann::json& params) {
  auto handler = state.registry.completion();
  if (!handler)
    return refused_call{0, {}}; // not offered: method not found
  if (!params.contains("ref") || !params["ref"].is_object() || !params["ref"].contains("type")
      || (params["ref"]["type"] != "ref/prompt" && params["ref"]["type"] != "ref/resource"))
    return bad_params("ref must be a ref/prompt or ref/resource reference");
  const auto& argument = params.contains("argument") ? params["argument"] : nlohmann::json{};
  if (!argument.is_object() || !argument.contains("name") || !argument["name"].is_string()
      || !argument.contains("value") || !argument["value"].is_string())
    return bad_params("argument must have a string name and value");
  mcp_completion_request request{
    params["ref"], argument["name"].get<std::string>(), argument["value"].get<std::string>(), {}};
  if (params.contains("context") && params["context"].is_object()
      && params["context"].contains("arguments") && params["context"]["arguments"].is_object())
    for (const auto& [key, value] : params["context"]["arguments"].items())
      if (value.is_string())
        request.context_arguments[key] = value.get<std::string>();
  mcp_call_spec spec;
  spec.method = "completion/complete";
  spec.run = [handler, request = std::move(request)](mcp_call_context& ctx) -> mcp_outcome {
    auto completion = (*handler)(request, ctx);
    constexpr std::size_t max_values = 100;
    bool cut = completion.values.size() > max_values;
    if (cut)
      completion.values.resize(max_values);
    nlohmann::json body = {{"values", completion.values}, {"hasMore", completion.has_more || cut}};
    if (completion.total)
      body["total"] = *completion.total;
    return nlohmann::json{{"completion", std::move(body)}};
  };
  return spec;
}

/// Verifies a stateless retry's inputResponses and requestState.
std::optional<refused_call> read_retry(mcp_server_state& state, const mcp_request_info& info,
                                       const mcp_call_spec& spec, const nlohmann::json& params,
                                       nlohmann::json& responses,
                                       std::optional<nlohmann::json>& request_state) {
  if (params.contains("inputResponses")) {
    const auto& given = params["inputResponses"];
    if (!given.is_object())
      return bad_params("inputResponses must be an object");
    for (const auto& [key, value] : given.items())
      if (!value.is_object())
        return bad_params("inputResponses." + key + " must be an object");
    responses = given;
  }
  if (params.contains("requestState")) {
    if (!params["requestState"].is_string())
      return bad_params("requestState must be a string");
    auto opened = state.sealer.open(params["requestState"].get<std::string>(),
                                    {info.caller->principal, spec.method, spec.target},
                                    std::chrono::system_clock::now());
    if (!opened)
      return bad_params(opened.error().message());
    request_state = std::move(*opened);
  }
  return std::nullopt;
}

// -- subscriptions/listen and the GET stream --------------------------------------------

/// Serves an open stream until its client leaves, it closes, or the server
/// stops: queued messages as events, a keepalive comment when idle. `first`
/// goes out before anything queued; `last` (if any) when the server stops.
bool pump_stream(mcp_server_state& state, httplib::DataSink& sink, mcp_stream& stream,
                 const std::string& first, const std::string& last) {
  auto write = [&sink](std::string_view text) { return sink.write(text.data(), text.size()); };
  // The first event, or a comment: either way the client sees the stream live at once.
  if (!write(first.empty() ? std::string{sse_keepalive_text} : sse_event_text(first)))
    return false;
  auto idle_since = std::chrono::steady_clock::now();
  while (!state.stopping && !stream.closed()) {
    auto messages = stream.take(liveness_slice);
    for (const auto& message : messages)
      if (!write(sse_event_text(message)))
        return false;
    auto now = std::chrono::steady_clock::now();
    if (!messages.empty()) {
      idle_since = now;
    } else if (now - idle_since >= state.options.keepalive) {
      if (!write(sse_keepalive_text))
        return false;
      idle_since = now;
    }
    if (!sink.is_writable())
      return false;
  }
  if (state.stopping && !last.empty() && !write(sse_event_text(last)))
    return false;
  sink.done();
  return true;
}

void listen(const std::shared_ptr<mcp_server_state>& state_ptr, const mcp_request_info& info,
            const jsonrpc_id& id, const nlohmann::json& params, httplib::Response& res) {
  auto& state = *state_ptr;
  if (!params.contains("notifications") || !params["notifications"].is_object()) {
    answer_error(res, 200, id, mcp_code::invalid_params,
                 "Invalid params: notifications must be an object");
    return;
  }
  const auto& asked = params["notifications"];
  auto caps = state.registry.capabilities(false);
  auto listener = std::make_shared<mcp_listener>();
  auto honored = nlohmann::json::object();
  auto wants = [&](const char* member, const char* capability) {
    bool yes = asked.contains(member) && asked[member] == true && caps.contains(capability);
    if (yes)
      honored[member] = true;
    return yes;
  };
  listener->filter.tools = wants("toolsListChanged", "tools");
  listener->filter.prompts = wants("promptsListChanged", "prompts");
  listener->filter.resources = wants("resourcesListChanged", "resources");
  if (asked.contains("resourceSubscriptions") && asked["resourceSubscriptions"].is_array()
      && caps.contains("resources")) {
    auto uris = nlohmann::json::array();
    for (const auto& uri : asked["resourceSubscriptions"])
      if (uri.is_string() && listener->filter.resource_uris.insert(uri.get<std::string>()).second)
        uris.push_back(uri);
    honored["resourceSubscriptions"] = std::move(uris);
  }
  listener->subscription_id =
    std::visit([](const auto& value) { return nlohmann::json(value); }, id);
  if (!state.acquire_stream()) {
    answer_error(res, 503, id, mcp_code::internal_error, "too many open streams; try again later");
    return;
  }
  listener->stream = std::make_shared<mcp_stream>(state.options.stream_backlog);
  {
    std::lock_guard lock{state.streams_mutex};
    state.listeners.push_back(listener);
  }
  nlohmann::json meta = {{std::string{mcp_meta::subscription_id}, listener->subscription_id}};
  auto first = notification_text("notifications/subscriptions/acknowledged",
                                 {{"_meta", meta}, {"notifications", honored}});
  auto last = response_text(id, {{"resultType", "complete"}, {"_meta", meta}});
  res.status = 200;
  set_stream_headers(res);
  res.set_chunked_content_provider(
    "text/event-stream",
    [state_ptr, listener, first, last](std::size_t, httplib::DataSink& sink) {
      return pump_stream(*state_ptr, sink, *listener->stream, first, last);
    },
    [state_ptr, listener](bool) {
      listener->stream->close();
      {
        std::lock_guard lock{state_ptr->streams_mutex};
        auto& all = state_ptr->listeners;
        all.erase(std::remove(all.begin(), all.end(), listener), all.end());
      }
      state_ptr->release_stream();
    });
  (void)info;
}

void open_session_stream(const std::shared_ptr<mcp_server_state>& state_ptr,
                         const std::shared_ptr<mcp_session>& session, httplib::Response& res) {
  auto& state = *state_ptr;
  if (!state.acquire_stream()) {
    answer_error(res, 503, std::nullopt, mcp_code::internal_error,
                 "too many open streams; try again later");
    return;
  }
  auto stream = std::make_shared<mcp_stream>(state.options.stream_backlog);
  if (!session->attach(stream)) {
    state.release_stream();
    answer_error(res, 409, std::nullopt, mcp_code::invalid_request,
                 "Conflict: this session's stream is already open");
    return;
  }
  res.status = 200;
  set_stream_headers(res);
  res.set_chunked_content_provider(
    "text/event-stream",
    [state_ptr, stream](std::size_t, httplib::DataSink& sink) {
      return pump_stream(*state_ptr, sink, *stream, {}, {});
    },
    [state_ptr, session, stream](bool) {
      stream->close();
      session->detach(stream);
      state_ptr->release_stream();
    });
}

// -- dispatch --------------------------------------------------------------------------

/// Serves one request of either wire once its envelope passed.
void dispatch(const std::shared_ptr<mcp_server_state>& state_ptr, mcp_request_info info,
              const jsonrpc_id& id, const std::string& method, const nlohmann::json& params,
              httplib::Response& res) {
  auto& state = *state_ptr;
  const bool stateless = info.wire == mcp_wire::stateless;
  const int not_found_status = stateless ? 404 : 200;
  auto not_found = [&] {
    answer_error(res, not_found_status, id, mcp_code::method_not_found,
                 "Method not found: " + method);
  };

  if (auto plain = plain_method(state, info, method, params)) {
    if (auto* result = std::get_if<nlohmann::json>(&*plain))
      answer(res, 200, response_text(id, *result));
    else {
      const auto& error = std::get<mcp_error>(*plain);
      answer_error(res, 200, id, error.code, error.message, error.data);
    }
    return;
  }
  if (stateless && method == "subscriptions/listen") {
    listen(state_ptr, info, id, params, res);
    return;
  }

  std::variant<mcp_call_spec, refused_call, nlohmann::json> call = refused_call{0, {}};
  if (method == "tools/call") {
    if (state.registry.capabilities(false).contains("tools"))
      call = tool_call(state, info, params);
  } else if (method == "prompts/get") {
    if (state.registry.capabilities(false).contains("prompts"))
      call = prompt_get(state, params);
  } else if (method == "resources/read") {
    if (state.registry.capabilities(false).contains("resources"))
      call = resource_read(state, info, params);
  } else if (method == "completion/complete")
    call = completion_complete(state, params);
  else if (auto extension = state.registry.extension_method(method)) {
    mcp_call_spec spec;
    spec.method = method;
    spec.input = extension->input;
    if (extension->cacheable)
      spec.cache = extension->cache ? *extension->cache : state.options.list_cache;
    spec.run = [extension, params](mcp_call_context& ctx) {
      return extension->handler(params, ctx);
    };
    call = std::move(spec);
  }

  if (auto* refused = std::get_if<refused_call>(&call)) {
    if (refused->http_status == 0)
      not_found();
    else
      answer_error(res, refused->http_status, id, refused->error.code, refused->error.message,
                   refused->error.data);
    return;
  }
  if (auto* immediate = std::get_if<nlohmann::json>(&call)) {
    if (stateless)
      (*immediate)["resultType"] = "complete";
    answer(res, 200, response_text(id, *immediate));
    return;
  }
  auto& spec = std::get<mcp_call_spec>(call);
  nlohmann::json responses = nlohmann::json::object();
  std::optional<nlohmann::json> request_state;
  if (stateless && spec.input)
    if (auto refused = read_retry(state, info, spec, params, responses, request_state)) {
      answer_error(res, refused->http_status, id, refused->error.code, refused->error.message,
                   refused->error.data);
      return;
    }
  answer_call(state_ptr, std::move(info), std::move(spec), id, std::move(responses),
              std::move(request_state), res);
}

/// The request, notification or response one POST body holds.
struct incoming {
  jsonrpc_message message;
  std::string method;
  std::optional<jsonrpc_id> id;
  nlohmann::json params = nlohmann::json::object();
};

/// Reads a POST body; on failure answers the refusal and returns nullopt.
std::optional<incoming> read_body(const mcp_server_state& state, const httplib::Request& req,
                                  httplib::Response& res) {
  if (req.body.size() > state.options.max_message_bytes) {
    answer_error(res, 413, std::nullopt, mcp_code::invalid_request,
                 "message exceeds " + std::to_string(state.options.max_message_bytes) + " bytes");
    return std::nullopt;
  }
  auto parsed = parse_jsonrpc(req.body);
  if (!parsed) {
    bool well_formed = nlohmann::json::accept(req.body);
    bool batch = well_formed && nlohmann::json::parse(req.body, nullptr, false).is_array();
    if (!well_formed)
      answer_error(res, 400, std::nullopt, mcp_code::parse_error,
                   "Parse error: not well-formed JSON");
    else
      answer_error(res, 400, std::nullopt, mcp_code::invalid_request,
                   batch ? std::string{"Invalid Request: batches are not accepted; send one "
                                       "message per request"}
                         : "Invalid Request: " + parsed.error().message());
    return std::nullopt;
  }
  incoming in{std::move(*parsed), {}, std::nullopt, nlohmann::json::object()};
  const std::optional<std::string>* raw_params = nullptr;
  if (auto* request = std::get_if<jsonrpc_request>(&in.message)) {
    in.method = request->method;
    in.id = request->id;
    raw_params = &request->params;
  } else if (auto* notification = std::get_if<jsonrpc_notification>(&in.message)) {
    in.method = notification->method;
    raw_params = &notification->params;
  }
  if (raw_params && *raw_params) {
    in.params = nlohmann::json::parse(**raw_params, nullptr, false);
    if (!in.params.is_object()) {
      answer_error(res, 400, in.id, mcp_code::invalid_params,
                   "Invalid params: params must be an object");
      return std::nullopt;
    }
  }
  return in;
}

/// The session wire's POST after the body was read.
void post_session(const std::shared_ptr<mcp_server_state>& state_ptr, const httplib::Request& req,
                  httplib::Response& res, const std::shared_ptr<const mcp_caller>& caller,
                  incoming in) {
  auto& state = *state_ptr;
  auto version_header = header_of(req, "MCP-Protocol-Version");
  if (version_header && !mcp_is_session_version(*version_header)) {
    answer_error(res, 400, in.id, mcp_code::invalid_request,
                 "Bad Request: unsupported MCP-Protocol-Version");
    return;
  }
  auto session_id = header_of(req, "Mcp-Session-Id");
  auto* request = std::get_if<jsonrpc_request>(&in.message);

  if (request && in.method == "initialize") {
    if (session_id) {
      answer_error(res, 400, in.id, mcp_code::invalid_request,
                   "Invalid Request: initialize opens a session; send it without Mcp-Session-Id");
      return;
    }
    const auto& params = in.params;
    if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string()
        || !is_object_or_absent(params, "capabilities")
        || !is_object_or_absent(params, "clientInfo")) {
      answer_error(res, 200, in.id, mcp_code::invalid_params,
                   "Invalid params: initialize needs a string protocolVersion, and capabilities "
                   "and clientInfo as objects");
      return;
    }
    auto requested = params["protocolVersion"].get<std::string>();
    auto version =
      mcp_is_session_version(requested) ? requested : std::string{mcp_session_revision};
    auto session = state.sessions.open(
      caller->principal, version,
      params.contains("capabilities") ? params["capabilities"] : nlohmann::json::object(),
      params.contains("clientInfo") ? params["clientInfo"] : nlohmann::json{});
    if (!session) {
      answer_error(res, 503, in.id, mcp_code::internal_error, session.error().message());
      return;
    }
    nlohmann::json result = {{"protocolVersion", version},
                             {"capabilities", state.registry.capabilities(state.options.logging)},
                             {"serverInfo", server_info(state.options)}};
    if (!state.options.instructions.empty())
      result["instructions"] = state.options.instructions;
    res.set_header("Mcp-Session-Id", (*session)->id());
    answer(res, 200, response_text(*in.id, result));
    return;
  }

  if (!session_id) {
    answer_error(res, 400, in.id, code_no_session,
                 "Bad Request: Mcp-Session-Id header is required (send initialize first, or "
                 "MCP-Protocol-Version 2026-07-28 with _meta)");
    return;
  }
  auto session = state.sessions.find(*session_id, caller->principal);
  if (!session) {
    answer_error(res, 404, in.id, code_unknown_session, "Session not found");
    return;
  }

  if (auto* response = std::get_if<jsonrpc_response>(&in.message)) {
    if (auto* text_id = std::get_if<std::string>(&response->id)) {
      auto value = nlohmann::json::parse(response->result, nullptr, false);
      state.inputs.deliver(session->id(), *text_id, {true, std::move(value), {}});
    }
    res.status = 202;
    return;
  }
  if (auto* error = std::get_if<jsonrpc_error_response>(&in.message)) {
    if (error->id)
      if (auto* text_id = std::get_if<std::string>(&*error->id))
        state.inputs.deliver(session->id(), *text_id, {false, nullptr, error->message});
    res.status = 202;
    return;
  }
  if (!request) {
    // A notification: cancellation of a call in flight, or nothing to do.
    if (in.method == "notifications/cancelled" && in.params.contains("requestId")) {
      const auto& target = in.params["requestId"];
      std::optional<jsonrpc_id> target_id;
      if (target.is_string())
        target_id = jsonrpc_id{target.get<std::string>()};
      else if (target.is_number_integer())
        target_id = jsonrpc_id{target.get<int64_t>()};
      if (target_id) {
        std::lock_guard lock{state.calls_mutex};
        auto found = state.calls.find(call_key(session->id(), *target_id));
        if (found != state.calls.end())
          *found->second = true;
      }
    }
    res.status = 202;
    return;
  }

  mcp_request_info info;
  info.wire = mcp_wire::session;
  info.version = session->version();
  info.caller = caller;
  info.session = session;
  info.capabilities = session->capabilities();
  info.client_info = session->client_info();
  if (in.params.contains("_meta") && in.params["_meta"].is_object()
      && in.params["_meta"].contains("progressToken"))
    info.progress_token = in.params["_meta"]["progressToken"];
  info.accepts_stream = mcp_accepts(req.get_header_value("Accept"), "text/event-stream");
  dispatch(state_ptr, std::move(info), *in.id, in.method, in.params, res);
}

/// The stateless wire's POST after the body was read.
void post_stateless(const std::shared_ptr<mcp_server_state>& state_ptr, const httplib::Request& req,
                    httplib::Response& res, const std::shared_ptr<const mcp_caller>& caller,
                    incoming in) {
  auto* request = std::get_if<jsonrpc_request>(&in.message);
  if (!request) {
    if (std::holds_alternative<jsonrpc_notification>(in.message)) {
      res.status = 202;
      return;
    }
    answer_error(res, 400, std::nullopt, mcp_code::invalid_request,
                 "Invalid Request: clients send no responses at 2026-07-28");
    return;
  }
  mcp_request_headers headers{header_of(req, "MCP-Protocol-Version"), header_of(req, "Mcp-Method"),
                              header_of(req, "Mcp-Name")};
  if (auto refusal = mcp_check_stateless(headers, in.method, in.params)) {
    answer_error(res, refusal->http_status, in.id, refusal->code, refusal->message, refusal->data);
    return;
  }
  const auto& meta = in.params["_meta"];
  mcp_request_info info;
  info.wire = mcp_wire::stateless;
  info.version = *headers.protocol_version;
  info.caller = caller;
  info.capabilities = meta[std::string{mcp_meta::client_capabilities}];
  if (meta.contains(mcp_meta::client_info))
    info.client_info = meta[std::string{mcp_meta::client_info}];
  if (meta.contains("progressToken"))
    info.progress_token = meta["progressToken"];
  if (meta.contains(mcp_meta::log_level))
    info.log_level = mcp_log_level_index(meta[std::string{mcp_meta::log_level}].get<std::string>());
  info.accepts_stream = mcp_accepts(req.get_header_value("Accept"), "text/event-stream");
  info.http = &req;
  dispatch(state_ptr, std::move(info), *in.id, in.method, in.params, res);
}

/// The checks every request of the endpoint passes first: true if it may go on.
bool admitted(const mcp_server_state& state, const httplib::Request& req, httplib::Response& res) {
  if (state.stopping) {
    answer_error(res, 503, std::nullopt, mcp_code::internal_error, "the server is stopping");
    return false;
  }
  if (req.has_header("Origin")
      && !mcp_origin_allowed(req.get_header_value("Origin"), state.options.allowed_origins)) {
    answer_error(res, 403, std::nullopt, mcp_code::invalid_request,
                 "Forbidden: Origin not allowed");
    return false;
  }
  if (!mcp_host_allowed(req.get_header_value("Host"), state.options.allowed_hosts)) {
    answer_error(res, 403, std::nullopt, mcp_code::invalid_request, "Forbidden: Host not allowed");
    return false;
  }
  return true;
}

void handle_request(const std::shared_ptr<mcp_server_state>& state_ptr, const httplib::Request& req,
                    httplib::Response& res, std::shared_ptr<const mcp_caller> caller) {
  auto& state = *state_ptr;
  if (!admitted(state, req, res))
    return;
  auto version_header = header_of(req, "MCP-Protocol-Version");
  bool modern = version_header && !mcp_is_session_version(*version_header);

  if (req.method == "GET" || req.method == "DELETE") {
    if (modern) {
      res.set_header("Allow", "POST");
      answer_error(res, 405, std::nullopt, mcp_code::invalid_request,
                   "Method Not Allowed: 2026-07-28 has no " + req.method + " on the endpoint");
      return;
    }
    auto session_id = header_of(req, "Mcp-Session-Id");
    if (!session_id) {
      answer_error(res, 400, std::nullopt, code_no_session,
                   "Bad Request: Mcp-Session-Id header is required");
      return;
    }
    if (req.method == "DELETE") {
      if (state.sessions.end(*session_id, caller->principal))
        res.status = 200;
      else
        answer_error(res, 404, std::nullopt, code_unknown_session, "Session not found");
      return;
    }
    if (!mcp_accepts(req.get_header_value("Accept"), "text/event-stream")) {
      answer_error(res, 406, std::nullopt, mcp_code::invalid_request,
                   "Not Acceptable: the stream is text/event-stream");
      return;
    }
    auto session = state.sessions.find(*session_id, caller->principal);
    if (!session) {
      answer_error(res, 404, std::nullopt, code_unknown_session, "Session not found");
      return;
    }
    open_session_stream(state_ptr, session, res);
    return;
  }
  if (req.method != "POST") {
    res.set_header("Allow", "POST, GET, DELETE");
    answer_error(res, 405, std::nullopt, mcp_code::invalid_request, "Method Not Allowed");
    return;
  }
  auto content_type = req.get_header_value("Content-Type");
  auto media_type = trim_ows(std::string_view{content_type}.substr(0, content_type.find(';')));
  if (!equals_ignoring_case(media_type, "application/json")) {
    answer_error(res, 415, std::nullopt, mcp_code::invalid_request,
                 "Unsupported Media Type: the body must be application/json");
    return;
  }
  auto accept = req.get_header_value("Accept");
  if (!mcp_accepts(accept, "application/json") && !mcp_accepts(accept, "text/event-stream")) {
    answer_error(res, 406, std::nullopt, mcp_code::invalid_request,
                 "Not Acceptable: answers are application/json or text/event-stream");
    return;
  }
  auto in = read_body(state, req, res);
  if (!in)
    return;
  auto wire = mcp_wire_of(version_header, req.has_header("Mcp-Session-Id"), in->method, in->params);
  if (wire == mcp_wire::stateless)
    post_stateless(state_ptr, req, res, caller, std::move(*in));
  else
    post_session(state_ptr, req, res, caller, std::move(*in));
}

/// Queues a change notification for every stream that listens for it.
void fan_out(mcp_server_state& state, std::string_view method, const nlohmann::json& params,
             const std::function<bool(const mcp_listen_filter&)>& wants,
             const std::function<bool(const mcp_session&)>& session_wants) {
  auto plain = notification_text(method, params);
  if (plain.empty())
    return; // params not writable (not UTF-8): nothing to send
  for (const auto& session : state.sessions.live())
    if (session_wants(*session))
      session->notify(plain);
  std::vector<std::shared_ptr<mcp_listener>> listeners;
  {
    std::lock_guard lock{state.streams_mutex};
    listeners = state.listeners;
  }
  for (const auto& listener : listeners) {
    if (!wants(listener->filter))
      continue;
    auto tagged = params.is_null() ? nlohmann::json::object() : params;
    tagged["_meta"][std::string{mcp_meta::subscription_id}] = listener->subscription_id;
    listener->stream->push(notification_text(method, tagged));
  }
}

} // namespace

// -- mcp_server ---------------------------------------------------------------------------

mcp_server::mcp_server(mcp_server_options options)
    : state_(std::make_shared<mcp_server_state>(std::move(options))) {}

mcp_server::~mcp_server() {
  stop();
}

status mcp_server::add_tool(mcp_tool tool) {
  auto added = state_->registry.add_tool(std::move(tool));
  if (added)
    notify_tools_changed();
  return added;
}

bool mcp_server::remove_tool(std::string_view name) {
  bool removed = state_->registry.remove_tool(name);
  if (removed)
    notify_tools_changed();
  return removed;
}

status mcp_server::add_resource(mcp_resource resource) {
  auto added = state_->registry.add_resource(std::move(resource));
  if (added)
    notify_resources_changed();
  return added;
}

bool mcp_server::remove_resource(std::string_view uri) {
  bool removed = state_->registry.remove_resource(uri);
  if (removed)
    notify_resources_changed();
  return removed;
}

status mcp_server::add_resource_template(mcp_resource_template resource_template) {
  auto added = state_->registry.add_resource_template(std::move(resource_template));
  if (added)
    notify_resources_changed();
  return added;
}

status mcp_server::add_prompt(mcp_prompt prompt) {
  auto added = state_->registry.add_prompt(std::move(prompt));
  if (added)
    notify_prompts_changed();
  return added;
}

bool mcp_server::remove_prompt(std::string_view name) {
  bool removed = state_->registry.remove_prompt(name);
  if (removed)
    notify_prompts_changed();
  return removed;
}

void mcp_server::set_completion(mcp_completion_handler handler) {
  state_->registry.set_completion(std::move(handler));
}

status mcp_server::add_extension(mcp_extension extension) {
  return state_->registry.add_extension(std::move(extension));
}

void mcp_server::notify_tools_changed() {
  fan_out(
    *state_, "notifications/tools/list_changed", nullptr,
    [](const mcp_listen_filter& filter) { return filter.tools; },
    [](const mcp_session&) { return true; });
}

void mcp_server::notify_prompts_changed() {
  fan_out(
    *state_, "notifications/prompts/list_changed", nullptr,
    [](const mcp_listen_filter& filter) { return filter.prompts; },
    [](const mcp_session&) { return true; });
}

void mcp_server::notify_resources_changed() {
  fan_out(
    *state_, "notifications/resources/list_changed", nullptr,
    [](const mcp_listen_filter& filter) { return filter.resources; },
    [](const mcp_session&) { return true; });
}

void mcp_server::notify_resource_updated(std::string_view uri) {
  std::string target{uri};
  fan_out(
    *state_, "notifications/resources/updated", {{"uri", target}},
    [&target](const mcp_listen_filter& filter) { return filter.resource_uris.count(target) != 0; },
    [&target](const mcp_session& session) { return session.subscribed(target); });
}

void mcp_server::mount(httplib::Server& routes, const std::string& path,
                       authenticator authenticate) {
  auto state = state_;
  auto serve = [state, authenticate = std::move(authenticate)](const httplib::Request& req,
                                                               httplib::Response& res) {
    // Origin and Host before the credential: a rebinding page learns nothing.
    if (!admitted(*state, req, res))
      return;
    std::optional<mcp_caller> caller = authenticate ? authenticate(req, res) : mcp_caller{};
    if (caller)
      handle_request(state, req, res, std::make_shared<const mcp_caller>(std::move(*caller)));
  };
  routes.Post(path, serve);
  routes.Get(path, serve);
  routes.Delete(path, serve);
  routes.Put(path, serve);
  routes.Patch(path, serve);
}

void mcp_server::handle(const httplib::Request& req, httplib::Response& res, mcp_caller caller) {
  handle_request(state_, req, res, std::make_shared<const mcp_caller>(std::move(caller)));
}

void mcp_server::stop() {
  auto& state = *state_;
  if (state.stopping.exchange(true))
    return;
  state.inputs.stop();
  state.sessions.end_all();
  {
    std::unique_lock lock{state.streams_mutex};
    for (const auto& listener : state.listeners)
      listener->stream->close();
    state.streams_ended.wait_for(lock, stop_wait, [&] { return state.open_streams == 0; });
  }
}

std::size_t mcp_server::session_count() const {
  return state_->sessions.size();
}

std::size_t mcp_server::open_streams() const {
  std::lock_guard lock{state_->streams_mutex};
  return state_->open_streams;
}

} // namespace voxos
