#include "actors/tenant/policy.hpp"

#include <algorithm>
#include <array>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "config/internal_tools.hpp"
#include "config/presets.hpp"

namespace voxos {

namespace {

constexpr std::string_view web_search_exa = "web_search_exa";

// -- entry text ----------------------------------------------------------------

/// Copies the texts `views` point to into one shared block and points them
/// there; no block when every text is empty.
template <std::size_t N>
std::shared_ptr<const void> own_text(const std::array<std::string_view*, N>& views) {
  if (std::all_of(views.begin(), views.end(), [](const auto* v) { return v->empty(); })) {
    for (auto* v : views)
      *v = {};
    return nullptr;
  }
  auto block = std::make_shared<std::array<std::string, N>>();
  for (std::size_t idx = 0; idx < N; ++idx) {
    (*block)[idx] = std::string{*views[idx]};
    *views[idx] = (*block)[idx];
  }
  return block;
}

// -- reasons ---------------------------------------------------------------------

reason from_decision(grant_decision d) {
  return d == grant_decision::allow ? reason::explicit_grant : reason::explicit_deny;
}

reason internal_reason(std::optional<grant_decision> grant, const internal_tool& tool) {
  if (grant)
    return from_decision(*grant);
  return tool.default_granted ? reason::default_grant : reason::not_granted;
}

reason integration_reason(const phone_integration& phone, std::optional<grant_decision> grant,
                          bool contacts_allowed) {
  reason why = reason::not_granted;
  if (!phone.connected || !phone.call_capable)
    why = reason::integration_unavailable;
  else if (grant)
    why = from_decision(*grant);
  // Callees are resolved through contact search: no calls without it.
  if (is_allow(why) && !contacts_allowed)
    why = reason::prerequisite_denied;
  return why;
}

/// Phone integrations with a place-call tool, in snapshot order.
std::vector<phone_integration> callable_phones(const std::vector<phone_integration>& phones) {
  std::vector<phone_integration> out;
  for (const auto& phone : phones)
    if (!phone.place_call_tool.empty())
      out.push_back(phone);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::tie(x.integration_id, x.place_call_tool)
           < std::tie(y.integration_id, y.place_call_tool);
  });
  return out;
}

// -- one server's tools, indexed ----------------------------------------------------

/// One server's tools (allowlisted or discovered), merged and sorted by name
/// once per index, with what composition asks of each. Snapshot entries of
/// the server point into it (and, through `cache`, into its definitions).
struct indexed_server {
  struct tool {
    std::string_view name;                ///< into `cache` or `undiscovered`
    const tool_definition* def = nullptr; ///< its first cached definition, or none
    bool allowlisted = false;
    /// A tool the canonical keyless Exa server grants without a decision.
    bool platform_default = false;
    risk_level risk = risk_level::medium;
    bool read_only = false; ///< curated read-only or the server's readOnlyHint
  };
  /// A tool that implements a route group's member.
  struct membership {
    uint32_t tool;   ///< position in `tools`
    uint32_t group;  ///< position in route_groups()
    uint32_t member; ///< priority within the group
  };

  std::string server_id;
  bool enabled = false;
  bool trusted = false;
  bool connected = false;
  bool needs_auth = false;
  /// The canonical Exa identity, enabled, trusted, connected, allowlisting
  /// web_search_exa: the one qualifying server for limited channels.
  bool qualifying_exa = false;
  tool_cache cache;
  std::vector<std::string> undiscovered; ///< allowlisted names the cache lacks
  std::vector<tool> tools;               ///< by name, each once
  std::vector<membership> routes;        ///< by tool position

  const tool* find(std::string_view name) const {
    auto it = std::lower_bound(tools.begin(), tools.end(), name,
                               [](const tool& t, std::string_view n) { return t.name < n; });
    return it != tools.end() && it->name == name ? &*it : nullptr;
  }

