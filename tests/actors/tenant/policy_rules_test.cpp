// One table-driven test per rule of the product document's tool policy; each
// TEST_CASE is named after the rule it proves (see actors/tenant/README.md).
#include <doctest/doctest.h>

#include <optional>

#include "tests/actors/tenant/policy_fixtures.hpp"

using namespace voxos;
using namespace voxos::test;

// -- Internal tools -------------------------------------------------------------

TEST_CASE("search_contacts is denied by default") {
  auto t = base_tenant();
  auto p = compose(t);
  CHECK_FALSE(has_internal(p, "search_contacts"));
  CHECK(why(p, "", "search_contacts") == reason::not_granted);
  grant(t, default_agent, "", "search_contacts");
  CHECK(has_internal(compose(t), "search_contacts"));
}

TEST_CASE("delegate_agent_task requires an explicit internal tool grant") {
  auto t = base_tenant();
  CHECK_FALSE(has_internal(compose(t), "delegate_agent_task"));
  grant(t, default_agent, "", "delegate_agent_task");
  auto p = compose(t);
  CHECK(has_internal(p, "delegate_agent_task"));
  CHECK(why(p, "", "delegate_agent_task") == reason::explicit_grant);
  // The grant is per agent.
  CHECK_FALSE(
    has_internal(compose(t, channel::owner_text_chat, other_agent), "delegate_agent_task"));
}

TEST_CASE("each internal tool follows its toggle and otherwise its default") {
  for (const auto& tool : internal_tools()) {
    CAPTURE(tool.name);
    auto t = base_tenant();
    CHECK(has_internal(compose(t), tool.name) == tool.default_granted);
    grant(t, default_agent, "", tool.name, grant_decision::allow);
    CHECK(why(compose(t), "", tool.name) == reason::explicit_grant);
    grant(t, default_agent, "", tool.name, grant_decision::deny);
    CHECK(why(compose(t), "", tool.name) == reason::explicit_deny);
  }
}

TEST_CASE("a denied contact search hides the dependent place-call tool") {
  auto t = base_tenant();
  t.phones.push_back({"ph_1", phone_provider::twilio, true, true, "place_call"});
  grant(t, default_agent, "ph_1", "place_call");
  // No contact-search decision: the prerequisite is missing.
  CHECK(why(compose(t), "ph_1", "place_call") == reason::prerequisite_denied);
  grant(t, default_agent, "", "search_contacts");
  CHECK(has(compose(t), "ph_1", "place_call"));
  grant(t, default_agent, "", "search_contacts", grant_decision::deny);
  auto p = compose(t);
  CHECK_FALSE(has(p, "ph_1", "place_call"));
  CHECK(why(p, "ph_1", "place_call") == reason::prerequisite_denied);
}

TEST_CASE("a place-call tool needs a connected call-capable resource and its own grant") {
  auto t = base_tenant();
  grant(t, default_agent, "", "search_contacts");
  t.phones.push_back({"ph_1", phone_provider::telnyx, false, true, "place_call"});
  grant(t, default_agent, "ph_1", "place_call");
  CHECK(why(compose(t), "ph_1", "place_call") == reason::integration_unavailable);
  t.phones[0].call_capable = true;
  t.phones[0].connected = false;
  CHECK(why(compose(t), "ph_1", "place_call") == reason::integration_unavailable);
  t.phones[0].connected = true;
  CHECK(has(compose(t), "ph_1", "place_call"));
  CHECK(why(compose(t, channel::owner_text_chat, other_agent), "ph_1", "place_call")
        == reason::not_granted);
}

// -- Default web search -----------------------------------------------------------

TEST_CASE("every agent receives low-risk default grants for the two Exa tools") {
  auto t = base_tenant();
  for (const char* agent : {default_agent, other_agent}) {
    auto p = compose(t, channel::owner_text_chat, agent);
    CHECK(has(p, "s_exa", "web_search_exa"));
    CHECK(has(p, "s_exa", "web_fetch_exa"));
    CHECK(why(p, "s_exa", "web_fetch_exa") == reason::platform_default);
  }
}

