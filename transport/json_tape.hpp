// A read-only view of a parsed simdjson DOM document, read straight from its
// tape: the validator's way through an instance (transport/json_schema.cpp).
//
// simdjson's element API reaches each value through its document (two loads
// per access) and steps over a value through an out-of-line call; this view
// holds the tape and string buffer pointers and steps inline. The layout is
// simdjson's documented tape format (doc/tape.md in its sources; the
// `tape` and `string_buf` members of dom::document):
// - each value starts with a 64-bit word, its type character in the top 8
//   bits and a 56-bit payload;
// - '{' and '[': the payload's low 32 bits index the word after the matching
//   '}' or ']', bits 32-55 count the members or items (saturated at
//   0xFFFFFF);
// - '"': the payload is an offset into the string buffer, where a 32-bit
//   length, the bytes and a NUL follow;
// - 'l', 'u', 'd' (int64, uint64, double): the next word holds the number;
// - 't', 'f', 'n': true, false, null; the root ('r') wraps the document.
// json_tape_test checks this view against simdjson's element API.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include <simdjson.h>

namespace voxos::detail {

/// The tape and strings of one parsed document.
struct tape_document {
  const uint64_t* tape = nullptr;
  const uint8_t* strings = nullptr;

  tape_document() = default;
  explicit tape_document(const simdjson::dom::document& doc)
      : tape(doc.tape.get()), strings(doc.string_buf.get()) {}
};

class tape_object;
class tape_item_iterator;
template <class Iterator>
class tape_span;
/// An array's items, in order.
using tape_array = tape_span<tape_item_iterator>;

/// One value of a tape_document (which must outlive it).
class tape_value {
public:
  tape_value(const tape_document& doc, const uint64_t* word) noexcept : doc_(&doc), at_(word) {}
  /// The document's root value.
  static tape_value root(const tape_document& doc) noexcept { return {doc, doc.tape + 1}; }

  char tape_type() const noexcept { return static_cast<char>(*at_ >> 56); }
  simdjson::dom::element_type type() const noexcept {
    char kind = tape_type();
    return kind == 'f' ? simdjson::dom::element_type::BOOL
                       : static_cast<simdjson::dom::element_type>(kind);
  }

  // Accessors for a value of the matching type.
  std::string_view string() const noexcept {
    const uint8_t* at = doc_->strings + (*at_ & payload_mask);
    uint32_t size;
    std::memcpy(&size, at, sizeof size);
    return {reinterpret_cast<const char*>(at + sizeof size), size};
  }
  int64_t int64() const noexcept { return next<int64_t>(); }
  uint64_t uint64() const noexcept { return next<uint64_t>(); }
  double float64() const noexcept { return next<double>(); }
  bool boolean() const noexcept { return tape_type() == 't'; }
  inline tape_object object() const noexcept;
  inline tape_array array() const noexcept;

  /// The word after this value (the next member key, item or closing brace).
  const uint64_t* after() const noexcept {
    switch (tape_type()) {
    case '{':
    case '[':
      return doc_->tape + static_cast<uint32_t>(*at_);
    case 'l':
    case 'u':
    case 'd':
      return at_ + 2;
    default:
      return at_ + 1;
    }
  }
  const tape_document& document() const noexcept { return *doc_; }
  const uint64_t* word() const noexcept { return at_; }
  /// The type character and payload.
  uint64_t tape_word() const noexcept { return *at_; }

private:
  static constexpr uint64_t payload_mask = (uint64_t{1} << 56) - 1;
  template <class T>
  T next() const noexcept {
    T out;
    std::memcpy(&out, at_ + 1, sizeof out);
    return out;
  }

  const tape_document* doc_;
  const uint64_t* at_;
};

/// The members or items of an object or array, in document order.
template <class Iterator>
class tape_span {
public:
  explicit tape_span(tape_value open) noexcept : open_(open) {}
  /// The object or array itself.
  tape_value container() const noexcept { return open_; }
  Iterator begin() const noexcept { return {open_.document(), open_.word() + 1}; }
  Iterator end() const noexcept { return {open_.document(), open_.after() - 1}; }
  /// Number of members or items as the tape holds it: exact below
  /// 0xFFFFFF, that number for more (no walk).
  size_t size_bound() const noexcept { return (*open_.word() >> 32) & 0xFFFFFF; }
  /// Number of members or items (counted when the tape's count is saturated).
  size_t size() const noexcept {
    size_t count = (*open_.word() >> 32) & 0xFFFFFF;
    if (count < 0xFFFFFF)
      return count;
    count = 0;
    for (auto it = begin(); it != end(); ++it)
      ++count;
    return count;
  }

private:
  tape_value open_;
};

/// A member: its key and value.
struct tape_field {
  std::string_view key;
  tape_value value;
};

/// Steps over an object's members.
class tape_member_iterator {
public:
  tape_member_iterator(const tape_document& doc, const uint64_t* at) noexcept
      : doc_(&doc), at_(at) {}
  tape_field operator*() const noexcept {
    return {tape_value{*doc_, at_}.string(), tape_value{*doc_, at_ + 1}};
  }
  tape_member_iterator& operator++() noexcept {
    at_ = tape_value{*doc_, at_ + 1}.after();
    return *this;
  }
  bool operator!=(const tape_member_iterator& other) const noexcept { return at_ != other.at_; }

private:
  const tape_document* doc_;
  const uint64_t* at_;
};

/// Steps over an array's items.
class tape_item_iterator {
public:
  tape_item_iterator(const tape_document& doc, const uint64_t* at) noexcept : doc_(&doc), at_(at) {}
  tape_value operator*() const noexcept { return {*doc_, at_}; }
  tape_item_iterator& operator++() noexcept {
    at_ = tape_value{*doc_, at_}.after();
    return *this;
  }
  bool operator!=(const tape_item_iterator& other) const noexcept { return at_ != other.at_; }

private:
  const tape_document* doc_;
  const uint64_t* at_;
};

/// An object's members, in document order.
class tape_object : public tape_span<tape_member_iterator> {
public:
  using tape_span::tape_span;
  /// The first member named `key`.
  bool find(std::string_view key, tape_value& out) const noexcept {
    for (auto member : *this)
      if (member.key == key) {
        out = member.value;
        return true;
      }
    return false;
  }
};

tape_object tape_value::object() const noexcept {
  return tape_object{*this};
}
tape_array tape_value::array() const noexcept {
  return tape_array{*this};
}

} // namespace voxos::detail
