// The OAuth client against a hand-written fake authorization server on
// 127.0.0.1 (support/fake_oauth_server.hpp): these are unit tests of the
// protocol code, so the fake answers whatever a test needs, including what
// no real server would. The end-to-end test against a real authorization
// server (oidc-provider) is separate.
#include "transport/auth/oauth_client.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/base64.hpp"
#include "support/fake_oauth_server.hpp"
#include "support/test_keys.hpp"
#include "transport/auth/auth_crypto.hpp"
#include "transport/url_policy.hpp"

using nlohmann::json;
using voxos::errc;
using voxos::url_policy;
using voxos::auth::auth_fetcher;
using voxos::auth::bearer_challenge;
using voxos::auth::client_auth_method;
using voxos::auth::client_profile;
using voxos::auth::client_registration;
using voxos::auth::discovery;
using voxos::auth::form_fields;
using voxos::auth::oauth_client;
using voxos::auth::token_set;
using voxos::test::canned_reply;
using voxos::test::check_names_none;
using voxos::test::fake_oauth_server;
using voxos::test::json_reply;
using voxos::test::token_answer;
using voxos::test::wall_clock_ms;

namespace {

/// What discovery finds at `server` when it serves its usual documents
/// (server_extra merged into the authorization server's), made without
/// asking it.
discovery found_at(const fake_oauth_server& server, const json& server_extra = json::object()) {
  discovery out;
  out.server_url = server.mcp_url();
  out.has_resource_metadata = true;
  out.resource = voxos::auth::parse_resource_metadata(server.resource_document()).value();
  out.resource_indicator = server.mcp_url();
  out.server = voxos::auth::parse_server_metadata(server.server_document(server_extra)).value();
  return out;
}

/// A client of `server`'s authorization server.
client_registration client_of(const fake_oauth_server& server, client_auth_method method,
                              const std::string& id = "client-1", const std::string& secret = {}) {
  client_registration out;
  out.issuer = server.origin();
  out.client_id = id;
  out.client_secret = secret;
  out.method = method;
  return out;
}

/// Discovery at `server` with a fresh loopback-trusting client.
voxos::result<discovery> discover_at(const fake_oauth_server& server,
                                     const bearer_challenge& challenge = {}) {
  auto fetch = voxos::test::loopback_fetcher();
  return oauth_client{*fetch}.discover(server.mcp_url(), challenge);
}

/// The failure of a client-credentials token request to `server`, whose
/// token endpoint answers `reply`; the message must name no URL or secret.
voxos::status token_failure(fake_oauth_server& server, canned_reply reply) {
  server.answer("POST", "/token", std::move(reply));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = oauth_client{*fetch}.client_credentials(
    found_at(server), client_of(server, client_auth_method::client_secret_post, "id-1", "s3cr3t"),
    "mcp:read");
  REQUIRE_FALSE(got.is_ok());
  check_names_none(got.error(), {server.origin(), "127.0.0.1", "/token", "s3cr3t", "id-1"});
  return got.error();
}

/// The only request to `path` at `server`.
voxos::test::seen_request only_request(const fake_oauth_server& server, const std::string& path) {
  auto seen = server.requests(path);
  REQUIRE(seen.size() == 1);
  return seen.front();
}

/// The registration request a dynamic registration with `profile` sends.
json registration_request(const client_profile& profile) {
  fake_oauth_server server;
  server.answer("POST", "/register", json_reply(json{{"client_id", "dyn-1"}}, 201));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = oauth_client{*fetch}.client_for(found_at(server), profile, std::nullopt);
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->client_id == "dyn-1");
  CHECK(got->dynamic);
  return only_request(server, "/register").json();
}

} // namespace

// -- discovery ----------------------------------------------------------------

TEST_CASE("discovery reads the path-inserted protected resource metadata and its server") {
  fake_oauth_server server;
  server.serve_discovery(json{{"scopes_supported", {"mcp:read"}}});
  auto found = discover_at(server);
  REQUIRE_MESSAGE(found.is_ok(), found.error().message());
  CHECK(found->has_resource_metadata);
  CHECK(found->resource_indicator == server.mcp_url());
  CHECK(found->server.issuer == server.origin());
  CHECK(found->server.token_endpoint == server.url("/token"));
  CHECK_FALSE(found->server.defaulted);
  CHECK(server.hits("/.well-known/oauth-protected-resource") == 0);
}

TEST_CASE("discovery takes the challenge's metadata URL and probes no well-known location") {
  fake_oauth_server server;
  server.answer("GET", "/meta/prm", json_reply(server.resource_document()));
  server.answer("GET", fake_oauth_server::server_path, json_reply(server.server_document()));
  bearer_challenge challenge;
  challenge.present = true;
  challenge.resource_metadata = server.url("/meta/prm");
  auto found = discover_at(server, challenge);
  REQUIRE_MESSAGE(found.is_ok(), found.error().message());
  CHECK(found->has_resource_metadata);
  CHECK(server.hits("/meta/prm") == 1);
  CHECK(server.hits(fake_oauth_server::resource_path) == 0);
  CHECK(server.hits("/.well-known/oauth-protected-resource") == 0);
}

TEST_CASE("discovery falls back to the root metadata and the OpenID configuration") {
  fake_oauth_server server;
  server.answer("GET", "/.well-known/oauth-protected-resource",
                json_reply(server.resource_document()));
  server.answer("GET", "/.well-known/openid-configuration", json_reply(server.server_document()));
  auto found = discover_at(server);
  REQUIRE_MESSAGE(found.is_ok(), found.error().message());
  CHECK(found->server.issuer == server.origin());
  CHECK(server.hits(fake_oauth_server::resource_path) == 1);
  CHECK(server.hits(fake_oauth_server::server_path) == 1);
}

