// The run_host actor: the entry point agent hosts reach over the CAF network
// (published by the node with caf::io::middleman). One per node.
//
// Every request carries the host's tenant token: the token selects the
// tenant (through the directory), and the tenant resolves run ids among its
// own runs only, so a run id of another tenant is simply not found. A
// token's tenant is remembered for `auth_cache_ms` (2 s) in the node's
// token cache (actors/directory/token_cache.hpp), shared with the HTTP API;
// the directory forgets a token there the moment it revokes it, so a
// revoked token is refused from the next request.
//
// Host disconnects: the actor that starts a run is its host. If that actor
// becomes unreachable (its node's connection drops: the host process died
// or its network went away), every run it started and did not finish is
// cancelled, which cancels its MCP requests in flight (actors/run/run.hpp).
// A host actor that exits normally leaves its runs to other actors of the
// host (they end by `close`, `cancel`, or the tenant's limits).
//
// The runs a host started are remembered until they end through this entry
// point or the host goes. Runs that end another way (HTTP DELETE, a tenant's
// limits, a failure) are found when a host has 64 runs remembered, and each
// time that count doubles past what the last check left: each run's tenant
// is asked whether it is still live. A host's list so holds at most twice
// its live runs plus 64. The metric voxos_run_host_hosted_runs counts them.
#pragma once

#include <memory>
#include <string>
#include <vector>

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
  caf::replies_to<whoami_atom, std::string>::with<tenant_identity>,
  // Starts a run (token, request): composes its snapshot and view; answers
  // the run id, its chat and its tool view (JSON, as GET /v1/runs/{id}).
  caf::replies_to<create_atom, run_atom, std::string, run_start>::with<run_ticket>,
  // One model response's tool calls (token, run id, calls); answers one
  // output per call id, in call order, once every call is settled.
  caf::replies_to<tool_atom, std::string, std::string,
                  std::vector<tool_call>>::with<std::vector<tool_output>>,
  // The turn's text (token, run id, user text, assistant text) for the
  // chat transcript; answers {"chat_id","turn"}.
  caf::replies_to<turn_atom, std::string, std::string, std::string, std::string>::with<std::string>,
  // Cancels a run (token, run id); answers its cancellation summary JSON.
  caf::replies_to<cancel_atom, std::string, std::string>::with<std::string>,
  // Ends an idle run normally (token, run id); answers true.
  caf::replies_to<close_atom, std::string, std::string>::with<bool>,
  // Queued work (token, operation, JSON body): "lease", "begin",
  // "heartbeat", "complete", "fail", as the HTTP routes /v1/work/...
  // (actors/work/work_queue.hpp); answers JSON.
  caf::replies_to<work_atom, std::string, std::string, std::string>::with<std::string>,
  // Registers a worker actor of the token's tenant with its capacity
  // (leases at once, 1 .. 64). Leases are pushed to it as
  // (work_atom, offer_atom, lease JSON); it answers them through the
  // operations above. A worker that goes away has its leases offered again.
  caf::replies_to<work_atom, std::string, caf::actor, uint32_t>::with<bool>>;

/// `tokens`: the node's token cache (null: the directory is asked on every
/// request).
run_host_actor spawn_run_host(caf::actor_system& sys, directory_actor directory,
                              std::string node_id, node_metrics& metrics,
                              std::shared_ptr<node_token_cache> tokens = nullptr);

} // namespace voxos
