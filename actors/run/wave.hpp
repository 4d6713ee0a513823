// One wave of a run: a batch of the run's calls sent together, up to eight
// read-only calls or one call that is not (tool_round.hpp decides which).
// The run sends the calls itself and keeps this record of them while they
// are in flight; a wave is no actor of its own (that cost every round a
// spawn, a link, a monitor and two more messages).
//
// Every call's `tools/call` goes to its server's mcp_connection at once (an
// internal or phone integration tool's call to the tenant's tool desk); the
// run takes every call's answer, in call order, once the last is in. Each
// call has its own deadline, which its connection enforces (no timer of the
// run's own); a connection that ends while it holds a call answers that call
// unavailable ("the server's connection closed"): the wave watches each
// connection it uses while it is in flight.
//
// Cancellation: cancel() (the run was cancelled) cancels every request still
// in flight at its connection, which sends notifications/cancelled and
// closes the request's stream; the wave is still answered, once each
// cancelled request has come back. If the wave ends instead with its run
// (however the run ends, a kill included), what is in flight is cancelled
// the same way as it goes (its destructor sends the cancels).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor_addr.hpp>
#include <caf/fwd.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "actors/tools/tool_desk.hpp"

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

/// A wave in flight, kept by its run (`run`, which sends its calls and
/// receives their answers).
class wave {
public:
  /// `calls` sent from `run` as wave number `number` of the run; each call's
  /// connection is watched until the wave ends.
  wave(caf::local_actor* run, std::vector<wave_call> calls, uint64_t number);
  ~wave();
  wave(const wave&) = delete;
  wave& operator=(const wave&) = delete;

  std::vector<wave_call>& calls() noexcept { return calls_; }
  uint64_t number() const noexcept { return number_; }

  /// The connection's key for call `call_idx`: unique per connection, since
  /// the run's actor id is unique in the node, a run has one wave at a time
  /// and a wave few calls.
  uint64_t key_of(std::size_t call_idx) const noexcept;

  /// Records call `call_idx`'s answer (the first only); true once every
  /// call is answered.
  bool answer(std::size_t call_idx, wave_answer answer);

  /// Answers unavailable every call in flight to the connection (or desk)
  /// `gone`, which ended; true once every call is answered.
  bool target_down(const caf::actor_addr& gone);

  /// Cancels every request still in flight at its connection (their
  /// answers still come).
  void cancel();

  /// The answers, in call order (once every call is answered).
  std::vector<wave_answer> take_answers() { return std::move(answers_); }

  std::size_t in_flight() const noexcept { return outstanding_; }

private:
  /// Where call `call_idx` goes: its connection, or the tool desk.
  caf::actor_addr target_of(std::size_t call_idx) const;

  caf::local_actor* run_;
  std::vector<wave_call> calls_;
  std::vector<wave_answer> answers_;
  std::vector<bool> in_flight_;
  std::vector<caf::actor_addr> watched_;
  std::size_t outstanding_ = 0;
  uint64_t number_ = 0;
};

} // namespace voxos
