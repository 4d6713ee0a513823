// The MCP server side: one endpoint serving Streamable HTTP at two protocol
// revisions, each at its own wire, for tools, resources (and templates),
// prompts, completions, logging and extensions an embedder registers, and
// resources that differ by caller (mcp_resource_provider).
// CAF-free; the embedder owns the HTTP server (http_server) and decides who
// the caller is.
//
//   2025-11-25 (sessions): `initialize` negotiates the version (2025-11-25,
//     2025-06-18 or 2025-03-26) and opens a session (`Mcp-Session-Id`, bound
//     to the caller who opened it); every later message carries it (400
//     without, 404 for an unknown, ended or foreign one). POST carries
//     requests, notifications and the client's responses; GET opens the
//     session's stream of server notifications (list changes, resource
//     updates) or, with Last-Event-ID, resumes a stream (below); DELETE ends
//     the session. `MCP-Protocol-Version`, if sent, must be one of those
//     versions (400).
//   2026-07-28 (stateless): no session, no GET (405). Every POST carries
//     `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (tools/call,
//     prompts/get, resources/read; the `=?base64?...?=` form decoded) and
//     `params._meta` with the protocol version and the client's capabilities
//     (tasks/get, tasks/update and tasks/cancel name their task in `Mcp-Name`):
//     a missing or mismatched header is 400 -32020, missing `_meta` fields 400
//     -32602, an unsupported version 400 -32022 (data: supported, requested),
//     a method this server does not serve (including the removed initialize,
//     ping, logging/setLevel, resources/(un)subscribe) 404 -32601, a tool
//     needing a capability the client did not declare 400 -32021.
//     `server/discover` describes the server; `subscriptions/listen` opens a
//     stream of the change notifications the client asked for (and of the
//     status of its own tasks it names in `taskIds`). Results carry
//     `resultType`, and the cacheable ones `ttlMs` and `cacheScope`.
//   A request carrying a `_meta` protocol version, or a version header that
//   is not a session one, is served statelessly; `initialize`, a session id
//   or a session version header selects the session wire.
//
// Either wire: a request whose handler may stream (tools/call, prompts/get,
// resources/read, completion/complete, extension methods) is answered as an
// SSE stream when the client accepts one (progress and log notifications go
// there before the response), else as JSON; other requests as JSON. A body
// is one JSON-RPC message: not well-formed 400 -32700, a batch or anything
// else that is not a message 400 -32600, over `max_message_bytes` 413;
// unknown methods -32601, bad params -32602 naming the member, never its
// value. An `Origin` not allowed is 403 (DNS rebinding), as is a `Host` not
// allowed when `allowed_hosts` is set.
//
// Input from the client (elicitation, sampling, roots) is written the
// 2026-07-28 way, once: a handler answers mcp_input_required with the input
// requests it needs and any state of its own, and runs again with the
// client's answers (mcp_call_context::input_responses, request_state). At
// 2026-07-28 the server returns that as an InputRequiredResult (state sealed
// into `requestState`, see mcp_request_state.hpp) and the client retries; at
// 2025-11-25 the server plays the rounds itself: it sends each input request
// to the client as a JSON-RPC request on the call's SSE stream, waits for the
// answers (posted back in the session) and runs the handler again, at most
// `max_input_rounds` times, each wait bounded by `input_timeout`.
//
// Threading: register, remove and notify from any thread. Handlers run on
// the HTTP worker that carries the request, synchronously, without any lock
// of the server held (a handler may register tools or notify). Each open
// stream (a GET stream, a subscriptions/listen stream, a call waiting for
// input at 2025-11-25) holds one HTTP worker: `max_streams` bounds them all
// (a stream past it is 503, a call fails) and must stay below the HTTP
// server's thread count, so that the requests answering them find a worker.
// A task's work runs on one of the server's own `task_workers` threads
// instead. stop() ends every stream and wait, marks every task's work
// cancelled and waits for the running ones to return; call it before the
// HTTP server stops.
//
// Resumable streams (2025-11-25): every SSE stream of a session (a call's
// POST stream, the GET stream) opens with a priming event (an id, `retry`
// `stream_retry`, empty data) and numbers its events "<stream>-<seq>"; the
// last `stream_replay` of each are kept. A client that lost the connection
// sends GET with `Last-Event-ID` and gets the events after it on that stream,
// then the rest as they come (a call's stream ends with its response); a
// Last-Event-ID that is not one of this session's live streams, or whose
// events are no longer kept, is 400. A call goes on when its connection
// drops (losing the connection is not cancelling); a handler may itself end
// the connection mid-call (mcp_call_context::close_stream) so the client
// polls. Each session keeps at most `max_detached_streams` streams nobody
// reads (the oldest goes first, and its call is cancelled).
//
// Tasks (the io.modelcontextprotocol/tasks extension, SEP-2663; advertised
// in server/discover and served at 2026-07-28 only, where clients declare
// capabilities per request): a call of a task-capable tool
// (mcp_tool::task_support) whose handler answers mcp_run_as_task, for a
// request whose `_meta` capabilities declare the extension, becomes a task:
// the server stores it, answers a CreateTaskResult (`resultType: "task"`)
// and runs the work on one of `task_workers` threads; the client polls
// `tasks/get` (the result or error inlined once done), answers the work's
// input requests with `tasks/update` (input_required until every one is
// answered) and may `tasks/cancel`.
// Without the extension the work runs in the request, as a plain call; a
// tool that needs a task (required) is then refused with -32021. Tasks
// belong to the caller who created them (another principal's are unknown:
// -32602), are bounded (`max_tasks`, `max_tasks_per_principal`) and kept for
// `task_ttl` from creation. A request naming tasks/* without declaring the
// extension is 400 -32021. `tasks/result` and `tasks/list` do not exist in
// this extension (-32601). A task's work sends no notifications; the status
// changes of a task go as notifications/tasks to its creator's listen
// streams that named it.
//
// Not here: CORS headers for browsers; the 2025-11-25 experimental tasks.
#pragma once

