// The run_host actor: the entry point agent hosts reach over the CAF network
// (published by the node with caf::io::middleman). One per node. For now it
// answers a ping and "who am I" for a tenant token; runs come with the
// execution issue.
#pragma once

#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/directory/directory.hpp"
#include "messages/atoms.hpp"
#include "messages/types.hpp"

namespace voxos {

class node_metrics;

using run_host_actor = caf::typed_actor<
  // Liveness: answers the node id, version and time.
  caf::replies_to<ping_atom>::with<pong_reply>,
  // Answers the tenant a token secret speaks for, or unauthorized.
  caf::replies_to<whoami_atom, std::string>::with<tenant_identity>>;

run_host_actor spawn_run_host(caf::actor_system& sys, directory_actor directory,
                              std::string node_id, node_metrics& metrics);

} // namespace voxos
