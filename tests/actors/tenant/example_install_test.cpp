// Installing curated example skills: the plan over a tenant's state (each
// rule of the product's loader paragraph), the install request and the
// node's answer on the wire.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "actors/tenant/example_install.hpp"
#include "tests/actors/tenant/policy_fixtures.hpp"

using namespace voxos;
using namespace voxos::test;
using nlohmann::json;

namespace {

const std::vector<std::string> shortlist_tools{"airbnb_search", "airbnb_listing",
                                               "maps_distance_matrix", "maps_search_places",
                                               "maps_place_details"};

example_skill skill(std::string slug, std::vector<skill_dependency> deps) {
  example_skill out;
  out.slug = std::move(slug);
  out.name = "Example";
  out.description = "An example skill.";
  out.body = "# Example\n\nSteps.\n";
  out.dependencies = std::move(deps);
  return out;
}

/// The OpenBnB shortlist and a GitHub skill.
std::vector<example_skill> two_skills() {
  return {skill("openbnb-accommodation-shortlist", {{"openbnb", "", shortlist_tools}}),
          skill("github-issue-triage", {{"github", "", {"list_issues", "search_code"}}})};
}

/// The tenant's own OpenBnB and GitHub servers: enabled, trusted, tested,
/// every needed tool advertised and allowed.
tenant_state ready_tenant() {
  auto t = base_tenant();
  auto bnb = server_from_preset("s_bnb", "openbnb");
  bnb.allowed_tools = shortlist_tools;
  t.servers.emplace("s_bnb", bnb);
  auto gh = server_from_preset("s_gh", "github");
  gh.allowed_tools = {"list_issues", "search_code"};
  t.servers.emplace("s_gh", gh);
  return t;
}

std::vector<example_verdict> plan(const tenant_state& t, std::set<std::string> existing = {},
                                  bool dry_run = false) {
  return plan_example_install(t, two_skills(), existing, dry_run);
}

} // namespace

TEST_CASE("an example whose dependencies are enabled trusted and allowed is installed ready") {
  auto verdicts = plan(ready_tenant());
  REQUIRE(verdicts.size() == 2);
  CHECK(verdicts[0].slug == "openbnb-accommodation-shortlist");
  CHECK(verdicts[0].outcome == example_outcome::installed);
  CHECK(verdicts[0].check.readiness == skill_readiness::ready);
  CHECK(verdicts[0].check.reason == "ready");
  CHECK(verdicts[1].outcome == example_outcome::installed);

  auto dry = plan(ready_tenant(), {}, true);
  CHECK(dry[0].outcome == example_outcome::would_install);
  CHECK(dry[1].outcome == example_outcome::would_install);
}

TEST_CASE("a disabled untrusted failed missing undiscovered or unallowed dependency blocks only "
          "its skill") {
  struct row {
    const char* reason;
    void (*change)(tenant_state&);
  };
  std::vector<row> rows{
    {"disabled", [](tenant_state& t) { t.servers.at("s_bnb").enabled = false; }},
    {"untrusted", [](tenant_state& t) { t.servers.at("s_bnb").trusted = false; }},
    {"failed", [](tenant_state& t) { t.servers.at("s_bnb").connected = false; }},
    {"missing", [](tenant_state& t) { t.servers.erase("s_bnb"); }},
    {"undiscovered",
     [](tenant_state& t) {
       edit_cache(t.servers.at("s_bnb"), [](auto& defs) {
         defs.erase(
           std::remove_if(defs.begin(), defs.end(),
                          [](const tool_definition& d) { return d.name == "maps_place_details"; }),
           defs.end());
       });
     }},
    {"not_allowed", [](tenant_state& t) { t.servers.at("s_bnb").allowed_tools.pop_back(); }},
  };
  for (const auto& r : rows) {
    CAPTURE(r.reason);
    auto t = ready_tenant();
    r.change(t);
    auto verdicts = plan(t);
    CHECK(verdicts[0].outcome == example_outcome::blocked);
    CHECK(verdicts[0].check.readiness == skill_readiness::blocked);
    CHECK(verdicts[0].check.reason == r.reason);
    // The GitHub skill in the same request is still installed.
    CHECK(verdicts[1].outcome == example_outcome::installed);
    CHECK(verdicts[1].check.readiness == skill_readiness::ready);
  }
}

TEST_CASE("a dependency needing sign-in or never tested installs with a visible readiness "
          "warning") {
  auto t = ready_tenant();
  t.servers.at("s_bnb").needs_auth = true;
  auto verdicts = plan(t);
  CHECK(verdicts[0].outcome == example_outcome::installed);
  CHECK(verdicts[0].check.readiness == skill_readiness::warning);
  CHECK(verdicts[0].check.reason == "needs_auth");
  CHECK(verdicts[0].check.server_id == "s_bnb");

  // Never signed in: nothing discovered yet, nothing to check tools against.
  auto& bnb = t.servers.at("s_bnb");
  bnb.connected = false;
  bnb.cached_tools = {};
  bnb.discovered_us = 0;
  bnb.allowed_tools.clear();
  CHECK(plan(t)[0].check.reason == "needs_auth");
  CHECK(plan(t)[0].outcome == example_outcome::installed);

  // Created, never tested.
  bnb.needs_auth = false;
  verdicts = plan(t, {}, true);
  CHECK(verdicts[0].outcome == example_outcome::would_install);
  CHECK(verdicts[0].check.readiness == skill_readiness::warning);
  CHECK(verdicts[0].check.reason == "untested");
}