  /// The reason every tool of a disabled, untrusted or unconnected server gets.
  std::optional<reason> server_reason() const {
    if (!enabled)
      return reason::server_disabled;
    if (!trusted)
      return reason::server_untrusted;
    if (!connected)
      return reason::server_not_connected;
    if (needs_auth)
      return reason::server_needs_auth;
    return std::nullopt;
  }
};

std::shared_ptr<const indexed_server> index_server(const mcp_server_record& s) {
  auto out = std::make_shared<indexed_server>();
  out->server_id = s.server_id;
  out->enabled = s.enabled;
  out->trusted = s.trusted;
  out->connected = s.connected;
  out->needs_auth = s.needs_auth;
  out->cache = s.cached_tools;
  bool canonical_exa = is_canonical_exa(s);

  // Allowlisted names, sorted and once; copies of those the cache lacks
  // (complete before anything points into them).
  std::vector<std::string_view> allowed(s.allowed_tools.begin(), s.allowed_tools.end());
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  for (auto name : allowed)
    if (out->cache.find(name) == nullptr)
      out->undiscovered.emplace_back(name);

  // Merge the cache's names and the allowlist, both sorted.
  const auto& cached = out->cache.by_name();
  out->tools.reserve(cached.size() + out->undiscovered.size());
  auto undiscovered = out->undiscovered.begin();
  std::size_t cached_idx = 0;
  std::size_t allowed_idx = 0;
  while (cached_idx < cached.size() || allowed_idx < allowed.size()) {
    indexed_server::tool t;
    if (allowed_idx == allowed.size()
        || (cached_idx < cached.size() && cached[cached_idx].name < allowed[allowed_idx])) {
      t.name = cached[cached_idx].name;
      t.def = cached[cached_idx++].def;
    } else if (cached_idx == cached.size() || allowed[allowed_idx] < cached[cached_idx].name) {
      t.name = *undiscovered++;
      t.allowlisted = true;
      ++allowed_idx;
    } else {
      t.name = cached[cached_idx].name;
      t.def = cached[cached_idx++].def;
      t.allowlisted = true;
      ++allowed_idx;
    }
    out->tools.push_back(t);
  }

  // Curated facts of the server's preset, if any.
  const auto* curated_preset = find_preset(s.preset_id);
  for (auto& t : out->tools) {
    const auto* curated =
      curated_preset != nullptr ? find_preset_tool(*curated_preset, t.name) : nullptr;
    t.risk = curated != nullptr ? curated->risk : risk_level::medium;
    t.read_only =
      (curated != nullptr && curated->read_only) || (t.def != nullptr && t.def->read_only_hint);
    t.platform_default = canonical_exa && curated != nullptr && curated->starter_grant
                         && curated->risk == risk_level::low;
  }
  const auto* search = out->find(web_search_exa);
  out->qualifying_exa = canonical_exa && s.enabled && s.trusted && s.connected && !s.needs_auth
                        && search != nullptr && search->allowlisted;

  // Route memberships: Exa counts with either of its presets.
  std::string_view preset_id = s.preset_id;
  if (preset_id == preset_ids::exa_api_key)
    preset_id = preset_ids::exa;
  const auto& groups = route_groups();
  for (std::size_t group = 0; group < groups.size(); ++group)
    for (std::size_t member = 0; member < groups[group].members.size(); ++member) {
      const auto& m = groups[group].members[member];
      if (m.preset_id != preset_id)
        continue;
      if (const auto* t = out->find(m.tool))
        out->routes.push_back({static_cast<uint32_t>(t - out->tools.data()),
                               static_cast<uint32_t>(group), static_cast<uint32_t>(member)});
    }
  std::stable_sort(out->routes.begin(), out->routes.end(),
                   [](const auto& x, const auto& y) { return x.tool < y.tool; });
  return out;
}

