// The tenant's configuration events, their projection and the state loaded
// from it. CAF-free.
//
// Stream (<tenant>, "config"). Every event carries the whole entity it
// changes, so the projection is a pure function of one event:
//   agent.created      {"agent": agent}
//   server.upserted    {"server": mcp_server_record}
//   server.deleted     {"server_id"}
//   grant.set          {"grant": tool_grant}
//   grant.cleared      {"agent_id","server_id","tool"}
//   route.set          {"route": action_route}
//   route.cleared      {"agent_id","action"}
//   contact.upserted   {"contact": contact_record}
//   contact.deleted    {"contact_id"}
//   phone.upserted     {"phone": phone_integration}
//   phone.deleted      {"integration_id"}
//   profile.upserted   {"profile": browser_profile}
//   profile.deleted    {"handle"}
//   subagent_models.set {"allowlist": subagent_allowlist}  (replaces it whole)
//   migration.applied  {"name"}
// Projection keys (state column family), all under "<tenant>/cfg/":
//   agent/<agent_id>, server/<server_id>, grant/<agent_id>/<server_id or "-">/<tool>,
//   route/<agent_id>/<action>, contact/<id>, phone/<id>, profile/<handle>, subagent_models,
//   migration/<name>
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/tenant/policy.hpp"
#include "actors/tenant/tenant_model.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"
#include "storage/event_db.hpp"

namespace voxos::tenant_events {

inline constexpr const char* stream = "config";

/// The subagent model allowlist's bounds (tenant_model.hpp).
inline constexpr std::size_t max_subagent_providers = 16;
inline constexpr std::size_t max_subagent_models = 64;

/// The identifier rules of the model, for readers that check a query: an id
/// (agents, servers, runs, contacts: 1..64 of [a-z0-9_-]) and a tool name
/// (1..128 of [A-Za-z0-9_.-]).
bool is_id(std::string_view text) noexcept;
bool is_tool_name(std::string_view text) noexcept;

/// "<tenant>/cfg/": the prefix to scan when loading a tenant.
std::string state_prefix(const std::string& tenant_id);

// -- event builders (data is the JSON object described above) ----------------
event_draft agent_created(const agent_record& x);
event_draft server_upserted(const mcp_server_record& x);
event_draft server_deleted(const std::string& server_id);
event_draft grant_set(const tool_grant& x);
event_draft grant_cleared(const std::string& agent_id, const std::string& server_id,
                          const std::string& tool);
event_draft route_set(const action_route& x);
event_draft route_cleared(const std::string& agent_id, const std::string& action);
event_draft contact_upserted(const contact_record& x);
event_draft contact_deleted(const std::string& contact_id);
event_draft phone_upserted(const phone_integration& x);
event_draft phone_deleted(const std::string& integration_id);
event_draft profile_upserted(const browser_profile& x);
event_draft profile_deleted(const std::string& handle);
event_draft subagent_models_set(const subagent_allowlist& x);
event_draft migration_applied(const std::string& name);

/// The projector for event_db_options: handles (<tenant>, "config") events of
/// every tenant and ignores other streams; refuses a malformed event.
status project(const event_record& ev, std::vector<state_write>& out);

/// A tenant's state from its projection entries (as scan_state returns them
/// for state_prefix(tenant_id)), with the names of applied migrations.
struct loaded_tenant {
  tenant_state state;
  std::set<std::string> migrations;
};
result<loaded_tenant> load(const std::string& tenant_id,
                           const std::vector<std::pair<std::string, std::string>>& entries);

/// Applies one configuration event to an in-memory state, exactly as the
/// projection would (the tenant actor uses it after an acknowledged append).
status apply(const event_draft& ev, loaded_tenant& into);

// -- JSON of the model, shared with the HTTP API ---------------------------------
nlohmann::json to_json(const agent_record& x);
nlohmann::json to_json(const mcp_server_record& x, bool with_cached_tools = true);
nlohmann::json to_json(const tool_grant& x);
nlohmann::json to_json(const action_route& x);
nlohmann::json to_json(const contact_record& x);
nlohmann::json to_json(const phone_integration& x);
nlohmann::json to_json(const browser_profile& x);
/// {"providers": {"<provider>": ["<model>", ...]}}
nlohmann::json to_json(const subagent_allowlist& x);
nlohmann::json to_json(const effective_policy& x);

result<agent_record> agent_from_json(const nlohmann::json& x);
result<mcp_server_record> server_from_json(const nlohmann::json& x);
result<tool_grant> grant_from_json(const nlohmann::json& x);
result<action_route> route_from_json(const nlohmann::json& x);
result<contact_record> contact_from_json(const nlohmann::json& x);
result<phone_integration> phone_from_json(const nlohmann::json& x);
result<browser_profile> profile_from_json(const nlohmann::json& x);
/// Strict: only "providers", within the bounds and charsets of
/// tenant_model.hpp; errors name the path ("providers.openai[2]") and the
/// constraint, never a rejected name or model.
result<subagent_allowlist> subagent_allowlist_from_json(const nlohmann::json& x);
result<effective_policy> policy_from_json(const nlohmann::json& x);

} // namespace voxos::tenant_events
