#include "transport/mcp_http.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <thread>
#include <utility>

#include "transport/ascii.hpp"

namespace voxos {

namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

constexpr std::string_view accept_answer = "application/json, text/event-stream";
constexpr std::string_view accept_events = "text/event-stream";
constexpr std::string_view json_type = "application/json";
constexpr std::string_view events_type = "text/event-stream";

/// Bodies that are ignored are still looked at, this far, for messages that
/// would be lost (and for a JSON-RPC error code in an error answer).
constexpr std::size_t looked_at_body_bytes = std::size_t{64} << 10;
/// Longest Mcp-Session-Id accepted from a server; it is sent back on every
/// request, so it is bounded like any other header we send.
constexpr std::size_t max_session_id_bytes = 4096;
/// The wait before resuming checks cancel() this often.
constexpr milliseconds wait_slice{10};

/// Headers a caller's `extra` may not repeat: this layer or http_client
/// sets them.
constexpr std::array<std::string_view, 7> reserved_headers = {
  "accept",         "content-type",         "content-length", "host",
  "mcp-session-id", "mcp-protocol-version", "last-event-id",
};

bool is_reserved(std::string_view name) {
  return std::any_of(
    reserved_headers.begin(), reserved_headers.end(),
    [name](std::string_view reserved) { return equals_ignoring_case(name, reserved); });
}

bool is_success(int http_status) {
  return http_status >= 200 && http_status < 300;
}

/// The media type of a Content-Type value, lowercase, without parameters
/// ("Application/JSON; charset=utf-8" is "application/json").
std::string media_type_of(std::string_view content_type) {
  content_type = content_type.substr(0, content_type.find(';'));
  const auto first = content_type.find_first_not_of(" \t");
  if (first == std::string_view::npos) {
    return {};
  }
  const auto last = content_type.find_last_not_of(" \t");
  std::string out(content_type.substr(first, last - first + 1));
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

/// The headers of one request: Accept (unless empty), the session headers,
/// Last-Event-ID (unless null or empty), then `extra` without reserved names.
http_header_list request_headers(const mcp_http_headers& headers, std::string_view accept,
                                 const std::string* last_event_id = nullptr) {
  http_header_list out;
  if (!accept.empty()) {
    out.emplace_back("Accept", std::string(accept));
  }
  if (!headers.session_id.empty()) {
    out.emplace_back("Mcp-Session-Id", headers.session_id);
  }
  if (!headers.protocol_version.empty()) {
    out.emplace_back("MCP-Protocol-Version", headers.protocol_version);
  }
  if (last_event_id != nullptr && !last_event_id->empty()) {
    out.emplace_back("Last-Event-ID", *last_event_id);
  }
  for (const auto& [name, value] : headers.extra) {
    if (!is_reserved(name)) {
      out.emplace_back(name, value);
    }
  }
  return out;
}

/// The error for a non-2xx `response` (mcp_http_status_error), noting a 401
/// or 403 and its challenge where the caller asked (mcp_http_headers::refusal).
status failure_of(const http_response& response, const mcp_http_headers& headers,
                  std::string_view body) {
  if (headers.refusal != nullptr && (response.status == 401 || response.status == 403)) {
    headers.refusal->http_status = response.status;
    headers.refusal->challenge = response.header("www-authenticate");
  }
  return mcp_http_status_error(response.status, headers, body);
}

/// True if `message` is the answer to the request `id`.
bool answers(const jsonrpc_message& message, const jsonrpc_id& id) {
  if (const auto* response = std::get_if<jsonrpc_response>(&message)) {
    return response->id == id;
  }
  if (const auto* failure = std::get_if<jsonrpc_error_response>(&message)) {
    return failure->id == id;
  }
  return false;
}

/// An error response without an id: the server could not read a request's
/// id. In place of an answer it is about the request just sent.
const jsonrpc_error_response* unaddressed_error(const jsonrpc_message& message) {
  const auto* failure = std::get_if<jsonrpc_error_response>(&message);
  return failure != nullptr && !failure->id ? failure : nullptr;
}

status unaddressed_error_status(const jsonrpc_error_response& failure) {
  return status::error(errc::server_error, "server could not read the request (JSON-RPC error "
                                             + std::to_string(failure.code) + ")");
}

/// An http_client failure after which a stream with an event id may be
/// resumed: the connection broke. Not a cancel, not the deadline (the
/// session layer's budget), not a limit.
bool is_broken_connection(const status& failure, const http_client& client) {
  constexpr std::string_view broken = "http request failed";
  return failure.code() == errc::unavailable && !client.cancelled()
         && failure.message().compare(0, broken.size(), broken) == 0;
}

/// Waits the reconnection time (the server's `retry`, at most max_retry, or
/// default_retry). False if the client was cancelled meanwhile.
bool wait_before_resuming(const http_client& client, const sse_parser& parser,
                          const mcp_exchange_limits& limits) {
  milliseconds wait = limits.default_retry;
  if (auto retry = parser.reconnection_time_ms()) {
    wait = milliseconds(*retry);
  }
  wait = std::min(wait, limits.max_retry);
  const auto until = clock_type::now() + wait;
  while (!client.cancelled()) {
    const auto now = clock_type::now();
    if (now >= until) {
      return true;
    }
    std::this_thread::sleep_for(std::min<clock_type::duration>(wait_slice, until - now));
  }
  return false;
}

/// Hands `message` to the sink; an empty sink drops it.
void deliver(const mcp_message_sink& sink, jsonrpc_message&& message) {
  if (sink) {
    sink(std::move(message));
  }
}

status cancelled() {
  return status::error(errc::unavailable, "cancelled");
}

status unexpected_content_type() {
  return status::error(errc::unavailable, "unexpected content type");
}

/// The body of one response, read before its status and headers are known
/// (see the header comment): classified by its first significant byte,
/// buffered when it looks like JSON, else parsed as an event stream as it
/// arrives. The event handler may halt() the reader (a failure, or the
/// answer): the chunk handler then returns false, ending the request, and
/// later events are dropped. The parser lives as long as the reader, so the
/// last event id and the reconnection time survive reconnects.
class body_reader {
public:
  using event_handler = std::function<void(sse_event&&)>;

  body_reader(const sse_limits& limits, event_handler on_event)
      : on_event_(std::move(on_event)), parser_(
                                          [this](sse_event&& event) {
                                            if (!halted_) {
                                              on_event_(std::move(event));
                                            }
                                          },
                                          {}, limits) {}
  body_reader(const body_reader&) = delete;
  body_reader& operator=(const body_reader&) = delete;

  /// Before each response after the first: a fresh body, the same stream
  /// state (last event id, retry).
  void start_response() {
    kind_ = body_kind::undecided;
    raw_.clear();
    scanned_ = 0;
    parser_.restart_stream();
  }

  http_client::chunk_handler chunk_handler() {
    return [this](std::string_view chunk) { return on_chunk(chunk); };
  }

  /// A completed response declared text/event-stream: a body that was held
  /// back as JSON (or only whitespace) is parsed as events after all.
  void finish_as_events() {
    if (kind_ == body_kind::events) {
      return;
    }
    kind_ = body_kind::events;
    std::string bytes;
    bytes.swap(raw_);
    feed(bytes);
  }

  /// Stops reading with `failure` (the first failure wins).
  void halt(status failure) {
    if (!failure_) {
      failure_ = std::move(failure);
    }
    halted_ = true;
  }
  /// Stops reading: what was awaited has arrived.
  void halt() { halted_ = true; }

  const std::optional<status>& failure() const noexcept { return failure_; }
  const sse_parser& parser() const noexcept { return parser_; }
  /// The body held back as JSON; empty for an event stream.
  const std::string& json_body() const noexcept { return raw_; }
  bool is_event_stream() const noexcept { return kind_ == body_kind::events; }

private:
  enum class body_kind : uint8_t { undecided, json, events };

  bool on_chunk(std::string_view chunk) {
    switch (kind_) {
    case body_kind::json:
      raw_.append(chunk);
      return true;
    case body_kind::events:
      return feed(chunk);
    case body_kind::undecided:
      break;
    }
    raw_.append(chunk);
    kind_ = classify();
    if (kind_ != body_kind::events) {
      return true;
    }
    std::string prefix;
    prefix.swap(raw_);
    return feed(prefix);
  }

  /// Looks at the bytes not scanned yet: a UTF-8 BOM at the start and
  /// whitespace are skipped; '{' or '[' means JSON, any other byte an event
  /// stream.
  body_kind classify() {
    constexpr std::string_view bom = "\xEF\xBB\xBF";
    while (scanned_ < raw_.size()) {
      const char ch = raw_[scanned_];
      if (scanned_ < bom.size() && ch == bom[scanned_]
          && raw_.compare(0, scanned_, bom, 0, scanned_) == 0) {
        ++scanned_;
        continue;
      }
      if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
        ++scanned_;
        continue;
      }
      return ch == '{' || ch == '[' ? body_kind::json : body_kind::events;
    }
    return body_kind::undecided;
  }

  bool feed(std::string_view bytes) {
    if (!halted_) {
      if (auto fed = parser_.feed(bytes); !fed.is_ok()) {
        halt(std::move(fed));
      }
    }
    return !halted_;
  }

  event_handler on_event_;
  sse_parser parser_;
  body_kind kind_ = body_kind::undecided;
  std::string raw_;         ///< the body while undecided or JSON
  std::size_t scanned_ = 0; ///< bytes of raw_ classify() has passed
  bool halted_ = false;     ///< stays set across responses
  std::optional<status> failure_;
};

/// Collects the first looked_at_body_bytes of a body whose rest is dropped.
struct looked_at_body {
  std::string text;

