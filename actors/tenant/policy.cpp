#include "actors/tenant/policy.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "config/internal_tools.hpp"
#include "config/presets.hpp"

namespace voxos {

namespace {

constexpr std::string_view web_search_exa = "web_search_exa";

// -- base policy ---------------------------------------------------------------

/// (server id, tool) as views; the strings outlive the maps keyed by them.
using tool_key = std::pair<std::string_view, std::string_view>;
struct tool_key_hash {
  std::size_t operator()(const tool_key& k) const noexcept {
    auto h = std::hash<std::string_view>{}(k.first);
    return h
           ^ (std::hash<std::string_view>{}(k.second) + 0x9e3779b97f4a7c15ULL + (h << 6)
              + (h >> 2));
  }
};

/// One agent's explicit decisions, indexed by (server id, tool): built once
/// per composition so each lookup is a hash probe, not a scan of every grant.
class grant_index {
public:
  // Keys are views into tenant.grants, which outlives the index.
  grant_index(const tenant_state& tenant, std::string_view agent_id) {
    by_tool_.reserve(tenant.grants.size());
    for (const auto& g : tenant.grants)
      if (g.agent_id == agent_id)
        by_tool_[{g.server_id, g.tool}] = g.decision; // the last one wins
  }

  std::optional<grant_decision> find(std::string_view server_id, std::string_view tool) const {
    auto found = by_tool_.find({server_id, tool});
    if (found == by_tool_.end())
      return std::nullopt;
    return found->second;
  }

private:
  std::unordered_map<tool_key, grant_decision, tool_key_hash> by_tool_;
};

reason from_decision(grant_decision d) {
  return d == grant_decision::allow ? reason::explicit_grant : reason::explicit_deny;
}

reason internal_reason(const grant_index& grants, const internal_tool& tool) {
  if (auto d = grants.find({}, tool.name))
    return from_decision(*d);
  return tool.default_granted ? reason::default_grant : reason::not_granted;
}

bool allowlisted(const mcp_server_record& server, std::string_view tool) {
  return std::find(server.allowed_tools.begin(), server.allowed_tools.end(), tool)
         != server.allowed_tools.end();
}

/// One server's tools (allowlisted or discovered), looked up once per
/// composition: sorted by name, each with its cached definition, if any.
struct server_tools {
  struct entry {
    std::string_view name;
    const tool_definition* def = nullptr;
    bool allowlisted = false;
  };

  explicit server_tools(const mcp_server_record& s)
      : server(s), curated(find_preset(s.preset_id)), canonical_exa(is_canonical_exa(s)) {
    entries.reserve(s.allowed_tools.size() + s.cached_tools.size());
    for (const auto& def : s.cached_tools)
      entries.push_back({def.name, &def, false});
    for (const auto& name : s.allowed_tools)
      entries.push_back({name, nullptr, true});
    std::stable_sort(entries.begin(), entries.end(),
                     [](const entry& x, const entry& y) { return x.name < y.name; });
    // Merge duplicates: the first cached definition and any allowlisting.
    std::vector<entry> merged;
    merged.reserve(entries.size());
    for (const auto& e : entries) {
      if (!merged.empty() && merged.back().name == e.name) {
        if (merged.back().def == nullptr)
          merged.back().def = e.def;
        merged.back().allowlisted = merged.back().allowlisted || e.allowlisted;
      } else {
        merged.push_back(e);
      }
    }
    entries = std::move(merged);
  }

  const entry* find(std::string_view name) const {
    auto it = std::lower_bound(entries.begin(), entries.end(), name,
                               [](const entry& e, std::string_view n) { return e.name < n; });
    return it != entries.end() && it->name == name ? &*it : nullptr;
  }

  const preset_tool* curated_tool(std::string_view name) const {
    return curated != nullptr ? find_preset_tool(*curated, name) : nullptr;
  }

