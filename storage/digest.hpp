// Hashing and random tokens for credentials that are stored hashed. CAF-free.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace voxos::digest {

/// Lower-case hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

/// Equality in time independent of where the inputs differ (same-length inputs).
bool constant_time_equal(std::string_view x, std::string_view y) noexcept;

/// `prefix` followed by base64url (no padding) of `bytes` random bytes.
std::string random_token(std::string_view prefix, std::size_t bytes);

/// `bytes` random bytes as lower-case hex, for record ids.
std::string random_hex(std::size_t bytes);

} // namespace voxos::digest
