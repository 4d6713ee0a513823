// Tenants written by an earlier node (their events already in the store, no
// migrations applied): the next node applies the data migrations. The
// default Exa server reaches only tenants that never had an Exa record
// (existing ones are left as they were, a deleted one stays deleted); the
// contact-search prerequisite reaches a tenant with an allowed place-call
// grant once, and never replaces an explicit deny. A run over 2,000 cached
// tools starts and persists its snapshot.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "actors/tenant/server_setup.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "config/base64.hpp"
#include "config/presets.hpp"
#include "storage/digest.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "support/node_store.hpp"
#include "support/running_node.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

constexpr const char* tenant_id = "t_existing";
constexpr const char* token = "vxt_existing-tenant-token-0123456789abcdef";

/// Appends `events` to one stream of a closed node's store.
void append_all(event_db& db, const std::string& tenant, const std::string& stream,
                std::vector<event_draft> events) {
  for (std::size_t from = 0; from < events.size(); from += 500) {
    append_request req;
    req.tenant = tenant;
    req.stream = stream;
    auto to = std::min(events.size(), from + 500);
    req.events.assign(events.begin() + static_cast<std::ptrdiff_t>(from),
                      events.begin() + static_cast<std::ptrdiff_t>(to));
    REQUIRE(db.append(req, 1));
  }
}

/// Writes a tenant as an earlier node did: the directory's events (the
/// tenant and a token whose secret is `secret`) and `config` on its config
/// stream, with no migration markers.
void write_old_tenant(event_db& db, const std::string& tenant, const std::string& secret,
                      std::vector<event_draft> config) {
  token_record tok{"tok_" + tenant.substr(2), tenant, "old", 1, false};
  append_all(db, "_node", directory::stream,
             {{"tenant.created", directory::tenant_created({tenant, "Existing", 1})},
              {"token.issued", directory::token_issued(tok, digest::sha256_hex(secret))}});
  append_all(db, tenant, tenant_events::stream, std::move(config));
}

/// An existing tenant: one agent, 50 servers of 40 tools each, all granted,
/// no Exa server, no migration markers.
void write_existing_tenant(const test::temp_dir& dir) {
  auto db = test::open_node_store(dir);
  std::vector<event_draft> cfg{tenant_events::agent_created({"a_old", "Assistant", true})};
  for (int server_idx = 0; server_idx < 50; ++server_idx) {
    mcp_server_record s;
    s.server_id = "s_" + std::to_string(server_idx);
    s.tenant_id = tenant_id;
    s.label = "Service " + std::to_string(server_idx);
    s.url = "https://mcp" + std::to_string(server_idx) + ".example.com/mcp";
    s.enabled = s.trusted = s.connected = true;
    s.cache_version = "v1";
    s.discovered_us = 1;
    std::vector<tool_definition> cached;
    for (int tool_idx = 0; tool_idx < 40; ++tool_idx) {
      tool_definition def;
      def.name = "svc" + std::to_string(server_idx) + "_tool_" + std::to_string(tool_idx);
      def.description = "Lists or updates records of service " + std::to_string(server_idx) + ".";
      def.input_schema = R"({"type":"object","properties":{"query":{"type":"string"}}})";
      s.allowed_tools.push_back(def.name);
      cached.push_back(def);
    }
    s.cached_tools = tool_cache{std::move(cached)};
    cfg.push_back(tenant_events::server_upserted(s));
    for (const auto& name : s.allowed_tools)
      cfg.push_back(tenant_events::grant_set({"a_old", s.server_id, name, grant_decision::allow}));
  }
  write_old_tenant(*db, tenant_id, token, std::move(cfg));
}

} // namespace

TEST_CASE("an existing tenant gets the default Exa server by migration and keeps its agent") {
  test::temp_dir dir;
  write_existing_tenant(dir);
  test::running_node node{dir};
  auto agents = node.call("GET", "/v1/agents", token);
  REQUIRE(agents.status == 200);
  REQUIRE(agents.body.size() == 1);
  CHECK(agents.body[0]["agent_id"] == "a_old");
  int exa = 0;
  for (auto& s : node.call("GET", "/v1/servers", token).body)
    exa += s["preset_id"] == "exa" ? 1 : 0;
  CHECK(exa == 1);
}

