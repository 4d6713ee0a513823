// Signing keys made at test time with OpenSSL's EVP API (EC curves, RSA of
// any size, Ed25519), as PEM text, and JWS tokens taken apart and checked
// with OpenSSL directly, not through the code under test.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "config/base64.hpp"

namespace voxos::test {

using evp_key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

/// A fresh EC key on `curve` ("P-256", "P-384").
inline evp_key ec_key(const char* curve) {
  evp_key key{EVP_EC_gen(curve), &EVP_PKEY_free};
  REQUIRE(key);
  return key;
}

/// A fresh RSA key of `bits` bits.
inline evp_key rsa_key(unsigned bits) {
  evp_key key{EVP_RSA_gen(bits), &EVP_PKEY_free};
  REQUIRE(key);
  return key;
}

/// A fresh Ed25519 key.
inline evp_key ed25519_key() {
  evp_key key{EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), &EVP_PKEY_free};
  REQUIRE(key);
  return key;
}

/// The PEM text (PKCS#8) of `key`'s private key, or of its public key.
inline std::string pem_of(const EVP_PKEY* key, bool public_only = false) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new(BIO_s_mem()), &BIO_free};
  REQUIRE(bio);
  REQUIRE((public_only
             ? PEM_write_bio_PUBKEY(bio.get(), key)
             : PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr))
          == 1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

/// The PEM text (PKCS#8, AES-256-CBC) of `key`'s private key encrypted
/// under `passphrase`.
inline std::string encrypted_pem_of(const EVP_PKEY* key, const std::string& passphrase) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio{BIO_new(BIO_s_mem()), &BIO_free};
  REQUIRE(bio);
  auto* phrase = reinterpret_cast<const unsigned char*>(passphrase.data());
  REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key, EVP_aes_256_cbc(), phrase,
                                   static_cast<int>(passphrase.size()), nullptr, nullptr)
          == 1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

/// A compact JWS taken apart: header and claims parsed, signature decoded.
struct jws_parts {
  nlohmann::json header;
  nlohmann::json claims;
  std::string signing_input; ///< base64url(header) "." base64url(claims)
  std::string signature;     ///< raw bytes
};

inline jws_parts split_jws(const std::string& token) {
  const auto first = token.find('.');
  REQUIRE(first != std::string::npos);
  const auto second = token.find('.', first + 1);
  REQUIRE(second != std::string::npos);
  REQUIRE(token.find('.', second + 1) == std::string::npos);
  auto header = base64::decode_url(std::string_view{token}.substr(0, first));
  auto claims = base64::decode_url(std::string_view{token}.substr(first + 1, second - first - 1));
  auto signature = base64::decode_url(std::string_view{token}.substr(second + 1));
  REQUIRE(header.has_value());
  REQUIRE(claims.has_value());
  REQUIRE(signature.has_value());
  return {nlohmann::json::parse(*header), nlohmann::json::parse(*claims), token.substr(0, second),
          *signature};
}

/// Whether `signature` over `input` verifies with `key`'s public key, SHA-256
/// with the key's own scheme (RSA PKCS#1 v1.5 or ECDSA). `raw_ecdsa`: the
/// signature is JWS's r||s (32 bytes each), converted to DER first.
inline bool signature_verifies(EVP_PKEY* key, std::string_view input, std::string signature,
                               bool raw_ecdsa) {
  if (raw_ecdsa) {
    if (signature.size() != 64)
      return false;
    const auto* raw = reinterpret_cast<const unsigned char*>(signature.data());
    std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig{ECDSA_SIG_new(), &ECDSA_SIG_free};
    REQUIRE(sig);
    REQUIRE(ECDSA_SIG_set0(sig.get(), BN_bin2bn(raw, 32, nullptr), BN_bin2bn(raw + 32, 32, nullptr))
            == 1);
    unsigned char* der = nullptr;
    const int der_size = i2d_ECDSA_SIG(sig.get(), &der);
    REQUIRE(der_size > 0);
    signature.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(der_size));
    OPENSSL_free(der);
  }
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  REQUIRE(ctx);
  REQUIRE(EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) == 1);
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                          input.size())
         == 1;
}

} // namespace voxos::test
