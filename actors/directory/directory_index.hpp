// The directory's in-memory index of tenants and API tokens. CAF-free.
// Built from the directory projection at start, then kept current by the
// directory actor after each acknowledged append.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/status.hpp"
#include "messages/types.hpp"

namespace voxos {

class event_db;

class directory_index {
public:
  /// Loads every tenant and token from the directory projection.
  static result<directory_index> load(const event_db& db);

  void put_tenant(tenant_record tenant);
  /// Adds or replaces a token (a revoked token stays listed, marked revoked).
  void put_token(token_record token, std::string hash);

  const tenant_record* tenant(const std::string& tenant_id) const;
  std::vector<tenant_record> tenants() const;
  std::vector<token_record> tokens(const std::string& tenant_id) const;
  const token_record* token(const std::string& tenant_id, const std::string& token_id) const;
  /// The stored hash of a token, for its revocation event.
  const std::string* token_hash(const std::string& tenant_id, const std::string& token_id) const;

  /// The identity a token secret speaks for: nullopt if it matches no live
  /// token. Looks up by SHA-256 of the secret.
  std::optional<tenant_identity> authenticate(const std::string& secret) const;

  std::size_t tenant_count() const noexcept { return tenants_.size(); }

private:
  struct token_entry {
    token_record record;
    std::string hash;
  };
  std::map<std::string, tenant_record> tenants_;
  // tenant id → token id → token
  std::map<std::string, std::map<std::string, token_entry>> tokens_;
  // SHA-256 hex → (tenant id, token id), live tokens only
  std::unordered_map<std::string, std::pair<std::string, std::string>> by_hash_;
};

} // namespace voxos
