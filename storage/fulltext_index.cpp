#include "storage/fulltext_index.hpp"

#include <algorithm>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <xapian.h>

namespace voxos {

namespace {

/// Words this long or longer are no terms (Xapian's TermGenerator default).
constexpr std::size_t max_word_bytes = 64;
/// The word-to-term cache is emptied when it holds this many words.
constexpr std::size_t max_cached_words = 100'000;
constexpr const char* key_prefix = "Q";
/// The stored form lives in a value slot, not in the document data: glass
/// compresses document data with zlib on every write, which cost a third of
/// the indexing time of a 300-byte document; value slots are not compressed.
constexpr Xapian::valueno stored_slot = 0;
constexpr const char* ellipsis = "\xE2\x80\xA6"; // "…"

/// English stop words: too common to tell documents apart. "and", "or" and
/// "not" among them, so query text that reads like syntax matches nothing.
const std::unordered_set<std::string_view>& stop_words() {
  static const std::unordered_set<std::string_view> words{
    "a",     "about",  "after", "again",  "all",    "am",    "an",     "and",     "any",   "are",
    "as",    "at",     "be",    "been",   "before", "being", "both",   "but",     "by",    "can",
    "could", "did",    "do",    "does",   "doing",  "down",  "during", "each",    "for",   "from",
    "had",   "has",    "have",  "having", "he",     "her",   "here",   "hers",    "him",   "his",
    "how",   "i",      "if",    "in",     "into",   "is",    "it",     "it's",    "its",   "just",
    "me",    "more",   "most",  "my",     "no",     "nor",   "not",    "of",      "off",   "on",
    "once",  "only",   "or",    "other",  "our",    "ours",  "out",    "over",    "own",   "same",
    "she",   "should", "so",    "some",   "such",   "than",  "that",   "the",     "their", "theirs",
    "them",  "then",   "there", "these",  "they",   "this",  "those",  "through", "to",    "too",
    "under", "until",  "up",    "very",   "was",    "we",    "were",   "what",    "when",  "where",
    "which", "while",  "who",   "whom",   "why",    "will",  "with",   "would",   "you",   "your",
    "yours"};
  return words;
}

bool is_apostrophe(unsigned ch) {
  return ch == '\'' || ch == 0x2019;
}

/// One character of UTF-8 text: its code point and its length in bytes.
struct character {
  unsigned code;
  std::size_t bytes;
};

/// The character at byte `at`; a byte that does not start a well-formed
/// UTF-8 sequence reads as one character of its own.
character read_at(std::string_view text, std::size_t at) {
  auto byte = static_cast<unsigned char>(text[at]);
  if (byte < 0x80)
    return {byte, 1};
  std::size_t length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 0;
  if (length == 0 || at + length > text.size())
    return {byte, 1};
  unsigned code = byte & (0x7Fu >> length);
  for (std::size_t idx = 1; idx < length; ++idx) {
    auto next = static_cast<unsigned char>(text[at + idx]);
    if ((next & 0xC0) != 0x80)
      return {byte, 1};
    code = (code << 6) | (next & 0x3Fu);
  }
  return {code, length};
}

/// Xapian's word characters (letters, digits, marks, connector punctuation);
/// in ASCII: letters, digits and '_'.
bool word_char(unsigned code) {
  if (code < 0x80)
    return ((code | 0x20) >= 'a' && (code | 0x20) <= 'z') || (code >= '0' && code <= '9')
           || code == '_';
  return Xapian::Unicode::is_wordchar(code);
}

void append_lower(std::string& word, unsigned code) {
  if (code < 0x80)
    word.push_back(static_cast<char>(code >= 'A' && code <= 'Z' ? code + 32 : code));
  else
    Xapian::Unicode::append_utf8(word, Xapian::Unicode::tolower(code));
}

/// Calls each(begin, end, word) for every word of `text`: its byte offsets
/// in `text` and the word lowercased. Words over max_word_bytes are skipped.
template <class F>
void for_each_word(std::string_view text, F&& each) {
  std::string word;
  std::size_t begin = 0;
  auto emit = [&](std::size_t stop) {
    if (!word.empty() && word.size() <= max_word_bytes)
      each(begin, stop, word);
    word.clear();
  };
  std::size_t at = 0;
  while (at < text.size()) {
    auto c = read_at(text, at);
    if (word_char(c.code)) {
      if (word.empty())
        begin = at;
      append_lower(word, c.code);
      at += c.bytes;
      continue;
    }
    // An apostrophe between two word characters stays in the word.
    if (!word.empty() && is_apostrophe(c.code) && at + c.bytes < text.size()
        && word_char(read_at(text, at + c.bytes).code)) {
      word.push_back('\'');
      at += c.bytes;
      continue;
    }
    emit(at);
    at += c.bytes;
  }
  emit(text.size());
}

// -- stored form: the key, the fields, then the caller's data ----------------------

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

bool get_varint(std::string_view& in, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
    auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0)
      return true;
  }
  return false;
}