#include <any>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace voxos {

/// The revisions this server speaks, newest first.
inline constexpr std::string_view mcp_stateless_revision = "2026-07-28";
inline constexpr std::string_view mcp_session_revision = "2025-11-25";

/// JSON-RPC error codes the server answers with.
namespace mcp_code {
inline constexpr int64_t parse_error = -32700;
inline constexpr int64_t invalid_request = -32600;
inline constexpr int64_t method_not_found = -32601;
inline constexpr int64_t invalid_params = -32602;
inline constexpr int64_t internal_error = -32603;
inline constexpr int64_t header_mismatch = -32020;              ///< 2026-07-28
inline constexpr int64_t missing_client_capability = -32021;    ///< 2026-07-28
inline constexpr int64_t unsupported_protocol_version = -32022; ///< 2026-07-28
} // namespace mcp_code

/// Who is calling, as the embedder authenticated them: the server does no
/// authentication of its own. `principal` binds sessions and request states
/// (a session opened by one principal is unknown to every other); "" is the
/// anonymous caller. `context` is the embedder's own (a tenant, a token
/// record), handed to handlers untouched.
struct mcp_caller {
  std::string principal;
  std::any context;
};

enum class mcp_log_level : uint8_t {
  debug,
  info,
  notice,
  warning,
  error,
  critical,
  alert,
  emergency
};

/// A JSON-RPC error a handler answers with. `data` null: none.
struct mcp_error {
  int64_t code = mcp_code::internal_error;
  std::string message;
  nlohmann::json data;
};

/// A handler's request for input from the client: `input_requests` maps keys
/// of the handler's choosing to {"method", "params"} objects
/// (`elicitation/create`, `sampling/createMessage` or `roots/list`), each
/// needing the client's matching capability; `state` (optional) comes back
/// to the handler's next run. At least one of the two must be given.
struct mcp_input_required {
  nlohmann::json input_requests = nlohmann::json::object();
  std::optional<nlohmann::json> state;
};

class mcp_call_context;
struct mcp_run_as_task;