TEST_CASE(
  "the Exa default holds only while the server is enabled trusted connected and allowlisted") {
  struct row {
    const char* name;
    void (*change)(mcp_server_record&);
    reason expected;
  };
  std::vector<row> rows{
    {"disabled", [](mcp_server_record& s) { s.enabled = false; }, reason::server_disabled},
    {"untrusted", [](mcp_server_record& s) { s.trusted = false; }, reason::server_untrusted},
    {"not connected", [](mcp_server_record& s) { s.connected = false; },
     reason::server_not_connected},
    {"not allowlisted", [](mcp_server_record& s) { s.allowed_tools = {"web_fetch_exa"}; },
     reason::not_allowlisted},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto t = base_tenant();
    r.change(t.servers.at("s_exa"));
    auto p = compose(t);
    CHECK_FALSE(has(p, "s_exa", "web_search_exa"));
    CHECK(why(p, "s_exa", "web_search_exa") == r.expected);
  }
}

TEST_CASE("a persisted denied grant overrides the Exa default for that agent") {
  auto t = base_tenant();
  grant(t, default_agent, "s_exa", "web_search_exa", grant_decision::deny);
  auto p = compose(t);
  CHECK_FALSE(has(p, "s_exa", "web_search_exa"));
  CHECK(why(p, "s_exa", "web_search_exa") == reason::explicit_deny);
  CHECK(has(p, "s_exa", "web_fetch_exa"));
  CHECK(has(compose(t, channel::owner_text_chat, other_agent), "s_exa", "web_search_exa"));
}

TEST_CASE("only the exact canonical keyless Exa identity qualifies for platform-default access") {
  const auto& exa = *find_preset(preset_ids::exa);
  struct row {
    const char* name;
    mcp_server_record server;
  };
  auto canonical = server_from_preset("s_x", preset_ids::exa);
  auto other_url = canonical;
  other_url.url += "?x=1";
  auto other_transport = canonical;
  other_transport.transport =
    exa.transport == transport_kind::sse ? transport_kind::streamable_http : transport_kind::sse;
  auto other_auth = canonical;
  other_auth.auth = auth_mode::api_key_header;
  auto no_preset = canonical;
  no_preset.preset_id.clear();
  auto api_key = server_from_preset("s_x", preset_ids::exa_api_key);
  auto gateway = custom_server("s_x", {"web_search_exa", "web_fetch_exa"});
  std::vector<row> look_alikes{
    {"another URL", other_url},        {"another transport", other_transport},
    {"another auth mode", other_auth}, {"no preset metadata", no_preset},
    {"the API-key preset", api_key},   {"a gateway advertising the same tools", gateway}};
  CHECK(is_canonical_exa(canonical));
  for (auto& r : look_alikes) {
    CAPTURE(r.name);
    CHECK_FALSE(is_canonical_exa(r.server));
    auto t = base_tenant();
    t.servers.clear();
    r.server.allowed_tools = {"web_search_exa", "web_fetch_exa"};
    t.servers.emplace("s_x", r.server);
    auto p = compose(t);
    CHECK_FALSE(has(p, "s_x", "web_search_exa"));
    CHECK(why(p, "s_x", "web_search_exa") == reason::not_granted);
  }
}

TEST_CASE("disabling the Exa server removes it from newly created text runs and voice sessions") {
  auto t = base_tenant();
  auto before = compose(t);
  t.servers.at("s_exa").enabled = false;
  for (auto c : {channel::owner_text_chat, channel::in_app_voice}) {
    auto p = compose(t, c);
    CHECK_FALSE(has(p, "s_exa", "web_search_exa"));
    CHECK_FALSE(has(p, "s_exa", "web_fetch_exa"));
  }
  // A run composed before keeps its snapshot.
  CHECK(has(before, "s_exa", "web_search_exa"));
  CHECK(check_call(before, "s_exa", "web_search_exa").allowed());
}

