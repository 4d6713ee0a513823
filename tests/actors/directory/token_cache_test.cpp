// What an entry point remembers of a token: fresh for its ttl from when the
// directory was asked, never longer; forgotten on demand; bounded.
#include <doctest/doctest.h>

#include <string>

#include "actors/directory/token_cache.hpp"

using namespace voxos;

TEST_CASE("a remembered token is fresh for the ttl from when the directory was asked") {
  token_cache<std::string> cache{2'000'000};
  cache.put("k1", "t_acme", 1'000'000);
  REQUIRE(cache.find("k1", 1'000'000) != nullptr);
  CHECK(*cache.find("k1", 2'999'999) == "t_acme");
  // Expired at asked + ttl, and forgotten then.
  CHECK(cache.find("k1", 3'000'000) == nullptr);
  CHECK(cache.size() == 0);
  CHECK(cache.find("unknown", 0) == nullptr);
}

TEST_CASE("changing a remembered value in place keeps its expiry") {
  token_cache<std::string> cache{2'000'000};
  cache.put("k1", "identity", 0);
  auto* hit = cache.find("k1", 1'500'000);
  REQUIRE(hit != nullptr);
  *hit = "identity and tenant actor";
  CHECK(*cache.find("k1", 1'999'999) == "identity and tenant actor");
  CHECK(cache.find("k1", 2'000'000) == nullptr);
}

TEST_CASE("forget_if forgets exactly the entries it accepts") {
  token_cache<std::string> cache;
  cache.put("k1", "token_1", 0);
  cache.put("k2", "token_2", 0);
  cache.forget_if([](const std::string& token_id) { return token_id == "token_1"; });
  CHECK(cache.find("k1", 1) == nullptr);
  CHECK(cache.find("k2", 1) != nullptr);
}

TEST_CASE("a cache with a ttl of 0 remembers nothing, and a full one starts afresh") {
  token_cache<int> off{0};
  off.put("k1", 1, 0);
  CHECK(off.find("k1", 0) == nullptr);

  token_cache<int> small{1'000'000, 2};
  small.put("k1", 1, 0);
  small.put("k2", 2, 0);
  small.put("k2", 3, 0); // a key held is replaced, nothing dropped
  CHECK(small.size() == 2);
  small.put("k3", 4, 0);
  CHECK(small.size() == 1);
  CHECK(*small.find("k3", 1) == 4);
}
