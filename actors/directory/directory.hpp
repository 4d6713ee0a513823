// The directory actor: the node's tenants and their API tokens. One per node.
// Every change is an event on ("_node", "directory"); its index answers reads
// and authenticates tokens in memory. Tokens are returned once, at issue,
// and stored only as SHA-256 hashes.
//
// It also owns one tenant actor per tenant, spawned when the tenant is
// created or first used; a new tenant's actor applies the default agent and
// default web search migrations at once. A tenant actor that fails is
// forgotten (its live runs are cancelled as it ends: tenant.hpp) and spawned
// again from the store on the tenant's next request.
//
// Revoking a token forgets it in the node's token cache (token_cache.hpp)
// before the revocation is answered, so neither entry point lets it act again.
//
// Requests name a tenant id only where the caller is trusted to choose one
// (the operator's admin API, or the HTTP adapter passing the id that a
// tenant's own token selected); the directory checks that it exists.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/actor_control_block.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>
#include <caf/weak_intrusive_ptr.hpp>

#include "actors/directory/token_cache.hpp"
#include "actors/event_store/event_store.hpp"
#include "actors/tenant/tenant.hpp"
#include "messages/atoms.hpp"
#include "messages/types.hpp"

namespace voxos {

class directory_index;
class node_metrics;

using directory_actor = caf::typed_actor<
  // Creates a tenant with a display name (1-200 bytes, no control characters).
  caf::replies_to<create_atom, tenant_atom, std::string>::with<tenant_record>,
  // Lists every tenant.
  caf::replies_to<list_atom, tenant_atom>::with<std::vector<tenant_record>>,
  // Answers one tenant, or not_found.
  caf::replies_to<tenant_atom, std::string>::with<tenant_record>,
  // Issues a token for a tenant (label 0-200 bytes); the answer carries the secret once.
  caf::replies_to<create_atom, token_atom, std::string, std::string>::with<issued_token>,
  // Lists a tenant's tokens (no secrets, no hashes).
  caf::replies_to<list_atom, token_atom, std::string>::with<std::vector<token_record>>,
  // Revokes a tenant's token; not_found if the token is not that tenant's or already revoked.
  caf::replies_to<revoke_atom, token_atom, std::string, std::string>::with<token_record>,
  // Authenticates a token secret; unauthorized if it matches no live token.
  caf::replies_to<auth_atom, std::string>::with<tenant_identity>,
  // The tenant actor of an existing tenant (spawned on first use, kept for the
  // node's life); not_found for an unknown tenant.
  caf::replies_to<config_atom, std::string>::with<tenant_actor>>;

/// What a node's entry points remember of a tenant token (token_cache.hpp):
/// its identity, and its tenant actor held weakly (one that failed and was
/// forgotten by the directory is asked for again; empty until an entry
/// point needs it).
struct remembered_token {
  tenant_identity identity;
  caf::weak_actor_ptr tenant;
};
using node_token_cache = token_cache<remembered_token>;

/// Spawns the directory over an index loaded from the projection; it forgets
/// each token it revokes in `tokens` (the node's entry points' cache; may be
/// null).
directory_actor spawn_directory(caf::actor_system& sys, event_store_actor store,
                                directory_index index, node_metrics& metrics,
                                tenant_services services,
                                std::shared_ptr<node_token_cache> tokens = nullptr);

} // namespace voxos
