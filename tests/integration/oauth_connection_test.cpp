// A connection's OAuth credentials against a real authorization server:
// oidc-provider (tests/peers/oauth_peer.mjs), with an SDK-built MCP server
// that verifies each token's signature, issuer and audience. The peer runs on
// loopback, registered as a Local Compose deployment would be: the MCP URL
// for `mcp`, the authorization server's origin for `oauth`.
//
// The test plays the owner's browser where a flow needs one (following the
// provider's own redirects until it sends the browser back to the redirect
// URI); the node itself never follows a redirect.
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "actors/mcp/mcp_connection.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/node_peer.hpp"
#include "transport/auth/auth_crypto.hpp"
#include "transport/auth/auth_fetch.hpp"
#include "transport/auth/server_auth.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

constexpr const char* redirect_uri = "http://127.0.0.1:9/callback";

/// oauth_peer.mjs and its URLs.
struct oauth_peer {
  std::unique_ptr<test::node_peer> peer;
  json urls;

  explicit oauth_peer(std::vector<std::string> args) {
    std::vector<std::string> argv{"oauth_peer.mjs"};
    for (auto& arg : args)
      argv.push_back(std::move(arg));
    peer = std::make_unique<test::node_peer>(test::node22_path().string(), std::move(argv));
    urls = json::parse(peer->banner_rest(), nullptr, false);
  }
  bool up() const { return peer->up() && urls.is_object(); }
  std::string issuer() const { return urls.value("issuer", std::string{}); }
  std::string mcp_url() const { return urls.value("mcp_url", std::string{}); }

  json stats() const {
    httplib::Client cli{"127.0.0.1", peer->port()};
    auto res = cli.Get("/control/stats");
    return res ? json::parse(res->body, nullptr, false) : json{};
  }
  bool control(const std::string& what) const {
    httplib::Client cli{"127.0.0.1", peer->port()};
    auto res = cli.Post("/control/" + what);
    return res && res->status / 100 == 2;
  }
  /// The URL policy of a node with this deployment registered.
  std::shared_ptr<const url_policy> policy() const {
    return std::make_shared<const url_policy>(std::vector<node_config::registered_url>{
      {mcp_url(), "mcp"},
      {issuer() + "/", "oauth"},
      {"http://127.0.0.1:" + std::to_string(peer->port()) + "/", "oauth"}});
  }
};

/// The owner's browser: follows the provider's redirects (its interaction
/// steps) until it is sent back to the redirect URI, whose query it returns.
std::function<result<auth::form_fields>(const std::string&)>
browser(std::shared_ptr<const auth::auth_fetcher> fetch, std::string origin) {
  return [fetch, origin](const std::string& start) -> result<auth::form_fields> {
    std::string url = start;
    for (int hop = 0; hop < 8; ++hop) {
      auto answered = fetch->get_redirect(url);
      if (!answered)
        return answered.error();
      if (answered->status / 100 != 3)
        return status::error(errc::unauthorized, "the provider did not redirect");
      const auto& next = answered->location;
      if (next.rfind(redirect_uri, 0) == 0) {
        auto query = next.find('?');
        return auth::form_decode(std::string_view{next}.substr(query + 1));
      }
      url = next.rfind("http", 0) == 0 ? next : origin + next;
    }
    return status::error(errc::unauthorized, "too many redirects");
  };
}

