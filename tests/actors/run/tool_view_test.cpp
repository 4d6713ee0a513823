// The run's tool view: what the model sees directly, what moves behind the
// catalog tools, and the names, descriptions and schemas it is shown.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "tool_fixtures.hpp"

using namespace voxos;
using test::definition;
using test::find_entry;
using test::tool_world;

namespace {

std::set<std::string> names_of(const std::vector<view_entry>& entries) {
  std::set<std::string> out;
  for (const auto& e : entries)
    out.insert(std::string{e.model_name()});
  return out;
}

/// A definition whose name + description + schema is exactly `bytes` long.
tool_definition definition_of_size(const std::string& name, std::size_t bytes) {
  std::string schema = test::small_schema;
  return definition(name, std::string(bytes - name.size() - schema.size(), 'd'), schema);
}

/// The naming rule of tool_view.hpp, written out plainly: counts of every
/// name, then rounds in which every shared external name moves one level up.
/// `externals` are (server id, server slug, tool) with model-safe tool names.
struct naming_reference {
  static std::string hash6(const std::string& text) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char ch : text) {
      h ^= ch;
      h *= 1099511628211ull;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "%06x", static_cast<unsigned>(h >> 40));
    return buf;
  }

  static std::string fit(const std::string& base, const std::string& suffix) {
    auto keep = suffix.size() < 64 ? 64 - suffix.size() : 0;
    return base.substr(0, keep) + suffix;
  }

  struct external {
    std::string server_id;
    std::string slug;
    std::string tool;
  };

  static std::vector<std::string> names(const std::vector<std::string>& internal,
                                        const std::vector<external>& externals) {
    std::map<std::string, int> uses;
    for (const auto& name : internal)
      ++uses[name];
    for (const char* reserved : {"tool_search", "tool_describe", "tool_call"})
      uses[reserved] += 2;
    std::vector<std::string> out;
    std::vector<int> levels(externals.size(), 0);
    for (const auto& x : externals)
      ++uses[out.emplace_back(x.tool)];
    for (int round = 0; round < 16; ++round) {
      std::vector<std::size_t> clashing;
      for (std::size_t idx = 0; idx < out.size(); ++idx)
        if (uses[out[idx]] > 1)
          clashing.push_back(idx);
      if (clashing.empty())
        break;
      for (auto idx : clashing) {
        const auto& x = externals[idx];
        --uses[out[idx]];
        auto level = ++levels[idx];
        auto server = "__" + x.slug;
        auto ordinal = internal.size() + idx;
        out[idx] = level == 1   ? fit(x.tool, server)
                   : level == 2 ? fit(x.tool, server + "_" + hash6(x.server_id))
                   : level == 3
                     ? fit(x.tool, server + "_" + hash6(x.server_id + '\0' + x.tool))
                     : fit(x.tool, server + "_" + hash6(x.server_id) + "_" + std::to_string(ordinal)
                                     + "_" + std::to_string(level));
        ++uses[out[idx]];
      }
    }
    return out;
  }
};

} // namespace

