// Queued work: one model for every kind of work the node keeps durably and
// offers to connected agent hosts (the node never calls a model). CAF-free.
//
// Kinds: a scheduled turn (a schedule's occurrence, actors/schedule) and a
// child run (delegate_agent_task); later, browser tasks. Each item is one run
// of the normal kind: its run id is fixed when it is enqueued, so an item
// delivered twice (delivery is at least once) is the same run, and its answer
// reaches its chat once.
//
// Items are events of the chat their answer returns to (stream
// "chat.<chat_id>"), so everything that must happen together happens in one
// append to one stream:
//   work.enqueued  {item}                    (with schedule.saved when a
//                                             schedule fires)
//   turn.reported + work.completed {item_id, run_id}   (the answer, once)
//   work.failed    {item_id, run_id, reason}
//   work.cancelled {item_id, run_id, reason}
// The projection "<tenant>/work/<item_id>" holds each item not yet settled
// (put by work.enqueued, deleted by the three others): a restarted node
// reads its pending work from there. Schedules project the same way
// ("<tenant>/sched/<schedule_id>", put by schedule.saved with the whole
// record, deleted by schedule.deleted); their content is the schedule
// keeper's (actors/schedule).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"
#include "messages/types.hpp"
#include "storage/event_db.hpp"

namespace voxos::work {

enum class kind : uint8_t {
  scheduled_turn, ///< a schedule's occurrence: a turn in the schedule's chat
  child_run,      ///< a delegated child run: its result returns to the parent's chat
};

std::string_view to_string(kind k) noexcept;
std::optional<kind> parse_kind(std::string_view name) noexcept;

/// One queued item as stored in work.enqueued.
struct item {
  std::string item_id;
  kind k = kind::scheduled_turn;
  std::string agent_id;
  std::string chat_id; ///< where the answer goes
  std::string run_id;  ///< the run it is, fixed at enqueue
  std::string text;    ///< the schedule's instruction, or the child's task
  int64_t enqueued_us = 0;
  // scheduled_turn
  std::string schedule_id;
  int64_t occurrence_s = 0; ///< the occurrence it fires (UTC seconds)
  // child_run
  std::string parent_run_id;
  std::string context; ///< "isolated" | "summary"
  std::string provider;
  std::string model; ///< "" for the default
};

nlohmann::json to_json(const item& it);
/// An item as stored; corrupt_data names the field that is malformed.
result<item> item_from_json(const nlohmann::json& doc);

/// The id of a scheduled turn: a function of the schedule and its
/// occurrence, so one occurrence is one item, however often it is fired.
std::string scheduled_item_id(std::string_view schedule_id, int64_t occurrence_s);
/// Whether `id` has the form of an item id (1..64 of [a-z0-9_-]).
bool valid_item_id(std::string_view id) noexcept;
/// A fresh child run's item id.
std::string child_item_id();
/// The run an item is: "r_w" and the item id's tail (a run a host starts
/// is "r_" and hex digits, so never this).
std::string run_id_of(std::string_view item_id);
bool is_work_run(std::string_view run_id) noexcept;

/// Event types.
inline constexpr std::string_view enqueued = "work.enqueued";
inline constexpr std::string_view completed = "work.completed";
inline constexpr std::string_view failed = "work.failed";
inline constexpr std::string_view cancelled = "work.cancelled";
inline constexpr std::string_view schedule_saved = "schedule.saved";
inline constexpr std::string_view schedule_deleted = "schedule.deleted";

/// "chat.<chat_id>"
std::string stream_of(std::string_view chat_id);

event_draft enqueued_event(const item& it);
event_draft settled_event(std::string_view type, const item& it, std::string_view reason = {});

/// Projection prefixes: "<tenant>/work/" and "<tenant>/sched/".
std::string work_prefix(std::string_view tenant);
std::string schedule_prefix(std::string_view tenant);

/// The projector of work and schedule events (registered with the event
/// store beside the tenant's): refuses a malformed work or schedule event.
status project(const event_record& ev, std::vector<state_write>& out);

} // namespace voxos::work
