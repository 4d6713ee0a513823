// oauth_session against a hand-written fake authorization server on
// 127.0.0.1 (support/fake_oauth_server.hpp): unit tests of the session's
// protocol logic, so the fake hands out numbered tokens and answers
// whatever a test needs. The end-to-end test against a real authorization
// server (oidc-provider) is separate.
#include "transport/auth/server_auth.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/fake_oauth_server.hpp"
#include "transport/auth/auth_crypto.hpp"

using nlohmann::json;
using voxos::errc;
using voxos::auth::client_auth_method;
using voxos::auth::client_registration;
using voxos::auth::form_fields;
using voxos::auth::oauth_session;
using voxos::auth::oauth_settings;
using voxos::auth::token_set;
using voxos::test::fake_oauth_server;
using voxos::test::json_reply;
using voxos::test::seen_request;
using voxos::test::token_answer;
using voxos::test::wall_clock_ms;
using grant = voxos::auth::oauth_settings::grant;

namespace {

const std::string step_up_scope = R"(Bearer error="insufficient_scope", scope="mcp:write")";

/// A fake serving discovery (scopes_supported mcp:read) whose token
/// endpoint hands out "tok-<n>" for an hour, with a refresh token "rt-<n>"
/// for a refresh grant; `refuse_refresh` answers refresh grants
/// invalid_grant instead.
struct token_server {
  fake_oauth_server fake;
  std::atomic<int> issued{0};
  std::atomic<bool> refuse_refresh{false};

  token_server() {
    fake.serve_discovery(json{{"scopes_supported", {"mcp:read"}}});
    fake.answer("POST", "/register", json_reply(json{{"client_id", "registered-1"}}, 201));
    fake.on("POST", "/token", [this](const seen_request& request) {
      const bool refreshing = request.field("grant_type") == "refresh_token";
      if (refreshing && refuse_refresh)
        return json_reply(json{{"error", "invalid_grant"}}, 400);
      const auto n = std::to_string(++issued);
      return json_reply(
        token_answer("tok-" + n, refreshing ? json{{"refresh_token", "rt-" + n}} : json::object()));
    });
  }

  /// The grant types of the token requests so far, in order.
  std::vector<std::string> grants() const {
    std::vector<std::string> out;
    for (const auto& request : fake.requests("/token"))
      out.push_back(request.field("grant_type").value_or(""));
    return out;
  }

  oauth_settings settings(grant kind) const {
    oauth_settings out;
    out.kind = kind;
    out.server_url = fake.mcp_url();
    out.profile.redirect_uri = "http://127.0.0.1:1/callback";
    return out;
  }

  /// A confidential client of this server's issuer.
  client_registration machine_client() const {
    client_registration out;
    out.issuer = fake.origin();
    out.client_id = "machine-1";
    out.client_secret = "machine-secret";
    out.method = client_auth_method::client_secret_basic;
    return out;
  }

  /// Settings for a client-credentials session with machine_client()
  /// pre-registered.
  oauth_settings machine_settings() const {
    auto out = settings(grant::client_credentials);
    out.profile.pre_registered = machine_client();
    return out;
  }

  /// Tokens held from before: access "held", refresh `refresh_token` (may
  /// be ""), `scope`, expiring at `expires_at_ms`.
  token_set held(const std::string& refresh_token, const std::string& scope = "mcp:read",
                 int64_t expires_at_ms = 0) const {
    return token_set{"held", refresh_token, scope, expires_at_ms, fake.origin()};
  }

  std::unique_ptr<oauth_session> session(oauth_settings settings,
                                         std::optional<client_registration> client = std::nullopt,
                                         std::optional<token_set> tokens = std::nullopt) const {
    return std::make_unique<oauth_session>(voxos::test::loopback_fetcher(), std::move(settings),
                                           std::move(client), std::move(tokens));
  }
};

} // namespace

// -- the first credential -----------------------------------------------------

TEST_CASE("a session without tokens sends no Authorization and asks nobody") {
  token_server as;
  auto session = as.session(as.machine_settings());
  CHECK(session->authorization().empty());
  CHECK_FALSE(session->has_tokens());
  CHECK(as.fake.total_hits() == 0);
}

TEST_CASE("a 401 gets a client-credentials token that the next request carries") {
  token_server as;
  auto session = as.session(as.machine_settings());
  auto refused = session->refused(
    401, R"(Bearer resource_metadata=")" + as.fake.url(fake_oauth_server::resource_path) + "\"",
    "");
  REQUIRE_MESSAGE(refused.is_ok(), refused.message());
  CHECK(session->authorization() == "Bearer tok-1");
  CHECK(session->has_tokens());
  CHECK(session->scope() == "mcp:read");
  auto sent = as.fake.requests("/token");
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].field("grant_type") == "client_credentials");
  CHECK(sent[0].field("scope") == "mcp:read");
  CHECK(sent[0].field("resource") == as.fake.mcp_url());
  CHECK(sent[0].authorization.rfind("Basic ", 0) == 0);
}

