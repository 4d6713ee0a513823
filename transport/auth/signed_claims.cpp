#include "transport/auth/signed_claims.hpp"

#include <nlohmann/json.hpp>

namespace voxos::auth {

namespace {

using nlohmann::json;

status refused(std::string what) {
  return status::error(errc::unauthorized, std::move(what));
}

/// A string claim, or "" when absent or not a string.
std::string text(const json& claims, const char* name) {
  auto it = claims.find(name);
  return it != claims.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

int64_t number(const json& claims, const char* name) {
  auto it = claims.find(name);
  return it != claims.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

/// The longest life the broker accepts in an assertion (a longer one was not
/// minted by us, or was minted to be replayed after we forget it).
constexpr int64_t max_assertion_life_ms = 5 * 60 * 1000;

} // namespace

result<std::string> sign_oauth_state(const signing_key& key, const oauth_state_claims& claims) {
  return make_jwt(key, json{{"typ", "voxos-oauth-state"},
                            {"tnt", claims.tenant},
                            {"srv", claims.server},
                            {"flw", claims.flow},
                            {"exp", claims.expires_at_ms},
                            {"nce", random_base64url(12)}});
}

result<oauth_state_claims> verify_oauth_state(std::string_view state, std::string_view secret,
                                              int64_t now_ms) {
  auto claims = verify_hs256(state, secret);
  if (!claims)
    return refused("state: " + claims.error().message());
  if (text(*claims, "typ") != "voxos-oauth-state")
    return refused("state: not a sign-in state");
  oauth_state_claims out;
  out.tenant = text(*claims, "tnt");
  out.server = text(*claims, "srv");
  out.flow = text(*claims, "flw");
  out.expires_at_ms = number(*claims, "exp");
  if (out.tenant.empty() || out.server.empty() || out.flow.empty())
    return refused("state: incomplete");
  if (now_ms >= out.expires_at_ms)
    return refused("state: expired");
  return out;
}

result<std::string> mint_broker_assertion(const signing_key& key, std::string_view tenant,
                                          std::string_view server, int64_t now_ms,
                                          int64_t lifetime_ms) {
  return make_jwt(key, json{{"aud", broker_audience},
                            {"sub", tenant},
                            {"srv", server},
                            {"jti", random_base64url(16)},
                            {"iat", now_ms / 1000},
                            {"exp", now_ms + lifetime_ms}});
}

broker_verifier::broker_verifier(std::string secret, std::size_t max_remembered)
    : secret_(std::move(secret)), max_remembered_(max_remembered) {}

result<broker_claims> broker_verifier::verify(std::string_view assertion, std::string_view server,
                                              int64_t now_ms) {
  auto claims = verify_hs256(assertion, secret_);
  if (!claims)
    return refused("assertion: " + claims.error().message());
  if (text(*claims, "aud") != broker_audience)
    return refused("assertion: wrong audience");
  broker_claims out;
  out.tenant = text(*claims, "sub");
  out.server = text(*claims, "srv");
  out.jti = text(*claims, "jti");
  out.expires_at_ms = number(*claims, "exp");
  if (out.tenant.empty() || out.server.empty() || out.jti.empty())
    return refused("assertion: incomplete");
  if (now_ms >= out.expires_at_ms)
    return refused("assertion: expired");
  if (out.expires_at_ms - now_ms > max_assertion_life_ms)
    return refused("assertion: lives too long");
  if (out.server != server)
    return refused("assertion: for another server");
  std::lock_guard<std::mutex> guard{mtx_};
  // Forget what has expired (and, past the bound, the oldest).
  while (!order_.empty() && (order_.front().first <= now_ms || order_.size() >= max_remembered_)) {
    seen_.erase(order_.front().second);
    order_.pop_front();
  }
  if (!seen_.insert(out.jti).second)
    return refused("assertion: replayed");
  order_.emplace_back(out.expires_at_ms, out.jti);
  return out;
}

} // namespace voxos::auth
