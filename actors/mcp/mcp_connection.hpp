// The mcp_connection actor: one MCP client session with one remote server of
// one tenant. Everything that talks to an MCP server goes through it: the
// node's discovery and tool calls, and `voxosctl conformance`.
//
// Transports: Streamable HTTP, or the legacy HTTP+SSE transport when the
// server record says so, or when a Streamable HTTP `initialize` POST is
// refused with 400, 404 or 405 (the fallback of the 2025-03-26 revision).
//
// Revisions (the dual-era rule of 2026-07-28): unless the endpoint names one,
// the connection first asks `server/discover` as the stateless revision. A
// result offering 2026-07-28 means that revision from then on: no
// initialize, session or GET stream; every request carries its version,
// method and name (headers and params._meta; see mcp_protocol.hpp) and is
// sent once more after an UnsupportedProtocolVersionError (-32022/-32004);
// a result asking for input (input_required) is answered and the request
// sent again with it (at most mcp.max_input_rounds times); tools whose
// x-mcp-header marks are invalid are left out of discovery, and calls
// mirror marked arguments into Mcp-Param-* headers (learnt by listing the
// tools while connecting, and by every discovery). Any other answer from
// the server means the initialize handshake (2025-11-25 and older); a server
// that cannot be reached fails the connect. Wire details live in
// transport/mcp_http.hpp.
//
// Credentials: static headers go with every request as they are. With
// OAuth credentials (`mcp_endpoint::auth`), each HTTP exchange carries the
// Authorization they give; a 401, or a 403 insufficient_scope, is shown to
// them, and the exchange made once more when they have a new one (the server
// refused it before running anything), at most three times. When they have
// none (the server must be signed in to again), the request fails
// needs_auth. Refreshing blocks the worker, never the actor; it is bounded by
// the authorization work's own timeouts, not by cancel.
//
// Threads: the actor itself never blocks. Each HTTP exchange runs on a
// detached worker actor that owns one http_client (kept alive between
// requests): up to `max_in_flight` request workers, one control worker that
// sends notifications, answers to server requests and the session DELETE in
// order, and one listen worker for the GET stream (the legacy transport's
// only stream). Messages a server sends on any stream reach the actor as
// they arrive: server requests (ping, elicitation) are answered at once,
// even while the request that caused them is still streaming.
// A request worker that reads a caller's answer (a result or a JSON-RPC
// error) answers the caller itself, right after handing the job back to the
// actor, which keeps the bookkeeping (slots, keys, deadlines); every other
// outcome is the actor's to answer. Exactly one of them answers a caller,
// whichever claims it first: a deadline or cancel that loses the race to an
// answer is a no-op. The answer's sender is the worker, not the actor.
//
// Session: initialised on the first request (or `connect`); requests that
// arrive meanwhile wait in order. `Mcp-Session-Id` and, after negotiation,
// `MCP-Protocol-Version` go with every request. A 404 on a known session
// means it expired, and a 400 whose body is not JSON-RPC invalid params
// (-32602) that the server lost it (the SDK's examples and server-everything
// answer so after a restart): the server ran nothing, so the session is
// initialised afresh and the request sent again, once.
//
// Sending twice: a request is sent again only when the server provably did
// not run it (the session answers above, a refused protocol version at the
// stateless revision) or when running it twice is harmless: the transport
// sends a request once more on a fresh connection when a reused one closes
// before a byte of the answer, but a `tools/call` only if its caller
// vouched for it (`resend_safe`: a read-only or idempotent tool). A
// mutating call whose connection fails after it went out fails; whether it
// ran is unknown, and the caller is told so by the error it gets.
//
// Deadlines: each request has one (the caller's, else mcp.request_timeout_ms,
// never above mcp.max_request_timeout_ms). When it passes, or the caller
// cancels, the actor sends `notifications/cancelled` for the request, aborts
// its HTTP exchange (closing the stream, even if the server keeps sending),
// and answers the caller unavailable. Progress notifications and keepalive
// comments never extend a deadline. The transport below enforces its own
// hard total deadline as well.
//
// Errors answered to callers (messages never hold URLs, headers or payloads):
//   server_error  the server answered a JSON-RPC error ("server error <code>",
//                 with JSON-RPC's name for it: "server error -32603 (internal
//                 error)")
//   rejected      the server refused the request's content with HTTP 400/422
//   not_found     the session expired or was lost again after a fresh one
//   unavailable   "request deadline exceeded", "request cancelled",
//                 "connection closed", "too many requests waiting", or a
//                 transport failure as the transport names it
//   conflict      a request key already in flight
//   forbidden     the URL policy refused the server, or a redirect
//   out_of_range  the server speaks no revision we do
//   bad_json      the server sent something that is not JSON-RPC
//
// Lifecycle: connecting (on first use) -> ready -> closed. `close` ends the
// session (DELETE) and stops the actor; if the actor is killed instead,
// every HTTP exchange it owns is aborted as it goes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "config/node_config.hpp"
#include "config/tool_types.hpp"
#include "messages/atoms.hpp"
#include "transport/http_client.hpp"

