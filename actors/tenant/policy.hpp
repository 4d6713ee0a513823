// Tool policy: which tools one run may see and call, and why. CAF-free.
//
// compose_policy() is a pure function of the tenant's state and the run's
// trusted context. It runs once when a run or voice session starts; its
// result, the effective policy snapshot, is persisted and never changes for
// that run. Execution inside a run checks the snapshot; an action outside any
// run checks the persisted grants (check_grant).
//
// Order of composition (each step can only remove):
//   1. base policy: the agent's grants (explicit allow/deny, else the tool's
//      default) over the tenant's internal tools, phone integration tools and
//      enabled, trusted, connected, allowlisted, discovered MCP tools;
//   2. action routes, resolved on the base policy (pinned never falls back);
//   3. the channel and caller intersection (voice, phone, messaging,
//      scheduled, webhook, worker, subagent);
//   4. for subagents, the intersection with the parent run's snapshot.
// Every tool considered gets a decision with a stable reason code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/tenant_model.hpp"

namespace voxos {

enum class channel : uint8_t {
  owner_text_chat,   ///< an interactive, authenticated web chat turn
  in_app_voice,      ///< an authenticated owner voice session in the app
  phone_call,        ///< a provider phone call
  sms,               ///< an inbound SMS reply run
  whatsapp,          ///< an inbound WhatsApp reply run
  scheduled_run,     ///< a turn fired by an agent schedule
  webhook,           ///< a run started by a webhook
  manual_worker_run, ///< a run started by an operator on a worker
  subagent,          ///< a delegated child run
};

/// The caller class the channel's intersection uses, derived by compose_policy
/// from the trusted caller number: a saved Admin contact whose normalised
/// number matches exactly is `admin`.
enum class caller_class : uint8_t { owner, admin, limited, unknown };

/// How contact-search results are shaped for the model on this run.
enum class contact_detail : uint8_t { full_numbers, number_endings };

enum class tool_origin : uint8_t { internal, mcp, integration };

/// Stable reason codes of audit decisions.
enum class reason : uint8_t {
  // allowed
  explicit_grant = 1,
  default_grant,
  platform_default,
  // denied by the base policy
  explicit_deny,
  not_granted,
  server_disabled,
  server_untrusted,
  server_not_connected,
  not_allowlisted,
  not_discovered,
  integration_unavailable,
  prerequisite_denied,
  // denied by routes
  route_not_selected,
  pinned_route_unavailable,
  // denied by the channel
  text_chat_only,
  channel_excluded,
  caller_limited,
  sender_not_admin,
  not_inherited,
  parent_not_granted,
  // denied at execution
  not_in_snapshot,
  unknown_tool,
  foreign_server,
};

std::string_view to_string(channel x) noexcept;
std::string_view to_string(caller_class x) noexcept;
std::string_view to_string(tool_origin x) noexcept;
std::string_view to_string(reason x) noexcept;
bool is_allow(reason x) noexcept;

/// One tool the run may see and call.
struct snapshot_tool {
  tool_origin origin = tool_origin::internal;
  std::string name;
  std::string server_id; ///< MCP server id, or phone integration id; empty for internal
  risk_level risk = risk_level::medium;
  bool read_only = false; ///< curated read-only or the server's readOnlyHint
  bool mutating = false;
  std::string route_action; ///< the action route that selected it, or empty
};

struct policy_decision {
  tool_origin origin = tool_origin::internal;
  std::string tool;
  std::string server_id;
  reason why = reason::not_granted;
  bool allowed() const noexcept { return is_allow(why); }
};

struct route_resolution {
  std::string action;
  route_mode mode = route_mode::automatic;
  std::string server_id; ///< selected implementation; empty when none
  std::string tool;
};

struct profile_offer {
  std::string handle;
  std::string label;
  std::string primary_origin;
};

/// The effective policy snapshot of one run. Immutable once composed.
struct effective_policy {
  std::string tenant_id;
  std::string agent_id;
  std::string run_id;
  channel chan = channel::owner_text_chat;
  caller_class caller = caller_class::owner;
  contact_detail contacts = contact_detail::full_numbers;
  int64_t created_us = 0;
  std::vector<snapshot_tool> tools;     ///< allowed tools, internal first, then by server and name
  std::vector<route_resolution> routes; ///< one per known action
  std::vector<profile_offer> profiles;  ///< saved browser profiles offered to the model
  std::vector<policy_decision> decisions; ///< every tool considered, allowed or not

  /// The allowed tool, or nullptr. `server_id` empty for internal tools.
  const snapshot_tool* find(std::string_view server_id, std::string_view tool) const;
};

/// What the run's trusted execution context says; nothing here comes from a model.
struct run_context {
  std::string run_id;
  std::string agent_id;
  channel chan = channel::owner_text_chat;
  /// Phone calls and inbound messages: the caller's or sender's number,
  /// normalised to E.164 by the channel adapter. Matched exactly.
  std::string caller_number;
  /// Subagents: the parent run's snapshot (required for channel::subagent).
  const effective_policy* parent = nullptr;
};

/// An action route group: equivalent implementations in priority order, each
/// a (preset id, tool) identity. web.search: Exa, Tavily, Firecrawl, Browserless.
struct route_member {
  std::string_view preset_id;
  std::string_view tool;
};
struct route_group {
  std::string_view action;
  std::vector<route_member> members;
};
const std::vector<route_group>& route_groups();

/// True if `server` is the exact canonical keyless Exa preset identity:
/// preset id, transport, URL and auth mode.
bool is_canonical_exa(const mcp_server_record& server);

/// Composes the snapshot. Precondition: ctx.agent_id names an agent of
/// `tenant` (the tenant actor checks before calling).
effective_policy compose_policy(const tenant_state& tenant, const run_context& ctx, int64_t now_us);

/// An action outside any run: the persisted grant (with defaults) for one
/// tool of one agent, with the base policy's server checks.
policy_decision check_grant(const tenant_state& tenant, std::string_view agent_id,
                            std::string_view server_id, std::string_view tool);

/// A decision about a call inside a run: allowed only if the snapshot has it.
policy_decision check_call(const effective_policy& snapshot, std::string_view server_id,
                           std::string_view tool);

} // namespace voxos