TEST_CASE("a server without metadata gets the 2025-03-26 defaults at its origin") {
  fake_oauth_server server;
  auto found = discover_at(server);
  REQUIRE_MESSAGE(found.is_ok(), found.error().message());
  CHECK_FALSE(found->has_resource_metadata);
  CHECK(found->server.defaulted);
  CHECK(found->server.issuer == server.origin());
  CHECK(found->server.token_endpoint == server.url("/token"));
  CHECK(found->resource_indicator == server.mcp_url());
}

TEST_CASE("protected resource metadata naming no authorization server is needs_auth") {
  fake_oauth_server server;
  server.serve_discovery(json{{"authorization_servers", json::array()}});
  auto found = discover_at(server);
  REQUIRE_FALSE(found.is_ok());
  CHECK(found.error().code() == errc::needs_auth);
}

TEST_CASE("protected resource metadata of the wrong shape is bad_json") {
  fake_oauth_server server;
  server.answer("GET", fake_oauth_server::resource_path,
                json_reply(json{{"resource", server.mcp_url()}, {"authorization_servers", 1}}));
  auto found = discover_at(server);
  REQUIRE_FALSE(found.is_ok());
  CHECK(found.error().code() == errc::bad_json);
  check_names_none(found.error(), {server.origin()});
}

TEST_CASE(
  "protected resource metadata for another resource is forbidden before its server is asked") {
  fake_oauth_server server;
  server.serve_discovery(json{{"resource", server.url("/other-mcp")}});
  auto found = discover_at(server);
  REQUIRE_FALSE(found.is_ok());
  CHECK(found.error().code() == errc::forbidden);
  check_names_none(found.error(), {server.origin(), "/other-mcp"});
  CHECK(server.hits(fake_oauth_server::server_path) == 0);
  CHECK(server.hits("/authorize") == 0);
  CHECK(server.hits("/token") == 0);
}

TEST_CASE("authorization server metadata naming another issuer is forbidden") {
  fake_oauth_server server;
  server.serve_discovery(json::object(), json{{"issuer", "https://attacker.example"}});
  auto found = discover_at(server);
  REQUIRE_FALSE(found.is_ok());
  CHECK(found.error().code() == errc::forbidden);
  check_names_none(found.error(), {server.origin(), "attacker.example"});

  // Exactly: a trailing slash is another issuer.
  fake_oauth_server slashed;
  slashed.serve_discovery(json::object(), json{{"issuer", slashed.origin() + "/"}});
  auto found_slashed = discover_at(slashed);
  REQUIRE_FALSE(found_slashed.is_ok());
  CHECK(found_slashed.error().code() == errc::forbidden);
}

TEST_CASE("metadata that redirects is refused, the redirect unfollowed") {
  for (const char* redirecting :
       {fake_oauth_server::resource_path, fake_oauth_server::server_path}) {
    CAPTURE(redirecting);
    fake_oauth_server server;
    server.serve_discovery();
    server.answer("GET", redirecting, voxos::test::redirect_reply(server.url("/moved")));
    auto found = discover_at(server);
    REQUIRE_FALSE(found.is_ok());
    CHECK(found.error().code() == errc::forbidden);
    CHECK(found.error().message() == "redirects are refused");
    CHECK(server.hits(redirecting) == 1);
    CHECK(server.hits("/moved") == 0);
  }
}

TEST_CASE("an authorization server at a private or loopback address is forbidden to a node") {
  fake_oauth_server server;
  fake_oauth_server elsewhere; // a loopback authorization server the node must not reach
  const std::string private_issuers[] = {
    "https://" + elsewhere.origin().substr(std::string{"http://"}.size()),
    elsewhere.origin(),
    "https://10.0.0.8",
    "https://192.168.0.10/tenant",
    "https://localhost",
    "https://[::1]",
    "https://169.254.169.254"};
  // A node's policy, with the server's own metadata registered.
  auto fetch = std::make_shared<const auth_fetcher>(
    std::make_shared<const url_policy>(std::vector<voxos::node_config::registered_url>{
      {server.url(fake_oauth_server::resource_path), "oauth"}}));
  for (const auto& issuer : private_issuers) {
    CAPTURE(issuer);
    server.serve_discovery(json{{"authorization_servers", {issuer}}});
    auto found = oauth_client{*fetch}.discover(server.mcp_url(), {});
    REQUIRE_FALSE(found.is_ok());
    CHECK(found.error().code() == errc::forbidden);
    check_names_none(found.error(), {issuer, server.origin()});
  }
  CHECK(server.hits(fake_oauth_server::resource_path) == std::size(private_issuers));
  CHECK(elsewhere.total_hits() == 0);
}

TEST_CASE("a challenge pointing discovery at the cloud metadata address is forbidden") {
  fake_oauth_server server;
  server.serve_discovery();
  for (const char* url : {"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
                          "https://169.254.169.254/.well-known/oauth-protected-resource"}) {
    CAPTURE(url);
    bearer_challenge challenge;
    challenge.present = true;
    challenge.resource_metadata = url;
    auto found = discover_at(server, challenge);
    REQUIRE_FALSE(found.is_ok());
    CHECK(found.error().code() == errc::forbidden);
    check_names_none(found.error(), {url, "169.254"});
  }
  CHECK(server.total_hits() == 0);
}

// -- scope --------------------------------------------------------------------

