// A tenant's preset servers over HTTP, checked down to the store and the
// vault: the deployed Flightradar24 choice takes a complete public HTTPS URL
// of its own (kept as normalised) with its endpoint bearer, which is sealed
// in the vault and never stored, listed or answered in clear; unregistered
// loopback and private URLs and plain http are refused, and nothing is stored.
#include <doctest/doctest.h>

#include "actors/tenant/tenant_events.hpp"
#include "config/base64.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "support/node_store.hpp"
#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

const std::string bearer_token = "fr24-endpoint-bearer-0123456789abcdef";
const std::string bearer = "Bearer " + bearer_token;

struct servers_fixture {
  test::temp_dir dir;
  std::optional<test::running_node> node{std::in_place, dir};
  std::string tenant_id;
  std::string token;

  servers_fixture() { std::tie(tenant_id, token) = node->make_tenant("Acme"); }

  test::http_reply create(const json& body) {
    return node->call("POST", "/v1/servers", token, body.dump());
  }

  json flightradar(const std::string& url) {
    return {{"preset_id", "flightradar24_deployed"},
            {"url", url},
            {"headers", {{"Authorization", bearer}}}};
  }

  /// Stops the node and opens its store as the node does.
  std::unique_ptr<event_db> stop_and_open_store() {
    node.reset();
    return test::open_node_store(dir);
  }
};

std::string error_code(const test::http_reply& reply) {
  return reply.body.is_object() && reply.body.contains("error")
           ? reply.body["error"].value("code", "")
           : "<none>";
}

/// Every event of a tenant, on every stream, as stored.
std::vector<event_record> all_events(event_db& db, const std::string& tenant) {
  auto events = db.read_tenant(tenant, 100'000);
  REQUIRE(events);
  return std::move(*events);
}

} // namespace

TEST_CASE("the deployed Flightradar24 preset keeps a public HTTPS URL of its own as normalised "
          "and seals its bearer") {
  servers_fixture f;
  // Its own host name (written with capitals, a trailing dot and the
  // default port) and its own path: kept, in normalised form.
  auto made = f.create(f.flightradar("https://Flights.Example-Team.COM.:443/deployments/fr24/mcp"));
  REQUIRE_MESSAGE(made.status == 201, made.raw);
  const std::string normalised = "https://flights.example-team.com/deployments/fr24/mcp";
  CHECK(made.body["url"] == normalised);
  CHECK(made.body["preset_id"] == "flightradar24_deployed");
  CHECK(made.body["auth"] == "static_bearer");
  CHECK(made.body["has_headers"] == true);
  CHECK(made.body["enabled"] == false);
  CHECK(made.body["connected"] == false);
  CHECK(made.raw.find(bearer_token) == std::string::npos);
  auto id = made.body["server_id"].get<std::string>();
  // Never listed, never in the audit.
  auto listing = f.node->call("GET", "/v1/servers", f.token);
  REQUIRE(listing.status == 200);
  CHECK(listing.raw.find(bearer_token) == std::string::npos);
  bool listed = false;
  for (const auto& s : listing.body)
    if (s["server_id"] == id)
      listed = s["url"] == normalised && !s.contains("sealed_headers");
  CHECK(listed);
  CHECK(f.node->call("GET", "/v1/audit", f.token).raw.find(bearer_token) == std::string::npos);

  // In the store: the record holds the sealed value only; the server's data
  // key opens it (for this tenant, server and purpose) to the bearer; no
  // event holds it in clear.
  std::shared_ptr<event_db> db = f.stop_and_open_store();
  auto value = db->get_state(tenant_events::state_prefix(f.tenant_id) + "server/" + id);
  REQUIRE(value);
  REQUIRE(value->has_value());
  auto record = json::parse(**value);
  CHECK(record["url"] == normalised);
  CHECK(record["auth"] == "static_bearer");
  CHECK(value->value().find(bearer_token) == std::string::npos);
  REQUIRE(record.contains("sealed_headers"));
  auto sealed = base64::decode(record["sealed_headers"].get<std::string>());
  REQUIRE(sealed);
  CHECK(sealed->find(bearer_token) == std::string::npos);
  auto node_key = vault::create("k1", std::string(32, 'k')); // test::running_node's key
  REQUIRE(node_key.is_ok());
  server_keys keys{std::make_shared<const vault>(std::move(*node_key)), db};
  auto opened = keys.open_for_server(f.tenant_id, id, "headers", *sealed);
  REQUIRE(opened.is_ok());
  CHECK(*opened == json::array({json::array({"Authorization", bearer})}).dump());
  // Sealed for this server and purpose only.
  CHECK_FALSE(keys.open_for_server(f.tenant_id, "s_other", "headers", *sealed).is_ok());
  CHECK_FALSE(keys.open_for_server(f.tenant_id, id, "oauth.tokens", *sealed).is_ok());
  for (const auto& ev : all_events(*db, f.tenant_id)) {
    CAPTURE(ev.type);
    CHECK(ev.data.find(bearer_token) == std::string::npos);
  }
}

TEST_CASE("the deployed Flightradar24 preset refuses unregistered loopback private and plain http "
          "URLs and stores nothing") {
  servers_fixture f;
  auto before = f.node->call("GET", "/v1/servers", f.token).body;
  const char* refused[] = {
    "https://127.0.0.1/fr24/mcp",               // loopback address
    "https://localhost:8443/fr24/mcp",          // loopback name
    "https://fr24.localhost/mcp",               // a name under .localhost
    "https://[::1]/fr24/mcp",                   // IPv6 loopback
    "https://10.20.30.40/fr24/mcp",             // private network
    "https://192.168.1.20:8443/fr24/mcp",       // private network
    "https://[fd00::5]/fr24/mcp",               // unique local
    "https://169.254.169.254/latest",           // metadata
    "http://flights.example-team.com/fr24/mcp", // plain http to a public name
    "http://flightradar24-mcp:8000/mcp",        // the Local Compose URL, not registered here
  };
  for (const auto* url : refused) {
    CAPTURE(url);
    auto reply = f.create(f.flightradar(url));
    CHECK(reply.status == 403);
    CHECK(error_code(reply) == "forbidden");
    // The answer names neither the bearer nor the URL.
    CHECK(reply.raw.find(bearer_token) == std::string::npos);
    CHECK(reply.raw.find(url) == std::string::npos);
  }
  // A public URL without its bearer is refused by field.
  auto no_bearer = f.create(
    {{"preset_id", "flightradar24_deployed"}, {"url", "https://flights.example-team.com/mcp"}});
  CHECK(no_bearer.status == 400);
  CHECK(error_code(no_bearer) == "missing_field");
  // Nothing stored: the same servers, no config event, no clear bearer in any event.
  CHECK(f.node->call("GET", "/v1/servers", f.token).body == before);
  auto audit = f.node->call("GET", "/v1/audit", f.token);
  CHECK(audit.raw.find(bearer_token) == std::string::npos);
  auto db = f.stop_and_open_store();
  int upserts = 0;
  for (const auto& ev : all_events(*db, f.tenant_id)) {
    CAPTURE(ev.type);
    CHECK(ev.data.find(bearer_token) == std::string::npos);
    upserts += ev.stream == tenant_events::stream && ev.type == "server.upserted" ? 1 : 0;
  }
  CHECK(upserts == 1); // the default Exa server the tenant started with
}
