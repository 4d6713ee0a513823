#include "transport/auth/oauth_metadata.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

using nlohmann::json;
using voxos::errc;
using voxos::auth::parse_resource_metadata;
using voxos::auth::parse_server_metadata;
using voxos::auth::resource_matches;
using voxos::auth::resource_metadata_urls;
using voxos::auth::server_metadata_urls;
using strings = std::vector<std::string>;

namespace {

/// The bad_json refusal of `doc` by `parse`, with `message`.
template <class Parse>
void check_malformed(Parse parse, const json& doc, const std::string& message) {
  CAPTURE(doc.dump());
  auto parsed = parse(doc);
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.error().code() == errc::bad_json);
  CHECK(parsed.error().message() == message);
}

} // namespace

// -- where the documents are --------------------------------------------------

TEST_CASE("protected resource metadata is looked for path-inserted first, then at the root") {
  CHECK(resource_metadata_urls("https://mcp.example.com/mcp")
        == strings{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                   "https://mcp.example.com/.well-known/oauth-protected-resource"});
  CHECK(resource_metadata_urls("https://mcp.example.com:8443/tenant/a/mcp")
        == strings{"https://mcp.example.com:8443/.well-known/oauth-protected-resource/tenant/a/mcp",
                   "https://mcp.example.com:8443/.well-known/oauth-protected-resource"});
}

TEST_CASE("a server at the root has one protected resource metadata URL") {
  const strings root{"https://mcp.example.com/.well-known/oauth-protected-resource"};
  CHECK(resource_metadata_urls("https://mcp.example.com") == root);
  CHECK(resource_metadata_urls("https://mcp.example.com/") == root);
  CHECK(resource_metadata_urls("https://MCP.example.com:443/?x=1") == root);
}

TEST_CASE("a trailing slash and the query of the server URL are left out of the metadata URL") {
  CHECK(resource_metadata_urls("https://mcp.example.com/mcp/")
        == strings{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                   "https://mcp.example.com/.well-known/oauth-protected-resource"});
  CHECK(resource_metadata_urls("https://mcp.example.com/mcp?session=1")
        == strings{"https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
                   "https://mcp.example.com/.well-known/oauth-protected-resource"});
}

TEST_CASE("an unparseable server URL has no metadata URLs") {
  CHECK(resource_metadata_urls("not a url").empty());
  CHECK(resource_metadata_urls("ftp://h/mcp").empty());
  CHECK(server_metadata_urls("https://user:pw@h/").empty());
}

TEST_CASE("an issuer with a path has three metadata URLs in RFC 8414 then OpenID order") {
  const strings expected{"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                         "https://auth.example.com/.well-known/openid-configuration/tenant1",
                         "https://auth.example.com/tenant1/.well-known/openid-configuration"};
  CHECK(server_metadata_urls("https://auth.example.com/tenant1") == expected);
  CHECK(server_metadata_urls("https://auth.example.com/tenant1/") == expected);
}

TEST_CASE("an issuer without a path has two metadata URLs") {
  const strings expected{"https://auth.example.com/.well-known/oauth-authorization-server",
                         "https://auth.example.com/.well-known/openid-configuration"};
  CHECK(server_metadata_urls("https://auth.example.com") == expected);
  CHECK(server_metadata_urls("https://auth.example.com/") == expected);
  CHECK(server_metadata_urls("http://127.0.0.1:9000")
        == strings{"http://127.0.0.1:9000/.well-known/oauth-authorization-server",
                   "http://127.0.0.1:9000/.well-known/openid-configuration"});
}

TEST_CASE("origin_of keeps scheme, host and a port other than the default") {
  CHECK(voxos::auth::origin_of("https://Auth.Example.com:443/a/b?c") == "https://auth.example.com");
  CHECK(voxos::auth::origin_of("http://127.0.0.1:9000/x") == "http://127.0.0.1:9000");
  CHECK(voxos::auth::origin_of("https://[::1]:8443/") == "https://[::1]:8443");
  CHECK(voxos::auth::origin_of("garbage").empty());
}

// -- whether a protected resource names the server ----------------------------

