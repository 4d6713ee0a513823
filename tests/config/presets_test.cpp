// Tests for config/presets.cpp and config/tool_types.cpp: canonical
// identities, Local Compose URLs, curated marks and grants, the keyless Exa
// schemas, and the snake_case names of the shared enums.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/presets.hpp"
#include "config/tool_types.hpp"

namespace {

using nlohmann::json;
using voxos::auth_mode;
using voxos::find_preset;
using voxos::find_preset_tool;
using voxos::preset;
using voxos::preset_catalog;
using voxos::risk_level;
using voxos::transport_kind;

const preset& preset_named(std::string_view id) {
  const auto* p = find_preset(id);
  REQUIRE_MESSAGE(p != nullptr, id);
  return *p;
}

const voxos::preset_tool& tool_of(const preset& p, std::string_view name) {
  const auto* t = find_preset_tool(p, name);
  REQUIRE_MESSAGE(t != nullptr, p.id << "/" << name);
  return *t;
}

bool starts_with(const std::string& text, std::string_view prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

TEST_CASE("the catalog holds every preset the product names") {
  for (auto id : {"exa", "exa_api_key", "tavily", "firecrawl", "browserless", "browser_use",
                  "google_workspace", "openbnb", "flightradar24_local", "flightradar24_deployed",
                  "monzo_local", "google_maps_grounding_lite", "github"})
    CHECK_MESSAGE(find_preset(id) != nullptr, id);
  for (auto id : {voxos::preset_ids::exa, voxos::preset_ids::exa_api_key, voxos::preset_ids::tavily,
                  voxos::preset_ids::firecrawl, voxos::preset_ids::browserless,
                  voxos::preset_ids::browser_use})
    CHECK(find_preset(id) != nullptr);
}

TEST_CASE("preset ids are unique and every preset URL is https except local compose ones") {
  const std::regex snake_case{"^[a-z][a-z0-9]*(_[a-z0-9]+)*$"};
  std::set<std::string> ids;
  for (const auto& p : preset_catalog()) {
    INFO(p.id);
    CHECK(ids.insert(p.id).second);
    CHECK(std::regex_match(p.id, snake_case));
    CHECK_FALSE(p.label.empty());
    if (p.local_compose) {
      CHECK(starts_with(p.url, "http://"));
      CHECK(p.url_rule.empty());
    } else if (!p.url.empty()) {
      CHECK(starts_with(p.url, "https://"));
    } else if (!p.url_rule.empty()) {
      CHECK(p.url_rule == "https_any");
    } else {
      // No preset-wide URL: every variant names its own.
      REQUIRE_FALSE(p.variants.empty());
    }
    for (const auto& v : p.variants) {
      INFO(v.id);
      CHECK(starts_with(v.url, "https://"));
      CHECK(std::regex_match(v.id, snake_case));
    }
    CHECK(p.transport == transport_kind::streamable_http);
  }
}

TEST_CASE("local compose presets name their exact registered URL") {
  std::set<std::string> local;
  for (const auto& p : preset_catalog())
    if (p.local_compose)
      local.insert(p.id);
  CHECK(local == std::set<std::string>{"flightradar24_local", "monzo_local"});

  const auto& flights = preset_named("flightradar24_local");
  CHECK(flights.url == "http://flightradar24-mcp:8000/mcp");
  CHECK(flights.auth == auth_mode::none);

  const auto& monzo = preset_named("monzo_local");
  CHECK(monzo.url == "http://monzo-mcp:8000/mcp");
  CHECK(monzo.auth == auth_mode::brokered_oauth); // endpoint bearer + the broker

  const auto& deployed = preset_named("flightradar24_deployed");
  CHECK_FALSE(deployed.local_compose);
  CHECK(deployed.url.empty());
  CHECK(deployed.url_rule == "https_any");
}

TEST_CASE("only the keyless exa preset is a platform default") {
  for (const auto& p : preset_catalog()) {
    INFO(p.id);
    CHECK(p.platform_default == (p.id == "exa"));
  }
  const auto& exa = preset_named("exa");
  CHECK(exa.url == "https://mcp.exa.ai/mcp");
  CHECK(exa.transport == transport_kind::streamable_http);
  CHECK(exa.auth == auth_mode::none);
  CHECK(exa.api_key_header.empty());
  for (auto name : {"web_search_exa", "web_fetch_exa"}) {
    const auto& t = tool_of(exa, name);
    CHECK(t.risk == risk_level::low);
    CHECK(t.read_only);
    CHECK(t.starter_grant);
    CHECK(t.enabled_by_default);
  }
  CHECK(exa.tools.size() == 2);
}

TEST_CASE("the exa api key preset shares the endpoint but not the keyless identity") {
  const auto& exa = preset_named("exa");
  const auto& keyed = preset_named("exa_api_key");
  CHECK(starts_with(keyed.url, "https://mcp.exa.ai/"));
  CHECK(keyed.auth == auth_mode::api_key_header);
  CHECK_FALSE(keyed.api_key_header.empty());
  CHECK_FALSE(keyed.platform_default);
  CHECK((keyed.url != exa.url || keyed.auth != exa.auth || keyed.transport != exa.transport));
}

TEST_CASE("the exa preset carries curated schemas for its two tools") {
  const auto& exa = preset_named("exa");
  CHECK_FALSE(exa.curated_version.empty());
  REQUIRE(exa.curated_tools.size() == 2);
  std::set<std::string> names;
  for (const auto& def : exa.curated_tools) {
    INFO(def.name);
    names.insert(def.name);
    CHECK(find_preset_tool(exa, def.name) != nullptr);
    CHECK_FALSE(def.description.empty());
    CHECK(def.read_only_hint);
    CHECK_FALSE(def.destructive_hint);
    json schema;
    REQUIRE_NOTHROW(schema = json::parse(def.input_schema));
    CHECK(schema["type"] == "object");
    CHECK(schema["additionalProperties"] == false);
    REQUIRE(schema["required"].is_array());
    for (const auto& required : schema["required"])
      CHECK(schema["properties"].contains(required.get<std::string>()));
  }
  CHECK(names == std::set<std::string>{"web_search_exa", "web_fetch_exa"});

  auto search = json::parse(exa.curated_tools[0].input_schema);
  CHECK(search["required"] == json::array({"query"}));
  CHECK(search["properties"]["query"]["type"] == "string");
  CHECK(search["properties"]["numResults"]["type"] == "number");

  auto fetch = json::parse(exa.curated_tools[1].input_schema);
  CHECK(fetch["required"] == json::array({"urls"}));
  CHECK(fetch["properties"]["urls"]["type"] == "array");
  CHECK(fetch["properties"]["urls"]["items"]["type"] == "string");
  CHECK(fetch["properties"]["maxCharacters"]["minimum"] == 1);
}

TEST_CASE("only presets with curated schemas carry a curated version") {
  for (const auto& p : preset_catalog()) {
    INFO(p.id);
    CHECK(p.curated_version.empty() == p.curated_tools.empty());
  }
}

TEST_CASE("monzo has no starter grants and no enabled write tool") {
  const auto& monzo = preset_named("monzo_local");
  bool any_read = false;
  bool any_write = false;
  for (const auto& t : monzo.tools) {
    INFO(t.name);
    CHECK_FALSE(t.starter_grant);
    if (t.read_only) {
      any_read = true;
    } else {
      any_write = true;
      CHECK_FALSE(t.enabled_by_default);
      CHECK(t.risk == risk_level::high);
    }
  }
  CHECK(any_read);
  CHECK(any_write);
  CHECK(tool_of(monzo, "monzo_get_balance").read_only);
  CHECK_FALSE(tool_of(monzo, "monzo_deposit_into_pot").enabled_by_default);
}

TEST_CASE("browser automation agents are high risk and disabled without a starter grant") {
  const auto& browserless = preset_named("browserless");
  CHECK(browserless.auth == auth_mode::static_bearer);
  const auto& agent = tool_of(browserless, "browserless_agent");
  CHECK(agent.risk == risk_level::high);
  CHECK_FALSE(agent.enabled_by_default);
  CHECK_FALSE(agent.starter_grant);
  CHECK_FALSE(agent.read_only);

  const auto& browser_use = preset_named("browser_use");
  CHECK(browser_use.auth == auth_mode::api_key_header);
  const auto& session = tool_of(browser_use, "run_session");
  CHECK(session.risk == risk_level::high);
  CHECK_FALSE(session.enabled_by_default);
  CHECK_FALSE(session.starter_grant);
}

TEST_CASE("browserless keeps its browser capabilities as separate tools") {
  const auto& browserless = preset_named("browserless");
  CHECK(tool_of(browserless, "browserless_search").read_only);
  for (auto name : {"browserless_smartscraper", "browserless_map", "browserless_performance",
                    "browserless_export", "browserless_agent"})
    CHECK(find_preset_tool(browserless, name) != nullptr);
}

TEST_CASE("every web search route implementation is curated read-only") {
  CHECK(tool_of(preset_named("exa"), "web_search_exa").read_only);
  CHECK(tool_of(preset_named("tavily"), "tavily-search").read_only);
  CHECK(tool_of(preset_named("firecrawl"), "firecrawl_search").read_only);
  CHECK(tool_of(preset_named("browserless"), "browserless_search").read_only);
}

TEST_CASE("only the keyless exa tools are starter grants") {
  // exa_api_key allowlists the same two tools when created; every other
  // preset waits for explicit allowlists and grants.
  for (const auto& p : preset_catalog())
    for (const auto& t : p.tools) {
      INFO(p.id << "/" << t.name);
      if (t.starter_grant) {
        CHECK((p.id == "exa" || p.id == "exa_api_key"));
        CHECK(t.risk == risk_level::low);
        CHECK(t.read_only);
      }
    }
}

TEST_CASE("high risk preset tools are disabled by default") {
  for (const auto& p : preset_catalog())
    for (const auto& t : p.tools) {
      INFO(p.id << "/" << t.name);
      if (t.risk == risk_level::high)
        CHECK_FALSE(t.enabled_by_default);
    }
}

TEST_CASE("google workspace has one https variant per product") {
  const auto& workspace = preset_named("google_workspace");
  CHECK(workspace.auth == auth_mode::oauth_authorization_code);
  std::vector<std::string> ids;
  for (const auto& v : workspace.variants)
    ids.push_back(v.id);
  CHECK(ids == std::vector<std::string>{"gmail", "drive", "calendar", "chat", "people"});
  std::set<std::string> urls;
  for (const auto& v : workspace.variants) {
    INFO(v.id);
    CHECK(urls.insert(v.url).second);
    CHECK(starts_with(v.url, "https://"));
    CHECK(v.url.find(".googleapis.com/mcp/v1") != std::string::npos);
  }
}

TEST_CASE("api key header presets name their header and other presets do not") {
  for (const auto& p : preset_catalog()) {
    INFO(p.id);
    CHECK((p.auth == auth_mode::api_key_header) == !p.api_key_header.empty());
    if (p.oauth_dynamic_registration)
      CHECK(p.auth == auth_mode::oauth_authorization_code);
  }
}

TEST_CASE("openbnb signs in through dynamic client registration") {
  const auto& openbnb = preset_named("openbnb");
  CHECK(openbnb.auth == auth_mode::oauth_authorization_code);
  CHECK(openbnb.oauth_dynamic_registration);
  CHECK(tool_of(openbnb, "airbnb_search").read_only);
  CHECK(tool_of(openbnb, "airbnb_listing").read_only);
}

TEST_CASE("google maps grounding lite tools are curated read-only") {
  const auto& maps = preset_named("google_maps_grounding_lite");
  CHECK(starts_with(maps.url, "https://"));
  for (auto name : {"search_places", "lookup_weather"}) {
    const auto& t = tool_of(maps, name);
    CHECK(t.read_only);
    CHECK_FALSE(t.starter_grant);
  }
}

TEST_CASE("github uses oauth on its hosted endpoint") {
  const auto& github = preset_named("github");
  CHECK(github.auth == auth_mode::oauth_authorization_code);
  CHECK(starts_with(github.url, "https://"));
}

TEST_CASE("preset tool names are unique within a preset") {
  for (const auto& p : preset_catalog()) {
    std::set<std::string> seen;
    for (const auto& t : p.tools)
      CHECK_MESSAGE(seen.insert(t.name).second, p.id << "/" << t.name);
  }
}

TEST_CASE("find_preset and find_preset_tool answer exact names only") {
  CHECK(find_preset("exa") != nullptr);
  CHECK(find_preset("EXA") == nullptr);
  CHECK(find_preset("exa ") == nullptr);
  CHECK(find_preset("") == nullptr);
  const auto& exa = preset_named("exa");
  CHECK(find_preset_tool(exa, "web_search_exa") != nullptr);
  CHECK(find_preset_tool(exa, "web_search") == nullptr);
  CHECK(find_preset_tool(exa, "tavily-search") == nullptr);
}

TEST_CASE("to_string gives snake_case names for the shared enums") {
  using voxos::to_string;
  CHECK(to_string(risk_level::low) == "low");
  CHECK(to_string(risk_level::medium) == "medium");
  CHECK(to_string(risk_level::high) == "high");
  CHECK(to_string(transport_kind::streamable_http) == "streamable_http");
  CHECK(to_string(transport_kind::sse) == "sse");
  CHECK(to_string(auth_mode::none) == "none");
  CHECK(to_string(auth_mode::static_bearer) == "static_bearer");
  CHECK(to_string(auth_mode::api_key_header) == "api_key_header");
  CHECK(to_string(auth_mode::oauth_authorization_code) == "oauth_authorization_code");
  CHECK(to_string(auth_mode::oauth_client_credentials) == "oauth_client_credentials");
  CHECK(to_string(auth_mode::private_key_jwt) == "private_key_jwt");
}
