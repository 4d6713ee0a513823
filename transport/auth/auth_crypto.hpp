// The small cryptography of the authorization work: hashes, HMAC, random
// values, PKCE (RFC 7636, S256 only) and compact JWS tokens (RFC 7515/7519)
// signed with ES256, RS256 or HS256. CAF-free, over OpenSSL 3.
//
// Keys and secrets given to these functions are never copied into an error
// message; failures name the step only.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "messages/status.hpp"

namespace voxos::auth {

/// base64url without padding of `bytes`.
std::string base64url(std::string_view bytes);

/// SHA-256 of `data`, 32 raw bytes.
std::string sha256(std::string_view data);

/// HMAC-SHA256 of `data` under `key`, 32 raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view data);

/// base64url of `bytes` bytes from the system's CSPRNG (aborts if it fails:
/// never hand out a weak secret).
std::string random_base64url(std::size_t bytes);

/// A PKCE pair: a verifier of 43 characters (32 random bytes) and its S256
/// challenge, base64url(SHA-256(verifier)).
struct pkce_pair {
  std::string verifier;
  std::string challenge;
};
pkce_pair make_pkce();
std::string pkce_challenge(std::string_view verifier);

/// A key that signs JWTs: an EC P-256 (ES256) or RSA (RS256, at least 2048
/// bits) private key from PEM, or an HMAC secret (HS256). Immutable; sign()
/// may run on any thread.
class signing_key {
public:
  enum class algorithm { es256, rs256, hs256 };

  /// A PEM private key (PKCS#8 or the traditional EC/RSA forms). `alg`
  /// names the algorithm wanted ("ES256", "RS256"); empty: the key's own.
  /// Errors: out_of_range "private key: not a PEM private key", "...: an EC
  /// key that is not P-256", "...: RSA below 2048 bits", "...: the key does
  /// not fit <alg>", "...: unsupported algorithm".
  static result<signing_key> from_pem(std::string_view pem, std::string_view alg = {});
  /// HS256 under `secret` (at least 32 bytes, else out_of_range).
  static result<signing_key> hmac(std::string secret);

  algorithm alg() const noexcept { return alg_; }
  /// "ES256", "RS256" or "HS256".
  std::string_view alg_name() const noexcept;

  /// The JWS signature of `input` (raw bytes; ES256 as r||s, 64 bytes).
  result<std::string> sign(std::string_view input) const;

  signing_key(signing_key&&) noexcept;
  signing_key& operator=(signing_key&&) noexcept;
  ~signing_key();

private:
  struct pkey;
  signing_key() = default;
  algorithm alg_ = algorithm::hs256;
  std::shared_ptr<pkey> key_; ///< EVP_PKEY for ES256/RS256
  std::string secret_;        ///< HS256; wiped on destruction
};

/// A compact JWT: base64url(header).base64url(claims).base64url(signature),
/// header {"alg":..,"typ":<typ>} plus "kid" when not empty.
result<std::string> make_jwt(const signing_key& key, const nlohmann::json& claims,
                             std::string_view kid = {}, std::string_view typ = "JWT");

/// The claims of an HS256 JWT whose signature `secret` verifies (in constant
/// time) and whose header says HS256. Errors (unauthorized): "malformed
/// token", "unexpected algorithm", "bad signature". Claims (exp, aud, ...)
/// are the caller's to check.
result<nlohmann::json> verify_hs256(std::string_view token, std::string_view secret);

} // namespace voxos::auth
