// The MCP preset catalog. Canonical URLs, auth modes and tool names come from
// each provider's public documentation or server source as stored in the
// reference index; a value the stored sources do not settle carries an
// "unverified:" comment with the reason for the choice.
//
// Read-only marks are curated: they let calls run concurrently in a bounded
// wave. Long multi-page jobs (crawls, extraction agents) stay serial even
// when they only read the web.
#include "config/presets.hpp"

#include <utility>

namespace voxos {

namespace {

preset_tool read_tool(std::string name, risk_level risk = risk_level::low) {
  preset_tool out;
  out.name = std::move(name);
  out.risk = risk;
  out.read_only = true;
  return out;
}

preset_tool action_tool(std::string name, risk_level risk = risk_level::medium) {
  preset_tool out;
  out.name = std::move(name);
  out.risk = risk;
  out.read_only = false;
  return out;
}

/// Allowlisted and granted when the server is created.
preset_tool starter(preset_tool tool) {
  tool.starter_grant = true;
  return tool;
}

/// Present in the catalog but disabled until the owner enables it.
preset_tool disabled(preset_tool tool) {
  tool.enabled_by_default = false;
  return tool;
}

preset make_preset(std::string id, std::string label, std::string url, auth_mode auth) {
  preset out;
  out.id = std::move(id);
  out.label = std::move(label);
  out.transport = transport_kind::streamable_http;
  out.url = std::move(url);
  out.auth = auth;
  return out;
}

tool_definition definition(std::string name, std::string description, std::string input_schema) {
  tool_definition out;
  out.name = std::move(name);
  out.description = std::move(description);
  out.input_schema = std::move(input_schema);
  out.read_only_hint = true;
  out.destructive_hint = false;
  return out;
}

// -- Exa ----------------------------------------------------------------------------

/// Exa's hosted MCP endpoint (exa-labs/exa-mcp-server README and server.json
/// "remotes"). Without a `tools` parameter it registers exactly the tools its
/// registry enables by default: web_search_exa and web_fetch_exa
/// (src/toolRegistry.ts).
constexpr const char* exa_url = "https://mcp.exa.ai/mcp";

/// The public definitions of the two default Exa tools, translated from the
/// zod shapes in exa-labs/exa-mcp-server src/tools/webSearch.ts and
/// src/tools/webFetch.ts (commit 09ff08fde97d) to the JSON Schema the MCP
/// SDK advertises for them (zod-to-json-schema, draft-07). Lenient
/// preprocessors advertise their inner type; `.catch(undefined)` fields are
/// optional. The one example person name in the upstream query description
/// is replaced by a placeholder; nothing else differs.
std::vector<tool_definition> exa_curated_tools() {
  std::vector<tool_definition> out;
  out.push_back(definition(
    "web_search_exa",
    "Search the web for any topic and get clean, ready-to-use content.\n"
    "\n"
    "      Best for: Finding current information, news, facts, people, companies, or answering "
    "questions about any topic.\n"
    "      Returns: Clean text content from top search results.\n"
    "\n"
    "      Query tips:\n"
    "      describe the ideal page, not keywords. \"blog post comparing React and Vue "
    "performance\" not \"React vs Vue\".\n"
    "      Use category:people / category:company to search through Linkedin profiles / "
    "companies respectively.\n"
    "      If highlights are insufficient, follow up with web_fetch_exa on the best URLs.",
    R"json({
  "type": "object",
  "properties": {
    "query": {
      "type": "string",
      "minLength": 1,
      "description": "Natural language search query. Should be a semantically rich description of the ideal page, not just keywords. Optionally include category:<type> (company, people) to focus results — e.g. 'category:people <name> software engineer'."
    },
    "numResults": {
      "type": "number",
      "description": "Number of search results to return (default: 10)."
    }
  },
  "required": ["query"],
  "additionalProperties": false,
  "$schema": "http://json-schema.org/draft-07/schema#"
})json"));
  out.push_back(definition(
    "web_fetch_exa",
    "Read a webpage's full content as clean markdown. Use after web_search_exa when highlights "
    "are insufficient or to read any URL.\n"
    "\n"
    "Best for: Extracting full content from known URLs. Batch multiple URLs in one call.\n"
    "Returns: Clean text content and metadata from the page(s).",
    R"json({
  "type": "object",
  "properties": {
    "urls": {
      "type": "array",
      "items": {"type": "string"},
      "description": "URLs to read. Batch multiple URLs in one call."
    },
    "maxCharacters": {
      "type": "number",
      "minimum": 1,
      "description": "Maximum characters to extract per page (default: 3000)"
    }
  },
  "required": ["urls"],
  "additionalProperties": false,
  "$schema": "http://json-schema.org/draft-07/schema#"
})json"));
  return out;
}

preset exa_keyless() {
  auto out = make_preset("exa", "Exa web search", exa_url, auth_mode::none);
  out.platform_default = true;
  out.tools = {starter(read_tool("web_search_exa")), starter(read_tool("web_fetch_exa"))};
  out.curated_version = "exa-mcp-server@09ff08fde97d";
  out.curated_tools = exa_curated_tools();
  return out;
}

preset exa_api_key() {
  // Same hosted endpoint; the key travels in a header instead of the URL so
  // it never lands in logs.
  // unverified: Exa documents the ?exaApiKey= query parameter; x-api-key is
  // the header existing clients of the hosted endpoint send.
  auto out =
    make_preset("exa_api_key", "Exa web search (API key)", exa_url, auth_mode::api_key_header);
  out.api_key_header = "x-api-key";
  out.tools = {starter(read_tool("web_search_exa")), starter(read_tool("web_fetch_exa")),
               read_tool("web_search_advanced_exa")};
  return out;
}

// -- Web search and scraping providers --------------------------------------------------

preset tavily() {
  // tavily-ai/tavily-mcp README, "Remote MCP Server": the key may be passed
  // as "Authorization: Bearer <key>" instead of in the URL.
  auto out =
    make_preset("tavily", "Tavily", "https://mcp.tavily.com/mcp/", auth_mode::static_bearer);
  out.tools = {read_tool("tavily-search"), read_tool("tavily-extract"), read_tool("tavily-map"),
               action_tool("tavily-crawl", risk_level::low)};
  return out;
}

preset firecrawl() {
  // firecrawl/firecrawl-mcp-server README: hosted endpoint with
  // "Authorization: Bearer <key>".
  auto out = make_preset("firecrawl", "Firecrawl", "https://mcp.firecrawl.dev/v2/mcp",
                         auth_mode::static_bearer);
  out.tools = {read_tool("firecrawl_search"),
               read_tool("firecrawl_scrape"),
               read_tool("firecrawl_map"),
               read_tool("firecrawl_check_crawl_status"),
               action_tool("firecrawl_crawl", risk_level::low),
               action_tool("firecrawl_extract", risk_level::low)};
  return out;
}

preset browserless() {
  // Browserless hosted MCP (docs.browserless.io "browserless-mcp-server";
  // bearer token). Search is the only member of the web.search route; the
  // browser capabilities stay separate tools. browserless_agent drives a
  // stateful browser with stored credentials: high risk, disabled.
  auto out = make_preset("browserless", "Browserless", "https://mcp.browserless.io/mcp",
                         auth_mode::static_bearer);
  out.tools = {read_tool("browserless_search"),
               action_tool("browserless_smartscraper"),
               action_tool("browserless_map"),
               action_tool("browserless_crawl"),
               action_tool("browserless_performance"),
               action_tool("browserless_export"),
               disabled(action_tool("browserless_agent", risk_level::high))};
  return out;
}

preset browser_use() {
  // Browser Use Cloud MCP, session-based v3 endpoint (docs.browser-use.com
  // "MCP Server"), key in the x-browser-use-api-key header. Tools that drive
  // the cloud browser are high risk and disabled.
  auto out = make_preset("browser_use", "Browser Use Cloud", "https://api.browser-use.com/v3/mcp",
                         auth_mode::api_key_header);
  out.api_key_header = "x-browser-use-api-key";
  out.tools = {disabled(action_tool("run_session", risk_level::high)),
               disabled(action_tool("send_task", risk_level::high)), read_tool("get_session"),
               action_tool("stop_session", risk_level::low)};
  return out;
}

// -- Google ---------------------------------------------------------------------------

preset google_workspace() {
  // Google Workspace MCP (Developer Preview): one Google-hosted endpoint per
  // product, each authorized and tested separately with the same OAuth web
  // client. Endpoints as Google's "Configure the Google Workspace MCP
  // servers" guide lists them (People is served from people.googleapis.com).
  // unverified: the Drive and Calendar tool names follow a directory summary
  // of Google's tool list; Gmail, Chat and People tools come from discovery.
  auto out =
    make_preset("google_workspace", "Google Workspace", "", auth_mode::oauth_authorization_code);
  out.variants = {
    {"gmail", "Gmail", "https://gmailmcp.googleapis.com/mcp/v1"},
    {"drive", "Google Drive", "https://drivemcp.googleapis.com/mcp/v1"},
    {"calendar", "Google Calendar", "https://calendarmcp.googleapis.com/mcp/v1"},
    {"chat", "Google Chat", "https://chatmcp.googleapis.com/mcp/v1"},
    {"people", "People", "https://people.googleapis.com/mcp/v1"},
  };
  out.tools = {
    read_tool("search_files"),      read_tool("read_file_content"), read_tool("get_file_metadata"),
    read_tool("list_recent_files"), action_tool("create_file"),     read_tool("list_calendars"),
    read_tool("list_events"),       read_tool("search_events"),     read_tool("get_event"),
    action_tool("create_event"),    action_tool("update_event"),    action_tool("delete_event"),
    action_tool("respond_to_event")};
  return out;
}

preset google_maps_grounding_lite() {
  // Google Maps Grounding Lite MCP; API key in X-Goog-Api-Key. The runtime
  // tightens lookup_weather's location contract (camelCase location.address
  // | placeId | latLng) after the model produces schema-valid arguments.
  auto out = make_preset("google_maps_grounding_lite", "Google Maps Grounding Lite",
                         "https://mapstools.googleapis.com/mcp", auth_mode::api_key_header);
  out.api_key_header = "X-Goog-Api-Key";
  out.tools = {read_tool("search_places"), read_tool("lookup_weather"),
               read_tool("compute_routes")};
  out.tools[1].guidance =
    "Prefer calling lookup_weather directly with a specific address in location.address; "
    "it avoids an unnecessary place-name resolution. Give exactly one of location.address, "
    "location.placeId or location.latLng, and complete dates.";
  return out;
}

// -- Travel ---------------------------------------------------------------------------------

preset openbnb() {
  // OpenBnB's hosted server: OAuth metadata plus dynamic client
  // registration, so the user only signs in.
  // unverified: the URL is the one clients of the hosted service use; no
  // OpenBnB document in the stored sources names it.
  auto out = make_preset("openbnb", "OpenBnB (Airbnb search)", "https://mcp.openbnb.ai/mcp",
                         auth_mode::oauth_authorization_code);
  out.oauth_dynamic_registration = true;
  // The hosted server names the listing tool airbnb_listing (the
  // open-source package calls it airbnb_listing_details), and serves Google
  // Maps tools through the same sign-in: clients of the hosted service call
  // maps_search_places and maps_distance_matrix on it.
  // unverified: maps_place_details is named by the product's accommodation-
  // shortlist example; no stored source shows a call of it.
  out.tools = {read_tool("airbnb_search"), read_tool("airbnb_listing"),
               read_tool("maps_search_places"), read_tool("maps_place_details"),
               read_tool("maps_distance_matrix")};
  return out;
}

/// Flight data tools as the Flightradar24 API MCP server registers them.
std::vector<preset_tool> flightradar24_tools() {
  // unverified: assumes the sibling container serves the Flightradar24 API
  // MCP tool set (fr24api-mcp).
  return {read_tool("get_live_flights_positions_light"),
          read_tool("get_live_flights_positions_full"),
          read_tool("get_live_flights_count"),
          read_tool("get_historic_flights_positions_light"),
          read_tool("get_historic_flights_positions_full"),
          read_tool("get_flight_summary_light"),
          read_tool("get_flight_summary_full"),
          read_tool("get_flight_tracks"),
          read_tool("get_airline_info"),
          read_tool("get_airport_info_light"),
          read_tool("get_airport_info_full")};
}

preset flightradar24_local() {
  // Offered only when this exact URL is registered for the "mcp" purpose;
  // no custom server entry and no Voxos bearer token.
  auto out = make_preset("flightradar24_local", "Flightradar24 (Local Compose)",
                         "http://flightradar24-mcp:8000/mcp", auth_mode::none);
  out.local_compose = true;
  out.tools = flightradar24_tools();
  return out;
}

preset flightradar24_deployed() {
  // Any complete public HTTPS URL of a separately deployed instance.
  // unverified: a public deployment is expected to require an endpoint
  // bearer token (only the Local Compose choice is documented as tokenless).
  auto out = make_preset("flightradar24_deployed", "Flightradar24 (deployed HTTPS endpoint)", "",
                         auth_mode::static_bearer);
  out.url_rule = "https_any";
  out.tools = flightradar24_tools();
  return out;
}

// -- Finance --------------------------------------------------------------------------------

preset monzo_local() {
  // Local Compose only, reached with Voxos's endpoint bearer. No starter
  // grants; balance and transaction reads are granted explicitly. The
  // container runs with financial writes off; the catalog keeps every write
  // tool disabled as well. Tool names as the monzo_mcp container test suite
  // lists its read and write sets.
  auto out = make_preset("monzo_local", "Monzo (Local Compose)", "http://monzo-mcp:8000/mcp",
                         auth_mode::brokered_oauth);
  out.local_compose = true;
  out.tools = {read_tool("monzo_connection_status"),
               read_tool("monzo_list_accounts", risk_level::medium),
               read_tool("monzo_get_balance", risk_level::medium),
               read_tool("monzo_list_pots", risk_level::medium),
               read_tool("monzo_list_transactions", risk_level::medium),
               read_tool("monzo_get_transaction", risk_level::medium),
               disabled(action_tool("monzo_annotate_transaction", risk_level::high)),
               disabled(action_tool("monzo_deposit_into_pot", risk_level::high)),
               disabled(action_tool("monzo_withdraw_from_pot", risk_level::high))};
  return out;
}

// -- Developer ------------------------------------------------------------------------------

preset github() {
  // GitHub's hosted MCP server (github/github-mcp-server). Reads are curated
  // read-only; writes stay medium risk and need explicit grants.
  auto out = make_preset("github", "GitHub", "https://api.githubcopilot.com/mcp/",
                         auth_mode::oauth_authorization_code);
  out.tools = {read_tool("get_me"),
               read_tool("search_repositories"),
               read_tool("search_code"),
               read_tool("get_file_contents"),
               read_tool("list_issues"),
               read_tool("list_pull_requests"),
               read_tool("get_commit"),
               action_tool("create_issue"),
               action_tool("add_issue_comment"),
               action_tool("create_branch"),
               action_tool("create_or_update_file"),
               action_tool("create_pull_request")};
  return out;
}

std::vector<preset> build_catalog() {
  std::vector<preset> out;
  out.push_back(exa_keyless());
  out.push_back(exa_api_key());
  out.push_back(tavily());
  out.push_back(firecrawl());
  out.push_back(browserless());
  out.push_back(browser_use());
  out.push_back(google_workspace());
  out.push_back(openbnb());
  out.push_back(flightradar24_local());
  out.push_back(flightradar24_deployed());
  out.push_back(monzo_local());
  out.push_back(google_maps_grounding_lite());
  out.push_back(github());
  return out;
}

} // namespace

const std::vector<preset>& preset_catalog() {
  static const std::vector<preset> catalog = build_catalog();
  return catalog;
}

const preset* find_preset(std::string_view id) {
  for (const auto& p : preset_catalog())
    if (p.id == id)
      return &p;
  return nullptr;
}

const preset_tool* find_preset_tool(const preset& p, std::string_view tool) {
  for (const auto& t : p.tools)
    if (t.name == tool)
      return &t;
  return nullptr;
}

} // namespace voxos
