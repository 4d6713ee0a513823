// Tests for storage/server_keys.cpp: a data key per (tenant, server), made on
// first use and stored sealed under the node key; values bound to tenant,
// server and purpose; erasure that leaves no file holding the key.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "support/file_scan.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;

namespace {

constexpr const char* tenant = "t_acme";
constexpr const char* secret = "X-Api-Key: sk-live-recognisable-0123456789";

std::shared_ptr<const vault> node_keys(const std::string& key_id = "k1", char fill = 'k') {
  auto made = vault::create(key_id, std::string(32, fill));
  REQUIRE(made.is_ok());
  return std::make_shared<const vault>(std::move(*made));
}

struct keys_fixture {
  test::temp_dir dir;
  std::shared_ptr<event_db> db;
  std::shared_ptr<const vault> node = node_keys();
  std::unique_ptr<server_keys> keys;

  keys_fixture() {
    auto opened = event_db::open(dir.str() + "/store", {});
    REQUIRE(opened);
    db = std::move(*opened);
    keys = std::make_unique<server_keys>(node, db);
  }

  std::string seal(const std::string& server_id, const std::string& purpose = "headers",
                   const std::string& text = secret) {
    auto sealed = keys->seal_for_server(tenant, server_id, purpose, text);
    REQUIRE_MESSAGE(sealed.is_ok(), sealed.error().message());
    return std::move(*sealed);
  }

  std::optional<std::string> stored_key(const std::string& server_id) {
    auto found = db->get_sealed(tenant, server_keys::key_record(server_id));
    REQUIRE(found);
    return *found;
  }
};

void check_refused(const result<std::string>& opened) {
  REQUIRE_FALSE(opened.is_ok());
  CHECK(opened.error().code() == errc::vault_open_failed);
  CHECK(opened.error().message().find("sk-live") == std::string::npos);
}

} // namespace

TEST_CASE("a server's data key is made on first seal and stored sealed under the node key") {
  keys_fixture f;
  CHECK_FALSE(f.stored_key("s_one").has_value());
  auto sealed = f.seal("s_one");
  CHECK(sealed.find("sk-live") == std::string::npos);
  // The value names the server's data key, not a node key.
  CHECK(vault::key_id_of(sealed) == std::optional<std::string_view>{"sk:s_one"});
  auto opened = f.keys->open_for_server(tenant, "s_one", "headers", sealed);
  REQUIRE(opened.is_ok());
  CHECK(*opened == secret);
  // The key record: 32 bytes sealed by the node's vault for its own record.
  auto record = f.stored_key("s_one");
  REQUIRE(record.has_value());
  CHECK(vault::key_id_of(*record) == std::optional<std::string_view>{"k1"});
  auto key = f.node->open(tenant, server_keys::key_record("s_one"), *record);
  REQUIRE(key.is_ok());
  CHECK(key->size() == 32);
  // A second seal uses the same key; another server gets a key of its own.
  f.seal("s_one", "oauth.tokens", "refresh-token");
  CHECK(*f.stored_key("s_one") == *record);
  f.seal("s_two");
  CHECK(*f.stored_key("s_two") != *record);
  // A fresh component (a restart) opens the stored key.
  server_keys again{f.node, f.db};
  auto reopened = again.open_for_server(tenant, "s_one", "headers", sealed);
  REQUIRE(reopened.is_ok());
  CHECK(*reopened == secret);
}

TEST_CASE("a server's value does not open tampered, truncated or moved to another tenant, server "
          "or purpose") {
  keys_fixture f;
  auto sealed = f.seal("s_one");
  f.seal("s_two");
  auto tampered = sealed;
  tampered[tampered.size() / 2] ^= 0x01;
  check_refused(f.keys->open_for_server(tenant, "s_one", "headers", tampered));
  check_refused(f.keys->open_for_server(tenant, "s_one", "headers", sealed.substr(0, 20)));
  check_refused(f.keys->open_for_server(tenant, "s_two", "headers", sealed));
  check_refused(f.keys->open_for_server(tenant, "s_one", "oauth.tokens", sealed));
  // Another tenant has no key for the server: nothing is made by an open.
  check_refused(f.keys->open_for_server("t_other", "s_one", "headers", sealed));
  auto other = f.db->get_sealed("t_other", server_keys::key_record("s_one"));
  REQUIRE(other);
  CHECK_FALSE(other->has_value());
  // A value sealed directly under the node key for the same record does not
  // open as the server's: only its data key opens its values.
  auto by_node = f.node->seal(tenant, "server/s_one/headers", secret);
  REQUIRE(by_node.is_ok());
  check_refused(f.keys->open_for_server(tenant, "s_one", "headers", *by_node));
  // Nor does a value relabelled with the other server's key id.
  auto relabelled = sealed;
  relabelled.replace(2, 8, "sk:s_two");
  check_refused(f.keys->open_for_server(tenant, "s_two", "headers", relabelled));
}

