// Crypto-erasure of a deleted server's credentials and node vault key
// rotation, on a whole node: after a deletion, nothing anywhere in the store
// opens to the deleted server's headers with any key the node holds, and the
// secret is in no file of the data directory; a rotated key's values are
// resealed in the background, `voxosctl vault keys` shows the old key unused,
// and the node then starts without it; a start without a key that values
// still need fails naming the key; a key left behind by a deletion that
// stopped half-way is erased at the next start.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include <rocksdb/db.h>

#include "actors/tenant/server_credentials.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "config/base64.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "support/child_process.hpp"
#include "support/file_scan.hpp"
#include "support/node_peer.hpp"
#include "support/node_store.hpp"
#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

const std::string deleted_secret = "sk-live-deleted-server-7f3a9c1e5b";
const std::string kept_secret = "sk-live-kept-server-2d8e6b4f0a";

/// 32 bytes of `fill`, as the node's secrets carry a key.
std::string key_bytes(char fill) {
  return std::string(32, fill);
}

/// The test node's secrets with `active` (id, fill) and `retired` keys.
node_secrets secrets_with(std::pair<const char*, char> active,
                          std::vector<std::pair<const char*, char>> retired = {}) {
  auto secrets = test::running_node::test_secrets();
  secrets.vault_key_id = active.first;
  secrets.vault_key = key_bytes(active.second);
  for (auto [key_id, fill] : retired)
    secrets.retired_vault_keys.push_back({key_id, key_bytes(fill)});
  return secrets;
}

/// The node's vault for `secrets`, as the node builds it.
std::shared_ptr<const vault> vault_of(const node_secrets& secrets) {
  auto made = vault::create(secrets.vault_key_id, secrets.vault_key);
  REQUIRE(made.is_ok());
  for (const auto& retired : secrets.retired_vault_keys)
    REQUIRE(made->add_key(retired.key_id, retired.key));
  return std::make_shared<const vault>(std::move(*made));
}

struct vault_fixture {
  std::unique_ptr<test::node_peer> peer = test::start_sdk_peer({"--json"});
  test::temp_dir dir;
  std::optional<test::running_node> node;
  std::string tenant_id;
  std::string token;

  vault_fixture() {
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    node.emplace(dir, std::vector<node_config::registered_url>{{peer->url(), "mcp"}});
    std::tie(tenant_id, token) = node->make_tenant("Acme");
  }

  /// A server on the peer with one static header; answers its id.
  std::string create_server(const std::string& secret) {
    auto made = node->call("POST", "/v1/servers", token,
                           json{{"url", peer->url()}, {"headers", {{"X-Api-Key", secret}}}}.dump());
    REQUIRE_MESSAGE(made.status == 201, made.raw);
    return made.body["server_id"].get<std::string>();
  }

  /// The connection test: opens the server's headers and sends them.
  void use_server(const std::string& server_id) {
    auto tested = node->call("POST", "/v1/servers/" + server_id + "/test", token);
    REQUIRE_MESSAGE(tested.status == 200, tested.raw);
  }

  json keys_report(bool wait) {
    auto report = node->call("GET", std::string{"/v1/admin/vault/keys"} + (wait ? "?wait=1" : ""),
                             test::admin_token);
    REQUIRE_MESSAGE(report.status == 200, report.raw);
    return report.body;
  }

  /// Runs the store-reading `check` on the stopped node's store.
  template <class F>
  void with_store(F check) {
    node->stop();
    {
      std::shared_ptr<event_db> db = test::open_node_store(dir);
      check(db);
    }
  }
};

json key_row(const json& report, const std::string& key_id) {
  for (const auto& row : report["keys"])
    if (row["key_id"] == key_id)
      return row;
  return {};
}

/// One entry of the store: its column family, key and value.
struct store_entry {
  std::string family;
  std::string key;
  std::string value;
};

/// Every key and value of every column family of the store in `store_dir`;
/// the families' names go to `names`.
std::vector<store_entry> every_entry(const std::string& store_dir,
                                     std::vector<std::string>& names) {
  REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions{}, store_dir, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const auto& name : names)
    families.emplace_back(name, rocksdb::ColumnFamilyOptions{});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(
    rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions{}, store_dir, families, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db{raw};
  std::vector<store_entry> out;
  for (auto* handle : handles) {
    std::unique_ptr<rocksdb::Iterator> it{db->NewIterator(rocksdb::ReadOptions{}, handle)};
    for (it->SeekToFirst(); it->Valid(); it->Next())
      out.push_back({handle->GetName(), it->key().ToString(), it->value().ToString()});
    REQUIRE(it->status().ok());
  }
  for (auto* handle : handles)
    REQUIRE(db->DestroyColumnFamilyHandle(handle).ok());
  return out;
}

