// Signing a tenant in to an OAuth-protected MCP server through the node's
// HTTP API, against a real authorization server (oidc-provider, in
// tests/peers/oauth_peer.mjs) and an SDK-built MCP server that verifies each
// token's signature, issuer and audience: dynamic registration, the browser
// flow with PKCE and resource, the callback, the connection test, a tool
// call through a run; and every bad callback (forged, replayed, expired,
// other-tenant states, error=) refused with its own error, leaving the stored
// credentials as they were; and no secret in anything the node answered,
// logged or stored.
//
// The test plays the owner's browser: it follows the provider's redirects
// until the provider sends it to the node's redirect URI, then calls the
// node's callback with that query.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/tenant/server_sign_in.hpp"
#include "config/clock.hpp"
#include "support/file_scan.hpp"
#include "support/node_peer.hpp"
#include "support/running_node.hpp"
#include "transport/auth/auth_fetch.hpp"
#include "transport/auth/signed_claims.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct sign_in_fixture {
  std::unique_ptr<test::node_peer> peer;
  json urls;
  test::temp_dir dir;
  std::unique_ptr<test::running_node> node;
  std::string tenant_id;
  std::string token;
  std::string server_id;

  explicit sign_in_fixture(std::function<void(node_config&)> tweak = {}) {
    peer = std::make_unique<test::node_peer>(
      test::node22_path().string(),
      std::vector<std::string>{"oauth_peer.mjs", "--challenge-scope", "mcp:read"});
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    urls = json::parse(peer->banner_rest());
    // Registered as a Local Compose deployment would be: the MCP URL, and
    // the authorization server and the resource's metadata by origin.
    node = std::make_unique<test::running_node>(
      dir,
      std::vector<node_config::registered_url>{
        {mcp_url(), "mcp"},
        {issuer() + "/", "oauth"},
        {"http://127.0.0.1:" + std::to_string(peer->port()) + "/", "oauth"}},
      std::move(tweak));
    std::tie(tenant_id, token) = node->make_tenant("Acme");
    auto made = node->call("POST", "/v1/servers", token,
                           json{{"url", mcp_url()}, {"auth", "oauth_authorization_code"}}.dump());
    REQUIRE_MESSAGE(made.status == 201, made.raw);
    CHECK(made.body["needs_auth"] == true);
    CHECK(made.body["signed_in"] == false);
    server_id = made.body["server_id"].get<std::string>();
  }

  std::string issuer() const { return urls.value("issuer", std::string{}); }
  std::string mcp_url() const { return urls.value("mcp_url", std::string{}); }

  json server() {
    for (auto& s : node->call("GET", "/v1/servers", token).body)
      if (s["server_id"] == server_id)
        return s;
    return {};
  }

  /// Starts a sign-in; the provider URL.
  std::string start() {
    auto started = node->call("POST", "/v1/servers/" + server_id + "/sign-in", token, "{}");
    REQUIRE_MESSAGE(started.status == 200, started.raw);
    CHECK(started.body["redirect_uri"] == "http://localhost:7100/api/mcp/auth/callback");
    return started.body["authorization_url"].get<std::string>();
  }

  /// The browser: the provider's redirects, up to its redirect to the node;
  /// answers that redirect's query.
  std::string browse(const std::string& authorization_url) {
    auto policy = std::make_shared<const url_policy>(
      url_policy::trusting_loopback(std::vector<node_config::registered_url>{}));
    auth::auth_fetcher browser{policy};
    std::string url = authorization_url;
    for (int hop = 0; hop < 8; ++hop) {
      auto answered = browser.get_redirect(url);
      REQUIRE_MESSAGE(answered.is_ok(), answered.error().message());
      REQUIRE_MESSAGE(answered->status / 100 == 3, answered->body);
      const auto& next = answered->location;
      const std::string back = "http://localhost:7100/api/mcp/auth/callback?";
      if (next.rfind(back, 0) == 0)
        return next.substr(back.size());
      url = next.rfind("http", 0) == 0 ? next : issuer() + next;
    }
    FAIL("the provider never sent the browser back");
    return {};
  }

  /// The node's callback with `query`.
  test::http_reply callback(const std::string& query) {
    return node->call("GET", "/api/mcp/auth/callback?" + query);
  }

  /// Enabled, trusted, read_note allowlisted and granted to the default
  /// agent, tested again; answers the agent.
  std::string make_usable() {
    auto patched = node->call(
      "PATCH", "/v1/servers/" + server_id, token,
      json{{"enabled", true}, {"trusted", true}, {"allowed_tools", {"read_note"}}}.dump());
    REQUIRE_MESSAGE(patched.status == 200, patched.raw);
    auto retested = node->call("POST", "/v1/servers/" + server_id + "/finalize", token);
    REQUIRE_MESSAGE(retested.status == 200, retested.raw);
    auto agent = node->call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
    auto granted = node->call(
      "PUT", "/v1/agents/" + agent + "/grants", token,
      json{{"server_id", server_id}, {"tool", "read_note"}, {"decision", "allow"}}.dump());
    REQUIRE_MESSAGE(granted.status == 200, granted.raw);
    return agent;
  }

  test::http_reply start_run(const std::string& agent) {
    auto run = node->call("POST", "/v1/runs", token,
                          json{{"agent_id", agent}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(run.status == 201, run.raw);
    return run;
  }

  /// One round of one read_note call in `run_id`; its output.
  json read_note(const std::string& run_id, const std::string& note) {
    auto called = node->call(
      "POST", "/v1/runs/" + run_id + "/tool-calls", token,
      json{{"calls",
            {{{"call_id", "c-" + note}, {"name", "read_note"}, {"arguments", {{"id", note}}}}}}}
        .dump());
    REQUIRE_MESSAGE(called.status == 200, called.raw);
    REQUIRE(called.body["outputs"].size() == 1);
    return called.body["outputs"][0];
  }

  json peer_stats() {
    httplib::Client cli{"127.0.0.1", peer->port()};
    auto res = cli.Get("/control/stats");
    return res ? json::parse(res->body, nullptr, false) : json{};
  }
};

/// `query` with its state replaced by `state`.
std::string with_state(const std::string& query, const std::string& state) {
  std::string out;
  for (auto& [name, value] : auth::form_decode(query)) {
    out +=
      (out.empty() ? "" : "&") + name + "=" + auth::percent_encode(name == "state" ? state : value);
  }
  return out;
}

std::string state_of(const std::string& query) {
  for (auto& [name, value] : auth::form_decode(query))
    if (name == "state")
      return value;
  return {};
}

} // namespace

