// Base64 (RFC 4648) for keys, tokens and opaque ids. CAF-free.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace voxos::base64 {

enum class alphabet { standard, url };

/// Encodes `size` bytes; `pad` appends '=' to a multiple of 4 characters.
std::string encode(const unsigned char* data, std::size_t size, alphabet chars, bool pad);

/// Strict standard base64: padded to a multiple of 4, no whitespace, and
/// canonical (the unused bits of the last character are zero); nullopt otherwise.
std::optional<std::string> decode(std::string_view text);

/// Strict base64url without padding (RFC 7515 section 2, as JWTs and PKCE
/// use it): '-' and '_', no '=', no whitespace, canonical; nullopt otherwise.
std::optional<std::string> decode_url(std::string_view text);

} // namespace voxos::base64