TEST_CASE("names follow the clash rounds for random mixes of shared and suffix-like names") {
  std::mt19937_64 rng{0x7001'5eed};
  auto below = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<std::string> labels{"alpha", "beta", "gamma", "alpha"};
  const auto& internal_name = internal_tools()[0].name;
  for (int case_idx = 0; case_idx < 300; ++case_idx) {
    CAPTURE(case_idx);
    tool_world w;
    w.allow_internal(1);
    // Tool names that clash across servers, and names that equal what a
    // clash composes ("search__alpha"), so later rounds meet settled names.
    std::vector<std::string> pool{"search", "list", "tool_call", internal_name};
    for (const auto& label : labels)
      pool.push_back("search__" + label);
    pool.push_back("search__alpha_" + naming_reference::hash6("s_0"));
    std::vector<naming_reference::external> expected_input;
    auto servers = 2 + below(4);
    for (std::size_t server_idx = 0; server_idx < servers; ++server_idx) {
      auto id = "s_" + std::to_string(server_idx);
      const auto& label = labels[below(labels.size())];
      w.server(id, label);
      std::set<std::string> tools;
      for (auto count = 1 + below(5); tools.size() < count;)
        tools.insert(pool[below(pool.size())]);
      if (below(2) == 0)
        tools.insert("own_" + std::to_string(server_idx)); // a name of its own
      for (const auto& tool : tools) {
        w.allow_mcp(id, definition(tool));
        expected_input.push_back({id, label, tool});
      }
    }
    auto expected = naming_reference::names({internal_name}, expected_input);
    for (auto kind : {view_kind::text, view_kind::voice}) {
      auto view = w.view(kind);
      for (std::size_t idx = 0; idx < expected_input.size(); ++idx) {
        const auto& x = expected_input[idx];
        const auto* e = find_entry(view.direct, x.server_id, x.tool);
        if (e == nullptr)
          e = find_entry(view.catalog, x.server_id, x.tool);
        REQUIRE(e != nullptr);
        CHECK(e->model_name() == expected[idx]);
      }
      CHECK(std::is_sorted(
        view.catalog.begin(), view.catalog.end(),
        [](const view_entry& x, const view_entry& y) { return x.model_name() < y.model_name(); }));
    }
  }
}

TEST_CASE("a view keeps its text after the tenant's caches change or go") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.allow_mcp("s_gh", definition("search", "Search code.", R"({"type":"object"})", "Search"));
  w.server("s_no", "Notion");
  w.allow_mcp("s_no", definition("search", "Search pages."));
  auto view = w.view();
  // Rediscovery replaces a cache; a deleted server takes its record along.
  w.tenant.servers.at("s_gh").cached_tools = tool_cache{{definition("other")}};
  w.tenant.servers.erase("s_no");
  auto copy = view;
  view = tool_view{};
  const auto* gh = find_entry(copy.direct, "s_gh", "search");
  const auto* no = find_entry(copy.direct, "s_no", "search");
  REQUIRE(gh != nullptr);
  REQUIRE(no != nullptr);
  CHECK(gh->model_name() == "search__github");
  CHECK(gh->title() == "Search");
  CHECK(gh->description() == "Search code.");
  CHECK(gh->input_schema() == R"({"type":"object"})");
  CHECK(gh->server_slug() == "github");
  CHECK(no->model_name() == "search__notion");
  CHECK(no->description() == "Search pages.");
}

TEST_CASE("a small catalog attaches every schema directly") {
  tool_world w;
  w.allow_internal(2);
  w.server("s_gh", "GitHub");
  w.allow_mcp("s_gh", definition("create_issue", "Create an issue.", R"({"type":"object"})"));
  w.allow_mcp("s_gh", definition("list_issues", "List issues."));
  w.allow_place_call("ph_1", phone_provider::twilio);
  auto view = w.view();
  CHECK_FALSE(view.catalog_mode);
  CHECK(view.catalog.empty());
  CHECK(view.external_tools == 3);
  REQUIRE(view.direct.size() == 5);
  CHECK(view.find_direct("tool_search") == nullptr);
  // Internal tools first, from the registry.
  for (std::size_t idx = 0; idx < 2; ++idx) {
    CHECK(view.direct[idx].model_name() == internal_tools()[idx].name);
    CHECK(view.direct[idx].description() == internal_tools()[idx].description);
    CHECK(view.direct[idx].input_schema() == internal_tools()[idx].input_schema);
    CHECK(view.direct[idx].origin == tool_origin::internal);
  }
  // MCP tools from the server's cached definition.
  const auto* create = view.find_direct("create_issue");
  REQUIRE(create != nullptr);
  CHECK(create->origin == tool_origin::mcp);
  CHECK(create->server_id() == "s_gh");
  CHECK(create->description() == "Create an issue.");
  CHECK(create->input_schema() == R"({"type":"object"})");
  CHECK(view.find_direct("place_call") != nullptr);
}

TEST_CASE("ten external tools move the long tail behind the catalog tools") {
  tool_world w;
  w.allow_internal(3);
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 10);
  auto view = w.view();
  CHECK(view.catalog_mode);
  CHECK(view.external_tools == 10);
  CHECK(view.catalog.size() == 10);
  // The model sees the internal tools and the three catalog tools only.
  REQUIRE(view.direct.size() == 6);
  CHECK(view.direct[3].model_name() == "tool_search");
  CHECK(view.direct[3].role == view_role::catalog_search);
  CHECK(view.direct[4].model_name() == "tool_describe");
  CHECK(view.direct[4].role == view_role::catalog_describe);
  CHECK(view.direct[5].model_name() == "tool_call");
  CHECK(view.direct[5].role == view_role::catalog_call);
  for (const auto& e : view.catalog) {
    CHECK(e.origin == tool_origin::mcp);
    CHECK(e.server_id() == "s_gh");
  }
}

TEST_CASE("nine external tools stay direct") {
  tool_world w;
  w.allow_internal(1);
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 9);
  auto view = w.view();
  CHECK_FALSE(view.catalog_mode);
  CHECK(view.direct.size() == 10);
  CHECK(view.catalog.empty());
}

