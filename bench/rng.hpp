// A deterministic random sequence for the benchmarks' generators: splitmix64,
// the same numbers on every machine and standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace voxos::bench {

struct rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[below(xs.size())];
  }
};

} // namespace voxos::bench
