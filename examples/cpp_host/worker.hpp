// The example host as a worker: it registers with the node's run_host over
// the CAF network and serves the queued work the node pushes to it
// (scheduled turns, child runs): for each lease it begins the item's run,
// lets the model play its rounds against the run's view, and completes the
// item with the answer, which the node records in the item's chat once.
// While a model call is long, it heartbeats the lease.
//
// It prints one line per step ("lease <item> attempt <n> run <run> kind
// <kind>", "begun <run>: <n> tools in view", "completed <item>", "refused
// <op> <item>: <code>: <message>") for people and tests to follow.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>

#include "actors/run_host/run_host.hpp"
#include "scripted_model.hpp"

namespace voxos::example {

struct worker_options {
  uint32_t capacity = 1;
  /// How long each item's model "thinks" before its rounds, heartbeating
  /// meanwhile (0: not at all).
  std::chrono::milliseconds hold{0};
  /// Items to serve before exiting (0: until the node goes away).
  std::size_t max_items = 0;
};

/// Makes the model for one item from its text (the instruction or task).
using model_factory = std::function<std::unique_ptr<model>(const std::string& text)>;

/// Serves work until the node goes away (exit code 3) or max_items are
/// served (0); 1 when the registration is refused.
int run_worker(caf::actor_system& sys, const run_host_actor& run_host, const std::string& token,
               const worker_options& opts, const model_factory& make_model);

} // namespace voxos::example
