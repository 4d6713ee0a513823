#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "actors/http_api/held_requests.hpp"
#include "actors/metrics/node_metrics.hpp"

using namespace voxos;

TEST_CASE("held requests: a tenant's share, then the node's bound, then given back") {
  node_metrics metrics;
  auto held = std::make_shared<held_requests>(held_limits{3, 2}, &metrics);
  auto a1 = held->take(1);
  auto a2 = held->take(1);
  REQUIRE(a1);
  REQUIRE(a2);
  auto a3 = held->take(1);
  REQUIRE(!a3);
  CHECK(a3.error().code() == errc::too_many_requests);
  CHECK(held->held_by(1) == 2);

  auto b1 = held->take(2);
  REQUIRE(b1);
  auto b2 = held->take(2); // B is within its share, the node is not
  REQUIRE(!b2);
  CHECK(b2.error().code() == errc::unavailable);
  CHECK(held->held() == 3);
  CHECK(metrics.http_held_requests == 3);
  CHECK(metrics.http_held_refused == 2);

  // A copy keeps the hold; the last one gives it back.
  auto copy = *a1;
  a1 = status::error(errc::internal, "dropped");
  CHECK(held->held_by(1) == 2);
  copy.reset();
  CHECK(held->held_by(1) == 1);
  CHECK(held->held() == 2);
  auto b3 = held->take(2);
  REQUIRE(b3);
  CHECK(held->held_by(2) == 2);
}

TEST_CASE("held requests: a refusal takes nothing, and holds outlive their table's owner") {
  node_metrics metrics;
  auto held = std::make_shared<held_requests>(held_limits{1, 1}, &metrics);
  auto first = held->take(7);
  REQUIRE(first);
  for (int attempt = 0; attempt < 3; ++attempt) {
    CHECK(!held->take(7));
    CHECK(!held->take(8));
  }
  CHECK(held->held() == 1);
  CHECK(held->held_by(8) == 0);
  // The routes go first; the hold still gives itself back.
  std::weak_ptr<held_requests> table = held;
  held.reset();
  CHECK(!table.expired());
  first = status::error(errc::internal, "done");
  CHECK(table.expired());
  CHECK(metrics.http_held_requests == 0);
  CHECK(metrics.http_held_refused == 6);
}
