#include "actors/tenant/server_setup.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include <nlohmann/json.hpp>

#include "actors/mcp/discovery.hpp"
#include "config/presets.hpp"
#include "transport/ascii.hpp"
#include "transport/http_client.hpp"

namespace voxos::server_setup {

using json = nlohmann::json;

namespace {

constexpr std::size_t max_headers = 16;
constexpr std::size_t max_header_name = 64;
constexpr std::size_t max_header_value = 4096;
constexpr std::size_t max_label = 200;

/// Headers the transport sets itself; a record may not override them.
bool is_reserved_header(std::string_view name) {
  static constexpr std::string_view reserved[] = {"host",
                                                  "accept",
                                                  "content-type",
                                                  "content-length",
                                                  "connection",
                                                  "transfer-encoding",
                                                  "mcp-session-id",
                                                  "mcp-protocol-version",
                                                  "last-event-id",
                                                  "upgrade",
                                                  "te",
                                                  "expect",
                                                  "keep-alive",
                                                  "proxy-authorization",
                                                  "accept-encoding",
                                                  "cookie"};
  return std::any_of(std::begin(reserved), std::end(reserved),
                     [name](std::string_view field) { return equals_ignoring_case(name, field); });
}

bool is_header_value(std::string_view text) {
  return !text.empty() && text.size() <= max_header_value
         && std::all_of(text.begin(), text.end(),
                        [](unsigned char c) { return c >= 0x20 && c < 0x7f; });
}

result<http_header_list> read_headers(const json& obj) {
  if (!obj.is_object())
    return status::error(errc::wrong_type, "headers: expected an object of strings");
  if (obj.size() > max_headers)
    return status::error(errc::out_of_range, "headers: at most 16");
  http_header_list out;
  for (const auto& [name, value] : obj.items()) {
    if (name.size() > max_header_name || !is_http_token(name))
      return status::error(errc::out_of_range, "headers: a name must be 1 to 64 token characters");
    if (is_reserved_header(name))
      return status::error(errc::out_of_range,
                           "headers: a header the transport sets itself cannot be overridden");
    if (!value.is_string())
      return status::error(errc::wrong_type, "headers: values must be strings");
    if (!is_header_value(value.get_ref<const std::string&>()))
      return status::error(errc::out_of_range,
                           "headers: a value must be 1 to 4096 visible ASCII characters");
    out.emplace_back(name, value.get<std::string>());
  }
  return out;
}

std::optional<auth_mode> oauth_mode_from(std::string_view text) {
  for (auto mode : {auth_mode::oauth_authorization_code, auth_mode::oauth_client_credentials,
                    auth_mode::private_key_jwt, auth_mode::brokered_oauth})
    if (to_string(mode) == text)
      return mode;
  return std::nullopt;
}

result<std::string> optional_string(const json& body, const char* key) {
  auto found = body.find(key);
  if (found == body.end())
    return std::string{};
  if (!found->is_string())
    return status::error(errc::wrong_type, std::string{key} + ": expected a string");
  return found->get<std::string>();
}

} // namespace

result<new_server> from_request(const json& body, const url_policy& policy,
                                const std::string& tenant_id, const std::string& server_id) {
  if (!body.is_object())
    return status::error(errc::bad_json, "server: expected one JSON object");
  static constexpr std::string_view known[] = {"preset_id", "variant", "url", "transport",
                                               "label",     "headers", "auth"};
  for (const auto& [key, value] : body.items())
    if (std::find(std::begin(known), std::end(known), key) == std::end(known))
      return status::error(errc::unknown_field, "server: unknown field");
  auto preset_id = optional_string(body, "preset_id");
  auto variant = optional_string(body, "variant");
  auto url = optional_string(body, "url");
  auto transport = optional_string(body, "transport");
  auto label = optional_string(body, "label");
  auto auth = optional_string(body, "auth");
  for (const auto* field : {&preset_id, &variant, &url, &transport, &label, &auth})
    if (!*field)
      return field->error();
  if (label->size() > max_label)
    return status::error(errc::out_of_range, "label: at most 200 bytes");
  http_header_list headers;
  if (auto found = body.find("headers"); found != body.end()) {
    auto read = read_headers(*found);
    if (!read)
      return read.error();
    headers = std::move(*read);
  }

  new_server out;
  auto& rec = out.record;
  rec.server_id = server_id;
  rec.tenant_id = tenant_id;
  if (!preset_id->empty()) {
    const preset* p = find_preset(*preset_id);
    if (p == nullptr)
      return status::error(errc::not_found, "preset_id: no such preset");
    if (!transport->empty())
      return status::error(errc::out_of_range, "transport: set by the preset");
    if (!auth->empty())
      return status::error(errc::out_of_range, "auth: set by the preset");
    rec.preset_id = p->id;
    rec.transport = p->transport;
    rec.auth = p->auth;
    std::string canonical = p->url;
    if (!p->variants.empty()) {
      auto chosen = std::find_if(p->variants.begin(), p->variants.end(),
                                 [&](const preset_variant& v) { return v.id == *variant; });
      if (chosen == p->variants.end())
        return status::error(errc::not_found, "variant: no such variant of this preset");
      rec.variant = chosen->id;
      canonical = chosen->url;
    } else if (!variant->empty()) {
      return status::error(errc::out_of_range, "variant: this preset has none");
    }
    if (p->url_rule == "https_any") {
      if (url->empty())
        return status::error(errc::missing_field, "url: required by this preset");
      canonical = *url;
    } else if (!url->empty()) {
      return status::error(errc::out_of_range, "url: set by the preset");
    }
    rec.url = canonical;
    // Local Compose presets exist only where their exact URL is registered.
    if (p->local_compose) {
      auto checked = policy.check(canonical, "mcp");
      if (!checked || !checked->registered)
        return status::error(errc::forbidden,
                             "this local preset's URL is not registered on this node");
    }
    switch (p->auth) {
    case auth_mode::none:
      if (!headers.empty())
        return status::error(errc::out_of_range, "headers: this preset takes none");
      break;
    case auth_mode::static_bearer:
    case auth_mode::brokered_oauth:
      if (headers.size() != 1 || !equals_ignoring_case(headers.front().first, "Authorization")
          || headers.front().second.rfind("Bearer ", 0) != 0)
        return status::error(errc::missing_field,
                             "headers: this preset needs exactly an Authorization: Bearer header");
      break;
    case auth_mode::api_key_header:
      if (headers.size() != 1 || !equals_ignoring_case(headers.front().first, p->api_key_header))
        return status::error(errc::missing_field,
                             "headers: this preset needs exactly its API-key header");
      break;
    case auth_mode::oauth_authorization_code:
    case auth_mode::oauth_client_credentials:
    case auth_mode::private_key_jwt:
      // Signed in (or given a client) after creation, through the sign-in
      // routes: no headers.
      if (!headers.empty())
        return status::error(errc::out_of_range, "headers: this preset signs in with OAuth");
      break;
    case auth_mode::static_headers:
      break;
    }
    for (const auto& tool : p->tools)
      if (tool.starter_grant && tool.enabled_by_default)
        rec.allowed_tools.push_back(tool.name);
    rec.label = label->empty() ? p->label : *label;
  } else {
    if (url->empty())
      return status::error(errc::missing_field, "url: required for a custom server");
    if (!variant->empty())
      return status::error(errc::out_of_range, "variant: only for presets");
    if (transport->empty() || *transport == "streamable_http")
      rec.transport = transport_kind::streamable_http;
    else if (*transport == "sse")
      rec.transport = transport_kind::sse;
    else
      return status::error(errc::out_of_range,
                           "transport: \"streamable_http\" or \"sse\" (stdio is never accepted)");
    rec.url = *url;
    rec.auth = headers.empty() ? auth_mode::none : auth_mode::static_headers;
    if (!auth->empty()) {
      auto mode = oauth_mode_from(*auth);
      if (!mode)
        return status::error(errc::out_of_range,
                             "auth: \"oauth_authorization_code\", \"oauth_client_credentials\" "
                             "or \"private_key_jwt\" (static credentials go in headers)");
      // A brokered server takes exactly its endpoint bearer; the others none.
      if (*mode == auth_mode::brokered_oauth
            ? (headers.size() != 1 || !equals_ignoring_case(headers.front().first, "Authorization")
               || headers.front().second.rfind("Bearer ", 0) != 0)
            : !headers.empty())
        return status::error(errc::out_of_range,
                             *mode == auth_mode::brokered_oauth
                               ? "headers: a brokered server needs exactly its endpoint bearer "
                                 "(Authorization: Bearer ...)"
                               : "headers: not with an OAuth auth mode");
      rec.auth = *mode;
    }
  }
  // OAuth servers need signing in (or a client) before their tools are usable.
  rec.needs_auth = is_oauth(rec.auth);
  auto checked = policy.check(rec.url, "mcp");
  if (!checked)
    return checked.error();
  rec.url = checked->normalised;
  if (rec.label.empty())
    rec.label = label->empty() ? checked->url.host : *label;
  out.headers = std::move(headers);
  return out;
}

std::string headers_to_text(const http_header_list& headers) {
  json out = json::array();
  for (const auto& [name, value] : headers)
    out.push_back(json::array({name, value}));
  return out.dump();
}

result<http_header_list> headers_from_text(std::string_view text) {
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_array())
    return status::error(errc::corrupt_data, "sealed headers do not decode");
  http_header_list out;
  for (const auto& pair : doc) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
      return status::error(errc::corrupt_data, "sealed headers do not decode");
    out.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
  }
  return out;
}