TEST_CASE("a tenant signs in to an OAuth server through the browser flow and calls its tool in a "
          "run") {
  sign_in_fixture f;
  auto query = f.browse(f.start());
  auto signed_in = f.callback(query);
  REQUIRE_MESSAGE(signed_in.status == 200, signed_in.raw);
  CHECK(signed_in.body["connected"] == true);
  CHECK(signed_in.body["needs_auth"] == false);
  CHECK(signed_in.body["discovered"].get<int>() == 3);
  CHECK(f.server()["signed_in"] == true);
  auto stats = f.peer_stats();
  CHECK(stats.value("registrations", 0) == 1); // dynamic registration: no client id asked
  CHECK(stats["authorizations"].value("codes", 0) == 1);

  // Enabled, trusted, allowlisted, granted, tested: a run calls read_note.
  auto agent = f.make_usable();
  auto run_id = f.start_run(agent).body["run_id"].get<std::string>();
  auto output = f.read_note(run_id, "n7");
  CHECK_MESSAGE(output["status"] == "ok", output.dump());
  CHECK(output.dump().find("note: n7") != std::string::npos);
}

TEST_CASE("a grant revoked mid-run fails the call saying the server needs signing in, and its "
          "tools leave new runs") {
  sign_in_fixture f;
  REQUIRE(f.callback(f.browse(f.start())).status == 200);
  auto agent = f.make_usable();
  auto run = f.start_run(agent);
  CHECK(run.body["view"].dump().find("read_note") != std::string::npos);
  auto run_id = run.body["run_id"].get<std::string>();
  REQUIRE(f.read_note(run_id, "a")["status"] == "ok");

  // Revoked at the provider: the access token is refused (401), its refresh
  // too, and the node has no browser to sign in with.
  httplib::Client control{"127.0.0.1", f.peer->port()};
  REQUIRE(control.Post("/control/revoke"));
  auto failed = f.read_note(run_id, "b");
  CHECK(failed["status"] != "ok");
  CHECK_MESSAGE(failed.dump().find("sign") != std::string::npos, failed.dump());
  // Never shown as an empty answer or a success; the server needs auth, and
  // a new run's view leaves its tools out.
  // (The connection told the tenant before it answered the call, so the
  // tenant has recorded it before it reads this listing.)
  CHECK(f.server()["needs_auth"] == true);
  // Operators see it: the tenant's servers (voxosctl servers) and /metrics.
  auto listed =
    f.node->call("GET", "/v1/admin/tenants/" + f.tenant_id + "/servers", test::admin_token);
  REQUIRE_MESSAGE(listed.status == 200, listed.raw);
  bool listed_needs_auth = false;
  for (const auto& server : listed.body)
    if (server["server_id"] == f.server_id)
      listed_needs_auth = server["needs_auth"].get<bool>();
  CHECK_MESSAGE(listed_needs_auth, listed.raw);
  auto metrics = f.node->call("GET", "/metrics", test::admin_token).raw;
  CHECK(metrics.find("voxos_mcp_servers_needing_auth_total 1") != std::string::npos);
  CHECK(metrics.find("voxos_mcp_sign_ins_total 1") != std::string::npos);
  auto later = f.start_run(agent);
  CHECK(later.body["view"].dump().find("read_note") == std::string::npos);
  CHECK(later.body["snapshot"].dump().find("server_needs_auth") != std::string::npos);

  // Signing in again brings them back.
  REQUIRE(f.callback(f.browse(f.start())).status == 200);
  CHECK(f.server()["needs_auth"] == false);
  auto again = f.start_run(agent);
  CHECK(again.body["view"].dump().find("read_note") != std::string::npos);
}