TEST_CASE("only tools returned by cache or live discovery are exposed") {
  auto t = base_tenant();
  auto& exa = t.servers.at("s_exa");
  // web_search_exa's schema is missing
  edit_cache(exa, [](auto& defs) { defs.erase(defs.begin()); });
  auto missing = t.servers.at("s_exa").allowed_tools.front();
  auto p = compose(t);
  CHECK_FALSE(has(p, "s_exa", missing));
  CHECK(why(p, "s_exa", missing) == reason::not_discovered);
}

TEST_CASE("an MCP tool needs an explicit allowlist and a grant") {
  auto t = base_tenant();
  auto github = server_from_preset("s_gh", "github");
  github.allowed_tools.clear();
  tool_definition def;
  def.name = "search_repositories";
  def.input_schema = R"({"type":"object"})";
  edit_cache(github, [&](auto& defs) { defs.push_back(def); });
  t.servers.emplace("s_gh", github);
  grant(t, default_agent, "s_gh", "search_repositories");
  CHECK(why(compose(t), "s_gh", "search_repositories") == reason::not_allowlisted);
  t.servers.at("s_gh").allowed_tools.push_back("search_repositories");
  CHECK(has(compose(t), "s_gh", "search_repositories"));
  CHECK(why(compose(t, channel::owner_text_chat, other_agent), "s_gh", "search_repositories")
        == reason::not_granted);
}

TEST_CASE("a tool is read-only when its curated preset says so or its definition hints it") {
  auto t = base_tenant();
  // The Grounding Lite preset marks its tools read-only; these cached
  // definitions carry no readOnlyHint.
  auto maps = server_from_preset("s_maps", "google_maps_grounding_lite");
  maps.allowed_tools.clear();
  for (const auto& def : maps.cached_tools.definitions()) {
    CHECK_FALSE(def.read_only_hint);
    maps.allowed_tools.push_back(def.name);
  }
  REQUIRE(maps.allowed_tools.size() >= 2); // lookup_weather, search_places...
  // A server without a preset: read-only only by the hint.
  auto plain = server_from_preset("s_gh", "github");
  plain.preset_id.clear();
  plain.allowed_tools = {"hinted", "unhinted"};
  edit_cache(plain, [](auto& defs) {
    tool_definition hinted;
    hinted.name = "hinted";
    hinted.input_schema = R"({"type":"object"})";
    hinted.read_only_hint = true;
    tool_definition unhinted = hinted;
    unhinted.name = "unhinted";
    unhinted.read_only_hint = false;
    defs.push_back(hinted);
    defs.push_back(unhinted);
  });
  t.servers.emplace("s_maps", maps);
  t.servers.emplace("s_gh", plain);
  for (const auto& name : t.servers.at("s_maps").allowed_tools)
    grant(t, default_agent, "s_maps", name);
  grant(t, default_agent, "s_gh", "hinted");
  grant(t, default_agent, "s_gh", "unhinted");
  auto p = compose(t);
  for (const auto& name : t.servers.at("s_maps").allowed_tools) {
    CAPTURE(name);
    const auto* tool = p.find("s_maps", name);
    REQUIRE(tool != nullptr);
    CHECK(tool->read_only);
  }
  REQUIRE(p.find("s_gh", "hinted") != nullptr);
  CHECK(p.find("s_gh", "hinted")->read_only);
  REQUIRE(p.find("s_gh", "unhinted") != nullptr);
  CHECK_FALSE(p.find("s_gh", "unhinted")->read_only);
}

// -- Action routes ------------------------------------------------------------------

