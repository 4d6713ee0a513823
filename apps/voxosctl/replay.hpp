// `voxosctl replay TRACE`: replays a run's trace (actors/run/trace.hpp)
// against a fresh node (see replay.cpp).
#pragma once

#include <string>

namespace voxos {

/// Replays the trace at `path`; prints each round's verdict and any output
/// that differs. Exit code: 0 when every output is identical, 1 when one
/// differs, 2 when the trace cannot be read or replayed.
int replay_trace(const std::string& path);

} // namespace voxos
