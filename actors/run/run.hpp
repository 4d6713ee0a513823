// The run actor: one per text run, voice session, scheduled or delegated
// run. Its tenant spawns it when the run starts, with everything the run may
// use, frozen: the effective policy snapshot, the tool view and catalog
// composed from it, and the MCP connections of exactly the servers the
// snapshot allows. It reaches nothing else.
//
// Tool rounds: each model response's tool calls are decided, grouped into
// waves and settled by tool_round.hpp; the run sends each wave's calls
// itself and keeps their record (wave.hpp) until the last answer is in. As a round starts, its
// execution decisions go to the audit stream in one write
// ("calls.decided"). Write-ahead: a round with a call that may change
// something (not read-only) sends nothing until the store acknowledges that
// write (durable when the store syncs its WAL); a read-only round's first
// wave leaves beside the write. Either way the outputs go back only once
// the decisions are acknowledged, one per call id in call order, and the
// round's activity goes to the run's stream ("tools.round": call ids,
// tools, statuses and reasons, durations; never arguments or results). The
// answer does not wait for the activity: it is in the store's queue before
// the answer, and a read of the store sees it (event_store.hpp: read your
// writes). Tool failures are outputs, not errors: a run whose decisions or
// activity cannot be recorded ends (storage_failure), failing its round if
// it is still open.
//
// Cancellation: `cancel` stops the round in progress (the current wave
// cancels its requests at their connections, which send
// notifications/cancelled and close their streams; later waves never
// start), answers the round's caller with its outputs (the unsent calls
// "cancelled"), records "run.cancelled" with the time from cancel to the
// last request closed, and ends the run. A run that ends otherwise (killed
// included) cancels what is in flight on its way out (its wave's record
// sends the cancels as it goes).
//
// Lifecycle:
//   idle --tool calls--> executing --outputs--> idle
//   idle/executing --cancel--> cancelling --last request closed--> gone
//   idle --close--> gone ("run.finished")
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/mcp/mcp_connection.hpp"
#include "actors/run/tool_catalog.hpp"
#include "actors/run/tool_round.hpp"
#include "actors/run/tool_view.hpp"
#include "actors/run/trace.hpp"
#include "actors/tenant/policy.hpp"
#include "actors/tools/tool_desk.hpp"
#include "messages/atoms.hpp"
#include "messages/types.hpp"

namespace voxos {

class node_metrics;

using run_actor = caf::typed_actor<
  // One model response's tool calls; answers one output per call id, in
  // call order, once every call is settled. One round at a time: a second
  // while one executes is refused (conflict).
  caf::replies_to<tool_atom, std::vector<tool_call>>::with<std::vector<tool_output>>,
  // Cancels the run (see above); answers {"run_id","cancelled_calls",
  // "cancel_to_closed_us"} once the last request is closed. The run ends.
  caf::replies_to<cancel_atom>::with<std::string>,
  // The turn's assistant text: answers the place cards it receives from this
  // turn's Grounding Lite searches (JSON array, at most six; tool_round.hpp
  // turn_place_cards), and forgets those searches.
  caf::replies_to<turn_atom, std::string>::with<std::string>,
  // Ends an idle run normally ("run.finished"); answers true.
  caf::replies_to<close_atom>::with<bool>,
  // Adds a listener of the run's tool activity (at most 8; the oldest goes):
  // it receives (tool_atom, JSON text) per event, then (close_atom, reason)
  // when the run ends. Events: {"event":"round"|"wave"|"call"|"answered",
  // "round", ...} with call ids, names, tools, statuses, reasons and
  // durations; never arguments or results.
  caf::reacts_to<listen_atom, caf::actor>,
  // State for operators and tests: {"run_id","phase","rounds","calls",
  // "waves","peak_wave","in_flight"}.
  caf::replies_to<health_atom>::with<std::string>>;

/// Everything a run is given when it starts.
struct run_setup {
  std::string tenant_id;
  std::string run_id;
  /// What the run checks calls against (run_part: no decisions, routes or
  /// profiles).
  effective_policy snapshot;
  tool_view view;
  /// The long tail behind the catalog tools; nullptr unless catalog mode.
  std::shared_ptr<const tool_catalog> catalog;
  /// One connection per MCP server the snapshot allows.
  std::unordered_map<std::string, mcp_connection_actor> connections;
  /// The tenant's tool desk, which runs internal and phone integration tools,
  /// and the execution context it is given with each call (the desk stamps
  /// the call's time). Shared: an idle run holds one pointer.
  tool_desk_actor desk;
  std::shared_ptr<const tool_context> context;
  adapter_map adapters;
  round_limits limits;
  /// Deadline of one tool call (the connection caps it by mcp.max_request_timeout_ms).
  uint32_t call_timeout_ms = 60'000;
  event_store_actor store;
  /// Records what crosses the run's boundary (trace.hpp); nullptr: none.
  std::shared_ptr<run_trace> trace;
};

run_actor spawn_run(caf::actor_system& sys, run_setup setup, node_metrics& metrics);

} // namespace voxos