/// The process's stderr (where the node logs) into a file while it lives.
class stderr_to_file {
public:
  explicit stderr_to_file(std::filesystem::path file) : file_(std::move(file)) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~stderr_to_file() { restore(); }
  /// Restores stderr; answers what was written meanwhile.
  std::string restore() {
    if (saved_ >= 0) {
      std::fflush(stderr);
      ::dup2(saved_, STDERR_FILENO);
      ::close(saved_);
      saved_ = -1;
    }
    std::ifstream in{file_, std::ios::binary};
    return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  }

private:
  std::filesystem::path file_;
  int saved_ = -1;
};

TEST_CASE("no token or client secret handed to the node appears in what it wrote or answered") {
  test::temp_dir log_dir;
  stderr_to_file log{log_dir.path() / "node.log"};
  // The node logs everything it logs at all.
  sign_in_fixture f{[](node_config& cfg) { cfg.log_level = "debug"; }};
  auto started = f.node->call("POST", "/v1/servers/" + f.server_id + "/sign-in", f.token, "{}");
  REQUIRE(started.status == 200);
  auto signed_in = f.callback(f.browse(started.body["authorization_url"].get<std::string>()));
  REQUIRE(signed_in.status == 200);
  auto agent = f.make_usable();
  auto run = f.start_run(agent);
  auto run_id = run.body["run_id"].get<std::string>();
  auto output = f.read_note(run_id, "leak");
  REQUIRE(output["status"] == "ok");

  httplib::Client control{"127.0.0.1", f.peer->port()};
  auto handed = control.Get("/control/secrets");
  REQUIRE(handed);
  auto secrets = json::parse(handed->body)["secrets"];
  REQUIRE(secrets.size() >= 3); // a client secret, an access token, a refresh token
  // Everything the node answered or showed: the sign-in and callback
  // answers, listings, the run, audit, metrics (the run's records are in
  // the data directory, searched below).
  std::vector<std::string> answered{started.raw, signed_in.raw, run.raw, output.dump()};
  for (const auto& path :
       {std::string{"/v1/servers"}, std::string{"/v1/audit"}, "/v1/runs/" + run_id})
    answered.push_back(f.node->call("GET", path, f.token).raw);
  answered.push_back(f.node->call("GET", "/metrics", test::admin_token).raw);
  answered.push_back(
    f.node->call("GET", "/v1/admin/tenants/" + f.tenant_id + "/audit", test::admin_token).raw);
  f.node->stop(); // everything on disk
  auto logged = log.restore();
  CHECK_MESSAGE(logged.find("tenant") != std::string::npos, "the node logged nothing");
  answered.push_back(logged);
  for (const auto& secret : secrets) {
    auto text = secret.get<std::string>();
    REQUIRE(text.size() >= 16);
    for (const auto& body : answered)
      CHECK_MESSAGE(body.find(text) == std::string::npos, "a secret in an answer or the log");
    CHECK_MESSAGE(test::files_holding(f.dir.path(), text).empty(),
                  "a secret in the data directory");
  }
}

