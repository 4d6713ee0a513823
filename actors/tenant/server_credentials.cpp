// A server's credentials; see server_credentials.hpp.
#include "actors/tenant/server_credentials.hpp"

#include <optional>

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>

#include "actors/tenant/server_setup.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "config/base64.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"

namespace voxos::server_credentials {

namespace {

/// Server records one tenant may hold, and then some.
constexpr std::size_t max_servers_read = 100'000;

void wipe(std::string& text) {
  if (!text.empty())
    OPENSSL_cleanse(text.data(), text.size());
}

std::string to_base64(const std::string& bytes) {
  return base64::encode(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                        base64::alphabet::standard, true);
}

} // namespace

result<std::string> seal_text(server_keys& keys, const std::string& tenant_id,
                              const std::string& server_id, std::string_view purpose,
                              std::string_view plaintext) {
  auto sealed = keys.seal_for_server(tenant_id, server_id, purpose, plaintext);
  if (!sealed)
    return sealed.error();
  return to_base64(*sealed);
}

result<std::string> open_text(server_keys& keys, const std::string& tenant_id,
                              const std::string& server_id, std::string_view purpose,
                              const std::string& sealed_base64) {
  auto raw = base64::decode(sealed_base64);
  if (!raw)
    return status::error(errc::corrupt_data, "a server's sealed value does not decode");
  return keys.open_for_server(tenant_id, server_id, purpose, *raw);
}

namespace {

/// The record nodes before data keys sealed a server's headers for.
std::string legacy_headers_record(const std::string& server_id) {
  return "server/" + server_id + "/headers";
}

/// The server's headers resealed under its data key, if a node key sealed
/// them; nullopt if they are under the data key already (or there are none).
result<std::optional<std::string>> resealed_headers(server_keys& keys, const vault& node_keys,
                                                    const std::string& tenant_id,
                                                    const mcp_server_record& rec) {
  if (rec.sealed_headers.empty())
    return std::optional<std::string>{};
  auto raw = base64::decode(rec.sealed_headers);
  if (!raw)
    return status::error(errc::corrupt_data, "the sealed headers of server " + rec.server_id
                                               + " of tenant " + tenant_id + " do not decode");
  auto key_id = vault::key_id_of(*raw);
  if (key_id && *key_id == server_keys::data_key_id(rec.server_id))
    return std::optional<std::string>{};
  const std::string where = "the static headers of server " + rec.server_id + " of tenant "
                            + tenant_id + " are sealed under key '"
                            + std::string{key_id.value_or("")} + "'";
  if (!key_id || !node_keys.has_key(*key_id))
    return status::error(errc::config_invalid,
                         where
                           + ", which is not configured: keep it as a retired key "
                             "(VOXOS_VAULT_RETIRED_KEYS or vault_retired_keys)");
  auto text = node_keys.open(tenant_id, legacy_headers_record(rec.server_id), *raw);
  if (!text)
    return status::error(errc::vault_open_failed, where + ", which does not open them");
  auto sealed = keys.seal_for_server(tenant_id, rec.server_id, headers_purpose, *text);
  wipe(*text);
  if (!sealed)
    return sealed.error();
  return std::optional<std::string>{to_base64(*sealed)};
}

/// Reseals one tenant's node-key-sealed headers; answers how many servers.
result<std::size_t> reseal_tenant(event_db& db, server_keys& keys, const vault& node_keys,
                                  const std::string& tenant_id, int64_t now_us) {
  auto entries =
    db.scan_state(tenant_events::state_prefix(tenant_id) + "server/", max_servers_read);
  if (!entries)
    return entries.error();
  append_request req;
  req.tenant = tenant_id;
  req.stream = tenant_events::stream;
  for (const auto& [key, value] : *entries) {
    auto doc = nlohmann::json::parse(value, nullptr, false);
    auto rec = doc.is_discarded() ? result<mcp_server_record>{status::error(
                 errc::corrupt_data, "a stored server record is not JSON")}
                                  : tenant_events::server_from_json(doc);
    if (!rec)
      return rec.error();
    auto resealed = resealed_headers(keys, node_keys, tenant_id, *rec);
    if (!resealed)
      return resealed.error();
    if (!resealed->has_value())
      continue;
    rec->sealed_headers = std::move(**resealed);
    req.events.push_back(tenant_events::server_upserted(*rec));
  }
  if (req.events.empty())
    return std::size_t{0};
  auto appended = db.append(req, now_us);
  if (!appended)
    return appended.error();
  return req.events.size();
}

} // namespace

result<std::string> seal_headers(server_keys& keys, const std::string& tenant_id,
                                 const std::string& server_id, const http_header_list& headers) {
  auto plain = server_setup::headers_to_text(headers);
  auto sealed = keys.seal_for_server(tenant_id, server_id, headers_purpose, plain);
  wipe(plain);
  if (!sealed)
    return sealed.error();
  return to_base64(*sealed);
}

result<http_header_list> open_headers(server_keys& keys, const std::string& tenant_id,
                                      const mcp_server_record& rec) {
  if (rec.sealed_headers.empty())
    return http_header_list{};
  auto raw = base64::decode(rec.sealed_headers);
  if (!raw)
    return status::error(errc::corrupt_data, "a server's sealed headers do not decode");
  auto text = keys.open_for_server(tenant_id, rec.server_id, headers_purpose, *raw);
  if (!text)
    return text.error();
  auto headers = server_setup::headers_from_text(*text);
  wipe(*text);
  return headers;
}

result<upkeep_report> upkeep_at_start(event_db& db, server_keys& keys, const vault& node_keys,
                                      const std::vector<std::string>& tenant_ids, int64_t now_us) {
  upkeep_report report;
  // Headers an earlier node sealed under a node key: to the data key.
  for (const auto& tenant_id : tenant_ids) {
    auto resealed = reseal_tenant(db, keys, node_keys, tenant_id, now_us);
    if (!resealed)
      return resealed.error();
    report.resealed += *resealed;
  }
  // Data keys whose server is gone: erased now.
  auto stored = keys.stored_keys();
  if (!stored)
    return stored.error();
  for (const auto& [tenant_id, server_id] : *stored) {
    auto record = db.get_state(tenant_events::state_prefix(tenant_id) + "server/" + server_id);
    if (!record)
      return record.error();
    if (record->has_value())
      continue;
    if (auto erased = keys.erase_server_key(tenant_id, server_id); !erased)
      return erased;
    ++report.swept;
  }
  return report;
}

} // namespace voxos::server_credentials