reason mcp_reason(const indexed_server& server, const indexed_server::tool* tool,
                  std::optional<grant_decision> grant) {
  if (auto why = server.server_reason())
    return *why;
  if (tool == nullptr || !tool->allowlisted)
    return reason::not_allowlisted;
  // Only tools returned by cache or live discovery are exposed.
  if (tool->def == nullptr)
    return reason::not_discovered;
  if (grant)
    return from_decision(*grant);
  return tool->platform_default ? reason::platform_default : reason::not_granted;
}

// -- one agent's grants, indexed -------------------------------------------------------

/// An agent's explicit decisions: MCP ones by the tool's position among all
/// indexed tools, the others (internal, integration) by (server id, tool).
struct agent_grants {
  struct keyed {
    std::string server_id;
    std::string tool;
    grant_decision decision;
  };
  std::vector<std::pair<uint32_t, grant_decision>> mcp; ///< ascending positions
  std::vector<keyed> other;

  std::optional<grant_decision> find_other(std::string_view server_id,
                                           std::string_view tool) const {
    for (const auto& g : other)
      if (g.server_id == server_id && g.tool == tool)
        return g.decision;
    return std::nullopt;
  }
};

// -- routes and channels -----------------------------------------------------------------

const action_route* find_route(const std::vector<action_route>& routes, std::string_view agent_id,
                               std::string_view action) {
  for (const auto& r : routes)
    if (r.agent_id == agent_id && r.action == action)
      return &r;
  return nullptr;
}

caller_class classify_caller(const std::vector<std::string>& admin_numbers,
                             const run_context& ctx) {
  switch (ctx.chan) {
  case channel::phone_call:
  case channel::sms:
  case channel::whatsapp: {
    bool admin = !ctx.caller_number.empty()
                 && std::find(admin_numbers.begin(), admin_numbers.end(), ctx.caller_number)
                      != admin_numbers.end();
    if (admin)
      return caller_class::admin;
    return ctx.chan == channel::phone_call ? caller_class::limited : caller_class::unknown;
  }
  default:
    return caller_class::owner;
  }
}

/// (server id, tool) as views of a parent snapshot's text.
using tool_key = std::pair<std::string_view, std::string_view>;
struct tool_key_hash {
  std::size_t operator()(const tool_key& k) const noexcept {
    auto h = std::hash<std::string_view>{}(k.first);
    return h
           ^ (std::hash<std::string_view>{}(k.second) + 0x9e3779b97f4a7c15ULL + (h << 6)
              + (h >> 2));
  }
};
using tool_set = std::unordered_set<tool_key, tool_key_hash>;

/// What the channel filter asks of one allowed tool.
struct filter_input {
  const policy_decision& decision;
  const internal_tool* internal; ///< the registry entry of an internal tool
  bool qualifying_exa;           ///< web_search_exa of the qualifying Exa server
};

/// The channel's reason to drop an allowed tool, if any.
std::optional<reason> channel_filter(const run_context& ctx, caller_class caller,
                                     const tool_set& parent_tools, const filter_input& t) {
  const auto* internal = t.internal;
  bool schedule = internal != nullptr && internal->scope == tool_scope::interactive_text_only;
  if (internal != nullptr && internal->scope == tool_scope::owner_conversation_only
      && ctx.chan != channel::owner_text_chat && ctx.chan != channel::in_app_voice)
    return reason::owner_conversation_only;
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
    if (caller == caller_class::admin || t.qualifying_exa)
      return std::nullopt;
    return reason::caller_limited;
  case channel::sms:
  case channel::whatsapp:
    // Receiving a message does not authenticate the sender as the owner.
    if (internal != nullptr && internal->global_read_only && internal->risk == risk_level::low)
      return std::nullopt;
    if (t.qualifying_exa)
      return std::nullopt;
    if (internal != nullptr && internal->name == internal_names::search_contacts)
      return caller == caller_class::admin ? std::nullopt
                                           : std::optional<reason>{reason::sender_not_admin};
    return reason::channel_excluded;
  case channel::subagent:
    if (internal != nullptr && internal->name == internal_names::delegate_agent_task)
      return reason::not_inherited;
    if (schedule)
      return reason::text_chat_only;
    if (ctx.parent == nullptr
        || parent_tools.count({t.decision.server_id(), t.decision.tool()}) == 0)
      return reason::parent_not_granted;
    return std::nullopt;
  }
  return reason::channel_excluded;
}