namespace {

tenant_state search_providers() {
  auto t = base_tenant();
  t.servers.emplace("s_tavily", server_from_preset("s_tavily", preset_ids::tavily,
                                                   {"tavily-search", "tavily-extract"}));
  t.servers.emplace("s_fire", server_from_preset("s_fire", preset_ids::firecrawl,
                                                 {"firecrawl_search", "firecrawl_scrape"}));
  t.servers.emplace("s_bl", server_from_preset("s_bl", preset_ids::browserless,
                                               {"browserless_search", "browserless_scrape"}));
  for (const auto& [server, tool] :
       std::vector<std::pair<std::string, std::string>>{{"s_tavily", "tavily-search"},
                                                        {"s_tavily", "tavily-extract"},
                                                        {"s_fire", "firecrawl_search"},
                                                        {"s_fire", "firecrawl_scrape"},
                                                        {"s_bl", "browserless_search"},
                                                        {"s_bl", "browserless_scrape"}})
    grant(t, default_agent, server, tool);
  return t;
}

int web_search_members(const effective_policy& p) {
  int count = 0;
  for (const auto& tool : p.tools)
    if (tool.name() == "web_search_exa" || tool.name() == "tavily-search"
        || tool.name() == "firecrawl_search" || tool.name() == "browserless_search")
      ++count;
  return count;
}

} // namespace

TEST_CASE("automatic web search selects the lowest-priority authorised implementation") {
  auto t = search_providers();
  auto p = compose(t);
  CHECK(web_search_members(p) == 1);
  CHECK(has(p, "s_exa", "web_search_exa"));
  REQUIRE(p.routes.size() == 1);
  CHECK(p.routes[0].server_id == "s_exa");
  CHECK(why(p, "s_tavily", "tavily-search") == reason::route_not_selected);

  t.servers.at("s_exa").enabled = false;
  CHECK(has(compose(t), "s_tavily", "tavily-search"));
  grant(t, default_agent, "s_tavily", "tavily-search", grant_decision::deny);
  CHECK(has(compose(t), "s_fire", "firecrawl_search"));
  t.servers.at("s_fire").trusted = false;
  auto last = compose(t);
  CHECK(has(last, "s_bl", "browserless_search"));
  CHECK(web_search_members(last) == 1);
}

TEST_CASE("a pinned route never silently falls back") {
  auto t = search_providers();
  t.routes.push_back(
    {default_agent, "web.search", route_mode::pinned, "s_fire", "firecrawl_search"});
  auto p = compose(t);
  CHECK(has(p, "s_fire", "firecrawl_search"));
  CHECK(web_search_members(p) == 1);
  CHECK(why(p, "s_exa", "web_search_exa") == reason::route_not_selected);

  // The pinned implementation loses its grant: nothing replaces it.
  grant(t, default_agent, "s_fire", "firecrawl_search", grant_decision::deny);
  auto lost = compose(t);
  CHECK(web_search_members(lost) == 0);
  CHECK(lost.routes[0].server_id.empty());
  CHECK(why(lost, "s_exa", "web_search_exa") == reason::pinned_route_unavailable);

  // ... or becomes unavailable.
  auto t2 = search_providers();
  t2.routes.push_back(
    {default_agent, "web.search", route_mode::pinned, "s_fire", "firecrawl_search"});
  t2.servers.at("s_fire").connected = false;
  CHECK(web_search_members(compose(t2)) == 0);
}

TEST_CASE("a route pinned to a server of another tenant exposes nothing") {
  auto t = search_providers();
  t.routes.push_back(
    {default_agent, "web.search", route_mode::pinned, "s_elsewhere", "web_search_exa"});
  auto p = compose(t);
  CHECK(web_search_members(p) == 0);
  for (const auto& tool : p.tools)
    CHECK(tool.server_id() != "s_elsewhere");
}

TEST_CASE("the web search route leaves other tools of the same servers alone") {
  auto t = search_providers();
  auto p = compose(t);
  CHECK(has(p, "s_bl", "browserless_scrape"));
  CHECK(has(p, "s_fire", "firecrawl_scrape"));
  CHECK(has(p, "s_tavily", "tavily-extract"));
  CHECK(has(p, "s_exa", "web_fetch_exa"));
}

TEST_CASE("routes apply to voice sessions as to text runs") {
  auto t = search_providers();
  t.routes.push_back(
    {default_agent, "web.search", route_mode::pinned, "s_tavily", "tavily-search"});
  auto voice = compose(t, channel::in_app_voice);
  CHECK(has(voice, "s_tavily", "tavily-search"));
  CHECK(web_search_members(voice) == 1);
}

