#include "storage/digest.hpp"

#include <cstdlib>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "config/base64.hpp"

namespace voxos::digest {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

std::vector<unsigned char> random_bytes(std::size_t n) {
  std::vector<unsigned char> buf(n);
  // A failing CSPRNG is a broken invariant: never hand out weak credentials.
  if (n > 0 && RAND_bytes(buf.data(), static_cast<int>(n)) != 1)
    std::abort();
  return buf;
}

} // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  std::string out;
  out.reserve(2 * sizeof(md));
  for (auto byte : md) {
    out.push_back(hex_digits[byte >> 4]);
    out.push_back(hex_digits[byte & 0x0F]);
  }
  return out;
}

bool constant_time_equal(std::string_view x, std::string_view y) noexcept {
  if (x.size() != y.size())
    return false;
  return CRYPTO_memcmp(x.data(), y.data(), x.size()) == 0;
}

std::string random_token(std::string_view prefix, std::size_t bytes) {
  auto buf = random_bytes(bytes);
  auto b64 = base64::encode(buf.data(), buf.size(), base64::alphabet::url, false);
  OPENSSL_cleanse(buf.data(), buf.size());
  std::string out{prefix};
  out += b64;
  OPENSSL_cleanse(b64.data(), b64.size());
  return out;
}

std::string random_hex(std::size_t bytes) {
  auto buf = random_bytes(bytes);
  std::string out;
  out.reserve(2 * bytes);
  for (auto byte : buf) {
    out.push_back(hex_digits[byte >> 4]);
    out.push_back(hex_digits[byte & 0x0F]);
  }
  return out;
}

} // namespace voxos::digest