bool offers_profiles(channel c) {
  return c == channel::owner_text_chat || c == channel::in_app_voice;
}

} // namespace

// -- the index -------------------------------------------------------------------------

struct policy_index::parts {
  std::string tenant_id;
  std::vector<std::shared_ptr<const indexed_server>> servers; ///< by server id
  std::vector<uint32_t> first_tool; ///< each server's first tool among all indexed tools
  std::size_t tool_count = 0;
  std::unordered_map<std::string, agent_grants> agents;
  std::vector<action_route> routes;
  std::vector<std::string> admin_numbers; ///< saved Admin contacts' normalised numbers
  /// Callable phone integrations in snapshot order.
  std::vector<phone_integration> phones;
  std::vector<browser_profile> profiles;

  /// The server's position in `servers`, or npos.
  std::size_t find_server(std::string_view server_id) const {
    auto it =
      std::lower_bound(servers.begin(), servers.end(), server_id,
                       [](const auto& s, std::string_view id) { return s->server_id < id; });
    return it != servers.end() && (*it)->server_id == server_id
             ? static_cast<std::size_t>(it - servers.begin())
             : std::string::npos;
  }
};

policy_index::policy_index(const tenant_state& tenant) {
  auto out = std::make_shared<parts>();
  out->tenant_id = tenant.tenant_id;
  // Servers, in server id order (the map's).
  out->servers.reserve(tenant.servers.size());
  for (const auto& [id, server] : tenant.servers) {
    out->first_tool.push_back(static_cast<uint32_t>(out->tool_count));
    out->servers.push_back(index_server(server));
    out->tool_count += out->servers.back()->tools.size();
  }
  out->phones = callable_phones(tenant.phones);
  // Grants: the last decision for a key wins, as in the projection.
  std::unordered_map<std::string, std::vector<std::pair<uint32_t, std::size_t>>> positions;
  for (std::size_t grant_idx = 0; grant_idx < tenant.grants.size(); ++grant_idx) {
    const auto& g = tenant.grants[grant_idx];
    auto& agent = out->agents[g.agent_id];
    bool integration = std::any_of(out->phones.begin(), out->phones.end(),
                                   [&](const auto& p) { return p.integration_id == g.server_id; });
    if (g.server_id.empty() || integration) {
      auto same = std::find_if(agent.other.begin(), agent.other.end(), [&](const auto& k) {
        return k.server_id == g.server_id && k.tool == g.tool;
      });
      if (same != agent.other.end())
        same->decision = g.decision;
      else
        agent.other.push_back({g.server_id, g.tool, g.decision});
    }
    auto server_idx = out->find_server(g.server_id);
    if (server_idx == std::string::npos)
      continue;
    const auto& server = *out->servers[server_idx];
    if (const auto* t = server.find(g.tool))
      positions[g.agent_id].emplace_back(
        out->first_tool[server_idx] + static_cast<uint32_t>(t - server.tools.data()), grant_idx);
  }
  for (auto& [agent_id, found] : positions) {
    std::stable_sort(found.begin(), found.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    auto& mcp = out->agents[agent_id].mcp;
    for (const auto& [position, grant_idx] : found) {
      auto decision = tenant.grants[grant_idx].decision;
      if (!mcp.empty() && mcp.back().first == position)
        mcp.back().second = decision; // a later grant for the same tool
      else
        mcp.emplace_back(position, decision);
    }
  }
  out->routes = tenant.routes;
  for (const auto& c : tenant.contacts)
    if (c.is_admin)
      out->admin_numbers.push_back(c.phone);
  out->profiles = tenant.profiles;
  parts_ = std::move(out);
}

const std::string& policy_index::tenant_id() const noexcept {
  return parts_->tenant_id;
}

// -- entries -------------------------------------------------------------------------------

snapshot_tool::snapshot_tool(tool_origin origin, std::string_view name, std::string_view server_id,
                             risk_level risk, bool read_only, bool mutating,
                             std::string_view route_action)
    : origin(origin), risk(risk), read_only(read_only), mutating(mutating), name_(name),
      server_id_(server_id), route_action_(route_action) {
  owner_ = own_text<3>({&name_, &server_id_, &route_action_});
}

policy_decision::policy_decision(tool_origin origin, std::string_view tool,
                                 std::string_view server_id, reason why)
    : origin(origin), why(why), tool_(tool), server_id_(server_id) {
  owner_ = own_text<2>({&tool_, &server_id_});
}

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
  case reason::server_needs_auth:
    return "server_needs_auth";
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
  case reason::owner_conversation_only:
    return "owner_conversation_only";
  }
  return "unknown";
}

