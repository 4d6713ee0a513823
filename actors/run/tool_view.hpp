// The run's tool view: the tools one run's model sees, each with its
// model-facing name, description and input schema, and what it stands for.
// CAF-free, pure.
//
// compose_view() runs once per run, after compose_policy(), from the run's
// effective policy snapshot and the tenant's cached discovery data; it does
// no network I/O and never changes afterwards. It only ever shows tools the
// snapshot allows, and only those with a definition:
//   - internal tools: description and schema from config/internal_tools;
//   - MCP tools: the server's cached tool_definition (a tool without a cached
//     definition, or with an empty or non-object schema, is not in the view:
//     no schema is ever invented);
//   - integration place-call tools: a built-in schema (contact_id + bounded
//     objective; the run id comes from the trusted context, never the model).
//
// Catalog mode (text views only). When the authorised external catalog (MCP
// + integration tools in the view) reaches `catalog_min_tools` tools or
// `catalog_min_schema_tokens` estimated schema tokens, the view keeps every
// internal tool and each route's selected implementation
// (snapshot_tool::route_action non-empty) direct, and moves the remaining
// long-tail external tools behind three catalog tools: tool_search,
// tool_describe, tool_call (see tool_catalog.hpp). A voice view keeps every
// tool direct: routes are already applied in the snapshot, and a search round
// would slow a realtime conversation.
//
// Token rule: a tool's estimated schema tokens are
//   ceil((bytes(tool name) + bytes(description) + bytes(input schema)) / bytes_per_token)
// with bytes_per_token = 4 by default (view_options). It is an estimate for
// a threshold, not a tokenizer.
//
// Cost: one pass over the snapshot and the servers' immutable tool caches; no
// definition is copied (entries point into the caches, see view_entry), and
// what a view asks of each cached tool (text bytes, name and schema checks)
// was computed when its cache was built. The names are named once per
// configuration change, not per view: the tenant's tool name order
// (tool_names.hpp) gives every base and level-1 name an integer rank in byte
// order, so names are made unique and the long tail ordered by counting
// ranks and comparing integers; a fixed (internal or catalog) name is looked
// up once, and only a name composed past level 1, or of a server the order
// is stale for, is looked up by its bytes. About 80 us (p50) for 2,000 MCP
// tools of which a quarter clash, 22 us for 200, on 2 vCPU shared with
// another busy process (bench/tool_catalog_bench, bench/tenant_restart_bench;
// 230 us and 23 us there by bytes). Without an order (replay, tests) every
// rank is 0 and names compare by their bytes: the same names, about 2.5x
// slower.
//
// Model-facing names match ^[A-Za-z0-9_-]{1,64}$ and are unique in the view
// (direct and catalog entries together). Internal tool names and the three
// catalog tool names are reserved and never change. An external tool keeps
// its own name (characters outside the set become '_', cut to 64 bytes)
// unless a reserved name or another external tool has it; then every tool
// sharing it, at once, is suffixed "__<server slug>" (the server's preset
// variant, else preset id, else label, lowercased, at most 16 characters; for
// integrations the provider), then if still shared "_<6 hex digits of
// FNV-1a(server id)>" instead, then "_<6 hex of FNV-1a(server id, tool)>",
// and only on a hash collision the entry's position. The name is cut, never
// the suffix. Names depend on the snapshot's tools and the tenant's server
// records, not on their order (short of that collision). Each entry keeps its (origin, server_id,
// tool): execution never relies on the name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/policy.hpp"
#include "actors/tenant/tenant_model.hpp"