bool get_bytes(std::string_view& in, std::string& out) {
  uint64_t size = 0;
  if (!get_varint(in, size) || size > in.size())
    return false;
  out.assign(in.substr(0, size));
  in.remove_prefix(size);
  return true;
}

std::string encode(const fulltext_document& doc) {
  std::string out;
  put_varint(out, doc.key.size());
  out += doc.key;
  put_varint(out, doc.fields.size());
  for (const auto& field : doc.fields) {
    put_varint(out, field.name.size());
    out += field.name;
    put_varint(out, field.weight);
    put_varint(out, field.text.size());
    out += field.text;
  }
  out += doc.data;
  return out;
}

std::optional<fulltext_document> decode(std::string_view in) {
  fulltext_document doc;
  uint64_t count = 0;
  if (!get_bytes(in, doc.key) || !get_varint(in, count) || count > in.size())
    return std::nullopt;
  doc.fields.resize(count);
  for (auto& field : doc.fields) {
    uint64_t weight = 0;
    if (!get_bytes(in, field.name) || !get_varint(in, weight) || !get_bytes(in, field.text))
      return std::nullopt;
    field.weight = static_cast<uint32_t>(weight);
  }
  doc.data.assign(in);
  return doc;
}

// -- snippets -----------------------------------------------------------------------

struct word_span {
  std::size_t begin;
  std::size_t end;
  int term; ///< index into the query's terms, or -1
};

/// The best window of one field: most distinct query terms, then most
/// matches, within the snippet's bytes.
struct window {
  std::size_t distinct = 0;
  std::size_t matches = 0;
  std::size_t first = 0; ///< index into the field's words
  std::size_t last = 0;
  bool better_than(const window& other) const {
    return distinct != other.distinct ? distinct > other.distinct : matches > other.matches;
  }
};

window best_window(const std::vector<word_span>& words, std::size_t terms, std::size_t bytes) {
  window best;
  std::vector<std::size_t> counts(terms, 0);
  std::size_t distinct = 0;
  std::size_t matches = 0;
  std::size_t left = 0;
  for (std::size_t right = 0; right < words.size(); ++right) {
    if (words[right].term < 0)
      continue;
    if (counts[words[right].term]++ == 0)
      ++distinct;
    ++matches;
    // Shrink from the left until the matches fit in the bytes.
    while (left < right && (words[right].end - words[left].begin > bytes || words[left].term < 0)) {
      if (words[left].term >= 0) {
        if (--counts[words[left].term] == 0)
          --distinct;
        --matches;
      }
      ++left;
    }
    window here{distinct, matches, left, right};
    if (here.better_than(best))
      best = here;
  }
  return best;
}

bool trailing_punctuation(char c) {
  return c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?' || c == ')'
         || c == '"' || c == '\'';
}

/// About `bytes` of `text` around its words [first, last], cut at word
/// boundaries, "…" where text was left out.
std::string cut_snippet(const std::string& text, const std::vector<word_span>& words,
                        std::size_t first, std::size_t last, std::size_t bytes) {
  if (words.empty()) {
    // No word at all: the start, cut at a character boundary.
    auto end = std::min(text.size(), bytes);
    while (end > 0 && end < text.size() && (static_cast<uint8_t>(text[end]) & 0xC0) == 0x80)
      --end;
    return text.substr(0, end) + (end < text.size() ? ellipsis : "");
  }
  auto span_begin = words[first].begin;
  auto span_end = words[last].end;
  auto slack = bytes > span_end - span_begin ? bytes - (span_end - span_begin) : 0;
  // Centre the matches, then move the window inside the text.
  auto start = span_begin - std::min(span_begin, slack / 2);
  auto stop = std::min(text.size(), start + std::max(bytes, span_end - span_begin));
  if (stop == text.size())
    start = std::min(span_begin, stop - std::min(stop, bytes));
  // Snap to word boundaries without losing the matches.
  auto from = std::lower_bound(words.begin(), words.end(), start,
                               [](const word_span& w, std::size_t at) { return w.begin < at; });
  auto begin = from == words.end() ? span_begin : std::min(from->begin, span_begin);
  if (start == 0)
    begin = 0;
  auto end = span_end;
  for (auto idx = last + 1; idx < words.size() && words[idx].end <= stop; ++idx)
    end = words[idx].end;
  if (stop == text.size() && end < stop) {
    // Nothing but punctuation and space after the last word.
    end = stop;
  } else {
    while (end < stop && trailing_punctuation(text[end]))
      ++end;
  }
  std::string out;
  if (begin > 0)
    out += ellipsis;
  out.append(text, begin, end - begin);
  if (end < text.size())
    out += ellipsis;
  return out;
}