// -- Channels ----------------------------------------------------------------------------

TEST_CASE("create_agent_schedule is available only in an interactive authenticated text chat") {
  auto t = base_tenant();
  grant(t, default_agent, "", "create_agent_schedule");
  auto parent = compose(t);
  CHECK(has_internal(parent, "create_agent_schedule"));
  for (auto c : {channel::in_app_voice, channel::phone_call, channel::sms, channel::whatsapp}) {
    CAPTURE(to_string(c));
    auto p = compose(t, c, default_agent, "", &parent);
    CHECK_FALSE(has_internal(p, "create_agent_schedule"));
  }
}

TEST_CASE("scheduled runs webhooks manual worker runs and subagents cannot use "
          "create_agent_schedule") {
  auto t = base_tenant();
  grant(t, default_agent, "", "create_agent_schedule");
  // (a parent that holds it: a child still does not get it)
  auto parent = compose(t);
  REQUIRE(has_internal(parent, "create_agent_schedule"));
  for (auto c :
       {channel::scheduled_run, channel::webhook, channel::manual_worker_run, channel::subagent}) {
    CAPTURE(to_string(c));
    auto p = compose(t, c, default_agent, "", &parent);
    CHECK_FALSE(has_internal(p, "create_agent_schedule"));
    CHECK(why(p, "", "create_agent_schedule") == reason::text_chat_only);
  }
}

namespace {

tenant_state phone_tenant() {
  auto t = base_tenant();
  t.contacts.push_back({"c_admin", "Owner", "+15550000001", true, {}, {}});
  t.contacts.push_back({"c_friend", "Friend", "+15550000002", false, {}, {}});
  grant(t, default_agent, "", "search_contacts");
  grant(t, default_agent, "", "create_agent_memory");
  grant(t, default_agent, "", "create_task_plan");
  return t;
}

} // namespace

TEST_CASE("a limited phone caller receives web_search_exa only through a qualifying Exa server") {
  auto t = phone_tenant();
  auto p = compose(t, channel::phone_call, default_agent, "+15550000002");
  CHECK(p.caller == caller_class::limited);
  REQUIRE(p.tools.size() == 1);
  CHECK(has(p, "s_exa", "web_search_exa"));
  CHECK(why(p, "s_exa", "web_fetch_exa") == reason::caller_limited);

  // Not unless the agent's base policy grants that exact server and tool.
  auto denied = phone_tenant();
  grant(denied, default_agent, "s_exa", "web_search_exa", grant_decision::deny);
  CHECK(compose(denied, channel::phone_call, default_agent, "+15550000002").tools.empty());

  // A custom gateway advertising the same tool does not qualify.
  auto gateway = phone_tenant();
  gateway.servers.clear();
  gateway.servers.emplace("s_gw", custom_server("s_gw", {"web_search_exa"}));
  grant(gateway, default_agent, "s_gw", "web_search_exa");
  CHECK(has(compose(gateway), "s_gw", "web_search_exa"));
  CHECK(compose(gateway, channel::phone_call, default_agent, "+15550000002").tools.empty());
}

TEST_CASE("an admin phone caller keeps the channel's normal approved policy") {
  auto t = phone_tenant();
  auto p = compose(t, channel::phone_call, default_agent, "+15550000001");
  CHECK(p.caller == caller_class::admin);
  CHECK(has_internal(p, "search_contacts"));
  CHECK(has_internal(p, "create_agent_memory"));
  CHECK(has(p, "s_exa", "web_fetch_exa"));
}

