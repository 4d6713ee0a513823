// Requests that hold an HTTP worker thread while they wait: activity streams
// (for the run's life) and tool-call rounds (up to the round wait). The HTTP
// server has a fixed pool of workers (http.threads); without a bound, a few
// such requests would take every worker, and health checks, operators and
// other tenants would wait behind them. At most `total` are held at once
// (http.max_held_requests, below http.threads), at most `per_tenant` of them
// for one tenant (http.max_held_per_tenant).
//
// A request takes its hold before it does anything, so a refused one changes
// nothing: no run is listened to, no call is submitted.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "config/node_config.hpp"
#include "messages/status.hpp"

namespace voxos {

class node_metrics;

class held_requests : public std::enable_shared_from_this<held_requests> {
public:
  /// `metrics` (optional) gets the held gauge and the refused counter. Made
  /// with std::make_shared: each hold keeps its table alive.
  explicit held_requests(held_limits limits, node_metrics* metrics = nullptr);
  held_requests(const held_requests&) = delete;
  held_requests& operator=(const held_requests&) = delete;

  /// One request's hold on a worker, given back when the last copy is gone.
  using hold = std::shared_ptr<const void>;

  /// A hold for a request of `tenant` (any key that names the tenant), or
  /// the refusal: too_many_requests when the tenant already holds its share,
  /// unavailable when the node holds every slot.
  result<hold> take(uint64_t tenant);

  /// Holds taken and not given back, in all and by `tenant`.
  unsigned held() const;
  unsigned held_by(uint64_t tenant) const;

private:
  void give_back(uint64_t tenant);

  const held_limits limits_;
  node_metrics* const metrics_;
  mutable std::mutex mutex_;
  unsigned total_ = 0;
  std::map<uint64_t, unsigned> by_tenant_; ///< only tenants holding any
};

} // namespace voxos
