#include <doctest/doctest.h>

#include "config/base64.hpp"

using namespace voxos;

namespace {

std::string encode(std::string_view text, base64::alphabet chars, bool pad) {
  return base64::encode(reinterpret_cast<const unsigned char*>(text.data()), text.size(), chars,
                        pad);
}

} // namespace

TEST_CASE("base64 encodes the RFC 4648 test vectors") {
  CHECK(encode("", base64::alphabet::standard, true).empty());
  CHECK(encode("f", base64::alphabet::standard, true) == "Zg==");
  CHECK(encode("fo", base64::alphabet::standard, true) == "Zm8=");
  CHECK(encode("foo", base64::alphabet::standard, true) == "Zm9v");
  CHECK(encode("foobar", base64::alphabet::standard, true) == "Zm9vYmFy");
  CHECK(encode("fo", base64::alphabet::url, false) == "Zm8");
  // The URL alphabet swaps the two characters that need escaping in URLs.
  CHECK(encode("\xfb\xff", base64::alphabet::standard, true) == "+/8=");
  CHECK(encode("\xfb\xff", base64::alphabet::url, false) == "-_8");
}

TEST_CASE("strict base64 decoding refuses what is not canonical") {
  CHECK(base64::decode("Zm9vYmFy") == std::optional<std::string>{"foobar"});
  CHECK(base64::decode("Zg==") == std::optional<std::string>{"f"});
  CHECK_FALSE(base64::decode("Zg"));     // unpadded
  CHECK_FALSE(base64::decode("Zh=="));   // spare bits set
  CHECK_FALSE(base64::decode("Zm9v\n")); // whitespace
  CHECK_FALSE(base64::decode("-_8="));   // URL alphabet
}
