#include "transport/auth/server_auth.hpp"

#include <openssl/crypto.h>

#include "config/clock.hpp"

namespace voxos::auth {

namespace {

status needs_sign_in() {
  return status::error(errc::needs_auth, "the server needs signing in (again)");
}

} // namespace

oauth_session::oauth_session(std::shared_ptr<const auth_fetcher> fetch, oauth_settings settings,
                             std::optional<client_registration> client,
                             std::optional<token_set> tokens)
    : fetch_(std::move(fetch)), client_api_(*fetch_), settings_(std::move(settings)),
      client_(std::move(client)) {
  if (tokens)
    hold(std::move(*tokens)); // the caller's already: not told back
}

void oauth_session::hold(token_set tokens) {
  OPENSSL_cleanse(header_.data(), header_.size());
  header_ = "Bearer " + tokens.access_token;
  tokens_ = std::move(tokens);
}

void oauth_session::keep(token_set tokens) {
  hold(std::move(tokens));
  if (settings_.on_tokens && client_)
    settings_.on_tokens(*client_, *tokens_);
}

bool oauth_session::has_tokens() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return tokens_.has_value();
}

std::string oauth_session::scope() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return tokens_ ? tokens_->scope : std::string{};
}

std::string oauth_session::authorization() {
  std::lock_guard<std::mutex> guard{mtx_};
  if (tokens_ && tokens_->expired(wall_clock_ms(), settings_.refresh_skew_ms)
      && refreshed_for_ != header_) {
    // Refresh before the request, once per credential: a failed refresh
    // leaves the old token to be tried (the server's 401 then decides), and
    // its refresh token is not sent again (it may have reached the server,
    // which may have rotated it).
    refreshed_for_ = header_;
    if (!tokens_->refresh_token.empty() && client_
        && (found_ || discover(bearer_challenge{}).is_ok()) && same_issuer()) {
      if (auto fresh = client_api_.refresh(*found_, *client_, *tokens_))
        keep(std::move(*fresh));
    } else if (settings_.kind == oauth_settings::grant::client_credentials
               && (found_ || discover(bearer_challenge{}).is_ok())) {
      (void)grant(tokens_->scope);
    }
  }
  return header_;
}

status oauth_session::discover(const bearer_challenge& challenge) {
  auto found = client_api_.discover(settings_.server_url, challenge);
  if (!found)
    return found.error();
  found_ = std::move(*found);
  return status::ok();
}

status oauth_session::grant(const std::string& scope) {
  auto profile = settings_.profile;
  // A machine client, once used, is bound to its authorization server.
  if (profile.pre_registered && client_ && !client_->issuer.empty())
    profile.pre_registered = client_;
  if (settings_.kind == oauth_settings::grant::client_credentials)
    profile.grant_types = {"client_credentials"};
  auto client = client_api_.client_for(*found_, profile, client_);
  if (!client)
    return client.error();
  client_ = std::move(*client);
  if (settings_.kind == oauth_settings::grant::jwt_bearer) {
    if (!settings_.assertion)
      return needs_sign_in();
    auto assertion = settings_.assertion(*found_);
    if (!assertion)
      return assertion.error();
    form_fields fields{{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                       {"assertion", std::move(*assertion)}};
    if (!scope.empty())
      fields.emplace_back("scope", scope);
    auto tokens = client_api_.token_request(*found_, *client_, std::move(fields), scope);
    if (!tokens)
      return tokens.error();
    keep(std::move(*tokens));
    return status::ok();
  }
  if (settings_.kind == oauth_settings::grant::client_credentials) {
    auto tokens = client_api_.client_credentials(*found_, *client_, scope);
    if (!tokens)
      return tokens.error();
    keep(std::move(*tokens));
    return status::ok();
  }
  if (!settings_.user_agent)
    return needs_sign_in();
  auto request = client_api_.authorize(*found_, *client_, settings_.profile.redirect_uri, scope);
  if (!request)
    return request.error();
  auto answer = settings_.user_agent(request->url);
  if (!answer)
    return answer.error();
  auto code = client_api_.read_answer(*found_, *answer, request->state);
  if (!code)
    return code.error();
  auto tokens =
    client_api_.exchange_code(*found_, *client_, *code, request->verifier, request->redirect_uri);
  OPENSSL_cleanse(request->verifier.data(), request->verifier.size());
  if (!tokens)
    return tokens.error();
  if (tokens->scope.empty())
    tokens->scope = scope;
  keep(std::move(*tokens));
  return status::ok();
}

bool oauth_session::same_issuer() const {
  return found_ && tokens_ && client_ && !tokens_->issuer.empty()
         && found_->server.issuer == tokens_->issuer && client_->issuer == tokens_->issuer;
}

bool oauth_session::can_grant() const {
  switch (settings_.kind) {
  case oauth_settings::grant::client_credentials:
    return true;
  case oauth_settings::grant::jwt_bearer:
    return static_cast<bool>(settings_.assertion);
  case oauth_settings::grant::authorization_code:
    break;
  }
  return static_cast<bool>(settings_.user_agent);
}

status oauth_session::refused(int http_status, std::string_view challenge, std::string_view sent) {
  auto out = answer_refusal(http_status, challenge, sent);
  if (!out && out.code() == errc::needs_auth && settings_.on_needs_auth)
    settings_.on_needs_auth();
  return out;
}

status oauth_session::answer_refusal(int http_status, std::string_view challenge_text,
                                     std::string_view sent) {
  std::lock_guard<std::mutex> guard{mtx_};
  // Another request replaced the credential meanwhile: send with the new one.
  if (!header_.empty() && sent != header_)
    return status::ok();
  auto challenge = parse_bearer_challenge(challenge_text);
  if (http_status == 403) {
    if (challenge.error != "insufficient_scope")
      return status::error(errc::forbidden, "server refused access: server answered HTTP 403");
    auto held_scope = tokens_ ? tokens_->scope : std::string{};
    if (tokens_ && scope_union(held_scope, challenge.scope) == scope_union(held_scope, {}))
      return status::error(errc::forbidden,
                           "server refused access: it asks for a scope already granted");
    if (!can_grant())
      return needs_sign_in();
    // Step-up: the scopes held and the scopes asked for.
    if (auto found = discover(challenge); !found)
      return found;
    auto held = tokens_ ? tokens_->scope : std::string{};
    return grant(scope_union(held, challenge.scope));
  }
  // 401: refresh once per credential, then a new grant.
  if (tokens_ && !tokens_->refresh_token.empty() && client_ && refreshed_for_ != header_) {
    refreshed_for_ = header_;
    // The refresh token goes only to the authorization server that issued
    // it: a challenge naming other metadata cannot redirect it.
    if (discover(challenge).is_ok() && same_issuer()) {
      auto fresh = client_api_.refresh(*found_, *client_, *tokens_);
      if (fresh) {
        keep(std::move(*fresh));
        return status::ok();
      }
      // A token endpoint that is down is not a revoked grant.
      if (fresh.error().code() != errc::needs_auth)
        return fresh.error();
    }
  }
  if (!can_grant())
    return needs_sign_in();
  // Discovery afresh: the server may have moved to another authorization
  // server since (its client is then registered again).
  if (auto found = discover(challenge); !found)
    return found;
  bool wants_refresh = settings_.kind == oauth_settings::grant::authorization_code;
  return grant(client_api_.select_scope(*found_, challenge, wants_refresh));
}

} // namespace voxos::auth