TEST_CASE(
  "inbound messaging keeps only granted low-risk docs and time tools and qualifying Exa search") {
  auto t = phone_tenant();
  for (auto c : {channel::sms, channel::whatsapp}) {
    CAPTURE(to_string(c));
    auto p = compose(t, c, default_agent, "+15550000002");
    CHECK(p.caller == caller_class::unknown);
    for (const auto& tool : p.tools) {
      CAPTURE(tool.name());
      bool docs_or_time =
        tool.origin == tool_origin::internal && find_internal_tool(tool.name())->global_read_only;
      bool exa_search = tool.server_id() == "s_exa" && tool.name() == "web_search_exa";
      CHECK((docs_or_time || exa_search));
    }
    CHECK(has(p, "s_exa", "web_search_exa"));
    CHECK_FALSE(has(p, "s_exa", "web_fetch_exa"));
    CHECK_FALSE(has_internal(p, "search_contacts"));
    CHECK(why(p, "", "search_contacts") == reason::sender_not_admin);
  }
}

TEST_CASE("an SMS admin keeps an existing search_contacts grant but never scheduling plans "
          "memories or mutating tools") {
  auto t = phone_tenant();
  grant(t, default_agent, "", "create_agent_schedule");
  auto p = compose(t, channel::sms, default_agent, "+15550000001");
  CHECK(p.caller == caller_class::admin);
  CHECK(has_internal(p, "search_contacts"));
  for (const char* name :
       {"create_agent_schedule", "create_task_plan", "create_agent_memory", "list_agent_memories"})
    CHECK_FALSE(has_internal(p, name));
  for (const auto& tool : p.tools)
    CHECK_FALSE(tool.mutating);
  // Without an existing grant, admin status adds none.
  auto no_grant = base_tenant();
  no_grant.contacts = t.contacts;
  CHECK_FALSE(has_internal(compose(no_grant, channel::sms, default_agent, "+15550000001"),
                           "search_contacts"));
}

TEST_CASE("the sender must match a saved Admin contact's normalised number exactly") {
  auto t = phone_tenant();
  for (const char* sender : {"15550000001", "+1 555 000 0001", "+155500000011", ""}) {
    CAPTURE(sender);
    auto p = compose(t, channel::whatsapp, default_agent, sender);
    CHECK(p.caller == caller_class::unknown);
    CHECK_FALSE(has_internal(p, "search_contacts"));
  }
}

TEST_CASE("contact results on messaging media carry number endings only") {
  auto t = phone_tenant();
  CHECK(compose(t, channel::sms, default_agent, "+15550000001").contacts
        == contact_detail::number_endings);
  CHECK(compose(t, channel::whatsapp, default_agent, "+15550000001").contacts
        == contact_detail::number_endings);
  CHECK(compose(t).contacts == contact_detail::full_numbers);
}

TEST_CASE("a child run never inherits delegate_agent_task") {
  auto t = base_tenant();
  grant(t, default_agent, "", "delegate_agent_task");
  grant(t, other_agent, "", "delegate_agent_task");
  // Both the parent and the child's agent hold it: the child still does not.
  auto parent = compose(t);
  REQUIRE(has_internal(parent, "delegate_agent_task"));
  for (auto agent : {default_agent, other_agent}) {
    CAPTURE(agent);
    auto child = compose(t, channel::subagent, agent, "", &parent);
    CHECK_FALSE(has_internal(child, "delegate_agent_task"));
    CHECK(why(child, "", "delegate_agent_task") == reason::not_inherited);
    // A grandchild composed from the child has nothing to inherit either.
    auto grandchild = compose(t, channel::subagent, agent, "", &child);
    CHECK_FALSE(has_internal(grandchild, "delegate_agent_task"));
  }
}

TEST_CASE("a child run never gets a tool its parent lacks") {
  auto t = base_tenant();
  grant(t, default_agent, "s_exa", "web_fetch_exa", grant_decision::deny);
  auto parent = compose(t);
  // The child's agent has more than the parent: it still gets no more.
  grant(t, other_agent, "", "create_agent_memory");
  auto child = compose(t, channel::subagent, other_agent, "", &parent);
  CHECK_FALSE(has(child, "s_exa", "web_fetch_exa"));
  CHECK(why(child, "s_exa", "web_fetch_exa") == reason::parent_not_granted);
  CHECK_FALSE(has_internal(child, "create_agent_memory"));
  CHECK(why(child, "", "create_agent_memory") == reason::parent_not_granted);
  // What both have, the child keeps.
  CHECK(has(child, "s_exa", "web_search_exa"));
  for (const auto& tool : child.tools)
    CHECK(parent.find(tool.server_id(), tool.name()) != nullptr);
  // No parent snapshot, no tools.
  CHECK(compose(t, channel::subagent, other_agent).tools.empty());
}