/// What a handler answers: a complete result (a JSON object, e.g. a
/// CallToolResult), a request for input, a JSON-RPC error, or work to run as
/// a task.
using mcp_outcome = std::variant<nlohmann::json, mcp_input_required, mcp_error, mcp_run_as_task>;

/// A handler's answer that the rest of its call is `work`, to run as a task
/// (tasks extension) when the request may have one: the tool is task-capable
/// and the request declares the extension. Then the client gets the task's
/// handle at once and `work` runs later on a task worker, where a
/// mcp_input_required outcome parks the task in input_required until
/// tasks/update brings every answer, and `work` runs again with them
/// (input_responses(), request_state()). Otherwise `work` runs at once, in
/// the request, as the rest of a plain call. Input the handler gathers
/// before handing off (its own mcp_input_required rounds) stays synchronous.
/// `work` answers a result, an error or input; never another hand-off.
struct mcp_run_as_task {
  std::function<mcp_outcome(mcp_call_context& ctx)> work;
  std::string status_message; ///< the task's first statusMessage; empty: none
};

/// A CallToolResult with one text block.
nlohmann::json mcp_text_result(std::string_view text);
/// A CallToolResult with one text block and `isError: true`: a failure the
/// model should see (not a protocol error).
nlohmann::json mcp_tool_error(std::string_view text);

/// What a handler knows of its call and may do during it. Lives for one run
/// of a handler, on the worker running it; not to be kept.
class mcp_call_context {
public:
  const mcp_caller& caller() const noexcept { return *caller_; }
  /// "2026-07-28" or the version the session negotiated.
  const std::string& protocol_version() const noexcept { return protocol_version_; }
  /// The client's declared capabilities (an object; `{}` when none).
  const nlohmann::json& client_capabilities() const noexcept { return *client_capabilities_; }
  /// True if the client declared `name` ("sampling", "elicitation", "roots").
  bool client_supports(std::string_view name) const;
  /// The client's name and version (an object), or null if it sent none.
  const nlohmann::json& client_info() const noexcept { return *client_info_; }
  /// The client's answers to this request's earlier input requests, by key
  /// (an object, empty on a first run). Each value is an object.
  const nlohmann::json& input_responses() const noexcept { return input_responses_; }
  /// The state the handler's previous run asked for, verified.
  const std::optional<nlohmann::json>& request_state() const noexcept { return request_state_; }

  /// Reports progress if the client asked for it (a progressToken); sent
  /// only when the call is answered as a stream. In a task (which sends no
  /// notifications) a non-empty `message` becomes its statusMessage.
  void progress(double done, std::optional<double> total = {}, std::string_view message = {});
  /// A `notifications/message` on the call's stream, if the client's level
  /// lets it through (2026-07-28: only at or above the request's `logLevel`,
  /// none without; 2025-11-25: the session's level, all before any is set).
  void log(mcp_log_level level, const nlohmann::json& data, std::string_view logger = {});
  /// True once the call is cancelled: 2026-07-28, the client closed the
  /// call's stream (that is the cancellation); 2025-11-25, the client sent
  /// notifications/cancelled for it, or the session ended, or its stream was
  /// dropped (a lost connection alone is not a cancellation there: the
  /// client may resume); a task, tasks/cancel or its TTL passed; or the
  /// server is stopping. A long handler should look.
  bool cancelled() const;
  /// 2025-11-25, a call answered as a stream: ends the connection carrying
  /// the stream now, without ending the stream; what the call sends from
  /// here on waits (the last `stream_replay` events) for the client to
  /// resume with GET and Last-Event-ID (SSE polling). Does nothing otherwise.
  void close_stream();
  /// The task this run of a work belongs to; empty when not in a task.
  const std::string& task_id() const noexcept { return task_id_; }

private:
  friend struct mcp_call_run;
  mcp_call_context() = default;

  const mcp_caller* caller_ = nullptr;
  std::string protocol_version_;
  const nlohmann::json* client_capabilities_ = nullptr;
  const nlohmann::json* client_info_ = nullptr;
  nlohmann::json input_responses_ = nlohmann::json::object();
  std::optional<nlohmann::json> request_state_;
  nlohmann::json progress_token_;
  std::optional<mcp_log_level> log_level_;
  bool log_all_ = false;
  std::function<void(std::string)> emit_;
  std::function<bool()> gone_;
  std::function<void()> close_stream_;
  std::function<void(std::string)> task_status_;
  std::string task_id_;
};

