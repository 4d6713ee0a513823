#include "transport/auth/oauth_client.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>

#include "config/base64.hpp"
#include "config/clock.hpp"
#include "transport/ascii.hpp"
#include "transport/auth/auth_crypto.hpp"
#include "transport/url_policy.hpp"

namespace voxos::auth {

namespace {

using nlohmann::json;

/// Lifetime of a private-key JWT client assertion (RFC 7523: short).
constexpr int64_t assertion_lifetime_s = 60;

/// The longest expires_in taken (about 317 years): a server's 1e300 would
/// overflow the expiry's milliseconds (undefined; in practice a token that
/// is always expired, refreshed before every request).
constexpr double max_expires_in_s = 1e10;

/// The error codes RFC 6749 (5.2, 4.1.2.1) and RFC 6750 define: a server's
/// code is named in an error only when it is one of these.
std::string_view known_oauth_error(std::string_view code) {
  static constexpr std::string_view known[] = {
    "invalid_request",        "invalid_client",
    "invalid_grant",          "unauthorized_client",
    "unsupported_grant_type", "invalid_scope",
    "access_denied",          "unsupported_response_type",
    "server_error",           "temporarily_unavailable",
    "invalid_token",          "insufficient_scope",
    "invalid_target",         "invalid_client_metadata",
    "invalid_redirect_uri"};
  for (auto item : known)
    if (item == code)
      return item;
  return "an unlisted error";
}

/// Member `name` of `doc` when it is a string, `fallback` when `doc` lacks it
/// (or is no object), nullopt when it has another type: where json::value()
/// would throw on a server's answer.
std::optional<std::string> text_member(const json& doc, const char* name,
                                       std::string fallback = {}) {
  auto it = doc.find(name);
  if (it == doc.end())
    return fallback;
  if (!it->is_string())
    return std::nullopt;
  return it->get<std::string>();
}

std::vector<std::string> split_scope(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string{text}};
  std::string item;
  while (in >> item)
    out.push_back(item);
  return out;
}

std::string with_query(const std::string& url, const form_fields& fields) {
  auto query = form_encode(fields);
  // form_encode writes '+' for a space; in a query '%20' is read the same
  // way by form decoders and by generic URL parsers.
  std::string encoded;
  for (char ch : query)
    encoded += ch == '+' ? std::string{"%20"} : std::string(1, ch);
  return url + (url.find('?') == std::string::npos ? "?" : "&") + encoded;
}

} // namespace

std::string_view to_string(client_auth_method x) noexcept {
  switch (x) {
  case client_auth_method::none:
    return "none";
  case client_auth_method::client_secret_basic:
    return "client_secret_basic";
  case client_auth_method::client_secret_post:
    return "client_secret_post";
  case client_auth_method::private_key_jwt:
    return "private_key_jwt";
  }
  return "none";
}

std::optional<client_auth_method> client_auth_method_from(std::string_view text) {
  for (auto x : {client_auth_method::none, client_auth_method::client_secret_basic,
                 client_auth_method::client_secret_post, client_auth_method::private_key_jwt})
    if (to_string(x) == text)
      return x;
  return std::nullopt;
}

std::string scope_union(std::string_view a, std::string_view b) {
  auto out = split_scope(a);
  for (auto& item : split_scope(b))
    if (std::find(out.begin(), out.end(), item) == out.end())
      out.push_back(std::move(item));
  std::string text;
  for (const auto& item : out)
    text += (text.empty() ? "" : " ") + item;
  return text;
}

// -- stored forms -------------------------------------------------------------

json client_registration::to_json() const {
  json out{{"issuer", issuer},
           {"client_id", client_id},
           {"method", to_string(method)},
           {"dynamic", dynamic},
           {"redirect_uri", redirect_uri}};
  if (!client_secret.empty())
    out["client_secret"] = client_secret;
  if (!private_key_pem.empty()) {
    out["private_key_pem"] = private_key_pem;
    out["signing_alg"] = signing_alg;
  }
  return out;
}

