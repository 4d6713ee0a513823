// AES-256-GCM sealing with OpenSSL 3 EVP; see vault.hpp for the format.
#include "storage/vault.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace voxos {
namespace {

constexpr unsigned char format_version = 0x01;
constexpr std::string_view aad_domain = "voxos-vault-v1";
constexpr std::size_t key_bytes = 32;
constexpr std::size_t nonce_bytes = 12;
constexpr std::size_t tag_bytes = 16;
constexpr std::size_t max_key_id_bytes = 64;
// EVP takes int lengths; leave room for the tag and the header.
constexpr std::size_t max_input_bytes = INT_MAX / 2;

struct cipher_ctx_deleter {
  void operator()(EVP_CIPHER_CTX* ctx) const noexcept { EVP_CIPHER_CTX_free(ctx); }
};
using cipher_ctx_ptr = std::unique_ptr<EVP_CIPHER_CTX, cipher_ctx_deleter>;

const unsigned char* bytes(std::string_view text) {
  return reinterpret_cast<const unsigned char*>(text.data());
}

unsigned char* bytes(std::string& text, std::size_t offset) {
  return reinterpret_cast<unsigned char*>(text.data()) + offset;
}

/// The one answer to every failure to open: it names nothing.
status open_failed() {
  return status::error(errc::vault_open_failed, "vault: the sealed value did not open");
}

status seal_failed() {
  return status::error(errc::internal, "vault: sealing failed");
}

status check_key(std::string_view key_id, std::string_view key) {
  if (key.size() != key_bytes)
    return status::error(errc::config_invalid, "vault: a key must be exactly 32 bytes");
  if (key_id.empty() || key_id.size() > max_key_id_bytes)
    return status::error(errc::config_invalid, "vault: a key id must be 1 to 64 bytes");
  return status::ok();
}

void append_field(std::string& out, std::string_view field) {
  uint64_t size = field.size();
  for (int shift = 56; shift >= 0; shift -= 8)
    out += static_cast<char>((size >> shift) & 0xff);
  out.append(field);
}

/// Length-prefixed ("voxos-vault-v1", key id, tenant, record id).
std::string associated_data(std::string_view key_id, std::string_view tenant,
                            std::string_view record_id) {
  std::string out;
  out.reserve(4 * 8 + aad_domain.size() + key_id.size() + tenant.size() + record_id.size());
  append_field(out, aad_domain);
  append_field(out, key_id);
  append_field(out, tenant);
  append_field(out, record_id);
  return out;
}

} // namespace

result<vault> vault::create(std::string key_id, std::string_view key) {
  if (auto st = check_key(key_id, key); !st.is_ok())
    return st;
  vault out;
  out.active_ = key_id;
  out.keys_.emplace(std::move(key_id), std::string{key});
  return result<vault>{std::move(out)};
}

vault::vault(vault&& other) noexcept
    : active_(std::move(other.active_)), keys_(std::move(other.keys_)) {
  other.keys_.clear();
  other.active_.clear();
}

vault& vault::operator=(vault&& other) noexcept {
  if (this != &other) {
    wipe_keys();
    active_ = std::move(other.active_);
    keys_ = std::move(other.keys_);
    other.keys_.clear();
    other.active_.clear();
  }
  return *this;
}

vault::~vault() {
  wipe_keys();
}

void vault::wipe_keys() noexcept {
  for (auto& [key_id, key] : keys_)
    if (!key.empty())
      OPENSSL_cleanse(key.data(), key.size());
  keys_.clear();
}

status vault::add_key(std::string key_id, std::string_view key) {
  if (auto st = check_key(key_id, key); !st.is_ok())
    return st;
  auto known = keys_.find(key_id);
  if (known == keys_.end()) {
    keys_.emplace(std::move(key_id), std::string{key});
    return status::ok();
  }
  if (CRYPTO_memcmp(known->second.data(), key.data(), key_bytes) == 0)
    return status::ok();
  return status::error(errc::config_invalid,
                       "vault: key id '" + known->first + "' is already used by another key");
}

bool vault::has_key(std::string_view key_id) const noexcept {
  return keys_.find(key_id) != keys_.end();
}

std::vector<std::string> vault::key_ids() const {
  std::vector<std::string> out;
  out.reserve(keys_.size());
  for (const auto& entry : keys_)
    out.push_back(entry.first);
  return out;
}

std::optional<std::string_view> vault::key_id_of(std::string_view sealed) noexcept {
  if (sealed.size() < 2 || static_cast<unsigned char>(sealed[0]) != format_version)
    return std::nullopt;
  std::size_t key_id_size = static_cast<unsigned char>(sealed[1]);
  if (key_id_size == 0 || sealed.size() < 2 + key_id_size + nonce_bytes + tag_bytes)
    return std::nullopt;
  return sealed.substr(2, key_id_size);
}