/// The error resources/read answers for a URI the server does not serve, at
/// the call's wire: -32602 at 2026-07-28, -32002 at 2025-11-25; `data.uri`.
mcp_error mcp_resource_not_found(std::string_view uri, const mcp_call_context& ctx);

using mcp_tool_handler =
  std::function<mcp_outcome(const nlohmann::json& arguments, mcp_call_context& ctx)>;

/// A tool. `name`: 1 to 64 of [A-Za-z0-9_./-]. `input_schema`: a JSON Schema
/// object with `"type": "object"` (2020-12 unless it names its dialect);
/// arguments are validated against it before the handler runs, and a call
/// whose arguments fail gets a tool error naming the schema paths, never the
/// values. `required_capabilities`: client capabilities the tool cannot work
/// without (refused with -32021 at 2026-07-28, a tool error at 2025-11-25).
/// `output_schema`, `annotations`, `meta` (`_meta`): listed as given (null:
/// absent). `task_support`: whether a call may become a task (its handler
/// answering mcp_run_as_task).
enum class mcp_task_support : uint8_t {
  none,     ///< never a task: a hand-off runs in the request
  optional, ///< a task when the request declares the extension, else in the request
  required  ///< only as a task: a request without the extension is refused (-32021)
};

struct mcp_tool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema = {{"type", "object"}};
  nlohmann::json output_schema;
  nlohmann::json annotations;
  nlohmann::json meta;
  std::vector<std::string> required_capabilities;
  mcp_task_support task_support = mcp_task_support::none;
  mcp_tool_handler handler;
};

/// Caching hints of 2026-07-28 results (`ttlMs`, `cacheScope`).
struct mcp_cache_hint {
  int64_t ttl_ms = 0;
  bool shared = false; ///< "public" (same for every caller) rather than "private"
};

/// Reads a resource: `uri` as requested, `variables` the template's
/// variables (empty for a plain resource). Answers a ReadResourceResult
/// (`contents`).
using mcp_resource_handler = std::function<mcp_outcome(
  const std::string& uri, const std::map<std::string, std::string>& variables,
  mcp_call_context& ctx)>;

struct mcp_resource {
  std::string uri;
  std::string name;
  std::string title;
  std::string description;
  std::string mime_type;
  nlohmann::json annotations;
  std::optional<mcp_cache_hint> cache; ///< default: options' read_cache
  mcp_resource_handler read;
};

/// Resources that differ by caller (e.g. one tenant's skills), under a URI
/// prefix the provider owns whole (no registered resource may lie under it,
/// and it shadows any template matching there). `list` answers the
/// resources a caller may see, asked on every resources/list (the entries'
/// `read` and `cache` are not used; entries outside the prefix are dropped)
/// and listed in URI order among the registered ones; `read` reads any URI
/// under the prefix for the caller, answering mcp_resource_not_found for one
/// it does not serve. An error from `list` answers resources/list with an
/// internal error, its text withheld. With a provider registered,
/// resources/list results are `private` to the caller at 2026-07-28.
struct mcp_resource_provider {
  std::string uri_prefix;
  std::function<result<std::vector<mcp_resource>>(const mcp_caller& caller)> list;
  mcp_resource_handler read;
  std::optional<mcp_cache_hint> cache; ///< of its reads; default: options' read_cache
};

/// A resource template (RFC 6570 level 1: each `{name}` matches one or more
/// characters other than '/'), e.g. `test://template/{id}/data`.
struct mcp_resource_template {
  std::string uri_template;
  std::string name;
  std::string title;
  std::string description;
  std::string mime_type;
  nlohmann::json annotations;
  std::optional<mcp_cache_hint> cache;
  mcp_resource_handler read;
};

struct mcp_prompt_argument {
  std::string name;
  std::string description;
  bool required = false;
};