namespace voxos {

enum class view_kind : uint8_t {
  text,  ///< text runs: large external catalogs go behind the catalog tools
  voice, ///< voice sessions: every allowed tool stays direct
};

struct view_options {
  /// Catalog mode from this many external (MCP + integration) tools on.
  std::size_t catalog_min_tools = 10;
  /// Catalog mode from this many estimated external schema tokens on.
  std::size_t catalog_min_schema_tokens = 10'000;
  /// The token rule's divisor: tokens = ceil(bytes(name + description + schema) / this).
  /// 0 is treated as 1.
  std::size_t bytes_per_token = 4;
};

/// What a view entry is.
enum class view_role : uint8_t {
  tool,             ///< an allowed tool of the snapshot
  catalog_search,   ///< tool_search
  catalog_describe, ///< tool_describe
  catalog_call,     ///< tool_call
};

class tool_name_order; // tool_names.hpp

/// The id and short label of the server (or phone integration) entries
/// stand for, as a view shows them (defined in tool_view.cpp).
struct view_server_text;

/// One tool as the model sees it, and what it stands for.
///
/// Its text is immutable and kept alive by its view (tool_view::shared_text):
/// the definition it shows (title, description, schema, the tool's own name)
/// is the server's cached tool_definition, the static internal tool
/// registry's, or one composed for this view (curated guidance, the catalog
/// and place-call tools); its server's id and slug sit in a small per-view
/// block; its model-facing name is the definition's, or one composed for this
/// view (suffixed or sanitised). So composing copies no definition and counts
/// no reference per entry, and an entry is small (it points at its text). An
/// entry is valid while its view, a copy of the view, or a tool_catalog built
/// from it lives.
class view_entry {
public:
  std::string_view model_name() const noexcept { return model_name_; } ///< unique in the view
  /// The MCP tool's title, or empty.
  std::string_view title() const noexcept { return def_ != nullptr ? def_->title : empty(); }
  std::string_view description() const noexcept {
    return def_ != nullptr ? def_->description : empty();
  }
  /// JSON Schema as text, never empty.
  std::string_view input_schema() const noexcept {
    return def_ != nullptr ? def_->input_schema : empty();
  }
  // What it stands for (role == tool):
  /// MCP server or phone integration id; empty for internal tools.
  std::string_view server_id() const noexcept;
  /// The tool's own name at its origin.
  std::string_view tool() const noexcept { return def_ != nullptr ? def_->name : empty(); }
  /// Short display label of its server, or empty.
  std::string_view server_slug() const noexcept;
  /// The action route that selected it, or empty.
  std::string_view route_action() const noexcept { return route_action_; }
  /// The tool declares that a second call with the same arguments does
  /// nothing more than the first (the server's idempotentHint).
  bool idempotent() const noexcept { return def_ != nullptr && def_->idempotent_hint; }

  std::size_t schema_tokens = 0; ///< by the view's token rule
  view_role role = view_role::tool;
  tool_origin origin = tool_origin::internal;
  risk_level risk = risk_level::medium;
  bool read_only = false;

private:
  friend struct view_composer; // tool_view.cpp
  static std::string_view empty() noexcept { return {}; }
  std::string_view model_name_;
  const tool_definition* def_ = nullptr;     ///< what it shows
  const view_server_text* server_ = nullptr; ///< nullptr for internal and catalog tools
  std::string_view route_action_;
};

/// The run's tool view. Immutable once composed.
struct tool_view {
  view_kind kind = view_kind::text;
  /// True when the long tail sits behind the catalog tools.
  bool catalog_mode = false;
  /// The authorised external catalog that decided the mode.
  std::size_t external_tools = 0;
  std::size_t external_schema_tokens = 0;
  /// What the model sees, in order: internal tools (registry order), the
  /// catalog tools (catalog mode), then external tools (integrations, then
  /// MCP by server id and name).
  std::vector<view_entry> direct;
  /// The long tail behind the catalog tools, by model name; empty unless
  /// catalog_mode.
  std::vector<view_entry> catalog;
  /// What the entries' text points into (see view_entry).
  std::vector<std::shared_ptr<const void>> shared_text;

  /// The direct entry with this model-facing name, or nullptr.
  const view_entry* find_direct(std::string_view model_name) const;
};

/// Estimated schema tokens by the rule above.
std::size_t estimate_schema_tokens(std::string_view name, std::string_view description,
                                   std::string_view input_schema,
                                   const view_options& opts) noexcept;

/// Composes the view. `tenant` must be the state the snapshot was composed
/// from (or a later one: a tool whose definition has since disappeared is
/// left out, never shown without a schema). The view shares the definitions
/// of `tenant`'s tool caches, never their records: `tenant` may change or go
/// once this returns.
///
/// `names`: the tenant's name order (tool_names.hpp), built from `tenant` or
/// an earlier state; the view uses it only where it still matches the
/// tenant's caches, so the names are the same with it, with a stale one or
/// without (nullptr), only composed faster with a current one.
tool_view compose_view(const effective_policy& snapshot, const tenant_state& tenant,
                       const view_options& opts, view_kind kind,
                       const tool_name_order* names = nullptr);

} // namespace voxos
