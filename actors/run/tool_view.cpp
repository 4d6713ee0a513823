#include "actors/run/tool_view.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>

#include "actors/run/tool_catalog.hpp"
#include "actors/run/tool_names.hpp"
#include "actors/run/view_naming.hpp"
#include "config/internal_tools.hpp"
#include "config/presets.hpp"

namespace voxos {

namespace {

using view_naming::append_short_hash;
using view_naming::name_buffer;
using view_naming::sanitize_name;
using view_naming::slug;

// -- names ---------------------------------------------------------------------

bool is_catalog_tool_name(std::string_view name) {
  return name == internal_names::tool_search || name == internal_names::tool_describe
         || name == internal_names::tool_call;
}

// -- entry text ------------------------------------------------------------------

} // namespace

/// A server's (or phone integration's) id and slug, and what its entries'
/// names are suffixed with on a clash, computed once per view and server.
struct view_server_text {
  std::string server_id;
  std::string slug;
  std::string suffix;        ///< level 1: "__<slug>"
  std::string hashed_suffix; ///< level 2: "__<slug>_<6 hex of FNV-1a(server id)>"
  /// A route action no route group has (an entry composed for it), or empty.
  std::string route_action;

  view_server_text() = default;
  view_server_text(std::string id, std::string label)
      : server_id(std::move(id)), slug(std::move(label)) {
    suffix = "__" + slug;
    name_buffer hashed;
    hashed.append(suffix);
    hashed.append("_");
    append_short_hash(hashed, server_id, nullptr);
    hashed_suffix = std::string{hashed.view()};
  }
};

namespace {

/// The model-facing name of an external tool at disambiguation `level`
/// (>= 1): `base` cut so that base + suffix fits the name limit. `tool()`
/// answers the tool's own name (read only at level 3).
template <class Tool>
void name_at(const view_server_text& server, Tool&& tool, std::string_view base, int level,
             std::size_t ordinal, name_buffer& out) {
  name_buffer suffix;
  if (level == 1) {
    suffix.append(server.suffix);
  } else if (level == 3) {
    // Two tools of one server whose names sanitise alike ("a.b", "a_b").
    suffix.append(server.suffix);
    suffix.append("_");
    std::string_view name = tool();
    append_short_hash(suffix, server.server_id, &name);
  } else {
    suffix.append(server.hashed_suffix);
    if (level >= 4)
      suffix.append("_" + std::to_string(ordinal) + "_" + std::to_string(level));
  }
  view_naming::append_suffixed(out, base, suffix.view());
}

/// What the view shares for the entries of one server: its id and slug,
/// and its tool cache (the definitions the entries point into).
struct view_server {
  view_server_text text;
  tool_cache cache;
  const preset* curated = nullptr;
  /// Its tools' ranks in the tenant's name order, if computed from this very
  /// cache and slug; else nullptr.
  const tool_name_order::server_names* ranks = nullptr;
};

/// One entry's text composed for this view: an integration's place-call
/// tool; an MCP tool with curated guidance, a sanitised name or a route
/// action no route group has.
struct composed_entry {
  tool_definition def;
  view_server_text server;
  std::string model_name;
};

/// An external entry before it is built: what it shows, in 32 bytes (its
/// model-facing name is in its name_key). Entries are named and ordered as
/// these and their keys, then each is built once, in its place.
struct external_tool {
  const tool_definition* def = nullptr;
  const view_server_text* server = nullptr;
  std::size_t schema_tokens = 0;
  uint8_t route = 0; ///< 0: none; g + 1: route_groups()[g]; custom_route: server->route_action
  tool_origin origin = tool_origin::mcp;
  risk_level risk = risk_level::medium;
  bool read_only = false;
  /// The rank of its level-1 name in the tenant's name order, or unranked
  /// (then looked up if it is ever composed).
  uint32_t suffixed_rank = unranked;

  static constexpr uint8_t custom_route = 0xff;
  static constexpr uint32_t unranked = UINT32_MAX;