TEST_CASE("the scope asked for is the challenge's, else scopes_supported, else none") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client client{*fetch};
  auto found = found_at(server);
  found.resource.scopes_supported = {"mcp:read", "mcp:write"};
  found.resource.has_scopes_supported = true;
  bearer_challenge challenge;
  challenge.present = true;
  CHECK(client.select_scope(found, challenge, false) == "mcp:read mcp:write");
  challenge.scope = "mcp:admin";
  challenge.has_scope = true;
  CHECK(client.select_scope(found, challenge, false) == "mcp:admin");
  // An empty challenge scope says nothing.
  challenge.scope.clear();
  CHECK(client.select_scope(found, challenge, false) == "mcp:read mcp:write");
  found.resource.has_scopes_supported = false;
  found.resource.scopes_supported.clear();
  CHECK(client.select_scope(found, challenge, true).empty());
}

TEST_CASE("offline_access is added for a refreshable grant when the server lists it") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client client{*fetch};
  auto found = found_at(server, json{{"scopes_supported", {"mcp:read", "offline_access"}}});
  bearer_challenge challenge;
  challenge.scope = "mcp:read";
  challenge.has_scope = true;
  CHECK(client.select_scope(found, challenge, true) == "mcp:read offline_access");
  CHECK(client.select_scope(found, challenge, false) == "mcp:read");
  found.server.scopes_supported = {"mcp:read"};
  CHECK(client.select_scope(found, challenge, true) == "mcp:read");
}

TEST_CASE("scope_union keeps the first set's order and adds what it lacks") {
  CHECK(voxos::auth::scope_union("a b", "b c") == "a b c");
  CHECK(voxos::auth::scope_union("  a  ", "") == "a");
  CHECK(voxos::auth::scope_union("", "x x y") == "x y");
}

// -- clients ------------------------------------------------------------------

TEST_CASE("a known client of the same issuer is used without registering") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  auto known = client_of(server, client_auth_method::none, "kept");
  auto got = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, known);
  REQUIRE(got.is_ok());
  CHECK(got->client_id == "kept");
  CHECK(server.total_hits() == 0);
}

TEST_CASE("a known client of another issuer is replaced by a new registration") {
  fake_oauth_server server;
  server.answer("POST", "/register", json_reply(json{{"client_id", "fresh"}}, 201));
  auto fetch = voxos::test::loopback_fetcher();
  auto known = client_of(server, client_auth_method::none, "stale");
  known.issuer = "https://old-issuer.example";
  auto got = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, known);
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->client_id == "fresh");
  CHECK(got->issuer == server.origin());
  CHECK(server.hits("/register") == 1);
}

TEST_CASE("a pre-registered client with a secret authenticates as the server offers") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  client_profile profile;
  client_registration pre;
  pre.client_id = "pre-1";
  pre.client_secret = "pre-secret";
  profile.pre_registered = pre;
  oauth_client client{*fetch};
  auto basic = client.client_for(found_at(server), profile, std::nullopt);
  REQUIRE(basic.is_ok());
  CHECK(basic->method == client_auth_method::client_secret_basic);
  CHECK(basic->issuer == server.origin());
  auto post = client.client_for(
    found_at(server, json{{"token_endpoint_auth_methods_supported", {"client_secret_post"}}}),
    profile, std::nullopt);
  REQUIRE(post.is_ok());
  CHECK(post->method == client_auth_method::client_secret_post);
  CHECK(server.total_hits() == 0);
}

TEST_CASE("a client ID metadata document is used when the server supports it") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  client_profile profile;
  profile.metadata_document_url = "https://node.example/oauth/client.json";
  profile.redirect_uri = "http://127.0.0.1:1/callback";
  auto got = oauth_client{*fetch}.client_for(
    found_at(server, json{{"client_id_metadata_document_supported", true}}), profile, std::nullopt);
  REQUIRE(got.is_ok());
  CHECK(got->client_id == "https://node.example/oauth/client.json");
  CHECK(got->method == client_auth_method::none);
  CHECK_FALSE(got->dynamic);
  CHECK(server.total_hits() == 0);
}

TEST_CASE("dynamic registration of a loopback or localhost redirect is a native application") {
  for (const char* redirect :
       {"http://127.0.0.1:4321/callback", "http://localhost:3000/callback", "http://[::1]:80/cb"}) {
    CAPTURE(redirect);
    client_profile profile;
    profile.redirect_uri = redirect;
    auto request = registration_request(profile);
    CHECK(request["application_type"] == "native");
    CHECK(request["redirect_uris"] == json::array({redirect}));
    CHECK(request["response_types"] == json::array({"code"}));
    CHECK(request["grant_types"] == json::array({"authorization_code", "refresh_token"}));
    CHECK(request["client_name"] == "Voxos");
    CHECK(request["token_endpoint_auth_method"] == "none");
    CHECK_FALSE(request.contains("scope"));
  }
}

TEST_CASE("dynamic registration of an https redirect is a web application") {
  client_profile profile;
  profile.redirect_uri = "https://app.example.com/oauth/callback";
  auto request = registration_request(profile);
  CHECK(request["application_type"] == "web");
  CHECK_FALSE(request.contains("scope"));
  // An http redirect to a name that is not localhost is no native one either.
  profile.redirect_uri = "http://app.example.com/cb";
  CHECK(registration_request(profile)["application_type"] == "web");
}

TEST_CASE("dynamic registration of a machine client asks for client credentials and a secret") {
  client_profile profile;
  profile.grant_types = {"client_credentials"};
  auto request = registration_request(profile);
  CHECK(request["grant_types"] == json::array({"client_credentials"}));
  CHECK(request["token_endpoint_auth_method"] == "client_secret_basic");
  CHECK(request["response_types"] == json::array());
  CHECK_FALSE(request.contains("redirect_uris"));
  CHECK_FALSE(request.contains("scope"));
}

