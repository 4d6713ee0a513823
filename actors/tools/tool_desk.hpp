// The tool desk: one actor per tenant that runs the tenant's internal tools
// over the tenant's own data. Its tenant spawns it (linked) and hands it the
// data the tenant owns that tools read (contacts, phone integrations); the
// desk owns the rest: knowledge (memories, skills, candidates) and task
// plans, loaded from their event streams when it starts, and the tenant's
// history index (rebuilt from events on start, fed as turns are reported).
//
// The history index is derived: built afresh from the tenant's chat and run
// streams when the desk starts (before it serves a call), then fed each such
// event as it becomes durable, in batches: indexed when nothing else waits
// in the desk's mailbox, else within `batch_events` or `batch_ms`
// (history.hpp); a search or read flushes the batch first.
//
// A run's wave sends it each internal call with the run's execution context
// (tool_context.hpp), already checked against the run's snapshot and
// validated against the tool's registry schema. The desk runs the tool's
// family function (knowledge.hpp, plans.hpp, contacts.hpp, docs.hpp,
// history.hpp, time.hpp), appends the outcome's events, awaited, and only
// then answers the CallToolResult: what a tool reports done is durable, and
// a refused call stores nothing. Calls are served one at a time in arrival
// order, so two writes never race on one state.
//
// delegate_agent_task (delegation.hpp) writes nothing of the desk's: the
// child's item is enqueued with the tenant's work queue, whose handle the
// desk is given, awaited, and only then is the child's id answered (a full
// queue, work.max_pending, is the tool error `queue_full`; any other failure
// of the queue fails the call, and it may have landed). The desk counts the
// children each run queued (tools.delegations_per_run).
//
// The owner's side (review of candidates, consent, listings, example skill
// installs) and the node's own MCP servers reach the same state through
// `(knowledge_atom, op, body)`. "runs.list" {"limit"} answers the run list
// the history keeps (history.hpp, recent_runs): {"runs": [{run_id,
// agent_id, channel, chat_id, started_us, outcome, ended_us}]}, newest first.
//
// create_agent_schedule is the schedule keeper's (actors/schedule): the
// desk refuses it outside an owner's text chat and otherwise forwards the
// run's agent, run and chat with the arguments, awaited.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/schedule/schedule_keeper.hpp"
#include "actors/tenant/tenant_model.hpp"
#include "actors/tools/delegation.hpp"
#include "actors/tools/history.hpp"
#include "actors/tools/knowledge.hpp"
#include "actors/tools/plans.hpp"
#include "actors/tools/tool_context.hpp"
#include "actors/work/work_queue.hpp"
#include "messages/atoms.hpp"

namespace voxos {

/// What the tenant hands its desk: its contacts, phone integrations and
/// subagent model allowlist as they are now (replaced whole on every change).
struct tool_desk_data {
  std::vector<contact_record> contacts;
  std::vector<phone_integration> phones;
  subagent_allowlist subagent_models;
};
using tool_desk_data_ptr = std::shared_ptr<const tool_desk_data>;

struct tool_desk_options {
  knowledge::limits knowledge;
  plans::limits plans;
  /// The tenant's history index: its directory (in memory when empty) and
  /// bounds (history.hpp).
  history_options history;
  /// The tenant's schedule keeper: create_agent_schedule is forwarded to it
  /// (a desk without one answers not_executable).
  schedule_keeper_actor schedules;
  delegation::limits delegation;
};

using tool_desk_actor = caf::typed_actor<
  // One internal (or phone integration) tool call of a run: the context,
  // the integration id for a place-call tool ("" otherwise), and the
  // tools/call params {"name","arguments"}; answers the CallToolResult text.
  caf::replies_to<tool_atom, tool_context, std::string, std::string>::with<std::string>,
  // The tenant's contacts, phones or subagent model allowlist changed.
  caf::reacts_to<contact_atom, tool_desk_data_ptr>,
  // An event just made durable that the history indexes (a chat turn, a
  // run's start or end, a tool round); others are passed over. Queued for
  // the next batch.
  caf::reacts_to<history_atom, event_record>,
  // Indexes the queued history events now (the desk's own timer).
  caf::reacts_to<history_atom>,
  // The owner's side and the node's own MCP servers: an operation and its
  // JSON body; answers JSON (see tool_desk.cpp, `owner_ops`).
  caf::replies_to<knowledge_atom, std::string, std::string>::with<std::string>,
  // {"memories","skills","candidates","pending","plans"} for operators and tests.
  caf::replies_to<health_atom>::with<std::string>>;

/// `queue`: the tenant's work queue, where delegate_agent_task enqueues.
tool_desk_actor spawn_tool_desk(caf::local_actor* tenant, std::string tenant_id,
                                event_store_actor store, work_queue_actor queue,
                                tool_desk_data_ptr data, tool_desk_options options);

} // namespace voxos

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(voxos::tool_context)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(voxos::tool_desk_data_ptr)
