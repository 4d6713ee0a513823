// The work queue: one actor per tenant (spawned and linked by the tenant)
// that keeps the tenant's queued work (work_item.hpp) and offers it to the
// tenant's agent hosts. Its bookkeeping is lease_book.hpp.
//
// Agent hosts take work two ways:
//  - a worker actor registered through the run_host over the CAF network:
//    leases are pushed to it as `(work_atom, offer_atom, lease JSON)`, as many
//    at once as the capacity it registered with. A worker that goes away
//    (its node connection drops, it exits) has its leases offered again at
//    once; one that merely stops answering loses them when they expire.
//  - the HTTP lease route: a long-poll `lease` operation answers one lease
//    or, after the wait, {"lease": null}.
// Either way the host then begins the item's run (the tenant starts or
// resumes it under the item's fixed run id), heartbeats to keep the lease,
// and completes it with the answer, or fails it.
//
// A completion appends the answer (turn.reported) and work.completed to the
// item's chat in one append, so the answer is recorded once or not at all.
// Nothing else of an item is answered before its events are durable.
//
// At start the queue reads its unsettled items from the projection; leases
// are not stored, so each is offered again (delivery is at least once).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/work/lease_book.hpp"
#include "messages/atoms.hpp"
#include "messages/types.hpp"

namespace voxos {

using work_queue_actor = caf::typed_actor<
  // Enqueues an item (JSON of work::item) together with other events of its
  // chat that must land with it (a schedule's saved record). Answers the
  // item JSON; conflict for an item already queued or recently settled;
  // out_of_range past work.max_pending.
  caf::replies_to<enqueue_atom, std::string, std::vector<event_draft>>::with<std::string>,
  // A host's operation (JSON body; answers JSON):
  //   "lease"     {"wait_ms"?, "kinds"?}  -> {"lease": {...} | null}
  //   "check"     {"item_id","lease_id"}  -> the item (the lease holds now)
  //   "heartbeat" {"item_id","lease_id"}  -> {"item_id","lease_ms"}
  //   "complete"  {"item_id","lease_id","answer"} -> {"item_id","run_id",
  //               "chat_id","turn"} and, for the tenant, "turn_event"
  //   "fail"      {"item_id","lease_id","reason","retry"?} -> {"item_id","state"}
  //   "list"      {}                      -> {"items": [...]}
  caf::replies_to<work_atom, std::string, std::string>::with<std::string>,
  // Registers a worker actor with its capacity (1 .. 64 leases at once).
  caf::replies_to<work_atom, caf::actor, uint32_t>::with<bool>,
  // Cancels every item of a parent run not yet settled (the parent was
  // cancelled); answers the run ids of the children cancelled.
  caf::replies_to<cancel_atom, std::string>::with<std::vector<std::string>>,
  // {"pending","ready","leased","workers","waiting"}.
  caf::replies_to<health_atom>::with<std::string>,
  // Its own timer: leases that expired, waits that ended, items now ready.
  caf::reacts_to<tick_atom>>;

class node_metrics;

struct work_queue_options {
  work::lease_options leases;
  /// The node's figures (voxos_work_*); none when null.
  node_metrics* metrics = nullptr;
  std::size_t max_pending = 100'000;
  uint32_t max_lease_wait_ms = 30'000;
};

work_queue_actor spawn_work_queue(caf::local_actor* tenant, std::string tenant_id,
                                  event_store_actor store, work_queue_options options);

} // namespace voxos