result<client_registration> client_registration::from_json(const json& doc) {
  auto bad = [] {
    return status::error(errc::corrupt_data, "stored OAuth client does not decode");
  };
  if (!doc.is_object() || !doc.contains("client_id") || !doc["client_id"].is_string())
    return bad();
  client_registration out;
  // json::value() throws on a member of another type: a record that does
  // not decode.
  try {
    out.issuer = doc.value("issuer", std::string{});
    out.client_id = doc["client_id"].get<std::string>();
    out.client_secret = doc.value("client_secret", std::string{});
    auto method = client_auth_method_from(doc.value("method", std::string{"none"}));
    if (!method)
      return bad();
    out.method = *method;
    out.private_key_pem = doc.value("private_key_pem", std::string{});
    out.signing_alg = doc.value("signing_alg", std::string{});
    out.dynamic = doc.value("dynamic", false);
    out.redirect_uri = doc.value("redirect_uri", std::string{});
  } catch (const json::exception&) {
    return bad();
  }
  return out;
}

json token_set::to_json() const {
  json out{{"access_token", access_token},
           {"scope", scope},
           {"expires_at_ms", expires_at_ms},
           {"issuer", issuer}};
  if (!refresh_token.empty())
    out["refresh_token"] = refresh_token;
  return out;
}

result<token_set> token_set::from_json(const json& doc) {
  if (!doc.is_object() || !doc.contains("access_token") || !doc["access_token"].is_string())
    return status::error(errc::corrupt_data, "stored tokens do not decode");
  token_set out;
  try { // json::value() throws on a member of another type
    out.access_token = doc["access_token"].get<std::string>();
    out.refresh_token = doc.value("refresh_token", std::string{});
    out.scope = doc.value("scope", std::string{});
    out.expires_at_ms = doc.value("expires_at_ms", int64_t{0});
    out.issuer = doc.value("issuer", std::string{});
  } catch (const json::exception&) {
    return status::error(errc::corrupt_data, "stored tokens do not decode");
  }
  return out;
}

bool token_set::expired(int64_t now, int64_t skew_ms) const {
  return expires_at_ms != 0 && now >= expires_at_ms - skew_ms;
}

// -- discovery ----------------------------------------------------------------

result<json> oauth_client::fetch_json(const std::string& url) const {
  auto got = fetch_.get(url, {{"Accept", "application/json"}});
  if (!got)
    return got.error();
  if (got->status != 200)
    return status::error(errc::not_found, "metadata answered HTTP " + std::to_string(got->status));
  auto doc = json::parse(got->body, nullptr, false);
  if (doc.is_discarded())
    return status::error(errc::bad_json, "metadata is not JSON");
  return doc;
}

