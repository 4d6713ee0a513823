// The tenant's read-only answers of the HTTP API, built from its state and
// its stored events: one server with its discovered tools, the audit rows
// (with their filters), the run list's states, and how each action route
// resolves. CAF-free; nothing here changes anything.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "actors/tenant/policy.hpp"
#include "actors/tenant/tenant_model.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"

namespace voxos::tenant_queries {

/// `GET /v1/servers/{id}`: the record as `GET /v1/servers` lists it (never a
/// sealed value), with `tools`: each distinct tool of the discovery cache, by
/// name, {name, title? (when the server gave one), description, read_only,
/// idempotent, destructive? (only for tools that are not read-only, as MCP
/// defines the hint), allowed (on the server's allowlist)}. Descriptions are
/// the server's text, as JSON strings.
nlohmann::json server_detail(const mcp_server_record& rec);

// -- audit ----------------------------------------------------------------------

/// Exact-match filters of an audit listing; empty fields match everything.
struct audit_filter {
  std::string agent_id;
  std::string tool;
  std::string phase; ///< compose, execute or config

  bool empty() const noexcept { return agent_id.empty() && tool.empty() && phase.empty(); }
};

/// Audit rows at most (`limit`: 1 .. this, default 100).
inline constexpr uint32_t max_audit_rows = 10'000;
inline constexpr uint32_t default_audit_rows = 100;

/// The audit query of a request's parameters (`param(name)`: the value, or
/// nullopt when absent): limit (1 .. max_audit_rows), agent_id (an id:
/// 1..64 of [a-z0-9_-]), tool (1..128 of [A-Za-z0-9_.-]), phase (compose,
/// execute or config). Errors: out_of_range naming the parameter and its
/// constraint, never the value.
struct audit_query {
  uint32_t limit = default_audit_rows;
  audit_filter filter;
};
result<audit_query>
audit_query_of(const std::function<std::optional<std::string>(std::string_view)>& param);

/// The filter as the tenant actor receives it, and back (a malformed text
/// is an empty filter: it comes only from audit_query_of).
std::string to_text(const audit_filter& filter);
audit_filter audit_filter_of(const std::string& text);

/// Audit events (oldest first, as read from the stream) flattened to one row
/// per decision, newest first: {phase, time_us, run_id, agent_id, channel,
/// tool, server_id, reason} for compositions (phase compose) and executions
/// (execute), the refusal's own fields for refused changes (config). Rows the
/// filter refuses are left out before `limit` counts.
nlohmann::json audit_rows(const std::vector<event_record>& events, const audit_filter& filter,
                          uint32_t limit);

// -- runs -------------------------------------------------------------------------

/// Runs listed at most (`limit`: 1 .. this, default 50).
inline constexpr uint32_t max_run_rows = 500;
inline constexpr uint32_t default_run_rows = 50;

/// `?limit=` of the run list; out_of_range naming the constraint.
result<uint32_t> run_limit_of(const std::optional<std::string>& text);

/// The run list from the history's answer ({"runs": [{run_id, agent_id,
/// channel, chat_id, started_us, outcome, ended_us}]}, tool_desk.hpp) and
/// which runs have a live actor: {runs: [{run_id, agent_id, channel,
/// chat_id, started_us, state, ended_us?}]}. `state`: live (its actor
/// runs), finished or cancelled (recorded; with ended_us), or interrupted
/// (started, never ended, and no actor: the node stopped while it was live).
nlohmann::json run_list(const std::string& history_answer,
                        const std::function<bool(const std::string&)>& is_live);

// -- routes -----------------------------------------------------------------------

/// `GET /v1/agents/{agent}/routes`: {routes: [{action, mode, pinned?:
/// {server_id, tool}, resolved: {server_id, tool} | null, reason,
/// candidates: [{server_id, tool, available, reason}]}]}. The route's
/// `reason`: automatic_selected (the first available candidate),
/// no_implementation (the tenant has none of the group's servers' tools),
/// no_available_implementation (none is authorised), pinned_selected,
/// pinned_route_unavailable (the pinned one is not authorised: no
/// substitute).
nlohmann::json route_list(const std::vector<route_explanation>& routes);

} // namespace voxos::tenant_queries
