// The tenant's configuration events: JSON of the model (strict decoding),
// the projection's documented keys, load of the projection, apply in memory
// (a property against load over random event sequences), and the projection
// rebuilt by the event store.
#include <doctest/doctest.h>

#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tenant/tenant_events.hpp"
#include "storage/event_db.hpp"
#include "support/temp_dir.hpp"
#include "tests/actors/tenant/policy_fixtures.hpp"

using namespace voxos;
using nlohmann::json;

namespace te = voxos::tenant_events;

namespace {

constexpr const char* tenant_a = "t_a";

// -- printers: every field, so comparing two prints compares two values ----------

std::string q(std::string_view s) {
  std::ostringstream out;
  out << std::quoted(s);
  return out.str();
}

template <class Enum>
int n(Enum x) {
  return static_cast<int>(x);
}

std::string show(const agent_record& x) {
  return "agent{" + q(x.agent_id) + q(x.name) + std::to_string(x.is_default) + "}";
}

std::string show(const tool_definition& x) {
  return "def{" + q(x.name) + q(x.title) + q(x.description) + q(x.input_schema) + q(x.output_schema)
         + std::to_string(x.read_only_hint) + std::to_string(x.destructive_hint)
         + std::to_string(x.idempotent_hint) + "}";
}

std::string show(const std::vector<std::string>& xs) {
  std::string out = "[";
  for (const auto& x : xs)
    out += q(x);
  return out + "]";
}

std::string show(const mcp_server_record& x) {
  std::string out = "server{" + q(x.server_id) + q(x.tenant_id) + q(x.label) + q(x.preset_id)
                    + q(x.variant) + std::to_string(n(x.transport)) + q(x.url)
                    + std::to_string(n(x.auth)) + std::to_string(x.enabled)
                    + std::to_string(x.trusted) + std::to_string(x.connected)
                    + show(x.allowed_tools);
  for (const auto& def : x.cached_tools)
    out += show(def);
  return out + q(x.cache_version) + std::to_string(x.discovered_us) + "}";
}

std::string show(const tool_grant& x) {
  return "grant{" + q(x.agent_id) + q(x.server_id) + q(x.tool) + std::to_string(n(x.decision))
         + "}";
}

std::string show(const action_route& x) {
  return "route{" + q(x.agent_id) + q(x.action) + std::to_string(n(x.mode)) + q(x.pinned_server_id)
         + q(x.pinned_tool) + "}";
}

std::string show(const contact_record& x) {
  return "contact{" + q(x.contact_id) + q(x.display_name) + q(x.phone) + std::to_string(x.is_admin)
         + "}";
}

std::string show(const phone_integration& x) {
  return "phone{" + q(x.integration_id) + std::to_string(n(x.provider))
         + std::to_string(x.call_capable) + std::to_string(x.connected) + q(x.place_call_tool)
         + "}";
}

std::string show(const browser_profile& x) {
  return "profile{" + q(x.handle) + q(x.label) + q(x.primary_origin) + show(x.agent_ids)
         + q(x.server_id) + q(x.tool) + "}";
}

std::string show(const subagent_allowlist& x) {
  std::string out = "subagent_models{";
  for (const auto& [provider, models] : x.providers)
    out += q(provider) + show(models);
  return out + "}";
}

template <class T>
std::string show_all(const std::vector<T>& xs) {
  std::string out;
  for (const auto& x : xs)
    out += show(x) + "\n";
  return out;
}

std::string show(const te::loaded_tenant& x) {
  std::string out = "tenant " + q(x.state.tenant_id) + "\n" + show_all(x.state.agents);
  for (const auto& [id, server] : x.state.servers)
    out += q(id) + "=" + show(server) + "\n";
  out += show_all(x.state.grants) + show_all(x.state.routes) + show_all(x.state.contacts)
         + show_all(x.state.phones) + show_all(x.state.profiles) + show(x.state.subagent_models)
         + "\nmigrations";
  for (const auto& name : x.migrations)
    out += " " + q(name);
  return out;
}

std::string show(const effective_policy& x) {
  std::string out = "policy{" + q(x.tenant_id) + q(x.agent_id) + q(x.run_id)
                    + std::to_string(n(x.chan)) + std::to_string(n(x.caller))
                    + std::to_string(n(x.contacts)) + std::to_string(x.created_us) + "}\n";
  for (const auto& t : x.tools)
    out += "tool{" + std::to_string(n(t.origin)) + q(t.name()) + q(t.server_id())
           + std::to_string(n(t.risk)) + std::to_string(t.read_only) + std::to_string(t.mutating)
           + q(t.route_action()) + "}\n";
  for (const auto& r : x.routes)
    out += "route{" + q(r.action) + std::to_string(n(r.mode)) + q(r.server_id) + q(r.tool) + "}\n";
  for (const auto& p : x.profiles)
    out += "offer{" + q(p.handle) + q(p.label) + q(p.primary_origin) + "}\n";
  for (const auto& d : x.decisions)
    out += "decision{" + std::to_string(n(d.origin)) + q(d.tool()) + q(d.server_id())
           + std::to_string(n(d.why)) + "}\n";
  return out;
}

// -- samples ---------------------------------------------------------------------------

agent_record sample_agent() {
  return {"a_1", "Front \"desk\" ✓", true};
}

mcp_server_record sample_server() {
  mcp_server_record s;
  s.server_id = "s_exa";
  s.tenant_id = tenant_a;
  s.label = "My Exa";
  s.preset_id = "exa_api_key";
  s.variant = "gmail";
  s.transport = transport_kind::sse;
  s.url = "https://mcp.exa.ai/mcp?x=1";
  s.auth = auth_mode::api_key_header;
  s.enabled = true;
  s.trusted = false;
  s.connected = true;
  s.allowed_tools = {"web_search_exa", "Tool.Name-2"};
  s.cached_tools = tool_cache{{
    {"web_search_exa", "Search", "Searches\nthe web", R"({"type":"object"})", "", true, false},
    {"Tool.Name-2", "", "", "{}", R"({"type":"string"})", false, true, true},
  }};
  s.cache_version = "v7";
  s.discovered_us = 1'700'000'000'000'000;
  return s;
}

tool_grant sample_grant() {
  return {"a_1", "s_exa", "web_search_exa", grant_decision::deny};
}

tool_grant internal_grant() {
  return {"a_1", "", "search_contacts", grant_decision::allow};
}

action_route pinned_route() {
  return {"a_1", "web.search", route_mode::pinned, "s_exa", "web_search_exa"};
}

action_route automatic_route() {
  return {"a_2", "web.fetch", route_mode::automatic, "", ""};
}

contact_record sample_contact() {
  return {"c_1", "Ann Admin", "+15550000001", true};
}

phone_integration sample_phone() {
  return {"ph_1", phone_provider::telnyx, true, false, "place_call"};
}

browser_profile sample_profile() {
  return {"bp_1",         "Shop", "https://shop.example.com:8443",
          {"a_1", "a_2"}, "s_bl", "browserless_do"};
}

subagent_allowlist sample_allowlist() {
  subagent_allowlist out;
  out.providers["openai"] = {"gpt-4o-mini", "gpt-4o"};
  out.providers["x.ai"] = {"vendor/model:v1@2024", "gpt-4o"};
  return out;
}

// -- helpers ---------------------------------------------------------------------------

json reparse(const json& x) {
  return json::parse(x.dump());
}

event_record record_of(const event_draft& draft, const std::string& tenant_id = tenant_a,
                       const std::string& stream = te::stream) {
  return event_record{tenant_id, stream, 1, 1, draft.type, draft.data};
}

/// Projects one event into `store` (a stand-in for the state column family).
void project_into(std::map<std::string, std::string>& store, const event_draft& draft) {
  std::vector<state_write> writes;
  auto st = te::project(record_of(draft), writes);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  for (auto& w : writes)
    if (w.value)
      store[w.key] = *w.value;
    else
      store.erase(w.key);
}

std::vector<std::pair<std::string, std::string>>
entries_of(const std::map<std::string, std::string>& store) {
  return {store.begin(), store.end()};
}

te::loaded_tenant load_store(const std::map<std::string, std::string>& store) {
  auto loaded = te::load(tenant_a, entries_of(store));
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.error().message());
  return std::move(*loaded);
}

