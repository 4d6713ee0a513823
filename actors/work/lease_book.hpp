// The work queue's bookkeeping: which items wait, which are leased to whom
// and until when. CAF-free and clock-free (every call takes `now_us`); the
// work_queue actor owns one per tenant.
//
// An item's life:
//
//   ready --lease--> leased --finish--> settling --settled--> (gone)
//     ^                 |                   |
//     +--expire/release-+     <--unsettle---+   (the settling write failed)
//
// A lease is proved by its lease id, handed out with it: a heartbeat, a
// completion or a failure naming another lease id (the item was leased
// again after this lease expired, or never to this caller) is refused.
// Leases are not stored: a node that restarts has none, and every item not
// settled is ready again (delivery is at least once; an item's fixed run id
// keeps its answer single).
//
// Ready items are offered in the order they became ready (earliest ready
// time first, then arrival). An item retried after a failure or an expired
// lease becomes ready again after `retry_delay_us`; past `max_attempts`
// leases it is exhausted (the actor records it failed).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/work/work_item.hpp"
#include "messages/status.hpp"

namespace voxos::work {

struct lease_options {
  /// How long a lease lasts without a heartbeat (work.lease_ms).
  int64_t lease_us = 30'000'000;
  /// Leases one item gets before it is recorded failed (work.max_attempts).
  uint32_t max_attempts = 5;
  /// An item whose lease expired or failed with a retry waits this long.
  int64_t retry_delay_us = 1'000'000;
  /// Settled item ids remembered to answer a second completion precisely.
  std::size_t remembered_settled = 4096;
};

enum class item_state : uint8_t { ready, leased, settling };

struct entry {
  work::item item;
  item_state state = item_state::ready;
  int64_t ready_us = 0;
  uint64_t order = 0; ///< arrival, to keep FIFO among equal ready times
  std::string lease_id;
  std::string holder; ///< who holds the lease (opaque to the book)
  int64_t expires_us = 0;
  uint32_t attempts = 0; ///< leases handed out so far
};

/// A lease just handed out.
struct lease {
  const entry* it = nullptr;
  std::string lease_id;
  int64_t expires_us = 0;
};

class lease_book {
public:
  explicit lease_book(lease_options opts = {}) : opts_(opts) {}

  const lease_options& options() const noexcept { return opts_; }

  /// Adds an item ready at `ready_us`; conflict if the id is known (waiting,
  /// leased, settling or recently settled).
  status add(work::item it, int64_t ready_us);

  /// Whether the id is waiting, leased or settling.
  bool holds(const std::string& item_id) const;
  /// Whether the id is held or was settled recently.
  bool seen(const std::string& item_id) const;
  const entry* find(const std::string& item_id) const;

  /// Leases the first ready item to `holder` under `lease_id`, if one is
  /// ready at `now_us`. `accept` filters by kind (every kind when empty).
  std::optional<lease> take(const std::string& holder, const std::string& lease_id, int64_t now_us,
                            const std::vector<kind>& accept = {});

  /// Checks that `lease_id` holds `item_id` now: not_found (no such item,
  /// or settled long ago), conflict with "already settled" (settled or
  /// settling), conflict with "lease lost" (leased under another id, or
  /// waiting again after this lease expired).
  status check(const std::string& item_id, const std::string& lease_id) const;

  /// Extends the lease by lease_us from `now_us`; answers the new expiry.
  result<int64_t> heartbeat(const std::string& item_id, const std::string& lease_id,
                            int64_t now_us);

  /// Begins settling (the actor's write is under way): the item leaves its
  /// lease and no second completion or failure is accepted.
  result<work::item> finish(const std::string& item_id, const std::string& lease_id);
  /// The settling write is durable: the item is gone (remembered as settled).
  void settled(const std::string& item_id);
  /// The settling write failed: the item is leased again to the same lease.
  void unsettle(const std::string& item_id, int64_t now_us);

  /// Gives the lease back (a failure with a retry): ready after retry_delay_us.
  status release(const std::string& item_id, const std::string& lease_id, int64_t now_us);

  /// Leases past their expiry go back to ready (after retry_delay_us), or,
  /// past max_attempts, to settling into `exhausted` (the actor records
  /// them failed); answers the holders of the expired leases, one per lease.
  std::vector<std::string> expire(int64_t now_us, std::vector<work::item>& exhausted);
  /// Every lease of `holder` goes back to ready at once (its host is gone);
  /// answers the item ids.
  std::vector<std::string> release_holder(const std::string& holder, int64_t now_us);

  /// Items not yet settled that `pred` selects, moved to settling (for
  /// cancellation); a leased one answers its holder too.
  template <class Pred>
  std::vector<std::pair<work::item, std::string>> settle_if(Pred pred) {
    std::vector<std::pair<work::item, std::string>> out;
    for (auto& [id, e] : entries_)
      if (e.state != item_state::settling && pred(e.item)) {
        out.emplace_back(e.item, e.state == item_state::leased ? e.holder : std::string{});
        to_settling(e);
      }
    return out;
  }

  /// The earliest time something changes by itself: a lease expiry or a
  /// delayed item becoming ready.
  std::optional<int64_t> next_deadline() const;
  /// Whether an item is ready at `now_us`.
  bool any_ready(int64_t now_us) const;

  std::size_t size() const noexcept { return entries_.size(); }
  std::size_t ready_count() const noexcept { return ready_.size(); }
  std::size_t leased_count() const noexcept { return expiries_.size(); }
  /// Every entry, for listings (unordered).
  const std::unordered_map<std::string, entry>& entries() const noexcept { return entries_; }

private:
  void make_ready(entry& e, int64_t ready_us);
  void to_settling(entry& e);
  void drop_lease(entry& e);

  lease_options opts_;
  uint64_t next_order_ = 0;
  std::unordered_map<std::string, entry> entries_;
  /// (ready time, arrival) -> item id, for items in the ready state.
  std::map<std::pair<int64_t, uint64_t>, std::string> ready_;
  /// (expiry, arrival) -> item id, for leased items.
  std::map<std::pair<int64_t, uint64_t>, std::string> expiries_;
  /// Recently settled ids, oldest first.
  std::deque<std::string> settled_order_;
  std::unordered_set<std::string> settled_;
};

} // namespace voxos::work
