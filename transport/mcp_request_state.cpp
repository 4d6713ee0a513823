#include "transport/mcp_request_state.hpp"

#include <openssl/crypto.h>

#include <utility>

#include "config/base64.hpp"
#include "transport/auth/auth_crypto.hpp"

namespace voxos {

namespace {

constexpr std::size_t random_key_bytes = 32;
// Domain separation: the key may be shared with other HMAC uses.
constexpr std::string_view tag_context = "voxos-mcp-request-state-v1\n";

/// A short, non-reversible stand-in for the principal (the state is readable).
std::string principal_digest(std::string_view principal) {
  return auth::base64url(auth::sha256(principal)).substr(0, 22);
}

int64_t millis_since_epoch(std::chrono::system_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
}

status refuse(std::string why) {
  return status::error(errc::out_of_range, "requestState " + std::move(why));
}

} // namespace

mcp_state_sealer::mcp_state_sealer(std::string key, std::chrono::milliseconds ttl)
    : key_(std::move(key)), ttl_(ttl) {
  if (key_.empty()) {
    auto random = base64::decode_url(auth::random_base64url(random_key_bytes));
    key_ = random ? std::move(*random) : std::string{};
  }
}

std::string mcp_state_sealer::tag(std::string_view payload) const {
  std::string data{tag_context};
  data += payload;
  return auth::hmac_sha256(key_, data);
}

std::string mcp_state_sealer::seal(const nlohmann::json& state, const mcp_state_binding& binding,
                                   std::chrono::system_clock::time_point now) const {
  nlohmann::json body = {{"p", principal_digest(binding.principal)},
                         {"m", std::string{binding.method}},
                         {"t", std::string{binding.target}},
                         {"e", millis_since_epoch(now + ttl_)},
                         {"s", state}};
  auto payload = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return auth::base64url(payload) + "." + auth::base64url(tag(payload));
}

result<nlohmann::json> mcp_state_sealer::open(std::string_view sealed,
                                              const mcp_state_binding& binding,
                                              std::chrono::system_clock::time_point now) const {
  auto dot = sealed.find('.');
  if (dot == std::string_view::npos)
    return refuse("is malformed");
  auto payload = base64::decode_url(sealed.substr(0, dot));
  auto given_tag = base64::decode_url(sealed.substr(dot + 1));
  if (!payload || !given_tag)
    return refuse("is malformed");
  auto expected_tag = tag(*payload);
  if (given_tag->size() != expected_tag.size()
      || CRYPTO_memcmp(given_tag->data(), expected_tag.data(), expected_tag.size()) != 0)
    return refuse("failed verification");
  // Authentic from here on: only this server wrote it.
  auto body = nlohmann::json::parse(*payload, nullptr, false);
  if (!body.is_object() || !body.contains("s") || !body["e"].is_number_integer())
    return refuse("is malformed");
  if (body["p"] != principal_digest(binding.principal))
    return refuse("belongs to another caller");
  if (body["m"] != std::string{binding.method} || body["t"] != std::string{binding.target})
    return refuse("belongs to another request");
  if (body["e"].get<int64_t>() < millis_since_epoch(now))
    return refuse("has expired");
  return std::move(body["s"]);
}

} // namespace voxos
