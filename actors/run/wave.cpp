#include "actors/run/wave.hpp"

#include <algorithm>

#include <caf/local_actor.hpp>
#include <caf/send.hpp>

#include "messages/atoms.hpp"
#include "messages/errc.hpp"

namespace voxos {

wave::wave(caf::local_actor* run, std::vector<wave_call> calls, uint64_t number)
    : run_(run), calls_(std::move(calls)), number_(number) {
  answers_.resize(calls_.size());
  in_flight_.assign(calls_.size(), true);
  outstanding_ = calls_.size();
  // Each connection (or desk) the calls go to, watched once while they run.
  for (std::size_t call_idx = 0; call_idx < calls_.size(); ++call_idx) {
    auto target = target_of(call_idx);
    if (std::find(watched_.begin(), watched_.end(), target) == watched_.end()) {
      watched_.push_back(target);
      run_->monitor(target);
    }
  }
}

wave::~wave() {
  // (a desk call is local and short: it finishes rather than cancels)
  cancel();
  // A connection outlives many waves and would keep every watch otherwise.
  for (const auto& target : watched_)
    run_->demonitor(target);
}

caf::actor_addr wave::target_of(std::size_t call_idx) const {
  const auto& call = calls_[call_idx];
  return call.desk ? call.desk.address() : call.connection.address();
}

uint64_t wave::key_of(std::size_t call_idx) const noexcept {
  return (static_cast<uint64_t>(run_->id()) << 24) | ((number_ & 0xffff) << 8)
         | static_cast<uint64_t>(call_idx & 0xff);
}

bool wave::answer(std::size_t call_idx, wave_answer answer) {
  if (call_idx >= calls_.size() || !in_flight_[call_idx])
    return false;
  in_flight_[call_idx] = false;
  answers_[call_idx] = std::move(answer);
  return --outstanding_ == 0;
}

bool wave::target_down(const caf::actor_addr& gone) {
  bool done = false;
  for (std::size_t call_idx = 0; call_idx < calls_.size(); ++call_idx)
    if (in_flight_[call_idx] && target_of(call_idx) == gone)
      done = answer(call_idx,
                    {static_cast<uint8_t>(errc::unavailable), "the server's connection closed"});
  return done;
}

void wave::cancel() {
  for (std::size_t call_idx = 0; call_idx < calls_.size(); ++call_idx)
    if (in_flight_[call_idx] && !calls_[call_idx].desk)
      caf::anon_send(calls_[call_idx].connection, cancel_atom::value, key_of(call_idx));
}

} // namespace voxos
