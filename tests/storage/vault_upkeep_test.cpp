// Tests for storage/vault_upkeep.cpp: the start check (canary, every key id
// configured and right), key usage, and resealing under the active key in
// bounded batches that leave erased or changed values alone.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "storage/event_db.hpp"
#include "storage/keys.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "storage/vault_upkeep.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;

namespace {

constexpr const char* tenant = "t_acme";
constexpr const char* secret = "X-Api-Key: sk-live-recognisable-0123456789";

/// A vault with `active` and then `retired` keys, each 32 bytes of its fill.
std::shared_ptr<const vault> keyring(std::pair<const char*, char> active,
                                     std::vector<std::pair<const char*, char>> retired = {}) {
  auto made = vault::create(active.first, std::string(32, active.second));
  REQUIRE(made.is_ok());
  for (auto [key_id, fill] : retired)
    REQUIRE(made->add_key(key_id, std::string(32, fill)));
  return std::make_shared<const vault>(std::move(*made));
}

std::shared_ptr<event_db> open_store(const test::temp_dir& dir) {
  auto opened = event_db::open(dir.str() + "/store", {});
  REQUIRE(opened);
  return std::move(*opened);
}

uint64_t values_of(const std::vector<vault_upkeep::key_usage>& rows, const std::string& key_id) {
  for (const auto& row : rows)
    if (row.key_id == key_id)
      return row.values;
  return 0;
}

/// A store whose canary and three servers' data keys are sealed under k1.
struct sealed_under_k1 {
  test::temp_dir dir;
  std::vector<std::pair<std::string, std::string>> values; // (server id, sealed)

  sealed_under_k1() {
    auto db = open_store(dir);
    auto k1 = keyring({"k1", 'a'});
    REQUIRE(vault_upkeep::check_at_start(*db, *k1));
    server_keys keys{k1, db};
    for (const char* server_id : {"s_one", "s_two", "s_three"}) {
      auto sealed = keys.seal_for_server(tenant, server_id, "headers", secret);
      REQUIRE(sealed.is_ok());
      values.emplace_back(server_id, std::move(*sealed));
    }
  }
};

} // namespace

TEST_CASE("a first start seals the canary, and later starts check it") {
  test::temp_dir dir;
  auto db = open_store(dir);
  auto k1 = keyring({"k1", 'a'});
  auto first = vault_upkeep::check_at_start(*db, *k1);
  REQUIRE(first);
  REQUIRE(first->size() == 1);
  CHECK(first->front().key_id == "k1");
  CHECK(first->front().active);
  CHECK(first->front().values == 1); // the canary
  auto canary = db->get_sealed(std::string{keys::node_tenant}, "vault.canary");
  REQUIRE(canary);
  REQUIRE(canary->has_value());
  CHECK(vault::key_id_of(**canary) == std::optional<std::string_view>{"k1"});
  CHECK(vault_upkeep::check_at_start(*db, *k1));
  // The same id with other key bytes: refused, naming the id only.
  auto wrong = vault_upkeep::check_at_start(*db, *keyring({"k1", 'b'}));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code() == errc::vault_open_failed);
  CHECK(wrong.error().message().find("'k1'") != std::string::npos);
  CHECK(wrong.error().message().find("bbbb") == std::string::npos);
}

TEST_CASE("a start without a key that sealed values still need fails naming the key id") {
  sealed_under_k1 f;
  auto db = open_store(f.dir);
  auto k2_only = keyring({"k2", 'c'});
  auto refused = vault_upkeep::check_at_start(*db, *k2_only);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == errc::config_invalid);
  CHECK(refused.error().message().find("key 'k1'") != std::string::npos);
  CHECK(refused.error().message().find("not configured") != std::string::npos);
  // Nothing changed: the canary is still under k1, and k1 opens everything.
  auto usage = vault_upkeep::usage(*db, *keyring({"k1", 'a'}));
  REQUIRE(usage);
  CHECK(values_of(*usage, "k1") == 4);
  // A retired key under the right id but with wrong bytes is refused too.
  auto wrong = vault_upkeep::check_at_start(*db, *keyring({"k2", 'c'}, {{"k1", 'z'}}));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code() == errc::vault_open_failed);
  CHECK(wrong.error().message().find("'k1'") != std::string::npos);
}

TEST_CASE("rotation reseals every vault value under the active key in bounded batches") {
  sealed_under_k1 f;
  auto db = open_store(f.dir);
  auto rotated = keyring({"k2", 'c'}, {{"k1", 'a'}});
  auto at_start = vault_upkeep::check_at_start(*db, *rotated);
  REQUIRE(at_start);
  REQUIRE(at_start->size() == 2);
  CHECK(at_start->at(0).key_id == "k2");
  CHECK(at_start->at(0).active);
  CHECK(at_start->at(0).values == 0);
  CHECK(at_start->at(1).key_id == "k1");
  CHECK(at_start->at(1).values == 4);
  // Two values a batch: the cursor moves on until the end.
  vault_upkeep::reseal_cursor cursor;
  int batches = 0;
  while (!cursor.done) {
    REQUIRE(vault_upkeep::reseal_batch(*db, *rotated, 2, cursor));
    REQUIRE(++batches <= 3);
  }
  CHECK(batches == 3); // 2 + 2 + an empty read that ends the pass
  CHECK(cursor.resealed == 4);
  CHECK(cursor.unopened == 0);
  auto after = vault_upkeep::usage(*db, *rotated);
  REQUIRE(after);
  CHECK(values_of(*after, "k2") == 4);
  CHECK(values_of(*after, "k1") == 0);
  // A second pass finds nothing to do.
  vault_upkeep::reseal_cursor again;
  while (!again.done)
    REQUIRE(vault_upkeep::reseal_batch(*db, *rotated, 64, again));
  CHECK(again.resealed == 0);
  // Without k1 the store passes the start check, and every server value
  // sealed before the rotation still opens (its data key is the same).
  auto k2_only = keyring({"k2", 'c'});
  CHECK(vault_upkeep::check_at_start(*db, *k2_only));
  server_keys keys{k2_only, db};
  for (const auto& [server_id, sealed] : f.values) {
    auto opened = keys.open_for_server(tenant, server_id, "headers", sealed);
    REQUIRE_MESSAGE(opened.is_ok(), server_id);
    CHECK(*opened == secret);
  }
}

TEST_CASE("a value erased or changed after it was read is not written back by a reseal") {
  sealed_under_k1 f;
  auto db = open_store(f.dir);
  auto rotated = keyring({"k2", 'c'}, {{"k1", 'a'}});
  auto record = server_keys::key_record("s_one");
  auto before = db->get_sealed(tenant, record);
  REQUIRE(before);
  REQUIRE(before->has_value());
  // A replacement made from what was read, applied after an erasure.
  auto opened = rotated->open(tenant, record, **before);
  REQUIRE(opened.is_ok());
  auto resealed = rotated->seal(tenant, record, *opened);
  REQUIRE(resealed.is_ok());
  REQUIRE(db->erase_sealed(tenant, record));
  auto applied = db->replace_sealed({{tenant, record, **before, *resealed}});
  REQUIRE(applied);
  CHECK(*applied == 0);
  auto gone = db->get_sealed(tenant, record);
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
  // And one whose record changed since: left as it is now.
  auto other = server_keys::key_record("s_two");
  auto now = db->get_sealed(tenant, other);
  REQUIRE(now);
  auto stale = db->replace_sealed({{tenant, other, "not what it holds", *resealed}});
  REQUIRE(stale);
  CHECK(*stale == 0);
  CHECK(**db->get_sealed(tenant, other) == **now);
}
