// Properties of compose_policy over tens of thousands of random tenants,
// grants, server states, channels and routes (fixed seed: reproducible).
#include <doctest/doctest.h>

#include <random>
#include <set>

#include "tests/actors/tenant/policy_fixtures.hpp"

using namespace voxos;
using namespace voxos::test;

namespace {

constexpr int cases = 20000;

struct generator {
  std::mt19937_64 rng{0x5eed'0f'7001ULL};

  bool coin(double p = 0.5) { return std::bernoulli_distribution{p}(rng); }

  template <class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[std::uniform_int_distribution<std::size_t>{0, xs.size() - 1}(rng)];
  }

  mcp_server_record server(const std::string& id) {
    static const std::vector<std::string_view> presets{
      preset_ids::exa,       preset_ids::exa_api_key, preset_ids::tavily,
      preset_ids::firecrawl, preset_ids::browserless, "github"};
    mcp_server_record s;
    if (coin(0.8)) {
      auto preset = pick(presets);
      s = server_from_preset(id, preset,
                             {"tavily-search", "firecrawl_search", "browserless_search",
                              "browserless_scrape", "list_issues"});
      if (coin(0.1))
        s.url += "/lookalike";
    } else {
      s = custom_server(id, {"web_search_exa", "web_fetch_exa", "tavily-search", "do_thing"});
    }
    s.enabled = coin(0.85);
    s.trusted = coin(0.85);
    s.connected = coin(0.85);
    // Random allowlist and discovery subsets.
    std::vector<std::string> allowed;
    for (auto& name : s.allowed_tools)
      if (coin(0.8))
        allowed.push_back(name);
    s.allowed_tools = allowed;
    std::vector<tool_definition> cached;
    for (auto& def : s.cached_tools)
      if (coin(0.9))
        cached.push_back(def);
    s.cached_tools = tool_cache{std::move(cached)};
    return s;
  }

  tenant_state tenant() {
    tenant_state t;
    t.tenant_id = "t_a";
    t.agents.push_back({default_agent, "Default", true});
    t.agents.push_back({other_agent, "Other", false});
    auto server_count = std::uniform_int_distribution<int>{0, 7}(rng);
    for (int idx = 0; idx < server_count; ++idx) {
      auto id = "s_" + std::to_string(idx);
      t.servers.emplace(id, server(id));
    }
    std::vector<std::pair<std::string, std::string>> tools;
    for (const auto& it : internal_tools())
      tools.emplace_back("", it.name);
    for (const auto& [id, s] : t.servers)
      for (const auto& def : s.cached_tools)
        tools.emplace_back(id, def.name);
    if (coin(0.3)) {
      t.phones.push_back({"ph_1", coin() ? phone_provider::twilio : phone_provider::telnyx,
                          coin(0.7), coin(0.7), "place_call"});
      tools.emplace_back("ph_1", "place_call");
    }
    // Grants, including some for servers of another tenant.
    auto grant_count = std::uniform_int_distribution<int>{0, 25}(rng);
    for (int idx = 0; idx < grant_count && !tools.empty(); ++idx) {
      auto [server, tool] = pick(tools);
      if (coin(0.05))
        server = "s_foreign";
      grant(t, coin(0.7) ? default_agent : other_agent, server, tool,
            coin(0.7) ? grant_decision::allow : grant_decision::deny);
    }
    // Routes, sometimes pinned to a foreign or non-member tool.
    if (coin(0.5) && !tools.empty()) {
      action_route r{coin(0.7) ? default_agent : other_agent, "web.search",
                     coin(0.6) ? route_mode::pinned : route_mode::automatic, "", ""};
      auto [server, tool] = pick(tools);
      r.pinned_server_id = coin(0.1) ? "s_foreign" : server;
      r.pinned_tool = tool;
      t.routes.push_back(r);
    }
    t.contacts.push_back({"c_1", "Admin", "+15550000001", true, {}, {}});
    t.contacts.push_back({"c_2", "Friend", "+15550000002", false, {}, {}});
    if (coin(0.3))
      t.profiles.push_back({"bp_1",
                            "Profile",
                            "https://example.com",
                            {coin() ? default_agent : other_agent},
                            t.servers.empty() || coin() ? "" : t.servers.begin()->first,
                            "browserless_agent"});
    return t;
  }

  channel chan() { return static_cast<channel>(std::uniform_int_distribution<int>{0, 8}(rng)); }
};

bool is_web_search_member(const tenant_state& t, const snapshot_tool& tool) {
  if (tool.origin != tool_origin::mcp)
    return false;
  auto preset = t.servers.at(std::string{tool.server_id()}).preset_id;
  for (const auto& m : route_groups().front().members)
    if (m.tool == tool.name()
        && (m.preset_id == preset
            || (m.preset_id == preset_ids::exa && preset == preset_ids::exa_api_key)))
      return true;
  return false;
}

} // namespace