result<std::string> vault::seal(std::string_view tenant, std::string_view record_id,
                                std::string_view plaintext) const {
  auto key = keys_.find(active_);
  if (key == keys_.end())
    return status::error(errc::internal, "vault: no active key (moved-from vault)");
  auto aad = associated_data(active_, tenant, record_id);
  if (plaintext.size() > max_input_bytes || aad.size() > max_input_bytes)
    return status::error(errc::out_of_range, "vault: value too large to seal");
  // Header: version, key id, fresh nonce.
  std::string out;
  out.reserve(2 + active_.size() + nonce_bytes + plaintext.size() + tag_bytes);
  out += static_cast<char>(format_version);
  out += static_cast<char>(active_.size());
  out += active_;
  std::size_t nonce_at = out.size();
  out.resize(nonce_at + nonce_bytes);
  if (RAND_bytes(bytes(out, nonce_at), static_cast<int>(nonce_bytes)) != 1)
    return seal_failed();
  // Encrypt: associated data first, then the plaintext, then the tag.
  cipher_ctx_ptr ctx{EVP_CIPHER_CTX_new()};
  std::size_t body_at = out.size();
  out.resize(body_at + plaintext.size() + tag_bytes);
  int len = 0;
  int final_len = 0;
  bool ok =
    ctx != nullptr
    && EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1
    && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce_bytes),
                           nullptr)
         == 1
    && EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, bytes(key->second), bytes(out, nonce_at))
         == 1
    && EVP_EncryptUpdate(ctx.get(), nullptr, &len, bytes(aad), static_cast<int>(aad.size())) == 1;
  len = 0;
  if (ok && !plaintext.empty())
    ok = EVP_EncryptUpdate(ctx.get(), bytes(out, body_at), &len, bytes(plaintext),
                           static_cast<int>(plaintext.size()))
         == 1;
  ok = ok && EVP_EncryptFinal_ex(ctx.get(), bytes(out, body_at + len), &final_len) == 1
       && static_cast<std::size_t>(len + final_len) == plaintext.size()
       && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag_bytes),
                              bytes(out, body_at + plaintext.size()))
            == 1;
  if (!ok) {
    OPENSSL_cleanse(out.data(), out.size());
    return seal_failed();
  }
  return result<std::string>{std::move(out)};
}

result<std::string> vault::open(std::string_view tenant, std::string_view record_id,
                                std::string_view sealed) const {
  // Parse the header; every malformed shape is the same failure.
  auto named = key_id_of(sealed);
  if (!named)
    return open_failed();
  auto key_id = *named;
  std::size_t key_id_size = key_id.size();
  std::size_t header = 2 + key_id_size + nonce_bytes;
  auto key = keys_.find(key_id);
  if (key == keys_.end())
    return open_failed();
  auto nonce = sealed.substr(2 + key_id_size, nonce_bytes);
  auto body = sealed.substr(header, sealed.size() - header - tag_bytes);
  unsigned char tag[tag_bytes];
  std::copy_n(bytes(sealed.substr(sealed.size() - tag_bytes)), tag_bytes, tag);
  auto aad = associated_data(key_id, tenant, record_id);
  if (body.size() > max_input_bytes || aad.size() > max_input_bytes)
    return open_failed();
  // Decrypt, then authenticate; unauthenticated output is wiped.
  cipher_ctx_ptr ctx{EVP_CIPHER_CTX_new()};
  std::string plaintext(body.size(), '\0');
  int len = 0;
  int final_len = 0;
  bool ok =
    ctx != nullptr
    && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1
    && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce_bytes),
                           nullptr)
         == 1
    && EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, bytes(key->second), bytes(nonce)) == 1
    && EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(aad), static_cast<int>(aad.size())) == 1;
  len = 0;
  if (ok && !body.empty())
    ok = EVP_DecryptUpdate(ctx.get(), bytes(plaintext, 0), &len, bytes(body),
                           static_cast<int>(body.size()))
         == 1;
  ok =
    ok
    && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag_bytes), tag) == 1
    && EVP_DecryptFinal_ex(ctx.get(), bytes(plaintext, static_cast<std::size_t>(len)), &final_len)
         > 0
    && static_cast<std::size_t>(len + final_len) == body.size();
  if (!ok) {
    if (!plaintext.empty())
      OPENSSL_cleanse(plaintext.data(), plaintext.size());
    return open_failed();
  }
  return result<std::string>{std::move(plaintext)};
}

} // namespace voxos
