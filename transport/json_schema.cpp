#include "transport/json_schema.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <simdjson.h>

#include "transport/json_tape.hpp"
#include "transport/metaschemas.hpp"
#include "transport/unicode_categories.hpp"

namespace voxos {

using nlohmann::json;

namespace detail {

/// Bits of the `type` keyword.
enum type_bit : uint8_t {
  type_null = 1,
  type_boolean = 2,
  type_object = 4,
  type_array = 8,
  type_number = 16,
  type_string = 32,
  type_integer = 64,
};

/// A regular expression recognised at compile time as an optional `^`, a
/// sequence of one-character atoms (a literal, `.`, a class of ASCII
/// characters and ranges, `\d` `\w` `\D` `\W`, escaped punctuation), each with
/// an optional quantifier, and an optional `$`. It is matched over code points
/// by a one-pass simulation of the positions it can be in (no backtracking),
/// with ECMAScript's meaning: `.` matches neither line terminator, negated
/// classes match every non-ASCII character, `$` only the end of the text.
class simple_pattern {
public:
  /// Nullopt when `source` is outside the recognised subset.
  static std::optional<simple_pattern> recognise(std::string_view source);

  bool search(std::string_view text) const noexcept;

private:
  static constexpr int max_states = 63;

  /// The states the character at `text[pos]` may pass; steps `pos` over it.
  [[gnu::always_inline]] inline uint64_t passes(std::string_view text, size_t& pos) const noexcept;

  std::array<uint64_t, 128> ascii_accept_{}; ///< per ASCII character, the states it may pass
  uint64_t non_ascii_accept_ = 0;            ///< states any non-ASCII character may pass
  /// `\p{...}` states: a non-ASCII character passes those whose categories
  /// hold its own (ASCII ones are in ascii_accept_).
  struct category_state {
    uint64_t bit;
    uint32_t categories; ///< unicode_category bits (already negated for `\P`)
  };
  std::vector<category_state> category_states_;
  uint64_t dot_states_ = 0;                        ///< `.` states: not U+2028/U+2029
  uint64_t repeat_ = 0;                            ///< states that may consume again
  std::array<uint64_t, max_states + 1> closure_{}; ///< positions reachable consuming nothing
  int states_ = 0;
  bool has_optional_ = false;
  bool fixed_ = false; ///< anchored both ends, no optional or repeating state
  bool anchored_start_ = false;
  bool anchored_end_ = false;
  /// `^X{m,n}$` (or `^X*$`, `^X+$`) of one atom, past the positions: one
  /// state, and the text's count of code points between m and n (n < 0: no
  /// maximum).
  bool counted_ = false;
  int count_least_ = 0, count_most_ = 0;
};

struct compiled_regex {
  std::string source;
  std::optional<simple_pattern> simple;
  /// When `simple` is empty: `[\s\S]*(?:source)[\s\S]*`, matched over the
  /// whole text (`whole`). libstdc++'s regex_search restarts its
  /// breadth-first matcher at each position, quadratic in the text; one
  /// whole match is linear, and `^` and `$` still assert the text's ends. A
  /// pattern with a lookahead is searched for as written: libstdc++ reads a
  /// lookahead's `^`, `\b` and `\B` from where the lookahead starts, which
  /// the leading `[\s\S]*` would move.
  std::regex re;
  bool whole = true;
  size_t max_text = std::numeric_limits<size_t>::max(); ///< longest text `re` runs over

  /// Whether a text of `size` bytes is within the work bound (max_regex_steps).
  bool fits(size_t size) const { return size <= max_text; }
  bool search(std::string_view text) const {
    if (simple)
      return simple->search(text);
    if (whole)
      return std::regex_match(text.begin(), text.end(), re);
    return std::regex_search(text.begin(), text.end(), re);
  }
};

/// A property name a node looks up: from `properties` (with its schema),
/// `required` or the dependencies. The first 64 names get a presence bit.
struct name_entry {
  std::string name;
  const schema_node* sub = nullptr;
  uint64_t bit = 0;
};

/// `left` and `right` hold the same `size` bytes (inline for short texts).
inline bool same_bytes(const char* left, const char* right, size_t size) noexcept {
  auto load8 = [](const char* at) {
    uint64_t word;
    std::memcpy(&word, at, 8);
    return word;
  };
  auto load4 = [](const char* at) {
    uint32_t word;
    std::memcpy(&word, at, 4);
    return word;
  };
  if (size >= 8) {
    // words, then the last (overlapping) word; no call keeps callers leaf functions
    for (size_t offset = 0; offset + 8 < size; offset += 8)
      if (load8(left + offset) != load8(right + offset))
        return false;
    return load8(left + size - 8) == load8(right + size - 8);
  }
  if (size >= 4)
    return load4(left) == load4(right) && load4(left + size - 4) == load4(right + size - 4);
  for (size_t idx = 0; idx < size; ++idx)
    if (left[idx] != right[idx])
      return false;
  return true;
}

/// Property names of one node (or the strings of an `enum`). Up to
/// `perfect_names` names get a perfect hash: each its own slot, picked by a
/// multiplier searched for when sealed, so a lookup is one mix, one slot and
/// one comparison. More names (or names the mix cannot tell apart) go to an
/// open-addressing table. Not copied once sealed (it points into itself).
class name_table {
public:
  name_table() = default;
  name_table(const name_table&) = delete;
  name_table& operator=(const name_table&) = delete;

  /// Index of `name`, added when new.
  size_t add(const std::string& name);
  /// Builds the lookup once every name is added.
  void seal();
  /// Index of `key`, or -1. `key` is a string of a simdjson document: at
  /// least 8 bytes from its start are readable (its string buffer is padded).
  [[gnu::always_inline]] int find(std::string_view key) const noexcept {
    if (perfect_) {
      const perfect_slot* slot = find_perfect(key);
      return slot ? static_cast<int>(slot->entry - entries_.data()) : -1;
    }
    if (mask_ == 0)
      return -1;
    const int32_t* slots = slots_.data();
    for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      int32_t idx = slots[slot];
      if (idx < 0)
        return -1;
      const auto& name = entries_[static_cast<size_t>(idx)].name;
      if (name.size() == key.size() && same_bytes(name.data(), key.data(), key.size()))
        return idx;
    }
  }

  /// The entry of `key`, or null (the same lookup).
  [[gnu::always_inline]] const name_entry* find_entry(std::string_view key) const noexcept {
    if (perfect_) {
      const perfect_slot* slot = find_perfect(key);
      return slot ? slot->entry : nullptr;
    }
    int idx = find(key);
    return idx >= 0 ? &entries_[static_cast<size_t>(idx)] : nullptr;
  }

  bool empty() const noexcept { return entries_.empty(); }
  std::vector<name_entry>& entries() noexcept { return entries_; }
  const name_entry& operator[](size_t idx) const noexcept { return entries_[idx]; }

private:
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "a key's first bytes are its low bits");
  /// The first 8 bytes of a text (fewer, zero-filled, for a shorter one),
  /// read from a buffer with 8 readable bytes.
  static uint64_t head_of(const char* text, size_t size) noexcept {
    uint64_t head;
    std::memcpy(&head, text, sizeof head);
    return size < 8 ? head & ((uint64_t{1} << (size * 8)) - 1) : head;
  }
  /// The last 8 bytes of a key longer than 8 bytes, else 0.
  static uint64_t tail_of(std::string_view key) noexcept {
    uint64_t tail = 0;
    if (key.size() > 8)
      std::memcpy(&tail, key.data() + key.size() - 8, sizeof tail);
    return tail;
  }
  /// What the perfect hash sees of a key: its first and last 8 bytes and
  /// its size.
  static uint64_t mix(uint64_t head, uint64_t tail, size_t size) noexcept {
    return head ^ (size * 0x9E3779B97F4A7C15ull) ^ ((tail << 31) | (tail >> 33));
  }
  struct perfect_slot;
  /// The slot holding `key`, or null. Its first and last 8 bytes and its
  /// size are compared as words; only the middle of a name longer than 16
  /// bytes is compared bytewise.
  [[gnu::always_inline]] const perfect_slot* find_perfect(std::string_view key) const noexcept {
    uint64_t head = head_of(key.data(), key.size());
    uint64_t tail = tail_of(key);
    const perfect_slot& slot =
      perfect_slots_[(mix(head, tail, key.size()) * multiplier_) >> shift_];
    // (an empty slot has size 0 and a head no key of size 0 has)
    if (slot.head != head || slot.tail != tail || slot.size != key.size())
      return nullptr;
    if (key.size() > 16
        && !same_bytes(slot.entry->name.data() + 8, key.data() + 8, key.size() - 16))
      return nullptr;
    return &slot;
  }
  bool seal_perfect();

