// One tool round of a run: the tool calls of one model response, decided,
// grouped into waves and answered one output per call id, in call order.
// CAF-free and pure: the run actor (run.hpp) drives it, the wave actor
// (wave.hpp) sends what it plans.
//
// Deciding a call (decide_round), in call order, before anything is sent:
//   1. the name must be a direct tool of the run's view (else "denied":
//      not_in_view); tool_search and tool_describe answer from the run's
//      catalog; tool_call {id, arguments} resolves a catalog id and goes on
//      as that tool;
//   2. the snapshot must list it among its allowed tools (the execution check);
//   3. internal and integration tools answer "unavailable": their execution
//      belongs to the internal-tools and phone issues, never to the model;
//   4. a tool whose correction budget this run spent
//      (round_limits::max_corrections rounds with invalid arguments or
//      arguments its server rejected) is "skipped";
//   5. a later call to a tool whose arguments were invalid earlier in this
//      response is "skipped" (not validated, not sent);
//   6. the arguments must be a JSON object of at most max_argument_bytes and
//      valid against the tool's discovered input schema (compiled once per
//      schema, run_memory::validators); else "invalid_arguments", naming
//      schema paths and constraints only (an instance path stops before the
//      first member name the schema does not declare: a name the model chose
//      may itself be the rejected value);
//   7. a curated preset's normaliser runs on valid arguments (Google Maps
//      Grounding Lite weather: maps_grounding.hpp); its refusal is
//      "invalid_arguments" too;
//   8. the exact request (server, tool, canonical arguments) a server
//      rejected in an earlier round of this run is "skipped".
// What remains is "pending" and will be sent.
//
// Waves (next_wave): from the first pending call on, up to wave_width
// consecutive pending read-only calls (curated read-only or readOnlyHint)
// form one wave; a call that is not read-only is a wave of its own. Calls
// answered locally in between do not break a wave. Before a call joins a
// wave, a server rejection of its tool in an earlier wave of this round
// skips it. So execution order is call order, read-only runs are
// concurrent, and a possibly mutating call never overlaps another call.
//
// Settling (settle_call): the connection's answer becomes the output. A
// result is "ok", or "tool_error" when the server set isError (the content
// goes to the model either way). HTTP 400/422 or JSON-RPC -32602 is
// "rejected" (an argument rejection, not a connection failure): the exact
// request is remembered for later rounds, later waves of the tool are
// skipped, and the round spends one of the tool's corrections (rule 4), so
// a model that keeps changing a rejected request stops after
// max_corrections rounds. Anything else is "failed" ("cancelled" for a
// cancelled run); a server's JSON-RPC error (other than -32602) is told as
// the server's own error ("server error -32603 (internal error)"), never as
// a rejection of the arguments.
//
// Outcome unknown: a call that is neither read-only nor idempotent
// (resend_safe) is never sent twice once it may have reached its server.
// When it fails after that (its connection lost with no answer, its
// deadline passed, HTTP 5xx, a JSON-RPC error raised while it ran), its
// output adds "outcome": "unknown" and says plainly that the change may or
// may not have happened (or, past its deadline, may still happen), that it
// was not sent again, and that the model should check before calling it
// again. A failure that proves it did not run (refused before any handler:
// HTTP 400/401/403/404/405/422, JSON-RPC -32700/-32600/-32601/-32602, a
// session lost, no connection made) says nothing of the kind.
//
// Outputs: "ok" carries the MCP CallToolResult JSON; every other status
// carries {"error": <status>, "usable_result": false, "message": ...} where
// the message says plainly that the call produced no usable result and asks
// the model to correct one request before batching more; "tool_error" adds
// the server's CallToolResult as "result" (its content says what went
// wrong; servers report invalid input that way too). Messages never hold
// argument values, URLs or server-supplied text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/run/maps_grounding.hpp"
#include "actors/run/tool_catalog.hpp"
#include "actors/run/tool_view.hpp"
#include "actors/tenant/policy.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"
#include "transport/json_schema.hpp"

