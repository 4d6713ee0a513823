#include "actors/run/tool_view.hpp"

#include "config/presets.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <unordered_map>
#include <utility>

#include "actors/run/tool_catalog.hpp"
#include "config/internal_tools.hpp"
#include "config/presets.hpp"

namespace voxos {

namespace {

constexpr std::size_t max_name_bytes = 64;
constexpr std::size_t max_slug_bytes = 16;

// -- names ---------------------------------------------------------------------

bool name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
         || ch == '_' || ch == '-';
}

/// `name` in the model-facing character set, at most 64 bytes, never empty.
std::string sanitize_name(std::string_view name) {
  std::string out;
  out.reserve(std::min(name.size(), max_name_bytes));
  for (char ch : name.substr(0, max_name_bytes))
    out.push_back(name_char(ch) ? ch : '_');
  if (out.empty())
    out = "tool";
  return out;
}

/// A short lowercase label: [a-z0-9_], no leading, trailing or doubled '_'.
std::string slug(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (out.size() >= max_slug_bytes)
      break;
    if (ch >= 'A' && ch <= 'Z')
      ch = static_cast<char>(ch - 'A' + 'a');
    bool keep = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (keep)
      out.push_back(ch);
    else if (!out.empty() && out.back() != '_')
      out.push_back('_');
  }
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  return out.empty() ? std::string{"srv"} : out;
}

/// 6 hex digits of FNV-1a 64 over `text`: stable across builds and machines.
std::string short_hash(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[8];
  std::snprintf(buf, sizeof buf, "%06x", static_cast<unsigned>(h >> 40));
  return buf;
}

/// `base` cut so that base + suffix fits the name limit.
std::string fit(const std::string& base, const std::string& suffix) {
  auto keep = max_name_bytes > suffix.size() ? max_name_bytes - suffix.size() : 0;
  return base.substr(0, keep) + suffix;
}

/// The model-facing name of an external entry at disambiguation `level`.
std::string name_at(const view_entry& e, const std::string& base, int level, std::size_t ordinal) {
  auto server = "__" + e.server_slug;
  switch (level) {
  case 0:
    return base;
  case 1:
    return fit(base, server);
  case 2:
    return fit(base, server + "_" + short_hash(e.server_id));
  case 3: {
    // Two tools of one server whose names sanitise alike ("a.b", "a_b").
    std::string identity = e.server_id;
    identity.push_back('\0');
    identity += e.tool;
    return fit(base, server + "_" + short_hash(identity));
  }
  default:
    return fit(base, server + "_" + short_hash(e.server_id) + "_" + std::to_string(ordinal) + "_"
                       + std::to_string(level));
  }
}

bool is_catalog_tool_name(std::string_view name) {
  return name == internal_names::tool_search || name == internal_names::tool_describe
         || name == internal_names::tool_call;
}

/// Gives every external entry (index >= first_external) a name unique
/// among all entries; entries before first_external keep theirs.
void assign_external_names(std::vector<view_entry>& entries, std::size_t first_external) {
  // Names are views into `entries` (internal), `bases` or `suffixed`, all
  // stable while this runs; `uses` counts them once and is kept current.
  std::vector<std::string> bases(entries.size());
  std::deque<std::string> suffixed;
  std::vector<std::string_view> names(entries.size());
  std::vector<int> levels(entries.size(), 0);
  std::unordered_map<std::string_view, std::size_t> uses;
  uses.reserve(entries.size() * 2 + 3);
  for (std::size_t idx = 0; idx < entries.size(); ++idx) {
    if (idx < first_external) {
      names[idx] = entries[idx].model_name;
    } else {
      bases[idx] = sanitize_name(entries[idx].tool);
      names[idx] = bases[idx];
    }
    ++uses[names[idx]];
  }
  for (auto reserved :
       {internal_names::tool_search, internal_names::tool_describe, internal_names::tool_call})
    uses[reserved] += 2; // never available to an external tool
  // Every external entry whose name is shared (or reserved) moves one level
  // up, all at once so no entry wins by position; repeat until none is.
  std::vector<std::size_t> clashing;
  for (int round = 0; round < 16; ++round) {
    clashing.clear();
    for (auto idx = first_external; idx < entries.size(); ++idx)
      if (uses[names[idx]] > 1)
        clashing.push_back(idx);
    if (clashing.empty())
      break;
    for (auto idx : clashing) {
      --uses[names[idx]];
      ++levels[idx];
      suffixed.push_back(name_at(entries[idx], bases[idx], levels[idx], idx));
      names[idx] = suffixed.back();
      ++uses[names[idx]];
    }
  }
  for (auto idx = first_external; idx < entries.size(); ++idx)
    entries[idx].model_name = levels[idx] == 0 ? std::move(bases[idx]) : std::string{names[idx]};
}

// -- definitions ---------------------------------------------------------------