  http_client::chunk_handler chunk_handler() {
    return [this](std::string_view chunk) {
      const std::size_t room = looked_at_body_bytes - text.size();
      text.append(chunk.substr(0, room));
      return true;
    };
  }
};

/// True if a 2xx body that should have been empty carries a message: one
/// JSON-RPC message, or an event stream with an event holding data.
bool carries_messages(const http_response& response, const std::string& body) {
  if (media_type_of(response.header("content-type")) == events_type) {
    bool found = false;
    sse_parser parser([&found](sse_event&& event) { found = found || !event.data.empty(); });
    (void)parser.feed(body); // a bound exceeded only ends the search
    return found;
  }
  return parse_jsonrpc(body).is_ok();
}

/// The answer to a send (a notification or a response): a 2xx, whose body
/// must not carry messages unless it is 202 (the body then says nothing).
status judge_send(const http_response& response, const mcp_http_headers& headers,
                  const std::string& body) {
  if (!is_success(response.status)) {
    return failure_of(response, headers, body);
  }
  if (response.status != 202 && carries_messages(response, body)) {
    return status::error(errc::unavailable, "server answered with messages where none were "
                                            "expected (HTTP "
                                              + std::to_string(response.status) + ")");
  }
  return status::ok();
}

status check_session_id(const std::string& session_id) {
  const bool visible = std::all_of(session_id.begin(), session_id.end(),
                                   [](char ch) { return ch >= 0x21 && ch <= 0x7E; });
  if (!visible || session_id.size() > max_session_id_bytes) {
    return status::error(errc::out_of_range,
                         "server sent a session id outside visible ASCII or over 4096 bytes");
  }
  return status::ok();
}

/// The URL scheme of `reference` (RFC 3986: a letter, then letters, digits,
/// '+', '-', '.', then ':'), or "" for a relative reference.
std::string_view scheme_of(std::string_view reference) {
  if (reference.empty() || !std::isalpha(static_cast<unsigned char>(reference.front()))) {
    return {};
  }
  for (std::size_t pos = 1; pos < reference.size(); ++pos) {
    const auto ch = static_cast<unsigned char>(reference[pos]);
    if (ch == ':') {
      return reference.substr(0, pos);
    }
    if (!std::isalnum(ch) && ch != '+' && ch != '-' && ch != '.') {
      return {};
    }
  }
  return {};
}

} // namespace

