// The tenant actor: one per tenant, the only door to its configuration and
// its runs' policy snapshots. It loads its state from the projection when it
// starts, applies pending migrations (default agent, default Exa server,
// contact-search prerequisite), and serialises every change: the change's
// events are appended durably before the state in memory moves.
//
// Requests carry no tenant id: the directory hands out the handle of the
// tenant that an authenticated token selected. Arguments and answers are
// JSON text where they mirror the HTTP API.
//
// Lifecycle:  loading (its creator waits for `ready`) --> serving --exit--> gone
// Its runs and MCP sessions end with it: at a shutdown (user_shutdown) the
// runs stop; after a failure (any other reason; the directory spawns the
// tenant afresh on its next request, and that instance knows none of them)
// each live run is cancelled as a host cancels it and records "run.cancelled".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/vault_keeper/vault_keeper.hpp"
#include "config/node_config.hpp"
#include "messages/atoms.hpp"
#include "messages/types.hpp"

namespace voxos {

class node_metrics;
class server_keys;
class url_policy;

namespace server_sign_in {
struct context;
}

/// What every tenant actor of a node shares: the outbound URL policy, the
/// per-server data keys that seal server credentials and the keeper that
/// erases them (server_credentials.hpp), the MCP client's and the runs' bounds.
struct tenant_services {
  std::shared_ptr<const url_policy> urls;
  std::shared_ptr<server_keys> keys;
  vault_keeper_actor keeper;
  /// Signing in to servers (OAuth): the node's redirect URI, state key and
  /// the authorization work's HTTP; null when the node has no state secret.
  std::shared_ptr<const server_sign_in::context> sign_in;
  mcp_config mcp;
  run_config run;
  tools_config tools;
  work_config work;
  /// Where tenants keep derived indexes (<dir>/<tenant>/history); empty:
  /// in memory.
  std::string index_dir;
};

using tenant_actor = caf::typed_actor<
  // Lists the agents: JSON array.
  caf::replies_to<list_atom, agent_atom>::with<std::string>,
  // Creates an agent with a name; answers the agent as JSON.
  caf::replies_to<create_atom, agent_atom, std::string>::with<std::string>,
  // The grants page of one agent: JSON array of {server_id, tool, decision, allowed, reason}.
  caf::replies_to<list_atom, grant_atom, std::string>::with<std::string>,
  // Sets one grant (agent, server id or "", tool, "allow"|"deny"|"default"); answers the page row.
  caf::replies_to<grant_atom, std::string, std::string, std::string,
                  std::string>::with<std::string>,
  // Sets an action route (agent, action, "automatic"|"pinned", server, tool); answers it as JSON.
  caf::replies_to<route_atom, std::string, std::string, std::string, std::string,
                  std::string>::with<std::string>,
  // Lists the MCP server records (without cached schemas): JSON array.
  caf::replies_to<list_atom, server_atom>::with<std::string>,
  // One server's record with its discovered tools (tenant_queries.hpp,
  // server_detail); not_found for a server not this tenant's.
  caf::replies_to<list_atom, server_atom, std::string>::with<std::string>,
  // The preset catalog as this node offers it for creating servers
  // (server_setup.hpp, offered_catalog): {"presets": [...]}.
  caf::replies_to<list_atom, create_atom, server_atom>::with<std::string>,
  // How each action route of an agent resolves under its base policy
  // (tenant_queries.hpp, route_list); not_found for an agent not this tenant's.
  caf::replies_to<list_atom, route_atom, std::string>::with<std::string>,
  // The newest runs (at most the given count, history.hpp recent_runs), each
  // with its state (tenant_queries.hpp, run_list).
  caf::replies_to<list_atom, run_atom, uint32_t>::with<std::string>,
  // Patches a server: JSON {"enabled"?, "trusted"?, "allowed_tools"?}; answers the record.
  caf::replies_to<server_atom, std::string, std::string>::with<std::string>,
  // Creates a server from a preset or as a custom one (server_setup.hpp);
  // answers the record (disabled, untrusted, not connected).
  caf::replies_to<create_atom, server_atom, std::string>::with<std::string>,
  // The connection test: a fresh session, then discovery into the bounded
  // cache; answers the record with "discovered" and "skipped" counts. A
  // failed test marks the server not connected and answers the error.
  caf::replies_to<connect_atom, server_atom, std::string>::with<std::string>,
  // Deletes a server and closes its connection, then has the keeper erase
  // its data key, so nothing ever sealed for it opens again; answers
  // {"deleted": id}. (An erasure that fails is logged; the next start
  // erases the key.)
  caf::replies_to<revoke_atom, server_atom, std::string>::with<std::string>,
  // Starts a browser sign-in to an OAuth server (server id, JSON
  // {"client_id"?, "client_secret"?}: both to replace the stored client,
  // sealed before the provider is opened; neither to use the stored one or
  // register); answers {"authorization_url","redirect_uri"}.
  caf::replies_to<sign_in_atom, server_atom, std::string, std::string>::with<std::string>,
  // The sign-in's callback (server id, pending sign-in id, the callback's
  // query as JSON {name: value}): the answer checked, the code exchanged,
  // the tokens sealed, then the connection test; answers the record. A
  // sign-in the tenant does not hold (another, used, replaced) is refused.
  caf::replies_to<callback_atom, std::string, std::string, std::string>::with<std::string>,
  // Sets the machine client of a client-credentials or private-key-JWT
  // server (server id, JSON {"client_id", "client_secret"} or {"client_id",
  // "private_key_pem", "signing_alg"?}), sealed; answers the record.
  caf::replies_to<client_atom, server_atom, std::string, std::string>::with<std::string>,
  // The private broker route's question (server id): the current access
  // token of a brokered server, refreshed first when it is about to expire;
  // answers {"access_token","token_type","expires_in"?}.
  caf::replies_to<broker_atom, std::string>::with<std::string>,
  // From a connection's credentials: new tokens (server id, client JSON,
  // tokens JSON; local only), sealed and stored, replacing the old ones.
  // (with the credential epoch they were opened under: a stale report is dropped)
  caf::reacts_to<tokens_atom, std::string, uint64_t, std::string, std::string>,
  // From a connection's credentials: the server needs signing in again
  // (server id, credential epoch).
  caf::reacts_to<needs_auth_atom, std::string, uint64_t>,
  // Adds or replaces a phone integration (JSON phone_integration); answers it.
  caf::replies_to<phone_atom, std::string>::with<std::string>,
  // Adds or replaces a saved contact (JSON contact_record); answers it.
  caf::replies_to<contact_atom, std::string>::with<std::string>,
  // The phone integrations: {"phones": [phone_integration]}, by id.
  caf::replies_to<list_atom, phone_atom>::with<std::string>,
  // The saved contacts with the owner's notes and emails (for the owner,
  // never a model): {"contacts": [contact_record]}, by id.
  caf::replies_to<list_atom, contact_atom>::with<std::string>,
  // Deletes a phone integration (event "phone.deleted"); answers
  // {"deleted": id}; not_found (audited as refused) for none of this tenant's.
  caf::replies_to<revoke_atom, phone_atom, std::string>::with<std::string>,
  // Deletes a saved contact (event "contact.deleted"), as above.
  caf::replies_to<revoke_atom, contact_atom, std::string>::with<std::string>,
  // The owner's knowledge (review of candidates, consent, memories, skills,
  // example-skill installs) and the node's own MCP servers: an operation and
  // its JSON body, answered by the tenant's tool desk (actors/tools).
  caf::replies_to<knowledge_atom, std::string, std::string>::with<std::string>,
  // One call through the node's own MCP servers (actors/tools/node_servers.hpp):
  // server, agent id, tool, arguments (JSON object). The agent's grant is
  // checked and the decision audited ("call.decided", channel "mcp:<server>");
  // a tool it does not allow is forbidden. Answers the CallToolResult.
  caf::replies_to<tool_atom, server_atom, std::string, std::string, std::string,
                  std::string>::with<std::string>,
  // Whom a request to the node's own MCP servers acts for: the agent named
  // (the default agent for "") and the internal tools its grants allow now:
  // {"agent_id", "allowed": [names]}; not_found for an agent not this tenant's.
  caf::replies_to<list_atom, tool_atom, std::string>::with<std::string>,
  // Adds or replaces a saved browser profile's safe part (JSON browser_profile); answers it.
  caf::replies_to<profile_atom, std::string>::with<std::string>,
  // Starts a run: agent id, channel name, caller number, chat id ("" starts a
  // new chat), location JSON ("" none; actors/run/location.hpp); composes,
  // persists and audits its snapshot, then spawns the run actor
  // (actors/run/run.hpp); answers {"run_id","chat_id","snapshot","view",
  // "instructions"}. When the snapshot leaves out an allowlisted tool that the
  // server's cache does not describe (not_discovered), one live discovery of
  // that server first repairs the cache (once per cache version: a tool the
  // server does not have costs one discovery, not one per run).
  caf::replies_to<create_atom, run_atom, std::string, std::string, std::string, std::string,
                  std::string>::with<std::string>,
  // One model response's tool calls for a live run of this tenant: the run's
  // outputs, one per call id in call order (not_found for another tenant's run).
  caf::replies_to<tool_atom, std::string, std::vector<tool_call>>::with<std::vector<tool_output>>,
  // Cancels a live run; answers its cancellation summary (run.hpp).
  caf::replies_to<cancel_atom, run_atom, std::string>::with<std::string>,
  // Ends an idle live run normally; answers true.
  caf::replies_to<close_atom, run_atom, std::string>::with<bool>,
  // Adds a listener of a live run's tool activity (run.hpp); answers true.
  caf::replies_to<listen_atom, run_atom, std::string, caf::actor>::with<bool>,
  // A live run's state (run.hpp health).
  caf::replies_to<health_atom, run_atom, std::string>::with<std::string>,
  // The turn's user and assistant text as the host reports it (run id, user,
  // assistant; each at most 64 KiB): appended to the run's chat transcript.
  // Answers {"chat_id","turn","place_cards"} (place_cards: run.hpp turn).
  caf::replies_to<turn_atom, std::string, std::string, std::string>::with<std::string>,
  // A run's persisted snapshot and view: {"run_id","snapshot","view"}.
  caf::replies_to<run_atom, std::string>::with<std::string>,
  // Execution check of one call in a run (run id, server id or "", tool)
  // against the run's snapshot; audited. Answers {allowed, reason}.
  caf::replies_to<check_atom, std::string, std::string, std::string>::with<std::string>,
  // The newest audit rows (at most the given count) that the filter (JSON
  // of tenant_queries::audit_filter) lets through: JSON array.
  caf::replies_to<list_atom, audit_atom, uint32_t, std::string>::with<std::string>,
  // Queued work (actors/work, actors/schedule): an agent host's operation
  // and its JSON body ("lease", "begin", "heartbeat", "complete", "fail",
  // "list"; see work_queue.hpp, and "begin" below), and the owner's
  // schedules ("schedules.list|pause|resume|delete"). "begin" {"item_id",
  // "lease_id"} starts the leased item's run under its fixed run id, or
  // resumes it (a redelivered item: its persisted snapshot, its live actor
  // if it has one); answers {"run_id","chat_id","snapshot","view",
  // "instructions","item"}. A work run's answer is its completion, never a
  // host's turn report.
  caf::replies_to<work_atom, std::string, std::string>::with<std::string>,
  // Registers an agent host's worker actor with its capacity (leases at once).
  caf::replies_to<work_atom, caf::actor, uint32_t>::with<bool>,
  // From the tenant's own connection to a server (any other sender is
  // ignored): the server announced notifications/tools/list_changed. Its
  // cache is stale: the next run start whose snapshot names the server
  // rediscovers it once (as a repair discovery) before composing.
  caf::reacts_to<changed_atom, tool_atom, std::string>>;

/// Spawns a tenant actor. It loads its state from `store` (and applies pending
/// migrations) before it handles any request: callers may send right away.
tenant_actor spawn_tenant(caf::actor_system& sys, std::string tenant_id, event_store_actor store,
                          node_metrics& metrics, tenant_services services);

} // namespace voxos
