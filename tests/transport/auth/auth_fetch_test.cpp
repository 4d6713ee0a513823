#include "transport/auth/auth_fetch.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "support/fake_oauth_server.hpp"
#include "support/loopback_http.hpp"
#include "transport/url_policy.hpp"

using voxos::errc;
using voxos::url_policy;
using voxos::auth::auth_fetch_options;
using voxos::auth::auth_fetcher;
using voxos::auth::form_decode;
using voxos::auth::form_encode;
using voxos::auth::form_fields;
using voxos::test::canned_reply;
using voxos::test::check_names_none;
using voxos::test::fake_oauth_server;

namespace {

/// A fetcher whose policy is a node's: nothing trusted but `registered`.
auth_fetcher strict_fetcher(std::vector<voxos::node_config::registered_url> registered = {}) {
  return auth_fetcher{std::make_shared<const url_policy>(std::move(registered))};
}

} // namespace

// -- form encoding ------------------------------------------------------------

TEST_CASE("form_encode percent-encodes all but unreserved bytes and writes a space as plus") {
  CHECK(form_encode({{"grant_type", "client_credentials"}, {"scope", "a b"}})
        == "grant_type=client_credentials&scope=a+b");
  CHECK(form_encode({{"k", "A-z.0_9~"}}) == "k=A-z.0_9~");
  CHECK(form_encode({{"k", "a+b&c=d/e:f%"}}) == "k=a%2Bb%26c%3Dd%2Fe%3Af%25");
  CHECK(form_encode({{"x y", "\xc3\xa9\n"}}) == "x+y=%C3%A9%0A");
  CHECK(form_encode({}).empty());
  CHECK(form_encode({{"empty", ""}}) == "empty=");
}

TEST_CASE("percent_encode writes a space as %20") {
  CHECK(voxos::auth::percent_encode("a b+c") == "a%20b%2Bc");
  CHECK(voxos::auth::percent_encode("https://h/cb") == "https%3A%2F%2Fh%2Fcb");
}

TEST_CASE("form_decode undoes form_encode field by field, in order, duplicates kept") {
  const form_fields fields{{"code", "a+b/c d"}, {"state", "\x01\xff"}, {"code", "second"}};
  CHECK(form_decode(form_encode(fields)) == fields);
}

TEST_CASE("form_decode keeps malformed escapes and reads fields without a value") {
  CHECK(form_decode("a=%zz&b=%4&c=100%") == form_fields{{"a", "%zz"}, {"b", "%4"}, {"c", "100%"}});
  CHECK(form_decode("flag&&x=%41%62") == form_fields{{"flag", ""}, {"x", "Ab"}});
  CHECK(form_decode("=v&k=a=b") == form_fields{{"", "v"}, {"k", "a=b"}});
  CHECK(form_decode("").empty());
}

// -- fetching -----------------------------------------------------------------

TEST_CASE("get answers status, media type, WWW-Authenticate and body") {
  fake_oauth_server server;
  canned_reply reply{401, "{\"a\":1}", "Application/JSON; charset=utf-8", {}};
  reply.headers.emplace("WWW-Authenticate", "Bearer scope=\"x\"");
  server.answer("GET", "/doc", reply);
  auto got = voxos::test::loopback_fetcher()->get(server.url("/doc"));
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->status == 401);
  CHECK(got->content_type == "application/json");
  CHECK(got->is_json());
  CHECK(got->www_authenticate == "Bearer scope=\"x\"");
  CHECK(got->body == "{\"a\":1}");
}

TEST_CASE("post_form sends a form body and asks for JSON") {
  fake_oauth_server server;
  server.answer("POST", "/token", {200, "{}", "application/json", {}});
  auto got = voxos::test::loopback_fetcher()->post_form(server.url("/token"),
                                                        {{"grant_type", "x"}, {"scope", "a b"}},
                                                        {{"Authorization", "Basic YTpi"}});
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  auto seen = server.requests("/token");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].content_type == "application/x-www-form-urlencoded");
  CHECK(seen[0].body == "grant_type=x&scope=a+b");
  CHECK(seen[0].authorization == "Basic YTpi");
}

TEST_CASE("post_json sends the JSON text as it is") {
  fake_oauth_server server;
  server.answer("POST", "/register", {201, "{}", "application/json", {}});
  auto got = voxos::test::loopback_fetcher()->post_json(server.url("/register"), "{\"a\":[1]}");
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->status == 201);
  auto seen = server.requests("/register");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].content_type == "application/json");
  CHECK(seen[0].body == "{\"a\":[1]}");
}

TEST_CASE("a redirect is refused and not followed, naming no URL") {
  fake_oauth_server server;
  server.answer("GET", "/doc", voxos::test::redirect_reply(server.url("/elsewhere?token=t0k3n")));
  server.answer("POST", "/token", voxos::test::redirect_reply(server.url("/elsewhere")));
  auto fetch = voxos::test::loopback_fetcher();
  auto got = fetch->get(server.url("/doc"));
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::forbidden);
  CHECK(got.error().message() == "redirects are refused");
  auto posted = fetch->post_form(server.url("/token"), {{"a", "b"}});
  REQUIRE_FALSE(posted.is_ok());
  CHECK(posted.error().code() == errc::forbidden);
  CHECK(server.hits("/elsewhere") == 0);
}

