// What the tenant actor does to its configuration, as CAF-free functions:
// each operation validates against the current state and returns the events
// to append (nothing changes until they are durable), or a specific error.
// Errors name fields and constraints, never rejected values.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/tenant/tenant_events.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"

namespace voxos::tenant_logic {

/// Makes fresh ids ("a_" + 16 hex digits and the like).
using id_maker = std::function<std::string(std::string_view prefix)>;

/// The migrations every tenant gets once, as events (with their
/// migration.applied markers), in order:
///   default_agent_v1    — a default agent when the tenant has none;
///   exa_default_v1      — the canonical keyless Exa server (enabled, trusted,
///                         connected, its two tools allowlisted, the preset's
///                         curated schemas cached) unless any Exa record exists
///                         or `exa_in_history` (the tenant had one and deleted
///                         it: an opt-out, see holds_exa_record); an existing
///                         record is left exactly as it is;
///   contact_prereq_v1   — the contact-search prerequisite for the default agent
///                         when a call-capable resource is connected or a
///                         place-call grant is allowed, and no explicit
///                         contact-search decision exists.
/// Empty when every migration was applied already.
std::vector<event_draft> pending_migrations(const tenant_events::loaded_tenant& t,
                                            const id_maker& make_id, int64_t now_us,
                                            bool exa_in_history);

/// Whether exa_default_v1 is still to be applied: then the caller reads the
/// tenant's config stream for holds_exa_record first.
bool exa_migration_pending(const tenant_events::loaded_tenant& t);

/// Whether some of a tenant's config events (its config stream, any page)
/// stored an Exa record (the keyless or API-key preset, or a URL at exa.ai),
/// whether or not it was deleted later. The projection forgets a deleted
/// server; the events remember that the owner had one.
bool holds_exa_record(const std::vector<event_record>& config_events);

/// A new agent named `name` (1–200 bytes, no control characters).
result<std::vector<event_draft>> create_agent(const tenant_events::loaded_tenant& t,
                                              const std::string& name, const id_maker& make_id);

/// Sets one grant: decision "allow", "deny", or "default" (clears it). The
/// tool must exist for this tenant: an internal tool, a tool of one of the
/// tenant's servers (cached or allowlisted), or a phone integration's tool.
/// Errors: not_found (agent, server of this tenant, tool), out_of_range (decision).
result<std::vector<event_draft>> set_grant(const tenant_events::loaded_tenant& t,
                                           const std::string& agent_id,
                                           const std::string& server_id, const std::string& tool,
                                           const std::string& decision);

/// Sets an agent's action route: mode "automatic", or "pinned" to an exact
/// (server, tool) that is a member of the action's group on a server of this
/// tenant. Errors: not_found (agent, action, server), out_of_range (mode, tool
/// not a member of the action).
result<std::vector<event_draft>> set_route(const tenant_events::loaded_tenant& t,
                                           const std::string& agent_id, const std::string& action,
                                           const std::string& mode, const std::string& server_id,
                                           const std::string& tool);

/// Adds or replaces a phone integration; connecting a call-capable one adds
/// the contact-search prerequisite to the default agent when no explicit
/// contact-search decision exists (an explicit denial is never replaced).
result<std::vector<event_draft>> upsert_phone(const tenant_events::loaded_tenant& t,
                                              const phone_integration& phone);

/// Adds or replaces a saved contact (phone normalised E.164: '+' and 8–15 digits).
result<std::vector<event_draft>> upsert_contact(const tenant_events::loaded_tenant& t,
                                                const contact_record& contact);

/// Deletes a saved contact. Errors: not_found (none of this tenant's).
result<std::vector<event_draft>> delete_contact(const tenant_events::loaded_tenant& t,
                                                const std::string& contact_id);

/// Deletes a phone integration. Grants of its place-call tool stay and allow
/// nothing until an integration of the same id is connected again. Errors:
/// not_found (none of this tenant's).
result<std::vector<event_draft>> delete_phone(const tenant_events::loaded_tenant& t,
                                              const std::string& integration_id);

/// Adds or replaces a saved browser profile's safe, model-visible part. Its
/// agents must be this tenant's; a hosted profile names one of the tenant's
/// servers and a tool that server knows. Errors: not_found.
result<std::vector<event_draft>> upsert_profile(const tenant_events::loaded_tenant& t,
                                                const browser_profile& profile);

/// Replaces the owner's subagent model allowlist with `body`
/// ({"providers": {...}}, tenant_model.hpp); an empty one clears it.
/// Errors (wrong_type, out_of_range, unknown_field, missing_field) name the
/// path and the constraint, never a rejected name or model.
result<std::vector<event_draft>> set_subagent_models(const nlohmann::json& body);

/// Changes a server's enabled / trusted flags and allowlist. Enabling a
/// disabled server clears `connected`: it goes through the normal
/// test-and-grant flow again. Allowlisted tools must be known to the server
/// (cached, or curated by its preset).
struct server_patch {
  std::optional<bool> enabled;
  std::optional<bool> trusted;
  std::optional<std::vector<std::string>> allowed_tools;
};
result<std::vector<event_draft>> patch_server(const tenant_events::loaded_tenant& t,
                                              const std::string& server_id,
                                              const server_patch& patch);

/// The grants page of one agent: every tool the agent could be granted, with
/// its origin (internal, mcp, integration), risk and read-only mark as a
/// run's snapshot rates them, an internal tool's kind (the product
/// document's column), its explicit decision ("allow", "deny" or "default")
/// and the base policy's answer (check_grant).
result<nlohmann::json> grants_page(const tenant_events::loaded_tenant& t,
                                   const std::string& agent_id);

} // namespace voxos::tenant_logic
