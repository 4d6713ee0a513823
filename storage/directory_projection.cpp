#include "storage/directory_projection.hpp"

#include <nlohmann/json.hpp>

#include "storage/keys.hpp"

namespace voxos::directory {

namespace {

using nlohmann::json;

status refuse(const std::string& what) {
  return status::error(errc::corrupt_data, "directory event: " + what);
}

// Reads a string field that must be present.
bool get_string(const json& doc, const char* name, std::string& out) {
  auto found = doc.find(name);
  if (found == doc.end() || !found->is_string())
    return false;
  out = found->get<std::string>();
  return true;
}

std::string token_value(const std::string& label, const std::string& hash, int64_t created_us,
                        bool revoked) {
  return json{{"label", label}, {"hash", hash}, {"created_us", created_us}, {"revoked", revoked}}
    .dump();
}

} // namespace

status project(const event_record& ev, std::vector<state_write>& out) {
  if (ev.tenant != keys::node_tenant || ev.stream != stream)
    return status::ok();
  auto doc = json::parse(ev.data, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return refuse("data is not a JSON object");
  std::string tenant_id;
  if (!get_string(doc, "tenant_id", tenant_id) || !keys::valid_tenant(tenant_id)
      || tenant_id == keys::node_tenant)
    return refuse("tenant_id missing or malformed");
  auto created = doc.find("created_us");
  if (created == doc.end() || !created->is_number_integer())
    return refuse("created_us missing");
  auto created_us = created->get<int64_t>();
  if (ev.type == "tenant.created") {
    std::string name;
    if (!get_string(doc, "name", name))
      return refuse("name missing");
    out.push_back(
      {tenant_key_prefix + tenant_id, json{{"name", name}, {"created_us", created_us}}.dump()});
    return status::ok();
  }
  std::string token_id, label, hash;
  if (!get_string(doc, "token_id", token_id) || !keys::valid_stream(token_id)
      || !get_string(doc, "label", label) || !get_string(doc, "hash", hash))
    return refuse("token fields missing or malformed");
  auto key = token_key_prefix + tenant_id + "/" + token_id;
  if (ev.type == "token.issued") {
    out.push_back({key, token_value(label, hash, created_us, false)});
    return status::ok();
  }
  if (ev.type == "token.revoked") {
    out.push_back({key, token_value(label, hash, created_us, true)});
    return status::ok();
  }
  return refuse("unknown type");
}

std::string tenant_created(const tenant_record& tenant) {
  return json{
    {"tenant_id", tenant.tenant_id}, {"name", tenant.name}, {"created_us", tenant.created_us}}
    .dump();
}

namespace {

std::string token_event(const token_record& token, const std::string& hash) {
  return json{{"tenant_id", token.tenant_id},
              {"token_id", token.token_id},
              {"label", token.label},
              {"hash", hash},
              {"created_us", token.created_us}}
    .dump();
}

} // namespace

std::string token_issued(const token_record& token, const std::string& hash) {
  return token_event(token, hash);
}

std::string token_revoked(const token_record& token, const std::string& hash) {
  return token_event(token, hash);
}

result<tenant_record> decode_tenant(const std::string& key, const std::string& value) {
  std::string prefix = tenant_key_prefix;
  auto doc = json::parse(value, nullptr, false);
  if (key.compare(0, prefix.size(), prefix) != 0 || doc.is_discarded() || !doc.is_object()
      || !doc.contains("name") || !doc.contains("created_us"))
    return status::error(errc::corrupt_data, "malformed tenant projection entry");
  tenant_record out;
  out.tenant_id = key.substr(prefix.size());
  out.name = doc["name"].get<std::string>();
  out.created_us = doc["created_us"].get<int64_t>();
  return out;
}

result<stored_token> decode_token(const std::string& key, const std::string& value) {
  std::string prefix = token_key_prefix;
  auto doc = json::parse(value, nullptr, false);
  auto rest =
    key.compare(0, prefix.size(), prefix) == 0 ? key.substr(prefix.size()) : std::string{};
  auto slash = rest.find('/');
  if (slash == std::string::npos || doc.is_discarded() || !doc.is_object() || !doc.contains("label")
      || !doc.contains("hash") || !doc.contains("created_us") || !doc.contains("revoked"))
    return status::error(errc::corrupt_data, "malformed token projection entry");
  stored_token out;
  out.record.tenant_id = rest.substr(0, slash);
  out.record.token_id = rest.substr(slash + 1);
  out.record.label = doc["label"].get<std::string>();
  out.record.created_us = doc["created_us"].get<int64_t>();
  out.record.revoked = doc["revoked"].get<bool>();
  out.hash = doc["hash"].get<std::string>();
  return out;
}

} // namespace voxos::directory
