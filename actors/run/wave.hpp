// The wave actor: one batch of a run's calls sent together, up to eight
// read-only calls or one call that is not (tool_round.hpp decides which).
// One per wave, spawned and held by its run, which it dies with.
//
// It sends every call's `tools/call` to its server's mcp_connection at once
// and answers the run with every call's answer, in call order, once the last
// is in. Each call has its own deadline, which its connection enforces (the
// wave sets no timer of its own); a connection that ends while it holds a
// call answers that call unavailable ("the server's connection closed").
//
// Cancellation: `cancel` (the run was cancelled) cancels every request still
// in flight at its connection, which sends notifications/cancelled and
// closes the request's stream; the wave still answers, once each cancelled
// request has come back. If the wave ends instead with its run (however the
// run ends, a kill included), what is in flight is cancelled the same way as
// it goes (its state's destructor sends the cancels).
//
// Lifecycle: sending --last answer--> answered (gone) ; sending --cancel--> draining --> answered
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "actors/tools/tool_desk.hpp"
#include "messages/atoms.hpp"

namespace voxos {

/// One call of a wave: to an MCP server's connection, or (an internal or
/// phone integration tool) to the tenant's tool desk with the run's context.
struct wave_call {
  mcp_connection_actor connection;
  std::string params; ///< the tools/call params, JSON text
  /// The call may run twice harmlessly (round_call::resend_safe); told to
  /// the connection, which otherwise never sends it twice once it may have
  /// reached the server.
  bool resend_safe = false;
  /// Internal and phone integration tools: the desk, the run's context, and
  /// a place-call tool's integration (else empty); `connection` is unset.
  tool_desk_actor desk;
  std::shared_ptr<const tool_context> context;
  std::string integration_id;
};

/// One call's answer: the result text, or the failure's code and message.
struct wave_answer {
  uint8_t code = 0; ///< 0: `text` is the result; else an errc
  std::string text; ///< the result, or the failure's message
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wave_answer& x) {
  return f(caf::meta::type_name("wave_answer"), x.code, x.text);
}

using wave_actor = caf::typed_actor<
  // Sends the calls (once); answers every call's answer in call order.
  caf::replies_to<request_atom>::with<std::vector<wave_answer>>,
  // Cancels every request still in flight (see above).
  caf::reacts_to<cancel_atom>>;

/// Spawns a wave over `calls`, each with a deadline of `deadline_ms`, linked
/// to `run` and from its context (it then runs on the run's scheduler thread
/// without waking another one).
wave_actor spawn_wave(caf::local_actor* run, std::vector<wave_call> calls, uint32_t deadline_ms);

} // namespace voxos