/// Gets a prompt: answers a GetPromptResult (`messages`). Required arguments
/// are checked before it runs (-32602 naming the missing one).
using mcp_prompt_handler = std::function<mcp_outcome(
  const std::map<std::string, std::string>& arguments, mcp_call_context& ctx)>;

struct mcp_prompt {
  std::string name;
  std::string title;
  std::string description;
  std::vector<mcp_prompt_argument> arguments;
  mcp_prompt_handler get;
};

/// `completion/complete`: `ref` ({"type": "ref/prompt", "name"} or
/// {"type": "ref/resource", "uri"}), the argument being completed, and the
/// arguments already chosen.
struct mcp_completion_request {
  nlohmann::json ref;
  std::string argument;
  std::string value;
  std::map<std::string, std::string> context_arguments;
};
struct mcp_completion {
  std::vector<std::string> values; ///< past 100 cut to 100, `hasMore` set
  std::optional<int64_t> total;
  bool has_more = false;
};
using mcp_completion_handler =
  std::function<mcp_completion(const mcp_completion_request& request, mcp_call_context& ctx)>;

/// A method an extension adds (e.g. `skills/list`): `params` is the request's
/// params object. `cacheable`: its complete results carry the caching hints
/// at 2026-07-28 (`cache`, else the options' list_cache); `input`: it may
/// answer mcp_input_required.
struct mcp_extension_method {
  std::function<mcp_outcome(const nlohmann::json& params, mcp_call_context& ctx)> handler;
  bool cacheable = false;
  bool input = false;
  std::optional<mcp_cache_hint> cache;
};

/// An extension (SEP-2133 style): advertised as `capabilities.extensions[id]
/// = settings`, its methods served at either wire like the core's (a method
/// name the core serves cannot be taken). A list it serves paginates with
/// mcp_pagination.hpp.
struct mcp_extension {
  std::string id;
  nlohmann::json settings = nlohmann::json::object();
  std::map<std::string, mcp_extension_method> methods;
};

/// Defaults beside each bound; all configurable.
struct mcp_server_options {
  std::string name = "voxos"; ///< serverInfo
  std::string version = "0.1.0";
  std::string title;
  std::string instructions;
  bool logging = true;                                  ///< declare the logging capability
  std::size_t max_message_bytes = std::size_t{1} << 20; ///< a POST body: 1 MiB, past it 413
  std::size_t page_size = 100;                          ///< items per list page
  mcp_cache_hint list_cache{};     ///< tools, prompts, resources, templates lists: 0 ms, private
  mcp_cache_hint read_cache{};     ///< resources/read: 0 ms, private
  mcp_cache_hint discover_cache{}; ///< server/discover: 0 ms, private
  std::size_t max_sessions = 1024; ///< 2025-11-25 sessions at once; initialize past it: 503
  std::size_t max_sessions_per_principal = 32; ///< of one caller; past it 503 too
  std::chrono::milliseconds session_idle = std::chrono::minutes(30); ///< then the session ends
  /// Open GET and subscriptions/listen streams, and 2025-11-25 calls waiting
  /// for input: each holds an HTTP worker. Past it: 503, or the call fails.
  std::size_t max_streams = 4;
  std::size_t stream_backlog = 256; ///< queued for one listen stream; past it it closes
  std::chrono::milliseconds keepalive = std::chrono::seconds(15); ///< SSE comment on an idle stream
  /// 2025-11-25: events of one session stream kept for a client resuming it
  /// (Last-Event-ID); a reader further behind is cut off.
  std::size_t stream_replay = 128;
  /// 2025-11-25: streams of one session that nobody reads (a call stream
  /// whose connection went, its response sent or not; a GET stream left);
  /// past it the oldest is dropped and its call, if running, cancelled.
  std::size_t max_detached_streams = 8;
  /// 2025-11-25: the SSE `retry` each session stream opens with.
  std::chrono::milliseconds stream_retry = std::chrono::seconds(1);
  std::chrono::milliseconds input_timeout =
    std::chrono::minutes(2);        ///< 2025-11-25: wait for one input round
  std::size_t max_input_rounds = 8; ///< 2025-11-25: input rounds of one call
  std::string request_state_key;    ///< HMAC key, >= 32 bytes; empty: random per process
  std::chrono::milliseconds request_state_ttl = std::chrono::minutes(10);
  /// Tasks kept at once (terminal ones too, until their TTL); past it a
  /// hand-off that would become a task fails (-32603). 0: the tasks
  /// extension is neither advertised nor served.
  std::size_t max_tasks = 1024;
  std::size_t max_tasks_per_principal = 64; ///< of one caller; past it the same
  /// A task is kept this long from its creation (its ttlMs), then discarded.
  std::chrono::milliseconds task_ttl = std::chrono::hours(1);
  /// The pollIntervalMs suggested to clients.
  std::chrono::milliseconds task_poll_interval = std::chrono::seconds(1);
  /// Threads running tasks' work (started with the first task); tasks past
  /// them wait, working, for one.
  std::size_t task_workers = 4;
  /// `Origin` values accepted ("scheme://host[:port]", exact); empty: only
  /// loopback origins (http(s)://localhost, 127.0.0.1 or [::1], any port).
  /// A request without Origin is not refused for it.
  std::vector<std::string> allowed_origins;
  /// Which tools a caller may see and call (e.g. the tools an agent's grants
  /// allow); null: every tool. A tool it hides is left out of `tools/list`
  /// (a page may then hold fewer items) and is an unknown tool to
  /// `tools/call`. Called on the request's worker, without any server lock.
  std::function<bool(const mcp_caller& caller, std::string_view tool)> tool_visible;
  /// `Host` values accepted ("host" for any port, or "host:port"); empty: any.
  std::vector<std::string> allowed_hosts;
};