bool is_allow(reason x) noexcept {
  return x == reason::explicit_grant || x == reason::default_grant || x == reason::platform_default;
}

const snapshot_tool* effective_policy::find(std::string_view server_id,
                                            std::string_view tool) const {
  for (const auto& t : tools)
    if (t.server_id() == server_id && t.name() == tool)
      return &t;
  return nullptr;
}

effective_policy run_part(const effective_policy& snapshot) {
  effective_policy out;
  // Every field but the decisions, routes and profiles.
  std::tie(out.tenant_id, out.agent_id, out.run_id, out.chan, out.caller, out.contacts,
           out.created_us, out.tools, out.shared_text) =
    std::tie(snapshot.tenant_id, snapshot.agent_id, snapshot.run_id, snapshot.chan, snapshot.caller,
             snapshot.contacts, snapshot.created_us, snapshot.tools, snapshot.shared_text);
  return out;
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

namespace {

/// Step 1, the base policy: a decision for every tool of the index, in
/// snapshot order (internal tools in registry order, then integrations by
/// id, then MCP tools by server id and name, each server's tools from
/// idx.first_tool on); answers the position of the first MCP tool's.
std::size_t decide_base(const policy_index::parts& idx, const agent_grants& grants,
                        std::vector<policy_decision>& decisions) {
  // Internal tools:
  bool contacts_allowed = false;
  for (const auto& t : internal_tools()) {
    auto why = internal_reason(grants.find_other({}, t.name), t);
    if (t.name == internal_names::search_contacts)
      contacts_allowed = is_allow(why);
    decisions.emplace_back(borrowed_text, tool_origin::internal, t.name, std::string_view{}, why);
  }
  // phone integration tools: need an explicit grant, a connected
  // call-capable resource, and an allowed contact search to resolve callees;
  for (const auto& phone : idx.phones)
    decisions.emplace_back(
      borrowed_text, tool_origin::integration, phone.place_call_tool, phone.integration_id,
      integration_reason(phone, grants.find_other(phone.integration_id, phone.place_call_tool),
                         contacts_allowed));
  // MCP tools: every allowlisted or discovered tool of every server, its
  // explicit grant found by walking the agent's grants in the same order.
  auto mcp_begin = decisions.size();
  auto grant = grants.mcp.begin();
  for (const auto& server_ptr : idx.servers) {
    const auto& server = *server_ptr;
    auto server_why = server.server_reason();
    auto position = static_cast<uint32_t>(decisions.size() - mcp_begin);
    for (const auto& t : server.tools) {
      while (grant != grants.mcp.end() && grant->first < position)
        ++grant;
      std::optional<grant_decision> explicit_decision;
      if (grant != grants.mcp.end() && grant->first == position)
        explicit_decision = grant->second;
      auto why = server_why ? *server_why : mcp_reason(server, &t, explicit_decision);
      decisions.emplace_back(borrowed_text, tool_origin::mcp, t.name, server.server_id, why);
      ++position;
    }
  }
  return mcp_begin;
}

/// A route group's members among the decisions, in snapshot order:
/// (decision position, member priority).
std::vector<std::pair<std::size_t, uint32_t>>
group_members(const policy_index::parts& idx, std::size_t group_idx, std::size_t mcp_begin) {
  std::vector<std::pair<std::size_t, uint32_t>> members;
  for (std::size_t server_idx = 0; server_idx < idx.servers.size(); ++server_idx)
    for (const auto& m : idx.servers[server_idx]->routes)
      if (m.group == group_idx)
        members.emplace_back(mcp_begin + idx.first_tool[server_idx] + m.tool, m.member);
  return members;
}

/// Step 2 for one route group: its implementation on the base decisions
/// (pinned: exactly the configured one if authorised; automatic: the
/// lowest-priority authorised member, server id breaking ties); every other
/// authorised member leaves the view, and a pinned route with no available
/// implementation exposes no substitute. Answers the chosen decision's
/// position, or npos.
std::size_t resolve_group(const std::vector<std::pair<std::size_t, uint32_t>>& members,
                          const action_route* configured, std::vector<policy_decision>& decisions) {
  auto mode = configured != nullptr ? configured->mode : route_mode::automatic;
  std::size_t chosen = std::string::npos;
  if (mode == route_mode::pinned) {
    for (const auto& [decision_idx, member] : members) {
      const auto& d = decisions[decision_idx];
      if (d.allowed() && d.server_id() == configured->pinned_server_id
          && d.tool() == configured->pinned_tool)
        chosen = decision_idx;
    }
  } else {
    uint32_t best_member = 0;
    std::string_view best_server;
    for (const auto& [decision_idx, member] : members) {
      const auto& d = decisions[decision_idx];
      if (!d.allowed())
        continue;
      if (chosen == std::string::npos
          || std::make_pair(member, d.server_id()) < std::make_pair(best_member, best_server)) {
        chosen = decision_idx;
        best_member = member;
        best_server = d.server_id();
      }
    }
  }
  for (const auto& [decision_idx, member] : members) {
    auto& d = decisions[decision_idx];
    if (decision_idx == chosen || !d.allowed())
      continue;
    d.why = chosen == std::string::npos && mode == route_mode::pinned
              ? reason::pinned_route_unavailable
              : reason::route_not_selected;
  }
  return chosen;
}

} // namespace

effective_policy compose_policy(const policy_index& index, const run_context& ctx, int64_t now_us) {
  const auto& idx = *index.parts_;
  effective_policy out;
  out.tenant_id = idx.tenant_id;
  out.agent_id = ctx.agent_id;
  out.run_id = ctx.run_id;
  out.chan = ctx.chan;
  out.caller = classify_caller(idx.admin_numbers, ctx);
  out.contacts = ctx.chan == channel::sms || ctx.chan == channel::whatsapp
                   ? contact_detail::number_endings
                   : contact_detail::full_numbers;
  out.created_us = now_us;
  // The entries borrow their text from the index (and its tool caches).
  out.shared_text = index.parts_;
  agent_grants no_grants;
  auto agent = idx.agents.find(ctx.agent_id);
  const auto& grants = agent != idx.agents.end() ? agent->second : no_grants;

  // Every tool considered becomes a decision, in snapshot order.
  const auto& registry = internal_tools();
  const auto& phones = idx.phones;
  auto total = registry.size() + phones.size() + idx.tool_count;
  auto& decisions = out.decisions;
  decisions.reserve(total);

  // 1. The base policy.
  auto mcp_begin = decide_base(idx, grants, decisions);

  // 2. Action routes, resolved on the base policy.
  std::vector<std::pair<std::size_t, std::string_view>> selected; // (decision, action)
  const auto& groups = route_groups();
  for (std::size_t group_idx = 0; group_idx < groups.size(); ++group_idx) {
    const auto& group = groups[group_idx];
    route_resolution res;
    res.action = std::string{group.action};
    const auto* configured = find_route(idx.routes, ctx.agent_id, group.action);
    res.mode = configured != nullptr ? configured->mode : route_mode::automatic;
    auto chosen = resolve_group(group_members(idx, group_idx, mcp_begin), configured, decisions);
    if (chosen != std::string::npos) {
      selected.emplace_back(chosen, group.action);
      res.server_id = std::string{decisions[chosen].server_id()};
      res.tool = std::string{decisions[chosen].tool()};
    }
    out.routes.push_back(std::move(res));
  }
  std::sort(selected.begin(), selected.end());

  // Saved browser profiles, intersected with their hosted provider's grant
  // in the base policy, for web chat and in-app voice only.
  if (offers_profiles(ctx.chan)) {
    for (const auto& profile : idx.profiles) {
      if (std::find(profile.agent_ids.begin(), profile.agent_ids.end(), ctx.agent_id)
          == profile.agent_ids.end())
        continue;
      if (!profile.server_id.empty()) {
        auto server_idx = idx.find_server(profile.server_id);
        const auto* t =
          server_idx != std::string::npos ? idx.servers[server_idx]->find(profile.tool) : nullptr;
        if (t == nullptr
            || !decisions[mcp_begin + idx.first_tool[server_idx]
                          + static_cast<std::size_t>(t - idx.servers[server_idx]->tools.data())]
                  .allowed())
          continue;
      }
      out.profiles.push_back({profile.handle, profile.label, profile.primary_origin});
    }
  }

  // 3. and 4. The channel, caller and parent intersections; the allowed
  // tools, in the decisions' order.
  tool_set parent_tools;
  if (ctx.chan == channel::subagent && ctx.parent != nullptr) {
    parent_tools.reserve(ctx.parent->tools.size());
    for (const auto& t : ctx.parent->tools)
      parent_tools.insert({t.server_id(), t.name()});
  }
  out.tools.reserve(total);
  auto next_selected = selected.begin();
  auto keep = [&](std::size_t decision_idx, const internal_tool* internal, bool qualifying_exa,
                  risk_level risk, bool read_only, bool mutating) {
    auto& d = decisions[decision_idx];
    if (!d.allowed())
      return;
    if (auto drop = channel_filter(ctx, out.caller, parent_tools, {d, internal, qualifying_exa}))
      d.why = *drop;
    if (!d.allowed())
      return;
    std::string_view route_action;
    while (next_selected != selected.end() && next_selected->first < decision_idx)
      ++next_selected;
    if (next_selected != selected.end() && next_selected->first == decision_idx)
      route_action = next_selected->second;
    out.tools.emplace_back(borrowed_text, d.origin, d.tool(), d.server_id(), risk, read_only,
                           mutating, route_action);
  };
  std::size_t decision_idx = 0;
  for (const auto& t : registry)
    keep(decision_idx++, &t, false, t.risk, t.read_only, t.mutating);
  for (std::size_t phone_idx = 0; phone_idx < phones.size(); ++phone_idx)
    keep(decision_idx++, nullptr, false, risk_level::medium, false, true);
  for (const auto& server : idx.servers)
    for (const auto& t : server->tools)
      keep(decision_idx++, nullptr, server->qualifying_exa && t.name == web_search_exa, t.risk,
           t.read_only, !t.read_only);
  return out;
}

effective_policy compose_policy(const tenant_state& tenant, const run_context& ctx,
                                int64_t now_us) {
  return compose_policy(policy_index{tenant}, ctx, now_us);
}

std::vector<route_explanation> explain_routes(const policy_index& index,
                                              const std::string& agent_id) {
  const auto& idx = *index.parts_;
  agent_grants no_grants;
  auto agent = idx.agents.find(agent_id);
  const auto& grants = agent != idx.agents.end() ? agent->second : no_grants;
  std::vector<policy_decision> decisions;
  decisions.reserve(internal_tools().size() + idx.phones.size() + idx.tool_count);
  auto mcp_begin = decide_base(idx, grants, decisions);
  std::vector<route_explanation> out;
  const auto& groups = route_groups();
  for (std::size_t group_idx = 0; group_idx < groups.size(); ++group_idx) {
    const auto& group = groups[group_idx];
    const auto* configured = find_route(idx.routes, agent_id, group.action);
    auto members = group_members(idx, group_idx, mcp_begin);
    // (whether each member is authorised before the route decides)
    std::vector<bool> available;
    for (const auto& [decision_idx, member] : members)
      available.push_back(decisions[decision_idx].allowed());
    auto chosen = resolve_group(members, configured, decisions);
    route_explanation e;
    e.resolved.action = std::string{group.action};
    e.resolved.mode = configured != nullptr ? configured->mode : route_mode::automatic;
    if (configured != nullptr && configured->mode == route_mode::pinned) {
      e.pinned_server_id = configured->pinned_server_id;
      e.pinned_tool = configured->pinned_tool;
    }
    if (chosen != std::string::npos) {
      e.resolved.server_id = std::string{decisions[chosen].server_id()};
      e.resolved.tool = std::string{decisions[chosen].tool()};
    }
    // Candidates in the order automatic selection prefers them.
    std::vector<std::size_t> order(members.size());
    for (std::size_t member_idx = 0; member_idx < members.size(); ++member_idx)
      order[member_idx] = member_idx;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
      return std::make_pair(members[x].second, decisions[members[x].first].server_id())
             < std::make_pair(members[y].second, decisions[members[y].first].server_id());
    });
    for (auto member_idx : order) {
      const auto& d = decisions[members[member_idx].first];
      e.candidates.push_back(
        {std::string{d.server_id()}, std::string{d.tool()}, available[member_idx], d.why});
    }
    out.push_back(std::move(e));
  }
  return out;
}

