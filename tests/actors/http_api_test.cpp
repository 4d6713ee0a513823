// The HTTP API of an in-process node: tenants, tokens, operators' routes, and
// bad input that gets a specific error and changes nothing stored.
#include <doctest/doctest.h>

#include "actors/http_api/http_api.hpp"
#include "support/running_node.hpp"
#include "support/tool_session.hpp"

using namespace voxos;
using test::admin_token;

namespace {

std::string error_code(const test::http_reply& reply) {
  if (reply.body.is_discarded() || !reply.body.contains("error"))
    return "<no JSON error>";
  return reply.body["error"].value("code", "");
}

} // namespace

TEST_CASE("healthz answers without a token") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto reply = node.call("GET", "/healthz");
  CHECK(reply.status == 200);
  CHECK(reply.body["status"] == "ok");
}

TEST_CASE("operator routes require the admin token") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_id, token] = node.make_tenant("Acme");
  for (const auto* path : {"/metrics", "/v1/admin/status", "/v1/admin/tenants"}) {
    CAPTURE(path);
    auto none = node.call("GET", path);
    CHECK(none.status == 401);
    CHECK(error_code(none) == "unauthorized");
    auto wrong = node.call("GET", path, admin_token + "x");
    CHECK(wrong.status == 401);
    auto tenant = node.call("GET", path, token);
    CHECK(tenant.status == 401);
    CHECK(node.call("GET", path, admin_token).status == 200);
  }
}

TEST_CASE("a tenant token selects its tenant and shows no secret again") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_id, token] = node.make_tenant("Acme");
  auto who = node.call("GET", "/v1/whoami", token);
  REQUIRE(who.status == 200);
  CHECK(who.body["tenant_id"] == tenant_id);
  CHECK(who.body["tenant_name"] == "Acme");
  auto tokens = node.call("GET", "/v1/tokens", token);
  REQUIRE(tokens.status == 200);
  REQUIRE(tokens.body.size() == 1);
  CHECK(tokens.raw.find(token) == std::string::npos);
  CHECK(tokens.raw.find("hash") == std::string::npos);
  auto admin_list = node.call("GET", "/v1/admin/tenants/" + tenant_id + "/tokens", admin_token);
  CHECK(admin_list.raw.find(token) == std::string::npos);
}

TEST_CASE("a body that names a tenant is refused and changes nothing") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_a, token_a] = node.make_tenant("A");
  auto [tenant_b, token_b] = node.make_tenant("B");
  auto before = node.stored_events();
  auto reply = node.call("POST", "/v1/tokens", token_a,
                         nlohmann::json{{"label", "x"}, {"tenant_id", tenant_b}}.dump());
  CHECK(reply.status == 400);
  CHECK(error_code(reply) == "unknown_field");
  CHECK(node.stored_events() == before);
  CHECK(node.call("GET", "/v1/admin/tenants/" + tenant_b + "/tokens", admin_token).body.size()
        == 1);
}

TEST_CASE("a tenant cannot revoke another tenant's token") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_a, token_a] = node.make_tenant("A");
  auto [tenant_b, token_b] = node.make_tenant("B");
  auto b_tokens = node.call("GET", "/v1/tokens", token_b);
  auto b_token_id = b_tokens.body[0]["token_id"].get<std::string>();
  auto before = node.stored_events();
  auto reply = node.call("DELETE", "/v1/tokens/" + b_token_id, token_a);
  CHECK(reply.status == 404);
  CHECK(error_code(reply) == "not_found");
  CHECK(node.stored_events() == before);
  CHECK(node.call("GET", "/v1/whoami", token_b).status == 200);
}

