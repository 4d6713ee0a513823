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
//
// Cost: the tenant actor composes from a policy_index it keeps until the next
// configuration change (below), so a run start walks the indexed tools once,
// finds each grant by position, and its snapshot points into the index
// instead of copying names: about 20 us for 2,000 MCP tools on 2 vCPU; the
// index build, about 0.5 ms (bench/tool_catalog_bench).
#pragma once

#include <cstdint>
#include <memory>
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
  // denied by the base policy (added later; kept last: reasons are stored)
  server_needs_auth, ///< the server's credentials are missing, revoked or past refresh
  // denied by the channel (added later)
  owner_conversation_only, ///< history tools outside owner text chat and owner voice
};

std::string_view to_string(channel x) noexcept;
std::string_view to_string(caller_class x) noexcept;
std::string_view to_string(tool_origin x) noexcept;
std::string_view to_string(reason x) noexcept;
bool is_allow(reason x) noexcept;

// Snapshot entries and their text. The names and ids of snapshot_tool and
// policy_decision are views of immutable text. An entry compose_policy makes
// borrows it from its snapshot: effective_policy::shared_text keeps the
// policy_index it was composed from alive (which shares the servers' tool
// caches), and internal tool names are static; so composing copies no name
// and counts no reference per entry. An entry built from strings (decoded
// from JSON, tests) owns a copy of its text.
//
// Hence: a composed entry is valid while its snapshot, or a copy of it,
// lives; copy the snapshot, not single entries, to keep them (check_call
// answers with an entry that owns its text).

/// Tag of the entry constructors whose text is static or kept alive by the
/// snapshot's shared_text (compose_policy).
struct borrowed_text_t {
  explicit borrowed_text_t() = default;
};
inline constexpr borrowed_text_t borrowed_text{};

/// One tool the run may see and call.
class snapshot_tool {
public:
  snapshot_tool() = default;
  /// An entry with its own copy of the text.
  snapshot_tool(tool_origin origin, std::string_view name, std::string_view server_id,
                risk_level risk, bool read_only, bool mutating, std::string_view route_action = {});
  /// An entry whose text is static or kept alive by its snapshot's shared_text.
  snapshot_tool(borrowed_text_t, tool_origin origin, std::string_view name,
                std::string_view server_id, risk_level risk, bool read_only, bool mutating,
                std::string_view route_action) noexcept
      : origin(origin), risk(risk), read_only(read_only), mutating(mutating), name_(name),
        server_id_(server_id), route_action_(route_action) {}

  std::string_view name() const noexcept { return name_; }
  /// MCP server id, or phone integration id; empty for internal tools.
  std::string_view server_id() const noexcept { return server_id_; }
  /// The action route that selected it, or empty.
  std::string_view route_action() const noexcept { return route_action_; }

  tool_origin origin = tool_origin::internal;
  risk_level risk = risk_level::medium;
  bool read_only = false; ///< curated read-only or the server's readOnlyHint
  bool mutating = false;

private:
  std::shared_ptr<const void> owner_; ///< own text, or nullptr when borrowing
  std::string_view name_;
  std::string_view server_id_;
  std::string_view route_action_;
};

/// The decision about one tool considered.
class policy_decision {
public:
  policy_decision() = default;
  /// A decision with its own copy of the text.
  policy_decision(tool_origin origin, std::string_view tool, std::string_view server_id,
                  reason why);
  /// A decision whose text is static or kept alive by its snapshot's shared_text.
  policy_decision(borrowed_text_t, tool_origin origin, std::string_view tool,
                  std::string_view server_id, reason why) noexcept
      : origin(origin), why(why), tool_(tool), server_id_(server_id) {}

  std::string_view tool() const noexcept { return tool_; }
  std::string_view server_id() const noexcept { return server_id_; }
  bool allowed() const noexcept { return is_allow(why); }