te::loaded_tenant empty_tenant() {
  return load_store({});
}

/// The error of a failed decode (fails the test if it succeeded).
template <class T>
status error_of(const result<T>& r) {
  REQUIRE_FALSE(r.is_ok());
  return r.error();
}

/// Every event builder once, with a state that loads back to the samples.
std::vector<event_draft> every_upsert() {
  return {te::agent_created(sample_agent()),
          te::server_upserted(sample_server()),
          te::grant_set(sample_grant()),
          te::grant_set(internal_grant()),
          te::route_set(pinned_route()),
          te::route_set(automatic_route()),
          te::contact_upserted(sample_contact()),
          te::phone_upserted(sample_phone()),
          te::profile_upserted(sample_profile()),
          te::subagent_models_set(sample_allowlist()),
          te::migration_applied("default_agent_v1")};
}

} // namespace

TEST_CASE("every entity survives a round trip through its JSON") {
  auto agent = te::agent_from_json(reparse(te::to_json(sample_agent())));
  REQUIRE(agent);
  CHECK(show(*agent) == show(sample_agent()));
  auto server = te::server_from_json(reparse(te::to_json(sample_server())));
  REQUIRE(server);
  CHECK(show(*server) == show(sample_server()));
  for (const auto& g : {sample_grant(), internal_grant()}) {
    auto back = te::grant_from_json(reparse(te::to_json(g)));
    REQUIRE(back);
    CHECK(show(*back) == show(g));
  }
  for (const auto& r : {pinned_route(), automatic_route()}) {
    auto back = te::route_from_json(reparse(te::to_json(r)));
    REQUIRE(back);
    CHECK(show(*back) == show(r));
  }
  auto contact = te::contact_from_json(reparse(te::to_json(sample_contact())));
  REQUIRE(contact);
  CHECK(show(*contact) == show(sample_contact()));
  auto phone = te::phone_from_json(reparse(te::to_json(sample_phone())));
  REQUIRE(phone);
  CHECK(show(*phone) == show(sample_phone()));
  auto local = sample_profile();
  local.server_id.clear();
  local.tool.clear();
  local.agent_ids.clear();
  for (const auto& p : {sample_profile(), local}) {
    auto back = te::profile_from_json(reparse(te::to_json(p)));
    REQUIRE(back);
    CHECK(show(*back) == show(p));
  }
  for (const auto& a : {sample_allowlist(), subagent_allowlist{}}) {
    auto back = te::subagent_allowlist_from_json(reparse(te::to_json(a)));
    REQUIRE(back);
    CHECK(show(*back) == show(a));
  }
}

