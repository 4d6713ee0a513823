#include "actors/tenant/tenant_logic.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "config/internal_tools.hpp"
#include "config/presets.hpp"
#include "transport/url_policy.hpp"

namespace voxos::tenant_logic {

namespace {

using tenant_events::loaded_tenant;

constexpr std::size_t max_name_bytes = 200;
constexpr const char* migration_default_agent = "default_agent_v1";
constexpr const char* migration_exa = "exa_default_v1";
constexpr const char* migration_contact_prereq = "contact_prereq_v1";

status not_found(const std::string& what) {
  return status::error(errc::not_found, "no such " + what + " for this tenant");
}

const agent_record* find_agent(const tenant_state& t, const std::string& agent_id) {
  for (const auto& a : t.agents)
    if (a.agent_id == agent_id)
      return &a;
  return nullptr;
}

const agent_record* default_agent(const tenant_state& t) {
  for (const auto& a : t.agents)
    if (a.is_default)
      return &a;
  return nullptr;
}

bool explicit_decision_exists(const tenant_state& t, const std::string& agent_id,
                              const std::string& server_id, std::string_view tool) {
  return std::any_of(t.grants.begin(), t.grants.end(), [&](const tool_grant& g) {
    return g.agent_id == agent_id && g.server_id == server_id && g.tool == tool;
  });
}

/// Tools a server knows: discovered, allowlisted, or curated by its preset.
bool server_knows(const mcp_server_record& s, const std::string& tool) {
  for (const auto& def : s.cached_tools)
    if (def.name == tool)
      return true;
  if (std::find(s.allowed_tools.begin(), s.allowed_tools.end(), tool) != s.allowed_tools.end())
    return true;
  const auto* p = find_preset(s.preset_id);
  return p != nullptr && find_preset_tool(*p, tool) != nullptr;
}

/// An Exa endpoint: one of Exa's presets, or a URL whose host is exa.ai or
/// a name under it (a host that merely holds "exa.ai", such as
/// notexa.ai.example, is another server).
bool is_exa_record(const mcp_server_record& s) {
  if (s.preset_id == preset_ids::exa || s.preset_id == preset_ids::exa_api_key)
    return true;
  auto url = parse_url(s.url);
  if (!url || url->kind != parsed_url::host_kind::name)
    return false;
  const std::string& host = url->host;
  const std::string exa = "exa.ai";
  return host == exa
         || (host.size() > exa.size() + 1
             && host.compare(host.size() - exa.size(), exa.size(), exa) == 0
             && host[host.size() - exa.size() - 1] == '.');
}

status check_text(const std::string& text, const char* field) {
  if (text.empty())
    return status::error(errc::missing_field, std::string{field} + ": must not be empty");
  if (text.size() > max_name_bytes)
    return status::error(errc::out_of_range, std::string{field} + ": longer than 200 bytes");
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7F)
      return status::error(errc::out_of_range,
                           std::string{field} + ": contains control characters");
  return status::ok();
}

/// The contact-search prerequisite for the default agent, if the rule adds it.
std::optional<event_draft> contact_prerequisite(const tenant_state& t) {
  const auto* agent = default_agent(t);
  if (agent == nullptr
      || explicit_decision_exists(t, agent->agent_id, "", internal_names::search_contacts))
    return std::nullopt;
  bool call_capable = std::any_of(t.phones.begin(), t.phones.end(), [](const phone_integration& p) {
    return p.call_capable && p.connected;
  });
  bool place_call_allowed = std::any_of(t.grants.begin(), t.grants.end(), [&](const tool_grant& g) {
    return g.decision == grant_decision::allow
           && std::any_of(t.phones.begin(), t.phones.end(), [&](const phone_integration& p) {
                return g.server_id == p.integration_id && g.tool == p.place_call_tool;
              });
  });
  if (!call_capable && !place_call_allowed)
    return std::nullopt;
  return tenant_events::grant_set(
    {agent->agent_id, "", std::string{internal_names::search_contacts}, grant_decision::allow});
}

} // namespace

