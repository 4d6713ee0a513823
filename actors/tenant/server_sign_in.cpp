#include "actors/tenant/server_sign_in.hpp"

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>

namespace voxos::server_sign_in {

using nlohmann::json;

namespace {

/// The server's Bearer challenge to a request without credentials (an
/// initialize, which runs nothing): where its metadata is, the scope it
/// wants. None (another answer, a failure): discovery uses the well-known
/// locations.
auth::bearer_challenge challenge_of(const context& ctx, const std::string& server_url) {
  json probe{{"jsonrpc", "2.0"},
             {"id", 1},
             {"method", "initialize"},
             {"params",
              {{"protocolVersion", "2025-11-25"},
               {"capabilities", json::object()},
               {"clientInfo", {{"name", ctx.client_name}, {"version", "1"}}}}}};
  auto answered = ctx.fetch->post_json(server_url, probe.dump(),
                                       {{"Accept", "application/json, text/event-stream"}});
  if (!answered || answered->status != 401)
    return {};
  return auth::parse_bearer_challenge(answered->www_authenticate);
}

} // namespace

result<std::shared_ptr<const context>> make_context(std::shared_ptr<const url_policy> policy,
                                                    const std::string& public_base_url,
                                                    const std::string& state_secret) {
  auto key = auth::signing_key::hmac(state_secret);
  if (!key)
    return key.error();
  auto out = std::make_shared<context>();
  out->fetch = std::make_shared<const auth::auth_fetcher>(std::move(policy));
  out->state_key = std::make_shared<const auth::signing_key>(std::move(*key));
  out->state_secret = state_secret;
  out->broker_secret = auth::hmac_sha256(state_secret, "voxos-broker-assertions-v1");
  auto broker = auth::signing_key::hmac(out->broker_secret);
  if (!broker)
    return broker.error();
  out->broker_key = std::make_shared<const auth::signing_key>(std::move(*broker));
  auto base = public_base_url;
  while (!base.empty() && base.back() == '/')
    base.pop_back();
  out->redirect_uri = base + std::string{sign_in_callback_path};
  if (base.rfind("https://", 0) == 0)
    out->metadata_document_url = base + std::string{client_metadata_path};
  return std::shared_ptr<const context>{std::move(out)};
}

json client_metadata_document(const context& ctx) {
  return json{{"client_id", ctx.metadata_document_url},
              {"client_name", ctx.client_name},
              {"redirect_uris", json::array({ctx.redirect_uri})},
              {"grant_types", json::array({"authorization_code", "refresh_token"})},
              {"response_types", json::array({"code"})},
              {"token_endpoint_auth_method", "none"}};
}

json pending::to_json() const {
  return json{{"flow", flow},
              {"verifier", verifier},
              {"state", state},
              {"redirect_uri", redirect_uri},
              {"scope", scope},
              {"issuer", issuer},
              {"expires_at_ms", expires_at_ms}};
}

result<pending> pending::from_json(const json& doc) {
  if (!doc.is_object() || !doc.contains("flow") || !doc.contains("verifier"))
    return status::error(errc::corrupt_data, "a pending sign-in does not decode");
  try {
    return read(doc);
  } catch (const json::exception&) {
    return status::error(errc::corrupt_data, "a pending sign-in does not decode");
  }
}

pending pending::read(const json& doc) {
  pending out;
  out.flow = doc.value("flow", std::string{});
  out.verifier = doc.value("verifier", std::string{});
  out.state = doc.value("state", std::string{});
  out.redirect_uri = doc.value("redirect_uri", std::string{});
  out.scope = doc.value("scope", std::string{});
  out.issuer = doc.value("issuer", std::string{});
  out.expires_at_ms = doc.value("expires_at_ms", int64_t{0});
  return out;
}

result<started> start(const context& ctx, const std::string& tenant, const std::string& server_id,
                      const std::string& server_url,
                      const std::optional<auth::client_registration>& stored,
                      const std::optional<auth::client_registration>& replacement, int64_t now_ms) {
  auth::oauth_client api{*ctx.fetch};
  auto challenge = challenge_of(ctx, server_url);
  auto found = api.discover(server_url, challenge);
  if (!found)
    return found.error();
  auth::client_profile profile;
  profile.client_name = ctx.client_name;
  profile.redirect_uri = ctx.redirect_uri;
  profile.metadata_document_url = ctx.metadata_document_url;
  if (replacement)
    profile.pre_registered = replacement;
  auto client = api.client_for(*found, profile, replacement ? std::nullopt : stored);
  if (!client)
    return client.error();
  started out;
  out.sign_in.flow = auth::random_base64url(16);
  out.sign_in.expires_at_ms = now_ms + ctx.state_lifetime_ms;
  auto state = auth::sign_oauth_state(
    *ctx.state_key, {tenant, server_id, out.sign_in.flow, out.sign_in.expires_at_ms});
  if (!state)
    return state.error();
  auto scope = api.select_scope(*found, challenge, true);
  auto request = api.authorize(*found, *client, ctx.redirect_uri, scope, *state);
  if (!request)
    return request.error();
  out.client = std::move(*client);
  out.authorization_url = std::move(request->url);
  out.sign_in.state = std::move(request->state);
  out.sign_in.verifier = std::move(request->verifier);
  out.sign_in.redirect_uri = ctx.redirect_uri;
  out.sign_in.scope = scope;
  out.sign_in.issuer = found->server.issuer;
  return out;
}

result<auth::token_set> refresh(const context& ctx, const std::string& server_url,
                                const auth::client_registration& client,
                                const auth::token_set& held) {
  auth::oauth_client api{*ctx.fetch};
  auto found = api.discover(server_url, challenge_of(ctx, server_url));
  if (!found)
    return found.error();
  if (found->server.issuer != held.issuer || client.issuer != held.issuer)
    return status::error(errc::needs_auth,
                         "the server moved to another authorization server; sign in again");
  return api.refresh(*found, client, held);
}

result<auth::token_set> finish(const context& ctx, const std::string& server_url,
                               const auth::client_registration& client, const pending& sign_in,
                               const auth::form_fields& answer, int64_t now_ms) {
  if (now_ms >= sign_in.expires_at_ms)
    return status::error(errc::unauthorized, "sign-in: expired; start it again");
  auth::oauth_client api{*ctx.fetch};
  auto found = api.discover(server_url, challenge_of(ctx, server_url));
  if (!found)
    return found.error();
  if (found->server.issuer != sign_in.issuer || client.issuer != sign_in.issuer)
    return status::error(errc::conflict,
                         "sign-in: the server moved to another authorization server; start it "
                         "again");
  auto code = api.read_answer(*found, answer, sign_in.state);
  if (!code)
    return code.error();
  auto tokens = api.exchange_code(*found, client, *code, sign_in.verifier, sign_in.redirect_uri);
  if (tokens && tokens->scope.empty())
    tokens->scope = sign_in.scope;
  return tokens;
}

} // namespace voxos::server_sign_in
