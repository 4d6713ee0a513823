#include "actors/run/wave.hpp"

#include <algorithm>
#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/exit_reason.hpp>
#include <caf/local_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "messages/errc.hpp"
#include "messages/error.hpp"

namespace voxos {

namespace {

struct wave_state {
  static inline const char* name = "wave";
  std::vector<wave_call> calls;
  std::vector<wave_answer> answers;
  std::vector<bool> in_flight;
  std::size_t outstanding = 0;
  uint32_t deadline_ms = 0;
  bool started = false;
  caf::typed_response_promise<std::vector<wave_answer>> promise;
  caf::local_actor* self = nullptr;

  /// The connection's key for call `call_idx`: unique per connection
  /// because actor ids are unique in the node and a wave has few calls.
  uint64_t key_of(std::size_t call_idx) const {
    return (static_cast<uint64_t>(self->id()) << 8) | static_cast<uint64_t>(call_idx);
  }

  /// Where call `call_idx` goes: its connection, or the tool desk.
  static caf::actor_addr target_of(const wave_call& call) {
    return call.desk ? call.desk.address() : call.connection.address();
  }

  /// Each connection (or desk) the wave's calls go to, watched once while
  /// they run (see the request handler).
  std::vector<caf::actor_addr> connections() const {
    std::vector<caf::actor_addr> out;
    for (const auto& call : calls)
      if (std::find(out.begin(), out.end(), target_of(call)) == out.end())
        out.push_back(target_of(call));
    return out;
  }

  /// However the wave ends (answered, or with its run, even by a `kill`,
  /// which no exit handler sees), this state goes with it: each request
  /// still in flight is cancelled, so nothing stays open at the servers, and
  /// each connection is unwatched, since a connection outlives many waves
  /// and would keep every watch otherwise.
  ~wave_state() {
    // (a desk call is local and short: it finishes rather than cancels)
    for (std::size_t call_idx = 0; call_idx < calls.size(); ++call_idx)
      if (in_flight[call_idx] && !calls[call_idx].desk)
        caf::anon_send(calls[call_idx].connection, cancel_atom::value, key_of(call_idx));
    if (started)
      for (const auto& conn : connections())
        self->demonitor(conn);
  }
};

using self_pointer = wave_actor::stateful_pointer<wave_state>;

void cancel_in_flight(self_pointer self) {
  auto& st = self->state;
  for (std::size_t call_idx = 0; call_idx < st.calls.size(); ++call_idx)
    if (st.in_flight[call_idx] && !st.calls[call_idx].desk)
      self->send(st.calls[call_idx].connection, cancel_atom::value, st.key_of(call_idx));
}

void on_answer(self_pointer self, std::size_t call_idx, wave_answer answer) {
  auto& st = self->state;
  if (!st.in_flight[call_idx])
    return;
  st.in_flight[call_idx] = false;
  st.answers[call_idx] = std::move(answer);
  if (--st.outstanding == 0) {
    st.promise.deliver(std::move(st.answers));
    self->quit();
  }
}

wave_actor::behavior_type wave_behavior(self_pointer self, std::vector<wave_call> calls,
                                        uint32_t deadline_ms) {
  auto& st = self->state;
  st.calls = std::move(calls);
  st.answers.resize(st.calls.size());
  st.in_flight.assign(st.calls.size(), false);
  st.deadline_ms = deadline_ms;
  st.self = self;
  // It ends with its run, however the run ends (the state's destructor
  // cancels what is in flight).
  self->set_exit_handler([self](caf::exit_msg& msg) { self->quit(std::move(msg.reason)); });
  // A connection that ended holds none of its requests any more.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (std::size_t call_idx = 0; call_idx < st.calls.size(); ++call_idx)
      if (st.in_flight[call_idx] && wave_state::target_of(st.calls[call_idx]) == msg.source)
        on_answer(self, call_idx,
                  {static_cast<uint8_t>(errc::unavailable), "the server's connection closed"});
  });
  return {
    [self](request_atom) -> caf::result<std::vector<wave_answer>> {
      auto& st = self->state;
      if (st.started)
        return make_error(errc::conflict, "a wave is sent once");
      st.started = true;
      st.promise = self->make_response_promise<std::vector<wave_answer>>();
      if (st.calls.empty()) {
        st.promise.deliver(std::vector<wave_answer>{});
        self->quit();
        return st.promise;
      }
      st.outstanding = st.calls.size();
      // The connection answers every request by its deadline (it keeps the
      // deadline timer); a connection that ends instead is watched. No timer
      // of the wave's own: one per call costs a wake of CAF's clock thread.
      for (const auto& conn : st.connections())
        self->monitor(conn);
      for (std::size_t call_idx = 0; call_idx < st.calls.size(); ++call_idx) {
        st.in_flight[call_idx] = true;
        auto& call = st.calls[call_idx];
        auto on_result = [self, call_idx](std::string& result) {
          on_answer(self, call_idx, {0, std::move(result)});
        };
        auto on_error = [self, call_idx](caf::error& err) {
          auto code = err.category() == error_category() ? err.code()
                                                         : static_cast<uint8_t>(errc::unavailable);
          on_answer(self, call_idx, {code, message_of(err)});
        };
        if (call.desk)
          self
            ->request(call.desk, std::chrono::milliseconds{st.deadline_ms}, tool_atom::value,
                      *call.context, call.integration_id, std::move(call.params))
            .then(on_result, on_error);
        else
          self
            ->request(call.connection, caf::infinite, request_atom::value, st.key_of(call_idx),
                      std::string{"tools/call"}, std::move(call.params), st.deadline_ms,
                      call.resend_safe)
            .then(on_result, on_error);
      }
      return st.promise;
    },
    [self](cancel_atom) { cancel_in_flight(self); },
  };
}

} // namespace

wave_actor spawn_wave(caf::local_actor* run, std::vector<wave_call> calls, uint32_t deadline_ms) {
  return run->spawn<caf::linked>(wave_behavior, std::move(calls), deadline_ms);
}

} // namespace voxos