TEST_CASE("a subagent allowlist past its bounds or charsets is refused naming the path") {
  auto refused = [](json providers) {
    return error_of(te::subagent_allowlist_from_json(json{{"providers", std::move(providers)}}));
  };
  json many = json::object();
  for (std::size_t provider_idx = 0; provider_idx <= te::max_subagent_providers; ++provider_idx)
    many["p" + std::to_string(provider_idx)] = {"m"};
  CHECK(refused(many).message() == "providers: at most 16 providers");
  json long_list = json::array();
  for (std::size_t model_idx = 0; model_idx <= te::max_subagent_models; ++model_idx)
    long_list.push_back("m" + std::to_string(model_idx));
  CHECK(refused({{"openai", long_list}}).message() == "providers.openai: expected 1 to 64 models");
  CHECK(refused({{"openai", json::array()}}).code() == errc::out_of_range);
  auto spaced = refused({{"openai", {"gpt 4o"}}});
  CHECK(spaced.code() == errc::out_of_range);
  CHECK(spaced.message() == "providers.openai[0]: expected 1-128 characters of [A-Za-z0-9_.:/@-]");
  CHECK(refused({{"openai", {std::string(129, 'm')}}}).code() == errc::out_of_range);
  CHECK(refused({{"openai", {"a", "b", "a"}}}).message()
        == "providers.openai[2]: a duplicate of an earlier model");
  auto provider = refused({{"Open AI", {"m"}}});
  CHECK(provider.message() == "providers: a provider name must be 1-128 characters of [a-z0-9_.-]");
  CHECK(refused({{std::string(129, 'p'), {"m"}}}).code() == errc::out_of_range);
  CHECK(refused({{"openai", "m"}}).code() == errc::wrong_type);
  CHECK(refused({{"openai", {1}}}).code() == errc::wrong_type);
  CHECK(refused(json::array()).code() == errc::wrong_type);
  CHECK(
    error_of(te::subagent_allowlist_from_json(json{{"providers", json::object()}, {"x", 1}})).code()
    == errc::unknown_field);
  CHECK(error_of(te::subagent_allowlist_from_json(json::object())).code() == errc::missing_field);
  // The edges hold: 16 providers of 64 models of 128 characters each.
  json full = json::object();
  for (std::size_t provider_idx = 0; provider_idx < te::max_subagent_providers; ++provider_idx) {
    json models = json::array();
    for (std::size_t model_idx = 0; model_idx < te::max_subagent_models; ++model_idx)
      models.push_back(std::to_string(model_idx) + std::string(120, 'M'));
    full[std::to_string(provider_idx) + std::string(120, 'p')] = models;
  }
  CHECK(te::subagent_allowlist_from_json(json{{"providers", full}}));
}

TEST_CASE("every enum value survives a round trip by its snake_case name") {
  auto server = sample_server();
  for (auto t : {transport_kind::streamable_http, transport_kind::sse})
    for (auto a : {auth_mode::none, auth_mode::static_bearer, auth_mode::api_key_header,
                   auth_mode::oauth_authorization_code, auth_mode::oauth_client_credentials,
                   auth_mode::private_key_jwt}) {
      server.transport = t;
      server.auth = a;
      auto doc = te::to_json(server);
      CHECK(doc["transport"] == std::string{to_string(t)});
      CHECK(doc["auth"] == std::string{to_string(a)});
      auto back = te::server_from_json(doc);
      REQUIRE(back);
      CHECK(show(*back) == show(server));
    }
  CHECK(te::to_json(sample_grant())["decision"] == "deny");
  CHECK(te::to_json(internal_grant())["decision"] == "allow");
  CHECK(te::to_json(pinned_route())["mode"] == "pinned");
  CHECK(te::to_json(automatic_route())["mode"] == "automatic");
  auto phone = sample_phone();
  CHECK(te::to_json(phone)["provider"] == "telnyx");
  phone.provider = phone_provider::twilio;
  CHECK(te::to_json(phone)["provider"] == "twilio");
  CHECK(show(*te::phone_from_json(te::to_json(phone))) == show(phone));
}

TEST_CASE("a server listing leaves out the discovery cache and decodes without it") {
  auto doc = te::to_json(sample_server(), false);
  CHECK_FALSE(doc.contains("cached_tools"));
  CHECK(doc["cache_version"] == "v7");
  auto back = te::server_from_json(doc);
  REQUIRE(back);
  auto expected = sample_server();
  expected.cached_tools = {};
  CHECK(show(*back) == show(expected));
}

TEST_CASE("a cached tool stored before idempotent_hint decodes as not idempotent") {
  auto doc = te::to_json(sample_server());
  REQUIRE(doc["cached_tools"][1]["idempotent_hint"] == true);
  for (auto& def : doc["cached_tools"])
    def.erase("idempotent_hint");
  auto back = te::server_from_json(doc);
  REQUIRE_MESSAGE(back, back.error().message());
  CHECK_FALSE(back->cached_tools.definitions()[1].idempotent_hint);
  CHECK(back->cached_tools.definitions()[1].destructive_hint);
}

