#include "actors/run/tool_catalog.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "config/base64.hpp"

namespace voxos {

namespace {

// -- tokeniser -----------------------------------------------------------------

bool is_word_byte(unsigned char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
         || ch >= 0x80; // UTF-8 sequences stay inside their word
}

bool is_stop_word(std::string_view w) {
  static constexpr std::string_view words[] = {
    "an", "and", "are", "as", "at", "be", "by",   "for", "from", "in", "into",
    "is", "it",  "its", "of", "on", "or", "that", "the", "this", "to", "with",
  };
  return std::find(std::begin(words), std::end(words), w) != std::end(words);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// Folds English plurals: "issues" -> "issue", "boxes" -> "box",
/// "entries" -> "entry"; "status", "address", "analysis" stay.
void fold_plural(std::string& w) {
  auto n = w.size();
  if (n > 4 && ends_with(w, "ies")) {
    w.replace(n - 3, 3, "y");
  } else if (n > 4 && ends_with(w, "sses")) {
    w.erase(n - 2);
  } else if (n > 3 && ends_with(w, "es")
             && (ends_with(w.substr(0, n - 2), "x") || ends_with(w.substr(0, n - 2), "z")
                 || ends_with(w.substr(0, n - 2), "ch") || ends_with(w.substr(0, n - 2), "sh"))) {
    w.erase(n - 2);
  } else if (n > 3 && w[n - 1] == 's' && !ends_with(w, "ss") && !ends_with(w, "us")
             && !ends_with(w, "is")) {
    w.erase(n - 1);
  }
}

/// Calls f(term) for each term of `text`, in order, repeats included.
template <class F>
void for_each_term(std::string_view text, F&& f) {
  std::string word;
  auto flush = [&] {
    if (word.size() >= 2 && !is_stop_word(word)) {
      fold_plural(word);
      f(word);
    }
    word.clear();
  };
  unsigned char prev = 0;
  for (unsigned char ch : text) {
    if (!is_word_byte(ch)) {
      flush();
    } else {
      bool upper = ch >= 'A' && ch <= 'Z';
      // camelCase hump: "searchPlaces" -> search, places
      if (upper && prev >= 'a' && prev <= 'z')
        flush();
      word.push_back(upper ? static_cast<char>(ch - 'A' + 'a') : static_cast<char>(ch));
    }
    prev = ch;
  }
  flush();
}

// -- BM25F ---------------------------------------------------------------------

constexpr double k1 = 1.2;
constexpr double b = 0.75;
constexpr std::size_t field_count = 3;
constexpr double field_weight[field_count] = {3.0, 2.0, 1.0}; // name, title, description
constexpr std::size_t max_query_terms = 64;

// -- ids -----------------------------------------------------------------------

/// HMAC-SHA256 under one run key, the key schedule done once.
class id_deriver {
public:
  explicit id_deriver(const catalog_key& key) {
    mac_.reset(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
    if (!mac_)
      return;
    base_.reset(EVP_MAC_CTX_new(mac_.get()));
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                           OSSL_PARAM_construct_end()};
    if (!base_ || EVP_MAC_init(base_.get(), key.data(), key.size(), params) != 1)
      base_.reset();
  }

  bool ok() const noexcept { return base_ != nullptr; }

  /// "ct_" + base64url(first 16 bytes of HMAC(origin || be64(len(server_id))
  /// || server_id || tool)), or empty on an OpenSSL failure.
  std::string derive(const view_entry& e) const {
    std::string msg;
    msg.reserve(9 + e.server_id().size() + e.tool().size());
    msg.push_back(static_cast<char>(e.origin));
    uint64_t len = e.server_id().size();
    for (int shift = 56; shift >= 0; shift -= 8)
      msg.push_back(static_cast<char>((len >> shift) & 0xff));
    msg += e.server_id();
    msg += e.tool();
    std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx{EVP_MAC_CTX_dup(base_.get()),
                                                                  &EVP_MAC_CTX_free};
    unsigned char mac[EVP_MAX_MD_SIZE];
    std::size_t mac_len = 0;
    if (!ctx
        || EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(msg.data()), msg.size())
             != 1
        || EVP_MAC_final(ctx.get(), mac, &mac_len, sizeof mac) != 1
        || mac_len < catalog_limits::id_mac_bytes)
      return {};
    return std::string{catalog_limits::id_prefix}
           + base64::encode(mac, catalog_limits::id_mac_bytes, base64::alphabet::url, false);
  }

private:
  std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> mac_{nullptr, &EVP_MAC_free};
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> base_{nullptr, &EVP_MAC_CTX_free};
};

bool well_formed_id(std::string_view id) {
  if (id.size() != catalog_limits::id_length || id.substr(0, 3) != catalog_limits::id_prefix)
    return false;
  return std::all_of(id.begin() + 3, id.end(), [](char ch) {
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
           || ch == '-' || ch == '_';
  });
}

// -- summaries -----------------------------------------------------------------

/// The first sentence of `text`, cut at a UTF-8 boundary to fit the limit.
std::string summarize(std::string_view text) {
  auto start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos)
    return {};
  text.remove_prefix(start);
  auto end = text.size();
  for (std::size_t idx = 0; idx < text.size(); ++idx) {
    if (text[idx] == '\n'
        || (text[idx] == '.' && (idx + 1 == text.size() || text[idx + 1] == ' '))) {
      end = text[idx] == '.' ? idx + 1 : idx;
      break;
    }
  }
  text = text.substr(0, end);
  if (text.size() <= catalog_limits::max_summary_bytes)
    return std::string{text};
  constexpr std::string_view ellipsis = "...";
  auto cut = catalog_limits::max_summary_bytes - ellipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut; // never split a UTF-8 sequence
  return std::string{text.substr(0, cut)} + std::string{ellipsis};
}

} // namespace

