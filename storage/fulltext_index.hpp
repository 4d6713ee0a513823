// A small full-text index on Xapian: documents under a unique key, each with
// weighted text fields and opaque stored data; ranked search (BM25) with a
// snippet per hit; lookup and deletion by key. CAF-free, and the only part of
// the tree that includes Xapian (its types stay in fulltext_index.cpp).
//
// An index is derived data: it is built from the events that hold the truth
// (in memory, or in a directory of its own that open() empties), never read
// back after a restart.
//
// Words: runs of Unicode letters, digits, marks and connector punctuation
// ('_'), an apostrophe between two of them included; lowercased, stemmed for
// English, a short list of English stop words left out ("the", "and", "not",
// ...), words longer than 64 bytes skipped. Text is UTF-8.
//
// A query is text, never syntax: its words are looked up as terms, any of
// which may match, ranked by BM25 (without document-length normalisation:
// see search()); of a long query, the `max_ranked_terms` words that weigh
// most (the rarest) rank. "AND", "OR", "NOT" are words (stop words: they
// match nothing); '"', '(', ')', '*', ':', '~', '-', '+' separate words like
// spaces do. A query of only stop words matches nothing. A query over
// `max_query_bytes` or with more than `max_query_terms` distinct words is
// refused (out_of_range, naming the bound).
//
// Threading: one thread at a time per index, searches included (Xapian's
// database objects are not thread-safe, and search keeps a word cache);
// separate indexes may be used on separate threads at once.
// Errors: out_of_range for refused input; storage_failure when Xapian
// fails (its message is not passed on: it may quote indexed text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/status.hpp"

namespace voxos {

struct fulltext_options {
  /// Empty: in memory (about 4 KB of memory per 300-byte document, measured
  /// over 100,000: for small indexes and tests). Otherwise a directory of its
  /// own for an on-disk database, emptied by open() (about 1 KB of disk per
  /// such document; what is read stays in the page cache).
  std::string dir;
  /// Query bounds: bytes of query text, and distinct words after stop
  /// words. 2,048 bytes holds any 500-character query (the tools' schema).
  std::size_t max_query_bytes = 2048;
  std::size_t max_query_terms = 64;
  /// Of a query's distinct words, the ones that rank: the rarest this many
  /// (Xapian's elite set). Each more common word costs a pass over a long
  /// posting list for little weight: a 10-word question over 100,000
  /// turns took 0.9 ms with all ten, 0.4 ms with the best five.
  std::size_t max_ranked_terms = 8;
  /// Results per search, at most.
  std::size_t max_results = 100;
  /// Bytes a snippet aims at (word boundaries and "…" marks may add a few).
  std::size_t snippet_bytes = 240;
  /// On disk: changes between two commits (a commit writes what is pending
  /// to the directory's files; nothing is synced, the index is derived).
  std::size_t commit_every = 4096;
};

/// One field of a document; each word of it counts `weight` times (1..16).
struct fulltext_field {
  std::string name;
  std::string text;
  uint32_t weight = 1;
};

struct fulltext_document {
  std::string key; ///< 1..max_key_bytes bytes
  std::vector<fulltext_field> fields;
  std::string data; ///< opaque, returned with hits and lookups
};

struct fulltext_hit {
  std::string key;
  double score = 0;
  std::string field;   ///< the field the snippet comes from
  std::string snippet; ///< about snippet_bytes of it around the matching words
  std::string data;
};

class fulltext_index {
public:
  /// Terms hold the key with a one-byte prefix; Xapian's bound is 245.
  static constexpr std::size_t max_key_bytes = 200;
  static constexpr uint32_t max_weight = 16;

  /// A fresh, empty index. Errors: storage_failure (a directory that cannot
  /// be emptied or created, a database Xapian cannot open or lock).
  static result<std::unique_ptr<fulltext_index>> open(fulltext_options opts);
  ~fulltext_index();
  fulltext_index(const fulltext_index&) = delete;
  fulltext_index& operator=(const fulltext_index&) = delete;

  /// Adds the document, or replaces the one under its key. Errors:
  /// out_of_range (key empty or over max_key_bytes, a weight outside
  /// 1..max_weight; nothing is stored), storage_failure.
  [[nodiscard]] status put(const fulltext_document& doc);

  /// Up to `limit` (at most max_results) documents matching any word of
  /// `query`, best first. Errors: out_of_range (the query bounds),
  /// storage_failure.
  result<std::vector<fulltext_hit>> search(std::string_view query, std::size_t limit) const;

  /// The document under `key`, as it was put; nullopt if there is none (a
  /// key no document could have included).
  result<std::optional<fulltext_document>> get(std::string_view key) const;

  /// Removes the document under `key`; removing an absent one is ok.
  [[nodiscard]] status erase(std::string_view key);

  /// Documents held.
  result<std::size_t> size() const;

  /// On disk: writes pending changes to the directory's files now.
  [[nodiscard]] status commit();

  const fulltext_options& options() const noexcept;

private:
  struct impl;
  explicit fulltext_index(std::unique_ptr<impl> self);
  std::unique_ptr<impl> self_;
};

} // namespace voxos