  std::string_view route_action() const noexcept {
    if (route == 0)
      return {};
    if (route == custom_route)
      return server->route_action;
    return route_groups()[route - 1].action;
  }
};

/// The route of a snapshot tool as external_tool::route; custom_route when
/// no route group has its action.
uint8_t route_of(std::string_view action) {
  if (action.empty())
    return 0;
  const auto& groups = route_groups();
  for (std::size_t group = 0; group < groups.size() && group + 1 < external_tool::custom_route;
       ++group)
    if (groups[group].action == action)
      return static_cast<uint8_t>(group + 1);
  return external_tool::custom_route;
}

/// The catalog tools' definitions of one view.
struct catalog_text {
  std::array<tool_definition, 3> defs;
};

/// The internal tools' definitions as views show them, in registry order
/// (built once, like the registry itself).
const std::vector<tool_definition>& internal_definitions() {
  static const std::vector<tool_definition> defs = [] {
    std::vector<tool_definition> out;
    for (const auto& t : internal_tools()) {
      tool_definition def;
      def.name = t.name;
      def.description = t.description;
      def.input_schema = t.input_schema;
      out.push_back(std::move(def));
    }
    return out;
  }();
  return defs;
}

/// The static text of a route action, or empty if no route group has it.
std::string_view static_route_action(std::string_view action) {
  for (const auto& group : route_groups())
    if (group.action == action)
      return group.action;
  return {};
}

// -- names ---------------------------------------------------------------------

/// Names composed for one view (suffixed on a clash).
class view_names {
public:
  /// A copy of `text` that lives as long as this block.
  std::string_view add(std::string_view text) {
    if (chunks_.empty() || used_ + text.size() > chunk_bytes) {
      chunks_.push_back(std::make_unique<char[]>(std::max(chunk_bytes, text.size())));
      used_ = 0;
    }
    auto* at = chunks_.back().get() + used_;
    std::copy_n(text.data(), text.size(), at);
    used_ += text.size();
    return {at, text.size()};
  }

private:
  static constexpr std::size_t chunk_bytes = 4096;
  std::vector<std::unique_ptr<char[]>> chunks_;
  std::size_t used_ = 0;
};

/// A model-facing name as naming and ordering compare it: its rank in the
/// tenant's name order (tool_names.hpp; 0 for every name without one), then,
/// only between names of one even rank, its bytes. Orders as the names' bytes
/// do.
struct name_key {
  const char* data = nullptr;
  uint32_t size = 0;
  uint32_t entry = 0; ///< the external entry it names (unused for fixed names)
  uint32_t rank = 0;

  name_key() = default;
  name_key(std::string_view text, uint32_t entry_idx, uint32_t name_rank)
      : data(text.data()), size(static_cast<uint32_t>(text.size())), entry(entry_idx),
        rank(name_rank) {}

  std::string_view name() const noexcept { return {data, size}; }

  friend bool operator<(const name_key& x, const name_key& y) noexcept {
    if (x.rank != y.rank)
      return x.rank < y.rank;
    return (x.rank & 1) == 0 && x.name() < y.name();
  }
  bool same_name(const name_key& other) const noexcept {
    return rank == other.rank && ((rank & 1) != 0 || name() == other.name());
  }
};

/// Sorts `keys` by merging its ascending runs pairwise (a snapshot lists each
/// server's tools by name, so a view's names come in a few long runs);
/// `scratch` is working space.
void sort_runs(std::vector<name_key>& keys, std::vector<name_key>& scratch) {
  std::vector<std::size_t> bounds{0};
  for (std::size_t idx = 1; idx < keys.size(); ++idx)
    if (keys[idx] < keys[idx - 1])
      bounds.push_back(idx);
  bounds.push_back(keys.size());
  std::vector<std::size_t> next;
  auto at = [&keys](std::size_t idx) { return keys.begin() + static_cast<std::ptrdiff_t>(idx); };
  while (bounds.size() > 2) {
    // Merge runs pairwise, left to right: the output is appended in order.
    scratch.clear();
    scratch.reserve(keys.size());
    next.assign(1, 0);
    std::size_t run = 0;
    for (; run + 2 < bounds.size(); run += 2) {
      std::merge(at(bounds[run]), at(bounds[run + 1]), at(bounds[run + 1]), at(bounds[run + 2]),
                 std::back_inserter(scratch));
      next.push_back(bounds[run + 2]);
    }
    if (run + 1 < bounds.size()) { // an odd run out
      std::copy(at(bounds[run]), at(bounds[run + 1]), std::back_inserter(scratch));
      next.push_back(bounds[run + 1]);
    }
    keys.swap(scratch);
    bounds.swap(next);
  }
}

/// Sorts `keys`: when every name has a place in an order of `places` names
/// and they are not far fewer than the places, by counting places (one pass,
/// no comparison; equal names keep their entry order); else by sort_runs
/// (few keys, or keys in a few sorted runs, as the names composed in a round).
void sort_names(std::vector<name_key>& keys, std::vector<name_key>& scratch, std::size_t places) {
  bool placed =
    std::all_of(keys.begin(), keys.end(), [](const name_key& key) { return (key.rank & 1) != 0; });
  if (!placed || places > 4 * keys.size()) {
    sort_runs(keys, scratch);
    return;
  }
  std::vector<uint32_t> first(places, 0); // counts, then where each place starts
  for (const auto& key : keys)
    ++first[key.rank >> 1];
  uint32_t at = 0;
  for (auto& place : first) // (the sum in a register: no store to reload)
    at += std::exchange(place, at);
  scratch.resize(keys.size());
  for (const auto& key : keys)
    scratch[first[key.rank >> 1]++] = key;
  keys.swap(scratch);
}

/// The token rule's ceil(bytes / bytes_per_token), shifting instead of
/// dividing when bytes_per_token is a power of two (the default 4).
class token_rule {
public:
  explicit token_rule(const view_options& opts)
      : divisor_(std::max<std::size_t>(opts.bytes_per_token, 1)) {
    if ((divisor_ & (divisor_ - 1)) == 0)
      while ((std::size_t{1} << shift_) < divisor_)
        ++shift_;
    else
      shift_ = -1;
  }

