// One function registers every message type and the error category on an
// actor_system_config. Every actor system of ours (voxosd, voxosctl, tests,
// example hosts) calls it: CAF only logs a forgotten registration and then
// delivers an empty message.
#pragma once

#include <string>
#include <vector>

namespace caf {
class actor_system_config;
} // namespace caf

namespace voxos {

void register_types(caf::actor_system_config& cfg);

/// Selects CAF's work-sharing scheduler. Our actors mostly wait on I/O done
/// by detached workers (MCP exchanges, RocksDB writes); the default
/// work-stealing policy polls between short sleeps while idle, which cost
/// about half of the client CPU per MCP call on two cores. Sharing workers
/// sleep on a condition variable instead.
void set_io_bound_scheduler(caf::actor_system_config& cfg);

/// The names under which register_types registers message types, in order.
/// The wire round-trip test checks that it covers each of them.
const std::vector<std::string>& wire_type_names();

} // namespace voxos