// -- Browser profiles ----------------------------------------------------------------------

TEST_CASE("saved browser profiles are offered only to web chat and in-app voice of their agent") {
  auto t = base_tenant();
  t.profiles.push_back(
    {"bp_local", "Work mail", "https://mail.example.com", {default_agent}, "", ""});
  CHECK(compose(t).profiles.size() == 1);
  CHECK(compose(t, channel::in_app_voice).profiles.size() == 1);
  CHECK(compose(t, channel::owner_text_chat, other_agent).profiles.empty());
  for (auto c : {channel::phone_call, channel::sms, channel::scheduled_run, channel::webhook,
                 channel::manual_worker_run})
    CHECK(compose(t, c, default_agent, "+15550000001").profiles.empty());
}

namespace {

/// A Browserless server and a hosted profile of the default agent on it
/// (its underlying tool not granted yet).
tenant_state hosted_profile_tenant() {
  auto t = base_tenant();
  t.servers.emplace("s_bl",
                    server_from_preset("s_bl", preset_ids::browserless, {"browserless_agent"}));
  t.profiles.push_back({"bp_hosted",
                        "Shop",
                        "https://shop.example.com",
                        {default_agent},
                        "s_bl",
                        "browserless_agent"});
  return t;
}

} // namespace

TEST_CASE("a subagent gets no saved-profile browser authority even from a parent that has it") {
  auto t = hosted_profile_tenant();
  grant(t, default_agent, "s_bl", "browserless_agent");
  t.profiles.push_back(
    {"bp_local", "Work mail", "https://mail.example.com", {default_agent}, "", ""});
  auto parent = compose(t);
  REQUIRE(parent.profiles.size() == 2);
  auto child = compose(t, channel::subagent, default_agent, "", &parent);
  CHECK(child.profiles.empty());
}

TEST_CASE("a hosted browser profile needs its underlying MCP grant") {
  auto t = hosted_profile_tenant();
  CHECK(compose(t).profiles.empty());
  grant(t, default_agent, "s_bl", "browserless_agent");
  auto p = compose(t);
  REQUIRE(p.profiles.size() == 1);
  CHECK(p.profiles[0].handle == "bp_hosted");
  t.servers.at("s_bl").trusted = false;
  CHECK(compose(t).profiles.empty());
}

// -- Execution checks --------------------------------------------------------------------------

TEST_CASE("execution inside a run checks the snapshot") {
  auto t = base_tenant();
  auto p = compose(t);
  CHECK(check_call(p, "s_exa", "web_search_exa").allowed());
  CHECK(check_call(p, "", "search_contacts").why == reason::not_in_snapshot);
  CHECK(check_call(p, "s_other", "web_search_exa").why == reason::not_in_snapshot);
  // A grant made after the snapshot does not reach the running run.
  grant(t, default_agent, "", "search_contacts");
  CHECK(check_call(p, "", "search_contacts").why == reason::not_in_snapshot);
}

TEST_CASE("a snapshot keeps its names after its index and the tenant's state are gone") {
  std::optional<effective_policy> p;
  policy_decision answer;
  {
    auto t = base_tenant();
    policy_index index{t};
    run_context ctx;
    ctx.run_id = "r_1";
    ctx.agent_id = default_agent;
    p = compose_policy(index, ctx, 1);
    answer = check_call(*p, "s_exa", "web_search_exa");
  }
  CHECK(has(*p, "s_exa", "web_search_exa"));
  CHECK(why(*p, "s_exa", "web_search_exa") == reason::platform_default);
  auto copy = *p;
  p.reset();
  CHECK(has(copy, "s_exa", "web_search_exa"));
  // The answer of check_call owns its text.
  CHECK(answer.tool() == "web_search_exa");
  CHECK(answer.server_id() == "s_exa");
}