TEST_CASE("each event type projects to its documented key") {
  struct expectation {
    event_draft event;
    std::string key;
    std::optional<json> value;
  };
  const std::string p = "t_a/cfg/";
  std::vector<expectation> table{
    {te::agent_created(sample_agent()), p + "agent/a_1", te::to_json(sample_agent())},
    {te::server_upserted(sample_server()), p + "server/s_exa", te::to_json(sample_server())},
    {te::server_deleted("s_exa"), p + "server/s_exa", std::nullopt},
    {te::grant_set(sample_grant()), p + "grant/a_1/s_exa/web_search_exa",
     te::to_json(sample_grant())},
    {te::grant_set(internal_grant()), p + "grant/a_1/-/search_contacts",
     te::to_json(internal_grant())},
    {te::grant_cleared("a_1", "s_exa", "web_search_exa"), p + "grant/a_1/s_exa/web_search_exa",
     std::nullopt},
    {te::grant_cleared("a_1", "", "search_contacts"), p + "grant/a_1/-/search_contacts",
     std::nullopt},
    {te::route_set(pinned_route()), p + "route/a_1/web.search", te::to_json(pinned_route())},
    {te::route_cleared("a_1", "web.search"), p + "route/a_1/web.search", std::nullopt},
    {te::contact_upserted(sample_contact()), p + "contact/c_1", te::to_json(sample_contact())},
    {te::contact_deleted("c_1"), p + "contact/c_1", std::nullopt},
    {te::phone_upserted(sample_phone()), p + "phone/ph_1", te::to_json(sample_phone())},
    {te::phone_deleted("ph_1"), p + "phone/ph_1", std::nullopt},
    {te::profile_upserted(sample_profile()), p + "profile/bp_1", te::to_json(sample_profile())},
    {te::profile_deleted("bp_1"), p + "profile/bp_1", std::nullopt},
    {te::subagent_models_set(sample_allowlist()), p + "subagent_models",
     te::to_json(sample_allowlist())},
    {te::migration_applied("exa_default_v1"), p + "migration/exa_default_v1",
     json{{"name", "exa_default_v1"}}},
  };
  CHECK(te::state_prefix(tenant_a) == p);
  for (const auto& row : table) {
    CAPTURE(row.event.type);
    std::vector<state_write> writes;
    REQUIRE(te::project(record_of(row.event), writes).is_ok());
    REQUIRE(writes.size() == 1);
    CHECK(writes[0].key == row.key);
    REQUIRE(writes[0].value.has_value() == row.value.has_value());
    if (row.value) {
      CHECK(*writes[0].value == row.value->dump()); // compact
      CHECK(json::parse(*writes[0].value) == *row.value);
    }
  }
}

TEST_CASE("loading the projection of every event type reproduces the state") {
  std::map<std::string, std::string> store;
  for (const auto& ev : every_upsert())
    project_into(store, ev);
  auto loaded = load_store(store);
  te::loaded_tenant expected;
  expected.state.tenant_id = tenant_a;
  expected.state.agents = {sample_agent()};
  expected.state.servers.emplace("s_exa", sample_server());
  // Key order: grant/a_1/-/... before grant/a_1/s_exa/...
  expected.state.grants = {internal_grant(), sample_grant()};
  expected.state.routes = {pinned_route(), automatic_route()};
  expected.state.contacts = {sample_contact()};
  expected.state.phones = {sample_phone()};
  expected.state.profiles = {sample_profile()};
  expected.state.subagent_models = sample_allowlist();
  expected.migrations = {"default_agent_v1"};
  CHECK(show(loaded) == show(expected));

  // apply from an empty state reaches the same state.
  auto applied = empty_tenant();
  for (const auto& ev : every_upsert())
    REQUIRE(te::apply(ev, applied).is_ok());
  CHECK(show(applied) == show(expected));
}

TEST_CASE("grant.cleared and the deletions remove what was set") {
  std::vector<event_draft> removals{te::server_deleted("s_exa"),
                                    te::grant_cleared("a_1", "s_exa", "web_search_exa"),
                                    te::grant_cleared("a_1", "", "search_contacts"),
                                    te::route_cleared("a_1", "web.search"),
                                    te::route_cleared("a_2", "web.fetch"),
                                    te::contact_deleted("c_1"),
                                    te::phone_deleted("ph_1"),
                                    te::profile_deleted("bp_1"),
                                    te::subagent_models_set({})};
  std::map<std::string, std::string> store;
  auto applied = empty_tenant();
  for (const auto& ev : every_upsert()) {
    project_into(store, ev);
    REQUIRE(te::apply(ev, applied).is_ok());
  }
  for (const auto& ev : removals) {
    project_into(store, ev);
    REQUIRE(te::apply(ev, applied).is_ok());
  }
  auto loaded = load_store(store);
  CHECK(loaded.state.servers.empty());
  CHECK(loaded.state.grants.empty());
  CHECK(loaded.state.routes.empty());
  CHECK(loaded.state.contacts.empty());
  CHECK(loaded.state.phones.empty());
  CHECK(loaded.state.profiles.empty());
  CHECK(loaded.state.agents.size() == 1);
  CHECK(loaded.state.subagent_models.providers.empty());
  CHECK(loaded.migrations.size() == 1);
  // (the allowlist has no deletion: an empty one keeps its key)
  CHECK(store.size() == 3);
  CHECK(show(applied) == show(loaded));

  // Clearing what is not there changes nothing.
  REQUIRE(te::apply(te::grant_cleared("a_9", "", "nothing"), applied).is_ok());
  CHECK(show(applied) == show(loaded));
}

TEST_CASE("a set replaces the entity with the same identity") {
  auto state = empty_tenant();
  auto g = sample_grant();
  REQUIRE(te::apply(te::grant_set(g), state).is_ok());
  g.decision = grant_decision::allow;
  REQUIRE(te::apply(te::grant_set(g), state).is_ok());
  REQUIRE(state.state.grants.size() == 1);
  CHECK(state.state.grants[0].decision == grant_decision::allow);
  auto r = pinned_route();
  REQUIRE(te::apply(te::route_set(r), state).is_ok());
  r = {"a_1", "web.search", route_mode::automatic, "", ""};
  REQUIRE(te::apply(te::route_set(r), state).is_ok());
  REQUIRE(state.state.routes.size() == 1);
  CHECK(state.state.routes[0].mode == route_mode::automatic);
  auto s = sample_server();
  REQUIRE(te::apply(te::server_upserted(s), state).is_ok());
  s.enabled = false;
  s.cached_tools = {};
  REQUIRE(te::apply(te::server_upserted(s), state).is_ok());
  REQUIRE(state.state.servers.size() == 1);
  CHECK(show(state.state.servers.at("s_exa")) == show(s));
}