struct actor_env {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  std::vector<mcp_connection_actor> connections;
  actor_env() {
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
  ~actor_env() {
    for (auto& conn : connections)
      caf::anon_send_exit(conn, caf::exit_reason::kill);
  }
  mcp_connection_actor connect(const oauth_peer& peer,
                               std::shared_ptr<auth::server_auth> credentials) {
    mcp_endpoint endpoint{"oauth-peer", transport_kind::streamable_http, peer.mcp_url(), {}};
    endpoint.auth = std::move(credentials);
    connections.push_back(spawn_mcp_connection(*sys, std::move(endpoint), peer.policy(), {}));
    return connections.back();
  }
};

/// Calls `tool` with `args`; the result text or the error.
result<json> call(actor_env& env, const mcp_connection_actor& conn, const std::string& tool,
                  json args = json::object()) {
  caf::scoped_actor self{*env.sys};
  static std::atomic<uint64_t> key{1};
  result<json> out = status::error(errc::internal, "no answer");
  json params{{"name", tool}, {"arguments", std::move(args)}};
  self
    ->request(conn, std::chrono::seconds{30}, request_atom::value, key++, std::string{"tools/call"},
              params.dump(), uint32_t{0})
    .receive([&](const std::string& text) { out = json::parse(text, nullptr, false); },
             [&](caf::error& err) { out = status::error(code_of(err), message_of(err)); });
  return out;
}

std::string text_of(const json& answer) {
  if (!answer.is_object() || !answer.contains("content") || answer["content"].empty())
    return {};
  return answer["content"][0].value("text", std::string{});
}

/// An ES256 key pair: the private key as PEM, the public key as a JWK.
struct es256_key {
  std::string pem;
  json jwk;
};

es256_key make_es256_key() {
  es256_key out;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  REQUIRE(key != nullptr);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  auto size = BIO_get_mem_data(bio, &data);
  out.pem.assign(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  unsigned char point[65];
  std::size_t len = 0;
  EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", point, sizeof(point), &len);
  REQUIRE(len == 65);
  out.jwk = {{"kty", "EC"},
             {"crv", "P-256"},
             {"alg", "ES256"},
             {"use", "sig"},
             {"x", auth::base64url({reinterpret_cast<char*>(point) + 1, 32})},
             {"y", auth::base64url({reinterpret_cast<char*>(point) + 33, 32})}};
  EVP_PKEY_free(key);
  return out;
}

} // namespace

TEST_CASE("authorization code with PKCE and resource, then step-up to a write scope, against "
          "oidc-provider") {
  // The 401 asks for mcp:read only, so writing needs a step-up.
  oauth_peer peer{{"--challenge-scope", "mcp:read"}};
  REQUIRE_MESSAGE(peer.up(), peer.peer->error_output());
  auto fetch = std::make_shared<const auth::auth_fetcher>(peer.policy());
  auth::oauth_settings settings;
  settings.server_url = peer.mcp_url();
  settings.profile.redirect_uri = redirect_uri;
  settings.user_agent = browser(fetch, peer.issuer());
  auto credentials = std::make_shared<auth::oauth_session>(fetch, settings);
  actor_env env;
  auto conn = env.connect(peer, credentials);

  // Dynamic registration, then the code flow with PKCE S256 and resource:
  // the MCP server verifies the token's audience.
  auto read = call(env, conn, "read_note", {{"id", "n1"}});
  REQUIRE_MESSAGE(read.is_ok(), read.error().message());
  CHECK(text_of(*read) == "note: n1");
  CHECK(credentials->scope().find("mcp:read") != std::string::npos);
  CHECK(credentials->scope().find("mcp:write") == std::string::npos);

  // 403 insufficient_scope: a new authorization for read and write.
  auto write = call(env, conn, "write_note", {{"id", "n2"}, {"text", "hello"}});
  REQUIRE_MESSAGE(write.is_ok(), write.error().message());
  CHECK(credentials->scope().find("mcp:read") != std::string::npos);
  CHECK(credentials->scope().find("mcp:write") != std::string::npos);
  auto stats = peer.stats();
  CHECK(stats.value("registrations", 0) == 1);
  CHECK(stats["authorizations"].value("codes", 0) == 2);
}

TEST_CASE("a node without a browser refreshes with rotation and needs signing in once the grant "
          "is revoked") {
  oauth_peer peer{{}};
  REQUIRE_MESSAGE(peer.up(), peer.peer->error_output());
  auto fetch = std::make_shared<const auth::auth_fetcher>(peer.policy());
  std::mutex mtx;
  std::optional<auth::client_registration> client;
  std::vector<auth::token_set> issued;
  auth::oauth_settings settings;
  settings.server_url = peer.mcp_url();
  settings.profile.redirect_uri = redirect_uri;
  settings.user_agent = browser(fetch, peer.issuer());
  settings.on_tokens = [&](const auth::client_registration& registered,
                           const auth::token_set& tokens) {
    std::lock_guard<std::mutex> guard{mtx};
    client = registered;
    issued.push_back(tokens);
  };
  actor_env env;
  {
    // Signing in (the owner's browser flow).
    auto first = std::make_shared<auth::oauth_session>(fetch, settings);
    auto conn = env.connect(peer, first);
    auto read = call(env, conn, "read_note", {{"id", "a"}});
    REQUIRE_MESSAGE(read.is_ok(), read.error().message());
  }
  std::lock_guard<std::mutex> guard{mtx};
  REQUIRE(client.has_value());
  REQUIRE(issued.size() == 1);
  REQUIRE_FALSE(issued[0].refresh_token.empty());

  // The node later: the sealed client and tokens, no browser, and a margin
  // that makes every request refresh first.
  auto node_settings = settings;
  node_settings.user_agent = nullptr;
  node_settings.refresh_skew_ms = 24 * 3600 * 1000;
  node_settings.on_tokens = [&issued](const auth::client_registration&,
                                      const auth::token_set& tokens) { issued.push_back(tokens); };
  auto node = std::make_shared<auth::oauth_session>(fetch, node_settings, client, issued[0]);
  auto conn = env.connect(peer, node);
  for (int call_idx = 0; call_idx < 3; ++call_idx) {
    auto read = call(env, conn, "read_note", {{"id", "b"}});
    REQUIRE_MESSAGE(read.is_ok(), read.error().message());
  }
  // A refresh before every HTTP exchange (the session's handshake, the
  // calls), each with the refresh token the one before returned.
  REQUIRE(issued.size() >= 4);
  for (size_t idx = 1; idx < issued.size(); ++idx)
    CHECK(issued[idx].refresh_token != issued[idx - 1].refresh_token);
  auto stats = peer.stats();
  CHECK(stats.value("refresh_reuse", -1) == 0);

  // Revoked at the provider: the refresh fails, the server answers 401, and
  // with no browser the call fails needs_auth (never an empty or silent
  // success).
  REQUIRE(peer.control("revoke"));
  auto after = call(env, conn, "read_note", {{"id", "c"}});
  REQUIRE_FALSE(after.is_ok());
  CHECK(after.error().code() == errc::needs_auth);
}

TEST_CASE("client credentials with a private-key JWT get a token for the server's resource") {
  oauth_peer peer{{}};
  REQUIRE_MESSAGE(peer.up(), peer.peer->error_output());
  auto key = make_es256_key();
  // The client is registered ahead with its public key, as an operator
  // registers a machine client.
  httplib::Client reg{peer.issuer()};
  json request{{"client_name", "voxos machine client"},
               {"grant_types", {"client_credentials"}},
               {"response_types", json::array()},
               {"token_endpoint_auth_method", "private_key_jwt"},
               {"token_endpoint_auth_signing_alg", "ES256"},
               {"jwks", {{"keys", {key.jwk}}}}};
  auto registered = reg.Post("/reg", request.dump(), "application/json");
  REQUIRE(registered);
  REQUIRE_MESSAGE(registered->status == 201, registered->body);
  auto client_id = json::parse(registered->body).value("client_id", std::string{});

  auto fetch = std::make_shared<const auth::auth_fetcher>(peer.policy());
  auth::oauth_settings settings;
  settings.kind = auth::oauth_settings::grant::client_credentials;
  settings.server_url = peer.mcp_url();
  auth::client_registration client;
  client.client_id = client_id;
  client.method = auth::client_auth_method::private_key_jwt;
  client.private_key_pem = key.pem;
  client.signing_alg = "ES256";
  settings.profile.pre_registered = client;
  actor_env env;
  auto conn = env.connect(peer, std::make_shared<auth::oauth_session>(fetch, settings));
  auto whoami = call(env, conn, "whoami");
  REQUIRE_MESSAGE(whoami.is_ok(), whoami.error().message());
  auto who = json::parse(text_of(*whoami), nullptr, false);
  CHECK(who.value("client_id", std::string{}) == client_id);
  CHECK(who.value("aud", std::string{}) == peer.mcp_url());
}