std::vector<std::string> catalog_terms(std::string_view text) {
  std::vector<std::string> out;
  for_each_term(text, [&](const std::string& term) { out.push_back(term); });
  return out;
}

result<tool_catalog> tool_catalog::build(tool_view view, const catalog_key& key) {
  auto long_tail = std::move(view.catalog);
  id_deriver ids{key};
  if (!ids.ok())
    return status::error(errc::internal, "tool catalog: HMAC-SHA256 is unavailable");
  // Documents and their ids, by model name (the view's order).
  auto by_name = [](const view_entry& x, const view_entry& y) {
    return x.model_name() < y.model_name();
  };
  if (!std::is_sorted(long_tail.begin(), long_tail.end(), by_name))
    std::sort(long_tail.begin(), long_tail.end(), by_name);
  tool_catalog out;
  out.shared_text_ = std::move(view.shared_text);
  out.docs_.reserve(long_tail.size());
  out.by_id_.reserve(long_tail.size());
  for (auto& e : long_tail) {
    auto id = ids.derive(e);
    if (id.empty())
      return status::error(errc::internal, "tool catalog: HMAC-SHA256 failed");
    if (!out.by_id_.emplace(id, out.docs_.size()).second)
      continue; // the same (origin, server, tool) twice: one entry
    auto summary = summarize(!e.description().empty() ? e.description() : e.title());
    out.docs_.push_back({std::move(e), std::move(id), std::move(summary)});
  }
  out.index();
  return out;
}

void tool_catalog::index() {
  // Term frequencies per document and field (flat: doc_begin[d] ..
  // doc_begin[d + 1] in `occurrences`), field lengths, document frequencies.
  struct doc_term {
    uint32_t term;
    std::array<uint32_t, field_count> tf;
  };
  std::vector<doc_term> occurrences;
  std::vector<std::size_t> doc_begin;
  std::vector<std::array<uint32_t, field_count>> doc_len(docs_.size());
  std::vector<uint32_t> df;
  std::array<double, field_count> total_len{};
  std::vector<std::pair<uint32_t, uint8_t>> scratch; // (term, field) of one doc
  doc_begin.reserve(docs_.size() + 1);
  for (std::size_t doc_idx = 0; doc_idx < docs_.size(); ++doc_idx) {
    const auto& e = docs_[doc_idx].entry;
    scratch.clear();
    auto add = [&](uint8_t field, std::string_view text) {
      for_each_term(text, [&](const std::string& term) {
        auto [it, fresh] = terms_.try_emplace(term, static_cast<uint32_t>(df.size()));
        if (fresh)
          df.push_back(0);
        scratch.emplace_back(it->second, field);
        ++doc_len[doc_idx][field];
      });
    };
    add(0, e.model_name());
    if (e.tool() != e.model_name())
      add(0, e.tool());
    add(1, e.title());
    add(1, e.server_slug());
    add(2, e.description());
    std::sort(scratch.begin(), scratch.end());
    doc_begin.push_back(occurrences.size());
    for (const auto& [term, field] : scratch) {
      if (occurrences.size() == doc_begin.back() || occurrences.back().term != term) {
        occurrences.push_back({term, {}});
        ++df[term];
      }
      ++occurrences.back().tf[field];
    }
    for (std::size_t field = 0; field < field_count; ++field)
      total_len[field] += doc_len[doc_idx][field];
  }
  doc_begin.push_back(occurrences.size());

  // Postings carry each term's whole BM25F contribution, idf included.
  auto n = static_cast<double>(docs_.size());
  std::array<double, field_count> avg_len{};
  for (std::size_t field = 0; field < field_count; ++field)
    avg_len[field] = n > 0 && total_len[field] > 0 ? total_len[field] / n : 1.0;
  postings_.resize(df.size());
  for (std::size_t term = 0; term < df.size(); ++term)
    postings_[term].reserve(df[term]);
  for (std::size_t doc_idx = 0; doc_idx < docs_.size(); ++doc_idx) {
    for (auto occ = doc_begin[doc_idx]; occ < doc_begin[doc_idx + 1]; ++occ) {
      const auto& [term, counts] = occurrences[occ];
      double tf = 0;
      for (std::size_t field = 0; field < field_count; ++field) {
        if (counts[field] == 0)
          continue;
        double norm = 1.0 - b + b * doc_len[doc_idx][field] / avg_len[field];
        tf += field_weight[field] * counts[field] / norm;
      }
      auto d = static_cast<double>(df[term]);
      double idf = std::log(1.0 + (n - d + 0.5) / (d + 0.5));
      double weight = idf * tf * (k1 + 1.0) / (k1 + tf);
      postings_[term].push_back({static_cast<uint32_t>(doc_idx), static_cast<float>(weight)});
    }
  }
}