namespace {

/// Random configuration events over small id pools, so that sets, replaces,
/// clears and deletes keep hitting the same keys. The pools hold ids whose key
/// order differs from their field order ("a" and "a-b").
struct event_generator {
  std::mt19937_64 rng{0x7e4a'57a7'e5ULL};

  std::size_t below(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng);
  }
  bool coin() { return below(2) == 0; }
  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[below(xs.size())];
  }

  const std::vector<std::string> agents{"a", "a-b", "a_b", "a0"};
  const std::vector<std::string> servers{"s", "s-x", "s_y", "s0"};
  const std::vector<std::string> tools{"web_search_exa", "place_call", "Tool.A", "t-1", "t"};
  const std::vector<std::string> actions{"web.search", "web.fetch", "web", "browse"};
  const std::vector<std::string> contacts{"c", "c-1", "c_1"};
  const std::vector<std::string> phones{"p", "p-1", "p_1"};
  const std::vector<std::string> handles{"h", "h-1", "h_1"};
  const std::vector<std::string> providers{"openai", "x.ai", "p-1"};
  const std::vector<std::string> models{"gpt-4o", "vendor/model:v1@2024", "M_1"};
  const std::vector<std::string> migrations{"default_agent_v1", "exa_default_v1", "m.x", "m-x"};
  const std::vector<std::string> texts{"", "x", "Ünïcode ✓", "quote \" and \\ slash",
                                       "line\nbreak"};

  mcp_server_record server() {
    mcp_server_record s;
    s.server_id = pick(servers);
    s.tenant_id = tenant_a;
    s.label = pick(texts);
    s.preset_id = coin() ? "" : "exa";
    s.variant = pick(texts);
    s.transport = coin() ? transport_kind::sse : transport_kind::streamable_http;
    s.url = "https://example.com/" + std::to_string(below(100));
    s.auth = static_cast<auth_mode>(below(6));
    s.enabled = coin();
    s.trusted = coin();
    s.connected = coin();
    for (std::size_t tool_idx = below(3); tool_idx > 0; --tool_idx)
      s.allowed_tools.push_back(pick(tools));
    std::vector<tool_definition> cached;
    for (std::size_t tool_idx = below(3); tool_idx > 0; --tool_idx)
      cached.push_back({pick(tools), pick(texts), pick(texts), R"({"type":"object"})", pick(texts),
                        coin(), coin()});
    s.cached_tools = tool_cache{std::move(cached)};
    s.cache_version = pick(texts);
    s.discovered_us = static_cast<int64_t>(rng() >> 1) * (coin() ? 1 : -1);
    return s;
  }

  std::string server_or_internal() { return coin() ? std::string{} : pick(servers); }

  event_draft next() {
    switch (below(16)) {
    case 0:
      return te::agent_created({pick(agents), pick(texts), coin()});
    case 1:
      return te::server_upserted(server());
    case 2:
      return te::server_deleted(pick(servers));
    case 3:
      return te::grant_set({pick(agents), server_or_internal(), pick(tools),
                            coin() ? grant_decision::allow : grant_decision::deny});
    case 4:
      return te::grant_cleared(pick(agents), server_or_internal(), pick(tools));
    case 5:
      if (coin())
        return te::route_set({pick(agents), pick(actions), route_mode::automatic, "", ""});
      return te::route_set(
        {pick(agents), pick(actions), route_mode::pinned, pick(servers), pick(tools)});
    case 6:
      return te::route_cleared(pick(agents), pick(actions));
    case 7:
      return te::contact_upserted(
        {pick(contacts), pick(texts), "+1555000" + std::to_string(1000 + below(9000)), coin()});
    case 8:
      return te::contact_deleted(pick(contacts));
    case 9:
      return te::phone_upserted({pick(phones),
                                 coin() ? phone_provider::twilio : phone_provider::telnyx, coin(),
                                 coin(), coin() ? "" : pick(tools)});
    case 10:
      return te::phone_deleted(pick(phones));
    case 11: {
      browser_profile p{pick(handles),
                        pick(texts),
                        "https://site" + std::to_string(below(5)) + ".example",
                        {},
                        "",
                        ""};
      for (std::size_t agent_idx = below(3); agent_idx > 0; --agent_idx)
        p.agent_ids.push_back(pick(agents));
      if (coin()) {
        p.server_id = pick(servers);
        p.tool = pick(tools);
      }
      return te::profile_upserted(p);
    }
    case 12:
      return te::profile_deleted(pick(handles));
    case 13: {
      subagent_allowlist a;
      for (std::size_t provider_idx = below(3); provider_idx > 0; --provider_idx)
        a.providers[pick(providers)] = {pick(models)};
      return te::subagent_models_set(a);
    }
    default:
      return te::migration_applied(pick(migrations));
    }
  }
};

} // namespace