TEST_CASE("a revoked token no longer authenticates") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_id, token] = node.make_tenant("Acme");
  auto second = node.call("POST", "/v1/tokens", token, R"({"label":"ci"})");
  REQUIRE(second.status == 201);
  auto second_token = second.body["token"].get<std::string>();
  auto second_id = second.body["token_id"].get<std::string>();
  auto revoked = node.call("DELETE", "/v1/tokens/" + second_id, token);
  REQUIRE(revoked.status == 200);
  CHECK(revoked.body["revoked"] == true);
  CHECK(node.call("GET", "/v1/whoami", second_token).status == 401);
  CHECK(node.call("GET", "/v1/whoami", token).status == 200);
  // Revoking twice is a not_found, not a second event.
  auto before = node.stored_events();
  CHECK(node.call("DELETE", "/v1/tokens/" + second_id, token).status == 404);
  CHECK(node.stored_events() == before);
}

TEST_CASE("a token revoked through the API is refused from the next request, even right after "
          "its tenant was remembered for it") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_id, token] = node.make_tenant("Acme");
  auto issue = [&, tenant_id = tenant_id, token = token](const std::string& label) {
    auto issued = node.call("POST", "/v1/tokens", token, nlohmann::json{{"label", label}}.dump());
    REQUIRE(issued.status == 201);
    return std::pair{issued.body["token"].get<std::string>(),
                     issued.body["token_id"].get<std::string>()};
  };
  // Revoked by the tenant, and by an operator: each token is used first (so
  // its tenant and tenant actor are remembered), then revoked.
  auto [own_token, own_id] = issue("ci");
  auto [admin_revoked, admin_id] = issue("laptop");
  for (const auto* path : {"/v1/whoami", "/v1/agents"}) {
    CHECK(node.call("GET", path, own_token).status == 200);
    CHECK(node.call("GET", path, admin_revoked).status == 200);
  }
  REQUIRE(node.call("DELETE", "/v1/tokens/" + own_id, token).status == 200);
  REQUIRE(node.call("DELETE", "/v1/admin/tenants/" + tenant_id + "/tokens/" + admin_id, admin_token)
            .status
          == 200);
  for (const auto* path : {"/v1/whoami", "/v1/agents"}) {
    CAPTURE(path);
    auto own = node.call("GET", path, own_token);
    CHECK(own.status == 401);
    CHECK(error_code(own) == "unauthorized");
    CHECK(node.call("GET", path, admin_revoked).status == 401);
  }
  // The tenant's other token goes on.
  CHECK(node.call("GET", "/v1/agents", token).status == 200);
}

TEST_CASE("a tenant's requests ask the directory once per token, not on every request") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto [tenant_id, token] = node.make_tenant("Acme");
  auto directory_messages = [&, tenant_id = tenant_id] {
    auto status = node.call("GET", "/v1/admin/status", admin_token);
    REQUIRE(status.status == 200);
    return status.body["metrics"]["actors"]["directory"]["messages"].get<uint64_t>();
  };
  // What reading the status costs the directory, if anything.
  auto start = directory_messages();
  auto by_status = directory_messages() - start;
  REQUIRE(node.call("GET", "/v1/agents", token).status == 200); // the token, then its tenant
  auto before = directory_messages();
  for (int request = 0; request < 10; ++request) {
    CHECK(node.call("GET", "/v1/agents", token).status == 200);
    CHECK(node.call("GET", "/v1/whoami", token).status == 200);
  }
  // Twenty requests, without a cache forty asks; at most one more pair when
  // a slow machine lets the token's 2 s run out between them.
  CHECK(directory_messages() - before - by_status <= 2);
}

TEST_CASE("malformed tenant bodies get specific errors and store nothing") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto before = node.stored_events();
  struct bad_case {
    std::string body;
    std::string content_type;
    int status;
    std::string code;
  };
  std::vector<bad_case> cases{
    {"{\"name\":", "application/json", 400, "bad_json"},
    {"[1,2]", "application/json", 400, "bad_json"},
    {R"({"name":42})", "application/json", 400, "wrong_type"},
    {R"({})", "application/json", 400, "missing_field"},
    {R"({"name":"a","extra":1})", "application/json", 400, "unknown_field"},
    {nlohmann::json{{"name", std::string(201, 'n')}}.dump(), "application/json", 400,
     "out_of_range"},
    {R"({"name":"a\u0007b"})", "application/json", 400, "out_of_range"},
    {R"({"name":"Acme"})", "text/plain", 415, "unsupported_media_type"},
    {R"({"name":")" + std::string(70 * 1024, 'x') + R"("})", "application/json", 413,
     "body_too_large"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.code);
    auto reply = node.call("POST", "/v1/admin/tenants", admin_token, c.body, c.content_type);
    CHECK(reply.status == c.status);
    CHECK(error_code(reply) == c.code);
    // Messages never echo the rejected value.
    if (!reply.body.is_discarded() && reply.body.contains("error"))
      CHECK(reply.body["error"]["message"].get<std::string>().find("Acme") == std::string::npos);
  }
  CHECK(node.stored_events() == before);
  CHECK(node.call("GET", "/v1/admin/tenants", admin_token).body.empty());
}