namespace {

// The texts is_argument_rejection recognises, written by the functions below.
constexpr std::string_view refused_content = "server refused the request: ";
constexpr std::string_view lost_session = "session not recognised: ";
constexpr std::string_view jsonrpc_error_prefix = "server error ";
constexpr int64_t invalid_params = -32602;

} // namespace

std::string_view jsonrpc_error_name(int64_t code) {
  switch (code) {
  case -32700:
    return "parse error";
  case -32600:
    return "invalid request";
  case -32601:
    return "method not found";
  case -32602:
    return "invalid params";
  case -32603:
    return "internal error";
  default:
    break;
  }
  return {};
}

status jsonrpc_error_status(int64_t code) {
  std::string text = std::string{jsonrpc_error_prefix} + std::to_string(code);
  if (auto name = jsonrpc_error_name(code); !name.empty())
    text.append(" (").append(name).append(")");
  return status::error(errc::server_error, std::move(text));
}

bool is_argument_rejection(const status& failure) {
  const auto& text = failure.message();
  if (failure.code() == errc::server_error)
    return text == jsonrpc_error_status(invalid_params).message();
  return failure.code() == errc::rejected && text.rfind(refused_content, 0) == 0;
}

status refused_in_new_session(const status& failure) {
  const auto& text = failure.message();
  if (failure.code() != errc::not_found || text.rfind(lost_session, 0) != 0)
    return failure;
  return status::error(errc::rejected,
                       std::string{refused_content} + text.substr(lost_session.size()));
}

