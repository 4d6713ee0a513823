// Curated MCP example skills: dependency checks before any skill write.
#include <doctest/doctest.h>

#include <algorithm>

#include "actors/tenant/skill_dependencies.hpp"
#include "tests/actors/tenant/policy_fixtures.hpp"

using namespace voxos;
using namespace voxos::test;

namespace {

// The OpenBnB accommodation-shortlist example's dependencies.
std::vector<skill_dependency> shortlist() {
  return {{"openbnb", "", {"airbnb_search", "airbnb_listing"}},
          {"google_maps_grounding_lite", "", {"search_places"}}};
}

tenant_state ready_tenant() {
  auto t = base_tenant();
  auto bnb = server_from_preset("s_bnb", "openbnb");
  bnb.allowed_tools = {"airbnb_search", "airbnb_listing"};
  t.servers.emplace("s_bnb", bnb);
  auto maps = server_from_preset("s_maps", "google_maps_grounding_lite");
  maps.allowed_tools = {"search_places"};
  t.servers.emplace("s_maps", maps);
  return t;
}

} // namespace

TEST_CASE(
  "an example skill is ready when every dependency is enabled trusted and allows its tools") {
  auto check = check_skill(ready_tenant(), shortlist());
  CHECK(check.readiness == skill_readiness::ready);
}

TEST_CASE("a blocking dependency names its reason and blocks only that skill") {
  struct row {
    const char* name;
    void (*change)(mcp_server_record&);
    skill_readiness readiness;
    const char* reason;
  };
  std::vector<row> rows{
    {"disabled", [](mcp_server_record& s) { s.enabled = false; }, skill_readiness::blocked,
     "disabled"},
    {"untrusted", [](mcp_server_record& s) { s.trusted = false; }, skill_readiness::blocked,
     "untrusted"},
    {"failed", [](mcp_server_record& s) { s.connected = false; }, skill_readiness::blocked,
     "failed"},
    {"undiscovered",
     [](mcp_server_record& s) { edit_cache(s, [](auto& defs) { defs.pop_back(); }); },
     skill_readiness::blocked, "undiscovered"},
    {"unallowed", [](mcp_server_record& s) { s.allowed_tools = {"airbnb_search"}; },
     skill_readiness::blocked, "not_allowed"},
    {"untested",
     [](mcp_server_record& s) {
       s.connected = false;
       s.cached_tools = {};
       s.discovered_us = 0;
     },
     skill_readiness::warning, "untested"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto t = ready_tenant();
    auto& bnb = t.servers.at("s_bnb");
    // Keep airbnb_listing last so "undiscovered" drops exactly that tool.
    edit_cache(bnb, [](auto& defs) {
      std::stable_partition(defs.begin(), defs.end(),
                            [](const tool_definition& d) { return d.name != "airbnb_listing"; });
    });
    r.change(bnb);
    auto check = check_skill(t, shortlist());
    CHECK(check.readiness == r.readiness);
    CHECK(check.reason == r.reason);
    // A skill that needs only the other server is unaffected.
    CHECK(check_skill(t, {shortlist()[1]}).readiness == skill_readiness::ready);
  }
}

TEST_CASE("dependencies match the canonical preset and variant never a label or id") {
  auto t = ready_tenant();
  auto look_alike = custom_server("openbnb", {"airbnb_search", "airbnb_listing"});
  look_alike.label = "openbnb";
  t.servers.erase("s_bnb");
  t.servers.emplace("openbnb", look_alike);
  auto check = check_skill_dependency(t, shortlist()[0]);
  CHECK(check.readiness == skill_readiness::blocked);
  CHECK(check.reason == "missing");

  auto gmail = ready_tenant();
  auto ws = server_from_preset("s_ws", "google_workspace");
  ws.variant = "drive";
  gmail.servers.emplace("s_ws", ws);
  CHECK(check_skill_dependency(gmail, {"google_workspace", "gmail", {}}).reason == "missing");
  CHECK(check_skill_dependency(gmail, {"google_workspace", "drive", {}}).reason == "ready");
}