namespace voxos {

/// Bounds of one round. Defaults documented in docs/config.md (`run` section).
struct round_limits {
  /// Tool calls one model response may carry; a bigger response is refused whole.
  std::size_t max_calls = 128;
  /// Bytes of one call's argument object.
  std::size_t max_argument_bytes = 1 << 20;
  /// Read-only calls in flight together (the product's bounded waves of eight).
  std::size_t wave_width = 8;
  /// Rounds with invalid arguments, or arguments a server rejected, one tool
  /// may have in a run (the bounded correction); further calls to it are
  /// skipped.
  uint32_t max_corrections = 3;
  /// Server-rejected requests a run remembers (oldest forgotten first).
  std::size_t max_remembered_rejections = 1024;
};

/// What became of one call.
enum class call_status : uint8_t {
  pending,           ///< decided, to be sent
  ok,                ///< the server answered a result
  tool_error,        ///< the server answered a result with isError
  local,             ///< answered by the runtime (tool_search, tool_describe)
  denied,            ///< not a tool of this run
  invalid_arguments, ///< refused by local validation; not sent
  rejected,          ///< the server refused the arguments (HTTP 400/422, JSON-RPC -32602)
  skipped,           ///< not sent (see the rules above)
  unavailable,       ///< a tool this node cannot execute
  failed,            ///< the server or its connection failed
  cancelled,         ///< the run was cancelled first
};

std::string_view to_string(call_status x) noexcept;

/// A curated normaliser a server's calls go through.
enum class call_adapter : uint8_t { none, maps_grounding_lite };

/// One call of the round.
struct round_call {
  std::string call_id;
  std::string name; ///< the model-facing name it was called by
  /// The tool it stands for (after tool_call resolution); nullptr when denied.
  const view_entry* entry = nullptr;
  /// The argument object as it will be sent (normalised), JSON text.
  std::string arguments;
  call_status status = call_status::pending;
  /// Stable reason code (audit, activity): e.g. "allowed", "not_in_view".
  std::string reason;
  /// What the model receives, JSON text.
  std::string output;
  bool read_only = false;
  /// Running it twice is harmless (read-only, or the tool's idempotentHint):
  /// its request may be sent again after its connection closed with no
  /// answer. Otherwise a failure after it was sent leaves its outcome
  /// unknown, and its output says so.
  bool resend_safe = false;
};

/// A tool's compiled input schema, and the member names it declares
/// (properties, required, dependencies, anywhere in it): an error's
/// instance path shows those names and array indices only (see
/// visible_path).
struct tool_validator {
  compiled_schema schema;
  std::unordered_set<std::string> declared_names;
};

/// What a run remembers across its rounds.
struct run_memory {
  /// Rounds with invalid or rejected arguments, per "server_id/tool".
  std::unordered_map<std::string, uint32_t> invalid_rounds;
  /// Fingerprints of requests a server rejected, and their order.
  std::unordered_set<uint64_t> rejected;
  std::vector<uint64_t> rejected_order;
  /// Compiled input schemas, by the address of the schema text (stable while
  /// the run's view lives).
  std::unordered_map<const char*, tool_validator> validators;
  /// The place cards of this turn's successful Grounding Lite search_places
  /// calls, in call order (at most 16 searches; memory only, never stored).
  std::vector<std::vector<maps_grounding::place_card>> place_searches;
};

/// Server id -> the curated adapter its calls go through.
using adapter_map = std::unordered_map<std::string, call_adapter>;

/// One round in progress.
struct tool_round {
  std::vector<round_call> calls;
  /// Tools ("server_id/tool") a server rejected during this round.
  std::unordered_set<std::string> rejected_tools;
  /// Tools this round spent a correction on (invalid or rejected arguments:
  /// one per tool per round).
  std::unordered_set<std::string> corrected_tools;
  /// First call not yet placed in a wave.
  std::size_t cursor = 0;
};

/// Checks the response's shape: 1..max_calls calls, call ids 1..128 bytes
/// of printable ASCII and unique. Refuses the whole response otherwise
/// (out_of_range, conflict): no call is answered. A call whose name is
/// empty or over 128 bytes is answered "denied" (invalid_name) here, and
/// its name is not kept; the others are decided as usual.
result<tool_round> make_round(std::vector<tool_call> calls, const round_limits& limits);

/// Decides every call (rules 1-8 above).
void decide_round(tool_round& round, const tool_view& view, const tool_catalog* catalog,
                  const effective_policy& snapshot, const adapter_map& adapters, run_memory& memory,
                  const round_limits& limits);

/// The next wave (indices into round.calls), empty when every call is answered.
std::vector<std::size_t> next_wave(tool_round& round, const round_limits& limits);

/// The params of the tools/call request for a pending call.
std::string call_params(const round_call& call);

/// Settles a sent call with the connection's answer: the result text, or
/// the failure.
void settle_call(round_call& call, tool_round& round, run_memory& memory,
                 const round_limits& limits, const result<std::string>& answer);

/// After settle_call: keeps the place cards of a successful search_places
/// call to a Grounding Lite server (invalid cards skipped).
void remember_places(const round_call& call, const adapter_map& adapters, run_memory& memory);

/// The cards the turn's answer receives (maps_grounding::select_cards) as a
/// JSON array of {place_id, title, place_url, directions_url, latitude?,
/// longitude?}; forgets the turn's searches.
std::string turn_place_cards(std::string_view answer_text, run_memory& memory);

/// Marks every call not yet answered cancelled.
void cancel_round(tool_round& round);

/// The outputs, in call order.
std::vector<tool_output> round_outputs(const tool_round& round);

} // namespace voxos