status mcp_http_status_error(int http_status, const mcp_http_headers& headers,
                             std::string_view body) {
  std::string answered = "server answered HTTP " + std::to_string(http_status);
  // A JSON-RPC error in the body: its code only (its text is the server's).
  std::optional<int64_t> rpc_code;
  if (!body.empty() && body.size() <= looked_at_body_bytes) {
    if (auto message = parse_jsonrpc(body); message.is_ok()) {
      if (const auto* failure = std::get_if<jsonrpc_error_response>(&*message)) {
        rpc_code = failure->code;
        answered += " with JSON-RPC error " + std::to_string(failure->code);
      }
    }
  }
  switch (http_status) {
  case 400:
    // A request in a session that the server no longer knows: servers built
    // like the SDK's examples and server-everything answer it 400 (-32000,
    // "No valid session ID provided"), not the specification's 404. Only
    // invalid params (-32602) says the request's content was refused.
    if (!headers.session_id.empty() && rpc_code != invalid_params)
      return status::error(errc::not_found, std::string{lost_session} + answered);
    return status::error(errc::rejected, std::string{refused_content} + answered);
  case 422:
    return status::error(errc::rejected, std::string{refused_content} + answered);
  case 401:
    return status::error(errc::unauthorized, "server requires authorization: " + answered);
  case 403:
    return status::error(errc::forbidden, "server refused access: " + answered);
  case 404:
    if (!headers.session_id.empty()) {
      return status::error(errc::not_found, "session expired: " + answered);
    }
    return status::error(errc::not_found, answered);
  case 405:
    return status::error(errc::method_not_allowed, answered);
  case 413:
    return status::error(errc::body_too_large, "server refused the body size: " + answered);
  default:
    break;
  }
  return status::error(errc::unavailable, answered);
}