TEST_CASE("a snapshot never holds a tool the base policy refuses or another tenant's server") {
  generator gen;
  std::size_t tools_seen = 0;
  for (int case_idx = 0; case_idx < cases; ++case_idx) {
    auto t = gen.tenant();
    auto agent = gen.coin(0.7) ? default_agent : other_agent;
    auto c = gen.chan();
    auto parent = compose(t, channel::owner_text_chat, gen.coin() ? agent : default_agent);
    auto p = compose(t, c, agent, gen.coin() ? "+15550000001" : "+15550000002", &parent);
    for (const auto& tool : p.tools) {
      ++tools_seen;
      // Allowed by the persisted grants (with defaults) and server checks.
      auto base = check_grant(t, agent, tool.server_id(), tool.name());
      if (!base.allowed())
        FAIL_CHECK("case " << case_idx << ": " << tool.name() << " on '" << tool.server_id()
                           << "' is in the snapshot but the base policy says "
                           << to_string(base.why));
      // Never a server of another tenant.
      if (tool.origin == tool_origin::mcp && t.servers.count(std::string{tool.server_id()}) != 1)
        FAIL_CHECK("case " << case_idx << ": foreign server " << tool.server_id());
      if (tool.origin == tool_origin::integration && tool.server_id() != "ph_1")
        FAIL_CHECK("case " << case_idx << ": foreign integration " << tool.server_id());
    }
    // Every decision's tool is in the snapshot exactly when it is allowed.
    std::size_t allowed = 0;
    for (const auto& d : p.decisions)
      if (d.allowed()) {
        ++allowed;
        if (p.find(d.server_id(), d.tool()) == nullptr)
          FAIL_CHECK("case " << case_idx << ": allowed decision without a tool");
      }
    if (allowed != p.tools.size())
      FAIL_CHECK("case " << case_idx << ": decisions and tools disagree");
  }
  CHECK(tools_seen > static_cast<std::size_t>(cases));
}

TEST_CASE("routes expose at most one implementation and pinned routes never fall back") {
  generator gen;
  int pinned_cases = 0;
  for (int case_idx = 0; case_idx < cases; ++case_idx) {
    auto t = gen.tenant();
    auto agent = gen.coin(0.7) ? default_agent : other_agent;
    auto p = compose(t, gen.coin() ? channel::owner_text_chat : channel::in_app_voice, agent);
    std::vector<const snapshot_tool*> members;
    for (const auto& tool : p.tools)
      if (is_web_search_member(t, tool))
        members.push_back(&tool);
    if (members.size() > 1)
      FAIL_CHECK("case " << case_idx << ": " << members.size() << " web search tools");
    for (const auto& r : t.routes) {
      if (r.agent_id != agent || r.mode != route_mode::pinned)
        continue;
      ++pinned_cases;
      for (const auto* m : members)
        if (m->server_id() != r.pinned_server_id || m->name() != r.pinned_tool)
          FAIL_CHECK("case " << case_idx << ": pinned route fell back to " << m->name() << " on "
                             << m->server_id());
    }
  }
  CHECK(pinned_cases > 1000);
}

TEST_CASE("channel intersections hold for every random tenant") {
  generator gen;
  for (int case_idx = 0; case_idx < cases; ++case_idx) {
    auto t = gen.tenant();
    auto c = gen.chan();
    auto parent = compose(t);
    auto caller = gen.coin() ? "+15550000001" : "+15550000002";
    auto p = compose(t, c, default_agent, caller, &parent);
    for (const auto& tool : p.tools) {
      bool schedule =
        tool.name() == "create_agent_schedule" && tool.origin == tool_origin::internal;
      if (schedule && c != channel::owner_text_chat)
        FAIL_CHECK("case " << case_idx << ": schedule on " << to_string(c));
      if ((c == channel::sms || c == channel::whatsapp) && tool.mutating)
        FAIL_CHECK("case " << case_idx << ": mutating " << tool.name() << " on messaging");
      if (c == channel::phone_call && p.caller == caller_class::limited
          && (tool.name() != "web_search_exa"
              || !is_canonical_exa(t.servers.at(std::string{tool.server_id()}))))
        FAIL_CHECK("case " << case_idx << ": limited caller got " << tool.name());
      if (c == channel::subagent
          && (parent.find(tool.server_id(), tool.name()) == nullptr
              || tool.name() == "delegate_agent_task"))
        FAIL_CHECK("case " << case_idx << ": child expanded to " << tool.name());
    }
  }
}
