// The node keys' upkeep; see vault_upkeep.hpp.
#include "storage/vault_upkeep.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include <openssl/crypto.h>

#include "storage/event_db.hpp"
#include "storage/keys.hpp"
#include "storage/vault.hpp"

namespace voxos::vault_upkeep {

namespace {

constexpr const char* canary_record = "vault.canary";
constexpr std::string_view canary_text = "voxos vault canary";
/// Values one read of the vault column family takes.
constexpr std::size_t scan_page = 1024;

void wipe(std::string& text) {
  if (!text.empty())
    OPENSSL_cleanse(text.data(), text.size());
}

status not_configured(std::string_view key_id) {
  return status::error(errc::config_invalid,
                       "vault: values are sealed under key '" + std::string{key_id}
                         + "', which is not configured: keep it as a retired key "
                           "(VOXOS_VAULT_RETIRED_KEYS or vault_retired_keys) until "
                           "'voxosctl vault keys' shows it unused");
}

status wrong_key(std::string_view key_id) {
  return status::error(errc::vault_open_failed,
                       "vault: the key configured as '" + std::string{key_id}
                         + "' does not open this node's values sealed under that id "
                           "(a different VOXOS_VAULT_KEY, retired key or secrets file?)");
}

/// Calls `each(entry)` for every value of the vault column family.
status for_each_sealed(const event_db& db, const std::function<status(sealed_entry&)>& each) {
  std::string after_tenant, after_record;
  while (true) {
    auto entries = db.scan_sealed(after_tenant, after_record, scan_page);
    if (!entries)
      return entries.error();
    for (auto& entry : *entries)
      if (auto st = each(entry); !st)
        return st;
    if (entries->size() < scan_page)
      return status::ok();
    after_tenant = entries->back().tenant;
    after_record = entries->back().record_id;
  }
}

/// Tallies values per key id; with `check`, refuses a key id `keys` lacks
/// and opens the first value of each id.
result<std::map<std::string, uint64_t, std::less<>>> tally(const event_db& db, const vault& keys,
                                                           bool check) {
  std::map<std::string, uint64_t, std::less<>> counts;
  auto st = for_each_sealed(db, [&](sealed_entry& entry) -> status {
    auto key_id = vault::key_id_of(entry.sealed);
    if (!key_id)
      return status::error(errc::corrupt_data, "vault: the value of record '" + entry.record_id
                                                 + "' is not a sealed value");
    auto [slot, first] = counts.try_emplace(std::string{*key_id}, 0);
    ++slot->second;
    if (!check || !first)
      return status::ok();
    if (!keys.has_key(*key_id))
      return not_configured(*key_id);
    auto opened = keys.open(entry.tenant, entry.record_id, entry.sealed);
    if (!opened)
      return wrong_key(*key_id);
    wipe(*opened);
    return status::ok();
  });
  if (!st)
    return st;
  return counts;
}

std::vector<key_usage> usage_of(const vault& keys,
                                std::map<std::string, uint64_t, std::less<>> counts) {
  std::vector<key_usage> out;
  for (auto& key_id : keys.key_ids()) {
    key_usage row;
    row.active = key_id == keys.active_key_id();
    row.configured = true;
    if (auto found = counts.find(key_id); found != counts.end()) {
      row.values = found->second;
      counts.erase(found);
    }
    row.key_id = std::move(key_id);
    out.push_back(std::move(row));
  }
  for (auto& [key_id, values] : counts)
    out.push_back({key_id, false, false, values});
  std::stable_partition(out.begin(), out.end(), [](const key_usage& row) { return row.active; });
  return out;
}

} // namespace

result<std::vector<key_usage>> check_at_start(event_db& db, const vault& keys) {
  const std::string node{keys::node_tenant};
  // The canary: sealed on a first start, else it must open to its text.
  auto canary = db.get_sealed(node, canary_record);
  if (!canary)
    return canary.error();
  if (canary->has_value()) {
    auto key_id = vault::key_id_of(**canary).value_or("");
    if (!keys.has_key(key_id))
      return not_configured(key_id);
    auto opened = keys.open(node, canary_record, **canary);
    if (!opened || *opened != canary_text)
      return wrong_key(key_id);
  } else {
    auto sealed = keys.seal(node, canary_record, canary_text);
    if (!sealed)
      return sealed.error();
    if (auto put = db.put_sealed(node, canary_record, *sealed); !put)
      return put;
  }
  // Every other value: its key configured, and the right key for its id.
  auto counts = tally(db, keys, /*check=*/true);
  if (!counts)
    return counts.error();
  return usage_of(keys, std::move(*counts));
}

result<std::vector<key_usage>> usage(const event_db& db, const vault& keys) {
  auto counts = tally(db, keys, /*check=*/false);
  if (!counts)
    return counts.error();
  return usage_of(keys, std::move(*counts));
}

status reseal_batch(event_db& db, const vault& keys, std::size_t max_values,
                    reseal_cursor& cursor) {
  auto entries = db.scan_sealed(cursor.after_tenant, cursor.after_record, max_values);
  if (!entries)
    return entries.error();
  // Opened and sealed afresh one by one; written in one batch, each only if
  // its record still holds what was read.
  std::vector<sealed_replacement> replacements;
  uint64_t unopened = 0;
  for (auto& entry : *entries) {
    auto key_id = vault::key_id_of(entry.sealed);
    if (key_id && *key_id == keys.active_key_id())
      continue;
    auto opened = keys.open(entry.tenant, entry.record_id, entry.sealed);
    if (!opened) {
      ++unopened;
      continue;
    }
    auto sealed = keys.seal(entry.tenant, entry.record_id, *opened);
    wipe(*opened);
    if (!sealed)
      return sealed.error();
    replacements.push_back(
      {entry.tenant, entry.record_id, std::move(entry.sealed), std::move(*sealed)});
  }
  auto applied = db.replace_sealed(replacements);
  if (!applied)
    return applied.error();
  cursor.resealed += *applied;
  cursor.unopened += unopened;
  cursor.done = entries->size() < max_values;
  if (!entries->empty()) {
    cursor.after_tenant = entries->back().tenant;
    cursor.after_record = entries->back().record_id;
  }
  return status::ok();
}

} // namespace voxos::vault_upkeep
