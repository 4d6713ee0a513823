// Wall-clock time as the node stores it: microseconds since the Unix epoch;
// and a monotonic clock for durations.
#pragma once

#include <chrono>
#include <cstdint>

namespace voxos {

inline int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// The same in milliseconds (OAuth token expiries, signed states, assertions).
inline int64_t wall_clock_ms() {
  return wall_clock_us() / 1000;
}

/// Microseconds on a monotonic clock: for durations only (never stored as a time).
inline int64_t steady_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

} // namespace voxos