mcp_server_record with_discovery(mcp_server_record rec, std::vector<tool_definition> tools,
                                 std::size_t max_tools, int64_t now_us) {
  auto kept = bound_cache(std::move(tools), rec.allowed_tools, max_tools);
  rec.cached_tools = tool_cache{std::move(kept)};
  rec.cache_version = "d" + std::to_string(now_us);
  rec.discovered_us = now_us;
  rec.connected = true;
  rec.last_test = {now_us, true, {}, {}};
  return rec;
}

mcp_server_record with_failed_test(mcp_server_record rec, errc code, std::string message,
                                   int64_t now_us) {
  rec.connected = false;
  rec.last_test = {now_us, false, std::string{to_string(code)}, std::move(message)};
  return rec;
}

json offered_catalog(const url_policy& policy) {
  auto presets = json::array();
  for (const auto& p : preset_catalog()) {
    if (p.local_compose) {
      auto checked = policy.check(p.url, "mcp");
      if (!checked || !checked->registered)
        continue;
    }
    json entry{{"id", p.id},
               {"label", p.label},
               {"transport", to_string(p.transport)},
               {"auth", to_string(p.auth)},
               {"url_required", p.url_rule == "https_any"},
               {"local_compose", p.local_compose},
               {"platform_default", p.platform_default}};
    if (!p.url.empty())
      entry["url"] = p.url;
    if (!p.api_key_header.empty())
      entry["api_key_header"] = p.api_key_header;
    if (p.auth == auth_mode::oauth_authorization_code)
      entry["oauth_dynamic_registration"] = p.oauth_dynamic_registration;
    auto variants = json::array();
    for (const auto& v : p.variants)
      variants.push_back({{"id", v.id}, {"label", v.label}, {"url", v.url}});
    entry["variants"] = std::move(variants);
    auto tools = json::array();
    for (const auto& t : p.tools)
      tools.push_back({{"name", t.name},
                       {"read_only", t.read_only},
                       {"enabled_by_default", t.enabled_by_default},
                       {"starter_grant", t.starter_grant},
                       {"risk", to_string(t.risk)}});
    entry["tools"] = std::move(tools);
    presets.push_back(std::move(entry));
  }
  return json{{"presets", std::move(presets)}};
}

} // namespace voxos::server_setup