  /// Open addressing: size and end bytes pick the slot for a few names (a
  /// multiplicative mix, top bits); FNV-1a over the bytes for many.
  static constexpr size_t few_names = 16;
  size_t hash(std::string_view key) const noexcept {
    if (key.empty())
      return 0;
    uint64_t value;
    if (few_) {
      value = key.size() | uint64_t{static_cast<unsigned char>(key[0])} << 16
              | uint64_t{static_cast<unsigned char>(key.back())} << 24;
    } else {
      value = 14695981039346656037ull;
      for (char c : key)
        value = (value ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
    return static_cast<size_t>((value * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  std::vector<name_entry> entries_;
  std::vector<int32_t> slots_; ///< open addressing, -1 empty
  size_t mask_ = 0;
  unsigned shift_ = 61;
  bool few_ = true;

  /// Up to this many names are tried for a perfect hash.
  static constexpr size_t perfect_names = 32;
  struct perfect_slot {
    uint64_t head = 1; ///< (empty: no key of size 0 has this head)
    uint64_t tail = 0;
    uint64_t size = 0;
    const name_entry* entry = nullptr;
  };
  bool perfect_ = false;
  uint64_t multiplier_ = 0;
  std::vector<perfect_slot> perfect_slots_;
};

/// Leaves whose keywords a short check covers (`leaf_valid`), and the rest.
enum class leaf_shape : uint8_t {
  general,
  types,       ///< `type` alone
  string_enum, ///< `enum` of strings alone, or with a `type` that allows strings
  bounded,     ///< `type` with `minimum` and/or `maximum`
};

/// Keyword groups a node carries, so validation skips absent ones.
enum keyword_group : uint16_t {
  group_refs = 1,
  group_number = 2,
  group_string = 4,
  group_object = 8,
  group_array = 16,
  group_combinators = 32,
};

/// The keywords a node can fail, each with the texts an error names.
enum class failing : uint8_t {
  type,
  enum_,
  const_,
  minimum,
  maximum,
  exclusive_minimum,
  exclusive_maximum,
  multiple_of,
  min_length,
  max_length,
  pattern,
  pattern_bound, ///< the text is past the pattern's work bound (compiled_regex::fits)
  additional_properties,
  pattern_properties_bound, ///< a member name past a patternProperties pattern's work bound
  property_names,
  required,
  min_properties,
  max_properties,
  min_items,
  max_items,
  unique_items,
  contains,
  max_contains,
  any_of,
  one_of,
  not_,
  unevaluated_properties,
  unevaluated_items,
  count_
};

/// What an error names for one failed keyword: its schema location and the
/// constraint, written when the schema is compiled, so that listing an error
/// copies no schema text (errors view these; their result keeps them alive).
struct failure_text {
  std::string schema_path;
  std::string constraint;
};

/// One compiled (sub)schema: the keywords it carries, children by pointer.
/// Pointers refer to nodes owned by the same `schema_store`.
struct schema_node {
  // read by every evaluation: kept together
  uint16_t groups = 0; ///< keyword_group bits
  uint8_t types = 0;
  bool is_boolean = false;
  bool boolean_value = true;
  bool is_leaf = false; ///< no subschema: a boolean, or type/enum/const/number/string keywords only
  leaf_shape leaf = leaf_shape::general; ///< leaves: the short check that covers them
  double low = 0, high = 0;              ///< leaf_shape::bounded: minimum, maximum (or infinite)
  bool pure_ref = false;                 ///< `$ref` alone: evaluation goes straight to the target
  bool simple_object =
    false; ///< on objects: type, properties, required, dependentRequired, additionalProperties, unevaluatedProperties without in-place applicators
  bool simple_array =
    false; ///< on arrays: type, prefixItems, items, minItems, maxItems, uniqueItems
  const schema_node* unmatched_members =
    nullptr; ///< simple objects: additionalProperties, else unevaluatedProperties
  std::vector<std::pair<uint64_t, uint64_t>>
    dependent_masks; ///< simple objects: trigger bit, needed bits
  bool is_resource = false;
  /// The root of the schema resource this node belongs to (itself for a
  /// root); set only when the schema has a `$dynamicRef` to an anchor.
  const schema_node* resource = nullptr;
  bool tracks_evaluation = false; ///< has unevaluatedProperties or unevaluatedItems
  const json* enum_values = nullptr;
  const json* const_value = nullptr;

  std::string path; ///< JSON pointer of this schema in its document
  const schema_node* ref = nullptr;
  const schema_node* dynamic_ref = nullptr;
  std::string dynamic_ref_anchor; ///< set when the static target carries this $dynamicAnchor
  /// For schema resource roots: their $dynamicAnchor names (dynamic scope).
  std::map<std::string, const schema_node*> dynamic_anchors;

  std::string type_text;

  std::vector<std::pair<std::string, const schema_node*>> properties;
  std::vector<std::pair<compiled_regex, const schema_node*>> pattern_properties;
  const schema_node* additional_properties = nullptr;
  std::vector<std::string> required;
  std::optional<size_t> min_properties, max_properties;
  const schema_node* property_names = nullptr;
  std::vector<std::pair<std::string, std::vector<std::string>>> dependent_required;
  std::vector<std::pair<std::string, const schema_node*>> dependent_schemas;
  std::string dependent_required_keyword = "dependentRequired";
  std::string dependent_schemas_keyword = "dependentSchemas";
  const schema_node* unevaluated_properties = nullptr;
  // compiled lookups for the keywords above
  name_table names;
  uint64_t required_mask = 0;     ///< presence bits every instance needs
  bool required_unmasked = false; ///< a required name without a presence bit
  std::vector<size_t> required_entries;
  std::vector<size_t> dependent_required_triggers;
  std::vector<std::vector<size_t>> dependent_required_entries;
  std::vector<size_t> dependent_schema_triggers;
  bool additional_false = false;
  bool visits_members = false;

  std::vector<const schema_node*> prefix_items;
  std::string prefix_keyword = "prefixItems";
  const schema_node* items = nullptr; ///< applies past the prefix
  std::string items_keyword = "items";
  std::optional<size_t> min_items, max_items;
  bool unique_items = false;
  const schema_node* contains = nullptr;
  std::optional<size_t> min_contains, max_contains;
  const schema_node* unevaluated_items = nullptr;

  std::optional<size_t> min_length, max_length;
  std::optional<compiled_regex> pattern;

  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::optional<json> multiple_of;
  bool multiple_of_integer = false;
  uint64_t multiple_of_unsigned = 0;
  double multiple_of_double = 0;

  name_table enum_strings; ///< when every enum value is a string
  bool enum_all_strings = false;

  std::vector<const schema_node*> all_of, any_of, one_of;
  const schema_node* not_ = nullptr;
  const schema_node* if_ = nullptr;
  const schema_node* then_ = nullptr;
  const schema_node* else_ = nullptr;

  bool uses_dynamic_scope = false; ///< root only: the schema has a $dynamicRef to an anchor

  // error texts (see failure_text), for the keywords this node carries
  std::vector<failure_text> failure_texts;
  std::array<uint8_t, static_cast<size_t>(failing::count_)> failure_slot{};
  std::vector<std::string> required_texts;                         ///< per `required` name
  std::vector<std::vector<failure_text>> dependent_required_texts; ///< per dependency, per name
  std::vector<std::string> one_of_texts; ///< by the number of matching oneOf branches

  const failure_text& text(failing keyword) const {
    return failure_texts[failure_slot[static_cast<size_t>(keyword)]];
  }
};

/// Owns the schema documents and every node compiled from them.
struct schema_store {
  std::vector<std::unique_ptr<json>> documents;
  std::vector<std::unique_ptr<schema_node>> nodes;
};

// --- simple patterns ---

namespace {

/// One atom of a simple pattern: the characters it matches.
struct pattern_atom {
  std::array<uint64_t, 2> ascii{};
  bool non_ascii = false;
  bool dot = false;
  uint32_t categories = 0; ///< `\p{...}`: the General Categories matched, any code point

  void add(unsigned char c) { ascii[c >> 6] |= uint64_t{1} << (c & 63); }
  void add_range(unsigned char low, unsigned char high) {
    for (unsigned c = low; c <= high; ++c)
      add(static_cast<unsigned char>(c));
  }
  void add_digits() { add_range('0', '9'); }
  void add_word() {
    add_digits();
    add_range('a', 'z');
    add_range('A', 'Z');
    add('_');
  }
  void negate() {
    ascii[0] = ~ascii[0];
    ascii[1] = ~ascii[1];
    non_ascii = true;
  }
  bool has(unsigned char c) const { return (ascii[c >> 6] >> (c & 63)) & 1; }
};

bool is_syntax_character(char c) {
  return c != '\0' && std::strchr("^$\\.*+?()[]{}|", c) != nullptr;
}

/// A character that stands for itself after a backslash.
bool is_identity_escape(char c) {
  return is_syntax_character(c) || c == '-' || c == '/';
}

/// A control escape (`\n` ...) as its character, or 0.
char control_escape(char c) {
  switch (c) {
  case 'n':
    return '\n';
  case 't':
    return '\t';
  case 'r':
    return '\r';
  case 'f':
    return '\f';
  case 'v':
    return '\v';
  default:
    return 0;
  }
}

/// Parses a class body after '['; false outside the recognised subset.
bool parse_class(std::string_view source, size_t& pos, pattern_atom& atom) {
  bool negated = pos < source.size() && source[pos] == '^';
  if (negated)
    ++pos;
  // reads one class atom: a character (`set` false) or a shorthand class
  auto read = [&](unsigned char& c, bool& set) {
    set = false;
    char first = source[pos++];
    if (static_cast<unsigned char>(first) >= 0x80)
      return false;
    if (first != '\\') {
      c = static_cast<unsigned char>(first);
      return true;
    }
    if (pos >= source.size())
      return false;
    char escaped = source[pos++];
    if (escaped == 'd' || escaped == 'w') {
      set = true;
      c = static_cast<unsigned char>(escaped);
      return true;
    }
    if (char control = control_escape(escaped)) {
      c = static_cast<unsigned char>(control);
      return true;
    }
    if (is_identity_escape(escaped)) {
      c = static_cast<unsigned char>(escaped);
      return true;
    }
    return false;
  };
  while (pos < source.size() && source[pos] != ']') {
    unsigned char low = 0;
    bool low_set = false;
    if (!read(low, low_set))
      return false;
    if (low_set) {
      if (low == 'd')
        atom.add_digits();
      else
        atom.add_word();
      continue;
    }
    if (pos + 1 < source.size() && source[pos] == '-' && source[pos + 1] != ']') {
      ++pos;
      unsigned char high = 0;
      bool high_set = false;
      if (!read(high, high_set) || high_set || high < low)
        return false;
      atom.add_range(low, high);
    } else {
      atom.add(low);
    }
  }
  if (pos >= source.size())
    return false;
  ++pos; // ']'
  if (negated)
    atom.negate();
  return true;
}

/// Parses an optional quantifier; false when malformed or unsupported.
bool parse_quantifier(std::string_view source, size_t& pos, int& least, int& most) {
  least = most = 1;
  if (pos >= source.size())
    return true;
  char c = source[pos];
  if (c == '*' || c == '+' || c == '?') {
    least = c == '+' ? 1 : 0;
    most = c == '?' ? 1 : -1;
    ++pos;
  } else if (c == '{') {
    auto number = [&](int& out) {
      size_t start = pos;
      out = 0;
      // (up to 6 digits: a count past the 63 positions is only kept as a
      // count, by `^X{m,n}$`)
      while (pos < source.size() && std::isdigit(static_cast<unsigned char>(source[pos]))
             && pos - start < 6)
        out = out * 10 + (source[pos++] - '0');
      return pos > start
             && !(pos < source.size() && std::isdigit(static_cast<unsigned char>(source[pos])));
    };
    ++pos;
    if (!number(least))
      return false;
    most = least;
    if (pos < source.size() && source[pos] == ',') {
      ++pos;
      if (pos < source.size() && source[pos] == '}')
        most = -1;
      else if (!number(most))
        return false;
    }
    if (pos >= source.size() || source[pos] != '}' || (most >= 0 && most < least))
      return false;
    ++pos;
  } else {
    return true;
  }
  if (pos < source.size() && source[pos] == '?') // lazy: same set of matching texts
    ++pos;
  return true;
}

} // namespace

std::optional<simple_pattern> simple_pattern::recognise(std::string_view source) {
  simple_pattern out;
  size_t pos = 0;
  if (pos < source.size() && source[pos] == '^') {
    out.anchored_start_ = true;
    ++pos;
  }
  struct item {
    pattern_atom atom;
    int least, most;
  };
  std::vector<item> items;
  while (pos < source.size()) {
    char c = source[pos];
    pattern_atom atom;
    if (c == '$') {
      if (pos + 1 != source.size())
        return std::nullopt;
      out.anchored_end_ = true;
      ++pos;
      break;
    }
    if (c == '.') {
      atom.negate();
      atom.ascii[0] &= ~((uint64_t{1} << '\n') | (uint64_t{1} << '\r'));
      atom.dot = true;
      ++pos;
    } else if (c == '[') {
      ++pos;
      if (!parse_class(source, pos, atom))
        return std::nullopt;
    } else if (c == '\\') {
      if (pos + 1 >= source.size())
        return std::nullopt;
      char escaped = source[pos + 1];
      pos += 2;
      if (escaped == 'd' || escaped == 'D') {
        atom.add_digits();
        if (escaped == 'D')
          atom.negate();
      } else if (escaped == 'w' || escaped == 'W') {
        atom.add_word();
        if (escaped == 'W')
          atom.negate();
      } else if (escaped == 'p' || escaped == 'P') {
        // `\p{Name}` or `\p{General_Category=Name}` (also `gc=`)
        auto close = source.find('}', pos);
        if (pos >= source.size() || source[pos] != '{' || close == std::string_view::npos)
          return std::nullopt;
        std::string_view name = source.substr(pos + 1, close - pos - 1);
        for (std::string_view prefix : {"General_Category=", "gc="})
          if (name.substr(0, prefix.size()) == prefix)
            name.remove_prefix(prefix.size());
        auto mask = category_mask(name);
        if (!mask)
          return std::nullopt;
        atom.categories = escaped == 'p' ? *mask : ~*mask & ((uint32_t{1} << 30) - 1);
        for (unsigned ascii = 0; ascii < 128; ++ascii)
          if ((atom.categories >> static_cast<unsigned>(category_of(ascii))) & 1)
            atom.add(static_cast<unsigned char>(ascii));
        pos = close + 1;
      } else if (char control = control_escape(escaped)) {
        atom.add(static_cast<unsigned char>(control));
      } else if (is_identity_escape(escaped)) {
        atom.add(static_cast<unsigned char>(escaped));
      } else {
        return std::nullopt;
      }
    } else if (static_cast<unsigned char>(c) >= 0x80 || is_syntax_character(c)) {
      return std::nullopt;
    } else {
      atom.add(static_cast<unsigned char>(c));
      ++pos;
    }
    int least = 1;
    int most = 1;
    if (!parse_quantifier(source, pos, least, most))
      return std::nullopt;
    items.push_back({atom, least, most});
  }

  // one state per mandatory copy, optional copies after, a repeating copy for
  // an unbounded maximum
  uint64_t optional = 0;
  auto add_state = [&](const pattern_atom& atom, bool is_optional, bool repeats) {
    if (out.states_ >= max_states)
      return false;
    uint64_t bit = uint64_t{1} << out.states_;
    for (unsigned c = 0; c < 128; ++c)
      if (atom.has(static_cast<unsigned char>(c)))
        out.ascii_accept_[c] |= bit;
    if (atom.non_ascii)
      out.non_ascii_accept_ |= bit;
    if (atom.categories)
      out.category_states_.push_back({bit, atom.categories});
    if (atom.dot)
      out.dot_states_ |= bit;
    if (is_optional)
      optional |= bit;
    if (repeats)
      out.repeat_ |= bit;
    ++out.states_;
    return true;
  };
  if (out.anchored_start_ && out.anchored_end_ && items.size() == 1) {
    const auto& [atom, least, most] = items.front();
    if ((most < 0 ? least + 1 : most) > max_states) {
      add_state(atom, false, true);
      out.counted_ = true;
      out.count_least_ = least;
      out.count_most_ = most;
      return out;
    }
  }
  for (const auto& [atom, least, most] : items) {
    for (int copy = 0; copy < least; ++copy)
      if (!add_state(atom, false, false))
        return std::nullopt;
    if (most < 0) {
      if (!add_state(atom, true, true))
        return std::nullopt;
    } else {
      for (int copy = least; copy < most; ++copy)
        if (!add_state(atom, true, false))
          return std::nullopt;
    }
  }
  out.has_optional_ = optional != 0;
  out.fixed_ = out.anchored_start_ && out.anchored_end_ && !optional && !out.repeat_;
  for (int position = out.states_; position >= 0; --position) {
    uint64_t closure = uint64_t{1} << position;
    if (position < out.states_ && ((optional >> position) & 1))
      closure |= out.closure_[position + 1];
    out.closure_[position] = closure;
  }
  return out;
}

inline uint64_t simple_pattern::passes(std::string_view text, size_t& pos) const noexcept {
  auto byte = static_cast<unsigned char>(text[pos]);
  if (byte < 0x80) {
    ++pos;
    return ascii_accept_[byte];
  }
  uint32_t code_point = 0;
  pos += decode_utf8(text, pos, code_point);
  uint64_t out = non_ascii_accept_;
  if (!category_states_.empty()) {
    auto category = static_cast<unsigned>(category_of(code_point));
    for (const auto& state : category_states_)
      if ((state.categories >> category) & 1)
        out |= state.bit;
  }
  if (code_point == 0x2028 || code_point == 0x2029)
    out &= ~dot_states_;
  return out;
}

bool simple_pattern::search(std::string_view text) const noexcept {
  if (counted_) {
    size_t count = 0;
    for (size_t pos = 0; pos < text.size(); ++count)
      if (!(passes(text, pos) & 1))
        return false;
    return count >= static_cast<size_t>(count_least_)
           && (count_most_ < 0 || count <= static_cast<size_t>(count_most_));
  }
  // `^...$` of mandatory atoms over ASCII text: one position per character
  if (fixed_ && text.size() == static_cast<size_t>(states_)) {
    bool ascii = true;
    for (size_t pos = 0; pos < text.size(); ++pos) {
      auto byte = static_cast<unsigned char>(text[pos]);
      if (byte >= 0x80) {
        ascii = false;
        break;
      }
      if (!((ascii_accept_[byte] >> pos) & 1))
        return false;
    }
    if (ascii)
      return true;
  }
  const uint64_t accept = uint64_t{1} << states_;
  uint64_t active = closure_[0];
  if (!anchored_end_ && (active & accept))
    return true;
  size_t pos = 0;
  while (pos < text.size()) {
    uint64_t moved = active & passes(text, pos);
    uint64_t reached = (moved << 1) | (moved & repeat_);
    uint64_t next = anchored_start_ ? 0 : closure_[0];
    if (!has_optional_) {
      next |= reached;
    } else {
      while (reached) {
        next |= closure_[__builtin_ctzll(reached)];
        reached &= reached - 1;
      }
    }
    active = next;
    if (!anchored_end_ && (active & accept))
      return true;
    if (active == 0)
      return false;
  }
  return (active & accept) != 0;
}

// --- property name tables ---

size_t name_table::add(const std::string& name) {
  for (size_t idx = 0; idx < entries_.size(); ++idx)
    if (entries_[idx].name == name)
      return idx;
  name_entry entry;
  entry.name = name;
  if (entries_.size() < 64)
    entry.bit = uint64_t{1} << entries_.size();
  entries_.push_back(std::move(entry));
  return entries_.size() - 1;
}

void name_table::seal() {
  if (entries_.empty() || seal_perfect())
    return;
  size_t size = 8;
  shift_ = 61;
  while (size < entries_.size() * 4) {
    size *= 2;
    --shift_;
  }
  slots_.assign(size, -1);
  mask_ = size - 1;
  few_ = entries_.size() <= few_names;
  for (size_t idx = 0; idx < entries_.size(); ++idx) {
    size_t slot = hash(entries_[idx].name) & (size - 1);
    while (slots_[slot] >= 0)
      slot = (slot + 1) & (size - 1);
    slots_[slot] = static_cast<int32_t>(idx);
  }
}

bool name_table::seal_perfect() {
  if (entries_.size() > perfect_names)
    return false;
  std::vector<uint64_t> heads, tails, mixed;
  for (const auto& entry : entries_) {
    // (a name of the schema: copied into a padded buffer to read it as a key)
    std::string padded = entry.name + std::string(8, '\0');
    heads.push_back(head_of(padded.data(), entry.name.size()));
    tails.push_back(tail_of(entry.name));
    mixed.push_back(mix(heads.back(), tails.back(), entry.name.size()));
  }
  // At least twice as many slots as names, up to 16 times; a few hundred
  // multipliers per size (a fixed sequence: the same schema always gets the
  // same table).
  unsigned bits = 3;
  while ((size_t{1} << bits) < entries_.size() * 2)
    ++bits;
  uint64_t state = 0x243F6A8885A308D3ull;
  auto next_multiplier = [&] { // splitmix64, odd
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | 1;
  };
  std::vector<uint8_t> taken;
  for (unsigned extra = 0; extra < 4; ++extra, ++bits) {
    unsigned shift = 64 - bits;
    for (int attempt = 0; attempt < 256; ++attempt) {
      uint64_t multiplier = next_multiplier();
      taken.assign(size_t{1} << bits, 0);
      bool distinct = true;
      for (uint64_t value : mixed) {
        uint8_t& slot = taken[(value * multiplier) >> shift];
        if (slot) {
          distinct = false;
          break;
        }
        slot = 1;
      }
      if (!distinct)
        continue;
      perfect_slots_.assign(size_t{1} << bits, perfect_slot{});
      for (size_t idx = 0; idx < entries_.size(); ++idx) {
        auto& slot = perfect_slots_[(mixed[idx] * multiplier) >> shift];
        slot.head = heads[idx];
        slot.tail = tails[idx];
        slot.size = entries_[idx].name.size();
        slot.entry = &entries_[idx];
      }
      multiplier_ = multiplier;
      shift_ = shift;
      perfect_ = true;
      return true;
    }
  }
  return false;
}

} // namespace detail

namespace {

using detail::failing;
using detail::failure_text;
using detail::schema_node;
using detail::schema_store;

// --- URI helpers (RFC 3986 reference resolution, the subset schemas use) ---

std::string strip_fragment(const std::string& uri) {
  auto hash = uri.find('#');
  return hash == std::string::npos ? uri : uri.substr(0, hash);
}

bool has_scheme(const std::string& uri) {
  auto pos = uri.find_first_of(":/?#");
  return pos != std::string::npos && pos > 0 && uri[pos] == ':';
}

/// Removes "." and ".." segments from the path of an absolute URI.
std::string remove_dot_segments(const std::string& uri) {
  auto scheme_end = uri.find(':');
  size_t path_start = scheme_end + 1;
  if (uri.compare(path_start, 2, "//") == 0) {
    path_start = uri.find('/', path_start + 2);
    if (path_start == std::string::npos)
      return uri;
  }
  auto path_end = uri.find_first_of("?#", path_start);
  if (path_end == std::string::npos)
    path_end = uri.size();
  std::string path = uri.substr(path_start, path_end - path_start);
  if (path.find("/.") == std::string::npos)
    return uri;
  std::vector<std::string> segments;
  size_t start = 0;
  bool trailing_slash = false;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    std::string segment =
      path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    trailing_slash = false;
    if (segment == "..") {
      if (segments.size() > 1)
        segments.pop_back();
      trailing_slash = true;
    } else if (segment == ".") {
      trailing_slash = true;
    } else {
      segments.push_back(segment);
    }
    if (slash == std::string::npos)
      break;
    start = slash + 1;
  }
  std::string joined;
  for (size_t seg_idx = 0; seg_idx < segments.size(); ++seg_idx)
    joined += (seg_idx ? "/" : "") + segments[seg_idx];
  if (trailing_slash)
    joined += "/";
  return uri.substr(0, path_start) + joined + uri.substr(path_end);
}

std::string resolve_uri(const std::string& base, const std::string& ref) {
  if (ref.empty())
    return strip_fragment(base);
  if (has_scheme(ref))
    return remove_dot_segments(ref);
  if (base.empty())
    return ref;
  std::string base_doc = strip_fragment(base);
  if (ref[0] == '#')
    return base_doc + ref;
  auto scheme_end = base_doc.find(':');
  if (scheme_end == std::string::npos)
    return ref;
  if (ref.compare(0, 2, "//") == 0)
    return remove_dot_segments(base_doc.substr(0, scheme_end + 1) + ref);
  size_t authority_end = scheme_end + 1;
  if (base_doc.compare(scheme_end + 1, 2, "//") == 0) {
    authority_end = base_doc.find('/', scheme_end + 3);
    if (authority_end == std::string::npos)
      authority_end = base_doc.size();
  }
  if (ref[0] == '/')
    return remove_dot_segments(base_doc.substr(0, authority_end) + ref);
  auto query = base_doc.find('?');
  if (query != std::string::npos)
    base_doc.resize(query);
  auto last_slash = base_doc.rfind('/');
  if (last_slash == std::string::npos || last_slash < authority_end)
    return remove_dot_segments(base_doc.substr(0, authority_end) + "/" + ref);
  return remove_dot_segments(base_doc.substr(0, last_slash + 1) + ref);
}

std::string percent_decode(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    if (text[pos] == '%' && pos + 2 < text.size() + 0
        && std::isxdigit(static_cast<unsigned char>(text[pos + 1]))
        && std::isxdigit(static_cast<unsigned char>(text[pos + 2]))) {
      out += static_cast<char>(std::stoi(text.substr(pos + 1, 2), nullptr, 16));
      pos += 2;
    } else {
      out += text[pos];
    }
  }
  return out;
}

std::string format_number(double number) {
  if (std::isfinite(number) && std::floor(number) == number && std::fabs(number) < 1e15)
    return std::to_string(static_cast<int64_t>(number));
  return json(number).dump();
}

std::string escape_pointer_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

/// Follows a decoded JSON pointer inside `doc`; nullptr when it leads nowhere.
const json* follow_pointer(const json& doc, const std::string& pointer) {
  auto tokens = pointer_tokens(pointer);
  if (!tokens)
    return nullptr;
  const json* current = &doc;
  for (const auto& token : *tokens) {
    if (current->is_object()) {
      auto found = current->find(token);
      if (found == current->end())
        return nullptr;
      current = &*found;
    } else if (current->is_array()) {
      if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos)
        return nullptr;
      // An index past 64 bits is past every array (std::stoul threw here).
      size_t index = 0;
      auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc{} || end != token.data() + token.size() || index >= current->size())
        return nullptr;
      current = &(*current)[index];
    } else {
      return nullptr;
    }
  }
  return current;
}

std::optional<schema_draft> draft_of(const json& schema) {
  if (!schema.is_object())
    return std::nullopt;
  auto found = schema.find("$schema");
  if (found == schema.end() || !found->is_string())
    return std::nullopt;
  const auto& uri = found->get_ref<const std::string&>();
  if (uri.find("draft-07") != std::string::npos || uri.find("draft-06") != std::string::npos
      || uri.find("draft-04") != std::string::npos)
    return schema_draft::draft7;
  if (uri.find("2020-12") != std::string::npos || uri.find("2019-09") != std::string::npos)
    return schema_draft::draft2020_12;
  return std::nullopt;
}

// --- compilation ---

class schema_compiler {
public:
  schema_compiler(schema_store& store, const schema_loader& loader)
      : store_(store), loader_(loader) {}