TEST_CASE("a registration answer's secret and method are kept") {
  fake_oauth_server server;
  server.answer("POST", "/register",
                json_reply(json{{"client_id", "dyn-2"},
                                {"client_secret", "dyn-secret"},
                                {"token_endpoint_auth_method", "client_secret_post"}},
                           201));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, std::nullopt);
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->client_secret == "dyn-secret");
  CHECK(got->method == client_auth_method::client_secret_post);
  CHECK(got->issuer == server.origin());
}

TEST_CASE("a refused registration is needs_auth naming only an RFC error code") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  server.answer("POST", "/register",
                json_reply(json{{"error", "invalid_redirect_uri"},
                                {"error_description", "see https://evil.example/x"}},
                           400));
  auto known = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, std::nullopt);
  REQUIRE_FALSE(known.is_ok());
  CHECK(known.error().code() == errc::needs_auth);
  CHECK(known.error().message().find("invalid_redirect_uri") != std::string::npos);
  check_names_none(known.error(), {"evil.example", server.origin()});

  server.answer("POST", "/register", json_reply(json{{"error", "go_away_<script>"}}, 400));
  auto unknown = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, std::nullopt);
  REQUIRE_FALSE(unknown.is_ok());
  CHECK(unknown.error().message().find("an unlisted error") != std::string::npos);
  check_names_none(unknown.error(), {"go_away"});

  server.answer("POST", "/register", json_reply(json{{"error", 42}}, 400));
  auto odd = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, std::nullopt);
  REQUIRE_FALSE(odd.is_ok());
  CHECK(odd.error().code() == errc::needs_auth);
}

TEST_CASE("a registration answer without a string client_id or secret is bad_json") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  for (const json& answer : {json{{"client_secret", "s"}}, json{{"client_id", 7}},
                             json{{"client_id", "x"}, {"client_secret", 7}},
                             json{{"client_id", "x"}, {"token_endpoint_auth_method", false}}}) {
    CAPTURE(answer.dump());
    server.answer("POST", "/register", json_reply(answer, 201));
    auto got = oauth_client{*fetch}.client_for(found_at(server), client_profile{}, std::nullopt);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.error().code() == errc::bad_json);
  }
}

TEST_CASE("without a registration endpoint, metadata document or client it is needs_auth") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  auto found = found_at(server);
  found.server.registration_endpoint.clear();
  auto got = oauth_client{*fetch}.client_for(found, client_profile{}, std::nullopt);
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::needs_auth);
  CHECK(server.total_hits() == 0);
}

TEST_CASE("a stored client and stored tokens read back what was written") {
  client_registration client;
  client.issuer = "https://a";
  client.client_id = "c";
  client.client_secret = "s";
  client.method = client_auth_method::private_key_jwt;
  client.private_key_pem = "pem";
  client.signing_alg = "ES256";
  client.dynamic = true;
  client.redirect_uri = "http://127.0.0.1:1/cb";
  auto client_back = client_registration::from_json(client.to_json());
  REQUIRE(client_back.is_ok());
  CHECK(client_back->to_json() == client.to_json());

  token_set tokens{"at", "rt", "a b", 1234, "https://a"};
  auto tokens_back = token_set::from_json(tokens.to_json());
  REQUIRE(tokens_back.is_ok());
  CHECK(tokens_back->to_json() == tokens.to_json());
}

TEST_CASE("a stored client or token set with a field of the wrong type is corrupt_data") {
  for (const json& doc :
       {json::array(), json{{"client_id", 1}}, json{{"client_id", "c"}, {"method", "magic"}},
        json{{"client_id", "c"}, {"dynamic", "yes"}}, json{{"client_id", "c"}, {"issuer", 5}},
        json{{"client_id", "c"}, {"client_secret", json::array()}}}) {
    CAPTURE(doc.dump());
    auto got = client_registration::from_json(doc);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.error().code() == errc::corrupt_data);
  }
  for (const json& doc : {json{{"refresh_token", "r"}}, json{{"access_token", "a"}, {"scope", 1}},
                          json{{"access_token", "a"}, {"expires_at_ms", "soon"}}}) {
    CAPTURE(doc.dump());
    auto got = token_set::from_json(doc);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.error().code() == errc::corrupt_data);
  }
}

// -- the authorization request and its answer ---------------------------------

TEST_CASE("the code flow exchanges the verifier of the challenge it sent") {
  fake_oauth_server server;
  server.answer("POST", "/token", json_reply(token_answer("code-token")));
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client client{*fetch};
  auto found = found_at(server);
  auto registration = client_of(server, client_auth_method::none, "public-1");
  const std::string redirect = "http://127.0.0.1:4321/callback";
  auto request = client.authorize(found, registration, redirect, "mcp:read mcp:write");
  REQUIRE_MESSAGE(request.is_ok(), request.error().message());
  const std::string prefix = server.url("/authorize") + "?";
  REQUIRE(request->url.rfind(prefix, 0) == 0);
  CHECK(request->url.find(' ') == std::string::npos);
  CHECK(request->url.find('+') == std::string::npos);
  auto query = voxos::auth::form_decode(request->url.substr(prefix.size()));
  REQUIRE(query.size() == 8);
  CHECK(query
        == form_fields{{"response_type", "code"},
                       {"client_id", "public-1"},
                       {"redirect_uri", redirect},
                       {"code_challenge", query[3].second},
                       {"code_challenge_method", "S256"},
                       {"state", request->state},
                       {"resource", server.mcp_url()},
                       {"scope", "mcp:read mcp:write"}});
  CHECK(request->verifier.size() == 43);
  CHECK(request->state.size() == 43);

  auto tokens = client.exchange_code(found, registration, "the-code", request->verifier, redirect);
  REQUIRE_MESSAGE(tokens.is_ok(), tokens.error().message());
  CHECK(tokens->access_token == "code-token");
  CHECK(tokens->issuer == server.origin());
  auto sent = only_request(server, "/token");
  CHECK(sent.field("grant_type") == "authorization_code");
  CHECK(sent.field("code") == "the-code");
  CHECK(sent.field("redirect_uri") == redirect);
  CHECK(sent.field("resource") == server.mcp_url());
  CHECK(sent.field("client_id") == "public-1");
  REQUIRE(sent.field("code_verifier").has_value());
  CHECK(voxos::auth::pkce_challenge(*sent.field("code_verifier")) == query[3].second);
}

