// Certificates made at test time with OpenSSL's C API (no `openssl` command
// needed): a certificate authority that issues server and client
// certificates as PEM files in a test's temporary directory. EC P-256 keys,
// SHA-256 signatures, valid from an hour ago for a day.
//
// Server certificates name 127.0.0.1 and localhost (subjectAltName) and carry
// extendedKeyUsage serverAuth; client certificates carry clientAuth, so
// OpenSSL's purpose check keeps either from standing in for the other.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include <doctest/doctest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace voxos::test {

/// What a certificate is for.
enum class cert_use { server, client };

/// A certificate and its key as files.
struct cert_files {
  std::filesystem::path certificate;
  std::filesystem::path key;
};

class test_ca {
public:
  /// A self-signed CA named `common_name` whose certificate is written to
  /// `dir`/`<stem>.crt` (the directory must exist).
  test_ca(const std::string& common_name, const std::filesystem::path& dir, const std::string& stem)
      : key_(make_key()), cert_(X509_new()) {
    REQUIRE(cert_);
    fill(cert_.get(), common_name, key_.get());
    set_issuer(cert_.get(), cert_.get());
    add_ext(cert_.get(), cert_.get(), NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert_.get(), cert_.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    add_ext(cert_.get(), cert_.get(), NID_subject_key_identifier, "hash");
    REQUIRE(X509_sign(cert_.get(), key_.get(), EVP_sha256()) > 0);
    certificate_ = dir / (stem + ".crt");
    write_cert(certificate_, cert_.get());
  }

  /// The CA certificate's PEM file.
  const std::filesystem::path& certificate() const noexcept { return certificate_; }

  /// Issues a certificate for `common_name` into `dir`/`<stem>.crt` and
  /// `<stem>.key` (mode 0600); with a `passphrase` the key is encrypted
  /// (AES-256-CBC).
  cert_files issue(const std::string& common_name, cert_use use, const std::filesystem::path& dir,
                   const std::string& stem, const std::string& passphrase = {}) {
    key_ptr key = make_key();
    cert_ptr cert{X509_new()};
    REQUIRE(cert);
    fill(cert.get(), common_name, key.get());
    set_issuer(cert.get(), cert_.get());
    add_ext(cert.get(), cert_.get(), NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert.get(), cert_.get(), NID_key_usage, "critical,digitalSignature");
    add_ext(cert.get(), cert_.get(), NID_authority_key_identifier, "keyid:always");
    if (use == cert_use::server) {
      add_ext(cert.get(), cert_.get(), NID_ext_key_usage, "serverAuth");
      add_ext(cert.get(), cert_.get(), NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    } else {
      add_ext(cert.get(), cert_.get(), NID_ext_key_usage, "clientAuth");
    }
    REQUIRE(X509_sign(cert.get(), key_.get(), EVP_sha256()) > 0);
    cert_files out{dir / (stem + ".crt"), dir / (stem + ".key")};
    write_cert(out.certificate, cert.get());
    write_key(out.key, key.get(), passphrase);
    return out;
  }

private:
  struct key_free {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  };
  struct cert_free {
    void operator()(X509* cert) const { X509_free(cert); }
  };
  struct bio_free {
    void operator()(BIO* bio) const { BIO_free(bio); }
  };
  using key_ptr = std::unique_ptr<EVP_PKEY, key_free>;
  using cert_ptr = std::unique_ptr<X509, cert_free>;
  using bio_ptr = std::unique_ptr<BIO, bio_free>;

  static key_ptr make_key() {
    key_ptr key{EVP_EC_gen("P-256")};
    REQUIRE(key);
    return key;
  }

  /// Version, serial, validity, subject and public key.
  void fill(X509* cert, const std::string& common_name, EVP_PKEY* key) {
    REQUIRE(X509_set_version(cert, 2) == 1);
    REQUIRE(ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(++serial_)) == 1);
    REQUIRE(X509_gmtime_adj(X509_getm_notBefore(cert), -3600) != nullptr);
    REQUIRE(X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600) != nullptr);
    auto* name = X509_get_subject_name(cert);
    REQUIRE(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                       reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                       -1, -1, 0)
            == 1);
    REQUIRE(X509_set_pubkey(cert, key) == 1);
  }

  static void set_issuer(X509* cert, X509* issuer) {
    REQUIRE(X509_set_issuer_name(cert, X509_get_subject_name(issuer)) == 1);
  }

  static void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    REQUIRE(ext != nullptr);
    bool added = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    REQUIRE(added);
  }

  static void write_cert(const std::filesystem::path& path, X509* cert) {
    bio_ptr bio{BIO_new_file(path.c_str(), "w")};
    REQUIRE(bio);
    REQUIRE(PEM_write_bio_X509(bio.get(), cert) == 1);
  }

  static void write_key(const std::filesystem::path& path, EVP_PKEY* key,
                        const std::string& passphrase) {
    {
      bio_ptr bio{BIO_new_file(path.c_str(), "w")};
      REQUIRE(bio);
      const EVP_CIPHER* cipher = passphrase.empty() ? nullptr : EVP_aes_256_cbc();
      auto* pass = reinterpret_cast<const unsigned char*>(passphrase.data());
      REQUIRE(PEM_write_bio_PrivateKey(bio.get(), key, cipher, pass,
                                       static_cast<int>(passphrase.size()), nullptr, nullptr)
              == 1);
    }
    REQUIRE(::chmod(path.c_str(), 0600) == 0);
  }

  key_ptr key_;
  cert_ptr cert_;
  std::filesystem::path certificate_;
  uint32_t serial_ = 0;
};

} // namespace voxos::test
