#include "transport/auth/www_authenticate.hpp"

#include <doctest/doctest.h>

#include <string>

using voxos::auth::bearer_challenge;
using voxos::auth::parse_bearer_challenge;

namespace {

const char* const metadata_url = "http://localhost:1/.well-known/oauth-protected-resource/mcp";

} // namespace

// -- the headers MCP servers send ---------------------------------------------

TEST_CASE("the conformance suite's 401 challenge gives error, scope and metadata URL") {
  auto got = parse_bearer_challenge(
    R"(Bearer error="invalid_token", error_description="Missing Authorization header", )"
    R"(scope="mcp:basic", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp")");
  CHECK(got.present);
  CHECK(got.error == "invalid_token");
  CHECK(got.scope == "mcp:basic");
  CHECK(got.has_scope);
  CHECK(got.resource_metadata == metadata_url);
}

TEST_CASE("the conformance suite's step-up challenges give insufficient_scope and the scopes") {
  auto trailing_error = parse_bearer_challenge(
    R"(Bearer scope="mcp:basic mcp:write", )"
    R"(resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp", )"
    R"(error="insufficient_scope")");
  CHECK(trailing_error.present);
  CHECK(trailing_error.error == "insufficient_scope");
  CHECK(trailing_error.scope == "mcp:basic mcp:write");
  CHECK(trailing_error.resource_metadata == metadata_url);

  auto leading_error = parse_bearer_challenge(
    R"(Bearer error="insufficient_scope", scope="mcp:basic", )"
    R"(resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp", )"
    R"(error_description="Scope upgrade will never succeed")");
  CHECK(leading_error.error == "insufficient_scope");
  CHECK(leading_error.scope == "mcp:basic");
  CHECK(leading_error.resource_metadata == metadata_url);
}

TEST_CASE("a challenge without parameters is present with nothing else") {
  for (const char* header : {"Bearer", "Bearer ", "  Bearer  ", "Bearer,"}) {
    CAPTURE(header);
    auto got = parse_bearer_challenge(header);
    CHECK(got.present);
    CHECK(got.error.empty());
    CHECK(got.scope.empty());
    CHECK_FALSE(got.has_scope);
    CHECK(got.resource_metadata.empty());
  }
}

// -- several challenges -------------------------------------------------------

TEST_CASE("the Bearer challenge is found after another scheme's parameters") {
  auto got = parse_bearer_challenge(R"(Basic realm="x", Bearer scope="a b")");
  CHECK(got.present);
  CHECK(got.scope == "a b");
  CHECK(got.error.empty());
}

TEST_CASE("another scheme's token68 credentials before Bearer do not stop the search") {
  auto got = parse_bearer_challenge(R"(Basic dXNlcg==, Bearer error="invalid_token")");
  CHECK(got.present);
  CHECK(got.error == "invalid_token");
}

TEST_CASE("parameters of a challenge after the Bearer one are not taken") {
  auto got = parse_bearer_challenge(R"(Bearer error="invalid_token", DPoP scope="x", error="y")");
  CHECK(got.present);
  CHECK(got.error == "invalid_token");
  CHECK_FALSE(got.has_scope);
  CHECK(got.scope.empty());
}

TEST_CASE("only the first of two Bearer challenges is read") {
  auto got = parse_bearer_challenge(R"(Bearer scope="first", Bearer scope="second")");
  CHECK(got.scope == "first");
}

TEST_CASE("a DPoP-only challenge has no Bearer challenge") {
  auto got = parse_bearer_challenge(R"(DPoP algs="ES256 PS256", error="invalid_token")");
  CHECK_FALSE(got.present);
  CHECK(got.error.empty());
  CHECK_FALSE(got.has_scope);
}

TEST_CASE("a header without any Bearer challenge yields present false") {
  for (const char* header : {"", "Basic realm=\"x\"", "Bearerx scope=\"a\"", "Negotiate"}) {
    CAPTURE(header);
    CHECK_FALSE(parse_bearer_challenge(header).present);
  }
}

// -- spelling -----------------------------------------------------------------

TEST_CASE("scheme and parameter names compare without case") {
  auto got = parse_bearer_challenge(
    R"(bEARER ERROR="insufficient_scope", Scope="a", Resource_Metadata="https://h/m")");
  CHECK(got.present);
  CHECK(got.error == "insufficient_scope");
  CHECK(got.scope == "a");
  CHECK(got.resource_metadata == "https://h/m");
}

TEST_CASE("parameter values may be tokens, with spaces around the equals sign") {
  auto got = parse_bearer_challenge("Bearer error = invalid_token ,scope=mcp:read\t, realm=x");
  CHECK(got.present);
  CHECK(got.error == "invalid_token");
  // ':' is not a token character: the value ends before it, and the rest
  // does not parse.
  CHECK(got.scope == "mcp");
}

TEST_CASE("backslash escapes in quoted strings are undone") {
  auto got = parse_bearer_challenge(R"(Bearer scope="a \"b\" c\\d \e", error="x")");
  CHECK(got.scope == R"(a "b" c\d e)");
  CHECK(got.error == "x");
}

TEST_CASE("quoted values keep commas and equals signs") {
  auto got = parse_bearer_challenge(R"(Bearer resource_metadata="https://h/m?a=1,b=2", scope="x")");
  CHECK(got.resource_metadata == "https://h/m?a=1,b=2");
  CHECK(got.scope == "x");
}

TEST_CASE("an empty scope is sent, unlike a missing one") {
  auto empty = parse_bearer_challenge(R"(Bearer scope="", error="insufficient_scope")");
  CHECK(empty.has_scope);
  CHECK(empty.scope.empty());
  CHECK(empty.error == "insufficient_scope");
  auto missing = parse_bearer_challenge(R"(Bearer error="insufficient_scope")");
  CHECK_FALSE(missing.has_scope);
}

// -- faults -------------------------------------------------------------------

TEST_CASE("an unterminated quoted string keeps what was read before it") {
  auto got = parse_bearer_challenge(R"(Bearer error="invalid_token", scope="a b)");
  CHECK(got.present);
  CHECK(got.error == "invalid_token");
  CHECK_FALSE(got.has_scope);
  CHECK(got.scope.empty());

  auto escape_at_end = parse_bearer_challenge(R"(Bearer error="x", scope="a\)");
  CHECK(escape_at_end.error == "x");
  CHECK_FALSE(escape_at_end.has_scope);
}

TEST_CASE("a stray character ends the parse with what was read") {
  auto got = parse_bearer_challenge(R"(Bearer error="invalid_token", @scope="a")");
  CHECK(got.present);
  CHECK(got.error == "invalid_token");
  CHECK_FALSE(got.has_scope);
  auto no_name = parse_bearer_challenge(R"(Bearer error="e", ="v", scope="a")");
  CHECK(no_name.error == "e");
  CHECK_FALSE(no_name.has_scope);
}

TEST_CASE("a header over 8 KiB is read no further than its first 8 KiB") {
  const std::string padding(9000, 'p');
  auto late = parse_bearer_challenge("Basic realm=\"" + padding + "\", Bearer scope=\"a\"");
  CHECK_FALSE(late.present);
  auto early = parse_bearer_challenge("Bearer scope=\"a\", realm=\"" + padding + "\"");
  CHECK(early.present);
  CHECK(early.scope == "a");
}