TEST_CASE("each authorization request has its own state and verifier, and no empty scope") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client client{*fetch};
  auto registration = client_of(server, client_auth_method::none);
  auto first = client.authorize(found_at(server), registration, "http://127.0.0.1:1/cb", "");
  auto second = client.authorize(found_at(server), registration, "http://127.0.0.1:1/cb", "");
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  CHECK(first->state != second->state);
  CHECK(first->verifier != second->verifier);
  CHECK(first->url.find("scope=") == std::string::npos);
}

TEST_CASE("an authorization endpoint with a query keeps it and gets the fields after it") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  auto found = found_at(server);
  found.server.authorization_endpoint = server.url("/authorize?tenant=t1");
  auto request = oauth_client{*fetch}.authorize(found, client_of(server, client_auth_method::none),
                                                "http://127.0.0.1:1/cb", "a b");
  REQUIRE(request.is_ok());
  const std::string prefix = server.url("/authorize?tenant=t1&response_type=code&");
  CHECK(request->url.rfind(prefix, 0) == 0);
  CHECK(request->url.find("scope=a%20b") != std::string::npos);
}

TEST_CASE("an authorization server without PKCE S256 is refused") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client client{*fetch};
  auto registration = client_of(server, client_auth_method::none);
  auto plain_only =
    client.authorize(found_at(server, json{{"code_challenge_methods_supported", {"plain"}}}),
                     registration, "http://127.0.0.1:1/cb", "");
  REQUIRE_FALSE(plain_only.is_ok());
  CHECK(plain_only.error().code() == errc::out_of_range);
  auto unsaid = found_at(server);
  unsaid.server.code_challenge_methods_supported.clear();
  CHECK_FALSE(client.authorize(unsaid, registration, "http://127.0.0.1:1/cb", "").is_ok());
  // The 2025-03-26 defaults assume it.
  auto defaulted = found_at(server);
  defaulted.server = voxos::auth::default_server_metadata(server.origin());
  CHECK(client.authorize(defaulted, registration, "http://127.0.0.1:1/cb", "").is_ok());
}

TEST_CASE("reading the authorization answer checks error, state, iss and code") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client client{*fetch};
  auto plain = found_at(server);
  auto advertising =
    found_at(server, json{{"authorization_response_iss_parameter_supported", true}});
  const std::string state = "expected-state-value";
  const std::string issuer = server.origin();
  auto expect = [&](const discovery& found, const form_fields& answer, errc code) {
    auto got = client.read_answer(found, answer, state);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.error().code() == code);
    check_names_none(got.error(), {state, "the-code", issuer});
    return got.error().message();
  };

  SUBCASE("a good answer gives its code, iss or not when not advertised") {
    auto with_iss =
      client.read_answer(plain, {{"code", "the-code"}, {"state", state}, {"iss", issuer}}, state);
    REQUIRE(with_iss.is_ok());
    CHECK(*with_iss == "the-code");
    auto without_iss = client.read_answer(plain, {{"code", "the-code"}, {"state", state}}, state);
    REQUIRE(without_iss.is_ok());
    CHECK(*without_iss == "the-code");
    CHECK(client.read_answer(advertising, {{"code", "c"}, {"state", state}, {"iss", issuer}}, state)
            .is_ok());
  }
  SUBCASE("error= is unauthorized naming only a listed code") {
    auto denied = expect(plain, {{"error", "access_denied"}, {"state", state}}, errc::unauthorized);
    CHECK(denied.find("access_denied") != std::string::npos);
    auto odd = expect(plain, {{"error", "weird<b>"}, {"error_description", "x"}, {"state", state}},
                      errc::unauthorized);
    CHECK(odd.find("an unlisted error") != std::string::npos);
    CHECK(odd.find("weird") == std::string::npos);
    // Even beside a code.
    expect(plain, {{"code", "the-code"}, {"state", state}, {"error", "server_error"}},
           errc::unauthorized);
  }
  SUBCASE("a wrong, missing or longer state is unauthorized") {
    expect(plain, {{"code", "the-code"}, {"state", "expected-state-valuf"}}, errc::unauthorized);
    expect(plain, {{"code", "the-code"}}, errc::unauthorized);
    expect(plain, {{"code", "the-code"}, {"state", state + "x"}}, errc::unauthorized);
    expect(plain, {{"code", "the-code"}, {"state", ""}}, errc::unauthorized);
  }
  SUBCASE("an iss other than the issuer, exactly, is forbidden") {
    expect(plain, {{"code", "the-code"}, {"state", state}, {"iss", "https://evil.example"}},
           errc::forbidden);
    expect(plain, {{"code", "the-code"}, {"state", state}, {"iss", issuer + "/"}}, errc::forbidden);
    expect(advertising, {{"code", "the-code"}, {"state", state}, {"iss", ""}}, errc::forbidden);
  }
  SUBCASE("a missing iss is forbidden when the server advertises it") {
    expect(advertising, {{"code", "the-code"}, {"state", state}}, errc::forbidden);
  }
  SUBCASE("an answer without a code is unauthorized") {
    expect(plain, {{"state", state}}, errc::unauthorized);
    expect(plain, {{"code", ""}, {"state", state}}, errc::unauthorized);
  }
}