  /// Registers a document under `uri` (may be empty for the root).
  void add_document(const json& doc, const std::string& uri, schema_draft draft) {
    std::string pointer_prefix = uri.empty() ? "" : uri + "#";
    resources_[uri] = &doc;
    index(doc, uri, pointer_prefix, draft, validation_vocabulary(doc));
  }

  /// False when `doc`'s `$schema` names a meta-schema of the loader's (not a
  /// standard one) whose `$vocabulary` leaves out the validation vocabulary:
  /// the document's validation keywords (type, enum, bounds, required...)
  /// then assert nothing.
  bool validation_vocabulary(const json& doc) {
    if (!doc.is_object() || !loader_)
      return true;
    auto found = doc.find("$schema");
    if (found == doc.end() || !found->is_string())
      return true;
    std::string uri = strip_fragment(found->get<std::string>());
    if (is_builtin_metaschema(uri))
      return true;
    auto meta = loader_(uri);
    if (!meta || !meta->is_object())
      return true;
    auto vocabulary = meta->find("$vocabulary");
    if (vocabulary == meta->end() || !vocabulary->is_object())
      return true;
    return vocabulary->contains("https://json-schema.org/draft/2020-12/vocab/validation")
           || vocabulary->contains("https://json-schema.org/draft/2019-09/vocab/validation");
  }

  const schema_node* compile(const json& schema) {
    if (auto found = compiled_.find(&schema); found != compiled_.end())
      return found->second;
    auto& node = *store_.nodes.emplace_back(std::make_unique<schema_node>());
    compiled_[&schema] = &node;
    const location& loc = locations_.at(&schema);
    node.path = loc.pointer;
    if (schema.is_boolean()) {
      node.is_boolean = true;
      node.is_leaf = true;
      node.boolean_value = schema.get<bool>();
      return &node;
    }
    if (!schema.is_object()) {
      fail(loc.pointer, "a schema must be an object or a boolean");
      return &node;
    }
    compile_keywords(schema, node, loc);
    seal(node);
    return &node;
  }

  std::optional<status> failure() const { return failure_; }

  /// For `$dynamicRef`: each node learns its resource root, so that
  /// evaluation entering any node of a resource (a `$ref` to one of its
  /// subschemas too) registers that resource in the dynamic scope.
  void link_resources() {
    for (size_t linked = 0; linked != compiled_.size();) {
      linked = compiled_.size();
      std::vector<std::pair<const json*, const schema_node*>> nodes(compiled_.begin(),
                                                                    compiled_.end());
      for (const auto& [schema, node] : nodes) {
        auto root = resources_.find(locations_.at(schema).base);
        if (root != resources_.end() && !node->resource)
          const_cast<schema_node*>(node)->resource = compile(*root->second);
      }
    }
  }

private:
  struct location {
    std::string base;
    std::string pointer;
    schema_draft draft;
    bool validation = true; ///< the validation vocabulary is on (see validation_vocabulary)
  };

  void fail(const std::string& path, const std::string& message) {
    if (!failure_)
      failure_ =
        status::error(errc::config_invalid, "invalid JSON Schema at '" + path + "': " + message);
  }

  // Index: record the base URI, location and draft of every subschema and
  // register `$id`s and anchors, before any `$ref` is followed.
  void index(const json& schema, std::string base, const std::string& pointer, schema_draft draft,
             bool validation) {
    if (locations_.count(&schema))
      return;
    if (!schema.is_object()) {
      locations_[&schema] = {base, pointer, draft, validation};
      return;
    }
    bool has_ref = schema.contains("$ref");
    if (auto id = schema.find("$id"); id != schema.end() && id->is_string()) {
      const auto& text = id->get_ref<const std::string&>();
      if (draft == schema_draft::draft7) {
        if (!has_ref) {
          if (!text.empty() && text[0] == '#') {
            resources_[resolve_uri(base, text)] = &schema;
          } else {
            base = strip_fragment(resolve_uri(base, text));
            resources_[base] = &schema;
          }
        }
      } else {
        base = strip_fragment(resolve_uri(base, text));
        resources_[base] = &schema;
      }
    }
    if (draft == schema_draft::draft2020_12) {
      for (const char* keyword : {"$anchor", "$dynamicAnchor"}) {
        if (auto anchor = schema.find(keyword); anchor != schema.end() && anchor->is_string())
          resources_.emplace(base + "#" + anchor->get<std::string>(), &schema);
      }
      if (auto anchor = schema.find("$dynamicAnchor");
          anchor != schema.end() && anchor->is_string())
        dynamic_anchors_[base].emplace(anchor->get<std::string>(), &schema);
    }
    locations_[&schema] = {base, pointer, draft, validation};
    auto child = [&](const json& sub, const std::string& suffix) {
      index(sub, base, pointer + suffix, draft, validation);
    };
    for (const char* keyword :
         {"additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not",
          "if", "then", "else", "unevaluatedProperties", "unevaluatedItems"}) {
      auto found = schema.find(keyword);
      if (found == schema.end())
        continue;
      if (found->is_array()) {
        for (size_t item_idx = 0; item_idx < found->size(); ++item_idx)
          child((*found)[item_idx], "/" + std::string(keyword) + "/" + std::to_string(item_idx));
      } else {
        child(*found, "/" + std::string(keyword));
      }
    }
    for (const char* keyword : {"allOf", "anyOf", "oneOf", "prefixItems"}) {
      auto found = schema.find(keyword);
      if (found == schema.end() || !found->is_array())
        continue;
      for (size_t item_idx = 0; item_idx < found->size(); ++item_idx)
        child((*found)[item_idx], "/" + std::string(keyword) + "/" + std::to_string(item_idx));
    }
    for (const char* keyword : {"properties", "patternProperties", "definitions", "$defs",
                                "dependentSchemas", "dependencies"}) {
      auto found = schema.find(keyword);
      if (found == schema.end() || !found->is_object())
        continue;
      for (const auto& [name, sub] : found->items()) {
        if (sub.is_object() || sub.is_boolean())
          child(sub, "/" + std::string(keyword) + "/" + escape_pointer_token(name));
      }
    }
  }

  /// Resolves `ref` against `base` to a schema, loading remote documents.
  const json* resolve(const std::string& base, const std::string& ref, schema_draft draft) {
    std::string target = resolve_uri(base, ref);
    auto hash = target.find('#');
    std::string doc_uri = hash == std::string::npos ? target : target.substr(0, hash);
    std::string fragment = hash == std::string::npos ? "" : percent_decode(target.substr(hash + 1));
    auto resource = resources_.find(doc_uri);
    if (resource == resources_.end() && !doc_uri.empty()) {
      // the built-in meta-schemas first: they are never fetched
      auto loaded = builtin_metaschema(doc_uri);
      if (!loaded && loader_)
        loaded = loader_(doc_uri);
      if (loaded) {
        const json& doc =
          *store_.documents.emplace_back(std::make_unique<json>(std::move(*loaded)));
        add_document(doc, doc_uri, draft_of(doc).value_or(draft));
        resource = resources_.find(doc_uri);
      }
    }
    if (fragment.empty())
      return resource == resources_.end() ? nullptr : resource->second;
    if (fragment[0] != '/') {
      auto anchor = resources_.find(doc_uri + "#" + fragment);
      return anchor == resources_.end() ? nullptr : anchor->second;
    }
    if (resource == resources_.end())
      return nullptr;
    const json* found = follow_pointer(*resource->second, fragment);
    if (found && !locations_.count(found)) {
      const location& parent = locations_.at(resource->second);
      index(*found, parent.base, parent.pointer + fragment, parent.draft, parent.validation);
    }
    return found;
  }

  const schema_node* compile_ref(const json& schema, const char* keyword, const location& loc) {
    auto found = schema.find(keyword);
    if (!found->is_string()) {
      fail(loc.pointer + "/" + keyword, "must be a string");
      return nullptr;
    }
    const json* target = resolve(loc.base, found->get<std::string>(), loc.draft);
    if (!target) {
      fail(loc.pointer + "/" + keyword, "reference cannot be resolved");
      return nullptr;
    }
    return compile(*target);
  }

  const schema_node* sub(const json& schema, const char* keyword, const location& loc) {
    auto found = schema.find(keyword);
    if (found == schema.end())
      return nullptr;
    if (!found->is_object() && !found->is_boolean()) {
      fail(loc.pointer + "/" + keyword, "must be a schema");
      return nullptr;
    }
    return compile(*found);
  }

  std::vector<const schema_node*> sub_array(const json& schema, const char* keyword,
                                            const location& loc, bool non_empty) {
    std::vector<const schema_node*> out;
    auto found = schema.find(keyword);
    if (found == schema.end())
      return out;
    if (!found->is_array() || (non_empty && found->empty())) {
      fail(loc.pointer + "/" + keyword,
           non_empty ? "must be a non-empty array of schemas" : "must be an array");
      return out;
    }
    for (const auto& item : *found) {
      if (!item.is_object() && !item.is_boolean()) {
        fail(loc.pointer + "/" + keyword, "must contain only schemas");
        return {};
      }
      out.push_back(compile(item));
    }
    return out;
  }

