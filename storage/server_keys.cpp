// Per-server data keys; see server_keys.hpp.
#include "storage/server_keys.hpp"

#include <array>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "storage/event_db.hpp"
#include "storage/keys.hpp"
#include "storage/vault.hpp"

namespace voxos {

namespace {

constexpr std::size_t data_key_bytes = 32;
constexpr std::string_view key_record_prefix = "server-key.";
constexpr std::size_t max_server_id_bytes = keys::max_name_length - key_record_prefix.size();
constexpr std::size_t max_purpose_bytes = 32;

status check_names(std::string_view tenant, std::string_view server_id, std::string_view purpose) {
  if (!keys::valid_tenant(tenant))
    return status::error(errc::out_of_range, "server keys: the tenant id is malformed");
  if (!server_keys::valid_server_id(server_id))
    return status::error(errc::out_of_range,
                         "server keys: a server id is 1 to 53 characters of [a-z0-9_.-]");
  if (!server_keys::valid_purpose(purpose))
    return status::error(errc::out_of_range,
                         "server keys: a purpose is 1 to 32 characters of [a-z0-9_.-]");
  return status::ok();
}

/// The record a server's value of `purpose` is sealed for (associated data).
std::string value_record(std::string_view server_id, std::string_view purpose) {
  std::string out{"server/"};
  out.append(server_id).append("/").append(purpose);
  return out;
}

std::string cache_key(std::string_view tenant, std::string_view server_id) {
  return keys::tenant_prefix(tenant).append(server_id);
}

} // namespace

server_keys::server_keys(std::shared_ptr<const vault> node_keys, std::shared_ptr<event_db> db)
    : node_keys_(std::move(node_keys)), db_(std::move(db)) {}

// The cached vaults wipe their keys as they go.
server_keys::~server_keys() = default;

bool server_keys::valid_server_id(std::string_view server_id) noexcept {
  return server_id.size() <= max_server_id_bytes && keys::valid_stream(server_id);
}

bool server_keys::valid_purpose(std::string_view purpose) noexcept {
  return purpose.size() <= max_purpose_bytes && keys::valid_stream(purpose);
}

std::string server_keys::key_record(std::string_view server_id) {
  return std::string{key_record_prefix}.append(server_id);
}

std::string server_keys::data_key_id(std::string_view server_id) {
  return std::string{"sk:"}.append(server_id);
}

result<std::shared_ptr<const vault>>
server_keys::data_key(const std::string& tenant, const std::string& server_id, bool make) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto slot = cache_key(tenant, server_id);
  if (auto found = cache_.find(slot); found != cache_.end())
    return found->second;
  const auto record = key_record(server_id);
  auto stored = db_->get_sealed(tenant, record);
  if (!stored)
    return stored.error();
  std::string sealed_key;
  if (stored->has_value()) {
    sealed_key = std::move(**stored);
  } else {
    if (!make)
      return std::shared_ptr<const vault>{};
    // A fresh key, sealed under the node's active key, stored (synced)
    // before anything is sealed with it.
    std::array<unsigned char, data_key_bytes> fresh{};
    if (RAND_bytes(fresh.data(), static_cast<int>(fresh.size())) != 1)
      return status::error(errc::internal, "server keys: the random generator failed");
    auto sealed =
      node_keys_->seal(tenant, record, {reinterpret_cast<const char*>(fresh.data()), fresh.size()});
    OPENSSL_cleanse(fresh.data(), fresh.size());
    if (!sealed)
      return sealed.error();
    auto kept = db_->put_sealed_if_absent(tenant, record, *sealed);
    if (!kept)
      return kept.error();
    sealed_key = std::move(*kept);
  }
  // Open it (under whichever node key it names) into a vault of its own.
  auto key = node_keys_->open(tenant, record, sealed_key);
  if (!key)
    return key.error();
  auto made = vault::create(data_key_id(server_id), *key);
  OPENSSL_cleanse(key->data(), key->size());
  if (!made)
    return status::error(errc::corrupt_data, "server keys: a stored data key has a wrong size");
  auto shared = std::make_shared<const vault>(std::move(*made));
  cache_.emplace(std::move(slot), shared);
  return shared;
}

result<std::string> server_keys::seal_for_server(std::string_view tenant,
                                                 std::string_view server_id,
                                                 std::string_view purpose,
                                                 std::string_view plaintext) {
  if (auto st = check_names(tenant, server_id, purpose); !st)
    return st;
  auto key = data_key(std::string{tenant}, std::string{server_id}, /*make=*/true);
  if (!key)
    return key.error();
  return (*key)->seal(tenant, value_record(server_id, purpose), plaintext);
}

result<std::string> server_keys::open_for_server(std::string_view tenant,
                                                 std::string_view server_id,
                                                 std::string_view purpose,
                                                 std::string_view sealed) {
  if (auto st = check_names(tenant, server_id, purpose); !st)
    return st;
  auto key = data_key(std::string{tenant}, std::string{server_id}, /*make=*/false);
  if (!key)
    return key.error();
  if (*key == nullptr)
    return status::error(errc::vault_open_failed,
                         "server keys: the server has no data key (erased with the server?)");
  // Only the server's own data key: never a node key, never another server's.
  return (*key)->open(tenant, value_record(server_id, purpose), sealed);
}

status server_keys::erase_server_key(std::string_view tenant, std::string_view server_id) {
  if (auto st = check_names(tenant, server_id, "erase"); !st)
    return st;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    cache_.erase(cache_key(tenant, server_id));
  }
  // A server that never had a key costs no flush and no compaction.
  auto stored = db_->get_sealed(std::string{tenant}, key_record(server_id));
  if (!stored)
    return stored.error();
  if (!stored->has_value())
    return status::ok();
  return db_->erase_sealed(std::string{tenant}, key_record(server_id));
}

result<std::vector<std::pair<std::string, std::string>>> server_keys::stored_keys() const {
  constexpr std::size_t page = 1024;
  std::vector<std::pair<std::string, std::string>> out;
  std::string after_tenant, after_record;
  while (true) {
    auto entries = db_->scan_sealed(after_tenant, after_record, page);
    if (!entries)
      return entries.error();
    for (auto& entry : *entries) {
      std::string_view record = entry.record_id;
      if (record.substr(0, key_record_prefix.size()) == key_record_prefix)
        out.emplace_back(entry.tenant, std::string{record.substr(key_record_prefix.size())});
    }
    if (entries->size() < page)
      return out;
    after_tenant = entries->back().tenant;
    after_record = entries->back().record_id;
  }
}

} // namespace voxos