TEST_CASE("a resource equal to the server URL matches, after normalisation") {
  CHECK(resource_matches("https://mcp.example.com/mcp", "https://mcp.example.com/mcp"));
  CHECK(resource_matches("https://MCP.example.com:443/mcp", "https://mcp.example.com/mcp"));
}

TEST_CASE("a resource naming the origin only covers every path of it") {
  CHECK(resource_matches("https://mcp.example.com", "https://mcp.example.com/mcp"));
  CHECK(resource_matches("https://mcp.example.com/", "https://mcp.example.com/a/b/mcp"));
}

TEST_CASE("a resource path covers the server's path at a segment boundary only") {
  CHECK(resource_matches("https://h/mcp", "https://h/mcp/tools"));
  CHECK(resource_matches("https://h/mcp/", "https://h/mcp/tools"));
  CHECK_FALSE(resource_matches("https://h/mcp", "https://h/mcpx"));
  CHECK_FALSE(resource_matches("https://h/mcp/tools", "https://h/mcp"));
  CHECK_FALSE(resource_matches("https://h/other", "https://h/mcp"));
}

TEST_CASE("a resource on another scheme, host or port does not match") {
  CHECK_FALSE(resource_matches("https://h:8443/mcp", "https://h/mcp"));
  CHECK_FALSE(resource_matches("https://other/mcp", "https://h/mcp"));
  CHECK_FALSE(resource_matches("https://h.evil/mcp", "https://h/mcp"));
  CHECK_FALSE(resource_matches("http://h/mcp", "https://h/mcp"));
  CHECK_FALSE(resource_matches("http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"));
}

TEST_CASE("an unparseable resource matches nothing") {
  CHECK_FALSE(resource_matches("", "https://h/mcp"));
  CHECK_FALSE(resource_matches("mcp", "https://h/mcp"));
  CHECK_FALSE(resource_matches("https://h/mcp", "not a url"));
}

// -- reading the documents ----------------------------------------------------

TEST_CASE("protected resource metadata gives resource, servers and scopes") {
  auto parsed = parse_resource_metadata(json{{"resource", "https://h/mcp"},
                                             {"authorization_servers", {"https://a", "https://b"}},
                                             {"scopes_supported", json::array()},
                                             {"bearer_methods_supported", {"header"}}});
  REQUIRE(parsed.is_ok());
  CHECK(parsed->resource == "https://h/mcp");
  CHECK(parsed->authorization_servers == strings{"https://a", "https://b"});
  CHECK(parsed->scopes_supported.empty());
  CHECK(parsed->has_scopes_supported);

  auto bare =
    parse_resource_metadata(json{{"resource", "https://h/mcp"}, {"scopes_supported", nullptr}});
  REQUIRE(bare.is_ok());
  CHECK(bare->authorization_servers.empty());
  CHECK_FALSE(bare->has_scopes_supported);
}

TEST_CASE("protected resource metadata with a field of the wrong type is bad_json") {
  auto parse = [](const json& doc) { return parse_resource_metadata(doc); };
  check_malformed(parse, json::array(), "protected resource metadata: not a JSON object");
  check_malformed(parse, json("text"), "protected resource metadata: not a JSON object");
  check_malformed(parse, json::object(), "protected resource metadata: resource: required string");
  check_malformed(parse, json{{"resource", 7}},
                  "protected resource metadata: resource: required string");
  check_malformed(parse, json{{"resource", nullptr}},
                  "protected resource metadata: resource: required string");
  check_malformed(parse, json{{"resource", "https://h"}, {"authorization_servers", "https://a"}},
                  "protected resource metadata: authorization_servers: array of strings");
  check_malformed(parse,
                  json{{"resource", "https://h"}, {"authorization_servers", {"https://a", 1}}},
                  "protected resource metadata: authorization_servers: array of strings");
  check_malformed(parse, json{{"resource", "https://h"}, {"scopes_supported", {{"a", 1}}}},
                  "protected resource metadata: scopes_supported: array of strings");
}