TEST_CASE("a run over two thousand cached tools starts and persists its snapshot") {
  test::temp_dir dir;
  write_existing_tenant(dir);
  test::running_node node{dir};
  auto run = node.call("POST", "/v1/runs", token,
                       json{{"agent_id", "a_old"}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE_MESSAGE(run.status == 201, run.raw.substr(0, 300));
  CHECK(run.body["snapshot"]["tools"].size() > 2000);
  CHECK(run.body["view"]["catalog_mode"] == true);
  auto run_id = run.body["run_id"].get<std::string>();
  // After a restart the run answers from its persisted snapshot.
  node.stop();
  node.start();
  auto again = node.call("GET", "/v1/runs/" + run_id, token);
  REQUIRE(again.status == 200);
  CHECK(again.body["snapshot"] == run.body["snapshot"]);
}

namespace {

/// The node's vault as test::running_node keys it.
vault node_vault() {
  auto made = vault::create("k1", std::string(32, 'k'));
  REQUIRE(made.is_ok());
  return std::move(*made);
}

/// An Exa record of `tenant` as an earlier node stored it.
mcp_server_record old_exa_record(const std::string& tenant, const std::string& server_id,
                                 std::string_view preset_id) {
  const auto* p = find_preset(preset_id);
  REQUIRE(p != nullptr);
  mcp_server_record s;
  s.server_id = server_id;
  s.tenant_id = tenant;
  s.label = "My Exa";
  s.preset_id = p->id;
  s.transport = p->transport;
  s.url = p->url;
  s.auth = p->auth;
  s.cache_version = "v-old";
  s.discovered_us = 7;
  return s;
}

/// Servers the migration would count as Exa records, as the listing shows them.
std::vector<json> exa_servers(const json& listing) {
  std::vector<json> out;
  for (const auto& s : listing)
    if (s["preset_id"] == "exa" || s["preset_id"] == "exa_api_key"
        || s["url"].get<std::string>().find("exa.ai") != std::string::npos)
      out.push_back(s);
  return out;
}

/// The events of a tenant's config stream.
std::vector<event_record> config_events(event_db& db, const std::string& tenant) {
  auto events = db.read_stream({tenant, tenant_events::stream, 1, 10'000});
  REQUIRE(events);
  return std::move(*events);
}

std::size_t count_events(const std::vector<event_record>& events, const std::string& type,
                         const std::string& needle = {}) {
  return static_cast<std::size_t>(std::count_if(events.begin(), events.end(), [&](const auto& ev) {
    return ev.type == type && ev.data.find(needle) != std::string::npos;
  }));
}

/// A server record as the projection holds it.
json stored_server(event_db& db, const std::string& tenant, const std::string& server_id) {
  auto value = db.get_state(tenant_events::state_prefix(tenant) + "server/" + server_id);
  REQUIRE(value);
  REQUIRE(value->has_value());
  return json::parse(**value);
}

} // namespace

TEST_CASE("existing Exa records are left alone by the Exa migration") {
  test::temp_dir dir;
  const std::string opted_out = "t_optedout", keyed = "t_keyed";
  const std::string opted_out_token = "vxt_opted-out-tenant-token-0123456789abcd";
  const std::string keyed_token = "vxt_keyed-tenant-token-0123456789abcdefgh";
  const std::string api_key = "exa-live-key-0123456789abcdef";
  // A keyless Exa record the owner disabled (and narrowed to one tool), and
  // an API-key Exa record with its header sealed for (tenant, record).
  auto off = old_exa_record(opted_out, "s_exa_off", preset_ids::exa);
  off.enabled = off.connected = false;
  off.trusted = true;
  off.allowed_tools = {"web_search_exa"};
  auto key = old_exa_record(keyed, "s_exa_key", preset_ids::exa_api_key);
  key.enabled = key.trusted = key.connected = true;
  key.allowed_tools = {"web_search_exa", "web_search_advanced_exa"};
  const auto header_text = server_setup::headers_to_text({{"x-api-key", api_key}});
  auto sealed = node_vault().seal(keyed, "server/s_exa_key/headers", header_text);
  REQUIRE(sealed.is_ok());
  key.sealed_headers = base64::encode(reinterpret_cast<const unsigned char*>(sealed->data()),
                                      sealed->size(), base64::alphabet::standard, true);
  {
    auto db = test::open_node_store(dir);
    write_old_tenant(*db, opted_out, opted_out_token,
                     {tenant_events::agent_created({"a_one", "Assistant", true}),
                      tenant_events::server_upserted(off)});
    write_old_tenant(*db, keyed, keyed_token,
                     {tenant_events::agent_created({"a_two", "Assistant", true}),
                      tenant_events::server_upserted(key)});
  }

  {
    test::running_node node{dir};
    for (const auto& [token, record] :
         {std::pair{opted_out_token, off}, std::pair{keyed_token, key}}) {
      auto listing = node.call("GET", "/v1/servers", token);
      REQUIRE(listing.status == 200);
      auto exa = exa_servers(listing.body);
      REQUIRE(exa.size() == 1); // no second Exa server
      CHECK(exa[0]["server_id"] == record.server_id);
      CHECK(exa[0]["enabled"] == record.enabled);
      CHECK(exa[0]["trusted"] == record.trusted);
      CHECK(exa[0]["connected"] == record.connected);
      CHECK(exa[0]["allowed_tools"] == json(record.allowed_tools));
      CHECK(listing.raw.find(api_key) == std::string::npos);
    }
  }

  // In the store: the Exa migration ran for both, and each record is what
  // the earlier node wrote, but for the sealed header: the node's start
  // resealed it under the server's data key (one more server.upserted).
  std::shared_ptr<event_db> db = test::open_node_store(dir);
  for (const auto& [tenant, record] : {std::pair{opted_out, off}, std::pair{keyed, key}}) {
    auto events = config_events(*db, tenant);
    CHECK(count_events(events, "migration.applied", "exa_default_v1") == 1);
    CHECK(count_events(events, "server.upserted") == (record.sealed_headers.empty() ? 1 : 2));
    auto stored = stored_server(*db, tenant, record.server_id);
    auto expected = tenant_events::to_json(record);
    stored.erase("sealed_headers");
    expected.erase("sealed_headers");
    CHECK(stored == expected);
  }
  CHECK_FALSE(stored_server(*db, opted_out, "s_exa_off").contains("sealed_headers"));
  auto kept = stored_server(*db, keyed, "s_exa_key")["sealed_headers"].get<std::string>();
  CHECK(kept != key.sealed_headers);
  auto raw = base64::decode(kept);
  REQUIRE(raw);
  CHECK(vault::key_id_of(*raw) == std::optional<std::string_view>{"sk:s_exa_key"});
  server_keys keys{std::make_shared<const vault>(node_vault()), db};
  auto opened = keys.open_for_server(keyed, "s_exa_key", "headers", *raw);
  REQUIRE(opened.is_ok());
  CHECK(*opened == header_text);
  // The earlier event still holds the old value: it opens while the node key
  // that sealed it is configured (until that key is rotated out and dropped).
  auto old_raw = base64::decode(key.sealed_headers);
  REQUIRE(old_raw);
  CHECK(node_vault().open(keyed, "server/s_exa_key/headers", *old_raw).is_ok());
}

TEST_CASE(
  "the Exa migration counts a custom server on an exa.ai host, not one that only names it") {
  test::temp_dir dir;
  auto custom = [](const std::string& tenant, const std::string& id, const std::string& url) {
    mcp_server_record s;
    s.tenant_id = tenant;
    s.server_id = id;
    s.label = "Search";
    s.url = url;
    s.enabled = s.trusted = s.connected = true;
    return tenant_events::server_upserted(s);
  };
  {
    auto db = test::open_node_store(dir);
    write_old_tenant(*db, "t_lookalike", "vxt_lookalike-tenant-token-0123456789abcdef",
                     {tenant_events::agent_created({"a_1", "Assistant", true}),
                      custom("t_lookalike", "s_look", "https://notexa.ai.example/mcp"),
                      custom("t_lookalike", "s_path", "https://search.example.com/exa.ai/mcp")});
    write_old_tenant(*db, "t_own", "vxt_own-exa-tenant-token-0123456789abcdefgh",
                     {tenant_events::agent_created({"a_2", "Assistant", true}),
                      custom("t_own", "s_own", "https://eu.mcp.exa.ai/mcp")});
  }
  test::running_node node{dir};
  auto exa_presets = [&](const std::string& tenant_token) {
    int count = 0;
    auto servers = node.call("GET", "/v1/servers", tenant_token);
    REQUIRE(servers.status == 200);
    for (auto& s : servers.body)
      count += s["preset_id"] == "exa" ? 1 : 0;
    return std::pair{count, servers.body.size()};
  };
  // Lookalikes are other servers: the default Exa server is added beside them.
  CHECK(exa_presets("vxt_lookalike-tenant-token-0123456789abcdef") == std::pair{1, std::size_t{3}});
  // A custom record on an exa.ai host is an Exa endpoint: nothing is added.
  CHECK(exa_presets("vxt_own-exa-tenant-token-0123456789abcdefgh") == std::pair{0, std::size_t{1}});
}

TEST_CASE("a tenant that deleted its Exa server does not get it back from the migration") {
  test::temp_dir dir;
  const std::string tenant = "t_deleted";
  const std::string secret = "vxt_deleted-tenant-token-0123456789abcdef";
  // An earlier node: the owner added the keyless Exa server, then deleted it.
  auto exa = old_exa_record(tenant, "s_exa_gone", preset_ids::exa);
  exa.enabled = exa.trusted = exa.connected = true;
  exa.allowed_tools = {"web_search_exa", "web_fetch_exa"};
  {
    auto db = test::open_node_store(dir);
    write_old_tenant(*db, tenant, secret,
                     {tenant_events::agent_created({"a_one", "Assistant", true}),
                      tenant_events::server_upserted(exa),
                      tenant_events::server_deleted("s_exa_gone")});
  }
  std::string fresh_token;
  {
    test::running_node node{dir};
    CHECK(exa_servers(node.call("GET", "/v1/servers", secret).body).empty());
    // A tenant of this node deletes the Exa server it was given.
    fresh_token = node.make_tenant("Fresh").second;
    auto given = exa_servers(node.call("GET", "/v1/servers", fresh_token).body);
    REQUIRE(given.size() == 1);
    auto id = given[0]["server_id"].get<std::string>();
    REQUIRE(node.call("DELETE", "/v1/servers/" + id, fresh_token).status == 200);
  }
  // Neither gets it back at the next start, nor at the one after.
  for (int start = 0; start < 2; ++start) {
    test::running_node node{dir};
    CHECK(exa_servers(node.call("GET", "/v1/servers", secret).body).empty());
    CHECK(exa_servers(node.call("GET", "/v1/servers", fresh_token).body).empty());
  }
  auto db = test::open_node_store(dir);
  auto events = config_events(*db, tenant);
  CHECK(count_events(events, "migration.applied", "exa_default_v1") == 1);
  CHECK(count_events(events, "server.upserted") == 1);
}

namespace {

constexpr const char* place_call = "place_call";

/// A tenant of an earlier node with a call-capable phone integration, an
/// allowed place-call grant and `more` config events.
std::vector<event_draft> caller_tenant(const std::string& agent, phone_integration phone,
                                       std::vector<event_draft> more = {}) {
  std::vector<event_draft> out{
    tenant_events::agent_created({agent, "Assistant", true}), tenant_events::phone_upserted(phone),
    tenant_events::grant_set({agent, phone.integration_id, place_call, grant_decision::allow})};
  for (auto& ev : more)
    out.push_back(std::move(ev));
  return out;
}

phone_integration phone_of(const std::string& id, phone_provider provider, bool call_capable,
                           bool connected) {
  return {id, provider, call_capable, connected, place_call};
}

/// The explicit decision of an agent's grants page for an internal tool.
std::string internal_decision(test::running_node& node, const std::string& token,
                              const std::string& agent, const std::string& tool) {
  auto page = node.call("GET", "/v1/agents/" + agent + "/grants", token);
  REQUIRE(page.status == 200);
  for (const auto& row : page.body)
    if (row["server_id"] == "" && row["tool"] == tool)
      return row["decision"].get<std::string>();
  return "<missing>";
}

bool has_tool(const json& tools, const std::string& name) {
  return std::any_of(tools.begin(), tools.end(), [&](const json& t) {
    return t.value("name", "") == name || t.value("tool", "") == name;
  });
}

json start_text_run(test::running_node& node, const std::string& token, const std::string& agent) {
  auto run = node.call("POST", "/v1/runs", token,
                       json{{"agent_id", agent}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE_MESSAGE(run.status == 201, run.raw.substr(0, 300));
  return run.body;
}

} // namespace

TEST_CASE(
  "the contact-search migration adds search_contacts once for an allowed place-call grant") {
  test::temp_dir dir;
  struct old_tenant {
    std::string id, token;
    phone_integration phone;
    bool granted; ///< the place-call grant is written
    bool expects_prerequisite;
    bool expects_place_call; ///< in its runs (needs the resource connected too)
  };
  const old_tenant tenants[] = {
    // A connected call-capable Twilio number with an allowed place-call grant.
    {"t_twilio", "vxt_twilio-tenant-token-0123456789abcdefgh",
     phone_of("ph_twilio", phone_provider::twilio, true, true), true, true, true},
    // A Telnyx number, connected and call-capable, with the same grant.
    {"t_telnyx", "vxt_telnyx-tenant-token-0123456789abcdefgh",
     phone_of("ph_telnyx", phone_provider::telnyx, true, true), true, true, true},
    // The allowed place-call grant alone (its number not connected now)
    // is enough for the backfill.
    {"t_offline", "vxt_offline-tenant-token-0123456789abcdefg",
     phone_of("ph_offline", phone_provider::twilio, true, false), true, true, false},
    // Neither call-capable nor granted: nothing to add.
    {"t_sms", "vxt_sms-only-tenant-token-0123456789abcdefg",
     phone_of("ph_sms", phone_provider::twilio, false, true), false, false, false},
  };
  {
    auto db = test::open_node_store(dir);
    for (const auto& t : tenants) {
      auto cfg = t.granted ? caller_tenant("a_" + t.id.substr(2), t.phone)
                           : std::vector<event_draft>{
                             tenant_events::agent_created({"a_" + t.id.substr(2), "A", true}),
                             tenant_events::phone_upserted(t.phone)};
      write_old_tenant(*db, t.id, t.token, std::move(cfg));
    }
  }
  std::map<std::string, std::size_t> events_after_first;
  for (int start = 0; start < 2; ++start) {
    {
      test::running_node node{dir};
      for (const auto& t : tenants) {
        CAPTURE(t.id);
        auto agent = "a_" + t.id.substr(2);
        CHECK(internal_decision(node, t.token, agent, "search_contacts")
              == std::string{t.expects_prerequisite ? "allow" : "default"});
        auto run = start_text_run(node, t.token, agent);
        CHECK(has_tool(run["snapshot"]["tools"], "search_contacts") == t.expects_prerequisite);
        // The prerequisite lets the granted place-call tool through.
        CHECK(has_tool(run["snapshot"]["tools"], place_call) == t.expects_place_call);
      }
    }
    auto db = test::open_node_store(dir);
    for (const auto& t : tenants) {
      CAPTURE(t.id);
      auto events = config_events(*db, t.id);
      CHECK(count_events(events, "grant.set", "search_contacts")
            == (t.expects_prerequisite ? 1U : 0U));
      CHECK(count_events(events, "migration.applied", "contact_prereq_v1") == 1);
      // The second start adds nothing at all.
      if (start == 0)
        events_after_first[t.id] = events.size();
      else
        CHECK(events.size() == events_after_first[t.id]);
    }
  }
}

TEST_CASE("the contact-search migration keeps an explicit deny and the place-call tool stays out") {
  test::temp_dir dir;
  const std::string tenant = "t_denier";
  const std::string secret = "vxt_denier-tenant-token-0123456789abcdefgh";
  {
    auto db = test::open_node_store(dir);
    write_old_tenant(
      *db, tenant, secret,
      caller_tenant(
        "a_denier", phone_of("ph_twilio", phone_provider::twilio, true, true),
        {tenant_events::grant_set({"a_denier", "", "search_contacts", grant_decision::deny})}));
  }
  {
    test::running_node node{dir};
    CHECK(internal_decision(node, secret, "a_denier", "search_contacts") == "deny");
    auto run = start_text_run(node, secret, "a_denier");
    CHECK_FALSE(has_tool(run["snapshot"]["tools"], "search_contacts"));
    CHECK_FALSE(has_tool(run["snapshot"]["tools"], place_call));
    CHECK_FALSE(has_tool(run["view"]["direct"], place_call));
    CHECK_FALSE(has_tool(run["view"]["catalog"], place_call));
    bool withheld = false;
    for (const auto& d : run["snapshot"]["decisions"])
      if (d["tool"] == place_call)
        withheld = d["why"] == "prerequisite_denied";
    CHECK(withheld);
    // The persisted snapshot says the same.
    auto again = node.call("GET", "/v1/runs/" + run["run_id"].get<std::string>(), secret);
    REQUIRE(again.status == 200);
    CHECK_FALSE(has_tool(again.body["snapshot"]["tools"], place_call));
  }
  auto db = test::open_node_store(dir);
  auto events = config_events(*db, tenant);
  CHECK(count_events(events, "grant.set", "search_contacts") == 1); // the deny, nothing else
  CHECK(count_events(events, "migration.applied", "contact_prereq_v1") == 1);
}