/// What in `bytes` may be a sealed value: the bytes themselves, and every
/// run of base64 in them (JSON strings of events and projections), decoded.
std::vector<std::string> sealed_candidates(const std::string& bytes) {
  std::vector<std::string> out;
  if (vault::key_id_of(bytes))
    out.push_back(bytes);
  static const std::regex base64_run{"[A-Za-z0-9+/]{24,}={0,2}"};
  for (std::sregex_iterator it{bytes.begin(), bytes.end(), base64_run}, end; it != end; ++it)
    if (auto decoded = base64::decode(it->str()); decoded && vault::key_id_of(*decoded))
      out.push_back(std::move(*decoded));
  return out;
}

} // namespace

TEST_CASE("a deleted server's credentials open with no key the node holds and are in no file") {
  vault_fixture f;
  auto gone = f.create_server(deleted_secret);
  auto kept = f.create_server(kept_secret);
  f.use_server(gone);
  f.use_server(kept);

  // Before the deletion: the server's data key record, and its sealed headers.
  std::string key_record;
  std::string sealed_headers;
  f.with_store([&](std::shared_ptr<event_db>& db) {
    auto record = db->get_sealed(f.tenant_id, server_keys::key_record(gone));
    REQUIRE(record);
    REQUIRE(record->has_value());
    key_record = **record;
    auto state = db->get_state(tenant_events::state_prefix(f.tenant_id) + "server/" + gone);
    REQUIRE(state);
    REQUIRE(state->has_value());
    auto raw = base64::decode(json::parse(**state)["sealed_headers"].get<std::string>());
    REQUIRE(raw);
    sealed_headers = *raw;
  });
  f.node->start();
  auto deleted = f.node->call("DELETE", "/v1/servers/" + gone, f.token);
  REQUIRE_MESSAGE(deleted.status == 200, deleted.raw);
  CHECK(deleted.body["deleted"] == gone);
  f.use_server(kept); // the other server's credentials still open
  f.node->stop();

  // Every key of every column family: the secret is in none, and no sealed
  // value in any of them opens as the deleted server's headers with any key
  // the node holds: its vault key, and every data key still stored (tried
  // under whatever key id the value names).
  auto node_keys = vault_of(test::running_node::test_secrets());
  std::vector<std::string> held_keys{key_bytes('k')};
  std::vector<std::string> families;
  auto entries = every_entry(f.dir.str() + "/store", families);
  CHECK(std::set<std::string>(families.begin(), families.end())
        == std::set<std::string>{"default", "events", "state", "vault"});
  std::vector<std::string> candidates;
  bool old_value_still_stored = false;
  for (const auto& [family, key, value] : entries) {
    CHECK(key.find(deleted_secret) == std::string::npos);
    CHECK(value.find(deleted_secret) == std::string::npos);
    // The vault's values: the canary and the data keys, all under the node key.
    if (family == "vault") {
      auto slash = key.find('/');
      auto opened = node_keys->open(key.substr(0, slash), key.substr(slash + 1), value);
      REQUIRE(opened.is_ok());
      if (key.find("/server-key.") != std::string::npos)
        held_keys.push_back(*opened);
    }
    for (auto& candidate : sealed_candidates(value)) {
      old_value_still_stored = old_value_still_stored || candidate == sealed_headers;
      candidates.push_back(std::move(candidate));
    }
  }
  CHECK(old_value_still_stored); // the log keeps the value: only the key went
  CHECK(held_keys.size() == 2);  // the node key and the kept server's data key
  CHECK(!candidates.empty());
  const std::vector<std::string> records{"server/" + gone + "/headers"};
  for (const auto& candidate : candidates) {
    auto named = std::string{*vault::key_id_of(candidate)};
    for (const auto& key : held_keys) {
      auto box = vault::create(named, key);
      REQUIRE(box.is_ok());
      for (const auto& record : records)
        CHECK_FALSE(box->open(f.tenant_id, record, candidate).is_ok());
    }
  }
  // Through the node's own component, the same: the key is gone.
  {
    std::shared_ptr<event_db> db = test::open_node_store(f.dir);
    server_keys keys{node_keys, db};
    auto opened = keys.open_for_server(f.tenant_id, gone, "headers", sealed_headers);
    REQUIRE_FALSE(opened.is_ok());
    CHECK(opened.error().code() == errc::vault_open_failed);
    // (and the kept server's headers do open, the same way)
    auto kept_state = db->get_state(tenant_events::state_prefix(f.tenant_id) + "server/" + kept);
    REQUIRE(kept_state);
    REQUIRE(kept_state->has_value());
    auto kept_record = tenant_events::server_from_json(json::parse(**kept_state));
    REQUIRE(kept_record);
    auto headers = server_credentials::open_headers(keys, f.tenant_id, *kept_record);
    REQUIRE(headers);
    CHECK(headers->front().second == kept_secret);
  }
  // The raw files: neither the secret nor the sealed key record anywhere.
  CHECK(test::files_holding(f.dir.path(), deleted_secret).empty());
  CHECK(test::files_holding(f.dir.path(), key_record).empty());
}