result<std::string> resolve_legacy_endpoint(const parsed_url& server_url,
                                            std::string_view reference) {
  // The reference made absolute (RFC 3986, section 5.2, for the forms
  // servers send; "." and ".." segments are left for parse_url to refuse).
  const std::string base = normalised(server_url);
  const std::string origin = base.substr(0, base.size() - server_url.path_and_query.size());
  const std::string_view base_path =
    std::string_view(server_url.path_and_query).substr(0, server_url.path_and_query.find('?'));
  std::string target;
  if (!scheme_of(reference).empty()) {
    target = std::string(reference);
  } else if (reference.substr(0, 2) == "//") {
    target = server_url.scheme + ":" + std::string(reference);
  } else if (!reference.empty() && reference.front() == '/') {
    target = origin + std::string(reference);
  } else if (!reference.empty() && reference.front() == '?') {
    target = origin + std::string(base_path) + std::string(reference);
  } else if (!reference.empty()) {
    target =
      origin + std::string(base_path.substr(0, base_path.rfind('/') + 1)) + std::string(reference);
  }
  auto parsed = parse_url(target);
  if (!parsed.is_ok()) {
    return status::error(errc::out_of_range, "endpoint is not an acceptable URL");
  }
  // Same origin only: the POSTs carry the session's credentials.
  if (parsed->scheme != server_url.scheme || parsed->host != server_url.host
      || parsed->port != server_url.port) {
    return status::error(errc::forbidden, "endpoint on another origin");
  }
  return std::move(parsed->path_and_query);
}

result<mcp_exchange> streamable_request(http_client& client, const std::string& path,
                                        const mcp_http_headers& headers, const std::string& body,
                                        const jsonrpc_id& id, const mcp_message_sink& sink,
                                        const mcp_exchange_limits& limits, bool idempotent) {
  mcp_exchange out;
  std::optional<jsonrpc_message> answer;
  // Without a session id the POST response is read to its end, for its
  // Mcp-Session-Id (see mcp_exchange::response_complete).
  bool stop_at_answer = !headers.session_id.empty();

  // One message of the event stream: the answer, or for the sink.
  body_reader reader(limits.sse, [&](sse_event&& event) {
    if (event.data.empty()) {
      return; // a priming event: only its id matters (kept by the parser)
    }
    auto message = parse_jsonrpc(event.data);
    if (!message.is_ok()) {
      reader.halt(status::error(errc::bad_json, "event stream: " + message.error().message()));
      return;
    }
    if (!answer && answers(*message, id)) {
      answer = std::move(message).value();
      if (stop_at_answer) {
        reader.halt();
      }
      return;
    }
    if (const auto* failure = unaddressed_error(*message); failure != nullptr && !answer) {
      reader.halt(unaddressed_error_status(*failure));
      return;
    }
    deliver(sink, std::move(message).value());
  });
  const auto take_answer = [&]() -> result<mcp_exchange> {
    out.answer = std::move(*answer);
    return std::move(out);
  };

  // The POST.
  status stream_end = status::error(errc::unavailable, "stream ended before the answer");
  auto posted = client.post(path, request_headers(headers, accept_answer), body,
                            std::string(json_type), reader.chunk_handler(), idempotent);
  if (answer && !posted.is_ok()) {
    // Reading stopped at the answer (or broke after it): no status, no headers.
    out.http_status = 200;
    out.response_complete = false;
    return take_answer();
  }
  if (reader.failure()) {
    return *reader.failure();
  }
  if (!posted.is_ok()) {
    if (!is_broken_connection(posted.error(), client)) {
      return posted.error();
    }
    stream_end = posted.error();
  } else {
    const http_response& response = *posted;
    out.http_status = response.status;
    if (!is_success(response.status)) {
      return failure_of(response, headers, reader.json_body());
    }
    out.session_id = response.header("mcp-session-id");
    if (auto valid = check_session_id(out.session_id); !valid.is_ok()) {
      return valid;
    }
    if (response.status == 202) {
      return status::error(errc::unavailable, "server accepted a request without answering it");
    }
    const std::string media = media_type_of(response.header("content-type"));
    if (media == json_type) {
      // One message, which must be the answer.
      if (reader.is_event_stream()) {
        return status::error(errc::bad_json, "JSON answer: not a JSON-RPC message");
      }
      auto message = parse_jsonrpc(reader.json_body());
      if (!message.is_ok()) {
        return status::error(errc::bad_json, "JSON answer: " + message.error().message());
      }
      if (answers(*message, id)) {
        answer = std::move(message).value();
        return take_answer();
      }
      if (const auto* failure = unaddressed_error(*message)) {
        return unaddressed_error_status(*failure);
      }
      const bool is_response = std::holds_alternative<jsonrpc_response>(*message)
                               || std::holds_alternative<jsonrpc_error_response>(*message);
      return status::error(errc::bad_json, is_response ? "answer carries an id that was not asked"
                                                       : "JSON answer is not a response");
    }
    if (media != events_type) {
      return unexpected_content_type();
    }
    reader.finish_as_events();
    if (answer) {
      return take_answer();
    }
    if (reader.failure()) {
      return *reader.failure();
    }
  }

  // The stream ended without the answer: resume it with GETs while it has
  // an event id and the budget lasts. The POST's status and session id stay.
  stop_at_answer = true;
  for (;;) {
    const std::string last_event_id = reader.parser().last_event_id();
    if (last_event_id.empty() || out.resumptions >= limits.max_resumptions) {
      return stream_end;
    }
    if (!wait_before_resuming(client, reader.parser(), limits)) {
      return cancelled();
    }
    ++out.resumptions;
    reader.start_response();
    stream_end = status::error(errc::unavailable, "stream ended before the answer");
    auto resumed = client.get(path, request_headers(headers, accept_events, &last_event_id),
                              reader.chunk_handler());
    if (answer) {
      return take_answer();
    }
    if (reader.failure()) {
      return *reader.failure();
    }
    if (!resumed.is_ok()) {
      if (!is_broken_connection(resumed.error(), client)) {
        return resumed.error();
      }
      stream_end = resumed.error();
      continue;
    }
    if (resumed->status == 405) {
      return status::error(errc::unavailable,
                           "server does not resume streams: server answered HTTP 405");
    }
    if (!is_success(resumed->status)) {
      // Not noted as a refusal (mcp_http_headers::refusal): the POST was
      // accepted before its stream broke, so the request may have run; a
      // caller must not send it again for a new credential.
      return mcp_http_status_error(resumed->status, headers, reader.json_body());
    }
    if (media_type_of(resumed->header("content-type")) != events_type) {
      return unexpected_content_type();
    }
    reader.finish_as_events();
    if (answer) {
      return take_answer();
    }
    if (reader.failure()) {
      return *reader.failure();
    }
  }
}

