// delegate_agent_task: what one call queues, and the summary a child run
// gets of its parent's chat. CAF-free; the tool desk enqueues the item with
// the tenant's work queue (actors/work) and answers the model.
//
// Authority comes from the execution context only: the child's agent, chat
// and parent run are the calling run's (tool_context), its item and run ids
// are made here (work::child_item_id, work::run_id_of). The model gives a
// scoped task, `isolated` or `summary` context, and optionally a model id,
// which must be listed in the owner's provider-specific subagent allowlist
// (tenant_model.hpp, subagent_allowlist): the provider is the one that lists
// it. A model id listed under two providers or more is ambiguous, and the
// model cannot say which (no provider argument): refused `model_ambiguous`.
// With no model the child runs on the host's default ({provider, model}
// both empty).
//
// Refusals (a tool error, nothing queued), by code:
//   invalid_arguments  arguments other than task, context and model, or of
//                      the wrong type (the registry schema refuses them
//                      first; checked again here)
//   model_not_allowed  a model the allowlist does not hold (an empty
//                      allowlist holds none)
//   model_ambiguous    a model two providers list
//   too_many_children  the calling run has queued `children_per_run`
//                      children already (tools.delegations_per_run, 16)
//   not_inherited      the calling run is itself a child run (its snapshot
//                      never holds the tool; checked again here)
//   unavailable        a call with no run or chat (outside any run)
//
// The child's snapshot is composed when its run begins: the parent's
// intersected with the target agent's policy (actors/tenant/policy.hpp,
// channel `subagent`), so it is never wider than the parent's, never holds
// delegate_agent_task and never holds saved-profile browser authority.
//
// `summary` context: the node never calls a model, so the summary is the
// parent chat's recent transcript, read when the child's run begins (again
// when it is delivered again) from the chat's newest `summary_events`
// events: its reported turns, newest kept first, within `summary_bytes`
// (tools.delegation_summary_bytes, 8 KiB), shown oldest first; the newest
// turn alone is cut to fit. `isolated`: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tenant/tenant_model.hpp"
#include "actors/tools/tool_context.hpp"
#include "actors/work/work_item.hpp"
#include "messages/types.hpp"

namespace voxos::delegation {

/// The bounds of delegation (tools.delegations_per_run,
/// tools.delegation_summary_bytes).
struct limits {
  /// Children one run may queue over its life.
  std::size_t children_per_run = 16;
  /// Bytes of the parent chat's transcript a `summary` child gets.
  std::size_t summary_bytes = 8 * 1024;
};

/// The parent chat's newest events read for a summary.
inline constexpr uint32_t summary_events = 64;

/// What one delegate_agent_task call becomes: the child's work item, or a
/// refusal (nothing is queued).
struct plan {
  work::item child;
  tool_outcome refusal; ///< is_error when refused
  bool refused() const noexcept { return refusal.is_error; }
};

/// Checks the arguments against the allowlist and the bound
/// (`children_so_far`: children the calling run queued already) and builds
/// the child's item from the context (see above).
plan plan_child(const subagent_allowlist& allowed, const tool_context& ctx,
                const nlohmann::json& args, std::size_t children_so_far, const limits& lim);

/// The model's answer once the child is queued: its run id and item id,
/// status `queued`, and that its result arrives as a later turn of this chat.
tool_outcome queued(const work::item& child);

/// The transcript of `chat_events` (a chat stream's events in order; only
/// `turn.reported` ones count) within `max_bytes`, newest turns kept first,
/// written oldest first as "User: ...\nAssistant: ...\n\n". Empty when the
/// chat has no turn.
std::string summary_text(const std::vector<event_record>& chat_events, std::size_t max_bytes);

/// Children each run queued, for runs that delegated lately: the newest
/// `max_runs` runs are kept (a tenant's live runs delegate; an older run
/// forgotten counts from zero again).
class child_counts {
public:
  explicit child_counts(std::size_t max_runs = 4096) : max_runs_(max_runs) {}
  std::size_t of(const std::string& run_id) const;
  void add(const std::string& run_id);

private:
  std::size_t max_runs_;
  std::unordered_map<std::string, std::size_t> counts_;
  std::deque<std::string> order_;
};

} // namespace voxos::delegation