struct mcp_server_state;

class mcp_server {
public:
  /// Authenticates one request: the caller, or nullopt after writing the
  /// refusal (status, WWW-Authenticate, body) into the response.
  using authenticator =
    std::function<std::optional<mcp_caller>(const httplib::Request& req, httplib::Response& res)>;

  explicit mcp_server(mcp_server_options options = {});
  ~mcp_server(); ///< stop()
  mcp_server(const mcp_server&) = delete;
  mcp_server& operator=(const mcp_server&) = delete;

  /// Registration. Errors (config_invalid, naming the field): a name, URI or
  /// schema that breaks its rules above, no handler, a duplicate. A change
  /// after the first request notifies the clients listening for it.
  status add_tool(mcp_tool tool);
  bool remove_tool(std::string_view name);
  status add_resource(mcp_resource resource);
  bool remove_resource(std::string_view uri);
  status add_resource_template(mcp_resource_template resource_template);
  /// Errors also: an empty prefix, one overlapping another provider's or a
  /// registered resource's URI, no `list` or `read`.
  status add_resource_provider(mcp_resource_provider provider);
  status add_prompt(mcp_prompt prompt);
  bool remove_prompt(std::string_view name);
  void set_completion(mcp_completion_handler handler);
  status add_extension(mcp_extension extension);

  /// Tells the clients listening (2025-11-25 GET streams, 2026-07-28 listen
  /// streams that asked) that a list changed, or that a resource did (to
  /// those subscribed to its URI).
  void notify_tools_changed();
  void notify_prompts_changed();
  void notify_resources_changed();
  void notify_resource_updated(std::string_view uri);

  /// Serves the MCP endpoint at `path` (POST, GET, DELETE): `authenticate`
  /// first, then handle().
  void mount(httplib::Server& routes, const std::string& path, authenticator authenticate);
  /// Serves one HTTP request of the endpoint for an authenticated caller.
  void handle(const httplib::Request& req, httplib::Response& res, mcp_caller caller);

  /// Ends every open stream and every wait for client input, and refuses
  /// what comes after (503). Idempotent.
  void stop();

  std::size_t session_count() const;
  std::size_t open_streams() const;
  std::size_t task_count() const; ///< tasks kept (terminal ones included)

private:
  std::shared_ptr<mcp_server_state> state_;
};

} // namespace voxos