// -- the token endpoint: client authentication --------------------------------

TEST_CASE("client_secret_basic sends form-encoded id and secret in Basic and neither in the body") {
  fake_oauth_server server;
  server.answer("POST", "/token", json_reply(token_answer("t")));
  auto fetch = voxos::test::loopback_fetcher();
  const std::string id = "my client:1";
  const std::string secret = "p@ss w:rd+/=";
  auto got = oauth_client{*fetch}.client_credentials(
    found_at(server), client_of(server, client_auth_method::client_secret_basic, id, secret), "");
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  auto sent = only_request(server, "/token");
  REQUIRE(sent.authorization.rfind("Basic ", 0) == 0);
  auto decoded = voxos::base64::decode(sent.authorization.substr(6));
  REQUIRE(decoded.has_value());
  CHECK(*decoded == "my+client%3A1:p%40ss+w%3Ard%2B%2F%3D");
  CHECK_FALSE(sent.field("client_id").has_value());
  CHECK_FALSE(sent.field("client_secret").has_value());
  CHECK(sent.field("grant_type") == "client_credentials");
  CHECK_FALSE(sent.field("scope").has_value());
}

TEST_CASE("client_secret_post sends id and secret in the body and no Authorization") {
  fake_oauth_server server;
  server.answer("POST", "/token", json_reply(token_answer("t")));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = oauth_client{*fetch}.client_credentials(
    found_at(server), client_of(server, client_auth_method::client_secret_post, "id-2", "sec 2"),
    "mcp:read");
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  auto sent = only_request(server, "/token");
  CHECK(sent.authorization.empty());
  CHECK(sent.field("client_id") == "id-2");
  CHECK(sent.field("client_secret") == "sec 2");
  CHECK(sent.field("scope") == "mcp:read");
  CHECK(sent.field("resource") == server.mcp_url());
}

TEST_CASE("a public client sends only its client_id") {
  fake_oauth_server server;
  server.answer("POST", "/token", json_reply(token_answer("t")));
  auto fetch = voxos::test::loopback_fetcher();
  auto registration = client_of(server, client_auth_method::none, "public-3", "unused-secret");
  auto got = oauth_client{*fetch}.client_credentials(found_at(server), registration, "");
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  auto sent = only_request(server, "/token");
  CHECK(sent.authorization.empty());
  CHECK(sent.field("client_id") == "public-3");
  CHECK_FALSE(sent.field("client_secret").has_value());
  CHECK_FALSE(sent.field("client_assertion").has_value());
  CHECK(sent.body.find("unused-secret") == std::string::npos);
}

TEST_CASE("a private_key_jwt assertion names the client, the issuer and a fresh jti") {
  fake_oauth_server server;
  server.answer("POST", "/token", json_reply(token_answer("t")));
  auto fetch = voxos::test::loopback_fetcher();
  auto key = voxos::test::ec_key("P-256");
  auto registration = client_of(server, client_auth_method::private_key_jwt, "jwt-client");
  registration.private_key_pem = voxos::test::pem_of(key.get());
  registration.signing_alg = "ES256";
  oauth_client client{*fetch};
  REQUIRE(client.client_credentials(found_at(server), registration, "").is_ok());
  REQUIRE(client.client_credentials(found_at(server), registration, "").is_ok());
  auto sent = server.requests("/token");
  REQUIRE(sent.size() == 2);
  std::vector<std::string> jtis;
  for (const auto& request : sent) {
    CHECK(request.authorization.empty());
    CHECK(request.field("client_id") == "jwt-client");
    CHECK(request.field("client_assertion_type")
          == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    CHECK_FALSE(request.field("client_secret").has_value());
    auto assertion = request.field("client_assertion");
    REQUIRE(assertion.has_value());
    auto parts = voxos::test::split_jws(*assertion);
    CHECK(parts.header["alg"] == "ES256");
    CHECK(parts.claims["iss"] == "jwt-client");
    CHECK(parts.claims["sub"] == "jwt-client");
    CHECK(parts.claims["aud"] == server.origin());
    const auto iat = parts.claims["iat"].get<int64_t>();
    const auto exp = parts.claims["exp"].get<int64_t>();
    CHECK(exp > iat);
    CHECK(exp - iat <= 60);
    CHECK(std::abs(iat - wall_clock_ms() / 1000) < 300);
    jtis.push_back(parts.claims["jti"].get<std::string>());
    CHECK(voxos::test::signature_verifies(key.get(), parts.signing_input, parts.signature, true));
  }
  CHECK(jtis[0] != jtis[1]);
  CHECK(jtis[0].size() >= 16);
}

TEST_CASE("a private_key_jwt client whose key does not load sends nothing") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  auto registration = client_of(server, client_auth_method::private_key_jwt, "jwt-client");
  registration.private_key_pem = voxos::test::pem_of(voxos::test::rsa_key(2048).get());
  registration.signing_alg = "ES256";
  auto got = oauth_client{*fetch}.client_credentials(found_at(server), registration, "");
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::out_of_range);
  check_names_none(got.error(), {"PRIVATE KEY", registration.private_key_pem.substr(28, 40)});
  CHECK(server.total_hits() == 0);
}

// -- the token endpoint: answers ----------------------------------------------