  std::size_t operator()(std::size_t bytes) const noexcept {
    return shift_ >= 0 ? (bytes + divisor_ - 1) >> shift_ : (bytes + divisor_ - 1) / divisor_;
  }

private:
  std::size_t divisor_;
  int shift_ = 0;
};

// -- definitions ---------------------------------------------------------------

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

/// The catalog tools' definitions, in the order the model sees them.
std::shared_ptr<const catalog_text> catalog_tool_text(std::size_t catalog_size) {
  auto out = std::make_shared<catalog_text>();
  auto& search = out->defs[0];
  auto& describe = out->defs[1];
  auto& call = out->defs[2];
  search.name = std::string{internal_names::tool_search};
  describe.name = std::string{internal_names::tool_describe};
  call.name = std::string{internal_names::tool_call};
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
  return out;
}

} // namespace

// -- composition ---------------------------------------------------------------

/// Builds view entries: the one friend of view_entry.
struct view_composer {
  static view_entry make(std::string_view model_name, const tool_definition& def,
                         const view_server_text* server, std::string_view route_action) {
    view_entry out;
    out.model_name_ = model_name;
    out.def_ = &def;
    out.server_ = server;
    out.route_action_ = route_action;
    return out;
  }

  /// An external entry, built in place at the end of `out`.
  static void build(std::vector<view_entry>& out, const external_tool& x, const name_key& name) {
    auto& e = out.emplace_back();
    e.model_name_ = name.name();
    e.def_ = x.def;
    e.server_ = x.server;
    e.route_action_ = x.route_action();
    e.schema_tokens = x.schema_tokens;
    e.origin = x.origin;
    e.risk = x.risk;
    e.read_only = x.read_only;
  }

  /// An internal tool's entry: the registry's static text.
  static view_entry internal(const tool_definition& def, const snapshot_tool& t,
                             const view_options& opts, tool_view& view) {
    auto route_action = static_route_action(t.route_action());
    if (route_action.empty() && !t.route_action().empty()) {
      // A route action no route group has, kept by a block of its own.
      auto composed = std::make_shared<composed_entry>();
      composed->server.route_action = std::string{t.route_action()};
      route_action = composed->server.route_action;
      view.shared_text.push_back(std::move(composed));
    }
    auto out = make(def.name, def, nullptr, route_action);
    out.origin = tool_origin::internal;
    out.risk = t.risk;
    out.read_only = t.read_only;
    out.schema_tokens = estimate_schema_tokens(def.name, def.description, def.input_schema, opts);
    return out;
  }

