// Tenants for policy tests, built from the real preset catalog and internal
// tool registry.
#pragma once

#include <string>

#include "actors/tenant/policy.hpp"
#include "config/internal_tools.hpp"
#include "config/presets.hpp"

namespace voxos::test {

inline constexpr const char* default_agent = "a_default";
inline constexpr const char* other_agent = "a_other";

/// A server record created from a preset (first variant's URL when the
/// preset has variants), enabled, trusted and connected, with every curated
/// tool discovered and the starter tools allowlisted.
inline mcp_server_record server_from_preset(std::string server_id, std::string_view preset_id,
                                            const std::vector<std::string>& extra_tools = {}) {
  const auto* p = find_preset(preset_id);
  mcp_server_record s;
  s.server_id = std::move(server_id);
  s.tenant_id = "t_a";
  s.preset_id = p->id;
  s.transport = p->transport;
  s.url = p->url.empty() && !p->variants.empty() ? p->variants.front().url : p->url;
  if (s.url.empty())
    s.url = "https://mcp.example.com/mcp";
  s.auth = p->auth;
  s.enabled = s.trusted = s.connected = true;
  std::vector<tool_definition> cached;
  for (const auto& t : p->tools) {
    tool_definition def;
    def.name = t.name;
    def.description = t.name + " tool";
    def.input_schema = R"({"type":"object"})";
    cached.push_back(def);
    if (t.starter_grant)
      s.allowed_tools.push_back(t.name);
  }
  for (const auto& name : extra_tools) {
    tool_definition def;
    def.name = name;
    def.input_schema = R"({"type":"object"})";
    cached.push_back(def);
    s.allowed_tools.push_back(name);
  }
  s.cached_tools = tool_cache{std::move(cached)};
  return s;
}

/// A custom server that advertises `tools` (a look-alike when the names
/// match a preset's).
inline mcp_server_record custom_server(std::string server_id, std::vector<std::string> tools,
                                       std::string url = "https://gateway.example.com/mcp") {
  mcp_server_record s;
  s.server_id = std::move(server_id);
  s.tenant_id = "t_a";
  s.url = std::move(url);
  s.enabled = s.trusted = s.connected = true;
  std::vector<tool_definition> cached;
  for (auto& name : tools) {
    tool_definition def;
    def.name = name;
    def.input_schema = R"({"type":"object"})";
    cached.push_back(def);
    s.allowed_tools.push_back(name);
  }
  s.cached_tools = tool_cache{std::move(cached)};
  return s;
}

/// A tenant with two agents and the canonical keyless Exa server.
inline tenant_state base_tenant() {
  tenant_state t;
  t.tenant_id = "t_a";
  t.agents.push_back({default_agent, "Default", true});
  t.agents.push_back({other_agent, "Other", false});
  t.servers.emplace("s_exa", server_from_preset("s_exa", preset_ids::exa));
  return t;
}

/// `server`'s cache with `edit` applied to a copy of its definitions (a
/// cache is immutable: a change builds a new one).
template <class Edit>
void edit_cache(mcp_server_record& server, Edit edit) {
  auto definitions = server.cached_tools.definitions();
  edit(definitions);
  server.cached_tools = tool_cache{std::move(definitions)};
}

inline void grant(tenant_state& t, std::string agent, std::string server, std::string tool,
                  grant_decision d = grant_decision::allow) {
  t.grants.push_back({std::move(agent), std::move(server), std::move(tool), d});
}

inline effective_policy compose(const tenant_state& t, channel c = channel::owner_text_chat,
                                std::string agent = default_agent, std::string caller = {},
                                const effective_policy* parent = nullptr) {
  run_context ctx;
  ctx.run_id = "r_1";
  ctx.agent_id = std::move(agent);
  ctx.chan = c;
  ctx.caller_number = std::move(caller);
  ctx.parent = parent;
  return compose_policy(t, ctx, 1);
}

inline bool has(const effective_policy& p, std::string_view server, std::string_view tool) {
  return p.find(server, tool) != nullptr;
}

inline bool has_internal(const effective_policy& p, std::string_view tool) {
  return has(p, "", tool);
}

inline reason why(const effective_policy& p, std::string_view server, std::string_view tool) {
  for (const auto& d : p.decisions)
    if (d.server_id() == server && d.tool() == tool)
      return d.why;
  return reason::unknown_tool;
}

} // namespace voxos::test
