// The MCP preset catalog: common remote MCP servers with their canonical
// identity (preset id, transport, URL or URL rule, auth mode), variants,
// curated read-only marks and starter grants. CAF-free, immutable.
//
// Only the exact canonical identity of a preset qualifies for what the
// preset grants (platform-default access for keyless Exa; the qualifying Exa
// server on phone and messaging channels): a look-alike server that merely
// advertises a tool of the same name does not.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tool_types.hpp"

namespace voxos {

struct preset_tool {
  std::string name;
  risk_level risk = risk_level::medium;
  bool read_only = false;         ///< curated: may run concurrently in a wave
  bool starter_grant = false;     ///< allowlisted and granted when the server is created
  bool enabled_by_default = true; ///< false: disabled in the preset (e.g. browserless_agent)
  /// Curated guidance for the model, appended to the server's own
  /// description in the run's view (e.g. call lookup_weather with an address).
  std::string guidance;
};

struct preset_variant {
  std::string id;    ///< e.g. "gmail"
  std::string label; ///< e.g. "Gmail"
  std::string url;   ///< canonical URL of this variant
};

struct preset {
  std::string id; ///< stable id stored in a server's safe metadata (preset_id)
  std::string label;
  transport_kind transport = transport_kind::streamable_http;
  /// The canonical URL; empty when `url_rule` applies (deployed endpoints)
  /// or when each variant names its own URL (Google Workspace).
  std::string url;
  /// "https_any": any public HTTPS URL the user supplies.
  std::string url_rule;
  auth_mode auth = auth_mode::none;
  /// With auth_mode::api_key_header: the header that carries the key
  /// (e.g. "x-api-key"); empty for every other mode.
  std::string api_key_header;
  /// With auth_mode::oauth_authorization_code: the provider publishes OAuth
  /// metadata and dynamic client registration, so the catalog asks the user
  /// for no client ID or secret (OpenBnB).
  bool oauth_dynamic_registration = false;
  std::vector<preset_variant> variants;
  std::vector<preset_tool> tools;
  /// A Local Compose choice: offered only when `url` is registered for the
  /// "mcp" purpose in the node configuration.
  bool local_compose = false;
  /// The platform-default web search server (keyless Exa): new tenants get
  /// it enabled, trusted and connected, with default grants for its tools.
  bool platform_default = false;
  /// Curated tool schemas shipped with the preset, so start-up needs no
  /// discovery request; versioned.
  std::string curated_version;
  std::vector<tool_definition> curated_tools;
};

/// Every preset.
const std::vector<preset>& preset_catalog();

/// One preset by id, or nullptr.
const preset* find_preset(std::string_view id);

/// The curated tool of a preset, or nullptr.
const preset_tool* find_preset_tool(const preset& p, std::string_view tool);

/// Preset ids the policy refers to.
namespace preset_ids {
inline constexpr std::string_view exa = "exa"; ///< keyless, platform default
inline constexpr std::string_view exa_api_key = "exa_api_key";
inline constexpr std::string_view tavily = "tavily";
inline constexpr std::string_view firecrawl = "firecrawl";
inline constexpr std::string_view browserless = "browserless";
inline constexpr std::string_view browser_use = "browser_use";
} // namespace preset_ids

} // namespace voxos
