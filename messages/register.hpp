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

/// Selects CAF's work-stealing scheduler, tuned for actors that mostly wait
/// on I/O done by detached workers (MCP exchanges, RocksDB writes). A message
/// one actor sends another on the same worker stays on that worker's queue
/// (no thread is woken: a tool call's chain tenant -> run -> wave ->
/// connection runs on one thread). An idle worker spins briefly (100 polls),
/// then sleeps on its condition variable, woken by messages from outside the
/// scheduler and every 2 ms to steal queued work from a busy sibling. CAF's
/// default polled with 50 us sleeps for 25 ms after each message, which cost
/// about half of the client CPU per MCP call on two cores; the work-sharing
/// policy woke a thread for every message, which cost latency per hop.
void set_io_bound_scheduler(caf::actor_system_config& cfg);

/// The names under which register_types registers message types, in order.
/// The wire round-trip test checks that it covers each of them.
const std::vector<std::string>& wire_type_names();

} // namespace voxos