bool exa_migration_pending(const loaded_tenant& t) {
  return t.migrations.count(migration_exa) == 0;
}

bool holds_exa_record(const std::vector<event_record>& config_events) {
  for (const auto& ev : config_events) {
    // Every Exa record's data names "exa" (its preset id or its URL).
    if (ev.type != "server.upserted" || ev.data.find("exa") == std::string::npos)
      continue;
    auto doc = nlohmann::json::parse(ev.data, nullptr, false);
    if (!doc.is_object() || !doc.contains("server"))
      continue;
    auto server = tenant_events::server_from_json(doc["server"]);
    if (server && is_exa_record(*server))
      return true;
  }
  return false;
}

std::vector<event_draft> pending_migrations(const loaded_tenant& t, const id_maker& make_id,
                                            int64_t now_us, bool exa_in_history) {
  std::vector<event_draft> out;
  auto state = t.state; // migrations see each other's effects
  if (t.migrations.count(migration_default_agent) == 0) {
    if (state.agents.empty()) {
      agent_record agent{make_id("a_"), "Default", true};
      state.agents.push_back(agent);
      out.push_back(tenant_events::agent_created(agent));
    }
    out.push_back(tenant_events::migration_applied(migration_default_agent));
  }
  if (t.migrations.count(migration_exa) == 0) {
    bool has_exa = exa_in_history
                   || std::any_of(state.servers.begin(), state.servers.end(),
                                  [](const auto& kv) { return is_exa_record(kv.second); });
    const auto* exa = find_preset(preset_ids::exa);
    if (!has_exa && exa != nullptr) {
      mcp_server_record s;
      s.server_id = make_id("s_");
      s.tenant_id = state.tenant_id;
      s.label = exa->label;
      s.preset_id = exa->id;
      s.transport = exa->transport;
      s.url = exa->url;
      s.auth = exa->auth;
      s.enabled = s.trusted = s.connected = true;
      for (const auto& tool : exa->tools)
        if (tool.starter_grant)
          s.allowed_tools.push_back(tool.name);
      s.cached_tools = tool_cache{exa->curated_tools};
      s.cache_version = exa->curated_version;
      s.discovered_us = now_us;
      out.push_back(tenant_events::server_upserted(s));
    }
    out.push_back(tenant_events::migration_applied(migration_exa));
  }
  if (t.migrations.count(migration_contact_prereq) == 0) {
    if (auto prereq = contact_prerequisite(state))
      out.push_back(std::move(*prereq));
    out.push_back(tenant_events::migration_applied(migration_contact_prereq));
  }
  return out;
}

result<std::vector<event_draft>> create_agent(const loaded_tenant& t, const std::string& name,
                                              const id_maker& make_id) {
  if (auto st = check_text(name, "name"); !st)
    return st;
  agent_record agent{make_id("a_"), name, t.state.agents.empty()};
  return std::vector<event_draft>{tenant_events::agent_created(agent)};
}

result<std::vector<event_draft>> set_grant(const loaded_tenant& t, const std::string& agent_id,
                                           const std::string& server_id, const std::string& tool,
                                           const std::string& decision) {
  const auto& s = t.state;
  if (find_agent(s, agent_id) == nullptr)
    return not_found("agent");
  if (server_id.empty()) {
    if (find_internal_tool(tool) == nullptr)
      return not_found("internal tool");
  } else if (auto server = s.servers.find(server_id); server != s.servers.end()) {
    if (!server_knows(server->second, tool))
      return not_found("tool on this server");
  } else {
    auto phone = std::find_if(s.phones.begin(), s.phones.end(), [&](const phone_integration& p) {
      return p.integration_id == server_id;
    });
    if (phone == s.phones.end())
      return not_found("server");
    if (phone->place_call_tool != tool)
      return not_found("tool on this integration");
  }
  if (decision == "default") {
    if (!explicit_decision_exists(s, agent_id, server_id, tool))
      return std::vector<event_draft>{};
    return std::vector<event_draft>{tenant_events::grant_cleared(agent_id, server_id, tool)};
  }
  if (decision != "allow" && decision != "deny")
    return status::error(errc::out_of_range, "decision: expected allow, deny or default");
  tool_grant g{agent_id, server_id, tool,
               decision == "allow" ? grant_decision::allow : grant_decision::deny};
  return std::vector<event_draft>{tenant_events::grant_set(g)};
}