TEST_CASE("a server needing sign-in still blocks when its last discovery lacks a needed tool") {
  auto t = ready_tenant();
  auto& bnb = t.servers.at("s_bnb");
  bnb.needs_auth = true;
  bnb.connected = false;
  bnb.allowed_tools = {"airbnb_search"};
  auto verdicts = plan(t);
  CHECK(verdicts[0].outcome == example_outcome::blocked);
  CHECK(verdicts[0].check.reason == "not_allowed");
}

TEST_CASE("only the tenant's own servers satisfy an example's dependencies") {
  auto t = ready_tenant();
  t.servers.at("s_bnb").tenant_id = "t_other";
  auto verdicts = plan(t);
  CHECK(verdicts[0].outcome == example_outcome::blocked);
  CHECK(verdicts[0].check.reason == "missing");
  CHECK(verdicts[0].check.server_id.empty());
  CHECK(verdicts[1].outcome == example_outcome::installed);
}

TEST_CASE("an existing slug is never overwritten whatever its dependencies say") {
  // Ready, blocked, or planned twice in one request: exists.
  auto verdicts = plan(ready_tenant(), {"github-issue-triage"});
  CHECK(verdicts[0].outcome == example_outcome::installed);
  CHECK(verdicts[1].outcome == example_outcome::exists);
  CHECK(verdicts[1].check.readiness == skill_readiness::ready);

  auto t = ready_tenant();
  t.servers.erase("s_bnb");
  verdicts = plan(t, {"openbnb-accommodation-shortlist"}, true);
  CHECK(verdicts[0].outcome == example_outcome::exists);
  CHECK(verdicts[0].check.reason == "missing");

  auto twice = two_skills();
  twice[1] = twice[0];
  verdicts = plan_example_install(ready_tenant(), twice, {}, false);
  CHECK(verdicts[0].outcome == example_outcome::installed);
  CHECK(verdicts[1].outcome == example_outcome::exists);
}

TEST_CASE("dependencies of an example match the preset and variant never the label") {
  auto t = ready_tenant();
  auto ws = server_from_preset("s_cal", "google_workspace");
  ws.variant = "drive";
  ws.label = "calendar";
  ws.allowed_tools = {"list_events"};
  t.servers.emplace("s_cal", ws);
  std::vector<example_skill> skills{
    skill("google-calendar-week-agenda", {{"google_workspace", "calendar", {"list_events"}}})};
  auto verdicts = plan_example_install(t, skills, {}, false);
  CHECK(verdicts[0].outcome == example_outcome::blocked);
  CHECK(verdicts[0].check.reason == "missing");

  t.servers.at("s_cal").variant = "calendar";
  verdicts = plan_example_install(t, skills, {}, false);
  CHECK(verdicts[0].outcome == example_outcome::installed);
}

TEST_CASE("the install request carries the skills and parses back strictly") {
  auto skills = two_skills();
  skills.push_back(
    skill("google-calendar-week-agenda", {{"google_workspace", "calendar", {"list_events"}}}));
  skills[0].mcp = "openbnb";
  skills[0].body_file = "openbnb-accommodation-shortlist.md";
  auto body = install_request_json(skills, true);
  auto doc = json::parse(body);
  CHECK(doc["dry_run"] == true);
  // The catalog's own fields stay home; an empty variant is left out.
  CHECK_FALSE(doc["skills"][0].contains("mcp"));
  CHECK_FALSE(doc["skills"][0]["dependencies"][0].contains("variant"));
  CHECK(doc["skills"][2]["dependencies"][0]["variant"] == "calendar");

  auto parsed = parse_install_request(body);
  REQUIRE_MESSAGE(parsed.is_ok(), parsed.error().message());
  CHECK(parsed->dry_run);
  REQUIRE(parsed->skills.size() == 3);
  CHECK(parsed->skills[0].slug == skills[0].slug);
  CHECK(parsed->skills[0].body == skills[0].body);
  CHECK(parsed->skills[0].dependencies[0].tools == shortlist_tools);
  CHECK(parsed->skills[2].dependencies[0].variant == "calendar");
}