TEST_CASE("a kept policy index composes the configuration it was built from") {
  auto t = base_tenant();
  policy_index index{t};
  run_context ctx;
  ctx.run_id = "r_1";
  ctx.agent_id = default_agent;
  // A later change reaches runs composed from a rebuilt index only.
  grant(t, default_agent, "s_exa", "web_search_exa", grant_decision::deny);
  CHECK(has(compose_policy(index, ctx, 1), "s_exa", "web_search_exa"));
  CHECK_FALSE(has(compose_policy(policy_index{t}, ctx, 1), "s_exa", "web_search_exa"));
  CHECK(index.tenant_id() == "t_a");
}

TEST_CASE("an action outside any run checks the persisted grant") {
  auto t = base_tenant();
  CHECK(check_grant(t, default_agent, "s_exa", "web_search_exa").allowed());
  CHECK(check_grant(t, default_agent, "", "search_contacts").why == reason::not_granted);
  grant(t, default_agent, "", "search_contacts");
  CHECK(check_grant(t, default_agent, "", "search_contacts").allowed());
  CHECK(check_grant(t, default_agent, "", "no_such_tool").why == reason::unknown_tool);
  CHECK(check_grant(t, default_agent, "s_foreign", "web_search_exa").why == reason::foreign_server);
}

// -- History: authenticated owner conversations only ----------------------------

namespace {

constexpr std::string_view history_tools[] = {"search_agent_history", "read_agent_history"};

/// Both history tools are dropped on channel `c`, each with the named reason.
void check_history_dropped(const effective_policy& p) {
  for (auto tool : history_tools) {
    CAPTURE(tool);
    CHECK_FALSE(has_internal(p, tool));
    CHECK(why(p, "", tool) == reason::owner_conversation_only);
  }
}

/// The phone tenant with both history tools granted to the default agent
/// (medium risk: not granted by default).
tenant_state history_tenant() {
  auto t = phone_tenant();
  for (auto tool : history_tools)
    grant(t, default_agent, "", std::string{tool});
  return t;
}

} // namespace

TEST_CASE("the history tools reach owner text chat and owner in-app voice") {
  auto t = history_tenant();
  for (auto c : {channel::owner_text_chat, channel::in_app_voice}) {
    CAPTURE(to_string(c));
    auto p = compose(t, c);
    for (auto tool : history_tools)
      CHECK(has_internal(p, tool));
  }
}

TEST_CASE("webhook runs drop the history tools as owner_conversation_only") {
  check_history_dropped(compose(history_tenant(), channel::webhook));
}

TEST_CASE("scheduled runs drop the history tools as owner_conversation_only") {
  check_history_dropped(compose(history_tenant(), channel::scheduled_run));
}

TEST_CASE("manual worker runs drop the history tools as owner_conversation_only") {
  check_history_dropped(compose(history_tenant(), channel::manual_worker_run));
}

TEST_CASE("subagent runs drop the history tools as owner_conversation_only") {
  auto t = history_tenant();
  auto parent = compose(t);
  check_history_dropped(compose(t, channel::subagent, default_agent, "", &parent));
}

TEST_CASE("phone calls drop the history tools as owner_conversation_only even for admin callers") {
  auto t = history_tenant();
  auto admin = compose(t, channel::phone_call, default_agent, "+15550000001");
  REQUIRE(admin.caller == caller_class::admin);
  check_history_dropped(admin);
  check_history_dropped(compose(t, channel::phone_call, default_agent, "+15550000002"));
}

TEST_CASE("SMS and WhatsApp runs drop the history tools as owner_conversation_only") {
  auto t = history_tenant();
  for (auto c : {channel::sms, channel::whatsapp}) {
    CAPTURE(to_string(c));
    check_history_dropped(compose(t, c, default_agent, "+15550000001"));
    check_history_dropped(compose(t, c, default_agent, "+15550000002"));
  }
}
