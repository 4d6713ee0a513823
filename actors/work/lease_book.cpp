#include "actors/work/lease_book.hpp"

#include <algorithm>

namespace voxos::work {

namespace {

status lease_lost() {
  return status::error(errc::conflict,
                       "lease lost: this item is not leased under this lease id (it expired and "
                       "went to another host, or was never yours)");
}

status already_completed() {
  return status::error(errc::conflict,
                       "already settled: this item was completed, failed or cancelled before");
}

} // namespace

status lease_book::add(work::item it, int64_t ready_us) {
  if (seen(it.item_id))
    return status::error(errc::conflict, "this work item is already queued");
  auto id = it.item_id;
  auto& e = entries_[id];
  e.item = std::move(it);
  e.order = next_order_++;
  make_ready(e, ready_us);
  return status::ok();
}

bool lease_book::holds(const std::string& item_id) const {
  return entries_.count(item_id) != 0;
}

bool lease_book::seen(const std::string& item_id) const {
  return entries_.count(item_id) != 0 || settled_.count(item_id) != 0;
}

const entry* lease_book::find(const std::string& item_id) const {
  auto found = entries_.find(item_id);
  return found == entries_.end() ? nullptr : &found->second;
}

void lease_book::make_ready(entry& e, int64_t ready_us) {
  e.state = item_state::ready;
  e.ready_us = ready_us;
  ready_.emplace(std::make_pair(ready_us, e.order), e.item.item_id);
}

void lease_book::drop_lease(entry& e) {
  if (e.state == item_state::leased)
    expiries_.erase({e.expires_us, e.order});
  else if (e.state == item_state::ready)
    ready_.erase({e.ready_us, e.order});
  e.lease_id.clear();
  e.holder.clear();
  e.expires_us = 0;
}

void lease_book::to_settling(entry& e) {
  drop_lease(e);
  e.state = item_state::settling;
}

std::optional<lease> lease_book::take(const std::string& holder, const std::string& lease_id,
                                      int64_t now_us, const std::vector<kind>& accept) {
  for (auto pos = ready_.begin(); pos != ready_.end() && pos->first.first <= now_us; ++pos) {
    auto& e = entries_.at(pos->second);
    if (!accept.empty() && std::find(accept.begin(), accept.end(), e.item.k) == accept.end())
      continue;
    ready_.erase(pos);
    e.state = item_state::leased;
    e.lease_id = lease_id;
    e.holder = holder;
    e.expires_us = now_us + opts_.lease_us;
    ++e.attempts;
    expiries_.emplace(std::make_pair(e.expires_us, e.order), e.item.item_id);
    return lease{&e, lease_id, e.expires_us};
  }
  return std::nullopt;
}

status lease_book::check(const std::string& item_id, const std::string& lease_id) const {
  auto found = entries_.find(item_id);
  if (found == entries_.end())
    return settled_.count(item_id) != 0
             ? already_completed()
             : status::error(errc::not_found, "no such work item for this tenant");
  const auto& e = found->second;
  if (e.state == item_state::settling)
    return already_completed();
  if (e.state != item_state::leased || e.lease_id != lease_id)
    return lease_lost();
  return status::ok();
}

result<int64_t> lease_book::heartbeat(const std::string& item_id, const std::string& lease_id,
                                      int64_t now_us) {
  if (auto st = check(item_id, lease_id); !st)
    return st;
  auto& e = entries_.at(item_id);
  expiries_.erase({e.expires_us, e.order});
  e.expires_us = now_us + opts_.lease_us;
  expiries_.emplace(std::make_pair(e.expires_us, e.order), item_id);
  return e.expires_us;
}

result<work::item> lease_book::finish(const std::string& item_id, const std::string& lease_id) {
  if (auto st = check(item_id, lease_id); !st)
    return st;
  auto& e = entries_.at(item_id);
  // Keeps the lease id: unsettle gives the same lease back.
  auto kept = e.lease_id;
  auto holder = e.holder;
  to_settling(e);
  e.lease_id = std::move(kept);
  e.holder = std::move(holder);
  return e.item;
}

void lease_book::settled(const std::string& item_id) {
  if (entries_.erase(item_id) == 0)
    return;
  settled_.insert(item_id);
  settled_order_.push_back(item_id);
  while (settled_order_.size() > opts_.remembered_settled) {
    settled_.erase(settled_order_.front());
    settled_order_.pop_front();
  }
}

void lease_book::unsettle(const std::string& item_id, int64_t now_us) {
  auto found = entries_.find(item_id);
  if (found == entries_.end() || found->second.state != item_state::settling)
    return;
  auto& e = found->second;
  if (e.lease_id.empty()) {
    make_ready(e, now_us);
    return;
  }
  e.state = item_state::leased;
  e.expires_us = now_us + opts_.lease_us;
  expiries_.emplace(std::make_pair(e.expires_us, e.order), item_id);
}

status lease_book::release(const std::string& item_id, const std::string& lease_id,
                           int64_t now_us) {
  if (auto st = check(item_id, lease_id); !st)
    return st;
  auto& e = entries_.at(item_id);
  drop_lease(e);
  make_ready(e, now_us + opts_.retry_delay_us);
  return status::ok();
}

std::vector<std::string> lease_book::expire(int64_t now_us, std::vector<work::item>& exhausted) {
  std::vector<std::string> out;
  while (!expiries_.empty() && expiries_.begin()->first.first <= now_us) {
    auto& e = entries_.at(expiries_.begin()->second);
    out.push_back(e.holder);
    drop_lease(e);
    if (e.attempts >= opts_.max_attempts) {
      e.state = item_state::settling;
      exhausted.push_back(e.item);
      continue;
    }
    make_ready(e, now_us + opts_.retry_delay_us);
  }
  return out;
}

std::vector<std::string> lease_book::release_holder(const std::string& holder, int64_t now_us) {
  std::vector<std::string> out;
  for (auto& [id, e] : entries_)
    if (e.state == item_state::leased && e.holder == holder) {
      drop_lease(e);
      make_ready(e, now_us);
      out.push_back(id);
    }
  return out;
}

std::optional<int64_t> lease_book::next_deadline() const {
  std::optional<int64_t> out;
  if (!expiries_.empty())
    out = expiries_.begin()->first.first;
  if (!ready_.empty() && (!out || ready_.begin()->first.first < *out))
    out = ready_.begin()->first.first;
  return out;
}

bool lease_book::any_ready(int64_t now_us) const {
  return !ready_.empty() && ready_.begin()->first.first <= now_us;
}

} // namespace voxos::work
