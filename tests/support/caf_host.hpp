// The actor system of an agent host in a test: our message types and the
// CAF network (io::middleman), for reaching a node's run_host as hosts do.
#pragma once

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>

#include "messages/register.hpp"

namespace voxos::test {

struct caf_host_config : caf::actor_system_config {
  caf_host_config() {
    register_types(*this);
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{1});
  }
};

} // namespace voxos::test