status streamable_send(http_client& client, const std::string& path,
                       const mcp_http_headers& headers, const std::string& body) {
  looked_at_body answer;
  // A notification or an answer to a server request runs no tool: sending
  // it twice is harmless.
  auto posted = client.post(path, request_headers(headers, accept_answer), body,
                            std::string(json_type), answer.chunk_handler(), true);
  if (!posted.is_ok()) {
    return posted.error();
  }
  return judge_send(*posted, headers, answer.text);
}

status streamable_close_session(http_client& client, const std::string& path,
                                const mcp_http_headers& headers) {
  if (headers.session_id.empty()) {
    return status::ok();
  }
  looked_at_body answer;
  auto deleted = client.del(path, request_headers(headers, {}), answer.chunk_handler());
  if (!deleted.is_ok()) {
    return deleted.error();
  }
  // 404: the session is already gone; 405: the server ends sessions itself.
  const int http_status = deleted->status;
  if (is_success(http_status) || http_status == 404 || http_status == 405) {
    return status::ok();
  }
  return failure_of(*deleted, headers, answer.text);
}

result<mcp_listen_result> streamable_listen(http_client& client, const std::string& path,
                                            const mcp_http_headers& headers,
                                            const mcp_message_sink& sink,
                                            const mcp_exchange_limits& limits) {
  mcp_listen_result out;
  std::size_t delivered = 0; ///< messages on the current connection
  body_reader reader(limits.sse, [&](sse_event&& event) {
    if (event.data.empty()) {
      return;
    }
    auto message = parse_jsonrpc(event.data);
    if (!message.is_ok()) {
      reader.halt(status::error(errc::bad_json, "event stream: " + message.error().message()));
      return;
    }
    ++delivered;
    deliver(sink, std::move(message).value());
  });

  uint32_t quiet = 0; ///< reconnects in a row that delivered no message
  for (bool first = true;; first = false) {
    // One GET; after the first, a resumption.
    const std::string last_event_id = reader.parser().last_event_id();
    if (!first) {
      reader.start_response();
    }
    delivered = 0;
    auto got = client.get(path, request_headers(headers, accept_events, &last_event_id),
                          reader.chunk_handler());
    if (!first) {
      quiet = delivered > 0 ? 0 : quiet + 1;
    }
    if (reader.failure()) {
      return *reader.failure();
    }
    std::optional<status> broken;
    if (!got.is_ok()) {
      if (!is_broken_connection(got.error(), client)) {
        return got.error();
      }
      broken = got.error();
    } else {
      if (got->status == 405 && first) {
        out.supported = false;
        return out;
      }
      if (!is_success(got->status)) {
        return failure_of(*got, headers, reader.json_body());
      }
      if (media_type_of(got->header("content-type")) != events_type) {
        return unexpected_content_type();
      }
      reader.finish_as_events();
      if (reader.failure()) {
        return *reader.failure();
      }
    }

    // The stream ended: resume if it can be.
    if (reader.parser().last_event_id().empty() || quiet >= limits.max_resumptions) {
      if (broken) {
        return *broken;
      }
      return out;
    }
    if (!wait_before_resuming(client, reader.parser(), limits)) {
      return cancelled();
    }
    ++out.resumptions;
  }
}