TEST_CASE("apply matches a load of the projection for random event sequences") {
  constexpr int events = 4000;
  event_generator gen;
  std::map<std::string, std::string> store;
  auto applied = empty_tenant();
  std::map<std::string, bool> seen;
  for (int event_idx = 1; event_idx <= events; ++event_idx) {
    auto ev = gen.next();
    CAPTURE(event_idx);
    CAPTURE(ev.type);
    project_into(store, ev);
    REQUIRE(te::apply(ev, applied).is_ok());
    if (event_idx % 97 == 0 || event_idx == events) {
      REQUIRE(show(applied) == show(load_store(store)));
      const auto& state = applied.state;
      seen["agent"] |= !state.agents.empty();
      seen["server"] |= !state.servers.empty();
      seen["grant"] |= state.grants.size() > 10;
      seen["route"] |= state.routes.size() > 5;
      seen["contact"] |= !state.contacts.empty();
      seen["phone"] |= !state.phones.empty();
      seen["profile"] |= !state.profiles.empty();
      seen["subagent_models"] |= !state.subagent_models.providers.empty();
      seen["migration"] |= !applied.migrations.empty();
    }
  }
  // The pools were exercised: every kind of entity was present at some checkpoint.
  for (const auto& kind_seen : seen) {
    CAPTURE(kind_seen.first);
    CHECK(kind_seen.second);
  }
}

TEST_CASE("strict decoding refuses unknown fields and names them") {
  auto doc = te::to_json(sample_grant());
  doc["extra"] = "secret-value";
  auto st = error_of(te::grant_from_json(doc));
  CHECK(st.code() == errc::unknown_field);
  CHECK(st.message().find("extra") != std::string::npos);
  CHECK(st.message().find("secret-value") == std::string::npos);

  auto server = te::to_json(sample_server());
  server["cached_tools"][1]["bogus"] = 1;
  st = error_of(te::server_from_json(server));
  CHECK(st.code() == errc::unknown_field);
  CHECK(st.message().find("cached_tools[1].bogus") != std::string::npos);

  // A field name that is not plain is not echoed either.
  doc = te::to_json(sample_agent());
  doc["<script>"] = true;
  st = error_of(te::agent_from_json(doc));
  CHECK(st.code() == errc::unknown_field);
  CHECK(st.message().find("<script>") == std::string::npos);
}

TEST_CASE("strict decoding refuses wrong types and missing fields") {
  auto st = error_of(te::agent_from_json(json::array()));
  CHECK(st.code() == errc::wrong_type);
  st = error_of(te::contact_from_json(json("text")));
  CHECK(st.code() == errc::wrong_type);

  auto agent = te::to_json(sample_agent());
  agent["is_default"] = "yes-please";
  st = error_of(te::agent_from_json(agent));
  CHECK(st.code() == errc::wrong_type);
  CHECK(st.message().find("is_default") != std::string::npos);
  CHECK(st.message().find("yes-please") == std::string::npos);

  auto server = te::to_json(sample_server());
  server["discovered_us"] = 1.5;
  st = error_of(te::server_from_json(server));
  CHECK(st.code() == errc::wrong_type);
  CHECK(st.message().find("discovered_us") != std::string::npos);
  server["discovered_us"] = std::numeric_limits<uint64_t>::max();
  CHECK(error_of(te::server_from_json(server)).code() == errc::out_of_range);
  server = te::to_json(sample_server());
  server["allowed_tools"] = json::array({"ok", 7});
  st = error_of(te::server_from_json(server));
  CHECK(st.code() == errc::wrong_type);
  CHECK(st.message().find("allowed_tools[1]") != std::string::npos);
  server = te::to_json(sample_server());
  server["cached_tools"] = json::object();
  CHECK(error_of(te::server_from_json(server)).code() == errc::wrong_type);

  auto phone = te::to_json(sample_phone());
  phone.erase("connected");
  st = error_of(te::phone_from_json(phone));
  CHECK(st.code() == errc::missing_field);
  CHECK(st.message().find("connected") != std::string::npos);

  auto grant = te::to_json(sample_grant());
  grant["decision"] = "maybe";
  st = error_of(te::grant_from_json(grant));
  CHECK(st.code() == errc::out_of_range);
  CHECK(st.message().find("decision") != std::string::npos);
  CHECK(st.message().find("maybe") == std::string::npos);
}