TEST_CASE("a rotated vault key's values are resealed in the background and the key can then be "
          "dropped") {
  vault_fixture f;
  auto first = f.create_server(deleted_secret);
  auto second = f.create_server(kept_secret);
  auto at_k1 = f.keys_report(true);
  CHECK(at_k1["active"] == "k1");
  CHECK(key_row(at_k1, "k1")["values"] == 3); // the canary and two data keys

  // k2 seals from now on; k1 only opens until the pass has resealed its values.
  f.node->stop();
  f.node->use_secrets(secrets_with({"k2", 'm'}, {{"k1", 'k'}}));
  f.node->start();
  auto rotated = f.keys_report(true);
  CHECK(rotated["active"] == "k2");
  CHECK(rotated["reseal"]["done"] == true);
  CHECK(rotated["reseal"]["resealed"] == 3);
  CHECK(rotated["reseal"]["unopened"] == 0);
  CHECK(key_row(rotated, "k2")["state"] == "active");
  CHECK(key_row(rotated, "k2")["values"] == 3);
  CHECK(key_row(rotated, "k1")["state"] == "retired");
  CHECK(key_row(rotated, "k1")["values"] == 0);
  CHECK(key_row(rotated, "k1")["droppable"] == true);
  f.use_server(first);

  // voxosctl says the same.
  {
    test::child_process ctl{{VOXOSCTL_PATH, "--url",
                             "http://127.0.0.1:" + std::to_string(f.node->get().http_port()),
                             "vault", "keys", "--wait"},
                            f.dir.str(),
                            (f.dir.path() / "voxosctl.err").string(),
                            {std::string{"VOXOS_ADMIN_TOKEN="} + test::admin_token}};
    const auto& out = ctl.read_all();
    CHECK(ctl.wait() == 0);
    CHECK(std::regex_search(out, std::regex{"k2 +active +3"}));
    CHECK(std::regex_search(out, std::regex{"k1 +retired +0  unused: can be dropped"}));
    CHECK(out.find("reseal under 'k2': done, 3 resealed") != std::string::npos);
  }

  // Without k1 the node starts, and the servers' headers still open.
  f.node->stop();
  f.node->use_secrets(secrets_with({"k2", 'm'}));
  f.node->start();
  auto dropped = f.keys_report(false);
  CHECK(key_row(dropped, "k1").is_null());
  CHECK(key_row(dropped, "k2")["values"] == 3);
  f.use_server(first);
  f.use_server(second);
}

TEST_CASE("a node started without a key that sealed values still need fails naming the key") {
  vault_fixture f;
  auto server = f.create_server(deleted_secret);
  f.node->stop();
  auto config = f.node->config();
  for (const auto& secrets :
       {secrets_with({"k2", 'm'}), secrets_with({"k2", 'm'}, {{"k0", 'z'}})}) {
    auto refused = node::start(config, secrets);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code() == errc::config_invalid);
    CHECK(refused.error().message().find("key 'k1'") != std::string::npos);
    CHECK(refused.error().message().find("not configured") != std::string::npos);
    CHECK(refused.error().message().find("mmmm") == std::string::npos);
    CHECK(refused.error().message().find("kkkk") == std::string::npos);
  }
  // k1 under its id but with other bytes: refused as a wrong key.
  auto wrong = node::start(config, secrets_with({"k2", 'm'}, {{"k1", 'q'}}));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code() == errc::vault_open_failed);
  CHECK(wrong.error().message().find("'k1'") != std::string::npos);
  // Nothing was changed: the node starts with k1 and everything opens.
  f.node->start();
  auto report = f.keys_report(true);
  CHECK(report["active"] == "k1");
  CHECK(key_row(report, "k1")["values"] == 2);
  CHECK(key_row(report, "k2").is_null());
  f.use_server(server);
}

TEST_CASE("the data key of a server whose deletion stopped before the erasure goes at the next "
          "start") {
  vault_fixture f;
  auto server = f.create_server(deleted_secret);
  f.use_server(server);
  std::string key_record;
  // A deletion event with no erasure after it (a stop between the two).
  f.with_store([&](std::shared_ptr<event_db>& db) {
    key_record = **db->get_sealed(f.tenant_id, server_keys::key_record(server));
    append_request req;
    req.tenant = f.tenant_id;
    req.stream = tenant_events::stream;
    req.events.push_back(tenant_events::server_deleted(server));
    REQUIRE(db->append(req, 1));
  });
  CHECK_FALSE(test::files_holding(f.dir.path(), key_record).empty());
  f.node->start();
  f.with_store([&](std::shared_ptr<event_db>& db) {
    auto found = db->get_sealed(f.tenant_id, server_keys::key_record(server));
    REQUIRE(found);
    CHECK_FALSE(found->has_value());
  });
  CHECK(test::files_holding(f.dir.path(), key_record).empty());
}

TEST_CASE("the vault keys report refuses a malformed wait and needs the admin token") {
  vault_fixture f;
  auto bad = f.node->call("GET", "/v1/admin/vault/keys?wait=yes", test::admin_token);
  CHECK(bad.status == 400);
  CHECK(bad.body["error"]["code"] == "out_of_range");
  CHECK(f.node->call("GET", "/v1/admin/vault/keys", f.token).status == 401);
}