TEST_CASE("bad sign-in callbacks are refused, each with its own error, and change nothing") {
  sign_in_fixture f;
  // Signed in once: what must survive every bad callback below.
  auto first = f.callback(f.browse(f.start()));
  REQUIRE_MESSAGE(first.status == 200, first.raw);
  auto before = f.server();
  REQUIRE(before["signed_in"] == true);

  auto query = f.browse(f.start());
  auto state = state_of(query);
  const std::string secret(32, 's'); // the test node's MCP_OAUTH_STATE_SIGNING_SECRET
  auto key = auth::signing_key::hmac(secret);
  REQUIRE(key.is_ok());
  auto claims = auth::verify_oauth_state(state, secret, wall_clock_ms());
  REQUIRE(claims.is_ok());

  SUBCASE("a forged state") {
    auto forger = auth::signing_key::hmac(std::string(32, 'f'));
    auto forged = auth::sign_oauth_state(*forger, *claims);
    auto refused = f.callback(with_state(query, *forged));
    CHECK(refused.status == 401);
    CHECK(refused.raw.find("bad signature") != std::string::npos);
  }
  SUBCASE("an expired state") {
    auto expired_claims = *claims;
    expired_claims.expires_at_ms = wall_clock_ms() - 1;
    auto expired = auth::sign_oauth_state(*key, expired_claims);
    auto refused = f.callback(with_state(query, *expired));
    CHECK(refused.status == 401);
    CHECK(refused.raw.find("expired") != std::string::npos);
  }
  SUBCASE("another tenant's state") {
    auto [other_tenant, other_token] = f.node->make_tenant("Other");
    auto other_claims = *claims;
    other_claims.tenant = other_tenant;
    auto crossed = auth::sign_oauth_state(*key, other_claims);
    auto refused = f.callback(with_state(query, *crossed));
    CHECK(refused.status == 404); // the other tenant has no such server
  }
  SUBCASE("a replayed state") {
    auto used = f.callback(query);
    REQUIRE_MESSAGE(used.status == 200, used.raw);
    before = f.server();
    auto replayed = f.callback(query);
    CHECK(replayed.status == 401);
    CHECK(replayed.raw.find("no such sign-in is waiting") != std::string::npos);
  }
  SUBCASE("a sign-in replaced by a newer one") {
    auto newer = f.start();
    auto refused = f.callback(query);
    CHECK(refused.status == 401);
    CHECK(refused.raw.find("no such sign-in is waiting") != std::string::npos);
    (void)newer;
  }
  SUBCASE("the provider answering error=") {
    httplib::Client control{"127.0.0.1", f.peer->port()};
    REQUIRE(control.Post("/control/deny-next"));
    auto denied = f.browse(f.start());
    CHECK(denied.find("error=access_denied") != std::string::npos);
    auto refused = f.callback(denied);
    CHECK(refused.status == 401);
    CHECK(refused.raw.find("access_denied") != std::string::npos);
  }
  // The stored credentials are as they were: still signed in, still usable.
  auto after = f.server();
  CHECK(after["signed_in"] == true);
  CHECK(after["needs_auth"] == false);
  auto retested = f.node->call("POST", "/v1/servers/" + f.server_id + "/finalize", f.token);
  CHECK_MESSAGE(retested.status == 200, retested.raw);
}

