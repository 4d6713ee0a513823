#include <doctest/doctest.h>

#include "storage/keys.hpp"

using namespace voxos;

TEST_CASE("event keys of one stream sort by sequence number") {
  auto k9 = keys::event_key("t_a", "audit", 9);
  auto k10 = keys::event_key("t_a", "audit", 10);
  auto k256 = keys::event_key("t_a", "audit", 256);
  CHECK(k9 < k10);
  CHECK(k10 < k256);
  CHECK(k9.rfind(keys::stream_prefix("t_a", "audit"), 0) == 0);
  CHECK(k9.rfind(keys::tenant_prefix("t_a"), 0) == 0);
}

TEST_CASE("an event key parses back into its parts") {
  auto key = keys::event_key("t_a", "runs.r1", 0x0102030405060708ULL);
  auto parts = keys::parse_event_key(key); // views into `key`
  REQUIRE(parts);
  CHECK(parts->tenant == "t_a");
  CHECK(parts->stream == "runs.r1");
  CHECK(parts->seq == 0x0102030405060708ULL);
  CHECK_FALSE(keys::parse_event_key("t_a/audit/123"));
  CHECK_FALSE(keys::parse_event_key(""));
}

TEST_CASE("tenant ids and stream names cannot carry a separator or escape their prefix") {
  CHECK(keys::valid_tenant("t_0123456789abcdef"));
  CHECK(keys::valid_tenant("_node"));
  CHECK_FALSE(keys::valid_tenant("_other"));
  CHECK_FALSE(keys::valid_tenant(""));
  CHECK_FALSE(keys::valid_tenant("t/a"));
  CHECK_FALSE(keys::valid_tenant("T_A"));
  CHECK_FALSE(keys::valid_tenant("t.a"));
  CHECK_FALSE(keys::valid_tenant(std::string(65, 'a')));
  CHECK(keys::valid_stream("runs.r1"));
  CHECK_FALSE(keys::valid_stream("a/b"));
  CHECK_FALSE(keys::valid_stream(""));
  CHECK_FALSE(keys::valid_stream(std::string("a\0b", 3)));
}
