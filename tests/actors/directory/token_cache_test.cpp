// What a node remembers of a token: fresh for its ttl from when the
// directory was asked, never longer; forgotten on revocation, together with
// any answer still on its way; bounded.
#include <doctest/doctest.h>

#include <string>

#include "actors/directory/token_cache.hpp"

using namespace voxos;

TEST_CASE("a remembered token is fresh for the ttl from when the directory was asked") {
  token_cache<std::string> cache{2'000'000};
  auto asked = cache.find("k1", 1'000'000);
  CHECK_FALSE(asked.value);
  cache.put("k1", "t_acme", 1'000'000, asked.generation);
  REQUIRE(cache.find("k1", 1'000'000).value);
  CHECK(*cache.find("k1", 2'999'999).value == "t_acme");
  // Expired at asked + ttl, and forgotten then.
  CHECK_FALSE(cache.find("k1", 3'000'000).value);
  CHECK(cache.size() == 0);
  CHECK_FALSE(cache.find("unknown", 0).value);
}

TEST_CASE("changing a remembered value in place keeps its expiry") {
  token_cache<std::string> cache{2'000'000};
  cache.put("k1", "identity", 0, 0);
  cache.update("k1", 1'500'000, [](std::string& value) { value = "identity and tenant actor"; });
  CHECK(*cache.find("k1", 1'999'999).value == "identity and tenant actor");
  CHECK_FALSE(cache.find("k1", 2'000'000).value);
  // (an expired entry is not brought back)
  cache.update("k1", 2'000'000, [](std::string& value) { value = "back"; });
  CHECK(cache.size() == 0);
}

TEST_CASE("a forgotten token is gone, and an answer asked before it was forgotten is not "
          "remembered") {
  token_cache<std::string> cache;
  cache.put("k1", "token_1", 0, 0);
  cache.put("k2", "token_2", 0, 0);
  // A request looks k3 up, then asks the directory; meanwhile a token is revoked.
  auto before = cache.find("k3", 1);
  cache.forget("k1");
  CHECK_FALSE(cache.find("k1", 1).value);
  CHECK(cache.find("k2", 1).value);
  cache.put("k3", "token_3", 1, before.generation);
  CHECK_FALSE(cache.find("k3", 1).value);
  // Asked after the revocation: remembered.
  auto after = cache.find("k3", 2);
  cache.put("k3", "token_3", 2, after.generation);
  CHECK(cache.find("k3", 2).value);
}

TEST_CASE("a cache with a ttl of 0 remembers nothing, and a full one starts afresh") {
  token_cache<int> off{0};
  off.put("k1", 1, 0, 0);
  CHECK_FALSE(off.find("k1", 0).value);

  token_cache<int> small{1'000'000, 2};
  small.put("k1", 1, 0, 0);
  small.put("k2", 2, 0, 0);
  small.put("k2", 3, 0, 0); // a key held is replaced, nothing dropped
  CHECK(small.size() == 2);
  small.put("k3", 4, 0, 0);
  CHECK(small.size() == 1);
  CHECK(*small.find("k3", 1).value == 4);
}