TEST_CASE("get_redirect returns a redirect with its Location, still unfollowed") {
  fake_oauth_server server;
  server.answer("GET", "/authorize",
                voxos::test::redirect_reply("http://localhost:3000/callback?code=c&state=s"));
  auto got = voxos::test::loopback_fetcher()->get_redirect(server.url("/authorize"));
  REQUIRE_MESSAGE(got.is_ok(), got.error().message());
  CHECK(got->status == 302);
  CHECK(got->location == "http://localhost:3000/callback?code=c&state=s");
}

TEST_CASE("a body over the 1 MiB bound is body_too_large") {
  fake_oauth_server server;
  server.answer("GET", "/big", {200, std::string(10u << 20, 'x'), "application/json", {}});
  server.answer("GET", "/at-bound", {200, std::string(1u << 20, 'x'), "application/json", {}});
  auto fetch = voxos::test::loopback_fetcher();
  auto big = fetch->get(server.url("/big"));
  REQUIRE_FALSE(big.is_ok());
  CHECK(big.error().code() == errc::body_too_large);
  check_names_none(big.error(), {server.url("/big"), "127.0.0.1"});
  auto at_bound = fetch->get(server.url("/at-bound"));
  REQUIRE_MESSAGE(at_bound.is_ok(), at_bound.error().message());
  CHECK(at_bound->body.size() == (1u << 20));
}

TEST_CASE("the body bound is the options' one") {
  fake_oauth_server server;
  server.answer("GET", "/doc", {200, std::string(2048, 'x'), "application/json", {}});
  auth_fetch_options opts;
  opts.max_body_bytes = 1024;
  auto got = voxos::test::loopback_fetcher(opts)->get(server.url("/doc"));
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::body_too_large);
}

TEST_CASE("a server that never answers ends unavailable by the timeout") {
  auto [fd, port] = voxos::test::loopback_listener();
  auth_fetch_options opts;
  opts.timeout = std::chrono::milliseconds{200};
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/token?k=secret-value";
  auto got = voxos::test::loopback_fetcher(opts)->post_form(url, {{"client_secret", "hunter2"}});
  ::close(fd);
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::unavailable);
  check_names_none(got.error(), {url, "secret-value", "hunter2", "127.0.0.1"});
}

// -- the URL policy -----------------------------------------------------------

TEST_CASE("a node's policy refuses a loopback URL before any request is made") {
  fake_oauth_server server;
  server.answer("GET", "/doc", {200, "{}", "application/json", {}});
  auto got = strict_fetcher().get(server.url("/doc"));
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::forbidden);
  check_names_none(got.error(), {server.url("/doc"), "127.0.0.1"});
  CHECK(server.total_hits() == 0);
}

TEST_CASE("the policy refuses private, link-local and metadata addresses without naming them") {
  auto fetch = voxos::test::loopback_fetcher();
  for (const char* url :
       {"https://10.0.0.7/token", "https://192.168.1.1/.well-known/x",
        "https://169.254.169.254/latest/meta-data/", "http://169.254.169.254/latest/meta-data/",
        "https://[fd00:ec2::254]/", "https://100.100.100.200/"}) {
    CAPTURE(url);
    auto got = fetch->get(url);
    REQUIRE_FALSE(got.is_ok());
    CHECK(got.error().code() == errc::forbidden);
    check_names_none(got.error(), {url, "169.254", "10.0.0.7", "192.168", "fd00", "100.100"});
  }
}

TEST_CASE("a URL that does not parse is out_of_range") {
  auto got = voxos::test::loopback_fetcher()->get("https://exa mple.com/?token=abc");
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.error().code() == errc::out_of_range);
  check_names_none(got.error(), {"exa mple", "token=abc"});
}

TEST_CASE("a URL registered for oauth or for mcp passes the policy, another purpose does not") {
  fake_oauth_server server;
  server.answer("GET", "/doc", {200, "{}", "application/json", {}});
  const auto url = server.url("/doc");
  auto as_oauth = strict_fetcher({{url, "oauth"}}).get(url);
  CHECK_MESSAGE(as_oauth.is_ok(), as_oauth.error().message());
  auto as_mcp = strict_fetcher({{url, "mcp"}}).get(url);
  CHECK_MESSAGE(as_mcp.is_ok(), as_mcp.error().message());
  auto as_other = strict_fetcher({{url, "webhook"}}).get(url);
  REQUIRE_FALSE(as_other.is_ok());
  CHECK(as_other.error().code() == errc::forbidden);
  // Registration is exact: a neighbour of a registered URL is not.
  auto neighbour = strict_fetcher({{url, "oauth"}}).get(server.url("/doc2"));
  REQUIRE_FALSE(neighbour.is_ok());
  CHECK(neighbour.error().code() == errc::forbidden);
  CHECK(server.total_hits() == 2);
}
