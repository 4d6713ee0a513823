// Tests for storage/vault.cpp: AES-256-GCM sealing bound to key id, tenant
// and record id; tamper, transplant and truncation resistance; key rotation.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "storage/vault.hpp"

namespace {

using voxos::errc;
using voxos::vault;

std::string key_of(char seed) {
  std::string key;
  for (int idx = 0; idx < 32; ++idx)
    key += static_cast<char>(seed + idx * 7);
  return key;
}

const std::string key_one = key_of(0x11);
const std::string key_two = key_of(0x5a);
constexpr const char* tenant = "tenant-a";
constexpr const char* record = "mcp/github/oauth_refresh_token";
constexpr const char* plaintext = "ghr_plaintext-refresh-token-value";

vault make_vault(const std::string& key_id, const std::string& key) {
  auto made = vault::create(key_id, key);
  REQUIRE(made.is_ok());
  return std::move(made).value();
}

std::string seal(const vault& box, const std::string& text = plaintext) {
  auto sealed = box.seal(tenant, record, text);
  REQUIRE(sealed.is_ok());
  return std::move(sealed).value();
}

/// Checks that opening fails the one way it may: vault_open_failed, saying nothing.
void check_refused(const voxos::result<std::string>& opened) {
  REQUIRE_FALSE(opened.is_ok());
  CHECK(opened.error().code() == errc::vault_open_failed);
  CHECK(opened.error().message() == "vault: the sealed value did not open");
}

} // namespace

TEST_CASE("a sealed value opens for the same tenant and record") {
  auto box = make_vault("k1", key_one);
  CHECK(box.active_key_id() == "k1");
  auto sealed = seal(box);
  CHECK(sealed.find(plaintext) == std::string::npos);
  CHECK(sealed.find(key_one) == std::string::npos);
  CHECK(sealed.size() == 1 + 1 + 2 + 12 + std::string{plaintext}.size() + 16);
  auto opened = box.open(tenant, record, sealed);
  REQUIRE(opened.is_ok());
  CHECK(*opened == plaintext);
}

TEST_CASE("empty and binary plaintexts round-trip") {
  auto box = make_vault("k1", key_one);
  std::string binary{"\0\x01\xff\x80 zero\0bytes", 16};
  for (const std::string& text : {std::string{}, binary, std::string(100000, 'x')}) {
    auto opened = box.open(tenant, record, seal(box, text));
    REQUIRE(opened.is_ok());
    CHECK(*opened == text);
  }
}

TEST_CASE("the same plaintext sealed twice gives different ciphertexts") {
  auto box = make_vault("k1", key_one);
  auto first = seal(box);
  auto second = seal(box);
  CHECK(first != second);
  CHECK(first.substr(4, 12) != second.substr(4, 12)); // fresh nonces
  CHECK(*box.open(tenant, record, first) == *box.open(tenant, record, second));
}

TEST_CASE("every single-byte flip of a sealed value fails to open") {
  auto box = make_vault("k1", key_one);
  auto sealed = seal(box);
  for (std::size_t pos = 0; pos < sealed.size(); ++pos) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      auto tampered = sealed;
      tampered[pos] = static_cast<char>(tampered[pos] ^ mask);
      CAPTURE(pos);
      CAPTURE(static_cast<int>(mask));
      check_refused(box.open(tenant, record, tampered));
    }
  }
}

TEST_CASE("every truncation of a sealed value fails to open") {
  auto box = make_vault("k1", key_one);
  auto sealed = seal(box);
  for (std::size_t len = 0; len < sealed.size(); ++len) {
    CAPTURE(len);
    check_refused(box.open(tenant, record, sealed.substr(0, len)));
  }
  // An appended byte fails too.
  check_refused(box.open(tenant, record, sealed + "x"));
}

TEST_CASE("a sealed value transplanted to another record or tenant does not open") {
  auto box = make_vault("k1", key_one);
  auto sealed = seal(box);
  check_refused(box.open(tenant, "mcp/github/oauth_access_token", sealed));
  check_refused(box.open("tenant-b", record, sealed));
  check_refused(box.open("", record, sealed));
  // Moving bytes across the tenant/record boundary changes the associated data.
  auto joined = box.seal("ab", "c", plaintext);
  REQUIRE(joined.is_ok());
  check_refused(box.open("a", "bc", *joined));
  check_refused(box.open("abc", "", *joined));
}

TEST_CASE("a sealed value relabelled with another key id does not open") {
  // k1 and k2 hold the same key bytes: only the associated data tells them apart.
  auto box = make_vault("k1", key_one);
  REQUIRE(box.add_key("k2", key_one).is_ok());
  auto sealed = seal(box);
  REQUIRE(sealed.substr(2, 2) == "k1");
  auto relabelled = sealed;
  relabelled[3] = '2';
  check_refused(box.open(tenant, record, relabelled));
}

TEST_CASE("a value sealed under an unknown key id does not open") {
  auto sealer = make_vault("k9", key_one);
  auto box = make_vault("k1", key_one);
  check_refused(box.open(tenant, record, seal(sealer)));
}

