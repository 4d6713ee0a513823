#include "transport/mcp_request_state.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using nlohmann::json;
using voxos::mcp_state_binding;
using voxos::mcp_state_sealer;

namespace {

const auto now = std::chrono::system_clock::time_point{std::chrono::hours(500'000)};
const std::string key(32, 'k');
const mcp_state_binding alice_call{"alice", "tools/call", "book"};

} // namespace

TEST_CASE("a sealed state opens for the same caller and request, as it was") {
  mcp_state_sealer sealer{key, std::chrono::minutes(10)};
  json state = {{"round", 2}, {"name", "Zoë"}};
  auto sealed = sealer.seal(state, alice_call, now);
  CHECK(sealed.find("Zo") == std::string::npos); // base64url, not the plain text
  auto opened = sealer.open(sealed, alice_call, now + std::chrono::minutes(9));
  REQUIRE(opened.is_ok());
  CHECK(*opened == state);
}

TEST_CASE(
  "a state altered, for another caller or request, expired, or under another key is refused") {
  mcp_state_sealer sealer{key, std::chrono::minutes(10)};
  auto sealed = sealer.seal(json{{"kind", "x"}}, alice_call, now);
  auto refused = [&](const std::string& text, const mcp_state_binding& binding,
                     std::chrono::system_clock::time_point when, const std::string& why) {
    auto opened = sealer.open(text, binding, when);
    REQUIRE_FALSE(opened.is_ok());
    CHECK(opened.error().message() == "requestState " + why);
  };
  refused(sealed + "-TAMPERED", alice_call, now, "failed verification");
  std::string flipped = sealed;
  flipped[3] = flipped[3] == 'A' ? 'B' : 'A';
  refused(flipped, alice_call, now, "failed verification");
  refused("no dot here", alice_call, now, "is malformed");
  refused(sealed, {"bob", "tools/call", "book"}, now, "belongs to another caller");
  refused(sealed, {"alice", "prompts/get", "book"}, now, "belongs to another request");
  refused(sealed, {"alice", "tools/call", "cancel"}, now, "belongs to another request");
  refused(sealed, alice_call, now + std::chrono::minutes(11), "has expired");
  mcp_state_sealer other{std::string(32, 'o'), std::chrono::minutes(10)};
  auto opened = other.open(sealed, alice_call, now);
  REQUIRE_FALSE(opened.is_ok());
  CHECK(opened.error().message() == "requestState failed verification");
}

TEST_CASE("without a configured key each sealer draws its own") {
  mcp_state_sealer first{{}, std::chrono::minutes(1)};
  mcp_state_sealer second{{}, std::chrono::minutes(1)};
  auto sealed = first.seal(json::object(), alice_call, now);
  CHECK(first.open(sealed, alice_call, now).is_ok());
  CHECK_FALSE(second.open(sealed, alice_call, now).is_ok());
}