result<std::vector<event_draft>> set_route(const loaded_tenant& t, const std::string& agent_id,
                                           const std::string& action, const std::string& mode,
                                           const std::string& server_id, const std::string& tool) {
  const auto& s = t.state;
  if (find_agent(s, agent_id) == nullptr)
    return not_found("agent");
  const route_group* group = nullptr;
  for (const auto& g : route_groups())
    if (g.action == action)
      group = &g;
  if (group == nullptr)
    return status::error(errc::not_found, "no such action route");
  if (mode == "automatic")
    return std::vector<event_draft>{
      tenant_events::route_set({agent_id, action, route_mode::automatic, "", ""})};
  if (mode != "pinned")
    return status::error(errc::out_of_range, "mode: expected automatic or pinned");
  auto server = s.servers.find(server_id);
  if (server == s.servers.end())
    return not_found("server");
  auto preset_id = server->second.preset_id;
  if (preset_id == preset_ids::exa_api_key)
    preset_id = std::string{preset_ids::exa};
  bool member =
    std::any_of(group->members.begin(), group->members.end(),
                [&](const route_member& m) { return m.preset_id == preset_id && m.tool == tool; });
  if (!member)
    return status::error(errc::out_of_range,
                         "tool: not an implementation of this action on that server");
  return std::vector<event_draft>{
    tenant_events::route_set({agent_id, action, route_mode::pinned, server_id, tool})};
}

result<std::vector<event_draft>> upsert_phone(const loaded_tenant& t,
                                              const phone_integration& phone) {
  std::vector<event_draft> out{tenant_events::phone_upserted(phone)};
  auto next = t.state;
  next.phones.erase(std::remove_if(next.phones.begin(), next.phones.end(),
                                   [&](const phone_integration& p) {
                                     return p.integration_id == phone.integration_id;
                                   }),
                    next.phones.end());
  next.phones.push_back(phone);
  if (phone.call_capable && phone.connected)
    if (auto prereq = contact_prerequisite(next))
      out.push_back(std::move(*prereq));
  return out;
}

result<std::vector<event_draft>> upsert_contact(const loaded_tenant&,
                                                const contact_record& contact) {
  if (auto st = check_text(contact.display_name, "display_name"); !st)
    return st;
  const auto& phone = contact.phone;
  bool e164 =
    phone.size() >= 9 && phone.size() <= 16 && phone.front() == '+'
    && std::all_of(phone.begin() + 1, phone.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!e164)
    return status::error(errc::out_of_range, "phone: expected E.164 (+ and 8 to 15 digits)");
  return std::vector<event_draft>{tenant_events::contact_upserted(contact)};
}

result<std::vector<event_draft>> delete_contact(const loaded_tenant& t,
                                                const std::string& contact_id) {
  const auto& xs = t.state.contacts;
  if (std::none_of(xs.begin(), xs.end(),
                   [&](const contact_record& c) { return c.contact_id == contact_id; }))
    return not_found("contact");
  return std::vector<event_draft>{tenant_events::contact_deleted(contact_id)};
}

result<std::vector<event_draft>> delete_phone(const loaded_tenant& t,
                                              const std::string& integration_id) {
  const auto& xs = t.state.phones;
  if (std::none_of(xs.begin(), xs.end(),
                   [&](const phone_integration& p) { return p.integration_id == integration_id; }))
    return not_found("phone integration");
  return std::vector<event_draft>{tenant_events::phone_deleted(integration_id)};
}