TEST_CASE("a value sealed under a different key with the same id does not open") {
  auto sealer = make_vault("k1", key_two);
  auto box = make_vault("k1", key_one);
  check_refused(box.open(tenant, record, seal(sealer)));
}

TEST_CASE("after rotation, values sealed under the old key still open") {
  auto old_box = make_vault("k1", key_one);
  auto old_sealed = seal(old_box);

  auto box = make_vault("k2", key_two);
  REQUIRE(box.add_key("k1", key_one).is_ok());
  CHECK(box.active_key_id() == "k2");
  auto opened = box.open(tenant, record, old_sealed);
  REQUIRE(opened.is_ok());
  CHECK(*opened == plaintext);

  // New values are sealed under the active key, which the old vault lacks.
  auto new_sealed = seal(box);
  CHECK(new_sealed.substr(2, 2) == "k2");
  CHECK(*box.open(tenant, record, new_sealed) == plaintext);
  check_refused(old_box.open(tenant, record, new_sealed));
}

TEST_CASE("a wrong key length or a bad key id is refused") {
  for (std::size_t len : {0, 16, 31, 33, 64}) {
    CAPTURE(len);
    auto made = vault::create("k1", std::string(len, 'k'));
    REQUIRE_FALSE(made.is_ok());
    CHECK(made.error().code() == errc::config_invalid);
  }
  CHECK_FALSE(vault::create("", key_one).is_ok());
  CHECK_FALSE(vault::create(std::string(65, 'k'), key_one).is_ok());
  CHECK(vault::create(std::string(64, 'k'), key_one).is_ok());

  auto box = make_vault("k1", key_one);
  CHECK(box.add_key("k2", std::string(31, 'k')).code() == errc::config_invalid);
  CHECK(box.add_key("", key_two).code() == errc::config_invalid);
}

TEST_CASE("a key id cannot be reused for different key bytes") {
  auto box = make_vault("k1", key_one);
  auto clash = box.add_key("k1", key_two);
  REQUIRE_FALSE(clash.is_ok());
  CHECK(clash.code() == errc::config_invalid);
  CHECK(box.add_key("k1", key_one).is_ok()); // re-adding the same key is harmless
  auto sealed = seal(box);
  CHECK(*box.open(tenant, record, sealed) == plaintext);
}

TEST_CASE("error messages contain neither plaintext nor key") {
  auto box = make_vault("k1", key_one);
  auto sealed = seal(box);
  auto tampered = sealed;
  tampered.back() = static_cast<char>(tampered.back() ^ 1);
  auto short_key = std::string{key_one}.substr(0, 31);
  std::string messages[] = {
    box.open(tenant, record, tampered).error().message(),
    box.open("tenant-b", record, sealed).error().message(),
    box.open(tenant, record, sealed.substr(0, 20)).error().message(),
    vault::create("k1", short_key).error().message(),
    box.add_key("k1", key_two).message(),
    box.add_key("k3", short_key).message(),
  };
  for (const auto& message : messages) {
    CAPTURE(message);
    CHECK_FALSE(message.empty());
    CHECK(message.find(plaintext) == std::string::npos);
    CHECK(message.find(short_key.substr(0, 8)) == std::string::npos);
    CHECK(message.find(key_two.substr(0, 8)) == std::string::npos);
    CHECK(message.find(sealed.substr(4, 12)) == std::string::npos);
  }
}

TEST_CASE("a moved vault keeps working and the moved-from one holds no keys") {
  auto box = make_vault("k1", key_one);
  auto sealed = seal(box);
  vault moved{std::move(box)};
  CHECK(*moved.open(tenant, record, sealed) == plaintext);
  check_refused(box.open(tenant, record, sealed)); // NOLINT(bugprone-use-after-move)
  CHECK(box.seal(tenant, record, plaintext).error().code() == errc::internal);

  auto other = make_vault("k2", key_two);
  other = std::move(moved);
  CHECK(other.active_key_id() == "k1");
  CHECK(*other.open(tenant, record, sealed) == plaintext);
}

TEST_CASE("a sealed value's header names its key id, and a vault lists the keys it holds") {
  auto box = make_vault("k1", key_one);
  REQUIRE(box.add_key("k0", key_two));
  CHECK(box.key_ids() == std::vector<std::string>{"k0", "k1"});
  CHECK(box.has_key("k0"));
  CHECK(box.has_key("k1"));
  CHECK_FALSE(box.has_key("k2"));
  auto sealed = seal(box);
  CHECK(vault::key_id_of(sealed) == std::optional<std::string_view>{"k1"});
  // Not of the format: no id, whatever the bytes.
  CHECK_FALSE(vault::key_id_of("").has_value());
  CHECK_FALSE(vault::key_id_of(sealed.substr(0, 20)).has_value());
  auto other_version = sealed;
  other_version[0] = 0x02;
  CHECK_FALSE(vault::key_id_of(other_version).has_value());
  auto no_id = sealed;
  no_id[1] = 0;
  CHECK_FALSE(vault::key_id_of(no_id).has_value());
}