TEST_CASE("a 401 challenge's scope is the scope asked for") {
  token_server as;
  auto session = as.session(as.machine_settings());
  REQUIRE(session->refused(401, R"(Bearer scope="mcp:tools mcp:read")", "").is_ok());
  CHECK(as.fake.requests("/token").at(0).field("scope") == "mcp:tools mcp:read");
  CHECK(session->scope() == "mcp:tools mcp:read");
}

TEST_CASE("concurrent 401s for one credential make one token request") {
  token_server as;
  std::unique_ptr<oauth_session> session;
  std::string sent;
  SUBCASE("no credential yet: one grant") {
    session = as.session(as.machine_settings());
  }
  SUBCASE("a held credential: one refresh") {
    session = as.session(as.machine_settings(), as.machine_client(), as.held("rt-0"));
    sent = "Bearer held";
  }
  REQUIRE(session->authorization() == sent);
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  std::vector<std::future<voxos::status>> answers;
  for (int thread_idx = 0; thread_idx < 8; ++thread_idx)
    answers.push_back(std::async(std::launch::async, [&session, &sent, started] {
      started.wait();
      return session->refused(401, R"(Bearer error="invalid_token")", sent);
    }));
  go.set_value();
  for (auto& answer : answers) {
    auto status = answer.get();
    CHECK_MESSAGE(status.is_ok(), status.message());
  }
  CHECK(as.fake.hits("/token") == 1);
  CHECK(session->authorization() == "Bearer tok-1");
}

// -- refresh ------------------------------------------------------------------