  const mcp_server_record& server;
  const preset* curated;
  bool canonical_exa;
  std::vector<entry> entries;
};

reason mcp_reason(const grant_index& grants, const server_tools& tools,
                  const server_tools::entry* tool, std::string_view name) {
  const auto& server = tools.server;
  if (!server.enabled)
    return reason::server_disabled;
  if (!server.trusted)
    return reason::server_untrusted;
  if (!server.connected)
    return reason::server_not_connected;
  if (tool == nullptr || !tool->allowlisted)
    return reason::not_allowlisted;
  // Only tools returned by cache or live discovery are exposed.
  if (tool->def == nullptr)
    return reason::not_discovered;
  if (auto d = grants.find(server.server_id, name))
    return from_decision(*d);
  // Tools a platform-default server grants without an explicit decision.
  const auto* curated = tools.canonical_exa ? tools.curated_tool(name) : nullptr;
  return curated != nullptr && curated->starter_grant && curated->risk == risk_level::low
           ? reason::platform_default
           : reason::not_granted;
}

snapshot_tool mcp_tool(const server_tools& tools, const server_tools::entry& tool) {
  snapshot_tool out;
  out.origin = tool_origin::mcp;
  out.name = std::string{tool.name};
  out.server_id = tools.server.server_id;
  const auto* curated = tools.curated_tool(tool.name);
  out.risk = curated != nullptr ? curated->risk : risk_level::medium;
  out.read_only =
    (curated != nullptr && curated->read_only) || (tool.def != nullptr && tool.def->read_only_hint);
  out.mutating = !out.read_only;
  return out;
}

/// One tool under consideration and its reason so far.
struct candidate {
  snapshot_tool tool;
  reason why;
  bool allowed() const noexcept { return is_allow(why); }
};

std::vector<candidate> base_policy(const tenant_state& tenant, std::string_view agent_id) {
  std::vector<candidate> out;
  auto expected = internal_tools().size() + tenant.phones.size();
  for (const auto& [id, server] : tenant.servers)
    expected += server.allowed_tools.size() + server.cached_tools.size();
  out.reserve(expected);
  grant_index grants{tenant, agent_id};
  // Internal tools.
  bool contacts_allowed = false;
  for (const auto& t : internal_tools()) {
    candidate c;
    c.tool.origin = tool_origin::internal;
    c.tool.name = t.name;
    c.tool.risk = t.risk;
    c.tool.read_only = t.read_only;
    c.tool.mutating = t.mutating;
    c.why = internal_reason(grants, t);
    if (t.name == internal_names::search_contacts)
      contacts_allowed = c.allowed();
    out.push_back(std::move(c));
  }
  // Phone integration tools: need an explicit grant, a connected
  // call-capable resource, and an allowed contact search to resolve callees.
  std::vector<const phone_integration*> phones;
  phones.reserve(tenant.phones.size());
  for (const auto& phone : tenant.phones)
    phones.push_back(&phone);
  std::sort(phones.begin(), phones.end(), [](const auto* x, const auto* y) {
    return std::tie(x->integration_id, x->place_call_tool)
           < std::tie(y->integration_id, y->place_call_tool);
  });
  for (const auto* phone_ptr : phones) {
    const auto& phone = *phone_ptr;
    if (phone.place_call_tool.empty())
      continue;
    candidate c;
    c.tool.origin = tool_origin::integration;
    c.tool.name = phone.place_call_tool;
    c.tool.server_id = phone.integration_id;
    c.tool.risk = risk_level::medium;
    c.tool.mutating = true;
    if (!phone.connected || !phone.call_capable)
      c.why = reason::integration_unavailable;
    else if (auto d = grants.find(phone.integration_id, phone.place_call_tool))
      c.why = from_decision(*d);
    else
      c.why = reason::not_granted;
    if (c.allowed() && !contacts_allowed)
      c.why = reason::prerequisite_denied;
    out.push_back(std::move(c));
  }
  // MCP tools: every allowlisted or discovered tool of every server.
  for (const auto& [server_id, server] : tenant.servers) {
    server_tools tools{server};
    for (const auto& tool : tools.entries)
      out.push_back({mcp_tool(tools, tool), mcp_reason(grants, tools, &tool, tool.name)});
  }
  return out;
}

// -- routes ----------------------------------------------------------------------

/// The member index of a tool in `group`, or -1. Exa counts with either of
/// its presets (keyless or API key).
int member_index(const route_group& group, const tenant_state& tenant, const candidate& c) {
  if (c.tool.origin != tool_origin::mcp)
    return -1;
  auto server = tenant.servers.find(c.tool.server_id);
  if (server == tenant.servers.end())
    return -1;
  auto preset_id = server->second.preset_id;
  if (preset_id == preset_ids::exa_api_key)
    preset_id = std::string{preset_ids::exa};
  for (std::size_t idx = 0; idx < group.members.size(); ++idx)
    if (group.members[idx].preset_id == preset_id && group.members[idx].tool == c.tool.name)
      return static_cast<int>(idx);
  return -1;
}

const action_route* find_route(const tenant_state& tenant, std::string_view agent_id,
                               std::string_view action) {
  for (const auto& r : tenant.routes)
    if (r.agent_id == agent_id && r.action == action)
      return &r;
  return nullptr;
}

void apply_routes(const tenant_state& tenant, std::string_view agent_id,
                  std::vector<candidate>& cands, std::vector<route_resolution>& out) {
  for (const auto& group : route_groups()) {
    route_resolution res;
    res.action = std::string{group.action};
    const auto* configured = find_route(tenant, agent_id, group.action);
    res.mode = configured != nullptr ? configured->mode : route_mode::automatic;
    candidate* chosen = nullptr;
    if (res.mode == route_mode::pinned) {
      for (auto& c : cands)
        if (c.allowed() && c.tool.origin == tool_origin::mcp
            && c.tool.server_id == configured->pinned_server_id
            && c.tool.name == configured->pinned_tool && member_index(group, tenant, c) >= 0)
          chosen = &c;
    } else {
      // The lowest-priority authorised member; server id breaks ties.
      std::tuple<int, std::string> best{static_cast<int>(group.members.size()), {}};
      for (auto& c : cands) {
        auto idx = member_index(group, tenant, c);
        if (idx < 0 || !c.allowed())
          continue;
        std::tuple<int, std::string> key{idx, c.tool.server_id};
        if (chosen == nullptr || key < best) {
          best = key;
          chosen = &c;
        }
      }
    }
    // Every other authorised member leaves the view; a pinned route with no
    // available implementation exposes no substitute.
    for (auto& c : cands) {
      if (&c == chosen || !c.allowed() || member_index(group, tenant, c) < 0)
        continue;
      c.why = chosen == nullptr && res.mode == route_mode::pinned ? reason::pinned_route_unavailable
                                                                  : reason::route_not_selected;
    }
    if (chosen != nullptr) {
      chosen->tool.route_action = res.action;
      res.server_id = chosen->tool.server_id;
      res.tool = chosen->tool.name;
    }
    out.push_back(std::move(res));
  }
}

// -- channels ----------------------------------------------------------------------

caller_class classify_caller(const tenant_state& tenant, const run_context& ctx) {
  switch (ctx.chan) {
  case channel::phone_call:
  case channel::sms:
  case channel::whatsapp: {
    bool admin =
      !ctx.caller_number.empty()
      && std::any_of(tenant.contacts.begin(), tenant.contacts.end(), [&](const contact_record& c) {
           return c.is_admin && c.phone == ctx.caller_number;
         });
    if (admin)
      return caller_class::admin;
    return ctx.chan == channel::phone_call ? caller_class::limited : caller_class::unknown;
  }
  default:
    return caller_class::owner;
  }
}

/// The qualifying Exa identity for limited channels: exact canonical preset,
/// enabled, trusted, connected, and allowlisting web_search_exa.
bool qualifying_exa(const tenant_state& tenant, const snapshot_tool& t) {
  if (t.origin != tool_origin::mcp || t.name != web_search_exa)
    return false;
  auto server = tenant.servers.find(t.server_id);
  if (server == tenant.servers.end())
    return false;
  const auto& s = server->second;
  return is_canonical_exa(s) && s.enabled && s.trusted && s.connected
         && allowlisted(s, web_search_exa);
}

/// The channel's reason to drop an allowed tool, if any.
using tool_set = std::unordered_set<tool_key, tool_key_hash>;

std::optional<reason> channel_filter(const tenant_state& tenant, const run_context& ctx,
                                     caller_class caller, const tool_set* parent_tools,
                                     const snapshot_tool& t) {
  const internal_tool* internal =
    t.origin == tool_origin::internal ? find_internal_tool(t.name) : nullptr;
  bool schedule = internal != nullptr && internal->scope == tool_scope::interactive_text_only;
  switch (ctx.chan) {
  case channel::owner_text_chat:
    return std::nullopt;
  case channel::in_app_voice:
  case channel::scheduled_run:
  case channel::webhook:
  case channel::manual_worker_run:
    if (schedule)
      return reason::text_chat_only;
    return std::nullopt;
  case channel::phone_call:
    if (schedule)
      return reason::text_chat_only;
    if (caller == caller_class::admin || qualifying_exa(tenant, t))
      return std::nullopt;
    return reason::caller_limited;
  case channel::sms:
  case channel::whatsapp:
    // Receiving a message does not authenticate the sender as the owner.
    if (internal != nullptr && internal->global_read_only && internal->risk == risk_level::low)
      return std::nullopt;
    if (qualifying_exa(tenant, t))
      return std::nullopt;
    if (internal != nullptr && t.name == internal_names::search_contacts)
      return caller == caller_class::admin ? std::nullopt
                                           : std::optional<reason>{reason::sender_not_admin};
    return reason::channel_excluded;
  case channel::subagent:
    if (t.name == internal_names::delegate_agent_task && internal != nullptr)
      return reason::not_inherited;
    if (schedule)
      return reason::text_chat_only;
    if (ctx.parent == nullptr || ctx.parent->find(t.server_id, t.name) == nullptr)
      return reason::parent_not_granted;
    return std::nullopt;
  }
  return reason::channel_excluded;
}

bool offers_profiles(channel c) {
  return c == channel::owner_text_chat || c == channel::in_app_voice;
}

} // namespace

// -- vocabulary ----------------------------------------------------------------------

std::string_view to_string(channel x) noexcept {
  switch (x) {
  case channel::owner_text_chat:
    return "owner_text_chat";
  case channel::in_app_voice:
    return "in_app_voice";
  case channel::phone_call:
    return "phone_call";
  case channel::sms:
    return "sms";
  case channel::whatsapp:
    return "whatsapp";
  case channel::scheduled_run:
    return "scheduled_run";
  case channel::webhook:
    return "webhook";
  case channel::manual_worker_run:
    return "manual_worker_run";
  case channel::subagent:
    return "subagent";
  }
  return "unknown";
}

std::string_view to_string(caller_class x) noexcept {
  switch (x) {
  case caller_class::owner:
    return "owner";
  case caller_class::admin:
    return "admin";
  case caller_class::limited:
    return "limited";
  case caller_class::unknown:
    return "unknown";
  }
  return "unknown";
}

std::string_view to_string(tool_origin x) noexcept {
  switch (x) {
  case tool_origin::internal:
    return "internal";
  case tool_origin::mcp:
    return "mcp";
  case tool_origin::integration:
    return "integration";
  }
  return "unknown";
}

std::string_view to_string(reason x) noexcept {
  switch (x) {
  case reason::explicit_grant:
    return "explicit_grant";
  case reason::default_grant:
    return "default_grant";
  case reason::platform_default:
    return "platform_default";
  case reason::explicit_deny:
    return "explicit_deny";
  case reason::not_granted:
    return "not_granted";
  case reason::server_disabled:
    return "server_disabled";
  case reason::server_untrusted:
    return "server_untrusted";
  case reason::server_not_connected:
    return "server_not_connected";
  case reason::not_allowlisted:
    return "not_allowlisted";
  case reason::not_discovered:
    return "not_discovered";
  case reason::integration_unavailable:
    return "integration_unavailable";
  case reason::prerequisite_denied:
    return "prerequisite_denied";
  case reason::route_not_selected:
    return "route_not_selected";
  case reason::pinned_route_unavailable:
    return "pinned_route_unavailable";
  case reason::text_chat_only:
    return "text_chat_only";
  case reason::channel_excluded:
    return "channel_excluded";
  case reason::caller_limited:
    return "caller_limited";
  case reason::sender_not_admin:
    return "sender_not_admin";
  case reason::not_inherited:
    return "not_inherited";
  case reason::parent_not_granted:
    return "parent_not_granted";
  case reason::not_in_snapshot:
    return "not_in_snapshot";
  case reason::unknown_tool:
    return "unknown_tool";
  case reason::foreign_server:
    return "foreign_server";
  }
  return "unknown";
}

bool is_allow(reason x) noexcept {
  return x == reason::explicit_grant || x == reason::default_grant || x == reason::platform_default;
}

const snapshot_tool* effective_policy::find(std::string_view server_id,
                                            std::string_view tool) const {
  for (const auto& t : tools)
    if (t.server_id == server_id && t.name == tool)
      return &t;
  return nullptr;
}

const std::vector<route_group>& route_groups() {
  static const std::vector<route_group> groups{
    {"web.search",
     {{preset_ids::exa, "web_search_exa"},
      {preset_ids::tavily, "tavily-search"},
      {preset_ids::firecrawl, "firecrawl_search"},
      {preset_ids::browserless, "browserless_search"}}},
  };
  return groups;
}

bool is_canonical_exa(const mcp_server_record& server) {
  const auto* p = find_preset(preset_ids::exa);
  return p != nullptr && server.preset_id == p->id && server.url == p->url
         && server.transport == p->transport && server.auth == p->auth;
}

// -- composition -------------------------------------------------------------------

effective_policy compose_policy(const tenant_state& tenant, const run_context& ctx,
                                int64_t now_us) {
  effective_policy out;
  out.tenant_id = tenant.tenant_id;
  out.agent_id = ctx.agent_id;
  out.run_id = ctx.run_id;
  out.chan = ctx.chan;
  out.caller = classify_caller(tenant, ctx);
  out.contacts = ctx.chan == channel::sms || ctx.chan == channel::whatsapp
                   ? contact_detail::number_endings
                   : contact_detail::full_numbers;
  out.created_us = now_us;

  // 1. base policy, 2. routes on it.
  auto cands = base_policy(tenant, ctx.agent_id);
  apply_routes(tenant, ctx.agent_id, cands, out.routes);

  // Saved browser profiles, intersected with their hosted provider's grant
  // in the base policy, for web chat and in-app voice only.
  if (offers_profiles(ctx.chan)) {
    for (const auto& profile : tenant.profiles) {
      if (std::find(profile.agent_ids.begin(), profile.agent_ids.end(), ctx.agent_id)
          == profile.agent_ids.end())
        continue;
      if (!profile.server_id.empty()) {
        auto granted = std::any_of(cands.begin(), cands.end(), [&](const candidate& c) {
          return c.tool.origin == tool_origin::mcp && c.tool.server_id == profile.server_id
                 && c.tool.name == profile.tool && is_allow(c.why);
        });
        if (!granted)
          continue;
      }
      out.profiles.push_back({profile.handle, profile.label, profile.primary_origin});
    }
  }

  // 3. and 4. the channel, caller and parent intersections.
  out.decisions.reserve(cands.size());
  out.tools.reserve(cands.size());
  std::optional<tool_set> parent_tools;
  if (ctx.parent != nullptr) {
    parent_tools.emplace();
    parent_tools->reserve(ctx.parent->tools.size());
    for (const auto& t : ctx.parent->tools)
      parent_tools->insert({t.server_id, t.name});
  }
  for (auto& c : cands) {
    if (c.allowed())
      if (auto drop = channel_filter(tenant, ctx, out.caller,
                                     parent_tools ? &*parent_tools : nullptr, c.tool))
        c.why = *drop;
    out.decisions.push_back({c.tool.origin, c.tool.name, c.tool.server_id, c.why});
    if (c.allowed())
      out.tools.push_back(std::move(c.tool));
  }
  // Candidates come in snapshot order already: internal tools in registry
  // order, then integrations by id, then MCP tools by server id and name.
  return out;
}

policy_decision check_grant(const tenant_state& tenant, std::string_view agent_id,
                            std::string_view server_id, std::string_view tool) {
  policy_decision out{tool_origin::internal, std::string{tool}, std::string{server_id},
                      reason::unknown_tool};
  grant_index grants{tenant, agent_id};
  if (server_id.empty()) {
    if (const auto* t = find_internal_tool(tool))
      out.why = internal_reason(grants, *t);
    return out;
  }
  if (auto server = tenant.servers.find(std::string{server_id}); server != tenant.servers.end()) {
    out.origin = tool_origin::mcp;
    server_tools tools{server->second};
    out.why = mcp_reason(grants, tools, tools.find(tool), tool);
    return out;
  }
  for (const auto& c : base_policy(tenant, agent_id))
    if (c.tool.origin == tool_origin::integration && c.tool.server_id == server_id
        && c.tool.name == tool) {
      out.origin = tool_origin::integration;
      out.why = c.why;
      return out;
    }
  out.why = reason::foreign_server;
  return out;
}

policy_decision check_call(const effective_policy& snapshot, std::string_view server_id,
                           std::string_view tool) {
  for (const auto& d : snapshot.decisions)
    if (d.server_id == server_id && d.tool == tool)
      return d.allowed() ? d
                         : policy_decision{d.origin, d.tool, d.server_id, reason::not_in_snapshot};
  return {server_id.empty() ? tool_origin::internal : tool_origin::mcp, std::string{tool},
          std::string{server_id}, reason::not_in_snapshot};
}

} // namespace voxos