TEST_CASE("a body is read whole by its length and bytes after its value are refused") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto before = node.stored_events();
  using namespace std::string_literals;
  // nlohmann's reader ends its input at a NUL: these created a tenant 'x'.
  for (const auto& body :
       {"{\"name\":\"x\"}\0{\"name\":\"y\",\"evil\":1}"s, "{\"name\":\"x\"}\0garbage"s,
        "{\"name\":\"x\"}\0"s, "{\"name\":\"x\0\"}"s, "{\"name\":\"x\"} garbage"s,
        "{\"name\":\"x\"}{}"s}) {
    CAPTURE(body.size());
    auto reply = node.call("POST", "/v1/admin/tenants", admin_token, body);
    CHECK(reply.status == 400);
    CHECK(error_code(reply) == "bad_json");
  }
  CHECK(node.stored_events() == before);
  CHECK(node.call("GET", "/v1/admin/tenants", admin_token).body.empty());
  // JSON whitespace after the value is the value's.
  CHECK(node.call("POST", "/v1/admin/tenants", admin_token, "{\"name\":\"x\"} \r\n\t").status
        == 201);
}

TEST_CASE("only the media type application/json is read as a JSON body") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto before = node.stored_events();
  for (const char* type :
       {"application/jsonx", "application/json5", "application/json-patch+json",
        "application/json\tx", "application/json; charset=latin1", "application/json; boundary=x",
        "application/json; charset=utf-8; x=y", "text/json", "application/x-json"}) {
    CAPTURE(type);
    auto reply = node.call("POST", "/v1/admin/tenants", admin_token, R"({"name":"Acme"})", type);
    CHECK(reply.status == 415);
    CHECK(error_code(reply) == "unsupported_media_type");
  }
  CHECK(node.stored_events() == before);
  for (const char* type :
       {"application/json", "Application/JSON", "application/json; charset=utf-8",
        "application/json;charset=UTF-8", "application/json ; charset=\"utf-8\""}) {
    CAPTURE(type);
    CHECK(node.call("POST", "/v1/admin/tenants", admin_token, R"({"name":"Acme"})", type).status
          == 201);
  }
}

TEST_CASE("tokens for an unknown tenant are refused") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto before = node.stored_events();
  auto reply = node.call("POST", "/v1/admin/tenants/t_doesnotexist/tokens", admin_token, "{}");
  CHECK(reply.status == 404);
  CHECK(error_code(reply) == "not_found");
  CHECK(node.stored_events() == before);
}

TEST_CASE("an unknown route is a JSON not_found") {
  test::temp_dir dir;
  test::running_node node{dir};
  auto reply = node.call("GET", "/v1/nothing-here", admin_token);
  CHECK(reply.status == 404);
  CHECK(error_code(reply) == "not_found");
}

