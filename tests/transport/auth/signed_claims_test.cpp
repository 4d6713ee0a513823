#include <doctest/doctest.h>

#include <string>

#include "transport/auth/signed_claims.hpp"

using namespace voxos;
using namespace voxos::auth;

namespace {

const std::string secret(40, 's');
const std::string other_secret(40, 'o');
constexpr int64_t now = 1'800'000'000'000;

signing_key key_of(const std::string& text) {
  auto key = signing_key::hmac(text);
  REQUIRE(key.is_ok());
  return std::move(*key);
}

std::string state_for(const std::string& signer, int64_t expires) {
  auto state = sign_oauth_state(key_of(signer), {"tenant-a", "server-1", "flow-9", expires});
  REQUIRE(state.is_ok());
  return *state;
}

} // namespace

TEST_CASE("a signed sign-in state verifies with the same secret and names its tenant, server and "
          "flow") {
  auto claims = verify_oauth_state(state_for(secret, now + 60'000), secret, now);
  REQUIRE(claims.is_ok());
  CHECK(claims->tenant == "tenant-a");
  CHECK(claims->server == "server-1");
  CHECK(claims->flow == "flow-9");
  // Two states for the same flow differ (a nonce).
  CHECK(state_for(secret, now + 60'000) != state_for(secret, now + 60'000));
}

TEST_CASE("a forged, expired or tampered sign-in state is refused, naming the check only") {
  auto forged = verify_oauth_state(state_for(other_secret, now + 60'000), secret, now);
  REQUIRE_FALSE(forged.is_ok());
  CHECK(forged.error().code() == errc::unauthorized);
  CHECK(forged.error().message() == "state: bad signature");

  auto expired = verify_oauth_state(state_for(secret, now), secret, now);
  REQUIRE_FALSE(expired.is_ok());
  CHECK(expired.error().message() == "state: expired");

  auto state = state_for(secret, now + 60'000);
  auto dot = state.find('.');
  std::string tampered = state;
  tampered[dot + 3] = tampered[dot + 3] == 'A' ? 'B' : 'A';
  auto bad = verify_oauth_state(tampered, secret, now);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.error().message().rfind("state: ", 0) == 0);
  CHECK(bad.error().message().find(secret) == std::string::npos);

  // A broker assertion is not a state.
  auto assertion = mint_broker_assertion(key_of(secret), "tenant-a", "server-1", now);
  REQUIRE(assertion.is_ok());
  auto crossed = verify_oauth_state(*assertion, secret, now);
  REQUIRE_FALSE(crossed.is_ok());
  CHECK(crossed.error().message() == "state: not a sign-in state");
}

TEST_CASE("a broker assertion is taken once, for its server, before it expires") {
  broker_verifier broker{secret};
  auto key = key_of(secret);
  auto assertion = mint_broker_assertion(key, "tenant-a", "server-1", now);
  REQUIRE(assertion.is_ok());
  auto claims = broker.verify(*assertion, "server-1", now + 1'000);
  REQUIRE(claims.is_ok());
  CHECK(claims->tenant == "tenant-a");
  // Replay.
  auto again = broker.verify(*assertion, "server-1", now + 2'000);
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.error().message() == "assertion: replayed");
  // Another server.
  auto other = mint_broker_assertion(key, "tenant-a", "server-1", now);
  REQUIRE(other.is_ok());
  CHECK(broker.verify(*other, "server-2", now).error().message()
        == "assertion: for another server");
  // Expired.
  auto late = mint_broker_assertion(key, "tenant-a", "server-1", now);
  REQUIRE(late.is_ok());
  CHECK(broker.verify(*late, "server-1", now + default_assertion_lifetime_ms).error().message()
        == "assertion: expired");
  // Too long a life, another signer, another audience (a sign-in state).
  auto long_lived = mint_broker_assertion(key, "tenant-a", "server-1", now, 3'600'000);
  REQUIRE(long_lived.is_ok());
  CHECK(broker.verify(*long_lived, "server-1", now).error().message()
        == "assertion: lives too long");
  auto foreign = mint_broker_assertion(key_of(other_secret), "tenant-a", "server-1", now);
  REQUIRE(foreign.is_ok());
  CHECK(broker.verify(*foreign, "server-1", now).error().message() == "assertion: bad signature");
  CHECK(broker.verify(state_for(secret, now + 60'000), "server-1", now).error().message()
        == "assertion: wrong audience");
}

TEST_CASE("every broker assertion is minted afresh") {
  auto key = key_of(secret);
  auto first = mint_broker_assertion(key, "tenant-a", "server-1", now);
  auto second = mint_broker_assertion(key, "tenant-a", "server-1", now);
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  CHECK(*first != *second);
}
