#include "transport/auth/auth_crypto.hpp"

#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "config/base64.hpp"

namespace voxos::auth {

namespace {

const unsigned char* bytes_of(std::string_view text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

/// Refuses to give a passphrase: an encrypted key is not a usable key here.
/// (Without a callback OpenSSL asks for one on the terminal, or on stdin,
/// and blocks the calling thread.)
int no_passphrase(char*, int, int, void*) {
  return -1;
}

status key_error(std::string_view what) {
  return status::error(errc::out_of_range, "private key: " + std::string{what});
}

} // namespace

std::string base64url(std::string_view bytes) {
  return base64::encode(bytes_of(bytes), bytes.size(), base64::alphabet::url, false);
}

std::string sha256(std::string_view data) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  SHA256(bytes_of(data), data.size(), reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  std::string out(SHA256_DIGEST_LENGTH, '\0');
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), bytes_of(data), data.size(),
       reinterpret_cast<unsigned char*>(out.data()), &size);
  out.resize(size);
  return out;
}

std::string random_base64url(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (bytes > 0 && RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1)
    std::abort();
  auto out = base64::encode(buf.data(), buf.size(), base64::alphabet::url, false);
  OPENSSL_cleanse(buf.data(), buf.size());
  return out;
}

pkce_pair make_pkce() {
  pkce_pair out;
  out.verifier = random_base64url(32);
  out.challenge = pkce_challenge(out.verifier);
  return out;
}

std::string pkce_challenge(std::string_view verifier) {
  return base64url(sha256(verifier));
}

// -- signing_key --------------------------------------------------------------

struct signing_key::pkey {
  EVP_PKEY* key = nullptr;
  ~pkey() { EVP_PKEY_free(key); }
};

signing_key::signing_key(signing_key&&) noexcept = default;
signing_key& signing_key::operator=(signing_key&& other) noexcept {
  if (this != &other) {
    OPENSSL_cleanse(secret_.data(), secret_.size());
    alg_ = other.alg_;
    key_ = std::move(other.key_);
    secret_ = std::move(other.secret_);
  }
  return *this;
}
signing_key::~signing_key() {
  OPENSSL_cleanse(secret_.data(), secret_.size());
}

result<signing_key> signing_key::from_pem(std::string_view pem, std::string_view alg) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio{
    BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free};
  if (!bio)
    return key_error("not a PEM private key");
  auto held = std::make_shared<pkey>();
  held->key = PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr);
  if (held->key == nullptr)
    return key_error("not a PEM private key");
  signing_key out;
  out.key_ = held;
  switch (EVP_PKEY_get_base_id(held->key)) {
  case EVP_PKEY_EC: {
    char group[64] = {};
    size_t len = 0;
    if (EVP_PKEY_get_utf8_string_param(held->key, "group", group, sizeof(group), &len) != 1
        || std::string_view{group} != "prime256v1")
      return key_error("an EC key that is not P-256");
    out.alg_ = algorithm::es256;
    break;
  }
  case EVP_PKEY_RSA:
    if (EVP_PKEY_get_bits(held->key) < 2048)
      return key_error("RSA below 2048 bits");
    out.alg_ = algorithm::rs256;
    break;
  default:
    return key_error("unsupported algorithm");
  }
  if (!alg.empty() && alg != out.alg_name())
    return key_error(alg == "ES256" || alg == "RS256" ? "the key does not fit " + std::string{alg}
                                                      : std::string{"unsupported algorithm"});
  return out;
}

result<signing_key> signing_key::hmac(std::string secret) {
  if (secret.size() < 32) {
    OPENSSL_cleanse(secret.data(), secret.size());
    return status::error(errc::out_of_range, "signing secret: shorter than 32 bytes");
  }
  signing_key out;
  out.alg_ = algorithm::hs256;
  out.secret_ = std::move(secret);
  return out;
}

std::string_view signing_key::alg_name() const noexcept {
  switch (alg_) {
  case algorithm::es256:
    return "ES256";
  case algorithm::rs256:
    return "RS256";
  case algorithm::hs256:
    break;
  }
  return "HS256";
}

result<std::string> signing_key::sign(std::string_view input) const {
  if (alg_ == algorithm::hs256)
    return hmac_sha256(secret_, input);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
  size_t size = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_->key) != 1
      || EVP_DigestSign(ctx.get(), nullptr, &size, bytes_of(input), input.size()) != 1)
    return status::error(errc::internal, "signing failed");
  std::string der(size, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(der.data()), &size,
                     bytes_of(input), input.size())
      != 1)
    return status::error(errc::internal, "signing failed");
  der.resize(size);
  if (alg_ == algorithm::rs256)
    return der;
  // ES256: JWS wants r || s, each 32 bytes, not DER (RFC 7518 section 3.4).
  const unsigned char* cursor = bytes_of(der);
  std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> sig{
    d2i_ECDSA_SIG(nullptr, &cursor, static_cast<long>(der.size())), &ECDSA_SIG_free};
  if (!sig)
    return status::error(errc::internal, "signing failed");
  std::string raw(64, '\0');
  auto* out = reinterpret_cast<unsigned char*>(raw.data());
  if (BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), out, 32) != 32
      || BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), out + 32, 32) != 32)
    return status::error(errc::internal, "signing failed");
  return raw;
}

result<std::string> make_jwt(const signing_key& key, const nlohmann::json& claims,
                             std::string_view kid, std::string_view typ) {
  nlohmann::json header{{"alg", key.alg_name()}, {"typ", typ}};
  if (!kid.empty())
    header["kid"] = kid;
  auto input = base64url(header.dump()) + "." + base64url(claims.dump());
  auto signature = key.sign(input);
  if (!signature)
    return signature.error();
  return input + "." + base64url(*signature);
}

result<nlohmann::json> verify_hs256(std::string_view token, std::string_view secret) {
  auto malformed = [] { return status::error(errc::unauthorized, "malformed token"); };
  auto first = token.find('.');
  auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos)
    return malformed();
  auto header_text = base64::decode_url(token.substr(0, first));
  auto claims_text = base64::decode_url(token.substr(first + 1, second - first - 1));
  auto signature = base64::decode_url(token.substr(second + 1));
  if (!header_text || !claims_text || !signature)
    return malformed();
  auto header = nlohmann::json::parse(*header_text, nullptr, false);
  auto claims = nlohmann::json::parse(*claims_text, nullptr, false);
  if (!header.is_object() || !claims.is_object())
    return malformed();
  // Not header.value(): it throws on an "alg" that is not a string.
  auto alg = header.find("alg");
  if (alg == header.end() || !alg->is_string() || alg->get_ref<const std::string&>() != "HS256")
    return status::error(errc::unauthorized, "unexpected algorithm");
  auto expected = hmac_sha256(secret, token.substr(0, second));
  if (expected.size() != signature->size()
      || CRYPTO_memcmp(expected.data(), signature->data(), expected.size()) != 0)
    return status::error(errc::unauthorized, "bad signature");
  return claims;
}

} // namespace voxos::auth