  void count(const json& schema, const char* keyword, const location& loc,
             std::optional<size_t>& out) {
    auto found = schema.find(keyword);
    if (found == schema.end())
      return;
    if (found->is_number_unsigned() || (found->is_number_integer() && found->get<int64_t>() >= 0)) {
      out = found->get<size_t>();
    } else if (found->is_number_float() && found->get<double>() >= 0
               && std::floor(found->get<double>()) == found->get<double>()) {
      // past size_t: a bound no instance reaches (the conversion would be UB)
      double value = found->get<double>();
      out = value >= 18446744073709551616.0 ? std::numeric_limits<size_t>::max()
                                            : static_cast<size_t>(value);
    } else {
      fail(loc.pointer + "/" + keyword, "must be a non-negative integer");
    }
  }

  void number(const json& schema, const char* keyword, const location& loc,
              std::optional<double>& out) {
    auto found = schema.find(keyword);
    if (found == schema.end())
      return;
    if (!found->is_number()) {
      // draft-04 style boolean exclusive bounds are not supported: refuse them.
      fail(loc.pointer + "/" + keyword, "must be a number");
      return;
    }
    out = found->get<double>();
  }

  /// What one walk over a pattern for std::regex finds: an estimate of the
  /// automaton states libstdc++ makes of it (one per atom, group and
  /// repetition, times every count of the repetitions around it: it expands
  /// `{n,m}` into m copies; saturated), whether it has a lookahead, its
  /// largest repetition count (capped past max_regex_repeat), whether it
  /// has a `\p` or `\P` escape and whether it has a decimal escape (`\1`).
  struct regex_cost {
    uint64_t states = 0;
    bool lookahead = false;
    uint64_t largest_count = 0;
    bool property_escape = false;
    bool decimal_escape = false;
  };
  static regex_cost regex_cost_of(const std::string& source) {
    static constexpr uint64_t saturated = uint64_t{1} << 48;
    auto add = [](uint64_t left, uint64_t right) { return std::min(saturated, left + right); };
    auto times = [](uint64_t left, uint64_t right) {
      uint64_t out;
      return __builtin_mul_overflow(left, right, &out) ? saturated : std::min(saturated, out);
    };
    struct frame {
      uint64_t total = 0; ///< states of the group so far
      uint64_t last = 0;  ///< states of its last atom (what a quantifier repeats)
    };
    regex_cost out;
    std::vector<frame> open{frame{}};
    auto atom = [&](uint64_t weight) {
      open.back().total = add(open.back().total, weight);
      open.back().last = weight;
    };
    // a quantifier: `copies` of the last atom in all; a stacked quantifier
    // repeats the repeated atom (`\w{300}{300}` is 90,000 copies)
    auto repeat = [&](uint64_t copies, uint64_t extra) {
      frame& top = open.back();
      uint64_t repeated = add(times(top.last, copies), extra);
      top.total = add(top.total - top.last, repeated);
      top.last = repeated;
    };
    // an escape at `pos`: steps over it
    auto escape = [&](size_t& pos) {
      if (pos + 1 < source.size() && (source[pos + 1] == 'p' || source[pos + 1] == 'P'))
        out.property_escape = true;
      if (pos + 1 < source.size() && source[pos + 1] >= '1' && source[pos + 1] <= '9')
        out.decimal_escape = true;
      ++pos;
    };
    for (size_t pos = 0; pos < source.size(); ++pos) {
      char c = source[pos];
      if (c == '\\') {
        escape(pos);
        atom(1);
      } else if (c == '[') {
        for (++pos; pos < source.size() && source[pos] != ']'; ++pos)
          if (source[pos] == '\\')
            escape(pos);
        atom(1);
      } else if (c == '(') {
        if (source.compare(pos, 3, "(?=") == 0 || source.compare(pos, 3, "(?!") == 0)
          out.lookahead = true;
        open.push_back(frame{});
      } else if (c == ')' && open.size() > 1) {
        uint64_t group = add(open.back().total, 2);
        open.pop_back();
        atom(group);
      } else if (c == '|') {
        atom(1);
        open.back().last = 0;
      } else if (c == '*' || c == '+' || c == '?') {
        repeat(1, 1);
      } else if (c == '{') {
        // {n}, {n,} or {n,m}: the larger number of copies of the last atom
        uint64_t copies = 0, number = 0;
        size_t at = pos + 1;
        for (; at < source.size()
               && (std::isdigit(static_cast<unsigned char>(source[at])) || source[at] == ',');
             ++at) {
          if (source[at] == ',') {
            copies = std::max(copies, number);
            number = 0;
          } else {
            number = std::min<uint64_t>(number * 10 + static_cast<uint64_t>(source[at] - '0'),
                                        max_regex_repeat + 1);
            out.largest_count = std::max(out.largest_count, number);
          }
        }
        if (at < source.size() && source[at] == '}') {
          repeat(std::max<uint64_t>({copies, number, 1}), 1);
          pos = at;
        } else {
          atom(1); // a literal '{'
        }
      } else {
        atom(1);
      }
    }
    for (const auto& group : open)
      out.states = add(out.states, group.total);
    return out;
  }

  std::optional<detail::compiled_regex> regex(const std::string& source, const std::string& path) {
    detail::compiled_regex out;
    out.source = source;
    out.simple = detail::simple_pattern::recognise(source);
    if (out.simple)
      return out;
    // std::regex reads `\p` as a plain 'p': a property escape it would
    // misread is refused. Its parser overflows on a repetition count past
    // 64 bits: one over max_regex_repeat (beyond its automaton's state cap
    // anyway) is refused first.
    auto cost = regex_cost_of(source);
    if (cost.property_escape) {
      fail(path, "unsupported Unicode property escape (\\p{...} is supported with a "
                 "General_Category value, outside classes, in a pattern of at most 63 "
                 "positions)");
      return std::nullopt;
    }
    // (std::regex, asked for no submatches, refuses backreferences anyway;
    // its parser reads their number into an int64 that a long one overflows)
    if (cost.decimal_escape) {
      fail(path, "a backreference or other decimal escape (\\1 ...), which this validator "
                 "does not support");
      return std::nullopt;
    }
    if (cost.largest_count > max_regex_repeat) {
      fail(path, "a repetition bound over " + std::to_string(max_regex_repeat)
                   + " in a pattern this validator hands to std::regex");
      return std::nullopt;
    }
    // Every state may be active at each step (a whole match starts a thread
    // at every position): the work is bounded by states x text. A lookahead
    // scans on from each position it is tried at: squared.
    uint64_t per_byte = cost.states * 2 + 2; // (libstdc++ makes about twice the estimate)
    uint64_t longest = max_regex_steps / per_byte;
    if (cost.lookahead)
      longest = static_cast<uint64_t>(std::sqrt(static_cast<double>(longest)));
    out.max_text = static_cast<size_t>(longest);
    out.whole = !cost.lookahead;
    try {
      // (only whether it matches is asked: no submatches kept per state)
      auto flags = std::regex::ECMAScript | std::regex::nosubs;
#if defined(__GLIBCXX__)
      // libstdc++'s breadth-first executor: matching time polynomial in the
      // text, where its default backtracking one is exponential on patterns
      // like (a+)+$ (the text is the model's). Back-references are then
      // refused here. (Its automaton is capped at 100,000 states:
      // _GLIBCXX_REGEX_STATE_LIMIT; a larger one is refused as well.)
      flags |= std::regex_constants::__polynomial;
#endif
      // (the pattern alone first: a stray `)` would close the wrapping
      // group and compile as another pattern)
      out.re = std::regex(source, flags);
      if (out.whole)
        out.re = std::regex("[\\s\\S]*(?:" + source + ")[\\s\\S]*", flags);
      return out;
    } catch (const std::regex_error&) {
      fail(path, "invalid regular expression");
      return std::nullopt;
    }
  }