TEST_CASE("metrics count what the actors did") {
  test::temp_dir dir;
  test::running_node node{dir};
  node.make_tenant("Acme");
  auto metrics = node.call("GET", "/metrics", admin_token);
  REQUIRE(metrics.status == 200);
  CHECK(metrics.raw.find("voxos_actors_running{kind=\"event_store\"} 1") != std::string::npos);
  CHECK(metrics.raw.find("voxos_actors_running{kind=\"directory\"} 1") != std::string::npos);
  CHECK(metrics.raw.find("voxos_actors_running{kind=\"run_host\"} 1") != std::string::npos);
  // One tenant actor, spawned with its tenant.
  CHECK(metrics.raw.find("voxos_actors_running{kind=\"tenant\"} 1") != std::string::npos);
  CHECK(metrics.raw.find("voxos_event_store_appended_events_total 0") == std::string::npos);
  CHECK(metrics.raw.find("voxos_event_store_sync_seconds_count") != std::string::npos);
  auto status = node.call("GET", "/v1/admin/status", admin_token);
  REQUIRE(status.status == 200);
  CHECK(status.body["metrics"]["actors_running"].get<int64_t>() >= 3);
  CHECK(status.body["metrics"]["actors"]["directory"]["messages"].get<uint64_t>() >= 2);
}

TEST_CASE("metrics time each wave and call of a round, and report the store's size") {
  test::tool_session f;
  auto before = f.node.call("GET", "/v1/admin/status", admin_token).body["metrics"];
  CHECK(before["runs"]["waves"] == 0);
  CHECK(before["runs"]["calls"] == 0);
  CHECK(before["event_store"]["bytes"].get<uint64_t>() > 0);
  // Two calls of one internal tool: read-only, so one wave carries both.
  auto run = f.start_run();
  auto body = nlohmann::json{{"calls",
                              {{{"call_id", "a"}, {"name", "get_current_time"}},
                               {{"call_id", "b"}, {"name", "get_current_time"}}}}};
  auto round = f.node.call("POST", "/v1/runs/" + run + "/tool-calls", f.token, body.dump());
  REQUIRE_MESSAGE(round.status == 200, round.raw);
  REQUIRE(round.body["outputs"][0]["status"] == "ok");
  auto runs = f.node.call("GET", "/v1/admin/status", admin_token).body["metrics"]["runs"];
  CHECK(runs["waves"] == 1);
  CHECK(runs["calls"] == 2);
  CHECK(runs["wave_mean_us"].get<double>() > 0);
  CHECK(runs["call_mean_us"].get<double>() >= runs["wave_mean_us"].get<double>());
  auto text = f.node.call("GET", "/metrics", admin_token).raw;
  CHECK(text.find("voxos_run_wave_seconds_count 1\n") != std::string::npos);
  CHECK(text.find("voxos_run_call_seconds_count 2\n") != std::string::npos);
  CHECK(text.find("voxos_event_store_bytes ") != std::string::npos);
}

TEST_CASE("tenants and tokens survive a restart and revoked tokens stay revoked") {
  test::temp_dir dir;
  std::string tenant_id, token, revoked_token;
  {
    test::running_node node{dir};
    std::tie(tenant_id, token) = node.make_tenant("Acme");
    auto second = node.call("POST", "/v1/tokens", token, R"({"label":"old"})");
    revoked_token = second.body["token"].get<std::string>();
    REQUIRE(
      node.call("DELETE", "/v1/tokens/" + second.body["token_id"].get<std::string>(), token).status
      == 200);
  }
  test::running_node node{dir};
  auto who = node.call("GET", "/v1/whoami", token);
  REQUIRE(who.status == 200);
  CHECK(who.body["tenant_id"] == tenant_id);
  CHECK(node.call("GET", "/v1/whoami", revoked_token).status == 401);
  auto tenants = node.call("GET", "/v1/admin/tenants", admin_token);
  REQUIRE(tenants.body.size() == 1);
  CHECK(tenants.body[0]["name"] == "Acme");
}

TEST_CASE("a tool-calls request waits as long as its longest possible round") {
  using std::chrono::milliseconds;
  run_config run;
  // Every call one at a time, each to its deadline, and a minute to record.
  CHECK(round_wait_of(run) == milliseconds{128 * 60'000 + 60'000});
  run.max_calls = 4'096; // the bounds' maxima: 28 days and a minute, no overflow
  run.call_timeout_ms = 600'000;
  CHECK(round_wait_of(run) == milliseconds{int64_t{4'096} * 600'000 + 60'000});
  run.max_calls = 1;
  run.call_timeout_ms = 100;
  CHECK(round_wait_of(run) == milliseconds{60'100});
}
