#include "actors/run_host/run_host.hpp"

#include <chrono>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "config/clock.hpp"
#include "messages/error.hpp"

namespace voxos {

namespace {

// A token secret longer than this matches nothing; refuse it before hashing.
constexpr std::size_t max_token_bytes = 512;

struct run_host_state {
  static inline const char* name = "run_host";
  directory_actor directory;
  std::string node_id;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
};

using self_pointer = run_host_actor::stateful_pointer<run_host_state>;

run_host_actor::behavior_type run_host_behavior(self_pointer self, directory_actor directory,
                                                std::string node_id, node_metrics* metrics) {
  auto& st = self->state;
  st.directory = std::move(directory);
  st.node_id = std::move(node_id);
  st.counters = &metrics->actor("run_host");
  st.running.emplace(*st.counters);
  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](ping_atom) {
      note();
      return pong_reply{self->state.node_id, VOXOS_VERSION, wall_clock_us()};
    },
    [self, note](whoami_atom, const std::string& token) -> caf::result<tenant_identity> {
      note();
      if (token.empty() || token.size() > max_token_bytes)
        return make_error(errc::unauthorized, "the token is not valid");
      return self->delegate(self->state.directory, auth_atom::value, token);
    },
  };
}

} // namespace

run_host_actor spawn_run_host(caf::actor_system& sys, directory_actor directory,
                              std::string node_id, node_metrics& metrics) {
  return sys.spawn(run_host_behavior, std::move(directory), std::move(node_id), &metrics);
}

} // namespace voxos
