// The wire layer of an MCP client over HTTP: the Streamable HTTP transport
// (MCP 2025-03-26, 2025-06-18, 2025-11-25) and the legacy HTTP+SSE transport
// (2024-11-05). One function per HTTP exchange, blocking, over an http_client
// (one origin, pinned addresses, deadline, body limit, cancel). CAF-free.
//
// What lives here: headers, content types, reading an answer from a JSON
// body or an event stream, resuming a broken stream with Last-Event-ID, the
// legacy `endpoint` event, and HTTP statuses as error values. What does not:
// the session (initialize, request ids, the pending map, cancellation
// notices, deadlines, the choice between the two transports), which belongs
// to the caller.
//
// Streamable HTTP, one request (streamable_request):
//
//   POST --> 200 application/json -----> one message: the answer, or bad_json
//        --> 200 text/event-stream --+-> events: other messages to the sink,
//        |                           |   the answer ends the exchange
//        |                           +-> stream ends without the answer, with
//        |                               an event id: wait retry, then
//        |                               GET + Last-Event-ID --> events ...
//        |                               (at most max_resumptions GETs)
//        --> 202, other 2xx type ------> error (a request needs an answer)
//        --> 3xx ------------------------> forbidden "redirects are refused"
//        --> 4xx, 5xx -------------------> error by status (see below)
//
// HTTP statuses as errors (the text names the status, never the URL, a
// header value or the body; a JSON-RPC error in the body adds its numeric
// code, never its message):
//   404 while a session id is sent    not_found "session expired" (the session
//                                     layer re-initialises)
//   400 while a session id is sent,   not_found "session not recognised": the
//   unless its body is JSON-RPC       session is lost (the SDK's examples and
//   invalid params (-32602)           server-everything answer an unknown
//                                     session so); the server ran nothing.
//                                     Refused so again in the session begun
//                                     for it: rejected (refused_in_new_session)
//   404 without a session id          not_found "server answered HTTP 404"
//   405                               method_not_allowed (with 404 and 400: the
//                                     legacy-transport fallback's signal)
//   400 (otherwise), 422              rejected
//   401                               unauthorized
//   403                               forbidden
//   413                               body_too_large
//   any other                         unavailable "server answered HTTP <n>"
// Errors of the http_client pass through unchanged (unavailable "cancelled"
// after cancel(), "deadline exceeded", "http request failed: ...";
// body_too_large; forbidden for a redirect).
//
// Sending twice: a request POST is marked idempotent (http_client::post) only
// when its caller says so (`idempotent`): then a reused connection that the
// server closes before a byte of the answer sends it once more; otherwise it
// is never sent twice, since the server may have run it. Notifications and
// answers to server requests run no tool and are always marked idempotent.
//
// Reading a body before its headers: http_client reports the status and the
// headers only when a response is complete, and streams the body before
// that. A body is therefore classified by its first significant byte (after
// a BOM and whitespace): '{' or '[' is buffered as JSON, anything else is
// parsed as an event stream as it arrives, so that messages before the answer
// reach the sink at once (a server request may be waiting for our reply).
// The status and content type are checked when the response completes; a
// server that sends an event stream under an error status may have had
// messages delivered before its error is reported.
//
// Threading: every call blocks its thread; the sink and on_endpoint run on
// that thread, from inside the call. client.cancel() from any other thread
// ends a call promptly (also during a wait before resuming) with the
// client's unavailable "cancelled". An http_client serves one request at a
// time: a long-lived stream (streamable_listen, legacy_sse_listen) needs a
// client of its own, separate from the one sending requests.
//
// Secrets: `mcp_http_headers::extra` values and the session id are sent,
// never logged and never put into an error.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "messages/status.hpp"
#include "transport/http_client.hpp"
#include "transport/jsonrpc.hpp"
#include "transport/sse_parser.hpp"
#include "transport/url_policy.hpp"

