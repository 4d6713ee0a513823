// An actor system of two scheduler threads and an event store over a fresh
// node store (the node's projectors), for tests of actors that keep their
// state in events. A fixture that spawns more actors stops them in its own
// destructor, before this one ends the store and the system.
#pragma once

#include <memory>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "messages/register.hpp"
#include "support/node_store.hpp"
#include "support/temp_dir.hpp"

namespace voxos::test {

struct actor_store {
  temp_dir dir;
  node_metrics metrics; // outlives the actor system
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  event_store_actor store;

  actor_store() {
    register_types(cfg);
    cfg.set("scheduler.max-threads", size_t{2});
    sys = std::make_unique<caf::actor_system>(cfg);
    store = spawn_event_store(*sys, std::shared_ptr<event_db>(open_node_store(dir)), metrics, {});
  }

  ~actor_store() {
    caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
    store = nullptr;
    sys.reset();
  }
};

} // namespace voxos::test