namespace voxos::auth {
class server_auth;
}

namespace voxos {

class url_policy;

/// Where and how to reach one server.
struct mcp_endpoint {
  std::string server_id; ///< for the log only
  transport_kind transport = transport_kind::streamable_http;
  std::string url;
  /// Sent with every request (static auth headers). Values are secrets.
  http_header_list headers;
  /// "": learnt from the server (the server/discover probe; see above).
  /// "2026-07-28": the stateless revision from the first request, no probe.
  /// An older revision (e.g. "2025-11-25"): the initialize handshake, no
  /// probe. (The legacy HTTP+SSE transport always has the handshake.)
  std::string protocol_version{}; // (defaulted: endpoints may leave it out)
  /// OAuth credentials (transport/auth/server_auth.hpp), or null: the
  /// connection's workers ask it for each exchange's Authorization and show
  /// it every 401 and 403 (see "Credentials" above).
  std::shared_ptr<auth::server_auth> auth{};
};

using mcp_connection_actor = caf::typed_actor<
  // Initialises the session if needed; answers what the server said of
  // itself: {"protocol_version","server_name","server_version",
  // "capabilities","instructions","transport":"streamable_http"|"sse"}.
  caf::replies_to<connect_atom>::with<std::string>,
  // One request: caller's key (unique among its requests in flight, for
  // cancel), method, params (a JSON object text, or "" for none), deadline
  // in ms (0: the default). Answers the raw JSON text of the result. A
  // tools/call sent so is never sent twice once it may have reached the
  // server (see "Sending twice").
  caf::replies_to<request_atom, uint64_t, std::string, std::string, uint32_t>::with<std::string>,
  // The same, with `resend_safe`: true when the caller vouches that running
  // it twice is harmless (a read-only or idempotent tool's call).
  caf::replies_to<request_atom, uint64_t, std::string, std::string, uint32_t,
                  bool>::with<std::string>,
  // Cancels the request with this key, if still in flight.
  caf::reacts_to<cancel_atom, uint64_t>,
  // Discovery: every page of tools/list (at most mcp.max_tool_pages, at
  // most mcp.max_cached_tools tools kept); answers {"tools":[...],
  // "truncated":bool}. Clears the "tools changed" mark.
  caf::replies_to<list_atom, tool_atom>::with<std::string>,
  // State for operators and tests: {"phase","transport","protocol_version",
  // "session":bool,"in_flight","queued","workers","tools_changed":bool,
  // "server_requests","unexpected_answers"}.
  caf::replies_to<health_atom>::with<std::string>,
  // Ends the session (DELETE when there is one) and stops the actor.
  caf::replies_to<close_atom>::with<bool>>;

/// Spawns a connection. Nothing is sent until the first request.
///
/// `listener` (optional, held weakly) hears when the server's tools change:
/// on `notifications/tools/list_changed` the connection sends it
///   (changed_atom, tool_atom, std::string server_id)
/// with `endpoint.server_id`, from the connection's own handle (the
/// listener's current_sender()). Sent once when the "tools changed" mark
/// (health) is set; the next discovery (list_atom, tool_atom) clears the
/// mark, and a change announced while it ran is told again after it. A
/// connection refused by the URL policy never sends it.
mcp_connection_actor spawn_mcp_connection(caf::actor_system& sys, mcp_endpoint endpoint,
                                          std::shared_ptr<const url_policy> policy,
                                          const mcp_config& cfg,
                                          const caf::actor& listener = caf::actor{});

} // namespace voxos