/// A schema the view can show: JSON object text (checked cheaply; discovery
/// parsed it when it filled the cache).
bool looks_like_object(std::string_view schema) {
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; };
  std::size_t first = 0;
  auto last = schema.size();
  while (first < last && space(schema[first]))
    ++first;
  while (last > first && space(schema[last - 1]))
    --last;
  return last - first >= 2 && schema[first] == '{' && schema[last - 1] == '}';
}

/// The cached definitions of the snapshot's servers; the snapshot lists
/// tools grouped by server, so the last server found is remembered.
class definition_finder {
public:
  /// The definition of `tool` on `server_id`, or nullptr. The first
  /// definition of a name wins, as in the policy's lookup.
  const tool_definition* find(const tenant_state& tenant, const std::string& server_id,
                              std::string_view tool) {
    if (server_ == nullptr || server_->server_id != server_id) {
      auto it = tenant.servers.find(server_id);
      server_ = it != tenant.servers.end() ? &it->second : nullptr;
    }
    if (server_ == nullptr)
      return nullptr;
    for (const auto& def : server_->cached_tools)
      if (def.name == tool)
        return &def;
    return nullptr;
  }

  /// The server of the last find(); precondition: it returned a definition.
  const mcp_server_record& server() const noexcept { return *server_; }

private:
  const mcp_server_record* server_ = nullptr;
};

std::string_view provider_name(phone_provider p) {
  switch (p) {
  case phone_provider::twilio:
    return "Twilio";
  case phone_provider::telnyx:
    return "Telnyx";
  }
  return "phone";
}

const phone_integration* find_phone(const tenant_state& tenant, std::string_view id) {
  for (const auto& phone : tenant.phones)
    if (phone.integration_id == id)
      return &phone;
  return nullptr;
}

constexpr std::string_view place_call_schema = R"json({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "contact_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "A contact ID returned by search_contacts."},
    "objective": {"type": "string", "minLength": 10, "maxLength": 1000, "description": "The complete purpose of the call, safe to share with the person called."}
  },
  "required": ["contact_id", "objective"],
  "additionalProperties": false
})json";

std::string place_call_description(std::string_view provider) {
  return "Place a phone call through the connected " + std::string{provider}
         + " integration to one saved contact. Search contacts first and pass the returned "
           "contact ID; never a raw number. Give a complete, caller-safe objective: it becomes "
           "the call's context and grants no further access.";
}

std::string id_schema_property() {
  return R"("id": {"type": "string", "pattern": "^)" + std::string{catalog_limits::id_prefix}
         + "[A-Za-z0-9_-]{"
         + std::to_string(catalog_limits::id_length - catalog_limits::id_prefix.size())
         + R"(}$", "description": "A result id from tool_search."})";
}

/// The three catalog tools, in the order the model sees them.
std::vector<view_entry> catalog_tools(std::size_t catalog_size, const view_options& opts) {
  std::vector<view_entry> out(3);
  auto& search = out[0];
  search.model_name = search.tool = std::string{internal_names::tool_search};
  search.role = view_role::catalog_search;
  search.description =
    "Search this run's catalog of " + std::to_string(catalog_size)
    + " further authorised tools that are not listed directly. Returns result ids, names and "
      "short descriptions, best match first. Use tool_describe for a result's input schema, then "
      "tool_call. Prefer a directly listed tool when one fits.";
  search.input_schema = R"json({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": )json"
                        + std::to_string(catalog_limits::max_query_bytes)
                        + R"json(, "description": "Words for the capability you need."},
    "limit": {"type": "integer", "minimum": 1, "maximum": )json"
                        + std::to_string(catalog_limits::max_limit) + R"json(, "default": )json"
                        + std::to_string(catalog_limits::default_limit) + R"json(}
  },
  "required": ["query"],
  "additionalProperties": false
})json";
  auto& describe = out[1];
  describe.model_name = describe.tool = std::string{internal_names::tool_describe};
  describe.role = view_role::catalog_describe;
  describe.description = "Return the full description and input schema of one tool_search result.";
  describe.input_schema = R"json({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    )json" + id_schema_property()
                          + R"json(
  },
  "required": ["id"],
  "additionalProperties": false
})json";
  auto& call = out[2];
  call.model_name = call.tool = std::string{internal_names::tool_call};
  call.role = view_role::catalog_call;
  call.description =
    "Call one tool_search result with arguments matching the schema tool_describe returned. "
    "The arguments are validated against that schema before the tool runs.";
  call.input_schema = R"json({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    )json" + id_schema_property()
                      + R"json(,
    "arguments": {"type": "object", "description": "The target tool's arguments."}
  },
  "required": ["id", "arguments"],
  "additionalProperties": false
})json";
  for (auto& e : out) {
    e.origin = tool_origin::internal;
    e.risk = risk_level::low;
    e.schema_tokens = estimate_schema_tokens(e.model_name, e.description, e.input_schema, opts);
  }
  return out;
}

} // namespace