TEST_CASE("malformed tenant, server ids and purposes are refused and make no key") {
  keys_fixture f;
  auto refused = [&](const char* who, const char* server, const char* purpose,
                     const char* expected) {
    auto sealed = f.keys->seal_for_server(who, server, purpose, secret);
    REQUIRE_FALSE(sealed.is_ok());
    CHECK(sealed.error().code() == errc::out_of_range);
    CHECK(sealed.error().message().find(expected) != std::string::npos);
    CHECK(sealed.error().message().find("sk-live") == std::string::npos);
  };
  refused("T/acme", "s_one", "headers", "tenant id");
  refused(tenant, "", "headers", "server id");
  refused(tenant, "s/one", "headers", "server id");
  refused(tenant, std::string(54, 's').c_str(), "headers", "server id");
  refused(tenant, "s_one", "", "purpose");
  refused(tenant, "s_one", "Headers", "purpose");
  refused(tenant, "s_one", std::string(33, 'p').c_str(), "purpose");
  auto stored = f.keys->stored_keys();
  REQUIRE(stored);
  CHECK(stored->empty());
  CHECK_FALSE(f.keys->erase_server_key(tenant, "s/one").is_ok());
}

TEST_CASE("erasing a server's key makes its values unopenable and leaves no file holding the key") {
  keys_fixture f;
  auto sealed = f.seal("s_gone");
  auto kept = f.seal("s_kept");
  auto record = f.stored_key("s_gone");
  REQUIRE(record.has_value());
  REQUIRE(f.keys->erase_server_key(tenant, "s_gone"));
  CHECK_FALSE(f.stored_key("s_gone").has_value());
  auto opened = f.keys->open_for_server(tenant, "s_gone", "headers", sealed);
  check_refused(opened);
  CHECK(opened.error().message().find("no data key") != std::string::npos);
  // No file of the store holds the sealed key record any more.
  CHECK(test::files_holding(f.dir.path(), *record).empty());
  // Another server's values still open; erasing twice is harmless.
  auto still = f.keys->open_for_server(tenant, "s_kept", "headers", kept);
  REQUIRE(still.is_ok());
  CHECK(*still == secret);
  CHECK(f.keys->erase_server_key(tenant, "s_gone"));
  auto stored = f.keys->stored_keys();
  REQUIRE(stored);
  REQUIRE(stored->size() == 1);
  CHECK(stored->front() == std::pair<std::string, std::string>{tenant, "s_kept"});
}

TEST_CASE("an erased key is gone from the files after a restart too") {
  test::temp_dir dir;
  auto node = node_keys();
  std::string record;
  {
    auto opened = event_db::open(dir.str() + "/store", {});
    REQUIRE(opened);
    std::shared_ptr<event_db> db = std::move(*opened);
    server_keys keys{node, db};
    REQUIRE(keys.seal_for_server(tenant, "s_gone", "headers", secret).is_ok());
    record = **db->get_sealed(tenant, server_keys::key_record("s_gone"));
  }
  // Reopened: the key now sits in a table file recovered from the log.
  auto opened = event_db::open(dir.str() + "/store", {});
  REQUIRE(opened);
  std::shared_ptr<event_db> db = std::move(*opened);
  CHECK_FALSE(test::files_holding(dir.path(), record).empty());
  server_keys keys{node, db};
  REQUIRE(keys.erase_server_key(tenant, "s_gone"));
  CHECK(test::files_holding(dir.path(), record).empty());
}