status legacy_sse_listen(http_client& client, const parsed_url& server_url,
                         const mcp_http_headers& headers,
                         const std::function<void(std::string)>& on_endpoint,
                         const mcp_message_sink& sink, const mcp_exchange_limits& limits) {
  bool have_endpoint = false;
  body_reader reader(limits.sse, [&](sse_event&& event) {
    if (event.event == "endpoint") {
      if (have_endpoint) {
        return; // the first one counts; the POSTs already go there
      }
      auto endpoint = resolve_legacy_endpoint(server_url, event.data);
      if (!endpoint.is_ok()) {
        reader.halt(endpoint.error());
        return;
      }
      have_endpoint = true;
      if (on_endpoint) {
        on_endpoint(std::move(endpoint).value());
      }
      return;
    }
    if (event.event != "message" || event.data.empty()) {
      return;
    }
    auto message = parse_jsonrpc(event.data);
    if (!message.is_ok()) {
      reader.halt(status::error(errc::bad_json, "event stream: " + message.error().message()));
      return;
    }
    deliver(sink, std::move(message).value());
  });

  auto got = client.get(server_url.path_and_query, request_headers(headers, accept_events),
                        reader.chunk_handler());
  if (reader.failure()) {
    return *reader.failure();
  }
  if (!got.is_ok()) {
    return got.error();
  }
  if (!is_success(got->status)) {
    return failure_of(*got, headers, reader.json_body());
  }
  if (media_type_of(got->header("content-type")) != events_type) {
    return unexpected_content_type();
  }
  reader.finish_as_events();
  if (reader.failure()) {
    return *reader.failure();
  }
  return status::error(errc::unavailable,
                       have_endpoint ? "stream ended" : "stream ended before the endpoint event");
}

status legacy_sse_send(http_client& client, const std::string& endpoint_path,
                       const mcp_http_headers& headers, const std::string& body, bool idempotent) {
  looked_at_body answer;
  auto posted = client.post(endpoint_path, request_headers(headers, {}), body,
                            std::string(json_type), answer.chunk_handler(), idempotent);
  if (!posted.is_ok()) {
    return posted.error();
  }
  // Answers arrive on the stream; whatever this body says is not one.
  if (!is_success(posted->status)) {
    return failure_of(*posted, headers, answer.text);
  }
  return status::ok();
}

} // namespace voxos