TEST_CASE("a token expiring within the skew is refreshed before it is used") {
  token_server as;
  auto session = as.session(as.machine_settings(), as.machine_client(),
                            as.held("rt-0", "mcp:read", wall_clock_ms() + 5'000));
  CHECK(session->authorization() == "Bearer tok-1");
  CHECK(as.grants() == std::vector<std::string>{"refresh_token"});
  CHECK(as.fake.requests("/token").at(0).field("refresh_token") == "rt-0");
  // The fresh token lasts an hour: no further request.
  CHECK(session->authorization() == "Bearer tok-1");
  CHECK(as.fake.hits("/token") == 1);
}

TEST_CASE("concurrent requests that all meet an expiring token refresh it once") {
  token_server as;
  auto session = as.session(as.machine_settings(), as.machine_client(),
                            as.held("rt-0", "mcp:read", wall_clock_ms() + 5'000));
  std::promise<void> go;
  std::shared_future<void> started = go.get_future().share();
  std::vector<std::future<std::string>> answers;
  for (int thread_idx = 0; thread_idx < 8; ++thread_idx)
    answers.push_back(std::async(std::launch::async, [&session, started] {
      started.wait();
      return session->authorization();
    }));
  go.set_value();
  for (auto& answer : answers)
    CHECK(answer.get() == "Bearer tok-1");
  CHECK(as.fake.hits("/token") == 1);
}

TEST_CASE("an expiring token without a refresh token is replaced by a new grant before use") {
  token_server as;
  auto session = as.session(as.machine_settings(), as.machine_client(),
                            as.held("", "mcp:read mcp:write", wall_clock_ms() + 5'000));
  CHECK(session->authorization() == "Bearer tok-1");
  CHECK(as.grants() == std::vector<std::string>{"client_credentials"});
  CHECK(as.fake.requests("/token").at(0).field("scope") == "mcp:read mcp:write");
}

TEST_CASE("a token outside the skew, or without an expiry, is used as it is") {
  token_server as;
  auto lasting = as.session(as.machine_settings(), as.machine_client(),
                            as.held("rt-0", "mcp:read", wall_clock_ms() + 3'600'000));
  CHECK(lasting->authorization() == "Bearer held");
  auto unsaid = as.session(as.machine_settings(), as.machine_client(), as.held("rt-0"));
  CHECK(unsaid->authorization() == "Bearer held");
  CHECK(as.fake.total_hits() == 0);
}

TEST_CASE("a 401 refreshes a held token, and a late 401 for the replaced one asks nothing") {
  token_server as;
  auto session = as.session(as.machine_settings(), as.machine_client(), as.held("rt-0"));
  REQUIRE(session->refused(401, "Bearer", "Bearer held").is_ok());
  CHECK(session->authorization() == "Bearer tok-1");
  CHECK(as.grants() == std::vector<std::string>{"refresh_token"});
  // A late 401 to the replaced credential: send again, no request.
  REQUIRE(session->refused(401, "Bearer", "Bearer held").is_ok());
  CHECK(as.fake.hits("/token") == 1);
}

TEST_CASE("a refused refresh falls back to a new client-credentials grant") {
  token_server as;
  as.refuse_refresh = true;
  auto session = as.session(as.machine_settings(), as.machine_client(), as.held("rt-0"));
  REQUIRE(session->refused(401, R"(Bearer error="invalid_token")", "Bearer held").is_ok());
  CHECK(as.grants() == std::vector<std::string>{"refresh_token", "client_credentials"});
  CHECK(session->authorization() == "Bearer tok-1");
}

TEST_CASE("a refresh answered invalid_grant ends needs_auth when no other grant is possible") {
  token_server as;
  as.refuse_refresh = true;
  auto settings = as.settings(grant::authorization_code);
  auto session = as.session(settings, as.machine_client(), as.held("rt-0"));
  auto refused = session->refused(401, R"(Bearer error="invalid_token")", "Bearer held");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::needs_auth);
  CHECK(as.grants() == std::vector<std::string>{"refresh_token"});
  // Refused again: the refresh is not tried twice for one credential.
  auto again = session->refused(401, R"(Bearer error="invalid_token")", "Bearer held");
  CHECK(again.code() == errc::needs_auth);
  CHECK(as.fake.hits("/token") == 1);
}

// -- what a session cannot do by itself ---------------------------------------

TEST_CASE("a code-flow session without a user agent is needs_auth on 401 without any request") {
  token_server as;
  auto session = as.session(as.settings(grant::authorization_code));
  auto refused = session->refused(401, R"(Bearer scope="mcp:read")", "");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::needs_auth);
  CHECK(as.fake.total_hits() == 0);
  CHECK(session->authorization().empty());
}

TEST_CASE("a jwt-bearer session without an assertion source is needs_auth without any request") {
  token_server as;
  auto session = as.session(as.settings(grant::jwt_bearer));
  auto refused = session->refused(401, "Bearer", "");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::needs_auth);
  CHECK(as.fake.total_hits() == 0);
}

// -- step-up ------------------------------------------------------------------

TEST_CASE("a 403 insufficient_scope asks for the union of the held and challenged scopes") {
  token_server as;
  auto session = as.session(as.machine_settings(), as.machine_client(), as.held("", "mcp:read"));
  auto refused = session->refused(403, step_up_scope, "Bearer held");
  REQUIRE_MESSAGE(refused.is_ok(), refused.message());
  auto sent = as.fake.requests("/token");
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].field("grant_type") == "client_credentials");
  CHECK(sent[0].field("scope") == "mcp:read mcp:write");
  CHECK(session->scope() == "mcp:read mcp:write");
  CHECK(session->authorization() == "Bearer tok-1");
}

TEST_CASE("a 403 asking for a scope already held is forbidden without a token request") {
  token_server as;
  auto session =
    as.session(as.machine_settings(), as.machine_client(), as.held("rt-0", "mcp:write mcp:read"));
  auto refused = session->refused(403, step_up_scope, "Bearer held");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::forbidden);
  CHECK(as.fake.total_hits() == 0);
  CHECK(session->authorization() == "Bearer held");
}

TEST_CASE("a 403 that is not insufficient_scope is forbidden without any request") {
  token_server as;
  auto session = as.session(as.machine_settings(), as.machine_client(), as.held("rt-0"));
  for (const char* challenge : {"", R"(Bearer error="invalid_token", scope="mcp:write")",
                                R"(Basic realm="x", error="insufficient_scope")"}) {
    CAPTURE(challenge);
    auto refused = session->refused(403, challenge, "Bearer held");
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.code() == errc::forbidden);
  }
  CHECK(as.fake.total_hits() == 0);
}

// -- what the node hears ------------------------------------------------------

TEST_CASE("on_tokens hears each new token set with its client, not the tokens it was given") {
  token_server as;
  std::mutex heard_mtx;
  std::vector<std::pair<std::string, std::string>> heard; // client id, access token
  auto settings = as.machine_settings();
  settings.on_tokens = [&](const client_registration& client, const token_set& tokens) {
    std::lock_guard<std::mutex> guard{heard_mtx};
    heard.emplace_back(client.client_id, tokens.access_token);
  };
  auto session = as.session(settings, as.machine_client(), as.held("rt-0"));
  CHECK(heard.empty());
  REQUIRE(session->refused(401, "Bearer", "Bearer held").is_ok());       // refresh
  REQUIRE(session->refused(401, "Bearer", "Bearer tok-1").is_ok());      // refresh of the new one
  REQUIRE(session->refused(403, step_up_scope, "Bearer tok-2").is_ok()); // step-up
  CHECK(heard
        == std::vector<std::pair<std::string, std::string>>{
          {"machine-1", "tok-1"}, {"machine-1", "tok-2"}, {"machine-1", "tok-3"}});
}

