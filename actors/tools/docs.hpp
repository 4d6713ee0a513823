// The product documentation tools: search_product_docs and read_product_doc,
// over the documentation the node ships (docs/*.md, embedded at build time by
// cmake/embed_docs.cmake). CAF-free.
//
// The docs are global and hold no user data, so every channel may read them.
// One index serves the whole node: built once, on first use, from the shipped
// documents, one entry per section (a Markdown heading and the text under it),
// headings weighted above text; searches take its lock in turn (the full-text
// index is single-threaded; a search takes tens of microseconds).
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tools/tool_context.hpp"
#include "messages/status.hpp"

namespace voxos {
class fulltext_index;
}

namespace voxos::docs {

/// One shipped document: its id (the file name without ".md") and text.
struct shipped_doc {
  std::string_view id;
  std::string_view text;
};

/// Every shipped document, in id order (generated source).
const std::vector<shipped_doc>& shipped();

/// Bytes read_product_doc returns of one document at most (the rest is
/// left out and `truncated` says so).
inline constexpr std::size_t max_read_bytes = 32 * 1024;

class docs_index {
public:
  /// An index of `docs`. Errors: the full-text index's.
  static result<std::unique_ptr<docs_index>> build(std::vector<shipped_doc> docs);
  /// The node's index of the shipped documents, built on first use.
  static const docs_index& node();

  ~docs_index();

  /// search_product_docs {query, limit?}: sections, best first, each with
  /// its document id, the document's title, the section's heading and an
  /// excerpt.
  tool_outcome search(const nlohmann::json& args) const;
  /// read_product_doc {doc_id}: the document's text (at most max_read_bytes).
  tool_outcome read(const nlohmann::json& args) const;

private:
  docs_index() = default;
  std::vector<shipped_doc> docs_;
  std::unique_ptr<fulltext_index> index_;
  mutable std::mutex lock_;
};

} // namespace voxos::docs
