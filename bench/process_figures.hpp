// Small figures the benchmarks share: percentiles, verdicts, the CPU a
// process has used.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

namespace voxos::bench {

/// The `p` quantile (0..1) of `xs`, nearest rank; 0 when empty.
inline double percentile(std::vector<double> xs, double p) {
  if (xs.empty())
    return 0;
  std::sort(xs.begin(), xs.end());
  auto idx = static_cast<std::size_t>(p * static_cast<double>(xs.size() - 1) + 0.5);
  return xs[std::min(idx, xs.size() - 1)];
}

/// What a target line prints.
inline const char* verdict(bool met) {
  return met ? "met" : "MISSED";
}

/// CPU seconds (user + system) this process has used, its threads included.
inline double own_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
         + static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/// CPU seconds (user + system) process `pid` has used so far, from
/// /proc/<pid>/stat (its threads included); 0 if it cannot be read.
inline double process_cpu_seconds(pid_t pid) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/stat"};
  std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  // The fields after the command name (which may hold spaces) start at
  // field 3; utime and stime are fields 14 and 15.
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 > text.size())
    return 0;
  std::istringstream fields{text.substr(close + 2)};
  std::string field;
  double ticks = 0;
  for (int idx = 3; idx <= 15 && fields >> field; ++idx)
    if (idx >= 14)
      ticks += std::stod(field);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

} // namespace voxos::bench