result<discovery> oauth_client::discover(std::string_view server_url,
                                         const bearer_challenge& challenge) const {
  discovery out;
  out.server_url = std::string{server_url};
  // 1. Protected-resource metadata: the challenge's URL, else the well-known
  //    locations. The URL policy's refusal ends discovery (a server must not
  //    point the node at a private address); a missing document does not.
  //    A challenge that names its document is taken at its word: the
  //    well-known locations are not probed besides.
  std::vector<std::string> candidates;
  if (!challenge.resource_metadata.empty())
    candidates.push_back(challenge.resource_metadata);
  else
    candidates = resource_metadata_urls(server_url);
  for (const auto& url : candidates) {
    auto doc = fetch_json(url);
    if (!doc) {
      if (doc.error().code() == errc::forbidden || doc.error().code() == errc::out_of_range)
        return doc.error();
      continue;
    }
    auto parsed = parse_resource_metadata(*doc);
    if (!parsed)
      return parsed.error();
    out.resource = std::move(*parsed);
    out.has_resource_metadata = true;
    break;
  }
  std::string issuer;
  if (out.has_resource_metadata) {
    if (!resource_matches(out.resource.resource, server_url))
      return status::error(errc::forbidden,
                           "protected resource metadata names another resource than the server");
    if (out.resource.authorization_servers.empty())
      return status::error(errc::needs_auth,
                           "protected resource metadata names no authorization server");
    issuer = out.resource.authorization_servers.front();
    out.resource_indicator = out.resource.resource;
  } else {
    // The 2025-03-26 rule: the server's origin is its authorization server.
    issuer = origin_of(server_url);
    out.resource_indicator = std::string{server_url};
  }
  // 2. Authorization-server metadata, in the specification's order.
  for (const auto& url : server_metadata_urls(issuer)) {
    auto doc = fetch_json(url);
    if (!doc) {
      if (doc.error().code() == errc::forbidden || doc.error().code() == errc::out_of_range)
        return doc.error();
      continue;
    }
    auto parsed = parse_server_metadata(*doc);
    if (!parsed)
      return parsed.error();
    // RFC 8414 section 3.3: the issuer it was looked up for, exactly. The
    // 2025-03-26 revision (no protected-resource metadata) looked metadata
    // up by the server's origin and compared nothing: an issuer on that
    // origin is taken as the document says it.
    if (parsed->issuer != issuer
        && (out.has_resource_metadata || origin_of(parsed->issuer) != issuer))
      return status::error(errc::forbidden,
                           "authorization server metadata names another issuer than the one "
                           "it was looked up for");
    out.server = std::move(*parsed);
    return out;
  }
  if (!out.has_resource_metadata) {
    out.server = default_server_metadata(issuer);
    return out;
  }
  return status::error(errc::needs_auth, "no authorization server metadata found");
}

std::string oauth_client::select_scope(const discovery& found, const bearer_challenge& challenge,
                                       bool wants_refresh) const {
  std::string scope;
  if (challenge.has_scope && !challenge.scope.empty())
    scope = challenge.scope;
  else if (found.has_resource_metadata && found.resource.has_scopes_supported)
    for (const auto& item : found.resource.scopes_supported)
      scope += (scope.empty() ? "" : " ") + item;
  if (wants_refresh && !scope.empty() && lists(found.server.scopes_supported, "offline_access"))
    scope = scope_union(scope, "offline_access");
  return scope;
}

// -- clients ------------------------------------------------------------------

