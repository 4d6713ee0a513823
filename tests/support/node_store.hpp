// The store of a stopped node's data directory, opened as the node opens it
// (with the directory's and the tenants' projections): for writing what an
// earlier node wrote, and for reading what a node stored.
#pragma once

#include "actors/node/node.hpp"
#include <memory>

#include <doctest/doctest.h>

#include "actors/tenant/tenant_events.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "support/temp_dir.hpp"

namespace voxos::test {

inline std::unique_ptr<event_db> open_node_store(const temp_dir& dir) {
  event_db_options opts;
  opts.projectors = node_projectors();
  opts.max_event_bytes = 4 * 1024 * 1024;
  auto db = event_db::open(dir.str() + "/store", opts);
  REQUIRE(db);
  return std::move(*db);
}

} // namespace voxos::test