// -- the other grants ---------------------------------------------------------

TEST_CASE("a code-flow session signs in through its user agent with PKCE and state") {
  token_server as;
  auto settings = as.settings(grant::authorization_code);
  std::vector<std::string> opened;
  settings.user_agent = [&](const std::string& url) -> voxos::result<form_fields> {
    opened.push_back(url);
    std::string state;
    for (const auto& [name, value] : voxos::auth::form_decode(url.substr(url.find('?') + 1)))
      if (name == "state")
        state = value;
    return form_fields{{"code", "code-1"}, {"state", state}, {"iss", as.fake.origin()}};
  };
  std::vector<std::string> heard_clients;
  settings.on_tokens = [&heard_clients](const client_registration& client, const token_set&) {
    heard_clients.push_back(client.client_id);
  };
  auto session = as.session(settings);
  auto refused = session->refused(401, R"(Bearer scope="mcp:read")", "");
  REQUIRE_MESSAGE(refused.is_ok(), refused.message());
  CHECK(session->authorization() == "Bearer tok-1");
  CHECK(session->scope() == "mcp:read");
  REQUIRE(opened.size() == 1);
  CHECK(opened[0].rfind(as.fake.url("/authorize") + "?", 0) == 0);
  CHECK(as.fake.hits("/register") == 1);
  // The node hears the registered client with the tokens, to store both.
  CHECK(heard_clients == std::vector<std::string>{"registered-1"});
  auto sent = as.fake.requests("/token");
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].field("grant_type") == "authorization_code");
  CHECK(sent[0].field("code") == "code-1");
  CHECK(sent[0].field("client_id") == "registered-1");
  REQUIRE(sent[0].field("code_verifier").has_value());
  auto challenge = voxos::auth::form_decode(opened[0].substr(opened[0].find('?') + 1));
  bool challenge_matches = false;
  for (const auto& [name, value] : challenge)
    if (name == "code_challenge")
      challenge_matches = value == voxos::auth::pkce_challenge(*sent[0].field("code_verifier"));
  CHECK(challenge_matches);
}

TEST_CASE("a code-flow answer with another state is refused before the code is exchanged") {
  token_server as;
  auto settings = as.settings(grant::authorization_code);
  settings.user_agent = [](const std::string&) -> voxos::result<form_fields> {
    return form_fields{{"code", "code-1"}, {"state", "forged"}};
  };
  auto session = as.session(settings);
  auto refused = session->refused(401, "Bearer", "");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::unauthorized);
  CHECK(as.fake.hits("/token") == 0);
  CHECK_FALSE(session->has_tokens());
}

TEST_CASE("a protected resource naming another server stops the sign-in before the browser") {
  token_server as;
  as.fake.serve_discovery(json{{"resource", "https://elsewhere.example/mcp"}});
  auto settings = as.settings(grant::authorization_code);
  int opened = 0;
  settings.user_agent = [&opened](const std::string&) -> voxos::result<form_fields> {
    ++opened;
    return form_fields{};
  };
  auto session = as.session(settings);
  auto refused = session->refused(401, "Bearer", "");
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::forbidden);
  voxos::test::check_names_none(refused, {"elsewhere.example", as.fake.origin()});
  CHECK(opened == 0);
  CHECK(as.fake.hits(fake_oauth_server::server_path) == 0);
  CHECK(as.fake.hits("/register") == 0);
  CHECK(as.fake.hits("/token") == 0);
}

TEST_CASE("a jwt-bearer session sends the assertion made for the discovered issuer") {
  token_server as;
  auto settings = as.settings(grant::jwt_bearer);
  settings.profile.pre_registered = as.machine_client();
  std::string audience;
  settings.assertion = [&](const voxos::auth::discovery& found) -> voxos::result<std::string> {
    audience = found.server.issuer;
    return std::string{"assertion-1"};
  };
  auto session = as.session(settings);
  REQUIRE(session->refused(401, "Bearer", "").is_ok());
  CHECK(audience == as.fake.origin());
  auto sent = as.fake.requests("/token");
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].field("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer");
  CHECK(sent[0].field("assertion") == "assertion-1");
  CHECK(session->authorization() == "Bearer tok-1");
}