const view_entry* tool_view::find_direct(std::string_view model_name) const {
  for (const auto& e : direct)
    if (e.model_name == model_name)
      return &e;
  return nullptr;
}

std::size_t estimate_schema_tokens(std::string_view name, std::string_view description,
                                   std::string_view input_schema,
                                   const view_options& opts) noexcept {
  auto divisor = std::max<std::size_t>(opts.bytes_per_token, 1);
  auto bytes = name.size() + description.size() + input_schema.size();
  return (bytes + divisor - 1) / divisor;
}

tool_view compose_view(const effective_policy& snapshot, const tenant_state& tenant,
                       const view_options& opts, view_kind kind) {
  tool_view out;
  out.kind = kind;

  // Internal tools first, then external ones; each from its definition.
  std::vector<view_entry> entries;
  entries.reserve(snapshot.tools.size());
  for (const auto& t : snapshot.tools) {
    if (t.origin != tool_origin::internal)
      continue;
    // The catalog tool names belong to the view.
    if (is_catalog_tool_name(t.name))
      continue;
    const auto* def = find_internal_tool(t.name);
    if (def == nullptr || !looks_like_object(def->input_schema))
      continue;
    view_entry e;
    e.model_name = e.tool = t.name;
    e.description = def->description;
    e.input_schema = def->input_schema;
    e.origin = tool_origin::internal;
    e.route_action = t.route_action;
    e.risk = t.risk;
    e.read_only = t.read_only;
    entries.push_back(std::move(e));
  }
  auto first_external = entries.size();
  definition_finder definitions;
  for (const auto& t : snapshot.tools) {
    if (t.origin == tool_origin::internal)
      continue;
    view_entry e;
    e.origin = t.origin;
    e.server_id = t.server_id;
    e.tool = t.name;
    e.route_action = t.route_action;
    e.risk = t.risk;
    e.read_only = t.read_only;
    if (t.origin == tool_origin::integration) {
      const auto* phone = find_phone(tenant, t.server_id);
      if (phone == nullptr)
        continue;
      e.server_slug = slug(provider_name(phone->provider));
      e.description = place_call_description(provider_name(phone->provider));
      e.input_schema = std::string{place_call_schema};
    } else {
      const auto* def = definitions.find(tenant, t.server_id, t.name);
      // Never an invented schema: no cached definition, no entry.
      if (def == nullptr || !looks_like_object(def->input_schema))
        continue;
      const auto& s = definitions.server();
      e.server_slug = slug(!s.variant.empty()     ? std::string_view{s.variant}
                           : !s.preset_id.empty() ? std::string_view{s.preset_id}
                                                  : std::string_view{s.label});
      e.title = def->title;
      e.description = def->description;
      if (const auto* p = find_preset(s.preset_id))
        if (const auto* curated = find_preset_tool(*p, e.tool);
            curated != nullptr && !curated->guidance.empty())
          e.description += (e.description.empty() ? "" : "\n\n") + curated->guidance;
      e.input_schema = def->input_schema;
    }
    entries.push_back(std::move(e));
  }
  for (auto& e : entries)
    e.schema_tokens = estimate_schema_tokens(e.tool, e.description, e.input_schema, opts);
  assign_external_names(entries, first_external);

  // The authorised external catalog decides the mode.
  std::size_t long_tail = 0;
  for (auto idx = first_external; idx < entries.size(); ++idx) {
    ++out.external_tools;
    out.external_schema_tokens += entries[idx].schema_tokens;
    if (entries[idx].route_action.empty())
      ++long_tail;
  }
  out.catalog_mode = kind == view_kind::text && long_tail > 0
                     && (out.external_tools >= opts.catalog_min_tools
                         || out.external_schema_tokens >= opts.catalog_min_schema_tokens);

  // Split: internal and route-selected stay direct; the long tail goes behind
  // the catalog tools, ordered by model name (indices sorted, entries moved once).
  std::vector<std::size_t> tail;
  if (out.catalog_mode) {
    tail.reserve(long_tail);
    for (auto idx = first_external; idx < entries.size(); ++idx)
      if (entries[idx].route_action.empty())
        tail.push_back(idx);
    std::sort(tail.begin(), tail.end(), [&](std::size_t x, std::size_t y) {
      return entries[x].model_name < entries[y].model_name;
    });
  }
  out.direct.reserve(entries.size() - tail.size() + (out.catalog_mode ? 3 : 0));
  for (std::size_t idx = 0; idx < first_external; ++idx)
    out.direct.push_back(std::move(entries[idx]));
  if (out.catalog_mode)
    for (auto& e : catalog_tools(long_tail, opts))
      out.direct.push_back(std::move(e));
  for (auto idx = first_external; idx < entries.size(); ++idx)
    if (!out.catalog_mode || !entries[idx].route_action.empty())
      out.direct.push_back(std::move(entries[idx]));
  out.catalog.reserve(tail.size());
  for (auto idx : tail)
    out.catalog.push_back(std::move(entries[idx]));
  return out;
}

} // namespace voxos