TEST_CASE("a token answer gives the token, its scope, refresh token and expiry") {
  fake_oauth_server server;
  server.answer("POST", "/token",
                json_reply(token_answer("at-1", json{{"refresh_token", "rt-1"},
                                                     {"scope", "mcp:read"},
                                                     {"token_type", "bearer"},
                                                     {"expires_in", 120}})));
  auto fetch = voxos::test::loopback_fetcher();
  const auto before = wall_clock_ms();
  auto got = oauth_client{*fetch}.client_credentials(
    found_at(server), client_of(server, client_auth_method::none), "mcp:read mcp:write");
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->access_token == "at-1");
  CHECK(got->refresh_token == "rt-1");
  CHECK(got->scope == "mcp:read");
  CHECK(got->issuer == server.origin());
  CHECK(got->expires_at_ms >= before + 120'000);
  CHECK(got->expires_at_ms <= wall_clock_ms() + 120'000);
  CHECK_FALSE(got->expired(wall_clock_ms(), 60'000));
  CHECK(got->expired(wall_clock_ms(), 121'000));
}

TEST_CASE("a token answer without scope or expiry keeps the scope asked for and never expires") {
  fake_oauth_server server;
  server.answer(
    "POST", "/token",
    json_reply(json{{"access_token", "at"}, {"token_type", "Bearer"}, {"expires_in", "3600"}}));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = oauth_client{*fetch}.client_credentials(
    found_at(server), client_of(server, client_auth_method::none), "mcp:read");
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->scope == "mcp:read");
  CHECK(got->expires_at_ms == 0);
  CHECK_FALSE(got->expired(wall_clock_ms(), 60'000));
}

TEST_CASE("a huge expires_in is a distant expiry, not an overflow") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  for (const json& expires_in : {json(1e300), json(9223372036854775807LL), json(1e19)}) {
    CAPTURE(expires_in.dump());
    server.answer("POST", "/token",
                  json_reply(token_answer("at", json{{"expires_in", expires_in}})));
    auto got = oauth_client{*fetch}.client_credentials(
      found_at(server), client_of(server, client_auth_method::none), "");
    REQUIRE_MESSAGE(got.is_ok(), got.error().message());
    CHECK(got->expires_at_ms > wall_clock_ms() + int64_t{100} * 365 * 24 * 3600 * 1000);
    CHECK_FALSE(got->expired(wall_clock_ms(), 60'000));
  }
}

TEST_CASE("a token endpoint answering HTML is bad_json") {
  fake_oauth_server server;
  auto failure = token_failure(server, {200, "<html><body>Sign in</body></html>", "text/html", {}});
  CHECK(failure.code() == errc::bad_json);
}

TEST_CASE("a token answer over 1 MiB is body_too_large") {
  fake_oauth_server server;
  auto failure = token_failure(
    server,
    {200, "{\"access_token\":\"" + std::string(10u << 20, 'a') + "\"}", "application/json", {}});
  CHECK(failure.code() == errc::body_too_large);
}

TEST_CASE("a token answer without a string access_token or token_type is bad_json") {
  fake_oauth_server server;
  for (const json& answer :
       {json{{"access_token", "at-x"}}, json{{"access_token", "at-x"}, {"token_type", 1}},
        json{{"token_type", "Bearer"}}, json{{"access_token", ""}, {"token_type", "Bearer"}},
        json{{"access_token", 5}, {"token_type", "Bearer"}}, json::array()}) {
    CAPTURE(answer.dump());
    auto failure = token_failure(server, json_reply(answer));
    CHECK(failure.code() == errc::bad_json);
    check_names_none(failure, {"at-x"});
  }
}

TEST_CASE("a token type other than Bearer is out_of_range") {
  fake_oauth_server server;
  for (const char* type : {"mac", "DPoP", "N_A"}) {
    CAPTURE(type);
    auto failure =
      token_failure(server, json_reply(json{{"access_token", "at-x"}, {"token_type", type}}));
    CHECK(failure.code() == errc::out_of_range);
    check_names_none(failure, {"at-x"});
  }
}

TEST_CASE("an OAuth error answer is needs_auth naming only an RFC 6749 code") {
  fake_oauth_server server;
  auto known = token_failure(
    server, json_reply(json{{"error", "invalid_client"},
                            {"error_description", "client id-1 secret s3cr3t unknown"}},
                       401));
  CHECK(known.code() == errc::needs_auth);
  CHECK(known.message().find("invalid_client") != std::string::npos);

  auto unknown = token_failure(server, json_reply(json{{"error", "s3cr3t_leaked_code"}}, 400));
  CHECK(unknown.code() == errc::needs_auth);
  CHECK(unknown.message().find("an unlisted error") != std::string::npos);
  check_names_none(unknown, {"leaked"});

  auto not_json = token_failure(server, {400, "<html>no</html>", "text/html", {}});
  CHECK(not_json.code() == errc::needs_auth);
  CHECK(not_json.message().find("400") != std::string::npos);
}

TEST_CASE("a token endpoint that is down is unavailable, not a revoked grant") {
  fake_oauth_server server;
  auto down = token_failure(server, {503, "<html>down</html>", "text/html", {}});
  CHECK(down.code() == errc::unavailable);
  CHECK(down.message().find("503") != std::string::npos);
  auto busy = token_failure(server, json_reply(json{{"error", "temporarily_unavailable"}}, 400));
  CHECK(busy.code() == errc::unavailable);
  auto failing = token_failure(server, json_reply(json{{"error", "server_error"}}, 400));
  CHECK(failing.code() == errc::unavailable);
}

TEST_CASE("a token endpoint that redirects is refused") {
  fake_oauth_server server;
  auto failure = token_failure(server, voxos::test::redirect_reply(server.url("/moved")));
  CHECK(failure.code() == errc::forbidden);
  CHECK(failure.message() == "redirects are refused");
  CHECK(server.hits("/moved") == 0);
}

TEST_CASE("a server without a token endpoint is needs_auth before any request") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  auto found = found_at(server);
  found.server.token_endpoint.clear();
  auto got =
    oauth_client{*fetch}.client_credentials(found, client_of(server, client_auth_method::none), "");
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::needs_auth);
  CHECK(server.total_hits() == 0);
}

// -- refresh ------------------------------------------------------------------

TEST_CASE("refresh sends the refresh token and keeps it when the server does not rotate") {
  fake_oauth_server server;
  server.answer("POST", "/token", json_reply(token_answer("at-2")));
  auto fetch = voxos::test::loopback_fetcher();
  token_set held{"at-1", "rt-1", "mcp:read", 0, server.origin()};
  auto got = oauth_client{*fetch}.refresh(found_at(server),
                                          client_of(server, client_auth_method::none), held);
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->access_token == "at-2");
  CHECK(got->refresh_token == "rt-1");
  CHECK(got->scope == "mcp:read");
  auto sent = only_request(server, "/token");
  CHECK(sent.field("grant_type") == "refresh_token");
  CHECK(sent.field("refresh_token") == "rt-1");
  CHECK(sent.field("resource") == server.mcp_url());
}

TEST_CASE("refresh takes a rotated refresh token") {
  fake_oauth_server server;
  server.answer("POST", "/token",
                json_reply(token_answer("at-2", json{{"refresh_token", "rt-2"}})));
  auto fetch = voxos::test::loopback_fetcher();
  token_set held{"at-1", "rt-1", "", 0, server.origin()};
  auto got = oauth_client{*fetch}.refresh(found_at(server),
                                          client_of(server, client_auth_method::none), held);
  REQUIRE(got.is_ok());
  CHECK(got->refresh_token == "rt-2");
}

TEST_CASE("refresh without a refresh token is needs_auth without a request") {
  fake_oauth_server server;
  auto fetch = voxos::test::loopback_fetcher();
  token_set held{"at-1", "", "", 0, server.origin()};
  auto got = oauth_client{*fetch}.refresh(found_at(server),
                                          client_of(server, client_auth_method::none), held);
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::needs_auth);
  CHECK(server.total_hits() == 0);
}

// -- token exchange -----------------------------------------------------------

TEST_CASE("an ID token is exchanged for an ID-JAG for the authorization server") {
  fake_oauth_server server;
  fake_oauth_server idp;
  idp.answer("POST", "/token",
             json_reply(json{{"access_token", "the-jag"},
                             {"issued_token_type", "urn:ietf:params:oauth:token-type:id-jag"},
                             {"token_type", "N_A"}}));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = oauth_client{*fetch}.exchange_for_id_jag(idp.url("/token"), "id-token-1", "idp-client",
                                                      found_at(server));
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(*got == "the-jag");
  auto sent = only_request(idp, "/token");
  CHECK(sent.field("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange");
  CHECK(sent.field("requested_token_type") == "urn:ietf:params:oauth:token-type:id-jag");
  CHECK(sent.field("subject_token") == "id-token-1");
  CHECK(sent.field("subject_token_type") == "urn:ietf:params:oauth:token-type:id_token");
  CHECK(sent.field("audience") == server.origin());
  CHECK(sent.field("resource") == server.mcp_url());
  CHECK(sent.field("client_id") == "idp-client");
  CHECK(server.total_hits() == 0);
}

TEST_CASE("a token exchange answer that is no ID-JAG, or a refusal, fails") {
  fake_oauth_server server;
  fake_oauth_server idp;
  auto fetch = voxos::test::loopback_fetcher();
  /// The failure of an exchange whose answer is `reply`.
  auto failure = [&](canned_reply reply) {
    idp.answer("POST", "/token", std::move(reply));
    auto got = oauth_client{*fetch}.exchange_for_id_jag(idp.url("/token"), "id-token-1", "",
                                                        found_at(server));
    REQUIRE_FALSE(got.is_ok());
    check_names_none(got.error(), {"id-token-1", idp.origin()});
    return got.error().code();
  };
  CHECK(failure(
          json_reply(json{{"access_token", "at"},
                          {"issued_token_type", "urn:ietf:params:oauth:token-type:access_token"}}))
        == errc::out_of_range);
  CHECK(failure(json_reply(json{{"access_token", "at"}, {"issued_token_type", 3}}))
        == errc::out_of_range);
  CHECK(failure(json_reply(json{{"issued_token_type", "x"}})) == errc::bad_json);
  CHECK(failure(json_reply(json{{"error", "invalid_grant"}}, 400)) == errc::needs_auth);
}

TEST_CASE("a client used with one authorization server is never presented to another") {
  auto fetch = voxos::test::loopback_fetcher();
  oauth_client api{*fetch};
  discovery moved;
  moved.server.issuer = "https://elsewhere.example";
  moved.server.token_endpoint = "https://elsewhere.example/token";
  client_profile profile;
  client_registration used;
  used.issuer = "https://as.example";
  used.client_id = "machine";
  used.client_secret = "machine-secret-0123456789";
  used.method = client_auth_method::client_secret_basic;
  profile.pre_registered = used;
  auto refused = api.client_for(moved, profile, std::nullopt);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.error().code() == errc::needs_auth);
  check_names_none(refused.error(), {"machine-secret", "elsewhere"});
  // Never used yet: bound to the first server it meets.
  profile.pre_registered->issuer.clear();
  auto bound = api.client_for(moved, profile, std::nullopt);
  REQUIRE(bound.is_ok());
  CHECK(bound->issuer == "https://elsewhere.example");
}