result<client_registration>
oauth_client::client_for(const discovery& found, const client_profile& profile,
                         const std::optional<client_registration>& known) const {
  const auto& issuer = found.server.issuer;
  if (known && known->issuer == issuer)
    return *known;
  if (profile.pre_registered && !profile.pre_registered->client_id.empty()) {
    // A client that has been used with one authorization server is never
    // presented to another (its secret would go with it).
    if (!profile.pre_registered->issuer.empty() && profile.pre_registered->issuer != issuer)
      return status::error(errc::needs_auth,
                           "the server moved to another authorization server than its client's");
    auto out = *profile.pre_registered;
    out.issuer = issuer;
    if (out.method == client_auth_method::none && !out.client_secret.empty())
      out.method = lists(found.server.token_endpoint_auth_methods_supported, "client_secret_basic")
                       || found.server.token_endpoint_auth_methods_supported.empty()
                     ? client_auth_method::client_secret_basic
                     : client_auth_method::client_secret_post;
    return out;
  }
  if (found.server.client_id_metadata_document_supported
      && !profile.metadata_document_url.empty()) {
    client_registration out;
    out.issuer = issuer;
    out.client_id = profile.metadata_document_url;
    out.method = client_auth_method::none;
    out.redirect_uri = profile.redirect_uri;
    return out;
  }
  if (found.server.registration_endpoint.empty())
    return status::error(errc::needs_auth,
                         "no way to register a client with the authorization server (no "
                         "pre-registered client, metadata document or registration endpoint)");
  // Dynamic registration (RFC 7591). No scope: a registered scope would cap
  // later requests and break step-up.
  const auto& offered = found.server.token_endpoint_auth_methods_supported;
  std::string method = "none";
  if (lists(profile.grant_types, "client_credentials") || lists(offered, "client_secret_basic"))
    method = "client_secret_basic";
  else if (lists(offered, "client_secret_post"))
    method = "client_secret_post";
  // OpenID registration's application type: "native" for a loopback or
  // localhost http redirect (a web client must use https and no localhost).
  std::string application_type = "web";
  if (auto redirect = parse_url(profile.redirect_uri);
      redirect && redirect->scheme == "http"
      && (redirect->host == "localhost"
          || (redirect->literal && classify(*redirect->literal) == address_class::loopback)))
    application_type = "native";
  json request{{"client_name", profile.client_name},
               {"grant_types", profile.grant_types},
               {"token_endpoint_auth_method", method},
               {"application_type", application_type}};
  if (!profile.redirect_uri.empty()) {
    request["redirect_uris"] = json::array({profile.redirect_uri});
    request["response_types"] = json::array({"code"});
  } else {
    request["response_types"] = json::array(); // a machine client: no code flow
  }
  auto answered = fetch_.post_json(found.server.registration_endpoint, request.dump());
  if (!answered)
    return answered.error();
  auto doc = json::parse(answered->body, nullptr, false);
  if (answered->status != 200 && answered->status != 201) {
    std::string code = text_member(doc, "error").value_or("");
    return status::error(errc::needs_auth,
                         "client registration refused (HTTP " + std::to_string(answered->status)
                           + (code.empty() ? "" : ", " + std::string{known_oauth_error(code)})
                           + ")");
  }
  if (!doc.is_object() || !doc.contains("client_id") || !doc["client_id"].is_string())
    return status::error(errc::bad_json, "client registration answer: client_id: required string");
  auto secret = text_member(doc, "client_secret");
  if (!secret)
    return status::error(errc::bad_json, "client registration answer: client_secret: string");
  auto method_text = text_member(doc, "token_endpoint_auth_method",
                                 secret->empty() ? "none" : "client_secret_basic");
  if (!method_text)
    return status::error(errc::bad_json,
                         "client registration answer: token_endpoint_auth_method: string");
  client_registration out;
  out.issuer = issuer;
  out.client_id = doc["client_id"].get<std::string>();
  out.client_secret = std::move(*secret);
  auto answered_method = client_auth_method_from(*method_text);
  out.method = answered_method ? *answered_method : client_auth_method::none;
  out.dynamic = true;
  out.redirect_uri = profile.redirect_uri;
  return out;
}

// -- the authorization request and its answer ---------------------------------

result<authorization_request> oauth_client::authorize(const discovery& found,
                                                      const client_registration& client,
                                                      const std::string& redirect_uri,
                                                      const std::string& scope,
                                                      std::string state) const {
  // PKCE S256 is required: a server that does not advertise it is refused
  // (the 2025-03-26 defaults assume it).
  if (!found.server.defaulted && !lists(found.server.code_challenge_methods_supported, "S256"))
    return status::error(errc::out_of_range,
                         "the authorization server does not advertise PKCE S256");
  if (found.server.authorization_endpoint.empty())
    return status::error(errc::needs_auth,
                         "the authorization server has no authorization endpoint");
  // The owner's browser is sent there: the same policy as every URL the
  // authorization work fetches (https and public, or registered).
  if (auto checked = fetch_.policy().check(found.server.authorization_endpoint, "oauth"); !checked)
    return checked.error();
  authorization_request out;
  auto pkce = make_pkce();
  out.state = state.empty() ? random_base64url(32) : std::move(state);
  out.verifier = std::move(pkce.verifier);
  out.redirect_uri = redirect_uri;
  out.scope = scope;
  form_fields fields{{"response_type", "code"},
                     {"client_id", client.client_id},
                     {"redirect_uri", redirect_uri},
                     {"code_challenge", pkce.challenge},
                     {"code_challenge_method", "S256"},
                     {"state", out.state},
                     {"resource", found.resource_indicator}};
  if (!scope.empty())
    fields.emplace_back("scope", scope);
  out.url = with_query(found.server.authorization_endpoint, fields);
  return out;
}