  std::vector<std::string> string_array(const json& value, const std::string& path) {
    std::vector<std::string> out;
    if (!value.is_array()) {
      fail(path, "must be an array of strings");
      return out;
    }
    for (const auto& item : value) {
      if (!item.is_string()) {
        fail(path, "must be an array of strings");
        return {};
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  /// The texts an error names, for each keyword `node` can fail.
  static void write_failure_texts(schema_node& node) {
    auto add = [&](failing keyword, std::string_view name, std::string constraint) {
      node.failure_slot[static_cast<size_t>(keyword)] =
        static_cast<uint8_t>(node.failure_texts.size());
      node.failure_texts.push_back({node.path + "/" + std::string(name), std::move(constraint)});
    };
    auto bound = [](const char* before, auto limit, const char* after = "") {
      if constexpr (std::is_floating_point_v<decltype(limit)>)
        return before + format_number(limit) + after;
      else
        return before + std::to_string(limit) + after;
    };
    if (node.types)
      add(failing::type, "type", "expected type " + node.type_text);
    if (node.enum_values)
      add(failing::enum_, "enum",
          "value is not one of the " + std::to_string(node.enum_values->size())
            + " allowed values");
    if (node.const_value)
      add(failing::const_, "const", "value does not equal the required constant");
    if (node.minimum)
      add(failing::minimum, "minimum", bound("number is less than the minimum ", *node.minimum));
    if (node.maximum)
      add(failing::maximum, "maximum", bound("number is greater than the maximum ", *node.maximum));
    if (node.exclusive_minimum)
      add(failing::exclusive_minimum, "exclusiveMinimum",
          bound("number is not greater than the exclusive minimum ", *node.exclusive_minimum));
    if (node.exclusive_maximum)
      add(failing::exclusive_maximum, "exclusiveMaximum",
          bound("number is not less than the exclusive maximum ", *node.exclusive_maximum));
    if (node.multiple_of)
      add(failing::multiple_of, "multipleOf",
          "number is not a multiple of " + node.multiple_of->dump());
    if (node.min_length)
      add(failing::min_length, "minLength",
          bound("string is shorter than ", *node.min_length, " characters"));
    if (node.max_length)
      add(failing::max_length, "maxLength",
          bound("string is longer than ", *node.max_length, " characters"));
    if (node.pattern) {
      add(failing::pattern, "pattern",
          "string does not match the pattern '" + node.pattern->source + "'");
      if (!node.pattern->simple)
        add(failing::pattern_bound, "pattern",
            bound("string is longer than the ", node.pattern->max_text,
                  " bytes this pattern is checked over (bounded matching)"));
    }
    if (std::any_of(node.pattern_properties.begin(), node.pattern_properties.end(),
                    [](const auto& entry) { return !entry.first.simple; }))
      add(failing::pattern_properties_bound, "patternProperties",
          "property name is longer than its patternProperties patterns are checked over "
          "(bounded matching)");
    if (node.additional_properties)
      add(failing::additional_properties, "additionalProperties",
          "additional property is not allowed");
    if (node.property_names)
      add(failing::property_names, "propertyNames",
          "property name does not match the propertyNames schema");
    if (!node.required.empty()) {
      add(failing::required, "required", {});
      for (const auto& name : node.required)
        node.required_texts.push_back("required property '" + name + "' is missing");
    }
    if (node.min_properties)
      add(failing::min_properties, "minProperties",
          bound("object has fewer than ", *node.min_properties, " properties"));
    if (node.max_properties)
      add(failing::max_properties, "maxProperties",
          bound("object has more than ", *node.max_properties, " properties"));
    for (const auto& [name, needed] : node.dependent_required) {
      auto& texts = node.dependent_required_texts.emplace_back();
      for (const auto& other : needed)
        texts.push_back(
          {node.path + "/" + node.dependent_required_keyword + "/" + escape_pointer_token(name),
           "property '" + other + "' is required when '" + name + "' is present"});
    }
    if (node.min_items)
      add(failing::min_items, "minItems",
          bound("array has fewer than ", *node.min_items, " items"));
    if (node.max_items)
      add(failing::max_items, "maxItems", bound("array has more than ", *node.max_items, " items"));
    if (node.unique_items)
      add(failing::unique_items, "uniqueItems", "array items are not unique");
    if (node.contains) {
      add(failing::contains, node.min_contains ? "minContains" : "contains",
          bound("array contains fewer than ", node.min_contains.value_or(1), " matching items"));
      if (node.max_contains)
        add(failing::max_contains, "maxContains",
            bound("array contains more than ", *node.max_contains, " matching items"));
    }
    if (!node.any_of.empty())
      add(failing::any_of, "anyOf", "value does not match any schema in anyOf");
    if (!node.one_of.empty()) {
      add(failing::one_of, "oneOf", {});
      node.one_of_texts.emplace_back("value does not match any schema in oneOf");
      node.one_of_texts.emplace_back(); // one match holds
      for (size_t matches = 2; matches <= node.one_of.size(); ++matches)
        node.one_of_texts.push_back("value matches " + std::to_string(matches)
                                    + " schemas in oneOf, expected one");
    }
    if (node.not_)
      add(failing::not_, "not", "value matches the schema in not");
    if (node.unevaluated_properties)
      add(failing::unevaluated_properties, "unevaluatedProperties",
          "unevaluated property is not allowed");
    if (node.unevaluated_items)
      add(failing::unevaluated_items, "unevaluatedItems", "unevaluated item is not allowed");
  }

  /// Compile-time work for validation: the property name table, presence
  /// bits of required and dependency names, the keyword groups present.
  static void seal(schema_node& node) {
    using namespace detail;
    for (const auto& [name, sub_node] : node.properties)
      node.names.entries()[node.names.add(name)].sub = sub_node;
    for (const auto& name : node.required) {
      size_t entry = node.names.add(name);
      node.required_entries.push_back(entry);
      node.required_mask |= node.names.entries()[entry].bit;
      node.required_unmasked = node.required_unmasked || node.names.entries()[entry].bit == 0;
    }
    for (const auto& [name, needed] : node.dependent_required) {
      node.dependent_required_triggers.push_back(node.names.add(name));
      auto& entries = node.dependent_required_entries.emplace_back();
      for (const auto& other : needed)
        entries.push_back(node.names.add(other));
    }
    for (const auto& [name, sub_node] : node.dependent_schemas)
      node.dependent_schema_triggers.push_back(node.names.add(name));
    node.names.seal();
    node.additional_false = node.additional_properties && node.additional_properties->is_boolean
                            && !node.additional_properties->boolean_value;
    node.visits_members = !node.names.empty() || !node.pattern_properties.empty()
                          || node.additional_properties || node.property_names;
    node.tracks_evaluation = node.unevaluated_properties || node.unevaluated_items;

    if (node.ref || node.dynamic_ref || !node.dynamic_ref_anchor.empty())
      node.groups |= group_refs;
    if (node.minimum || node.maximum || node.exclusive_minimum || node.exclusive_maximum
        || node.multiple_of)
      node.groups |= group_number;
    if (node.min_length || node.max_length || node.pattern)
      node.groups |= group_string;
    if (node.visits_members || node.min_properties || node.max_properties
        || !node.dependent_required.empty() || !node.dependent_schemas.empty()
        || node.unevaluated_properties)
      node.groups |= group_object;
    if (!node.prefix_items.empty() || node.items || node.min_items || node.max_items
        || node.unique_items || node.contains || node.unevaluated_items)
      node.groups |= group_array;
    if (!node.all_of.empty() || !node.any_of.empty() || !node.one_of.empty() || node.not_
        || node.if_)
      node.groups |= group_combinators;
    node.is_leaf = !(node.groups & (group_refs | group_object | group_array | group_combinators))
                   && !node.tracks_evaluation;
    if (node.is_leaf && !node.is_boolean && !node.const_value) {
      bool plain_number = node.groups == group_number && !node.exclusive_minimum
                          && !node.exclusive_maximum && !node.multiple_of;
      if (node.groups == 0 && node.types && !node.enum_values) {
        node.leaf = leaf_shape::types;
      } else if (node.groups == 0 && node.enum_values && node.enum_all_strings
                 && (!node.types || (node.types & type_string))) {
        node.leaf = leaf_shape::string_enum;
      } else if (plain_number && node.types && !node.enum_values) {
        node.leaf = leaf_shape::bounded;
        node.low = node.minimum.value_or(-std::numeric_limits<double>::infinity());
        node.high = node.maximum.value_or(std::numeric_limits<double>::infinity());
      }
    }
    node.pure_ref = node.groups == group_refs && node.ref && !node.dynamic_ref
                    && node.dynamic_ref_anchor.empty() && !node.is_resource && !node.types
                    && !node.enum_values && !node.const_value && !node.tracks_evaluation;
    // without in-place applicators, unevaluatedProperties sees only the
    // members properties and additionalProperties matched
    bool dependent_masked = true;
    for (size_t dep_idx = 0; dep_idx < node.dependent_required_triggers.size(); ++dep_idx) {
      uint64_t trigger = node.names[node.dependent_required_triggers[dep_idx]].bit;
      uint64_t needed = 0;
      for (size_t entry : node.dependent_required_entries[dep_idx]) {
        dependent_masked = dependent_masked && node.names[entry].bit;
        needed |= node.names[entry].bit;
      }
      dependent_masked = dependent_masked && trigger;
      node.dependent_masks.emplace_back(trigger, needed);
    }
    bool in_place =
      (node.groups & (group_refs | group_combinators)) || !node.dependent_schemas.empty();
    node.simple_object = !in_place && !node.enum_values && !node.const_value
                         && !node.unevaluated_items && node.pattern_properties.empty()
                         && !node.property_names && dependent_masked && !node.min_properties
                         && !node.max_properties && !node.required_unmasked;
    node.unmatched_members =
      node.additional_properties ? node.additional_properties : node.unevaluated_properties;
    node.simple_array = !in_place && !node.enum_values && !node.const_value
                        && !node.tracks_evaluation && !node.contains;
    write_failure_texts(node);
  }

  void compile_keywords(const json& schema, schema_node& node, const location& loc) {
    const auto& at = loc.pointer;
    bool draft7 = loc.draft == schema_draft::draft7;

    // $ref (draft 7: siblings are ignored)
    if (schema.contains("$ref")) {
      node.ref = compile_ref(schema, "$ref", loc);
      if (draft7)
        return;
    }
    if (!draft7) {
      // dynamic scope: a resource root lists its $dynamicAnchors
      if (auto root = resources_.find(loc.base);
          root != resources_.end() && root->second == &schema) {
        node.is_resource = true;
        if (auto anchors = dynamic_anchors_.find(loc.base); anchors != dynamic_anchors_.end())
          for (const auto& [name, target] : anchors->second)
            node.dynamic_anchors.emplace(name, compile(*target));
      }
      if (auto found = schema.find("$dynamicRef"); found != schema.end()) {
        node.dynamic_ref = compile_ref(schema, "$dynamicRef", loc);
        if (found->is_string()) {
          std::string ref = found->get<std::string>();
          auto hash = ref.find('#');
          std::string name = hash == std::string::npos ? "" : ref.substr(hash + 1);
          const json* target = resolve(loc.base, ref, loc.draft);
          if (!name.empty() && name[0] != '/' && target && target->is_object()) {
            auto anchor = target->find("$dynamicAnchor");
            if (anchor != target->end() && *anchor == name)
              node.dynamic_ref_anchor = name;
          }
        }
      }
    }

    // type, enum, const
    if (auto found = schema.find("type"); found != schema.end()) {
      static const std::map<std::string, uint8_t> names = {
        {"null", detail::type_null},      {"boolean", detail::type_boolean},
        {"object", detail::type_object},  {"array", detail::type_array},
        {"number", detail::type_number},  {"string", detail::type_string},
        {"integer", detail::type_integer}};
      std::vector<std::string> listed = found->is_string()
                                          ? std::vector<std::string>{found->get<std::string>()}
                                          : string_array(*found, at + "/type");
      for (const auto& name : listed) {
        auto bit = names.find(name);
        if (bit == names.end()) {
          fail(at + "/type", "unknown type '" + name + "'");
          break;
        }
        node.types |= bit->second;
        node.type_text += (node.type_text.empty() ? "" : ", ") + name;
      }
      if (listed.empty() && node.types == 0)
        node.types = 0xff; // an empty list: treated as unconstrained
    }
    if (auto found = schema.find("enum"); found != schema.end()) {
      if (!found->is_array())
        fail(at + "/enum", "must be an array");
      else {
        node.enum_values = &*found;
        node.enum_all_strings = std::all_of(found->begin(), found->end(),
                                            [](const json& item) { return item.is_string(); });
        if (node.enum_all_strings) {
          for (const auto& item : *found)
            node.enum_strings.add(item.get<std::string>());
          node.enum_strings.seal();
        }
      }
    }
    if (auto found = schema.find("const"); found != schema.end())
      node.const_value = &*found;

    // object keywords
    if (auto found = schema.find("properties"); found != schema.end()) {
      if (!found->is_object())
        fail(at + "/properties", "must be an object of schemas");
      else
        for (const auto& [name, sub_schema] : found->items()) {
          if (!sub_schema.is_object() && !sub_schema.is_boolean()) {
            fail(at + "/properties/" + escape_pointer_token(name), "must be a schema");
            continue;
          }
          node.properties.emplace_back(name, compile(sub_schema));
        }
    }
    if (auto found = schema.find("patternProperties"); found != schema.end()) {
      if (!found->is_object())
        fail(at + "/patternProperties", "must be an object of schemas");
      else
        for (const auto& [source, sub_schema] : found->items()) {
          std::string path = at + "/patternProperties/" + escape_pointer_token(source);
          if (!sub_schema.is_object() && !sub_schema.is_boolean()) {
            fail(path, "must be a schema");
            continue;
          }
          if (auto re = regex(source, path))
            node.pattern_properties.emplace_back(std::move(*re), compile(sub_schema));
        }
    }
    node.additional_properties = sub(schema, "additionalProperties", loc);
    if (auto found = schema.find("required"); found != schema.end())
      node.required = string_array(*found, at + "/required");
    count(schema, "minProperties", loc, node.min_properties);
    count(schema, "maxProperties", loc, node.max_properties);
    node.property_names = sub(schema, "propertyNames", loc);
    auto compile_dependencies = [&](const char* keyword, bool arrays, bool schemas) {
      auto found = schema.find(keyword);
      if (found == schema.end())
        return;
      if (!found->is_object()) {
        fail(at + "/" + keyword, "must be an object");
        return;
      }
      for (const auto& [name, value] : found->items()) {
        std::string path = at + "/" + keyword + "/" + escape_pointer_token(name);
        if (arrays && value.is_array()) {
          node.dependent_required.emplace_back(name, string_array(value, path));
          node.dependent_required_keyword = keyword;
        } else if (schemas && (value.is_object() || value.is_boolean())) {
          node.dependent_schemas.emplace_back(name, compile(value));
          node.dependent_schemas_keyword = keyword;
        } else {
          fail(path, "has the wrong type");
        }
      }
    };
    if (draft7) {
      compile_dependencies("dependencies", true, true);
    } else {
      compile_dependencies("dependentRequired", true, false);
      compile_dependencies("dependentSchemas", false, true);
      node.unevaluated_properties = sub(schema, "unevaluatedProperties", loc);
    }

    // array keywords
    if (auto found = schema.find("items"); found != schema.end() && found->is_array()) {
      node.prefix_items = sub_array(schema, "items", loc, false);
      node.prefix_keyword = "items";
      node.items = sub(schema, "additionalItems", loc);
      node.items_keyword = "additionalItems";
    } else {
      node.items = sub(schema, "items", loc);
      if (!draft7)
        node.prefix_items = sub_array(schema, "prefixItems", loc, false);
    }
    count(schema, "minItems", loc, node.min_items);
    count(schema, "maxItems", loc, node.max_items);
    if (auto found = schema.find("uniqueItems"); found != schema.end()) {
      if (!found->is_boolean())
        fail(at + "/uniqueItems", "must be a boolean");
      else
        node.unique_items = found->get<bool>();
    }
    node.contains = sub(schema, "contains", loc);
    if (!draft7) {
      count(schema, "minContains", loc, node.min_contains);
      count(schema, "maxContains", loc, node.max_contains);
      node.unevaluated_items = sub(schema, "unevaluatedItems", loc);
    }

    // string keywords
    count(schema, "minLength", loc, node.min_length);
    count(schema, "maxLength", loc, node.max_length);
    if (auto found = schema.find("pattern"); found != schema.end()) {
      if (!found->is_string())
        fail(at + "/pattern", "must be a string");
      else
        node.pattern = regex(found->get<std::string>(), at + "/pattern");
    }

    // numeric keywords
    number(schema, "minimum", loc, node.minimum);
    number(schema, "maximum", loc, node.maximum);
    number(schema, "exclusiveMinimum", loc, node.exclusive_minimum);
    number(schema, "exclusiveMaximum", loc, node.exclusive_maximum);
    if (auto found = schema.find("multipleOf"); found != schema.end()) {
      if (!found->is_number() || found->get<double>() <= 0)
        fail(at + "/multipleOf", "must be a number greater than 0");
      else {
        node.multiple_of = *found;
        node.multiple_of_integer = found->is_number_integer();
        if (node.multiple_of_integer)
          node.multiple_of_unsigned = found->get<uint64_t>();
        node.multiple_of_double = found->get<double>();
      }
    }

    // combinators and conditionals
    node.all_of = sub_array(schema, "allOf", loc, true);
    node.any_of = sub_array(schema, "anyOf", loc, true);
    node.one_of = sub_array(schema, "oneOf", loc, true);
    node.not_ = sub(schema, "not", loc);
    node.if_ = sub(schema, "if", loc);
    node.then_ = sub(schema, "then", loc);
    node.else_ = sub(schema, "else", loc);

    if (!loc.validation) { // the document's meta-schema leaves validation out
      node.types = 0;
      node.enum_values = node.const_value = nullptr;
      node.enum_all_strings = false;
      node.required.clear();
      node.dependent_required.clear();
      node.min_properties = node.max_properties = node.min_items = node.max_items =
        node.min_contains = node.max_contains = node.min_length = node.max_length = std::nullopt;
      node.unique_items = false;
      node.pattern.reset();
      node.minimum = node.maximum = node.exclusive_minimum = node.exclusive_maximum = std::nullopt;
      node.multiple_of.reset();
    }

    // definitions: compiled so that errors inside them surface now
    for (const char* keyword : {"definitions", "$defs"}) {
      if (auto found = schema.find(keyword); found != schema.end()) {
        if (!found->is_object()) {
          fail(at + "/" + keyword, "must be an object of schemas");
          continue;
        }
        for (const auto& [name, sub_schema] : found->items())
          if (sub_schema.is_object() || sub_schema.is_boolean())
            compile(sub_schema);
      }
    }
  }

  schema_store& store_;
  const schema_loader& loader_;
  std::map<std::string, const json*> resources_;
  std::map<std::string, std::map<std::string, const json*>> dynamic_anchors_;
  std::unordered_map<const json*, location> locations_;
  std::unordered_map<const json*, const schema_node*> compiled_;
  std::optional<status> failure_;
};

// --- validation ---

using element = detail::tape_value;
using simdjson::dom::element_type;

/// What a successful evaluation covered, for unevaluated*: members of the
/// object or items of the array by their index.
struct annotations {
  size_t prefix_items = 0;
  bool all = false; ///< every member or item
  std::array<uint64_t, 2> first_bits{};
  std::vector<uint64_t> more_bits; ///< indices from 128 on

  void mark(size_t idx) {
    if (idx < 128) {
      first_bits[idx >> 6] |= uint64_t{1} << (idx & 63);
      return;
    }
    size_t word = (idx - 128) >> 6;
    if (more_bits.size() <= word)
      more_bits.resize(word + 1);
    more_bits[word] |= uint64_t{1} << (idx & 63);
  }
  bool has(size_t idx) const {
    if (idx < 128)
      return (first_bits[idx >> 6] >> (idx & 63)) & 1;
    size_t word = (idx - 128) >> 6;
    return word < more_bits.size() && ((more_bits[word] >> (idx & 63)) & 1);
  }
  void merge(const annotations& other) {
    prefix_items = std::max(prefix_items, other.prefix_items);
    all = all || other.all;
    first_bits[0] |= other.first_bits[0];
    first_bits[1] |= other.first_bits[1];
    if (more_bits.size() < other.more_bits.size())
      more_bits.resize(other.more_bits.size());
    for (size_t word = 0; word < other.more_bits.size(); ++word)
      more_bits[word] |= other.more_bits[word];
  }
};

/// A location in the instance, on the stack while validation descends;
/// spelled as a JSON pointer only when an error names it.
struct path_link {
  const path_link* parent;
  std::string_view key;
  size_t index;
  bool is_key;
};

/// Appends "/" and `key` escaped as a JSON pointer token (RFC 6901).
void append_token(std::string& out, std::string_view key) {
  out += '/';
  // runs of plain bytes at once; '~' and '/' escaped
  for (;;) {
    size_t plain = 0;
    while (plain < key.size() && key[plain] != '~' && key[plain] != '/')
      ++plain;
    out.append(key.data(), plain);
    if (plain == key.size())
      return;
    out += key[plain] == '~' ? "~0" : "~1";
    key.remove_prefix(plain + 1);
  }
}

void append_pointer(std::string& out, const path_link* at) {
  if (!at)
    return;
  append_pointer(out, at->parent);
  if (at->is_key)
    append_token(out, at->key);
  else
    out.append("/").append(std::to_string(at->index));
}

/// The JSON pointer of the value starting at tape word `target` within
/// `root`: each container on the way is searched for the member or item
/// whose words hold it.
std::string pointer_to(element root, const uint64_t* target) {
  std::string out;
  element at = root;
  // (a target outside the container at hand, or in no member of it, ends
  // the walk: the pointer so far)
  while (at.word() != target && at.word() < target && target < at.after()) {
    const uint64_t* before = at.word();
    if (at.tape_type() == '{') {
      for (auto field : at.object())
        if (field.value.word() <= target && target < field.value.after()) {
          append_token(out, field.key);
          at = field.value;
          break;
        }
    } else if (at.tape_type() == '[') {
      size_t item_idx = 0;
      for (element item : at.array()) {
        if (item.word() <= target && target < item.after()) {
          out.append("/").append(std::to_string(item_idx));
          at = item;
          break;
        }
        ++item_idx;
      }
    }
    if (at.word() == before)
      break;
  }
  return out;
}

std::string to_pointer(const path_link* at) {
  std::string out;
  append_pointer(out, at);
  return out;
}

size_t code_points(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

/// Whether a string of `bytes` bytes may hold fewer than `min_length` code
/// points, so that they must be counted (a code point takes 1 to 4 bytes).
/// Divided, not multiplied: a huge minLength must not wrap around.
bool may_be_shorter(size_t bytes, size_t min_length) {
  return bytes / 4 < min_length;
}

inline bool is_number(element_type kind) {
  return kind == element_type::INT64 || kind == element_type::UINT64
         || kind == element_type::DOUBLE;
}

uint8_t type_bits(element value) {
  using namespace detail;
  switch (value.type()) {
  case element_type::NULL_VALUE:
    return type_null;
  case element_type::BOOL:
    return type_boolean;
  case element_type::OBJECT:
    return type_object;
  case element_type::ARRAY:
    return type_array;
  case element_type::STRING:
    return type_string;
  case element_type::INT64:
  case element_type::UINT64:
    return type_number | type_integer;
  case element_type::DOUBLE: {
    double number = value.float64();
    return std::isfinite(number) && std::floor(number) == number ? type_number | type_integer
                                                                 : type_number;
  }
  }
  return 0;
}

/// A number of the instance or of the schema, as JSON gave it.
struct number_view {
  enum class kind : uint8_t { negative, non_negative, floating };
  kind which = kind::floating;
  uint64_t magnitude = 0; ///< integers: the absolute value
  double value = 0;
};

[[gnu::always_inline]] inline number_view number_of(element value) {
  number_view out;
  switch (value.type()) {
  case element_type::INT64: {
    int64_t number = value.int64();
    out.which = number < 0 ? number_view::kind::negative : number_view::kind::non_negative;
    out.magnitude =
      number < 0 ? uint64_t{0} - static_cast<uint64_t>(number) : static_cast<uint64_t>(number);
    out.value = static_cast<double>(number);
    break;
  }
  case element_type::UINT64:
    out.which = number_view::kind::non_negative;
    out.magnitude = value.uint64();
    out.value = static_cast<double>(out.magnitude);
    break;
  default:
    out.value = value.float64();
  }
  return out;
}

number_view number_of(const json& value) {
  number_view out;
  if (value.is_number_unsigned()) {
    out.which = number_view::kind::non_negative;
    out.magnitude = value.get<uint64_t>();
  } else if (value.is_number_integer()) {
    int64_t number = value.get<int64_t>();
    out.which = number < 0 ? number_view::kind::negative : number_view::kind::non_negative;
    out.magnitude =
      number < 0 ? uint64_t{0} - static_cast<uint64_t>(number) : static_cast<uint64_t>(number);
  }
  out.value = value.get<double>();
  return out;
}

/// JSON equality of numbers: integers exactly, otherwise as doubles.
bool numbers_equal(const number_view& left, const number_view& right) {
  if (left.which != number_view::kind::floating && right.which != number_view::kind::floating)
    return left.which == right.which && left.magnitude == right.magnitude;
  return left.value == right.value;
}

/// JSON equality (numbers by value, objects regardless of member order).
bool equal(element left, element right) {
  element_type kind = left.type();
  if (is_number(kind))
    return is_number(right.type()) && numbers_equal(number_of(left), number_of(right));
  if (kind != right.type())
    return false;
  switch (kind) {
  case element_type::NULL_VALUE:
    return true;
  case element_type::BOOL:
    return left.boolean() == right.boolean();
  case element_type::STRING:
    return left.string() == right.string();
  case element_type::ARRAY: {
    auto left_array = left.array();
    auto right_array = right.array();
    if (left_array.size() != right_array.size())
      return false;
    auto right_item = right_array.begin();
    for (element left_item : left_array) {
      if (!equal(left_item, *right_item))
        return false;
      ++right_item;
    }
    return true;
  }
  case element_type::OBJECT: {
    auto left_object = left.object();
    auto right_object = right.object();
    if (left_object.size() != right_object.size())
      return false;
    for (auto field : left_object) {
      element other = field.value;
      if (!right_object.find(field.key, other) || !equal(field.value, other))
        return false;
    }
    return true;
  }
  default:
    return false;
  }
}

/// JSON equality of an instance value and a schema constant.
bool equal(element left, const json& right) {
  element_type kind = left.type();
  if (is_number(kind))
    return right.is_number() && numbers_equal(number_of(left), number_of(right));
  switch (kind) {
  case element_type::NULL_VALUE:
    return right.is_null();
  case element_type::BOOL:
    return right.is_boolean() && left.boolean() == right.get<bool>();
  case element_type::STRING:
    return right.is_string() && left.string() == right.get_ref<const std::string&>();
  case element_type::ARRAY: {
    auto array = left.array();
    if (!right.is_array() || array.size() != right.size())
      return false;
    size_t item_idx = 0;
    for (element item : array)
      if (!equal(item, right[item_idx++]))
        return false;
    return true;
  }
  case element_type::OBJECT: {
    auto object = left.object();
    if (!right.is_object() || object.size() != right.size())
      return false;
    for (auto field : object) {
      auto found = right.find(std::string(field.key));
      if (found == right.end() || !equal(field.value, *found))
        return false;
    }
    return true;
  }
  default:
    return false;
  }
}

bool enum_contains(const schema_node& node, element value) {
  if (node.enum_all_strings) {
    if (value.type() != element_type::STRING)
      return false;
    return node.enum_strings.find_entry(value.string()) != nullptr;
  }
  return std::any_of(node.enum_values->begin(), node.enum_values->end(),
                     [&](const json& candidate) { return equal(value, candidate); });
}

bool is_multiple(element value, const schema_node& node) {
  element_type kind = value.type();
  if (node.multiple_of_integer && (kind == element_type::INT64 || kind == element_type::UINT64))
    return number_of(value).magnitude % node.multiple_of_unsigned == 0;
  double quotient = number_of(value).value / node.multiple_of_double;
  if (!std::isfinite(quotient))
    return false;
  return std::fabs(quotient - std::round(quotient)) < 1e-9 * std::max(1.0, std::fabs(quotient));
}

/// A property name as a string instance (for propertyNames): a one-string
/// tape of the calling thread's own (the name's length and bytes in its
/// string buffer); valid until the next call.
element key_instance(std::string_view key) {
  thread_local std::string strings;
  thread_local uint64_t word = uint64_t{'"'} << 56;
  thread_local detail::tape_document doc;
  auto size = static_cast<uint32_t>(key.size()); // a key of a parsed document: < 4 GiB
  strings.assign(reinterpret_cast<const char*>(&size), sizeof size);
  strings.append(key);
  strings.append(8, '\0'); // padded as simdjson pads its strings
  doc.tape = &word;
  doc.strings = reinterpret_cast<const uint8_t*>(strings.data());
  return element{doc, &word};
}

/// Type bits of each element kind (indexed by its tape character); a double
/// is an integer too when it has no fraction, which `type_matches` checks.
constexpr std::array<uint8_t, 128> kind_type_bits = [] {
  using namespace detail;
  std::array<uint8_t, 128> bits{};
  bits[static_cast<uint8_t>(element_type::NULL_VALUE)] = type_null;
  bits[static_cast<uint8_t>(element_type::BOOL)] = type_boolean;
  bits[static_cast<uint8_t>(element_type::OBJECT)] = type_object;
  bits[static_cast<uint8_t>(element_type::ARRAY)] = type_array;
  bits[static_cast<uint8_t>(element_type::STRING)] = type_string;
  bits[static_cast<uint8_t>(element_type::INT64)] = type_number | type_integer;
  bits[static_cast<uint8_t>(element_type::UINT64)] = type_number | type_integer;
  bits[static_cast<uint8_t>(element_type::DOUBLE)] = type_number;
  bits['f'] = type_boolean; // (the tape's false; element_type says BOOL, 't', for both)
  return bits;
}();

/// Whether `value`, whose tape character is `tape_type`, has one of `types`.
inline bool type_matches(uint8_t types, char tape_type, element value) {
  if (types & kind_type_bits[static_cast<uint8_t>(tape_type) & 127])
    return true;
  return tape_type == 'd' && (types & detail::type_integer)
         && (type_bits(value) & detail::type_integer);
}

/// The keywords of `node` that look at `value` alone (type, enum, const,
/// numbers, strings), in `check`'s order. `fail(keyword)` records a failure
/// and says whether to go on; false when it said no.
template <class Fail>
[[gnu::always_inline]] inline bool scalar_keywords(const schema_node& node, element value,
                                                   element_type kind, Fail&& fail) {
  // type, enum, const
  if (node.types && !type_matches(node.types, value.tape_type(), value) && !fail(failing::type))
    return false;
  if (node.enum_values && !enum_contains(node, value) && !fail(failing::enum_))
    return false;
  if (node.const_value && !equal(value, *node.const_value) && !fail(failing::const_))
    return false;

  // numbers
  if ((node.groups & detail::group_number) && is_number(kind)) {
    double number = number_of(value).value;
    if (node.minimum && number < *node.minimum && !fail(failing::minimum))
      return false;
    if (node.maximum && number > *node.maximum && !fail(failing::maximum))
      return false;
    if (node.exclusive_minimum && number <= *node.exclusive_minimum
        && !fail(failing::exclusive_minimum))
      return false;
    if (node.exclusive_maximum && number >= *node.exclusive_maximum
        && !fail(failing::exclusive_maximum))
      return false;
    if (node.multiple_of && !is_multiple(value, node) && !fail(failing::multiple_of))
      return false;
  }

  // strings
  if ((node.groups & detail::group_string) && kind == element_type::STRING) {
    std::string_view text = value.string();
    // a code point takes 1 to 4 bytes: count only when the byte length cannot decide
    bool count = (node.min_length && may_be_shorter(text.size(), *node.min_length))
                 || (node.max_length && text.size() > *node.max_length);
    size_t length = count ? code_points(text) : text.size();
    if (node.min_length && count && length < *node.min_length && !fail(failing::min_length))
      return false;
    if (node.max_length && length > *node.max_length && !fail(failing::max_length))
      return false;
    if (node.pattern) {
      if (!node.pattern->fits(text.size())) {
        if (!fail(failing::pattern_bound))
          return false;
      } else if (!node.pattern->search(text) && !fail(failing::pattern)) {
        return false;
      }
    }
  }
  return true;
}

/// The boolean check of a leaf node (no subschemas).
[[gnu::always_inline]] inline bool leaf_valid(const schema_node& node, element value) {
  char tape_type = value.tape_type();
  switch (node.leaf) {
  case detail::leaf_shape::types:
    return type_matches(node.types, tape_type, value);
  case detail::leaf_shape::string_enum:
    return tape_type == '"' && node.enum_strings.find_entry(value.string()) != nullptr;
  case detail::leaf_shape::bounded: {
    if (!type_matches(node.types, tape_type, value))
      return false;
    if (tape_type != 'l' && tape_type != 'u' && tape_type != 'd')
      return true;
    double number = number_of(value).value;
    return number >= node.low && number <= node.high;
  }
  case detail::leaf_shape::general:
    break;
  }
  if (node.is_boolean)
    return node.boolean_value;
  return scalar_keywords(node, value, value.type(), [](failing) { return false; });
}

constexpr std::string_view too_deep = "schema evaluation exceeds the maximum depth of 256 "
                                      "(recursive $ref?)";
static_assert(max_validation_depth == 256, "too_deep names the bound");
constexpr std::string_view too_much_work =
  "schema evaluation exceeds its work bound (applicators that multiply, such as anyOf or oneOf "
  "over shared $refs)";

/// State of one validation pass: where errors go (none in the boolean pass)
/// and the dynamic scope (entered schema resources, outermost first).
struct eval_context {
  std::vector<schema_error>* errors = nullptr;
  size_t max_errors = all_errors;
  // Bounds (see max_validation_depth, validation_steps_base): past either,
  // the pass stops and the document is invalid with `stop_reason`, whatever
  // the evaluations still open would answer (a `not` would turn a stop into
  // a pass).
  uint64_t steps = 0;
  uint64_t max_steps = validation_steps_base;
  std::string_view stop_reason;         ///< set: the pass stopped
  const uint64_t* stop_value = nullptr; ///< where: the value's tape word (null: the root)
  std::string_view stop_schema_path;    ///< and the schema
  /// The instance's tape words (a propertyNames key is evaluated outside it).
  const uint64_t* tape_begin = nullptr;
  const uint64_t* tape_end = nullptr;
  bool stopped() const noexcept { return !stop_reason.empty(); }
  bool dynamic = false;
  int scope_size = 0;
  std::array<const schema_node*, max_validation_depth + 2> scope;
  // The boolean pass, when only the first error is wanted: the failure that
  // failed the document, so that no second pass is needed (see `note_leaf`).
  bool note_failures = false;
  int probing = 0; ///< > 0 where a failure is not the document's (anyOf, not, contains...)
  const uint64_t* failed_value = nullptr;   ///< the failing value's tape word (set: noted)
  const schema_node* failed_leaf = nullptr; ///< a leaf: its first failing keyword is the error
  std::string_view failed_schema_path, failed_constraint; ///< else: the error's texts
};

/// Marks a subschema evaluation whose failure the enclosing keyword decides
/// (a probe): a failure inside it is not the document's.
struct probe_scope {
  eval_context& ctx;
  explicit probe_scope(eval_context& context) : ctx(context) { ++ctx.probing; }
  ~probe_scope() { --ctx.probing; }
  probe_scope(const probe_scope&) = delete;
  probe_scope& operator=(const probe_scope&) = delete;
};

/// Whether a failure now would be noted: the boolean pass wants the first
/// error, and no probe is open.
inline bool noting(const eval_context& ctx) {
  return ctx.note_failures && !ctx.probing;
}

/// The boolean pass: notes that `leaf` failed on `value`. Outside probes a
/// failure ends the pass and fails the document, and the collecting pass
/// would list this failure's error first (it walks the same way), so that
/// error can be written from the note.
inline void note_leaf(eval_context& ctx, const schema_node& leaf, element value) {
  if (!noting(ctx))
    return;
  ctx.failed_value = value.word();
  ctx.failed_leaf = &leaf;
}

/// The same for a failure whose error is known: at `value`, these texts.
inline void note_error(eval_context& ctx, element value, std::string_view schema_path,
                       std::string_view constraint) {
  if (!noting(ctx))
    return;
  ctx.failed_value = value.word();
  ctx.failed_schema_path = schema_path;
  ctx.failed_constraint = constraint;
}

template <bool Collect>
bool check(eval_context& ctx, const schema_node& node, element value, const path_link* at,
           annotations* seen, int depth);

/// Whether evaluating `node` enters another schema resource than the
/// innermost of the dynamic scope.
inline bool enters_resource(const eval_context& ctx, const schema_node& node) {
  return node.resource
         && (ctx.scope_size == 0
             || ctx.scope[static_cast<size_t>(ctx.scope_size - 1)] != node.resource);
}

/// Object and array nodes whose keywords are plain (simple_object,
/// simple_array) take a short way in both passes.
template <bool Collect>
bool simple_object_valid(eval_context& ctx, const schema_node& node, detail::tape_object object,
                         const path_link* at, int depth);
template <bool Collect>
bool simple_array_valid(eval_context& ctx, const schema_node& node, detail::tape_array array,
                        const path_link* at, int depth);

/// Lists an error of `node` (the collecting pass); true while more are listed.
bool list_error(eval_context& ctx, std::string_view schema_path, std::string_view constraint,
                const path_link* at) {
  ctx.errors->push_back({to_pointer(at), schema_path, constraint});
  return ctx.errors->size() < ctx.max_errors;
}

constexpr std::string_view false_schema = "no value is allowed here (false schema)";

/// Lists the errors of a leaf `value` failed (the collecting pass): what
/// `check` lists for it. Returns false (the leaf does not hold).
[[gnu::noinline]] bool leaf_errors(eval_context& ctx, const schema_node& node, element value,
                                   const path_link* at) {
  if (node.is_boolean) {
    list_error(ctx, node.path, false_schema, at);
    return false;
  }
  scalar_keywords(node, value, value.type(), [&](failing keyword) {
    const failure_text& text = node.text(keyword);
    return list_error(ctx, text.schema_path, text.constraint, at);
  });
  return false;
}

/// Checks a member or item against its subschema: leaves and simple nodes
/// take a short way; the rest goes through `check`.
template <bool Collect>
inline bool descend(eval_context& ctx, const schema_node& sub, element target,
                    const path_link* where, int depth) {
  const schema_node* node = &sub;
  // (while a $dynamicRef may look for its anchors, every $ref and every
  // resource entered goes through `check`, which keeps the dynamic scope)
  while (node->pure_ref && !ctx.dynamic && depth <= max_validation_depth) {
    node = node->ref;
    ++depth;
  }
  if (depth <= max_validation_depth && !(ctx.dynamic && enters_resource(ctx, *node))) {
    if (node->is_leaf) {
      bool ok = leaf_valid(*node, target);
      if (ok) // a leaf that holds has no error to list
        return true;
      if constexpr (!Collect) {
        note_leaf(ctx, *node, target);
        return false;
      }
      return leaf_errors(ctx, *node, target, where);
    }
    element_type kind = target.type();
    // (the collecting pass lists unevaluated members where `check` does)
    if (node->simple_object && kind == element_type::OBJECT
        && (!node->types || (node->types & detail::type_object))
        && (!Collect || !node->unevaluated_properties || node->additional_properties))
      return simple_object_valid<Collect>(ctx, *node, target.object(), where, depth);
    if (node->simple_array && kind == element_type::ARRAY
        && (!node->types || (node->types & detail::type_array)))
      return simple_array_valid<Collect>(ctx, *node, target.array(), where, depth);
  }
  return check<Collect>(ctx, *node, target, where, nullptr, depth);
}

/// An object against a node with type, properties, required,
/// dependentRequired and additionalProperties or unevaluatedProperties only
/// (no in-place applicator): the errors `check` lists, in its order.
template <bool Collect>
[[gnu::noinline]] bool simple_object_valid(eval_context& ctx, const schema_node& node,
                                           detail::tape_object object, const path_link* at,
                                           int depth) {
  if (ctx.stopped())
    return false;
  ctx.steps += object.size_bound();
  uint64_t present = 0;
  bool valid = true;
  for (auto field : object) {
    const schema_node* sub = nullptr;
    if (const detail::name_entry* found = node.names.find_entry(field.key)) {
      present |= found->bit;
      sub = found->sub;
    }
    bool declared = sub != nullptr;
    if (!declared && !(sub = node.unmatched_members))
      continue;
    if (sub->is_leaf && depth < max_validation_depth) {
      if (__builtin_expect(leaf_valid(*sub, field.value), 1))
        continue;
      if constexpr (!Collect) {
        // (a member unevaluatedProperties refuses is listed after the
        // declared ones by the collecting pass: not noted)
        bool unevaluated = !declared && !node.additional_properties;
        if (!declared && !unevaluated && sub->is_boolean) {
          const auto& text = node.text(failing::additional_properties);
          note_error(ctx, field.value, text.schema_path, text.constraint);
        } else if (!unevaluated) {
          note_leaf(ctx, *sub, field.value);
        }
        return false;
      }
      // the errors, with the member's path only now
      valid = false;
      path_link where{at, field.key, 0, true};
      if (!declared && sub->is_boolean) { // additionalProperties: false
        const auto& text = node.text(failing::additional_properties);
        if (!list_error(ctx, text.schema_path, text.constraint, &where))
          return false;
      } else if (leaf_errors(ctx, *sub, field.value, &where),
                 ctx.errors->size() >= ctx.max_errors) {
        return false;
      }
    } else if constexpr (Collect) {
      path_link where{at, field.key, 0, true};
      if (!descend<true>(ctx, *sub, field.value, &where, depth + 1)) {
        valid = false;
        if (ctx.errors->size() >= ctx.max_errors)
          return false;
      }
    } else {
      // (a member unevaluatedProperties evaluates: a failure inside it is
      // that keyword's, listed after the others, so never noted)
      std::optional<probe_scope> unevaluated;
      if (!declared && !node.additional_properties)
        unevaluated.emplace(ctx);
      if (!descend<false>(ctx, *sub, field.value, nullptr, depth + 1))
        return false;
    }
  }
  // (the first missing name of a dependency or `required`, in the
  // collecting pass's order, is what a noted failure names)
  auto first_missing = [&](const std::vector<size_t>& entries) {
    size_t idx = 0;
    while (idx < entries.size() && (present & node.names[entries[idx]].bit))
      ++idx;
    return idx;
  };
  if ((present & node.required_mask) != node.required_mask) {
    if constexpr (!Collect) {
      note_error(ctx, object.container(), node.text(failing::required).schema_path,
                 node.required_texts[first_missing(node.required_entries)]);
      return false;
    }
    valid = false;
    for (size_t required_idx = 0; required_idx < node.required.size(); ++required_idx)
      if (!(present & node.names[node.required_entries[required_idx]].bit)
          && !list_error(ctx, node.text(failing::required).schema_path,
                         node.required_texts[required_idx], at))
        return false;
  }
  for (size_t dep_idx = 0; dep_idx < node.dependent_masks.size(); ++dep_idx) {
    auto [trigger, needed] = node.dependent_masks[dep_idx];
    if (!(present & trigger) || (present & needed) == needed)
      continue;
    const auto& entries = node.dependent_required_entries[dep_idx];
    if constexpr (!Collect) {
      const auto& text = node.dependent_required_texts[dep_idx][first_missing(entries)];
      note_error(ctx, object.container(), text.schema_path, text.constraint);
      return false;
    }
    valid = false;
    for (size_t other_idx = 0; other_idx < entries.size(); ++other_idx) {
      const auto& text = node.dependent_required_texts[dep_idx][other_idx];
      if (!(present & node.names[entries[other_idx]].bit)
          && !list_error(ctx, text.schema_path, text.constraint, at))
        return false;
    }
  }
  return valid;
}

/// What all_unique found.
enum class uniqueness : uint8_t { unique, repeated, past_work_bound };
uniqueness all_unique(eval_context& ctx, detail::tape_array array);

/// Stops the pass at a bound (`reason`), at `value` of the schema at
/// `schema_path`; the collecting pass lists the stop as its error. False.
template <bool Collect>
bool stop_pass(eval_context& ctx, std::string_view reason, element value,
               std::string_view schema_path, const path_link* at) {
  ctx.stop_reason = reason;
  if (value.word() >= ctx.tape_begin && value.word() < ctx.tape_end)
    ctx.stop_value = value.word();
  ctx.stop_schema_path = schema_path;
  if constexpr (Collect)
    ctx.errors->push_back({to_pointer(at), schema_path, reason});
  return false;
}

/// An array against a node with type and item keywords only: the errors
/// `check` lists, in its order.
template <bool Collect>
[[gnu::noinline]] bool simple_array_valid(eval_context& ctx, const schema_node& node,
                                          detail::tape_array array, const path_link* at,
                                          int depth) {
  if (ctx.stopped())
    return false;
  ctx.steps += array.size_bound();
  bool valid = true;
  auto bound = [&](failing keyword) {
    valid = false;
    const failure_text& text = node.text(keyword);
    if constexpr (Collect)
      return list_error(ctx, text.schema_path, text.constraint, at);
    note_error(ctx, array.container(), text.schema_path, text.constraint);
    return false;
  };
  if (node.min_items || node.max_items) {
    size_t size = array.size();
    if (node.min_items && size < *node.min_items && !bound(failing::min_items))
      return false;
    if (node.max_items && size > *node.max_items && !bound(failing::max_items))
      return false;
  }
  if (node.unique_items) {
    auto unique = all_unique(ctx, array);
    if (unique == uniqueness::past_work_bound)
      return stop_pass<Collect>(ctx, too_much_work, array.container(),
                                node.text(failing::unique_items).schema_path, at);
    if (unique == uniqueness::repeated && !bound(failing::unique_items))
      return false;
  }
  size_t item_idx = 0;
  for (element item : array) {
    const schema_node* sub =
      item_idx < node.prefix_items.size() ? node.prefix_items[item_idx] : node.items;
    if (!sub)
      break;
    if constexpr (Collect) {
      path_link where{at, {}, item_idx, false};
      if (!descend<true>(ctx, *sub, item, &where, depth + 1)) {
        valid = false;
        if (ctx.errors->size() >= ctx.max_errors)
          return false;
      }
    } else if (!descend<false>(ctx, *sub, item, nullptr, depth + 1)) {
      return false;
    }
    ++item_idx;
  }
  return valid;
}

/// A hash of a value consistent with `equal`: equal values hash alike.
/// Numbers by their double value (1 and 1.0 are equal; integers that only
/// share a double are told apart by `equal` afterwards), arrays in order,
/// objects whatever their member order.
uint64_t value_hash(element value) {
  auto mix = [](uint64_t seed, uint64_t value) {
    value ^= seed + 0x9E3779B97F4A7C15ull + (value << 6) + (value >> 2);
    return value * 0xBF58476D1CE4E5B9ull;
  };
  auto bytes_hash = [](std::string_view text) {
    uint64_t hash = 14695981039346656037ull;
    for (char ch : text)
      hash = (hash ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
    return hash;
  };
  switch (value.tape_type()) {
  case 'l':
  case 'u':
  case 'd': {
    double number = number_of(value).value;
    if (number == 0)
      number = 0; // (-0.0 equals 0)
    uint64_t bits;
    std::memcpy(&bits, &number, sizeof bits);
    return mix('n', bits);
  }
  case '"':
    return mix('s', bytes_hash(value.string()));
  case '[': {
    uint64_t hash = 'a';
    for (element item : value.array())
      hash = mix(hash, value_hash(item));
    return hash;
  }
  case '{': {
    uint64_t sum = 0; // (a sum: member order does not count)
    for (auto field : value.object())
      sum += mix(bytes_hash(field.key), value_hash(field.value));
    return mix('o', sum);
  }
  default: // 't', 'f', 'n'
    return mix(static_cast<uint64_t>(value.tape_type()), 0);
  }
}

/// Whether the items are pairwise unequal (uniqueItems). Up to
/// `unique_pairs_direct` pairs are compared directly; a longer array is
/// checked in n log n: its items sorted by value_hash, and only items that
/// share a hash compared. Every comparison counts against the work bound (a
/// document crafted so that many items share a hash meets it).
uniqueness all_unique(eval_context& ctx, detail::tape_array array) {
  constexpr uint64_t unique_pairs_direct = 4096;
  uint64_t items = array.size();
  uint64_t pairs = items < 2 ? 0 : items * (items - 1) / 2;
  if (pairs <= unique_pairs_direct) {
    ctx.steps += pairs;
    for (auto first = array.begin(); first != array.end(); ++first) {
      auto second = first;
      for (++second; second != array.end(); ++second)
        if (equal(*first, *second))
          return uniqueness::repeated;
    }
    return ctx.steps <= ctx.max_steps ? uniqueness::unique : uniqueness::past_work_bound;
  }
  ctx.steps += items;
  std::vector<std::pair<uint64_t, const uint64_t*>> hashed;
  hashed.reserve(items);
  for (element item : array)
    hashed.emplace_back(value_hash(item), item.word());
  std::sort(hashed.begin(), hashed.end());
  const auto& doc = array.container().document();
  for (size_t first = 0; first < hashed.size(); ++first)
    for (size_t second = first + 1;
         second < hashed.size() && hashed[second].first == hashed[first].first; ++second) {
      if (++ctx.steps > ctx.max_steps)
        return uniqueness::past_work_bound;
      if (equal(element{doc, hashed[first].second}, element{doc, hashed[second].second}))
        return uniqueness::repeated;
    }
  return uniqueness::unique;
}

/// Checks `value` against `node`. `Collect` false: the boolean pass, stops at
/// the first failure and allocates nothing; true: lists every error. `seen`,
/// when not null, receives what this evaluation covered (an enclosing
/// unevaluated* observes it).
template <bool Collect>
bool check(eval_context& ctx, const schema_node& node, element value, const path_link* at,
           annotations* seen, int depth) {
  if (ctx.stopped())
    return false;
  if (depth > max_validation_depth || ++ctx.steps > ctx.max_steps) {
    return stop_pass<Collect>(ctx, depth > max_validation_depth ? too_deep : too_much_work, value,
                              node.path, at);
  }
  if (node.is_leaf) {
    if (leaf_valid(node, value))
      return true;
    if constexpr (Collect)
      return leaf_errors(ctx, node, value, at);
    note_leaf(ctx, node, value);
    return false;
  }
  // dynamic scope
  struct scope_guard {
    eval_context* ctx;
    ~scope_guard() {
      if (ctx)
        --ctx->scope_size;
    }
  } guard{ctx.dynamic && enters_resource(ctx, node) ? &ctx : nullptr};
  if (guard.ctx)
    ctx.scope[static_cast<size_t>(ctx.scope_size++)] = node.resource;

  element_type kind = value.type();
  bool valid = true;
  // after a failure: true while the collecting pass still lists errors
  auto go_on = [&] {
    if constexpr (Collect)
      return ctx.errors->size() < ctx.max_errors;
    else
      return false;
  };
  // records a failure; true when validation goes on (the collecting pass)
  auto fail_with = [&](std::string_view schema_path, std::string_view constraint,
                       const path_link* where) {
    valid = false;
    if constexpr (Collect)
      ctx.errors->push_back({to_pointer(where), schema_path, constraint});
    else if (where == at) // (a member's failure is not noted: its value is not at hand)
      note_error(ctx, value, schema_path, constraint);
    return go_on();
  };
  auto fail = [&](failing keyword, const path_link* where) {
    const failure_text& text = node.text(keyword);
    return fail_with(text.schema_path, text.constraint, where);
  };
  auto apply = [&](const schema_node& sub, element target, const path_link* where,
                   annotations* into) {
    bool ok;
    if (!into) {
      ok = check<Collect>(ctx, sub, target, where, nullptr, depth + 1);
    } else {
      annotations local;
      ok = check<Collect>(ctx, sub, target, where, &local, depth + 1);
      if (ok)
        into->merge(local);
    }
    valid = valid && ok;
    return ok;
  };
  // a member or item against its subschema (no annotations cross into a child)
  auto child = [&](const schema_node& sub, element target, const path_link* where) {
    bool ok = descend<Collect>(ctx, sub, target, where, depth + 1);
    valid = valid && ok;
    return ok;
  };
  auto probe = [&](const schema_node& sub, annotations* into) {
    probe_scope probing{ctx};
    if (!into)
      return descend<false>(ctx, sub, value, at, depth + 1);
    annotations local;
    bool ok = check<false>(ctx, sub, value, at, &local, depth + 1);
    if (ok)
      into->merge(local);
    return ok;
  };
  std::optional<annotations> own;
  annotations* track = seen ? seen : node.tracks_evaluation ? &own.emplace() : nullptr;

  // references
  if (node.groups & detail::group_refs) {
    const schema_node* dynamic_target = node.dynamic_ref;
    if (!node.dynamic_ref_anchor.empty()) {
      for (int scope_idx = 0; scope_idx < ctx.scope_size; ++scope_idx) {
        const schema_node* resource = ctx.scope[static_cast<size_t>(scope_idx)];
        auto anchor = resource->dynamic_anchors.find(node.dynamic_ref_anchor);
        if (anchor != resource->dynamic_anchors.end()) {
          dynamic_target = anchor->second;
          break;
        }
      }
    }
    for (const schema_node* ref : {node.ref, dynamic_target})
      if (ref && !apply(*ref, value, at, track) && !go_on())
        return false;
  }

  // type, enum, const, numbers, strings
  if (!scalar_keywords(node, value, kind, [&](failing keyword) { return fail(keyword, at); }))
    return false;

  // objects
  if ((node.groups & detail::group_object) && kind == element_type::OBJECT) {
    auto object = value.object();
    uint64_t present = 0;
    if (node.visits_members) {
      size_t member_idx = 0;
      for (auto field : object) {
        path_link where{at, field.key, 0, true};
        bool matched = false;
        if (const detail::name_entry* found = node.names.find_entry(field.key)) {
          present |= found->bit;
          if (found->sub) {
            matched = true;
            if (!child(*found->sub, field.value, &where) && !go_on())
              return false;
          }
        }
        for (const auto& [re, sub] : node.pattern_properties) {
          if (!re.fits(field.key.size())) { // (refused, never left unchecked)
            matched = true;
            if (!fail(failing::pattern_properties_bound, &where))
              return false;
            break;
          }
          if (re.search(field.key)) {
            matched = true;
            if (!child(*sub, field.value, &where) && !go_on())
              return false;
          }
        }
        if (!matched && node.additional_properties) {
          if (node.additional_false) {
            if (!fail(failing::additional_properties, &where))
              return false;
          } else if (!child(*node.additional_properties, field.value, &where) && !go_on()) {
            return false;
          }
          matched = true;
        }
        if (matched && track)
          track->mark(member_idx);
        if (node.property_names) {
          probe_scope probing{ctx};
          if (!check<false>(ctx, *node.property_names, key_instance(field.key), &where, nullptr,
                            depth + 1)
              && !fail(failing::property_names, &where))
            return false;
        }
        ++member_idx;
      }
    }
    // presence of a named member: its bit, or a scan past 64 names
    auto has = [&](size_t entry) {
      const auto& name = node.names[entry];
      if (name.bit)
        return (present & name.bit) != 0;
      for (auto field : object)
        if (field.key == name.name)
          return true;
      return false;
    };
    if ((present & node.required_mask) != node.required_mask || node.required_unmasked) {
      for (size_t required_idx = 0; required_idx < node.required.size(); ++required_idx) {
        if (!has(node.required_entries[required_idx])
            && !fail_with(node.text(failing::required).schema_path,
                          node.required_texts[required_idx], at))
          return false;
      }
    }
    size_t size = object.size();
    if (node.min_properties && size < *node.min_properties && !fail(failing::min_properties, at))
      return false;
    if (node.max_properties && size > *node.max_properties && !fail(failing::max_properties, at))
      return false;
    for (size_t dep_idx = 0; dep_idx < node.dependent_required.size(); ++dep_idx) {
      if (!has(node.dependent_required_triggers[dep_idx]))
        continue;
      const auto& entries = node.dependent_required_entries[dep_idx];
      for (size_t other_idx = 0; other_idx < entries.size(); ++other_idx) {
        const auto& text = node.dependent_required_texts[dep_idx][other_idx];
        if (!has(entries[other_idx]) && !fail_with(text.schema_path, text.constraint, at))
          return false;
      }
    }
    for (size_t dep_idx = 0; dep_idx < node.dependent_schemas.size(); ++dep_idx) {
      if (has(node.dependent_schema_triggers[dep_idx])
          && !apply(*node.dependent_schemas[dep_idx].second, value, at, track) && !go_on())
        return false;
    }
  }

  // arrays
  if ((node.groups & detail::group_array) && kind == element_type::ARRAY) {
    auto array = value.array();
    size_t size = array.size();
    if (node.min_items && size < *node.min_items && !fail(failing::min_items, at))
      return false;
    if (node.max_items && size > *node.max_items && !fail(failing::max_items, at))
      return false;
    if (node.unique_items) {
      auto unique = all_unique(ctx, array);
      if (unique == uniqueness::past_work_bound)
        return stop_pass<Collect>(ctx, too_much_work, value,
                                  node.text(failing::unique_items).schema_path, at);
      if (unique == uniqueness::repeated && !fail(failing::unique_items, at))
        return false;
    }
    if (!node.prefix_items.empty() || node.items) {
      size_t item_idx = 0;
      for (element item : array) {
        const schema_node* sub =
          item_idx < node.prefix_items.size() ? node.prefix_items[item_idx] : node.items;
        if (!sub)
          break;
        path_link where{at, {}, item_idx, false};
        if (!child(*sub, item, &where) && !go_on())
          return false;
        ++item_idx;
      }
      if (track) {
        track->prefix_items =
          std::max(track->prefix_items, std::min(size, node.prefix_items.size()));
        if (node.items)
          track->all = true;
      }
    }
    if (node.contains) {
      size_t found = 0;
      size_t item_idx = 0;
      size_t least = node.min_contains.value_or(1);
      for (element item : array) {
        path_link where{at, {}, item_idx, false};
        probe_scope probing{ctx};
        if (descend<false>(ctx, *node.contains, item, &where, depth + 1)) {
          ++found;
          if (track)
            track->mark(item_idx);
          else if (!node.max_contains && found >= least)
            break;
        }
        ++item_idx;
      }
      if (found < least && !fail(failing::contains, at))
        return false;
      if (node.max_contains && found > *node.max_contains && !fail(failing::max_contains, at))
        return false;
    }
  }

  // combinators
  if (node.groups & detail::group_combinators) {
    for (const schema_node* sub : node.all_of)
      if (!apply(*sub, value, at, track) && !go_on())
        return false;
    if (!node.any_of.empty()) {
      bool any = false;
      for (const schema_node* sub : node.any_of) {
        if (probe(*sub, track)) {
          any = true;
          if (!track) // annotations need every matching branch
            break;
        }
      }
      if (!any && !fail(failing::any_of, at))
        return false;
    }
    if (!node.one_of.empty()) {
      size_t matches = 0;
      annotations matched;
      for (const schema_node* sub : node.one_of) {
        matches += probe(*sub, track ? &matched : nullptr) ? 1 : 0;
        // (a noted failure names the number of matches: all are counted)
        if (!Collect && matches > 1 && !noting(ctx))
          break;
      }
      if (matches == 1) {
        if (track)
          track->merge(matched);
      } else if (!fail_with(node.text(failing::one_of).schema_path,
                            node.one_of_texts[std::min(matches, node.one_of_texts.size() - 1)],
                            at)) {
        return false;
      }
    }
    if (node.not_ && probe(*node.not_, nullptr) && !fail(failing::not_, at))
      return false;
    if (node.if_) {
      if (probe(*node.if_, track)) {
        if (node.then_ && !apply(*node.then_, value, at, track) && !go_on())
          return false;
      } else if (node.else_ && !apply(*node.else_, value, at, track) && !go_on()) {
        return false;
      }
    }
  }

  // unevaluated*, after every other keyword has contributed annotations
  if (node.unevaluated_properties && kind == element_type::OBJECT && valid) {
    if (!track->all) {
      size_t member_idx = 0;
      auto object = value.object();
      for (auto field : object) {
        if (!track->has(member_idx)) {
          path_link where{at, field.key, 0, true};
          probe_scope probing{ctx}; // (its error is unevaluatedProperties')
          if (!descend<false>(ctx, *node.unevaluated_properties, field.value, &where, depth + 1)
              && !fail(failing::unevaluated_properties, &where))
            return false;
        }
        ++member_idx;
      }
    }
    if (valid)
      track->all = true;
  }
  if (node.unevaluated_items && kind == element_type::ARRAY && valid && !track->all) {
    size_t item_idx = 0;
    auto array = value.array();
    for (element item : array) {
      if (item_idx >= track->prefix_items && !track->has(item_idx)) {
        path_link where{at, {}, item_idx, false};
        probe_scope probing{ctx}; // (its error is unevaluatedItems')
        if (!descend<false>(ctx, *node.unevaluated_items, item, &where, depth + 1)
            && !fail(failing::unevaluated_items, &where))
          return false;
      }
      ++item_idx;
    }
    if (valid)
      track->all = true;
  }
  return valid;
}

validation_result invalid_json(simdjson::error_code code) {
  // one text per simdjson error code, written once
  static const std::array<std::string, simdjson::NUM_ERROR_CODES> texts = [] {
    std::array<std::string, simdjson::NUM_ERROR_CODES> out;
    for (size_t code_idx = 0; code_idx < out.size(); ++code_idx)
      out[code_idx] = std::string("instance is not valid JSON: ")
                      + simdjson::error_message(static_cast<simdjson::error_code>(code_idx));
    return out;
  }();
  validation_result out;
  auto code_idx = static_cast<size_t>(code);
  out.errors.push_back(
    {"", "", code_idx < texts.size() ? std::string_view{texts[code_idx]} : texts.back()});
  return out;
}

/// Texts above this size are parsed by a parser of their own, so a thread's
/// parser does not keep the capacity of one huge argument.
constexpr size_t large_text_bytes = size_t{1} << 20;

/// The error the collecting pass would list first for the failure the
/// boolean pass noted (`note_leaf`, `note_error`).
schema_error first_error(const eval_context& ctx, element root) {
  std::string path = pointer_to(root, ctx.failed_value);
  if (!ctx.failed_leaf)
    return {std::move(path), ctx.failed_schema_path, ctx.failed_constraint};
  const schema_node& leaf = *ctx.failed_leaf;
  if (leaf.is_boolean)
    return {std::move(path), leaf.path, false_schema};
  element value{root.document(), ctx.failed_value};
  std::optional<failing> first;
  scalar_keywords(leaf, value, value.type(), [&](failing keyword) {
    first = keyword;
    return false;
  });
  if (!first) // (not reached: the leaf failed)
    return {std::move(path), leaf.path, "value does not match the schema"};
  const failure_text& text = leaf.text(*first);
  return {std::move(path), text.schema_path, text.constraint};
}

} // namespace

std::optional<std::vector<std::string>> pointer_tokens(std::string_view pointer) {
  std::vector<std::string> out;
  if (pointer.empty())
    return out;
  if (pointer[0] != '/')
    return std::nullopt;
  for (size_t start = 1;;) {
    auto slash = pointer.find('/', start);
    auto raw = pointer.substr(start, slash == std::string_view::npos ? pointer.size() - start
                                                                     : slash - start);
    auto& token = out.emplace_back();
    for (size_t pos = 0; pos < raw.size(); ++pos) {
      if (raw[pos] == '~' && pos + 1 < raw.size()) {
        token += raw[pos + 1] == '1' ? '/' : '~';
        ++pos;
      } else {
        token += raw[pos];
      }
    }
    if (slash == std::string_view::npos)
      return out;
    start = slash + 1;
  }
}

result<compiled_schema> compile_schema(const json& schema, schema_draft default_draft,
                                       const schema_loader& loader) {
  auto store = std::make_shared<schema_store>();
  const json& root = *store->documents.emplace_back(std::make_unique<json>(schema));
  schema_compiler compiler(*store, loader);
  compiler.add_document(root, "", draft_of(root).value_or(default_draft));
  const schema_node* root_node = compiler.compile(root);
  if (auto failure = compiler.failure())
    return *failure;
  // dynamic scope is tracked only when a $dynamicRef can consult it
  bool dynamic = std::any_of(store->nodes.begin(), store->nodes.end(),
                             [](const auto& node) { return !node->dynamic_ref_anchor.empty(); });
  if (dynamic) {
    compiler.link_resources();
    if (auto failure = compiler.failure())
      return *failure;
  }
  const_cast<schema_node*>(root_node)->uses_dynamic_scope = dynamic;
  return compiled_schema(std::move(store), root_node);
}

/// A pass's context: the schema's dynamic scope, and the work bound for
/// this document.
eval_context context_for(const compiled_schema& schema, const detail::tape_document& tape) {
  eval_context ctx;
  ctx.dynamic = schema.root().uses_dynamic_scope;
  uint64_t words = tape.tape[0] & ((uint64_t{1} << 56) - 1); // (the root word: the tape's size)
  ctx.max_steps = validation_steps_base + validation_steps_per_word * words;
  ctx.tape_begin = tape.tape;
  ctx.tape_end = tape.tape + words + 1;
  return ctx;
}

bool is_valid(const compiled_schema& schema, const simdjson::dom::document& instance) {
  detail::tape_document tape{instance};
  eval_context ctx = context_for(schema, tape);
  return descend<false>(ctx, schema.root(), element::root(tape), nullptr, 0) && !ctx.stopped();
}

template <class Document, class>
validation_result validate(const compiled_schema& schema, const Document& instance,
                           size_t max_errors) {
  validation_result out;
  detail::tape_document tape{instance};
  eval_context ctx = context_for(schema, tape);
  element root = element::root(tape);
  ctx.note_failures = max_errors <= 1;
  bool valid = descend<false>(ctx, schema.root(), root, nullptr, 0);
  if (valid && !ctx.stopped())
    return out;
  out.texts = schema.texts();
  if (ctx.stopped()) { // the bound is the one error: a second pass would meet it again
    out.errors.push_back({ctx.stop_value ? pointer_to(root, ctx.stop_value) : std::string{},
                          ctx.stop_schema_path, ctx.stop_reason});
    return out;
  }
  if (ctx.failed_value) { // the first error, from the note
    out.errors.push_back(first_error(ctx, root));
    return out;
  }
  // invalid: a second pass names every violation (one pass for both costs a
  // valid document, the common case, 15-25% more)
  out.errors.reserve(std::min<size_t>(max_errors, 8));
  ctx.errors = &out.errors;
  ctx.max_errors = std::max<size_t>(max_errors, 1);
  ctx.scope_size = 0;
  ctx.steps = 0;
  descend<true>(ctx, schema.root(), root, nullptr, 0);
  if (out.errors.empty())
    out.errors.push_back({"", "", "value does not match the schema"});
  return out;
}

template validation_result
validate<simdjson::dom::document>(const compiled_schema&, const simdjson::dom::document&, size_t);

validation_result validate_json_text(const compiled_schema& schema, std::string_view json_text,
                                     simdjson::dom::parser& parser, size_t max_errors) {
  // (parse fills the parser's own document, the one its root element views)
  if (auto code = parser.parse(json_text.data(), json_text.size()).error())
    return invalid_json(code);
  return validate(schema, parser.doc, max_errors);
}

validation_result validate_json_text(const compiled_schema& schema, std::string_view json_text,
                                     size_t max_errors) {
  if (json_text.size() > large_text_bytes) {
    simdjson::dom::parser parser;
    return validate_json_text(schema, json_text, parser, max_errors);
  }
  thread_local simdjson::dom::parser parser;
  return validate_json_text(schema, json_text, parser, max_errors);
}

validation_result validate(const compiled_schema& schema, const json& instance) {
  return validate_json_text(schema, instance.dump(-1, ' ', false, json::error_handler_t::replace));
}

} // namespace voxos
