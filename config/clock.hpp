// Wall-clock time as the node stores it: microseconds since the Unix epoch.
#pragma once

#include <chrono>
#include <cstdint>

namespace voxos {

inline int64_t wall_clock_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace voxos