  /// The three catalog tools, in the order the model sees them.
  static std::array<view_entry, 3> catalog_tools(std::size_t catalog_size, const view_options& opts,
                                                 tool_view& view) {
    auto texts = catalog_tool_text(catalog_size);
    constexpr std::array<view_role, 3> roles{view_role::catalog_search, view_role::catalog_describe,
                                             view_role::catalog_call};
    std::array<view_entry, 3> out;
    for (std::size_t idx = 0; idx < out.size(); ++idx) {
      const auto& def = texts->defs[idx];
      auto& e = out[idx] = make(def.name, def, nullptr, {});
      e.role = roles[idx];
      e.origin = tool_origin::internal;
      e.risk = risk_level::low;
      e.schema_tokens = estimate_schema_tokens(def.name, def.description, def.input_schema, opts);
    }
    view.shared_text.push_back(std::move(texts));
    return out;
  }
};

namespace {

/// Gives every external tool (`ext`, whose names `names` holds in entry
/// order) a name unique among all entries; `internal` keep theirs, and the
/// catalog tool names are reserved. Answers the external tools by final name
/// (`names`, sorted) and the block of the names composed on a clash, or
/// nullptr when every name is its base name.
///
/// Each round renames every external tool whose name is shared (with another
/// external tool, an internal one or a reserved name), all at once so no
/// entry wins by position, until none is (at most 16 rounds). Done on sorted
/// names: the first round reads the clashes off the order (equal names are
/// adjacent; a fixed name is marked by its place in `order`) and keeps the
/// unique ones in place, settled. A later round can only find a clash that
/// involves a name just composed, so it sorts those and looks each up among
/// the fixed names and the settled ones (pulling a settled one it meets back
/// in). The settled names are merged once at the end.
///
/// Names compare by their rank in `order` (name_key): with the tenant's
/// current order every base and level-1 name has its place, so the first
/// round is a counting pass over places and the rest compares integers; a
/// name without a place (composed past level 1, or of a server the order is
/// stale for) is ranked by one search of the order and compared by its bytes
/// only against names of its rank. With an empty order every rank is 0 and
/// every comparison is of bytes: the same names, slower.
std::shared_ptr<const void> assign_external_names(const std::vector<view_entry>& internal,
                                                  const std::vector<external_tool>& ext,
                                                  const tool_name_order& order,
                                                  std::vector<name_key>& names) {
  // The fixed names, each ranked once; those the order holds are marked by
  // their place, so a held name is checked against them without a search.
  std::vector<name_key> fixed;
  fixed.reserve(internal.size() + 3);
  for (const auto& e : internal)
    fixed.emplace_back(e.model_name(), 0, order.rank_of(e.model_name()));
  for (auto reserved :
       {internal_names::tool_search, internal_names::tool_describe, internal_names::tool_call})
    fixed.emplace_back(reserved, 0, order.rank_of(reserved)); // never for an external tool
  std::sort(fixed.begin(), fixed.end());
  // Tables by place, when the view's names are not far fewer than the places
  // (else a search of a few integers costs less than clearing them).
  bool by_place = order.size() <= 4 * ext.size();
  std::vector<uint8_t> fixed_place(by_place ? order.size() : 0, 0);
  for (const auto& key : fixed)
    if (by_place && (key.rank & 1) != 0)
      fixed_place[key.rank >> 1] = 1;
  auto is_fixed = [&fixed, &fixed_place, by_place](const name_key& key) {
    if (by_place && (key.rank & 1) != 0) // a held name equals only a fixed name of its rank
      return fixed_place[key.rank >> 1] != 0;
    auto at = std::lower_bound(fixed.begin(), fixed.end(), key);
    return at != fixed.end() && at->same_name(key);
  };
  std::vector<name_key> scratch;
  sort_names(names, scratch, order.size());

  // Round 0: runs of equal names out to `clashing`, the rest kept in place.
  std::vector<name_key> clashing;
  std::size_t kept = 0;
  for (std::size_t first = 0; first < names.size();) {
    auto last = first + 1;
    while (last < names.size() && names[last].same_name(names[first]))
      ++last;
    bool shared = last - first > 1 || is_fixed(names[first]);
    for (auto idx = first; idx < last; ++idx)
      if (shared)
        clashing.push_back(names[idx]);
      else
        names[kept++] = names[idx];
    first = last;
  }
  if (clashing.empty())
    return nullptr; // every name is its base name: nothing composed
  names.resize(kept);

  // The settled names: `names` (base names), then one sorted chunk per
  // round. A settled name met again by a composed one is pulled back into
  // the clash and its key here marked dead. A live settled name is unique,
  // so one with a place in the order is also found by its place.
  constexpr uint32_t dead = UINT32_MAX;
  std::vector<name_key*> settled_at(by_place ? order.size() : 0, nullptr);
  auto place_settled = [&settled_at, by_place](std::vector<name_key>& chunk) {
    for (auto& key : chunk) // (chunk buffers never move: chunks are moved whole)
      if (by_place && (key.rank & 1) != 0)
        settled_at[key.rank >> 1] = &key;
  };
  place_settled(names);
  auto block = std::make_shared<view_names>();
  std::vector<std::string_view> bases(ext.size());
  for (const auto& key : names)
    bases[key.entry] = key.name();
  for (const auto& key : clashing)
    bases[key.entry] = key.name();
  std::vector<int> levels(ext.size(), 0);
  std::vector<std::vector<name_key>> chunks;
  std::vector<name_key> next;
  std::vector<name_key> settling;
  // Pulls every settled name equal to `key` into `next`; answers how many.
  auto pull_settled = [&](const name_key& key) {
    if (by_place && (key.rank & 1) != 0) { // equal names share the place: no search
      auto*& at = settled_at[key.rank >> 1];
      if (at == nullptr || at->entry == dead)
        return 0;
      next.push_back(*at);
      at->entry = dead;
      at = nullptr;
      return 1;
    }
    int found = 0;
    auto search = [&](std::vector<name_key>& chunk) {
      auto at = std::lower_bound(chunk.begin(), chunk.end(), key);
      for (; at != chunk.end() && at->same_name(key); ++at)
        if (at->entry != dead) {
          next.push_back(*at);
          at->entry = dead;
          ++found;
        }
    };
    search(names);
    for (auto& chunk : chunks)
      search(chunk);
    return found;
  };
  for (int round = 0; round < 16 && !clashing.empty(); ++round) {
    // Rename every clashing one a level up: base cut, "__<slug>", then hashes.
    for (auto& key : clashing) {
      const auto& x = ext[key.entry];
      name_buffer name;
      auto level = ++levels[key.entry];
      name_at(
        *x.server, [&x] { return std::string_view{x.def->name}; }, bases[key.entry], level,
        internal.size() + key.entry, name);
      auto rank = level == 1 && x.suffixed_rank != external_tool::unranked
                    ? x.suffixed_rank
                    : order.rank_of(name.view());
      key = name_key{block->add(name.view()), key.entry, rank};
    }
    sort_names(clashing, scratch, order.size());
    // Which of the composed names are shared now.
    next.clear();
    settling.clear();
    for (std::size_t first = 0; first < clashing.size();) {
      auto last = first + 1;
      while (last < clashing.size() && clashing[last].same_name(clashing[first]))
        ++last;
      bool shared = last - first > 1;
      shared = is_fixed(clashing[first]) || shared;
      shared = pull_settled(clashing[first]) > 0 || shared;
      auto& into = shared ? next : settling;
      into.insert(into.end(), clashing.begin() + static_cast<std::ptrdiff_t>(first),
                  clashing.begin() + static_cast<std::ptrdiff_t>(last));
      first = last;
    }
    if (!settling.empty()) {
      chunks.push_back(settling);
      place_settled(chunks.back());
    }
    clashing.swap(next);
  }
  if (!clashing.empty()) { // still shared after the last round: kept as they are
    std::sort(clashing.begin(), clashing.end());
    chunks.push_back(clashing);
  }

  // Every final name, sorted: the composed ones, then merged with the
  // remaining base names.
  scratch.clear();
  for (const auto& chunk : chunks)
    for (const auto& key : chunk)
      if (key.entry != dead)
        scratch.push_back(key);
  sort_names(scratch, next, order.size()); // (sorted chunks: runs)
  next.clear();
  next.reserve(names.size() + scratch.size());
  for (const auto& key : names)
    if (key.entry != dead)
      next.push_back(key);
  names.clear();
  names.reserve(next.size() + scratch.size());
  std::merge(next.begin(), next.end(), scratch.begin(), scratch.end(), std::back_inserter(names));
  return block;
}

} // namespace

std::string_view view_entry::server_id() const noexcept {
  return server_ != nullptr ? std::string_view{server_->server_id} : std::string_view{};
}

std::string_view view_entry::server_slug() const noexcept {
  return server_ != nullptr ? std::string_view{server_->slug} : std::string_view{};
}

const view_entry* tool_view::find_direct(std::string_view model_name) const {
  for (const auto& e : direct)
    if (e.model_name() == model_name)
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
                       const view_options& opts, view_kind kind, const tool_name_order* names_of) {
  static const tool_name_order no_order;
  const auto& order = names_of != nullptr ? *names_of : no_order;
  tool_view out;
  out.kind = kind;

  // One pass over the snapshot. Internal tools go direct, first, each from
  // its registry entry (static text). External tools, each from its
  // definition (integrations' built in, MCP tools' from their server's
  // cache, looked up by a cursor: the snapshot lists a server's tools by
  // name, as the cache does), wait as external_tool records to be named and
  // ordered. Text composed for one entry gets a block of its own.
  const auto& registry = internal_tools();
  std::vector<external_tool> ext;
  std::vector<name_key> names; // each external tool's model-facing name
  ext.reserve(snapshot.tools.size());
  names.reserve(snapshot.tools.size());
  out.shared_text.reserve(tenant.servers.size() + 2);
  token_rule tokens{opts};
  auto add = [&](const tool_definition& def, const view_server_text& server, const snapshot_tool& t,
                 std::size_t text_bytes) -> external_tool& {
    auto& x = ext.emplace_back();
    x.def = &def;
    x.server = &server;
    x.schema_tokens = tokens(text_bytes);
    x.route = route_of(t.route_action());
    x.origin = t.origin;
    x.risk = t.risk;
    x.read_only = t.read_only;
    return x;
  };
  // `ranks` and `named_idx`: the entry's cached tool's ranks, if the order has them.
  auto add_composed = [&](std::shared_ptr<composed_entry> block, const snapshot_tool& t,
                          const tool_name_order::server_names* ranks, std::size_t named_idx) {
    if (block->model_name.empty())
      block->model_name = sanitize_name(block->def.name);
    const auto& def = block->def;
    auto& x = add(def, block->server, t,
                  def.name.size() + def.description.size() + def.input_schema.size());
    if (x.route == external_tool::custom_route)
      block->server.route_action = std::string{t.route_action()};
    // The order ranks a cached tool's base name, sanitised as here.
    uint32_t rank = 0;
    if (ranks != nullptr) {
      rank = ranks->base_rank(named_idx);
      x.suffixed_rank = ranks->suffixed_rank(named_idx);
    } else {
      rank = order.rank_of(block->model_name);
    }
    names.emplace_back(block->model_name, static_cast<uint32_t>(ext.size() - 1), rank);
    out.shared_text.push_back(std::move(block));
  };
  const view_server* server = nullptr;
  std::string_view server_id; // the snapshot's text of server's id
  std::size_t cursor = 0;
  for (const auto& t : snapshot.tools) {
    if (t.origin == tool_origin::internal) {
      // The catalog tool names belong to the view.
      if (is_catalog_tool_name(t.name()))
        continue;
      const auto* def = find_internal_tool(t.name());
      if (def == nullptr || !looks_like_json_object(def->input_schema))
        continue;
      out.direct.push_back(view_composer::internal(
        internal_definitions()[static_cast<std::size_t>(def - registry.data())], t, opts, out));
      continue;
    }
    if (t.origin == tool_origin::integration) {
      const auto* phone = find_phone(tenant, t.server_id());
      if (phone == nullptr)
        continue;
      auto block = std::make_shared<composed_entry>();
      block->def.name = std::string{t.name()};
      block->def.description = place_call_description(provider_name(phone->provider));
      block->def.input_schema = std::string{place_call_schema};
      block->server =
        view_server_text{std::string{t.server_id()}, slug(provider_name(phone->provider))};
      add_composed(std::move(block), t, nullptr, 0);
      continue;
    }
    // (a snapshot composed from an index names one server by one id text)
    bool same_id =
      t.server_id().data() == server_id.data() && t.server_id().size() == server_id.size();
    if (server == nullptr || (!same_id && server->text.server_id != t.server_id())) {
      auto record = tenant.servers.find(std::string{t.server_id()});
      if (record == tenant.servers.end()) {
        server = nullptr;
        continue;
      }
      const auto& s = record->second;
      auto block = std::make_shared<view_server>();
      block->text = view_server_text{s.server_id, view_naming::server_slug(s)};
      block->cache = s.cached_tools;
      block->curated = find_preset(s.preset_id);
      block->ranks = order.server(s.server_id, block->cache, block->text.slug);
      server = block.get();
      out.shared_text.push_back(std::move(block));
      cursor = 0;
    }
    server_id = t.server_id();
    // The first definition of the name (the cache's by_name), as the policy's.
    // A snapshot composed from this cache points at the very same name.
    const auto& named = server->cache.by_name();
    auto at_cursor = [&] {
      if (cursor >= named.size())
        return false;
      auto name = named[cursor].name;
      return (name.data() == t.name().data() && name.size() == t.name().size()) || name == t.name();
    };
    if (!at_cursor()) {
      // Tools the snapshot skips (not granted): a few ahead by identity,
      // else by name.
      constexpr std::size_t identity_probes = 16;
      auto probe = cursor;
      auto ahead = std::min(named.size(), cursor + identity_probes);
      while (probe < ahead && named[probe].name.data() != t.name().data())
        ++probe;
      if (probe < ahead && named[probe].name.size() == t.name().size()) {
        cursor = probe;
      } else {
        cursor = static_cast<std::size_t>(
          std::lower_bound(named.begin(), named.end(), t.name(),
                           [](const auto& n, std::string_view x) { return n.name < x; })
          - named.begin());
        if (cursor >= named.size() || named[cursor].name != t.name())
          continue; // never an invented schema: no cached definition, no entry
      }
    }
    auto named_idx = cursor++;
    const auto& found = named[named_idx];
    if (!found.input_schema_is_object)
      continue;
    const auto& def = *found.def;
    const preset_tool* curated =
      server->curated != nullptr ? find_preset_tool(*server->curated, def.name) : nullptr;
    bool guided = curated != nullptr && !curated->guidance.empty();
    if (guided || !found.name_is_model_facing
        || route_of(t.route_action()) == external_tool::custom_route) {
      // Rare: text of this entry's own.
      auto block = std::make_shared<composed_entry>();
      block->def = def;
      if (guided)
        block->def.description += (def.description.empty() ? "" : "\n\n") + curated->guidance;
      block->server = server->text;
      add_composed(std::move(block), t, server->ranks, named_idx);
      continue;
    }
    auto& x = add(def, server->text, t, found.text_bytes);
    uint32_t rank = 0;
    if (server->ranks != nullptr) {
      rank = server->ranks->base_rank(named_idx);
      x.suffixed_rank = server->ranks->suffixed_rank(named_idx);
    } else {
      rank = order.rank_of(found.name);
    }
    names.emplace_back(found.name, static_cast<uint32_t>(ext.size() - 1), rank);
  }
  if (auto composed = assign_external_names(out.direct, ext, order, names))
    out.shared_text.push_back(std::move(composed));

  // The authorised external catalog decides the mode.
  std::size_t long_tail = 0;
  for (const auto& x : ext) {
    out.external_schema_tokens += x.schema_tokens;
    if (x.route == 0)
      ++long_tail;
  }
  out.external_tools = ext.size();
  out.catalog_mode = kind == view_kind::text && long_tail > 0
                     && (out.external_tools >= opts.catalog_min_tools
                         || out.external_schema_tokens >= opts.catalog_min_schema_tokens);

  // Each entry built once, in its place: internal and route-selected ones
  // direct (in snapshot order); in catalog mode the long tail behind the
  // catalog tools, by model name.
  std::vector<const name_key*> by_entry(ext.size());
  for (const auto& key : names)
    by_entry[key.entry] = &key;
  if (!out.catalog_mode) {
    out.direct.reserve(out.direct.size() + ext.size());
    for (std::size_t ext_idx = 0; ext_idx < ext.size(); ++ext_idx)
      view_composer::build(out.direct, ext[ext_idx], *by_entry[ext_idx]);
    return out;
  }
  for (auto& e : view_composer::catalog_tools(long_tail, opts, out))
    out.direct.push_back(e);
  for (std::size_t ext_idx = 0; ext_idx < ext.size(); ++ext_idx)
    if (ext[ext_idx].route != 0)
      view_composer::build(out.direct, ext[ext_idx], *by_entry[ext_idx]);
  out.catalog.reserve(long_tail);
  for (const auto& key : names)
    if (ext[key.entry].route == 0)
      view_composer::build(out.catalog, ext[key.entry], key);
  return out;
}

} // namespace voxos
