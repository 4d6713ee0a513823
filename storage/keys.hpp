// The RocksDB key layout. CAF-free.
//
//   events CF:  <tenant>/<stream>/<seq: 8 bytes big-endian>   → encoded event
//   state CF:   <tenant>/<projection>/...                      → projection value
//   vault CF:   <tenant>/<record id>                           → sealed secret
//
// Tenant ids and stream names are restricted to [a-z0-9_.-] so '/' separates
// unambiguously, and big-endian sequences make prefix scans come in order.
// "_node" is the node's own pseudo-tenant (the tenant directory lives there).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace voxos::keys {

inline constexpr std::string_view node_tenant = "_node";
inline constexpr std::size_t max_name_length = 64;

/// "_node", or 1..64 characters of [a-z0-9_-] not starting with '_'.
bool valid_tenant(std::string_view tenant) noexcept;

/// 1..64 characters of [a-z0-9_.-].
bool valid_stream(std::string_view stream) noexcept;

/// "<tenant>/"
std::string tenant_prefix(std::string_view tenant);

/// "<tenant>/<stream>/"
std::string stream_prefix(std::string_view tenant, std::string_view stream);

/// "<tenant>/<stream>/<seq big-endian>"
std::string event_key(std::string_view tenant, std::string_view stream, uint64_t seq);

/// The parts of an event key; nullopt if `key` is not one.
struct event_key_parts {
  std::string_view tenant;
  std::string_view stream;
  uint64_t seq;
};
std::optional<event_key_parts> parse_event_key(std::string_view key) noexcept;

} // namespace voxos::keys
