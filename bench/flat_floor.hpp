// The floor of "validate" on the flat case: a validator written by hand for
// bench/data/validation/flat.schema.json alone, reading the same simdjson
// tape our validator reads, answering valid or not (no error texts). It
// knows its five property names and their checks in advance, so it does no
// lookup in tables and no dispatch on keywords: what per-schema generated
// code (Ajv's approach) would do at best over this tape. A stand-in written
// for measuring only; nothing in the runtime uses it. Not inlined: each
// validation is a call, as ours is.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include <simdjson.h>

namespace voxos::bench {

/// Whether `text` is `literal` (a size known when compiling: the bytes are
/// compared as a few words, with no call).
template <std::size_t N>
inline bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && std::memcmp(text.data(), literal, N - 1) == 0;
}

[[gnu::noinline]] inline bool flat_floor_valid(const simdjson::dom::document& doc) {
  const uint64_t* tape = doc.tape.get();
  const uint8_t* strings = doc.string_buf.get();
  constexpr uint64_t payload = (uint64_t{1} << 56) - 1;
  auto type_of = [](uint64_t word) { return static_cast<char>(word >> 56); };
  auto text_of = [strings](uint64_t word) {
    uint32_t size;
    std::memcpy(&size, strings + (word & payload), sizeof size);
    return std::string_view{reinterpret_cast<const char*>(strings + (word & payload) + 4), size};
  };
  const uint64_t* root = tape + 1;
  if (type_of(*root) != '{')
    return false;
  // (an object's word holds the index of the word after its closing '}')
  const uint64_t* end = tape + static_cast<uint32_t>(*root) - 1;
  bool has_query = false;
  for (const uint64_t* at = root + 1; at < end;) {
    std::string_view key = text_of(at[0]);
    uint64_t value = at[1];
    char type = type_of(value);
    if (type == '{' || type == '[') // (no member of this schema takes one)
      return false;
    const uint64_t* next = at + 2 + (type == 'l' || type == 'u' || type == 'd');
    if (is(key, "query")) {
      if (type != '"')
        return false;
      has_query = true;
    } else if (is(key, "limit")) {
      if (type == 'l') {
        int64_t number;
        std::memcpy(&number, at + 2, sizeof number);
        if (number < 1 || number > 100)
          return false;
      } else if (type == 'd') {
        double number;
        std::memcpy(&number, at + 2, sizeof number);
        if (number != std::floor(number) || number < 1 || number > 100)
          return false;
      } else { // ('u' holds only integers past int64)
        return false;
      }
    } else if (is(key, "cursor")) {
      if (type != '"')
        return false;
    } else if (is(key, "include_archived")) {
      if (type != 't' && type != 'f')
        return false;
    } else if (is(key, "sort")) {
      if (type != '"')
        return false;
      std::string_view sort = text_of(value);
      if (!is(sort, "relevance") && !is(sort, "newest") && !is(sort, "oldest"))
        return false;
    } else { // additionalProperties: false
      return false;
    }
    at = next;
  }
  return has_query;
}

} // namespace voxos::bench
