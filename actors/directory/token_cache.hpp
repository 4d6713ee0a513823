// What an entry point (the run host, the HTTP API) remembers of a tenant
// token the directory authenticated, so that a request asks the directory
// once per token every `auth_cache_ms` rather than on every request: the
// answer (the tenant, its actor) under the SHA-256 of the token's secret,
// for `ttl_us` from when the directory answered.
//
// The price: a token revoked meanwhile keeps working through that entry
// point for at most `auth_cache_ms`, unless the entry point forgets it
// (forget_if). The HTTP API forgets a token the moment it revokes it; a
// revocation it did not serve waits out the bound.
//
// CAF-free; not thread-safe (the run host uses one in its actor, the HTTP
// API one under a mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

namespace voxos {

/// How long an entry point remembers a token's tenant, in ms (0: it asks
/// the directory every time).
inline constexpr uint32_t auth_cache_ms = 2'000;

/// Tokens remembered at most by one entry point; past it the cache starts
/// afresh.
inline constexpr std::size_t max_cached_tokens = 4096;

template <class Value>
class token_cache {
public:
  explicit token_cache(int64_t ttl_us = int64_t{auth_cache_ms} * 1000,
                       std::size_t max_entries = max_cached_tokens)
      : ttl_us_(ttl_us), max_entries_(max_entries) {}

  /// The value remembered under `key` if it is still fresh at `now_us`
  /// (an expired one is forgotten); null otherwise. The pointer is valid
  /// until the next put or forget.
  Value* find(const std::string& key, int64_t now_us) {
    auto found = entries_.find(key);
    if (found == entries_.end())
      return nullptr;
    if (found->second.expires_us <= now_us) {
      entries_.erase(found);
      return nullptr;
    }
    return &found->second.value;
  }

  /// Remembers `value` under `key` from `asked_us` (when the directory was
  /// asked) for the cache's ttl; nothing when the ttl is 0.
  void put(std::string key, Value value, int64_t asked_us) {
    if (ttl_us_ <= 0)
      return;
    if (entries_.size() >= max_entries_ && entries_.count(key) == 0)
      entries_.clear();
    entries_[std::move(key)] = entry{std::move(value), asked_us + ttl_us_};
  }

  /// Forgets every entry whose value `pred` accepts.
  template <class Pred>
  void forget_if(Pred pred) {
    for (auto it = entries_.begin(); it != entries_.end();)
      it = pred(static_cast<const Value&>(it->second.value)) ? entries_.erase(it) : std::next(it);
  }

  std::size_t size() const noexcept { return entries_.size(); }

private:
  struct entry {
    Value value;
    int64_t expires_us = 0;
  };
  int64_t ttl_us_;
  std::size_t max_entries_;
  std::unordered_map<std::string, entry> entries_;
};

} // namespace voxos