TEST_CASE("a brokered server gets a fresh assertion with every request, which its container "
          "exchanges at the private broker route for that user's token only") {
  const std::string endpoint_bearer = "endpoint-bearer-0123456789abcdef";
  test::node_peer container{test::node22_path().string(),
                            {"broker_container.mjs", "--endpoint-bearer", endpoint_bearer}};
  REQUIRE_MESSAGE(container.up(), container.error_output());
  const std::string container_url = container.url();
  test::node_peer provider{test::node22_path().string(),
                           {"oauth_peer.mjs", "--resource", container_url}};
  REQUIRE_MESSAGE(provider.up(), provider.error_output());
  auto issuer = json::parse(provider.banner_rest())["issuer"].get<std::string>();
  test::temp_dir dir;
  test::running_node node{
    dir, std::vector<node_config::registered_url>{
           {container_url, "mcp"},
           {issuer + "/", "oauth"},
           {"http://127.0.0.1:" + std::to_string(container.port()) + "/", "oauth"}}};
  const std::string broker_url =
    "http://127.0.0.1:" + std::to_string(node.get().broker_port()) + "/v1/broker/token";
  httplib::Client control{"127.0.0.1", container.port()};
  REQUIRE(control.Post("/control/configure",
                       json{{"issuer", issuer}, {"broker", broker_url}}.dump(),
                       "application/json"));
  auto [tenant_id, token] = node.make_tenant("Acme");
  auto made = node.call("POST", "/v1/servers", token,
                        json{{"url", container_url},
                             {"auth", "brokered_oauth"},
                             {"headers", {{"Authorization", "Bearer " + endpoint_bearer}}}}
                          .dump());
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  CHECK(made.body["needs_auth"] == true);
  auto server_id = made.body["server_id"].get<std::string>();

  // The user signs in to the provider (found from the container's metadata).
  auto started = node.call("POST", "/v1/servers/" + server_id + "/sign-in", token, "{}");
  REQUIRE_MESSAGE(started.status == 200, started.raw);
  auto policy = std::make_shared<const url_policy>(
    url_policy::trusting_loopback(std::vector<node_config::registered_url>{}));
  auth::auth_fetcher browser{policy};
  std::string url = started.body["authorization_url"].get<std::string>();
  std::string query;
  for (int hop = 0; hop < 8 && query.empty(); ++hop) {
    auto answered = browser.get_redirect(url);
    REQUIRE(answered.is_ok());
    REQUIRE_MESSAGE(answered->status / 100 == 3, answered->body);
    const std::string back = "http://localhost:7100/api/mcp/auth/callback?";
    if (answered->location.rfind(back, 0) == 0)
      query = answered->location.substr(back.size());
    else
      url =
        answered->location.rfind("http", 0) == 0 ? answered->location : issuer + answered->location;
  }
  REQUIRE_FALSE(query.empty());
  auto signed_in = node.call("GET", "/api/mcp/auth/callback?" + query);
  REQUIRE_MESSAGE(signed_in.status == 200, signed_in.raw);

  // A run calls the container's tool; the container exchanges the
  // request's assertion at the broker and checks the provider token.
  auto patched = node.call(
    "PATCH", "/v1/servers/" + server_id, token,
    json{{"enabled", true}, {"trusted", true}, {"allowed_tools", {"provider_whoami"}}}.dump());
  REQUIRE_MESSAGE(patched.status == 200, patched.raw);
  REQUIRE(node.call("POST", "/v1/servers/" + server_id + "/finalize", token).status == 200);
  auto agent = node.call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
  REQUIRE(
    node
      .call(
        "PUT", "/v1/agents/" + agent + "/grants", token,
        json{{"server_id", server_id}, {"tool", "provider_whoami"}, {"decision", "allow"}}.dump())
      .status
    == 200);
  auto run = node.call("POST", "/v1/runs", token,
                       json{{"agent_id", agent}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE_MESSAGE(run.status == 201, run.raw);
  auto run_id = run.body["run_id"].get<std::string>();
  auto call_whoami = [&](const std::string& call_id) {
    auto called = node.call(
      "POST", "/v1/runs/" + run_id + "/tool-calls", token,
      json{{"calls",
            {{{"call_id", call_id}, {"name", "provider_whoami"}, {"arguments", json::object()}}}}}
        .dump());
    REQUIRE_MESSAGE(called.status == 200, called.raw);
    return called.body["outputs"][0];
  };
  auto first = call_whoami("w1");
  CHECK_MESSAGE(first["status"] == "ok", first.dump());
  CHECK(first.dump().find("user-1") != std::string::npos);
  auto second = call_whoami("w2");
  CHECK_MESSAGE(second["status"] == "ok", second.dump());
  auto stats = json::parse(control.Get("/control/stats")->body);
  CHECK(stats["exchanges"] == 2);          // a fresh assertion each time
  CHECK(stats["mcp_401"].get<int>() >= 1); // only the sign-in's probe came without the bearer

  // A replayed assertion is refused by the broker.
  REQUIRE(control.Post("/control/replay"));
  auto replayed = call_whoami("w3");
  CHECK(replayed["status"] != "ok");
  CHECK(json::parse(control.Get("/control/stats")->body)["exchange_failures"] == 1);

  // The broker route itself: an assertion is required, and it must be the
  // node's, unexpired, for the server asked about; the public listener does
  // not serve the route.
  const std::string secret(32, 's'); // the test node's state secret
  auto broker_key =
    auth::signing_key::hmac(auth::hmac_sha256(secret, "voxos-broker-assertions-v1"));
  REQUIRE(broker_key.is_ok());
  httplib::Client broker{"127.0.0.1", node.get().broker_port()};
  auto ask_broker = [&](const std::string& assertion, const std::string& server) {
    httplib::Headers headers;
    if (!assertion.empty())
      headers.emplace("Authorization", "Bearer " + assertion);
    auto res = broker.Post("/v1/broker/token", headers, json{{"server_id", server}}.dump(),
                           "application/json");
    REQUIRE(res);
    return *res;
  };
  CHECK(ask_broker("", server_id).status == 401);
  auto other_server =
    auth::mint_broker_assertion(*broker_key, tenant_id, "s_other", wall_clock_ms());
  auto wrong = ask_broker(*other_server, server_id);
  CHECK(wrong.status == 401);
  CHECK(wrong.body.find("another server") != std::string::npos);
  auto expired =
    auth::mint_broker_assertion(*broker_key, tenant_id, server_id, wall_clock_ms() - 120'000);
  CHECK(ask_broker(*expired, server_id).body.find("expired") != std::string::npos);
  auto forged_key = auth::signing_key::hmac(std::string(32, 'f'));
  auto forged = auth::mint_broker_assertion(*forged_key, tenant_id, server_id, wall_clock_ms());
  CHECK(ask_broker(*forged, server_id).status == 401);
  auto good = auth::mint_broker_assertion(*broker_key, tenant_id, server_id, wall_clock_ms());
  auto exchanged = ask_broker(*good, server_id);
  CHECK_MESSAGE(exchanged.status == 200, exchanged.body);
  CHECK(json::parse(exchanged.body).value("token_type", "") == "Bearer");
  CHECK(ask_broker(*good, server_id).status == 401); // the same one again: replayed
  auto on_public =
    node.call("POST", "/v1/broker/token", *good, json{{"server_id", server_id}}.dump());
  CHECK(on_public.status == 404);
}

TEST_CASE("a client-credentials server registers a machine client itself, or is given one "
          "that sends its secret as client_secret_post, and connects with the token it gets") {
  sign_in_fixture f; // (its browser-flow server stays unused)
  httplib::Client reg{f.issuer()};
  auto registered = reg.Post("/reg",
                             json{{"client_name", "voxos machine client"},
                                  {"grant_types", {"client_credentials"}},
                                  {"response_types", json::array()},
                                  {"token_endpoint_auth_method", "client_secret_post"}}
                               .dump(),
                             "application/json");
  REQUIRE(registered);
  REQUIRE_MESSAGE(registered->status == 201, registered->body);
  auto client = json::parse(registered->body);
  auto made = f.node->call("POST", "/v1/servers", f.token,
                           json{{"url", f.mcp_url()}, {"auth", "oauth_client_credentials"}}.dump());
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  auto id = made.body["server_id"].get<std::string>();
  // No client given: the registration order's last step, dynamic
  // registration, makes one (a machine client of its own).
  auto self_registered = f.node->call("POST", "/v1/servers/" + id + "/test", f.token);
  CHECK_MESSAGE(self_registered.status == 200, self_registered.raw);
  CHECK(f.peer_stats().value("registrations", 0) == 2); // the test's own, and the node's
  // A method the mode does not take is refused.
  auto refused = f.node->call("PUT", "/v1/servers/" + id + "/client", f.token,
                              json{{"client_id", client["client_id"]},
                                   {"client_secret", client["client_secret"]},
                                   {"token_endpoint_auth_method", "none"}}
                                .dump());
  CHECK(refused.status == 400);
  auto given = f.node->call("PUT", "/v1/servers/" + id + "/client", f.token,
                            json{{"client_id", client["client_id"]},
                                 {"client_secret", client["client_secret"]},
                                 {"token_endpoint_auth_method", "client_secret_post"}}
                              .dump());
  REQUIRE_MESSAGE(given.status == 200, given.raw);
  CHECK(given.raw.find(client["client_secret"].get<std::string>()) == std::string::npos);
  auto tested = f.node->call("POST", "/v1/servers/" + id + "/test", f.token);
  REQUIRE_MESSAGE(tested.status == 200, tested.raw);
  CHECK(tested.body["connected"] == true);
  CHECK(tested.body["needs_auth"] == false);
  CHECK(tested.body["discovered"].get<int>() == 3);
  // The given client's secret went in the body; the registered one's in
  // a Basic header.
  auto stats = f.peer_stats();
  CHECK(stats["token_requests"].value("client_credentials", 0) == 2);
  CHECK(stats["token_client_auth"].value("post", 0) == 1);
  CHECK(stats["token_client_auth"].value("basic", 0) == 1);
  CHECK(stats["token_errors"].empty());
  CHECK(stats.value("registrations", 0) == 2);
}