result<std::vector<event_draft>> upsert_profile(const loaded_tenant& t,
                                                const browser_profile& profile) {
  const auto& s = t.state;
  if (auto st = check_text(profile.label, "label"); !st)
    return st;
  for (const auto& agent_id : profile.agent_ids)
    if (find_agent(s, agent_id) == nullptr)
      return not_found("agent");
  if (!profile.server_id.empty()) {
    auto server = s.servers.find(profile.server_id);
    if (server == s.servers.end())
      return not_found("server");
    if (!server_knows(server->second, profile.tool))
      return not_found("tool on this server");
  } else if (!profile.tool.empty()) {
    return status::error(errc::out_of_range, "tool: only a hosted profile names a tool");
  }
  return std::vector<event_draft>{tenant_events::profile_upserted(profile)};
}

result<std::vector<event_draft>> set_subagent_models(const nlohmann::json& body) {
  auto allowlist = tenant_events::subagent_allowlist_from_json(body);
  if (!allowlist)
    return allowlist.error();
  return std::vector<event_draft>{tenant_events::subagent_models_set(*allowlist)};
}

result<std::vector<event_draft>> patch_server(const loaded_tenant& t, const std::string& server_id,
                                              const server_patch& patch) {
  auto found = t.state.servers.find(server_id);
  if (found == t.state.servers.end())
    return not_found("server");
  auto server = found->second;
  if (patch.enabled) {
    if (*patch.enabled && !server.enabled)
      server.connected = false; // back through the test-and-grant flow
    server.enabled = *patch.enabled;
  }
  if (patch.trusted)
    server.trusted = *patch.trusted;
  if (patch.allowed_tools) {
    for (const auto& tool : *patch.allowed_tools)
      if (!server_knows(server, tool))
        return not_found("tool on this server");
    server.allowed_tools = *patch.allowed_tools;
  }
  return std::vector<event_draft>{tenant_events::server_upserted(server)};
}

result<nlohmann::json> grants_page(const loaded_tenant& t, const std::string& agent_id) {
  const auto& s = t.state;
  if (find_agent(s, agent_id) == nullptr)
    return not_found("agent");
  auto rows = nlohmann::json::array();
  auto row = [&](const std::string& server_id, const std::string& tool, tool_origin origin,
                 risk_level risk, bool read_only) -> nlohmann::json& {
    std::string decision = "default";
    for (const auto& g : s.grants)
      if (g.agent_id == agent_id && g.server_id == server_id && g.tool == tool)
        decision = g.decision == grant_decision::allow ? "allow" : "deny";
    auto effective = check_grant(s, agent_id, server_id, tool);
    rows.push_back({{"server_id", server_id},
                    {"tool", tool},
                    {"origin", to_string(origin)},
                    {"risk", to_string(risk)},
                    {"read_only", read_only},
                    {"decision", decision},
                    {"allowed", effective.allowed()},
                    {"reason", to_string(effective.why)}});
    return rows.back();
  };
  for (const auto& tool : internal_tools())
    row("", tool.name, tool_origin::internal, tool.risk, tool.read_only)["kind"] = tool.kind;
  for (const auto& phone : s.phones)
    if (!phone.place_call_tool.empty())
      row(phone.integration_id, phone.place_call_tool, tool_origin::integration, risk_level::medium,
          false); // as the run's snapshot rates it
  for (const auto& [server_id, server] : s.servers) {
    std::vector<std::string> names = server.allowed_tools;
    for (const auto& def : server.cached_tools)
      names.push_back(def.name);
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    // Risk as composition rates it: the preset's curated risk, else medium;
    // read-only when curated so or when the server's annotation says so.
    const auto* curated_preset = find_preset(server.preset_id);
    for (const auto& name : names) {
      const auto* curated =
        curated_preset != nullptr ? find_preset_tool(*curated_preset, name) : nullptr;
      const auto* def = server.cached_tools.find(name);
      row(server_id, name, tool_origin::mcp,
          curated != nullptr ? curated->risk : risk_level::medium,
          (curated != nullptr && curated->read_only) || (def != nullptr && def->read_only_hint));
    }
  }
  return rows;
}

} // namespace voxos::tenant_logic