result<std::vector<catalog_hit>> tool_catalog::search(std::string_view query,
                                                      std::size_t limit) const {
  // Bounds.
  if (query.empty() || query.size() > catalog_limits::max_query_bytes)
    return status::error(errc::out_of_range, "tool_search: query must be 1 to "
                                               + std::to_string(catalog_limits::max_query_bytes)
                                               + " bytes");
  if (limit < 1 || limit > catalog_limits::max_limit)
    return status::error(errc::out_of_range, "tool_search: limit must be 1 to "
                                               + std::to_string(catalog_limits::max_limit));
  std::vector<std::string> terms;
  for_each_term(query, [&](const std::string& term) {
    if (terms.size() < max_query_terms
        && std::find(terms.begin(), terms.end(), term) == terms.end())
      terms.push_back(term);
  });
  if (terms.empty())
    return status::error(errc::out_of_range, "tool_search: query has no searchable words");

  // Accumulate scores over the query terms' postings.
  std::vector<float> scores(docs_.size(), 0.0f);
  std::vector<uint32_t> touched;
  for (const auto& term : terms) {
    auto it = terms_.find(term);
    if (it == terms_.end())
      continue;
    for (const auto& p : postings_[it->second]) {
      if (scores[p.doc] == 0.0f)
        touched.push_back(p.doc);
      scores[p.doc] += p.weight;
    }
  }

  // Best first; equal scores by model name (the documents' order).
  auto better = [&](uint32_t x, uint32_t y) {
    return scores[x] != scores[y] ? scores[x] > scores[y] : x < y;
  };
  auto take = std::min(limit, touched.size());
  std::partial_sort(touched.begin(), touched.begin() + static_cast<std::ptrdiff_t>(take),
                    touched.end(), better);
  std::vector<catalog_hit> out;
  out.reserve(take);
  for (std::size_t rank = 0; rank < take; ++rank) {
    const auto& d = docs_[touched[rank]];
    out.push_back({d.id, std::string{d.entry.model_name()}, std::string{d.entry.server_slug()},
                   d.summary, scores[touched[rank]]});
  }
  return out;
}

result<std::size_t> tool_catalog::lookup(std::string_view id) const {
  if (!well_formed_id(id))
    return status::error(
      errc::out_of_range,
      "catalog result id is malformed: expected \"" + std::string{catalog_limits::id_prefix}
        + "\" and " + std::to_string(catalog_limits::id_length - catalog_limits::id_prefix.size())
        + " base64url characters");
  auto it = by_id_.find(std::string{id});
  if (it == by_id_.end())
    return status::error(errc::not_found, "no result of this run's tool catalog has this id");
  return it->second;
}

result<const view_entry*> tool_catalog::entry(std::string_view id) const {
  auto idx = lookup(id);
  if (!idx)
    return idx.error();
  return &docs_[*idx].entry;
}

result<catalog_description> tool_catalog::describe(std::string_view id) const {
  auto idx = lookup(id);
  if (!idx)
    return idx.error();
  const auto& d = docs_[*idx];
  return catalog_description{d.id, std::string{d.entry.model_name()}, std::string{d.entry.title()},
                             std::string{d.entry.description()},
                             std::string{d.entry.input_schema()}};
}

result<catalog_target> tool_catalog::resolve(std::string_view id) const {
  auto idx = lookup(id);
  if (!idx)
    return idx.error();
  const auto& e = docs_[*idx].entry;
  return catalog_target{e.origin, std::string{e.server_id()}, std::string{e.tool()},
                        std::string{e.model_name()}};
}

result<catalog_key> fresh_catalog_key() {
  catalog_key key;
  if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1)
    return status::error(errc::internal, "tool catalog: the random source failed");
  return key;
}

result<tool_catalog> make_tool_catalog(tool_view view) {
  auto key = fresh_catalog_key();
  if (!key)
    return key.error();
  auto out = tool_catalog::build(std::move(view), *key);
  OPENSSL_cleanse(key->data(), key->size());
  return out;
}

} // namespace voxos