status xapian_failure(const Xapian::Error& err) {
  // Xapian's message may quote indexed text: only its type is passed on.
  return status::error(errc::storage_failure,
                       std::string{"full-text index failed ("} + err.get_type() + ")");
}

} // namespace

struct fulltext_index::impl {
  fulltext_options opts;
  Xapian::WritableDatabase db;
  Xapian::Stem stemmer{"english"};
  /// Lowercased word -> its term ("Z" + stem), or empty for a stop word.
  mutable std::unordered_map<std::string, std::string> terms;
  std::size_t pending = 0;

  const std::string& term_of(const std::string& word) const {
    auto found = terms.find(word);
    if (found != terms.end())
      return found->second;
    if (terms.size() >= max_cached_words)
      terms.clear();
    std::string term;
    if (stop_words().count(word) == 0)
      term = "Z" + stemmer(word);
    return terms.emplace(word, std::move(term)).first->second;
  }

  /// The snippet of the field that holds the best window of query terms.
  void snippet_of(const fulltext_document& doc, const std::vector<std::string>& query_terms,
                  fulltext_hit& hit) const {
    std::vector<word_span> words;
    window best;
    std::vector<word_span> best_words;
    const fulltext_field* best_field = nullptr;
    for (const auto& field : doc.fields) {
      words.clear();
      for_each_word(field.text, [&](std::size_t begin, std::size_t end, const std::string& w) {
        const auto& term = term_of(w);
        auto found = std::lower_bound(query_terms.begin(), query_terms.end(), term);
        int idx = !term.empty() && found != query_terms.end() && *found == term
                    ? static_cast<int>(found - query_terms.begin())
                    : -1;
        words.push_back({begin, end, idx});
      });
      auto here = best_window(words, query_terms.size(), opts.snippet_bytes);
      if (best_field == nullptr || here.better_than(best)) {
        best = here;
        best_field = &field;
        best_words.swap(words);
      }
    }
    if (best_field == nullptr)
      return;
    hit.field = best_field->name;
    hit.snippet =
      cut_snippet(best_field->text, best_words, best.first, best.last, opts.snippet_bytes);
  }
};

fulltext_index::fulltext_index(std::unique_ptr<impl> self) : self_(std::move(self)) {}
fulltext_index::~fulltext_index() = default;

const fulltext_options& fulltext_index::options() const noexcept {
  return self_->opts;
}

