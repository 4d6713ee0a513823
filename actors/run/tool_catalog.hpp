// The run-scoped catalog of long-tail tools behind tool_search,
// tool_describe and tool_call. CAF-free.
//
// Built once per run from the run's tool view (its `catalog` entries: the
// authorised, route-resolved long tail, and the view's shared text they
// point into); it holds them, never changes and never sees anything else, so
// searching, describing or resolving cannot reach a tool outside the view it
// was built from. tool_call resolves an id here, then
// validates the arguments and delegates through the normal authorised path
// (check_call on the snapshot, argument validation, audit).
//
// Result ids: "ct_" + base64url (no padding) of the first 16 bytes of
//   HMAC-SHA256(run key, origin byte || be64(len(server_id)) || server_id || tool)
// 25 characters in all. The 32-byte run key is random per run (OpenSSL
// RAND_bytes) and never leaves the catalog, so an id from another run, or a
// guessed one, resolves to nothing.
//
// Search: BM25F over three fields of each tool, tokenised alike (ASCII
// lowercased, split at non-alphanumerics and camelCase humps, plural "s"/
// "es"/"ies" folded): the name (model name and tool name, weight 3), the
// title and server label (weight 2) and the description (weight 1); k1 = 1.2, b = 0.75 per
// field. Ties break by model name, so equal inputs give equal answers.
//
// Bounds and errors (voxos::status, never echoing the input):
//   query: 1..512 bytes with at least one word, else out_of_range;
//   limit: 1..20, else out_of_range;
//   id: exactly "ct_" + 22 base64url characters, else out_of_range;
//       a well-formed id this catalog did not issue: not_found.
//
// Cost (2 vCPU, bench/tool_catalog_bench): building takes about 4 us per tool
// (ids, tokenising, postings); a search over 10,000 tools about 25 us (p50).
//
// Threading: const member functions may be called concurrently.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "actors/run/tool_view.hpp"
#include "messages/status.hpp"

namespace voxos {

namespace catalog_limits {
inline constexpr std::size_t max_query_bytes = 512;
inline constexpr std::size_t max_limit = 20;
inline constexpr std::size_t default_limit = 8;
inline constexpr std::string_view id_prefix = "ct_";
inline constexpr std::size_t id_mac_bytes = 16;
inline constexpr std::size_t id_length = 3 + 22; ///< prefix + base64url of 16 bytes
inline constexpr std::size_t max_summary_bytes = 160;
} // namespace catalog_limits

/// The per-run secret the ids derive from.
using catalog_key = std::array<unsigned char, 32>;

/// One search result.
struct catalog_hit {
  std::string id;      ///< opaque, run-scoped
  std::string name;    ///< the tool's model-facing name
  std::string server;  ///< its server's short label
  std::string summary; ///< the description's first sentence, at most 160 bytes
  double score = 0;
};

/// One result described in full.
struct catalog_description {
  std::string id;
  std::string name;
  std::string title;
  std::string description;
  std::string input_schema;
};

/// What an id stands for.
struct catalog_target {
  tool_origin origin = tool_origin::mcp;
  std::string server_id;
  std::string tool;
  std::string model_name;
};

class tool_catalog {
public:
  /// Builds the catalog of `view`'s long tail (its `catalog` entries, with
  /// the shared text they point into; pass std::move(view) to avoid a copy)
  /// under `key`. Tests and benchmarks pass a fixed key; runs use
  /// make_tool_catalog. The key is used only while building (ids are derived
  /// up front) and is not kept. Fails only if OpenSSL cannot compute
  /// HMAC-SHA256 (errc::internal).
  static result<tool_catalog> build(tool_view view, const catalog_key& key);

  /// Ranked search; at most `limit` hits, best first; none when nothing matches.
  result<std::vector<catalog_hit>> search(std::string_view query, std::size_t limit) const;

  /// The full schema of one result.
  result<catalog_description> describe(std::string_view id) const;

  /// The (origin, server_id, tool) one result stands for.
  result<catalog_target> resolve(std::string_view id) const;

  /// The view entry one result stands for (valid while the catalog lives).
  result<const view_entry*> entry(std::string_view id) const;

  /// Number of tools in the catalog.
  std::size_t size() const noexcept { return docs_.size(); }

  /// The id of the idx-th tool (by model name); for tests and benchmarks.
  const std::string& id_at(std::size_t idx) const { return docs_[idx].id; }

private:
  tool_catalog() = default;

  struct doc {
    view_entry entry;
    std::string id;
    std::string summary;
  };
  struct posting {
    uint32_t doc;
    float weight; ///< the term's BM25F contribution to this doc, idf included
  };

  void index();
  result<std::size_t> lookup(std::string_view id) const;

  std::vector<doc> docs_;
  std::vector<std::shared_ptr<const void>> shared_text_; ///< what docs_' entries point into
  std::unordered_map<std::string, std::size_t> by_id_;
  std::unordered_map<std::string, uint32_t> terms_; ///< term -> index into postings_
  std::vector<std::vector<posting>> postings_;
};

/// A fresh random catalog key; fails only if the system's random source does.
result<catalog_key> fresh_catalog_key();

/// Builds a catalog under a fresh random key; fails only if the system's
/// random source or HMAC does (errc::internal).
result<tool_catalog> make_tool_catalog(tool_view view);

/// The search terms of `text` by the catalog's tokeniser (exposed for tests).
std::vector<std::string> catalog_terms(std::string_view text);

} // namespace voxos