TEST_CASE("internal tools do not count toward the external catalog") {
  tool_world w;
  w.allow_internal(12);
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 2);
  auto view = w.view();
  CHECK_FALSE(view.catalog_mode);
  CHECK(view.external_tools == 2);
}

TEST_CASE("roughly ten thousand schema tokens also triggers the catalog") {
  // Two tools of 5,000 estimated tokens each (20,000 bytes / 4).
  tool_world w;
  w.server("s_big", "Big");
  w.allow_mcp("s_big", definition_of_size("big_a", 20'000));
  w.allow_mcp("s_big", definition_of_size("big_b", 20'000));
  auto view = w.view();
  CHECK(view.external_tools == 2);
  CHECK(view.external_schema_tokens == 10'000);
  CHECK(view.catalog_mode);
  CHECK(view.catalog.size() == 2);

  // One token fewer stays direct.
  tool_world below;
  below.server("s_big", "Big");
  below.allow_mcp("s_big", definition_of_size("big_a", 20'000));
  below.allow_mcp("s_big", definition_of_size("big_b", 19'996));
  auto small = below.view();
  CHECK(small.external_schema_tokens == 9'999);
  CHECK_FALSE(small.catalog_mode);
}

TEST_CASE("the token rule rounds up and its divisor and thresholds are configurable") {
  view_options opts;
  CHECK(estimate_schema_tokens("abc", "", "", opts) == 1);
  CHECK(estimate_schema_tokens("abcd", "", "", opts) == 1);
  CHECK(estimate_schema_tokens("abcd", "e", "", opts) == 2);
  opts.bytes_per_token = 0; // treated as 1
  CHECK(estimate_schema_tokens("abcd", "e", "", opts) == 5);

  tool_world w;
  w.server("s_big", "Big");
  w.allow_mcp("s_big", definition_of_size("big_a", 20'000));
  w.allow_mcp("s_big", definition_of_size("big_b", 20'000));
  view_options coarse;
  coarse.bytes_per_token = 8;
  CHECK_FALSE(w.view(view_kind::text, coarse).catalog_mode);
  view_options few;
  few.catalog_min_tools = 2;
  few.catalog_min_schema_tokens = 1'000'000;
  CHECK(w.view(view_kind::text, few).catalog_mode);
}

TEST_CASE("route-selected implementations stay direct in catalog mode") {
  tool_world w;
  w.allow_internal(2);
  w.server("s_exa", "Exa", "exa");
  w.allow_mcp("s_exa", definition("web_search_exa", "Search the web."), "web.search");
  w.allow_mcp("s_exa", definition("web_fetch_exa", "Fetch a page."));
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 10);
  auto view = w.view();
  REQUIRE(view.catalog_mode);
  const auto* search = view.find_direct("web_search_exa");
  REQUIRE(search != nullptr);
  CHECK(search->route_action() == "web.search");
  CHECK(find_entry(view.catalog, "s_exa", "web_search_exa") == nullptr);
  // The other tool of the same server is long tail.
  CHECK(find_entry(view.catalog, "s_exa", "web_fetch_exa") != nullptr);
  CHECK(view.catalog.size() == 11);
  CHECK(names_of(view.direct)
        == std::set<std::string>{internal_tools()[0].name, internal_tools()[1].name, "tool_search",
                                 "tool_describe", "tool_call", "web_search_exa"});
}

TEST_CASE("voice keeps every tool direct") {
  tool_world w;
  w.allow_internal(2);
  w.server("s_exa", "Exa", "exa");
  w.allow_mcp("s_exa", definition("web_search_exa", "Search the web."), "web.search");
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 30);
  auto view = w.view(view_kind::voice);
  CHECK(view.kind == view_kind::voice);
  CHECK_FALSE(view.catalog_mode);
  CHECK(view.catalog.empty());
  CHECK(view.direct.size() == 33);
  CHECK(view.find_direct("tool_search") == nullptr);
  CHECK(view.find_direct("web_search_exa") != nullptr);
  CHECK(view.find_direct("gh_tool_29") != nullptr);
}

TEST_CASE("a tool without a cached definition is not in the view") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 8);
  w.allow_undiscovered("s_gh", "ghost_tool");
  w.allow_mcp("s_gh", definition("empty_schema", "No schema.", ""));
  w.allow_mcp("s_gh", definition("not_an_object", "Bad schema.", "[]"));
  w.allow_undiscovered("s_gone", "tool_of_a_removed_server");
  auto view = w.view();
  CHECK(view.find_direct("ghost_tool") == nullptr);
  CHECK(view.find_direct("empty_schema") == nullptr);
  CHECK(view.find_direct("not_an_object") == nullptr);
  CHECK(view.find_direct("tool_of_a_removed_server") == nullptr);
  // They do not count toward the catalog either: 8 tools stay direct.
  CHECK(view.external_tools == 8);
  CHECK_FALSE(view.catalog_mode);
  for (const auto& e : view.direct)
    CHECK_FALSE(e.input_schema().empty());
}

TEST_CASE("colliding MCP tool names are suffixed with their server") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.server("s_no", "Notion");
  w.server("s_lin", "Linear");
  w.allow_mcp("s_gh", definition("search", "Search GitHub."));
  w.allow_mcp("s_no", definition("search", "Search Notion."));
  w.allow_mcp("s_lin", definition("create_ticket"));
  auto view = w.view();
  REQUIRE(view.direct.size() == 3);
  const auto* gh = find_entry(view.direct, "s_gh", "search");
  const auto* no = find_entry(view.direct, "s_no", "search");
  REQUIRE(gh != nullptr);
  REQUIRE(no != nullptr);
  CHECK(gh->model_name() == "search__github");
  CHECK(no->model_name() == "search__notion");
  // A name nobody else uses stays as it is.
  CHECK(view.find_direct("create_ticket") != nullptr);
}

TEST_CASE("disambiguated names do not depend on snapshot order") {
  tool_world w;
  w.server("s_a", "Work");
  w.server("s_b", "Work");
  w.allow_mcp("s_a", definition("search"));
  w.allow_mcp("s_b", definition("search"));
  auto first = w.view();
  std::reverse(w.snapshot.tools.begin(), w.snapshot.tools.end());
  auto second = w.view();
  const auto* a = find_entry(first.direct, "s_a", "search");
  const auto* b = find_entry(first.direct, "s_b", "search");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  // Same label: the server id's hash tells them apart.
  CHECK(a->model_name() != b->model_name());
  CHECK(a->model_name().rfind("search__work_", 0) == 0);
  CHECK(find_entry(second.direct, "s_a", "search")->model_name() == a->model_name());
  CHECK(find_entry(second.direct, "s_b", "search")->model_name() == b->model_name());
}

TEST_CASE("an external tool never takes an internal or catalog tool name") {
  tool_world w;
  w.allow_internal(1);
  const auto& internal_name = internal_tools()[0].name;
  w.server("s_x", "Gateway");
  w.allow_mcp("s_x", definition(internal_name, "Impostor."));
  w.allow_mcp("s_x", definition("tool_call", "Impostor."));
  w.allow_many("s_x", "x_tool", 10);
  auto view = w.view();
  REQUIRE(view.catalog_mode);
  const auto* internal = view.find_direct(internal_name);
  REQUIRE(internal != nullptr);
  CHECK(internal->origin == tool_origin::internal);
  CHECK(view.find_direct("tool_call")->role == view_role::catalog_call);
  const auto* impostor = find_entry(view.catalog, "s_x", internal_name);
  REQUIRE(impostor != nullptr);
  CHECK(impostor->model_name() == internal_name + "__gateway");
  CHECK(find_entry(view.catalog, "s_x", "tool_call")->model_name() == "tool_call__gateway");
}

TEST_CASE("model-facing names are unique and use only letters digits underscore and hyphen") {
  tool_world w;
  w.allow_internal(3);
  w.server("s_a", "Files (work)");
  w.server("s_b", "Files (home)");
  w.allow_mcp("s_a", definition("files.read/v2"));
  w.allow_mcp("s_b", definition("files.read/v2"));
  w.allow_mcp("s_a", definition(std::string(100, 'n')));
  w.allow_mcp("s_b", definition(std::string(100, 'n')));
  w.allow_mcp("s_a", definition("files_read_v2")); // the sanitised form of another name
  w.allow_many("s_a", "more", 10);
  for (auto kind : {view_kind::text, view_kind::voice}) {
    auto view = w.view(kind);
    std::set<std::string> seen;
    std::regex allowed{"^[A-Za-z0-9_-]{1,64}$"};
    for (const auto* list : {&view.direct, &view.catalog})
      for (const auto& e : *list) {
        CAPTURE(e.model_name());
        CHECK(std::regex_match(std::string{e.model_name()}, allowed));
        CHECK(seen.insert(std::string{e.model_name()}).second);
      }
    CHECK(seen.size() == view.direct.size() + view.catalog.size());
  }
}

TEST_CASE("a place-call tool gets a built-in schema without a run id") {
  tool_world w;
  w.allow_place_call("ph_1", phone_provider::telnyx);
  auto view = w.view();
  const auto* call = view.find_direct("place_call");
  REQUIRE(call != nullptr);
  CHECK(call->origin == tool_origin::integration);
  CHECK(call->server_id() == "ph_1");
  CHECK(call->description().find("Telnyx") != std::string::npos);
  auto schema = nlohmann::json::parse(call->input_schema());
  CHECK(schema["required"] == nlohmann::json::array({"contact_id", "objective"}));
  CHECK(schema["properties"]["objective"]["maxLength"].get<int>() > 0);
  CHECK(schema["additionalProperties"] == false);
  CHECK_FALSE(schema["properties"].contains("run_id"));
  CHECK(schema["properties"].size() == 2);
}

TEST_CASE("two phone integrations get distinct place-call names") {
  tool_world w;
  w.allow_place_call("ph_1", phone_provider::twilio);
  w.allow_place_call("ph_2", phone_provider::telnyx);
  auto view = w.view();
  CHECK(find_entry(view.direct, "ph_1", "place_call")->model_name() == "place_call__twilio");
  CHECK(find_entry(view.direct, "ph_2", "place_call")->model_name() == "place_call__telnyx");
}

TEST_CASE("the catalog tools carry bounded schemas") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 10);
  auto view = w.view();
  REQUIRE(view.catalog_mode);
  auto search = nlohmann::json::parse(view.find_direct("tool_search")->input_schema());
  CHECK(search["properties"]["query"]["maxLength"] == 512);
  CHECK(search["properties"]["limit"]["maximum"] == 20);
  CHECK(search["required"] == nlohmann::json::array({"query"}));
  auto describe = nlohmann::json::parse(view.find_direct("tool_describe")->input_schema());
  CHECK(describe["required"] == nlohmann::json::array({"id"}));
  auto call = nlohmann::json::parse(view.find_direct("tool_call")->input_schema());
  CHECK(call["required"] == nlohmann::json::array({"id", "arguments"}));
  CHECK(call["properties"]["arguments"]["type"] == "object");
  std::regex id_pattern{call["properties"]["id"]["pattern"].get<std::string>()};
  CHECK(std::regex_match("ct_" + std::string(22, 'A'), id_pattern));
  CHECK_FALSE(std::regex_match("ct_" + std::string(21, 'A'), id_pattern));
  // tool_search tells the model how many tools are behind it.
  CHECK(view.find_direct("tool_search")->description().find("10 further") != std::string::npos);
}

TEST_CASE("every schema in the view is a JSON object") {
  tool_world w;
  w.allow_internal(internal_tools().size());
  w.allow_place_call("ph_1", phone_provider::twilio);
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 12);
  for (auto kind : {view_kind::text, view_kind::voice}) {
    auto view = w.view(kind);
    for (const auto* list : {&view.direct, &view.catalog})
      for (const auto& e : *list) {
        CAPTURE(e.model_name());
        auto schema = nlohmann::json::parse(e.input_schema(), nullptr, false);
        CHECK(schema.is_object());
        CHECK(e.schema_tokens > 0);
      }
  }
}

TEST_CASE("a route-selected tool alone does not open the catalog") {
  // Ten external tools, all selected by routes: no long tail, nothing to search.
  tool_world w;
  w.server("s_r", "Routes");
  for (int n = 0; n < 10; ++n)
    w.allow_mcp("s_r", definition("routed_" + std::to_string(n)), "action." + std::to_string(n));
  auto view = w.view();
  CHECK_FALSE(view.catalog_mode);
  CHECK(view.direct.size() == 10);
}

TEST_CASE("the weather tool's description tells the model to call it directly with an address") {
  test::tool_world w;
  w.server("s_maps", "Maps", "google_maps_grounding_lite");
  w.allow_mcp("s_maps", test::definition("lookup_weather", "Weather for a location."));
  w.server("s_other", "Other");
  w.allow_mcp("s_other", test::definition("lookup_weather", "Weather for a location."));
  auto view = w.view();
  const auto* curated = test::find_entry(view.direct, "s_maps", "lookup_weather");
  const auto* plain = test::find_entry(view.direct, "s_other", "lookup_weather");
  REQUIRE(curated != nullptr);
  REQUIRE(plain != nullptr);
  CHECK(curated->description().find("directly with a specific address") != std::string::npos);
  CHECK(curated->description().rfind("Weather for a location.", 0) == 0);
  CHECK(plain->description() == "Weather for a location.");
}