  tool_origin origin = tool_origin::internal;
  reason why = reason::not_granted;

private:
  std::shared_ptr<const void> owner_; ///< own text, or nullptr when borrowing
  std::string_view tool_;
  std::string_view server_id_;
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
  /// What the text of composed entries points into (see above); nullptr
  /// when every entry owns its text.
  std::shared_ptr<const void> shared_text;

  /// The allowed tool, or nullptr. `server_id` empty for internal tools.
  const snapshot_tool* find(std::string_view server_id, std::string_view tool) const;
};

/// What a run actor keeps of its snapshot for its life: the snapshot
/// without its decisions, routes and profiles (the audit's and the start
/// answer's; a run checks calls against `tools` and names its agent and
/// channel). The text stays shared. Saves about 1.8 KiB per live run with a
/// default agent's grants (its decisions are every tool considered).
effective_policy run_part(const effective_policy& snapshot);

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

/// One implementation of an action route, as the route sees it.
struct route_candidate {
  std::string server_id;
  std::string tool;
  bool available = false; ///< authorised by the base policy
  /// Its decision once the route resolved: the grant's reason for the
  /// selected one, route_not_selected or pinned_route_unavailable for other
  /// available ones, the base policy's refusal otherwise.
  reason why = reason::not_granted;
};

/// How one action route resolves for an agent under its base policy.
struct route_explanation {
  route_resolution resolved; ///< action, mode, the selected implementation (empty: none)
  /// The configured target of a pinned route; empty when automatic.
  std::string pinned_server_id;
  std::string pinned_tool;
  /// The group's implementations among the tenant's tools, in the order
  /// automatic selection prefers them (member priority, then server id).
  std::vector<route_candidate> candidates;
};

/// A tenant's configuration indexed for compose_policy: each server's tools
/// (allowlisted or discovered) merged and sorted once, with their curated
/// facts and route memberships, and every agent's grants keyed by tool
/// position instead of by name.
///
/// Built from one tenant_state in O(tools log tools + grants); immutable
/// afterwards and independent of that state (it shares the servers' tool
/// caches and copies the rest), so it stays valid while the state changes
/// and the snapshots composed from it point into it. Whoever owns the state
/// rebuilds the index after changing it (the tenant actor: lazily, before
/// the first run after a configuration change); a stale index composes
/// snapshots of the configuration it was built from.
/// Threading: const; copies share one immutable block.
class policy_index {
public:
  explicit policy_index(const tenant_state& tenant);

  const std::string& tenant_id() const noexcept;

  struct parts; ///< defined in policy.cpp

private:
  friend effective_policy compose_policy(const policy_index& index, const run_context& ctx,
                                         int64_t now_us);
  friend std::vector<route_explanation> explain_routes(const policy_index& index,
                                                       const std::string& agent_id);
  std::shared_ptr<const parts> parts_;
};

/// Composes the snapshot from an index of the tenant's configuration: one
/// pass over the tenant's tools, no definition copied and no grant looked up
/// by name. Precondition: ctx.agent_id names an agent of the indexed tenant
/// (the tenant actor checks before calling).
effective_policy compose_policy(const policy_index& index, const run_context& ctx, int64_t now_us);

/// The same from the state itself (builds a policy_index first).
effective_policy compose_policy(const tenant_state& tenant, const run_context& ctx, int64_t now_us);

/// Every known action route (route_groups order) for `agent_id` under its
/// current base policy (step 1 and 2 of composition, the same code; no
/// channel): which implementation it resolves to and why. Precondition as
/// compose_policy's: the agent is the indexed tenant's.
std::vector<route_explanation> explain_routes(const policy_index& index,
                                              const std::string& agent_id);

/// An action outside any run: the persisted grant (with defaults) for one
/// tool of one agent, with the base policy's server checks.
policy_decision check_grant(const tenant_state& tenant, std::string_view agent_id,
                            std::string_view server_id, std::string_view tool);

/// A decision about a call inside a run: allowed only if the snapshot has it.
policy_decision check_call(const effective_policy& snapshot, std::string_view server_id,
                           std::string_view tool);

} // namespace voxos
