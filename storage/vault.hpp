// The vault: AES-256-GCM sealing of secrets under node keys that never enter
// the database. CAF-free.
//
// Sealed format (binary): version byte 0x01 | key-id length (1 byte) | key id |
// 12-byte random nonce | ciphertext | 16-byte tag. The associated data binds
// the format version, the key id, the tenant id and the record id, so a sealed
// value copied to another tenant or record, or relabelled with another key id,
// does not open. The associated data is the concatenation, each field
// preceded by its length as 8 big-endian bytes, of "voxos-vault-v1", the key
// id, the tenant id and the record id, so field boundaries are unambiguous.
//
// Threading: seal() and open() are const and may run concurrently;
// add_key() and moves need exclusive access.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "messages/status.hpp"

namespace voxos {

class vault {
public:
  /// A vault sealing with `key_id`/`key` (32 raw bytes). Fails with
  /// config_invalid on a wrong key length or an empty/over-long (>64) key id.
  static result<vault> create(std::string key_id, std::string_view key);

  /// Moves leave `other` empty (no keys); move assignment wipes the keys it replaces.
  vault(vault&& other) noexcept;
  vault& operator=(vault&& other) noexcept;
  ~vault();

  /// Adds a key that can still open values (rotation keeps old keys). Fails
  /// with config_invalid on a wrong key length, a bad key id, or a key id
  /// already present with different key bytes (re-adding the same is ok).
  [[nodiscard]] status add_key(std::string key_id, std::string_view key);

  /// Seals `plaintext` for (tenant, record_id) with the active key under a
  /// fresh random nonce, so sealing the same plaintext twice differs. Fails
  /// with internal if OpenSSL or the random generator fails.
  [[nodiscard]] result<std::string> seal(std::string_view tenant, std::string_view record_id,
                                         std::string_view plaintext) const;

  /// Opens a sealed value. Any tampering, a transplant to another tenant or
  /// record, an unknown key id or a truncated value fails with
  /// vault_open_failed; the message never contains key or plaintext bytes.
  [[nodiscard]] result<std::string> open(std::string_view tenant, std::string_view record_id,
                                         std::string_view sealed) const;

  const std::string& active_key_id() const noexcept { return active_; }

  /// Whether a key of this id can open values.
  bool has_key(std::string_view key_id) const noexcept;

  /// Every key id this vault holds, in order (the active one among them).
  std::vector<std::string> key_ids() const;

  /// The key id a sealed value names in its header, or nullopt when `sealed`
  /// is not of the sealed format. Reads the header only: says nothing about
  /// whether the value opens.
  static std::optional<std::string_view> key_id_of(std::string_view sealed) noexcept;

private:
  vault() = default;
  void wipe_keys() noexcept;

  std::string active_;
  std::map<std::string, std::string, std::less<>> keys_; // wiped with OPENSSL_cleanse
};

} // namespace voxos
