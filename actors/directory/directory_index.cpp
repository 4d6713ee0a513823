#include "actors/directory/directory_index.hpp"

#include "storage/digest.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"

namespace voxos {

namespace {

// Upper bound on directory entries loaded at start; far above any tenant count
// a single node serves.
constexpr std::size_t max_directory_entries = 10'000'000;

} // namespace

result<directory_index> directory_index::load(const event_db& db) {
  directory_index out;
  auto tenants = db.scan_state(directory::tenant_key_prefix, max_directory_entries);
  if (!tenants)
    return tenants.error();
  for (auto& [key, value] : *tenants) {
    auto tenant = directory::decode_tenant(key, value);
    if (!tenant)
      return tenant.error();
    out.put_tenant(std::move(*tenant));
  }
  auto tokens = db.scan_state(directory::token_key_prefix, max_directory_entries);
  if (!tokens)
    return tokens.error();
  for (auto& [key, value] : *tokens) {
    auto token = directory::decode_token(key, value);
    if (!token)
      return token.error();
    out.put_token(std::move(token->record), std::move(token->hash));
  }
  return out;
}

void directory_index::put_tenant(tenant_record tenant) {
  auto id = tenant.tenant_id;
  tenants_[id] = std::move(tenant);
}

void directory_index::put_token(token_record token, std::string hash) {
  if (token.revoked)
    by_hash_.erase(hash);
  else
    by_hash_[hash] = {token.tenant_id, token.token_id};
  auto& slot = tokens_[token.tenant_id][token.token_id];
  slot.record = std::move(token);
  slot.hash = std::move(hash);
}

const tenant_record* directory_index::tenant(const std::string& tenant_id) const {
  auto found = tenants_.find(tenant_id);
  return found == tenants_.end() ? nullptr : &found->second;
}

std::vector<tenant_record> directory_index::tenants() const {
  std::vector<tenant_record> out;
  out.reserve(tenants_.size());
  for (auto& [id, tenant] : tenants_)
    out.push_back(tenant);
  return out;
}

std::vector<token_record> directory_index::tokens(const std::string& tenant_id) const {
  std::vector<token_record> out;
  if (auto found = tokens_.find(tenant_id); found != tokens_.end())
    for (auto& [id, entry] : found->second)
      out.push_back(entry.record);
  return out;
}

const token_record* directory_index::token(const std::string& tenant_id,
                                           const std::string& token_id) const {
  auto found = tokens_.find(tenant_id);
  if (found == tokens_.end())
    return nullptr;
  auto entry = found->second.find(token_id);
  return entry == found->second.end() ? nullptr : &entry->second.record;
}

const std::string* directory_index::token_hash(const std::string& tenant_id,
                                               const std::string& token_id) const {
  auto found = tokens_.find(tenant_id);
  if (found == tokens_.end())
    return nullptr;
  auto entry = found->second.find(token_id);
  return entry == found->second.end() ? nullptr : &entry->second.hash;
}

std::optional<tenant_identity> directory_index::authenticate(const std::string& secret) const {
  auto found = by_hash_.find(digest::sha256_hex(secret));
  if (found == by_hash_.end())
    return std::nullopt;
  const auto* owner = tenant(found->second.first);
  if (owner == nullptr)
    return std::nullopt;
  return tenant_identity{owner->tenant_id, owner->name, found->second.second};
}

} // namespace voxos
