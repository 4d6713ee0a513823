// The HTTP front of the MCP server (mcp_server.hpp): what a POST, GET or
// DELETE is, which wire it takes, the envelope of each wire, the open
// streams (a session's GET stream, subscriptions/listen) and the change
// notifications they carry; then mcp_dispatch.cpp serves the method.
#include "transport/mcp_server.hpp"

#include <algorithm>
#include <utility>

#include "transport/ascii.hpp"
#include "transport/mcp_server_state.hpp"
#include "transport/sse_parser.hpp"

namespace voxos {

using namespace mcp_detail;

namespace {

// How long stop() waits for open streams to end.
constexpr std::chrono::seconds stop_wait{5};

// -- subscriptions/listen and the GET stream --------------------------------------------

/// Serves a subscriptions/listen stream until its client leaves, it closes,
/// or the server stops: queued messages as events, a keepalive comment when idle. `first`
/// goes out before anything queued; `last` (if any) when the server stops.
bool pump_stream(mcp_server_state& state, httplib::DataSink& sink, mcp_stream& stream,
                 const std::string& first, const std::string& last) {
  auto write = [&sink](std::string_view text) { return sink.write(text.data(), text.size()); };
  // The first event, or a comment: either way the client sees the stream live at once.
  if (!write(first.empty() ? std::string{sse_keepalive_text} : sse_event_text(first)))
    return false;
  idle_clock idle{state.options.keepalive};
  while (!state.stopping && !stream.closed()) {
    auto messages = stream.take(mcp_liveness_slice);
    for (const auto& message : messages)
      if (!write(sse_event_text(message)))
        return false;
    if (!idle.tick(!messages.empty(), write) || !sink.is_writable())
      return false;
  }
  if (state.stopping && !last.empty() && !write(sse_event_text(last)))
    return false;
  sink.done();
  return true;
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
    open_session_stream(state_ptr, session, req, res);
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

/// notifications/tasks for the listen streams that asked for this task.
void notify_task(mcp_server_state& state, const std::string& principal, const std::string& task_id,
                 const nlohmann::json& detailed) {
  std::vector<std::shared_ptr<mcp_listener>> listeners;
  {
    std::lock_guard lock{state.streams_mutex};
    for (const auto& listener : state.listeners)
      if (listener->principal == principal && listener->filter.task_ids.count(task_id) != 0)
        listeners.push_back(listener);
  }
  for (const auto& listener : listeners) {
    auto tagged = detailed;
    tagged["_meta"][std::string{mcp_meta::subscription_id}] = listener->subscription_id;
    listener->stream->push(notification_text("notifications/tasks", tagged));
  }
}

} // namespace

namespace mcp_detail {

void listen(const std::shared_ptr<mcp_server_state>& state_ptr, const mcp_request_info& info,
            const jsonrpc_id& id, const nlohmann::json& params, httplib::Response& res) {
  auto& state = *state_ptr;
  if (!params.contains("notifications") || !params["notifications"].is_object()) {
    answer_error(res, 200, id, mcp_code::invalid_params,
                 "Invalid params: notifications must be an object");
    return;
  }
  const auto& asked = params["notifications"];
  const bool tasks_asked = state.options.max_tasks > 0 && asked.contains("taskIds");
  if (tasks_asked && !asked["taskIds"].is_array()) {
    answer_error(res, 200, id, mcp_code::invalid_params,
                 "Invalid params: notifications.taskIds must be an array");
    return;
  }
  if (tasks_asked && !mcp_declares_tasks(info.capabilities)) {
    auto refusal = tasks_not_declared();
    answer_error(res, 400, id, refusal.code, refusal.message, refusal.data);
    return;
  }
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
  if (tasks_asked) {
    // Only the caller's own tasks; any other id is left out of the ack.
    auto ids = nlohmann::json::array();
    for (const auto& task_id : asked["taskIds"])
      if (task_id.is_string() && state.tasks.get(task_id.get<std::string>(), info.caller->principal)
          && listener->filter.task_ids.insert(task_id.get<std::string>()).second)
        ids.push_back(task_id);
    honored["taskIds"] = std::move(ids);
  }
  listener->principal = info.caller->principal;
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
}

} // namespace mcp_detail

// -- mcp_server ---------------------------------------------------------------------------

mcp_server::mcp_server(mcp_server_options options)
    : state_(std::make_shared<mcp_server_state>(std::move(options))) {
  std::weak_ptr<mcp_server_state> weak = state_;
  state_->tasks.on_change([weak](const std::string& principal, const std::string& task_id,
                                 const nlohmann::json& detailed) {
    if (auto state = weak.lock())
      notify_task(*state, principal, task_id, detailed);
  });
}

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

status mcp_server::add_resource_provider(mcp_resource_provider provider) {
  auto added = state_->registry.add_resource_provider(std::move(provider));
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
  state.tasks.stop();
  state.sessions.end_all();
  {
    std::unique_lock lock{state.streams_mutex};
    for (const auto& listener : state.listeners)
      listener->stream->close();
    state.streams_ended.wait_for(lock, stop_wait, [&] { return state.open_streams == 0; });
  }
  // Running work saw cancelled(); wait for it to end.
  state.task_pool.stop();
}

std::size_t mcp_server::session_count() const {
  return state_->sessions.size();
}

std::size_t mcp_server::open_streams() const {
  std::lock_guard lock{state_->streams_mutex};
  return state_->open_streams;
}

std::size_t mcp_server::task_count() const {
  return state_->tasks.size();
}

} // namespace voxos