TEST_CASE("each bad install request is refused with its own error") {
  auto valid = json::parse(install_request_json(two_skills(), false));
  struct row {
    const char* name;
    void (*change)(json&);
    errc code;
    const char* message;
  };
  std::vector<row> rows{
    {"no dry_run", [](json& r) { r.erase("dry_run"); }, errc::missing_field,
     "missing field 'dry_run'"},
    {"dry_run as text", [](json& r) { r["dry_run"] = "yes"; }, errc::wrong_type,
     "field 'dry_run': expected a boolean"},
    {"no skills", [](json& r) { r["skills"] = json::array(); }, errc::out_of_range,
     "skills: must list at least one skill"},
    {"a catalog field", [](json& r) { r["skills"][0]["mcp"] = "openbnb"; }, errc::unknown_field,
     "skills[0]: unknown field 'mcp'"},
    {"a bad slug", [](json& r) { r["skills"][1]["slug"] = "github issue"; }, errc::out_of_range,
     "skills[1].slug: must match"},
    {"a slug twice", [](json& r) { r["skills"][1]["slug"] = r["skills"][0]["slug"]; },
     errc::conflict, "skills[1].slug: the same slug as skills[0]"},
    {"a body over its bound", [](json& r) { r["skills"][0]["body"] = std::string(16385, 'x'); },
     errc::out_of_range, "skills[0]: field 'body': longer than 16384 bytes"},
    {"an unknown tool",
     [](json& r) { r["skills"][1]["dependencies"][0]["tools"][0] = "delete_repository"; },
     errc::out_of_range, "skills[1].dependencies[0].tools[0]: not a tool the preset lists"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto request = valid;
    r.change(request);
    auto parsed = parse_install_request(request.dump());
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.error().code() == r.code);
    CHECK_MESSAGE(parsed.error().message().find(r.message) != std::string::npos,
                  parsed.error().message());
  }
}

TEST_CASE("the install answer names each skill's outcome readiness reason and server") {
  auto t = ready_tenant();
  t.servers.at("s_gh").needs_auth = true;
  auto verdicts = plan(t, {}, false);
  auto body = install_response_json(verdicts);
  auto doc = json::parse(body);
  CHECK(doc
        == json{{"skills",
                 {{{"slug", "openbnb-accommodation-shortlist"},
                   {"outcome", "installed"},
                   {"readiness", "ready"},
                   {"reason", "ready"}},
                  {{"slug", "github-issue-triage"},
                   {"outcome", "installed"},
                   {"readiness", "warning"},
                   {"reason", "needs_auth"},
                   {"server_id", "s_gh"}}}}});

  example_install_request request{false, two_skills()};
  auto parsed = parse_install_response(body, request);
  REQUIRE_MESSAGE(parsed.is_ok(), parsed.error().message());
  CHECK((*parsed)[1].outcome == example_outcome::installed);
  CHECK((*parsed)[1].check.readiness == skill_readiness::warning);
  CHECK((*parsed)[1].check.server_id == "s_gh");

  // A block names its server; no server matched: no server_id.
  t.servers.at("s_bnb").trusted = false;
  CHECK(json::parse(install_response_json(plan(t)))["skills"][0]["server_id"] == "s_bnb");
  t.servers.erase("s_bnb");
  CHECK_FALSE(json::parse(install_response_json(plan(t)))["skills"][0].contains("server_id"));
}

TEST_CASE("an install answer that does not fit the request is refused") {
  example_install_request request{true, two_skills()};
  auto valid = json::parse(install_response_json(plan(ready_tenant(), {}, true)));
  struct row {
    const char* name;
    void (*change)(json&);
    const char* message;
  };
  std::vector<row> rows{
    {"one entry missing", [](json& a) { a["skills"].erase(1); },
     "skills: must hold one entry per requested skill"},
    {"another order", [](json& a) { std::swap(a["skills"][0], a["skills"][1]); },
     "skills[0].slug: must be the requested skill's, in order"},
    {"installed in a dry run", [](json& a) { a["skills"][0]["outcome"] = "installed"; },
     "skills[0].outcome: installed in a dry run"},
    {"an unknown outcome", [](json& a) { a["skills"][0]["outcome"] = "overwritten"; },
     "skills[0].outcome: must be installed, would_install, exists or blocked"},
    {"an unknown readiness", [](json& a) { a["skills"][0]["readiness"] = "fine"; },
     "skills[0].readiness: must be ready, warning or blocked"},
    {"blocked but ready", [](json& a) { a["skills"][1]["outcome"] = "blocked"; },
     "skills[1].outcome: blocked if and only if readiness is blocked"},
    {"an unknown field", [](json& a) { a["skills"][0]["label"] = "x"; },
     "skills[0]: unknown field 'label'"},
    {"an empty reason", [](json& a) { a["skills"][0]["reason"] = ""; },
     "skills[0].reason: must not be empty"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto answer = valid;
    r.change(answer);
    auto parsed = parse_install_response(answer.dump(), request);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK_MESSAGE(parsed.error().message().find(r.message) != std::string::npos,
                  parsed.error().message());
  }
  CHECK(parse_install_response(valid.dump(), request).is_ok());
}
