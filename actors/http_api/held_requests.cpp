#include "actors/http_api/held_requests.hpp"

#include <string>

#include "actors/metrics/node_metrics.hpp"

namespace voxos {

held_requests::held_requests(held_limits limits, node_metrics* metrics)
    : limits_(limits), metrics_(metrics) {}

result<held_requests::hold> held_requests::take(uint64_t tenant) {
  auto self = shared_from_this(); // (the hold keeps this table alive until given back)
  {
    std::lock_guard<std::mutex> guard{mutex_};
    unsigned& mine = by_tenant_[tenant];
    if (mine < limits_.per_tenant && total_ < limits_.total) {
      ++mine;
      ++total_;
      if (metrics_)
        metrics_->http_held_requests.fetch_add(1, std::memory_order_relaxed);
    } else {
      bool tenant_full = mine >= limits_.per_tenant;
      if (mine == 0)
        by_tenant_.erase(tenant);
      if (metrics_)
        metrics_->http_held_refused.fetch_add(1, std::memory_order_relaxed);
      if (tenant_full)
        return status::error(errc::too_many_requests,
                             "this tenant already has " + std::to_string(limits_.per_tenant)
                               + " requests waiting on the node (activity streams and tool-call "
                                 "rounds; http.max_held_per_tenant); retry when one has ended");
      return status::error(errc::unavailable,
                           "the node already has " + std::to_string(limits_.total)
                             + " requests waiting (activity streams and tool-call rounds; "
                               "http.max_held_requests); retry later");
    }
  }
  // (built outside the lock: should it fail to allocate, its deleter gives
  // the slot back at once, which takes the lock)
  return hold{this, [self = std::move(self), tenant](const void*) { self->give_back(tenant); }};
}

void held_requests::give_back(uint64_t tenant) {
  std::lock_guard<std::mutex> guard{mutex_};
  auto found = by_tenant_.find(tenant);
  if (found == by_tenant_.end()) // (not reached: every hold was counted)
    return;
  if (--found->second == 0)
    by_tenant_.erase(found);
  --total_;
  if (metrics_)
    metrics_->http_held_requests.fetch_sub(1, std::memory_order_relaxed);
}

unsigned held_requests::held() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return total_;
}

unsigned held_requests::held_by(uint64_t tenant) const {
  std::lock_guard<std::mutex> guard{mutex_};
  auto found = by_tenant_.find(tenant);
  return found == by_tenant_.end() ? 0 : found->second;
}

} // namespace voxos