TEST_CASE("malformed ids are refused with the field named and the value not echoed") {
  auto as_bool = [](auto r) -> result<bool> {
    if (!r)
      return r.error();
    return true;
  };
  auto agent = [&](const json& x) { return as_bool(te::agent_from_json(x)); };
  auto server = [&](const json& x) { return as_bool(te::server_from_json(x)); };
  auto grant = [&](const json& x) { return as_bool(te::grant_from_json(x)); };
  auto route = [&](const json& x) { return as_bool(te::route_from_json(x)); };
  auto contact = [&](const json& x) { return as_bool(te::contact_from_json(x)); };
  auto phone = [&](const json& x) { return as_bool(te::phone_from_json(x)); };
  auto profile = [&](const json& x) { return as_bool(te::profile_from_json(x)); };
  const std::string too_long_id(65, 'a');
  const std::string too_long_tool(129, 'T');
  struct row {
    std::function<result<bool>(const json&)> decode;
    json doc;
    std::string field;
    json value;
  };
  std::vector<row> rows{
    {agent, te::to_json(sample_agent()), "agent_id", "Agent-X"},
    {agent, te::to_json(sample_agent()), "agent_id", ""},
    {agent, te::to_json(sample_agent()), "agent_id", too_long_id},
    {server, te::to_json(sample_server()), "server_id", "s/../x"},
    {server, te::to_json(sample_server()), "server_id", "-"},
    {server, te::to_json(sample_server()), "tenant_id", "_node"},
    {server, te::to_json(sample_server()), "preset_id", "Exa Preset"},
    {grant, te::to_json(sample_grant()), "agent_id", "a b"},
    {grant, te::to_json(sample_grant()), "server_id", "srv!"},
    {grant, te::to_json(sample_grant()), "tool", "rm -rf"},
    {grant, te::to_json(sample_grant()), "tool", too_long_tool},
    {grant, te::to_json(sample_grant()), "tool", ""},
    {route, te::to_json(pinned_route()), "action", "Web.Search"},
    {route, te::to_json(pinned_route()), "action", "web/search"},
    {route, te::to_json(pinned_route()), "pinned_tool", "bad tool"},
    {route, te::to_json(pinned_route()), "pinned_tool", ""},
    {route, te::to_json(automatic_route()), "pinned_server_id", "s_exa"},
    {contact, te::to_json(sample_contact()), "contact_id", "C1"},
    {contact, te::to_json(sample_contact()), "phone", "555-0100"},
    {phone, te::to_json(sample_phone()), "integration_id", "ph:1"},
    {phone, te::to_json(sample_phone()), "place_call_tool", "call now"},
    {profile, te::to_json(sample_profile()), "handle", "bp/1"},
    {profile, te::to_json(sample_profile()), "primary_origin", "http://shop.example.com"},
    {profile, te::to_json(sample_profile()), "primary_origin", "https://shop.example.com/path"},
    {profile, te::to_json(sample_profile()), "tool", "tool?"},
  };
  for (auto& r : rows) {
    CAPTURE(r.field);
    CAPTURE(r.value.dump());
    r.doc[r.field] = r.value;
    auto st = error_of(r.decode(r.doc));
    CHECK(st.code() == errc::out_of_range);
    CHECK(st.message().find(r.field) != std::string::npos);
    auto text = r.value.get<std::string>();
    if (text.size() > 2)
      CHECK(st.message().find(text) == std::string::npos);
  }
  // Ids inside arrays are named by their position.
  auto doc = te::to_json(sample_profile());
  doc["agent_ids"] = json::array({"a_1", "Not An Id"});
  auto st = error_of(profile(doc));
  CHECK(st.code() == errc::out_of_range);
  CHECK(st.message().find("agent_ids[1]") != std::string::npos);
}

TEST_CASE("project ignores other streams and the node tenant") {
  for (const auto& ev : every_upsert()) {
    std::vector<state_write> writes;
    REQUIRE(te::project(record_of(ev, tenant_a, "runs"), writes).is_ok());
    REQUIRE(te::project(record_of(ev, tenant_a, "directory"), writes).is_ok());
    REQUIRE(te::project(record_of(ev, "_node", te::stream), writes).is_ok());
    CHECK(writes.empty());
  }
  // Not even a malformed event in another stream is looked at.
  std::vector<state_write> writes;
  REQUIRE(te::project(event_record{tenant_a, "audit", 1, 1, "no.such", "[]"}, writes).is_ok());
  REQUIRE(te::project(event_record{"_node", "config", 1, 1, "no.such", "{}"}, writes).is_ok());
  CHECK(writes.empty());
}

TEST_CASE("project refuses unknown event types and malformed event data") {
  std::vector<state_write> writes;
  auto unknown = te::project(record_of({"agent.renamed", R"({"agent_id":"a_1"})"}), writes);
  REQUIRE_FALSE(unknown.is_ok());
  CHECK(unknown.code() == errc::corrupt_data);

  auto not_json = te::project(record_of({"agent.created", "{"}), writes);
  REQUIRE_FALSE(not_json.is_ok());
  CHECK(not_json.code() == errc::corrupt_data);

  auto ev = te::agent_created(sample_agent());
  auto data = json::parse(ev.data);
  data["agent"]["admin"] = true;
  auto extra = te::project(record_of({ev.type, data.dump()}), writes);
  REQUIRE_FALSE(extra.is_ok());
  CHECK(extra.code() == errc::unknown_field);
  CHECK(extra.message().find("agent.admin") != std::string::npos);

  auto missing =
    te::project(record_of({"grant.cleared", R"({"agent_id":"a_1","tool":"t"})"}), writes);
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.code() == errc::missing_field);
  CHECK(missing.message().find("server_id") != std::string::npos);

  auto bad_id = te::project(record_of(te::contact_deleted("C/1")), writes);
  REQUIRE_FALSE(bad_id.is_ok());
  CHECK(bad_id.code() == errc::out_of_range);

  // A server record of another tenant does not enter this tenant's stream.
  auto foreign = sample_server();
  foreign.tenant_id = "t_b";
  auto refused = te::project(record_of(te::server_upserted(foreign)), writes);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.message().find("tenant_id") != std::string::npos);
  auto state = empty_tenant();
  CHECK_FALSE(te::apply(te::server_upserted(foreign), state).is_ok());
  CHECK_FALSE(te::apply({"agent.renamed", "{}"}, state).is_ok());
  CHECK(writes.empty());
  CHECK(state.state.servers.empty());
}

TEST_CASE("load refuses entries it cannot account for") {
  const std::string p = te::state_prefix(tenant_a);
  auto agent = te::to_json(sample_agent()).dump();
  auto refused = [&](const std::vector<std::pair<std::string, std::string>>& entries) {
    auto loaded = te::load(tenant_a, entries);
    REQUIRE_FALSE(loaded.is_ok());
    CHECK(loaded.error().code() == errc::corrupt_data);
  };
  refused({{p + "widget/w1", "{}"}});
  refused({{p + "agent/a_2", agent}});                   // key and value disagree
  refused({{p + "agent/a_1", "not json"}});              // not JSON
  refused({{p + "agent/a_1", R"({"agent_id":"a_1"})"}}); // fields missing
  refused({{"t_b/cfg/agent/a_1", agent}});               // another tenant's entry
  auto foreign = sample_server();
  foreign.tenant_id = "t_b";
  refused({{p + "server/s_exa", te::to_json(foreign).dump()}});
  CHECK_FALSE(te::load("_node", {}).is_ok());
  auto empty = te::load(tenant_a, {});
  REQUIRE(empty);
  CHECK(empty->state.tenant_id == tenant_a);
}