policy_decision check_grant(const tenant_state& tenant, std::string_view agent_id,
                            std::string_view server_id, std::string_view tool) {
  // The agent's explicit decision for a key: the last one wins.
  auto explicit_decision = [&](std::string_view sid,
                               std::string_view name) -> std::optional<grant_decision> {
    std::optional<grant_decision> found;
    for (const auto& g : tenant.grants)
      if (g.agent_id == agent_id && g.server_id == sid && g.tool == name)
        found = g.decision;
    return found;
  };
  if (server_id.empty()) {
    if (const auto* t = find_internal_tool(tool))
      return {tool_origin::internal, tool, server_id,
              internal_reason(explicit_decision({}, tool), *t)};
    return {tool_origin::internal, tool, server_id, reason::unknown_tool};
  }
  if (auto server = tenant.servers.find(std::string{server_id}); server != tenant.servers.end()) {
    auto indexed = index_server(server->second);
    return {tool_origin::mcp, tool, server_id,
            mcp_reason(*indexed, indexed->find(tool), explicit_decision(server_id, tool))};
  }
  for (const auto& phone : callable_phones(tenant.phones))
    if (phone.integration_id == server_id && phone.place_call_tool == tool) {
      const auto* contacts = find_internal_tool(internal_names::search_contacts);
      bool contacts_allowed = contacts != nullptr
                              && is_allow(internal_reason(
                                explicit_decision({}, internal_names::search_contacts), *contacts));
      return {tool_origin::integration, tool, server_id,
              integration_reason(phone, explicit_decision(server_id, tool), contacts_allowed)};
    }
  return {tool_origin::internal, tool, server_id, reason::foreign_server};
}

policy_decision check_call(const effective_policy& snapshot, std::string_view server_id,
                           std::string_view tool) {
  // The answer owns its text: it may outlive the snapshot.
  for (const auto& d : snapshot.decisions)
    if (d.server_id() == server_id && d.tool() == tool)
      return {d.origin, d.tool(), d.server_id(), d.allowed() ? d.why : reason::not_in_snapshot};
  return {server_id.empty() ? tool_origin::internal : tool_origin::mcp, tool, server_id,
          reason::not_in_snapshot};
}

} // namespace voxos