result<std::unique_ptr<fulltext_index>> fulltext_index::open(fulltext_options opts) {
  try {
    Xapian::WritableDatabase db;
    if (opts.dir.empty()) {
      db = Xapian::WritableDatabase{std::string{}, Xapian::DB_BACKEND_INMEMORY};
    } else {
      // Transcripts live here: the directory is the owner's alone.
      std::error_code ec;
      std::filesystem::create_directories(opts.dir, ec);
      if (!ec)
        std::filesystem::permissions(opts.dir, std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::replace, ec);
      if (ec)
        return status::error(errc::storage_failure,
                             "full-text index: cannot create its directory: " + ec.message());
      db = Xapian::WritableDatabase{opts.dir, Xapian::DB_CREATE_OR_OVERWRITE
                                                | Xapian::DB_BACKEND_GLASS | Xapian::DB_NO_SYNC};
    }
    auto self = std::make_unique<impl>();
    self->opts = std::move(opts);
    self->db = std::move(db);
    return std::unique_ptr<fulltext_index>{new fulltext_index{std::move(self)}};
  } catch (const Xapian::DatabaseLockError&) {
    return status::error(errc::storage_failure, "full-text index: its directory is in use");
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

status fulltext_index::put(const fulltext_document& doc) {
  if (doc.key.empty() || doc.key.size() > max_key_bytes)
    return status::error(errc::out_of_range, "key: 1 to 200 bytes");
  for (const auto& field : doc.fields)
    if (field.weight < 1 || field.weight > max_weight)
      return status::error(errc::out_of_range, "field weight: 1 to 16");
  auto& self = *self_;
  try {
    Xapian::Document xdoc;
    for (const auto& field : doc.fields)
      for_each_word(field.text, [&](std::size_t, std::size_t, const std::string& word) {
        const auto& term = self.term_of(word);
        if (!term.empty())
          xdoc.add_term(term, field.weight);
      });
    auto key_term = key_prefix + doc.key;
    xdoc.add_boolean_term(key_term);
    xdoc.add_value(stored_slot, encode(doc));
    self.db.replace_document(key_term, xdoc);
    if (!self.opts.dir.empty() && ++self.pending >= self.opts.commit_every)
      return commit();
    return status::ok();
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

result<std::vector<fulltext_hit>> fulltext_index::search(std::string_view query,
                                                         std::size_t limit) const {
  const auto& self = *self_;
  if (query.size() > self.opts.max_query_bytes)
    return status::error(errc::out_of_range,
                         "query: at most " + std::to_string(self.opts.max_query_bytes) + " bytes");
  // Distinct terms, and how often the query says each.
  std::vector<std::pair<std::string, Xapian::termcount>> counted;
  for_each_word(query, [&](std::size_t, std::size_t, const std::string& word) {
    const auto& term = self.term_of(word);
    if (term.empty())
      return;
    auto found = std::find_if(counted.begin(), counted.end(),
                              [&](const auto& entry) { return entry.first == term; });
    if (found != counted.end())
      ++found->second;
    else
      counted.emplace_back(term, 1);
  });
  if (counted.size() > self.opts.max_query_terms)
    return status::error(errc::out_of_range, "query: at most "
                                               + std::to_string(self.opts.max_query_terms)
                                               + " distinct words");
  limit = std::min(limit, self.opts.max_results);
  std::vector<fulltext_hit> out;
  if (counted.empty() || limit == 0)
    return out;
  try {
    std::vector<Xapian::Query> terms;
    std::vector<std::string> query_terms;
    for (const auto& [term, count] : counted) {
      terms.emplace_back(term, count);
      query_terms.push_back(term);
    }
    std::sort(query_terms.begin(), query_terms.end());
    Xapian::Enquire enquire{self.db};
    enquire.set_query(Xapian::Query{
      Xapian::Query::OP_ELITE_SET, terms.begin(), terms.end(),
      static_cast<Xapian::termcount>(std::max<std::size_t>(1, self.opts.max_ranked_terms))});
    // BM25 without length normalisation (b = 0): with it, Xapian's on-disk
    // backend decodes the document-length list for every match, linearly
    // within each chunk, which cost a one-word query over 100,000 turns
    // 300 us against 25 us without. Turns are of a like length, and k1 = 1
    // saturates repeated words anyway.
    enquire.set_weighting_scheme(Xapian::BM25Weight{1, 0, 1, 0, 0.5});
    // Among equally relevant documents, the one added last first.
    enquire.set_docid_order(Xapian::Enquire::DESCENDING);
    auto mset = enquire.get_mset(0, static_cast<Xapian::doccount>(limit));
    out.reserve(mset.size());
    for (auto it = mset.begin(); it != mset.end(); ++it) {
      auto doc = decode(it.get_document().get_value(stored_slot));
      if (!doc)
        return status::error(errc::corrupt_data, "full-text index: a document does not decode");
      fulltext_hit hit;
      hit.key = std::move(doc->key);
      hit.score = it.get_weight();
      self.snippet_of(*doc, query_terms, hit);
      hit.data = std::move(doc->data);
      out.push_back(std::move(hit));
    }
    return out;
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

result<std::optional<fulltext_document>> fulltext_index::get(std::string_view key) const {
  if (key.empty() || key.size() > max_key_bytes)
    return std::optional<fulltext_document>{};
  try {
    auto key_term = key_prefix + std::string{key};
    auto posting = self_->db.postlist_begin(key_term);
    if (posting == self_->db.postlist_end(key_term))
      return std::optional<fulltext_document>{};
    auto doc = decode(self_->db.get_document(*posting).get_value(stored_slot));
    if (!doc)
      return status::error(errc::corrupt_data, "full-text index: a document does not decode");
    return doc;
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

status fulltext_index::erase(std::string_view key) {
  if (key.empty() || key.size() > max_key_bytes)
    return status::ok();
  try {
    self_->db.delete_document(key_prefix + std::string{key});
    if (!self_->opts.dir.empty() && ++self_->pending >= self_->opts.commit_every)
      return commit();
    return status::ok();
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

result<std::size_t> fulltext_index::size() const {
  try {
    return std::size_t{self_->db.get_doccount()};
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

status fulltext_index::commit() {
  try {
    if (!self_->opts.dir.empty())
      self_->db.commit();
    self_->pending = 0;
    return status::ok();
  } catch (const Xapian::Error& err) {
    return xapian_failure(err);
  }
}

} // namespace voxos