result<std::string> oauth_client::read_answer(const discovery& found, const form_fields& answer,
                                              const std::string& expected_state) const {
  auto field = [&answer](std::string_view name) -> const std::string* {
    for (const auto& [key, value] : answer)
      if (key == name)
        return &value;
    return nullptr;
  };
  if (const auto* error = field("error"))
    return status::error(errc::unauthorized, "the authorization server refused the sign-in ("
                                               + std::string{known_oauth_error(*error)} + ")");
  const auto* state = field("state");
  if (state == nullptr || state->size() != expected_state.size()
      || CRYPTO_memcmp(state->data(), expected_state.data(), expected_state.size()) != 0)
    return status::error(errc::unauthorized, "the authorization answer's state does not match");
  // RFC 9207: compared exactly, no normalisation.
  if (const auto* iss = field("iss")) {
    if (*iss != found.server.issuer)
      return status::error(errc::forbidden,
                           "the authorization answer comes from another issuer (iss)");
  } else if (found.server.iss_parameter_supported) {
    return status::error(errc::forbidden,
                         "the authorization answer lacks the iss its server advertises");
  }
  const auto* code = field("code");
  if (code == nullptr || code->empty())
    return status::error(errc::unauthorized, "the authorization answer carries no code");
  return *code;
}

// -- the token endpoint -------------------------------------------------------