TEST_CASE("authorization server metadata gives endpoints, lists and flags") {
  auto parsed =
    parse_server_metadata(json{{"issuer", "https://a"},
                               {"authorization_endpoint", "https://a/auth"},
                               {"token_endpoint", "https://a/token"},
                               {"registration_endpoint", "https://a/reg"},
                               {"scopes_supported", {"openid", "offline_access"}},
                               {"code_challenge_methods_supported", {"plain", "S256"}},
                               {"token_endpoint_auth_methods_supported", {"private_key_jwt"}},
                               {"client_id_metadata_document_supported", true},
                               {"authorization_response_iss_parameter_supported", true},
                               {"jwks_uri", "https://a/jwks"}});
  REQUIRE(parsed.is_ok());
  CHECK(parsed->issuer == "https://a");
  CHECK(parsed->authorization_endpoint == "https://a/auth");
  CHECK(parsed->token_endpoint == "https://a/token");
  CHECK(parsed->registration_endpoint == "https://a/reg");
  CHECK(voxos::auth::lists(parsed->scopes_supported, "offline_access"));
  CHECK(voxos::auth::lists(parsed->code_challenge_methods_supported, "S256"));
  CHECK_FALSE(voxos::auth::lists(parsed->code_challenge_methods_supported, "s256"));
  CHECK(parsed->token_endpoint_auth_methods_supported == strings{"private_key_jwt"});
  CHECK(parsed->client_id_metadata_document_supported);
  CHECK(parsed->iss_parameter_supported);
  CHECK_FALSE(parsed->defaulted);

  auto bare = parse_server_metadata(json{{"issuer", "https://a"}, {"token_endpoint", nullptr}});
  REQUIRE(bare.is_ok());
  CHECK(bare->token_endpoint.empty());
  CHECK_FALSE(bare->client_id_metadata_document_supported);
  CHECK_FALSE(bare->iss_parameter_supported);
}

TEST_CASE("authorization server metadata with a field of the wrong type is bad_json") {
  auto parse = [](const json& doc) { return parse_server_metadata(doc); };
  const std::string prefix = "authorization server metadata: ";
  check_malformed(parse, json::array(), prefix + "not a JSON object");
  check_malformed(parse, json{{"token_endpoint", "https://a/t"}},
                  prefix + "issuer: required string");
  check_malformed(parse, json{{"issuer", true}}, prefix + "issuer: required string");
  auto with = [](const char* name, json value) {
    json doc{{"issuer", "https://a"}};
    doc[name] = std::move(value);
    return doc;
  };
  check_malformed(parse, with("authorization_endpoint", 1),
                  prefix + "authorization_endpoint: string");
  check_malformed(parse, with("token_endpoint", json::array({"https://a/t"})),
                  prefix + "token_endpoint: string");
  check_malformed(parse, with("registration_endpoint", json::object()),
                  prefix + "registration_endpoint: string");
  check_malformed(parse, with("scopes_supported", "openid"),
                  prefix + "scopes_supported: array of strings");
  check_malformed(parse, with("response_types_supported", {1}),
                  prefix + "response_types_supported: array of strings");
  check_malformed(parse, with("grant_types_supported", {"a", nullptr}),
                  prefix + "grant_types_supported: array of strings");
  check_malformed(parse, with("code_challenge_methods_supported", "S256"),
                  prefix + "code_challenge_methods_supported: array of strings");
  check_malformed(parse, with("token_endpoint_auth_methods_supported", 3),
                  prefix + "token_endpoint_auth_methods_supported: array of strings");
  check_malformed(parse, with("client_id_metadata_document_supported", "true"),
                  prefix + "client_id_metadata_document_supported: boolean");
  check_malformed(parse, with("authorization_response_iss_parameter_supported", 1),
                  prefix + "authorization_response_iss_parameter_supported: boolean");
}

TEST_CASE("the 2025-03-26 defaults sit at the origin and assume PKCE S256") {
  auto defaults = voxos::auth::default_server_metadata("https://mcp.example.com");
  CHECK(defaults.issuer == "https://mcp.example.com");
  CHECK(defaults.authorization_endpoint == "https://mcp.example.com/authorize");
  CHECK(defaults.token_endpoint == "https://mcp.example.com/token");
  CHECK(defaults.registration_endpoint == "https://mcp.example.com/register");
  CHECK(defaults.code_challenge_methods_supported == strings{"S256"});
  CHECK(defaults.defaulted);
}
