// What a node's entry points (the run host, the HTTP API) remember of the
// tenant tokens the directory authenticated, so that a request asks the
// directory once per token every `auth_cache_ms` rather than on every
// request: the answer (the tenant, its actor) under the SHA-256 of the
// token's secret, for `ttl_us` from when the directory was asked.
//
// One cache per node, shared by both entry points and the directory: the
// directory forgets a token here the moment it revokes it (before it
// answers the revocation), so a revoked token is refused from the next
// request on either entry point. An answer the directory gave before a
// revocation and that arrives after it is not remembered (put() takes the
// generation read before asking).
//
// CAF-free; thread-safe (one mutex; every call holds it briefly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace voxos {

/// How long a node remembers a token's tenant, in ms (0: its entry points
/// ask the directory every time).
inline constexpr uint32_t auth_cache_ms = 2'000;

/// Tokens remembered at most by one node; past it the cache starts afresh.
inline constexpr std::size_t max_cached_tokens = 4096;

template <class Value>
class token_cache {
public:
  explicit token_cache(int64_t ttl_us = int64_t{auth_cache_ms} * 1000,
                       std::size_t max_entries = max_cached_tokens)
      : ttl_us_(ttl_us), max_entries_(max_entries) {}

  /// What find() saw: a copy of the value remembered under the key if it
  /// is still fresh, and the generation to hand to put() after asking the
  /// directory.
  struct lookup {
    std::optional<Value> value;
    uint64_t generation = 0;
  };

  /// The value remembered under `key` if it is still fresh at `now_us` (an
  /// expired one is forgotten).
  lookup find(const std::string& key, int64_t now_us) {
    std::lock_guard<std::mutex> guard{mutex_};
    lookup out;
    out.generation = generation_;
    if (auto* hit = fresh(key, now_us))
      out.value = *hit;
    return out;
  }

  /// Remembers `value` under `key` from `asked_us` (when the directory was
  /// asked) for the cache's ttl, unless a token was forgotten since
  /// `generation` was read (the answer may be that token's, given just
  /// before its revocation); nothing when the ttl is 0.
  void put(std::string key, Value value, int64_t asked_us, uint64_t generation) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (ttl_us_ <= 0 || generation != generation_)
      return;
    if (entries_.size() >= max_entries_ && entries_.count(key) == 0)
      entries_.clear();
    entries_[std::move(key)] = entry{std::move(value), asked_us + ttl_us_};
  }

  /// Calls `fn(Value&)` on the value under `key` if it is still fresh at
  /// `now_us` (its expiry unchanged).
  template <class F>
  void update(const std::string& key, int64_t now_us, F fn) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (auto* hit = fresh(key, now_us))
      fn(*hit);
  }

  /// Forgets `key` (a revoked token's hash), and any answer still on its
  /// way to put().
  void forget(const std::string& key) {
    std::lock_guard<std::mutex> guard{mutex_};
    entries_.erase(key);
    ++generation_;
  }

  std::size_t size() {
    std::lock_guard<std::mutex> guard{mutex_};
    return entries_.size();
  }

private:
  struct entry {
    Value value;
    int64_t expires_us = 0;
  };

  Value* fresh(const std::string& key, int64_t now_us) {
    auto found = entries_.find(key);
    if (found == entries_.end())
      return nullptr;
    if (found->second.expires_us <= now_us) {
      entries_.erase(found);
      return nullptr;
    }
    return &found->second.value;
  }

  const int64_t ttl_us_;
  const std::size_t max_entries_;
  std::mutex mutex_;
  uint64_t generation_ = 0; ///< forget() calls so far
  std::unordered_map<std::string, entry> entries_;
};

} // namespace voxos
