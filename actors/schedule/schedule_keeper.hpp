// The schedule keeper: one actor per tenant (spawned and linked by the
// tenant, after its work queue) that holds the tenant's agent schedules and
// fires each at its due time into the work queue. Its records and rules are
// schedule_book.hpp; when a turn is due, timing.hpp says.
//
// Schedules are events of the chat their turns return to (stream
// "chat.<chat_id>": schedule.saved with the whole record, schedule.deleted);
// the projection "<tenant>/sched/<schedule_id>" holds each one. At start the
// keeper reads them all from there before it serves anything, then asks
// each active one once what is due (after a restart: a missed one-shot fires
// once, an interval that missed several fires once and goes on from now).
//
// One timer, armed for the earliest due time (and at least every
// `max_timer_wait`, so a wall clock that moved is noticed); an ordered index
// of due times. Every schedule due when it fires is fired in the same pass:
// each fire sends its enqueue without waiting for the others. A fire is one
// append, through the queue, to the schedule's chat: the work item (its id
// a function of the schedule and the occurrence, so one occurrence is one
// item) with the schedule's new record (its last fired occurrence) or, for
// a one-shot, its deletion. Then:
//   queued     the record in memory moves on; the next due time is armed;
//   conflict   the occurrence was queued before (an answer lost): the
//              record is appended alone, then as queued;
//   any other  nothing changed: asked again `retry_delay_s` later.
// Each schedule has at most one write on its way; an owner's operation on a
// schedule being written waits for that write.
//
// Sent by the tenant (owner operations) and its tool desk ("create"); each
// change is durable before its answer.
#pragma once

#include <cstdint>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/schedule/schedule_book.hpp"
#include "actors/work/work_queue.hpp"
#include "messages/atoms.hpp"

namespace voxos {

using schedule_keeper_actor = caf::typed_actor<
  // An operation and its JSON body; answers JSON:
  //   "create" {"agent_id","chat_id","run_id","arguments"} (the tool desk,
  //            from a run's context and create_agent_schedule's arguments)
  //            -> {"schedule": <listing>}, or a rule broken as
  //            {"error": code, "message"} (codes: schedule_book.hpp create)
  //   "list"   {} -> {"schedules": [<listing>...]} (oldest first)
  //   "pause"  {"schedule_id"} -> <listing>
  //   "resume" {"schedule_id"} -> <listing>; conflict when its one-shot
  //            time passed while it was paused
  //   "delete" {"schedule_id"} -> {"deleted": id}
  // A schedule id this tenant does not hold is not_found; a write the store
  // refused is its error (nothing changed).
  caf::replies_to<schedule_atom, std::string, std::string>::with<std::string>,
  // {"schedules","active","paused","writing","fired","retried","next_due_s"}.
  caf::replies_to<health_atom>::with<std::string>,
  // Its own timer.
  caf::reacts_to<tick_atom>>;

struct schedule_keeper_options {
  /// Bounds of new schedules: the shortest interval
  /// (work.min_schedule_interval_s) and the most schedules
  /// (work.max_schedules); ten years' interval and horizon.
  schedules::create_limits limits;
  /// A fire whose work was not queued (the queue refused it or did not
  /// answer) is asked again this much later: 5 s by default, long enough for
  /// a store that failed to recover, short against any schedule interval.
  int64_t retry_delay_s = 5;
};

schedule_keeper_actor spawn_schedule_keeper(caf::local_actor* tenant, std::string tenant_id,
                                            event_store_actor store, work_queue_actor queue,
                                            schedule_keeper_options options);

} // namespace voxos
