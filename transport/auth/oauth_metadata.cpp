#include "transport/auth/oauth_metadata.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "transport/url_policy.hpp"

namespace voxos::auth {

namespace {

using nlohmann::json;

status malformed(std::string what) {
  return status::error(errc::bad_json, std::move(what));
}

/// Origin and path (without query) of `url`; nullopt if it does not parse.
std::optional<std::pair<std::string, std::string>> split(std::string_view url) {
  auto parsed = parse_url(url);
  if (!parsed)
    return std::nullopt;
  auto path = parsed->path_and_query.substr(0, parsed->path_and_query.find('?'));
  parsed->path_and_query = "/";
  auto origin = normalised(*parsed);
  origin.pop_back(); // the "/"
  return std::make_pair(std::move(origin), std::move(path));
}

/// Reads an optional array of strings.
bool read_strings(const json& doc, const char* name, std::vector<std::string>& out,
                  bool* present = nullptr) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null())
    return true;
  if (!it->is_array())
    return false;
  for (const auto& item : *it) {
    if (!item.is_string())
      return false;
    out.push_back(item.get<std::string>());
  }
  if (present != nullptr)
    *present = true;
  return true;
}

bool read_string(const json& doc, const char* name, std::string& out) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null())
    return true;
  if (!it->is_string())
    return false;
  out = it->get<std::string>();
  return true;
}

bool read_bool(const json& doc, const char* name, bool& out) {
  auto it = doc.find(name);
  if (it == doc.end() || it->is_null())
    return true;
  if (!it->is_boolean())
    return false;
  out = it->get<bool>();
  return true;
}

} // namespace

bool lists(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

std::string origin_of(std::string_view url) {
  auto parts = split(url);
  return parts ? parts->first : std::string{};
}

std::vector<std::string> resource_metadata_urls(std::string_view server_url) {
  std::vector<std::string> out;
  auto parts = split(server_url);
  if (!parts)
    return out;
  auto& [origin, path] = *parts;
  const std::string well_known = "/.well-known/oauth-protected-resource";
  if (path != "/" && !path.empty()) {
    auto trimmed = path.back() == '/' ? path.substr(0, path.size() - 1) : path;
    out.push_back(origin + well_known + trimmed);
  }
  out.push_back(origin + well_known);
  return out;
}

std::vector<std::string> server_metadata_urls(std::string_view issuer) {
  std::vector<std::string> out;
  auto parts = split(issuer);
  if (!parts)
    return out;
  auto& [origin, path] = *parts;
  if (!path.empty() && path.back() == '/')
    path.pop_back();
  if (path.empty()) {
    out.push_back(origin + "/.well-known/oauth-authorization-server");
    out.push_back(origin + "/.well-known/openid-configuration");
  } else {
    out.push_back(origin + "/.well-known/oauth-authorization-server" + path);
    out.push_back(origin + "/.well-known/openid-configuration" + path);
    out.push_back(origin + path + "/.well-known/openid-configuration");
  }
  return out;
}

result<resource_metadata> parse_resource_metadata(const json& doc) {
  if (!doc.is_object())
    return malformed("protected resource metadata: not a JSON object");
  resource_metadata out;
  if (!doc.contains("resource") || !doc["resource"].is_string())
    return malformed("protected resource metadata: resource: required string");
  out.resource = doc["resource"].get<std::string>();
  if (!read_strings(doc, "authorization_servers", out.authorization_servers))
    return malformed("protected resource metadata: authorization_servers: array of strings");
  if (!read_strings(doc, "scopes_supported", out.scopes_supported, &out.has_scopes_supported))
    return malformed("protected resource metadata: scopes_supported: array of strings");
  return out;
}

bool resource_matches(std::string_view resource, std::string_view server_url) {
  auto declared = split(resource);
  auto server = split(server_url);
  if (!declared || !server || declared->first != server->first)
    return false;
  const auto& prefix = declared->second;
  const auto& path = server->second;
  if (prefix == path || prefix == "/")
    return true;
  if (path.compare(0, prefix.size(), prefix) != 0)
    return false;
  // Under it at a segment boundary: "/mcp" covers "/mcp/x", not "/mcpx".
  return prefix.back() == '/' || path[prefix.size()] == '/';
}

result<server_metadata> parse_server_metadata(const json& doc) {
  if (!doc.is_object())
    return malformed("authorization server metadata: not a JSON object");
  server_metadata out;
  if (!doc.contains("issuer") || !doc["issuer"].is_string())
    return malformed("authorization server metadata: issuer: required string");
  out.issuer = doc["issuer"].get<std::string>();
  struct text_field {
    const char* name;
    std::string* into;
  };
  for (auto [name, into] : {text_field{"authorization_endpoint", &out.authorization_endpoint},
                            text_field{"token_endpoint", &out.token_endpoint},
                            text_field{"registration_endpoint", &out.registration_endpoint}})
    if (!read_string(doc, name, *into))
      return malformed(std::string{"authorization server metadata: "} + name + ": string");
  struct list_field {
    const char* name;
    std::vector<std::string>* into;
  };
  for (auto [name, into] :
       {list_field{"scopes_supported", &out.scopes_supported},
        list_field{"response_types_supported", &out.response_types_supported},
        list_field{"grant_types_supported", &out.grant_types_supported},
        list_field{"code_challenge_methods_supported", &out.code_challenge_methods_supported},
        list_field{"token_endpoint_auth_methods_supported",
                   &out.token_endpoint_auth_methods_supported}})
    if (!read_strings(doc, name, *into))
      return malformed(std::string{"authorization server metadata: "} + name
                       + ": array of strings");
  if (!read_bool(doc, "client_id_metadata_document_supported",
                 out.client_id_metadata_document_supported))
    return malformed(
      "authorization server metadata: client_id_metadata_document_supported: boolean");
  if (!read_bool(doc, "authorization_response_iss_parameter_supported",
                 out.iss_parameter_supported))
    return malformed(
      "authorization server metadata: authorization_response_iss_parameter_supported: boolean");
  return out;
}

server_metadata default_server_metadata(std::string_view origin) {
  server_metadata out;
  out.issuer = std::string{origin};
  out.authorization_endpoint = out.issuer + "/authorize";
  out.token_endpoint = out.issuer + "/token";
  out.registration_endpoint = out.issuer + "/register";
  out.code_challenge_methods_supported = {"S256"};
  out.defaulted = true;
  return out;
}

} // namespace voxos::auth