TEST_CASE("the effective policy survives a round trip") {
  effective_policy p;
  p.tenant_id = tenant_a;
  p.agent_id = "a_1";
  p.run_id = "r_42";
  p.chan = channel::whatsapp;
  p.caller = caller_class::admin;
  p.contacts = contact_detail::number_endings;
  p.created_us = -5;
  p.tools.push_back(
    {tool_origin::internal, "search_contacts", "", risk_level::low, true, false, ""});
  p.tools.push_back(
    {tool_origin::mcp, "web_search_exa", "s_exa", risk_level::high, false, true, "web.search"});
  p.tools.push_back(
    {tool_origin::integration, "place_call", "ph_1", risk_level::medium, false, true, ""});
  p.routes.push_back({"web.search", route_mode::pinned, "s_exa", "web_search_exa"});
  p.routes.push_back({"web.fetch", route_mode::automatic, "", ""});
  p.profiles.push_back({"bp_1", "Shop", "https://shop.example.com"});
  // One decision per reason, so every reason name round-trips.
  for (int why = n(reason::explicit_grant); why <= n(reason::owner_conversation_only); ++why)
    p.decisions.push_back({static_cast<tool_origin>(why % 3), "tool_" + std::to_string(why),
                           why % 2 == 0 ? "" : "s_x", static_cast<reason>(why)});
  auto doc = te::to_json(p);
  CHECK(doc["chan"] == "whatsapp");
  CHECK(doc["caller"] == "admin");
  CHECK(doc["contacts"] == "number_endings");
  CHECK(doc["decisions"][0]["why"] == "explicit_grant");
  CHECK(doc["tools"][1]["risk"] == "high");
  auto back = te::policy_from_json(reparse(doc));
  REQUIRE(back);
  CHECK(show(*back) == show(p));
  CHECK(te::to_json(*back) == doc);

  auto broken = doc;
  broken["decisions"][3]["why"] = "because";
  auto st = error_of(te::policy_from_json(broken));
  CHECK(st.code() == errc::out_of_range);
  CHECK(st.message().find("decisions[3].why") != std::string::npos);
  broken = doc;
  broken["tools"][0]["extra"] = 1;
  CHECK(error_of(te::policy_from_json(broken)).code() == errc::unknown_field);
}

TEST_CASE("composed policies of every channel survive a round trip") {
  auto t = test::base_tenant();
  t.contacts.push_back({"c_admin", "Owner", "+15550000001", true, {}, {}});
  t.phones.push_back({"ph_1", phone_provider::twilio, true, true, "place_call"});
  t.profiles.push_back({"bp_1", "Mail", "https://mail.example.com", {test::default_agent}, "", ""});
  for (auto c :
       {channel::owner_text_chat, channel::in_app_voice, channel::phone_call, channel::sms,
        channel::whatsapp, channel::scheduled_run, channel::webhook, channel::manual_worker_run}) {
    auto p = test::compose(t, c, test::default_agent, "+15550000001");
    auto back = te::policy_from_json(reparse(te::to_json(p)));
    REQUIRE_MESSAGE(back.is_ok(), back.error().message());
    CHECK(show(*back) == show(p));
  }
}

TEST_CASE("the projection rebuilt by the event store loads the same state") {
  test::temp_dir dir;
  event_db_options opts;
  opts.projectors.push_back(&te::project);
  auto db = event_db::open(dir.str() + "/store", opts);
  REQUIRE(db);

  // Random configuration of t_a, and noise of another tenant and stream.
  event_generator gen;
  auto applied = empty_tenant();
  int64_t now_us = 1;
  for (int batch_idx = 0; batch_idx < 40; ++batch_idx) {
    append_request req{tenant_a, te::stream, {}, append_request::any_seq};
    for (int event_idx = 0; event_idx < 25; ++event_idx)
      req.events.push_back(gen.next());
    REQUIRE((*db)->append(req, now_us++));
    for (const auto& ev : req.events)
      REQUIRE(te::apply(ev, applied).is_ok());
    append_request other{
      "t_b", te::stream, {te::agent_created({"b_1", "B", true})}, append_request::any_seq};
    REQUIRE((*db)->append(other, now_us++));
    append_request runs{tenant_a, "runs", {{"run.started", R"({"x":1})"}}, append_request::any_seq};
    REQUIRE((*db)->append(runs, now_us++));
  }
  // A malformed config event is refused with the projection's error.
  append_request bad{
    tenant_a, te::stream, {{"agent.created", R"({"agent":{}})"}}, append_request::any_seq};
  auto refused = (*db)->append(bad, now_us++);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.error().code() == errc::missing_field);

  auto scan = [&](event_db& store) {
    auto entries = store.scan_state(te::state_prefix(tenant_a), 100000);
    REQUIRE(entries);
    auto loaded = te::load(tenant_a, *entries);
    REQUIRE_MESSAGE(loaded.is_ok(), loaded.error().message());
    return std::move(*loaded);
  };
  CHECK(show(scan(**db)) == show(applied));

  // Reopen: every projection is dropped and rebuilt from the events.
  db->reset();
  db = event_db::open(dir.str() + "/store", opts);
  REQUIRE(db);
  CHECK(show(scan(**db)) == show(applied));
  auto other = (*db)->scan_state(te::state_prefix("t_b"), 100);
  REQUIRE(other);
  CHECK(other->size() == 1);
  auto report = (*db)->verify();
  CHECK(report.is_ok());
}
