// Small tenant states and hand-built snapshots for the tool view and catalog
// tests: the snapshot lists exactly the tools a test needs, so each test
// states its own catalog.
#pragma once

#include <string>
#include <utility>

#include <doctest/doctest.h>
#include <vector>

#include "actors/run/tool_catalog.hpp"
#include "actors/run/tool_view.hpp"
#include "config/internal_tools.hpp"

namespace voxos::test {

inline constexpr const char* small_schema =
  R"({"type":"object","properties":{"q":{"type":"string"}},"required":["q"]})";

inline tool_definition definition(std::string name, std::string description = "A tool.",
                                  std::string schema = small_schema, std::string title = {}) {
  tool_definition def;
  def.name = std::move(name);
  def.title = std::move(title);
  def.description = std::move(description);
  def.input_schema = std::move(schema);
  return def;
}

/// A tenant and a snapshot built side by side.
struct tool_world {
  tenant_state tenant;
  effective_policy snapshot;

  tool_world() {
    tenant.tenant_id = "t_a";
    tenant.agents.push_back({"a_1", "Default", true});
    snapshot.tenant_id = "t_a";
    snapshot.agent_id = "a_1";
    snapshot.run_id = "r_1";
  }

  /// An enabled, trusted, connected server (no tools yet).
  mcp_server_record& server(const std::string& server_id, std::string label,
                            std::string preset_id = {}) {
    auto& s = tenant.servers[server_id];
    s.server_id = server_id;
    s.tenant_id = "t_a";
    s.label = std::move(label);
    s.preset_id = std::move(preset_id);
    s.url = "https://" + server_id + ".example.com/mcp";
    s.enabled = s.trusted = s.connected = true;
    return s;
  }

  /// A cached definition on `server_id` (which must exist) allowed in the snapshot.
  void allow_mcp(const std::string& server_id, tool_definition def, std::string route = {},
                 bool read_only = false) {
    auto& s = tenant.servers.at(server_id);
    s.allowed_tools.push_back(def.name);
    snapshot.tools.emplace_back(tool_origin::mcp, def.name, server_id, risk_level::medium,
                                read_only, false, route);
    auto cached = s.cached_tools.definitions();
    cached.push_back(std::move(def));
    s.cached_tools = tool_cache{std::move(cached)};
  }

  /// An MCP tool the snapshot allows though the server's cache lacks it.
  void allow_undiscovered(const std::string& server_id, std::string name) {
    snapshot.tools.emplace_back(tool_origin::mcp, name, server_id, risk_level::medium, false,
                                false);
  }

  /// `count` tools "<prefix>_<n>" on one server.
  void allow_many(const std::string& server_id, const std::string& prefix, int count) {
    for (int n = 0; n < count; ++n)
      allow_mcp(server_id, definition(prefix + "_" + std::to_string(n)));
  }

  /// The first `count` internal tools of the registry, allowed.
  void allow_internal(std::size_t count) {
    for (std::size_t idx = 0; idx < count && idx < internal_tools().size(); ++idx)
      snapshot.tools.insert(snapshot.tools.begin() + static_cast<std::ptrdiff_t>(idx),
                            snapshot_tool{tool_origin::internal, internal_tools()[idx].name, "",
                                          risk_level::medium, false, false});
  }

  /// A connected call-capable phone integration and its allowed place-call tool.
  void allow_place_call(const std::string& integration_id, phone_provider provider) {
    phone_integration phone;
    phone.integration_id = integration_id;
    phone.provider = provider;
    phone.call_capable = phone.connected = true;
    phone.place_call_tool = "place_call";
    tenant.phones.push_back(phone);
    snapshot.tools.emplace_back(tool_origin::integration, "place_call", integration_id,
                                risk_level::medium, false, false);
  }

  /// `names`: the tenant's tool name order (tool_names.hpp), or none.
  tool_view view(view_kind kind = view_kind::text, const view_options& opts = {},
                 const tool_name_order* names = nullptr) const {
    return compose_view(snapshot, tenant, opts, kind, names);
  }
};

inline const view_entry* find_entry(const std::vector<view_entry>& entries,
                                    std::string_view server_id, std::string_view tool) {
  for (const auto& e : entries)
    if (e.server_id() == server_id && e.tool() == tool)
      return &e;
  return nullptr;
}

inline catalog_key key_of(unsigned char seed) {
  catalog_key key;
  for (std::size_t idx = 0; idx < key.size(); ++idx)
    key[idx] = static_cast<unsigned char>(seed + idx);
  return key;
}

/// The catalog of `view`'s long tail under a fixed key derived from `seed`.
inline tool_catalog catalog_of(const tool_view& view, unsigned char seed) {
  auto built = tool_catalog::build(view, key_of(seed));
  REQUIRE(built.is_ok());
  return std::move(built).value();
}

} // namespace voxos::test