namespace voxos {

/// A 401 or 403 answer and its WWW-Authenticate header, for the
/// authorization layer above (see mcp_http_headers::refusal).
struct mcp_auth_refusal {
  int http_status = 0; ///< 0: none met
  std::string challenge;
};

/// Headers the session layer adds to every request of a session.
struct mcp_http_headers {
  std::string session_id;       ///< sent as Mcp-Session-Id when not empty
  std::string protocol_version; ///< sent as MCP-Protocol-Version when not empty
  /// E.g. static auth headers; values are secrets: never logged, never in
  /// errors. An entry naming a header this layer sets itself (Accept,
  /// Content-Type, Content-Length, Host, Mcp-Session-Id, MCP-Protocol-Version,
  /// Last-Event-ID, any case) is not sent: the transport's own value wins.
  http_header_list extra;
  /// Where a 401 or 403 answer is noted with its challenge (the caller's
  /// authorization layer reads it); null: not noted. Only an answer that
  /// refused the exchange before anything ran is noted: not one to a GET
  /// resuming a request's stream (the request was accepted). Written on the
  /// calling thread, from inside the call.
  mcp_auth_refusal* refusal = nullptr;
};

struct mcp_exchange_limits {
  sse_limits sse;               ///< per stream
  uint32_t max_resumptions = 5; ///< GET reconnects with Last-Event-ID for one request
  /// Wait before resuming when the server sent no `retry`.
  std::chrono::milliseconds default_retry{1000};
  /// Cap on a server's `retry` value. The wait is the only sleep of this
  /// layer; it is cut short by client.cancel(). Each HTTP request is bounded
  /// by the client's total deadline, so one exchange lasts at most
  /// (1 + max_resumptions) deadlines plus the waits; the session layer bounds
  /// the whole with its own deadline and cancel().
  std::chrono::milliseconds max_retry{10'000};
};

/// Receives every message from the server other than the awaited answer
/// (notifications, server requests, answers carrying other ids), in arrival
/// order, on the calling thread. Must not throw. An empty sink drops them.
using mcp_message_sink = std::function<void(jsonrpc_message&&)>;

struct mcp_exchange {
  /// Of the POST. 200 when the answer was taken from an event stream before
  /// the response completed (see `response_complete`).
  int http_status = 0;
  /// The POST answer's Mcp-Session-Id header, or "" (also when the response
  /// did not complete: see `response_complete`).
  std::string session_id;
  /// A jsonrpc_response or jsonrpc_error_response whose id == the request's.
  jsonrpc_message answer;
  uint32_t resumptions = 0; ///< GET reconnects it took
  /// False when reading stopped at the answer before the POST response
  /// completed (http_client then reports neither status nor headers:
  /// http_status is assumed 200, session_id is ""): when a session id is
  /// known (headers.session_id not empty), or when the stream broke after the
  /// answer. Without a session id the POST stream is read to its end, because
  /// its Mcp-Session-Id (the answer to initialize) is needed; conforming
  /// servers close the stream after the answer. An answer on a resumed GET
  /// leaves it true: the POST had completed.
  bool response_complete = true;
};

/// Streamable HTTP: POSTs one JSON-RPC request (`body`, whose id is `id`) to
/// `path` and returns its answer (see the diagram above).
///
/// Sends Accept: application/json, text/event-stream; Content-Type:
/// application/json; the session headers and `extra`.
/// A 200 application/json body (media type parameters allowed, any case)
/// must be the answer: another message, or a response with another id, is
/// bad_json ("answer carries an id that was not asked"). On an event stream,
/// every event with data is one JSON-RPC message; events with empty data
/// (priming events carrying an id) are skipped; a message that does not
/// parse is bad_json and drops the stream; responses with other ids go to
/// the sink. The answer ends the exchange: reading stops at once if a session
/// id is known, else the stream is read to its end (see `response_complete`;
/// messages after the answer go to the sink).
/// An error response without an id (JSON-RPC's "could not read the request's
/// id") in place of the answer is errc::server_error naming its code.
/// `idempotent`: the POST may be sent again on a fresh connection when a
/// reused one closes before a byte of the answer (see above).
/// Resuming: when the stream ends (completes or breaks after it started)
/// without the answer, it is resumed if an event id was seen and fewer than
/// max_resumptions GETs were made: after the server's `retry` (at most
/// max_retry) or default_retry, a GET of `path` with Accept:
/// text/event-stream, Last-Event-ID and the session headers; a 405 to that
/// GET is unavailable. Otherwise unavailable "stream ended before the
/// answer". A server's Mcp-Session-Id with a byte outside visible ASCII
/// (0x21-0x7E) or over 4096 bytes is out_of_range.
/// Other errors: 202 (unavailable "server accepted a request without
/// answering it"); another 2xx content type (unavailable "unexpected content
/// type"); statuses and client errors as above; body_too_large from the
/// event stream limits.
result<mcp_exchange> streamable_request(http_client& client, const std::string& path,
                                        const mcp_http_headers& headers, const std::string& body,
                                        const jsonrpc_id& id, const mcp_message_sink& sink,
                                        const mcp_exchange_limits& limits, bool idempotent = false);

/// Streamable HTTP: POSTs a notification or a response (to a server request).
/// Expects 202, whose body is ignored. Any other 2xx (servers answer 200 or
/// 204) is accepted when its body is ignorable: it is neither one JSON-RPC
/// message nor an event stream with an event carrying data (only the first
/// 64 KiB are looked at); else unavailable ("server answered with messages
/// where none were expected"), since those messages would be lost. Other
/// statuses as above.
status streamable_send(http_client& client, const std::string& path,
                       const mcp_http_headers& headers, const std::string& body);

/// Streamable HTTP: DELETE of the session (2xx, 404 and 405 count as done).
/// Without a session id there is nothing to end: ok, no request.
status streamable_close_session(http_client& client, const std::string& path,
                                const mcp_http_headers& headers);

/// What streamable_listen ended with.
struct mcp_listen_result {
  bool supported = true;    ///< false: the server answered the GET with 405
  uint32_t resumptions = 0; ///< GET reconnects made, in total
};

/// Streamable HTTP: the optional GET stream for server-initiated messages
/// (Accept: text/event-stream and the session headers). Every message goes to
/// the sink. Runs until the stream ends and cannot be resumed (ok), or fails.
/// Resumes with Last-Event-ID like streamable_request when the stream ends or
/// breaks after an event id: a server may close the stream at any time and
/// expect the client to poll. The bound: max_resumptions reconnects in a row
/// that delivered no message end the call (ok). Returns ok with
/// `supported=false` when the first GET is answered 405. Errors as for
/// streamable_request; cancel() ends the call with unavailable "cancelled".
result<mcp_listen_result> streamable_listen(http_client& client, const std::string& path,
                                            const mcp_http_headers& headers,
                                            const mcp_message_sink& sink,
                                            const mcp_exchange_limits& limits);

/// Legacy HTTP+SSE: GETs the event stream at `server_url` (Accept:
/// text/event-stream, plus `headers`). The first `endpoint` event's data is a
/// URL reference (absolute URL, "//authority/path", "/path?query", "?query"
/// or a relative path), resolved against server_url; it must parse (parse_url
/// rules, else out_of_range "endpoint is not an acceptable URL") and have the
/// scheme, host and port of server_url (else forbidden "endpoint on another
/// origin"). on_endpoint then receives its origin-relative path and query.
/// Every `message` event (also one before the endpoint) is one JSON-RPC
/// message for the sink (a message that
/// does not parse is bad_json and ends the call: a stream sending garbage is
/// broken); a later `endpoint` event and other event types are ignored.
/// Blocks until the stream ends (unavailable "stream ended"), fails, or
/// client.cancel() (unavailable "cancelled"). No resumption: a legacy session
/// lives and dies with its stream. `client` must be for server_url's origin.
/// on_endpoint runs on the calling thread, from inside the call, and must
/// not throw.
status legacy_sse_listen(http_client& client, const parsed_url& server_url,
                         const mcp_http_headers& headers,
                         const std::function<void(std::string)>& on_endpoint,
                         const mcp_message_sink& sink, const mcp_exchange_limits& limits);

/// Legacy HTTP+SSE: POSTs one message (request, notification or response) to
/// the endpoint path (origin-relative, as on_endpoint gave it). Expects 202,
/// 200 or 204; the body is ignored (answers arrive on the stream). Other
/// statuses as above. `idempotent` as for streamable_request.
status legacy_sse_send(http_client& client, const std::string& endpoint_path,
                       const mcp_http_headers& headers, const std::string& body,
                       bool idempotent = false);

/// The error for a non-2xx answer `http_status`, as in the table above.
/// `body` may be the answer's body (only a JSON-RPC error code is taken from
/// it). Exposed for the session layer's own requests and for tests.
status mcp_http_status_error(int http_status, const mcp_http_headers& headers,
                             std::string_view body);

/// The error for a JSON-RPC error answer: errc::server_error, "server error
/// <code>", with the name of a code JSON-RPC defines ("server error -32603
/// (internal error)"); never the server's text.
status jsonrpc_error_status(int64_t code);

/// The name JSON-RPC 2.0 gives `code` ("parse error", "invalid request",
/// "method not found", "invalid params", "internal error"), or "".
std::string_view jsonrpc_error_name(int64_t code);

/// Whether `failure` is a server refusing a request's arguments: an HTTP 400
/// (outside a lost session) or 422 (mcp_http_status_error) or a JSON-RPC
/// -32602 "invalid params" (jsonrpc_error_status). For tools/call, an
/// argument rejection.
bool is_argument_rejection(const status& failure);

/// A lost-session answer (400 in a session) to a request already sent again
/// in a session begun for it: the server refuses the request itself, so it
/// reads as the 400 it is, rejected (an argument rejection). Any other
/// failure is returned as it is.
status refused_in_new_session(const status& failure);

/// The endpoint of a legacy `endpoint` event: `reference` resolved against
/// `server_url`, checked as legacy_sse_listen describes, as an
/// origin-relative path and query.
result<std::string> resolve_legacy_endpoint(const parsed_url& server_url,
                                            std::string_view reference);

} // namespace voxos
