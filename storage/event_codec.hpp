// Encoding of one event's RocksDB value. CAF-free.
//
//   version (1 byte, 0x01) | time_us (8 bytes, big-endian) |
//   type length (1 byte) | type | data (JSON object text)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "messages/status.hpp"
#include "messages/types.hpp"

namespace voxos::event_codec {

inline constexpr std::size_t max_type_length = 64;

/// 1..64 characters of [a-z0-9_.].
bool valid_type(std::string_view type) noexcept;

/// True if `data` is one well-formed JSON object.
bool valid_data(std::string_view data) noexcept;

std::string encode(int64_t time_us, std::string_view type, std::string_view data);

/// Decodes `value` into the type/time/data fields of `out` (the key supplies
/// tenant, stream and seq). Fails with corrupt_data on any malformed value.
[[nodiscard]] status decode(std::string_view value, event_record& out);

} // namespace voxos::event_codec