result<token_set> oauth_client::token_request(const discovery& found,
                                              const client_registration& client, form_fields fields,
                                              const std::string& requested_scope) const {
  if (found.server.token_endpoint.empty())
    return status::error(errc::needs_auth, "the authorization server has no token endpoint");
  http_header_list headers;
  switch (client.method) {
  case client_auth_method::none:
    fields.emplace_back("client_id", client.client_id);
    break;
  case client_auth_method::client_secret_basic: {
    // RFC 6749 section 2.3.1: both parts form-encoded before base64.
    auto pair = form_encode({{"u", client.client_id}}).substr(2) + ":"
                + form_encode({{"p", client.client_secret}}).substr(2);
    headers.emplace_back("Authorization",
                         "Basic "
                           + base64::encode(reinterpret_cast<const unsigned char*>(pair.data()),
                                            pair.size(), base64::alphabet::standard, true));
    OPENSSL_cleanse(pair.data(), pair.size());
    break;
  }
  case client_auth_method::client_secret_post:
    fields.emplace_back("client_id", client.client_id);
    fields.emplace_back("client_secret", client.client_secret);
    break;
  case client_auth_method::private_key_jwt: {
    auto key = signing_key::from_pem(client.private_key_pem, client.signing_alg);
    if (!key)
      return key.error();
    auto iat = wall_clock_ms() / 1000;
    json claims{{"iss", client.client_id},           {"sub", client.client_id},
                {"aud", found.server.issuer},        {"iat", iat},
                {"exp", iat + assertion_lifetime_s}, {"jti", random_base64url(16)}};
    auto assertion = make_jwt(*key, claims);
    if (!assertion)
      return assertion.error();
    fields.emplace_back("client_id", client.client_id);
    fields.emplace_back("client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    fields.emplace_back("client_assertion", std::move(*assertion));
    break;
  }
  }
  auto answered = fetch_.post_form(found.server.token_endpoint, fields, headers);
  for (auto& [name, value] : fields)
    OPENSSL_cleanse(value.data(), value.size());
  if (!answered)
    return answered.error();
  auto doc = json::parse(answered->body, nullptr, false);
  if (answered->status != 200) {
    std::string code = text_member(doc, "error").value_or("");
    // Down or overloaded is not refused: the grant may still be good.
    if (answered->status >= 500 || code == "server_error" || code == "temporarily_unavailable")
      return status::error(errc::unavailable, "the token endpoint is unavailable (HTTP "
                                                + std::to_string(answered->status) + ")");
    if (!code.empty())
      return status::error(errc::needs_auth, "the token endpoint refused the request ("
                                               + std::string{known_oauth_error(code)} + ")");
    return status::error(errc::needs_auth,
                         "the token endpoint answered HTTP " + std::to_string(answered->status));
  }
  if (!doc.is_object())
    return status::error(errc::bad_json, "the token endpoint did not answer a JSON object");
  if (!doc.contains("access_token") || !doc["access_token"].is_string()
      || doc["access_token"].get_ref<const std::string&>().empty())
    return status::error(errc::bad_json, "token answer: access_token: required string");
  if (!doc.contains("token_type") || !doc["token_type"].is_string())
    return status::error(errc::bad_json, "token answer: token_type: required string");
  if (!equals_ignoring_case(doc["token_type"].get<std::string>(), "Bearer"))
    return status::error(errc::out_of_range, "token answer: token_type: only Bearer is supported");
  token_set out;
  out.access_token = doc["access_token"].get<std::string>();
  if (auto it = doc.find("refresh_token"); it != doc.end() && it->is_string())
    out.refresh_token = it->get<std::string>();
  if (auto it = doc.find("scope"); it != doc.end() && it->is_string())
    out.scope = it->get<std::string>();
  else
    out.scope = requested_scope;
  if (auto it = doc.find("expires_in"); it != doc.end() && it->is_number() && *it >= 0)
    out.expires_at_ms =
      wall_clock_ms() + static_cast<int64_t>(std::min(it->get<double>(), max_expires_in_s) * 1000);
  out.issuer = found.server.issuer;
  return out;
}

result<token_set> oauth_client::exchange_code(const discovery& found,
                                              const client_registration& client,
                                              const std::string& code, const std::string& verifier,
                                              const std::string& redirect_uri) const {
  return token_request(found, client,
                       {{"grant_type", "authorization_code"},
                        {"code", code},
                        {"code_verifier", verifier},
                        {"redirect_uri", redirect_uri},
                        {"resource", found.resource_indicator}},
                       {});
}

result<token_set> oauth_client::refresh(const discovery& found, const client_registration& client,
                                        const token_set& held) const {
  if (held.refresh_token.empty())
    return status::error(errc::needs_auth, "no refresh token is held");
  auto out = token_request(found, client,
                           {{"grant_type", "refresh_token"},
                            {"refresh_token", held.refresh_token},
                            {"resource", found.resource_indicator}},
                           held.scope);
  // A server that does not rotate keeps the refresh token valid.
  if (out && out->refresh_token.empty())
    out->refresh_token = held.refresh_token;
  return out;
}

result<token_set> oauth_client::client_credentials(const discovery& found,
                                                   const client_registration& client,
                                                   const std::string& scope) const {
  form_fields fields{{"grant_type", "client_credentials"}, {"resource", found.resource_indicator}};
  if (!scope.empty())
    fields.emplace_back("scope", scope);
  return token_request(found, client, std::move(fields), scope);
}

result<std::string> oauth_client::exchange_for_id_jag(const std::string& idp_token_endpoint,
                                                      const std::string& id_token,
                                                      const std::string& idp_client_id,
                                                      const discovery& found) const {
  form_fields fields{{"grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"},
                     {"requested_token_type", "urn:ietf:params:oauth:token-type:id-jag"},
                     {"subject_token", id_token},
                     {"subject_token_type", "urn:ietf:params:oauth:token-type:id_token"},
                     {"audience", found.server.issuer},
                     {"resource", found.resource_indicator}};
  if (!idp_client_id.empty())
    fields.emplace_back("client_id", idp_client_id);
  auto answered = fetch_.post_form(idp_token_endpoint, fields);
  if (!answered)
    return answered.error();
  auto doc = json::parse(answered->body, nullptr, false);
  if (answered->status != 200)
    return status::error(errc::needs_auth, "the identity provider refused the token exchange (HTTP "
                                             + std::to_string(answered->status) + ")");
  if (!doc.is_object() || !doc.contains("access_token") || !doc["access_token"].is_string())
    return status::error(errc::bad_json, "token exchange answer: access_token: required string");
  if (text_member(doc, "issued_token_type").value_or("")
      != "urn:ietf:params:oauth:token-type:id-jag")
    return status::error(errc::out_of_range,
                         "token exchange answer: issued_token_type: not an ID-JAG");
  return doc["access_token"].get<std::string>();
}

} // namespace voxos::auth
