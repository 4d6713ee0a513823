// Tests for the CAF endpoint's TLS entries of config/node_config.cpp:
// caf.transport and caf.tls.* in the JSON format, and check_caf_tls, which
// reads the files at start (certificates made at test time).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "config/node_config.hpp"
#include "support/temp_dir.hpp"
#include "support/test_certs.hpp"

namespace {

using voxos::caf_config;
using voxos::caf_transport;
using voxos::check_caf_tls;
using voxos::errc;
using voxos::parse_config;
namespace fs = std::filesystem;

/// The message of a parse that must fail with config_invalid.
std::string parse_failure(const std::string& text) {
  auto cfg = parse_config(text);
  REQUIRE_FALSE(cfg.is_ok());
  CHECK(cfg.error().code() == errc::config_invalid);
  return cfg.error().message();
}

/// The message of a check that must fail with config_invalid.
std::string check_failure(const caf_config& cfg) {
  auto checked = check_caf_tls(cfg);
  REQUIRE_FALSE(checked.is_ok());
  CHECK(checked.error().code() == errc::config_invalid);
  auto message = checked.error().message();
  // Never the contents of a PEM file.
  CHECK(message.find("BEGIN") == std::string::npos);
  CHECK(message.find("PRIVATE") == std::string::npos);
  return message;
}

void write_text(const fs::path& path, const std::string& text, fs::perms mode) {
  fs::remove(path);
  {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out << text;
  }
  fs::permissions(path, mode, fs::perm_options::replace);
}

std::string read_text(const fs::path& path) {
  std::ifstream in{path, std::ios::binary};
  return std::string{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// A CA, a server certificate it issued and the caf section that uses them.
struct tls_files {
  voxos::test::temp_dir dir;
  voxos::test::test_ca ca{"Voxos Test CA", dir.path(), "ca"};
  voxos::test::cert_files server =
    ca.issue("voxosd", voxos::test::cert_use::server, dir.path(), "server");

  caf_config config() const {
    caf_config cfg;
    cfg.transport = caf_transport::tls;
    cfg.tls.certificate = server.certificate.string();
    cfg.tls.key = server.key.string();
    cfg.tls.ca_file = ca.certificate().string();
    return cfg;
  }
};

} // namespace

// -- the format ---------------------------------------------------------------

TEST_CASE("the CAF endpoint is plain by default and the default document names every tls key") {
  auto cfg = parse_config("{}");
  REQUIRE(cfg.is_ok());
  CHECK(cfg->caf.transport == caf_transport::plain);
  CHECK(cfg->caf.tls.certificate.empty());
  CHECK(cfg->caf.tls.key.empty());
  CHECK(cfg->caf.tls.ca_file.empty());
  CHECK(cfg->caf.tls.key_passphrase_file.empty());

  auto doc = nlohmann::json::parse(voxos::default_config_json());
  CHECK(doc["caf"]["transport"] == "plain");
  CHECK(doc["caf"]["tls"]
        == nlohmann::json{
          {"certificate", ""}, {"key", ""}, {"ca_file", ""}, {"key_passphrase_file", ""}});
  auto back = parse_config(voxos::default_config_json());
  REQUIRE(back.is_ok());
  CHECK(back->caf.transport == caf_transport::plain);
}

TEST_CASE("a tls transport with its three files parses, the passphrase file optional") {
  auto cfg = parse_config(R"({"caf": {"transport": "tls", "tls": {
    "certificate": "/etc/voxos/node.crt", "key": "/etc/voxos/node.key",
    "ca_file": "/etc/voxos/hosts-ca.crt", "key_passphrase_file": "/run/secrets/key-pass"}}})");
  REQUIRE(cfg.is_ok());
  CHECK(cfg->caf.transport == caf_transport::tls);
  CHECK(cfg->caf.tls.certificate == "/etc/voxos/node.crt");
  CHECK(cfg->caf.tls.key == "/etc/voxos/node.key");
  CHECK(cfg->caf.tls.ca_file == "/etc/voxos/hosts-ca.crt");
  CHECK(cfg->caf.tls.key_passphrase_file == "/run/secrets/key-pass");

  auto without_passphrase = parse_config(R"({"caf": {"transport": "tls", "tls": {
    "certificate": "node.crt", "key": "node.key", "ca_file": "ca.crt"}}})");
  REQUIRE(without_passphrase.is_ok());
  CHECK(without_passphrase->caf.tls.key_passphrase_file.empty());
}

TEST_CASE("a partial tls configuration is refused naming the first missing key") {
  CHECK(parse_failure(R"({"caf": {"transport": "tls"}})")
        == R"(caf.tls.certificate: required (a non-empty path) when caf.transport is "tls")");
  CHECK(parse_failure(R"({"caf": {"transport": "tls", "tls": {"certificate": "n.crt"}}})")
        == R"(caf.tls.key: required (a non-empty path) when caf.transport is "tls")");
  CHECK(parse_failure(
          R"({"caf": {"transport": "tls", "tls": {"certificate": "n.crt", "key": "n.key"}}})")
        == R"(caf.tls.ca_file: required (a non-empty path) when caf.transport is "tls")");
  CHECK(parse_failure(R"({"caf": {"transport": "tls", "tls": {"certificate": "n.crt",
                          "key": "", "ca_file": "ca.crt"}}})")
        == R"(caf.tls.key: required (a non-empty path) when caf.transport is "tls")");
}

TEST_CASE("tls files are refused while the transport is plain") {
  // A tls section alone does not switch TLS on: the transport says it.
  CHECK(parse_failure(R"({"caf": {"tls": {"certificate": "n.crt", "key": "n.key",
                          "ca_file": "ca.crt"}}})")
        == R"(caf.tls.certificate: allowed only when caf.transport is "tls")");
  CHECK(parse_failure(R"({"caf": {"transport": "plain", "tls": {"key_passphrase_file": "p"}}})")
        == R"(caf.tls.key_passphrase_file: allowed only when caf.transport is "tls")");
}

TEST_CASE("unknown tls keys, wrong types and unknown transports are refused by path") {
  CHECK(parse_failure(R"({"caf": {"tls": {"cert": "n.crt"}}})") == "unknown key 'caf.tls.cert'");
  CHECK(parse_failure(R"({"caf": {"transport": "ssl"}})")
        == R"(caf.transport: expected one of "plain", "tls")");
  CHECK(parse_failure(R"({"caf": {"tls": "on"}})") == "caf.tls: expected an object");
  CHECK(parse_failure(R"({"caf": {"transport": "tls", "tls": {"certificate": 1}}})")
        == "caf.tls.certificate: expected a path (no NUL characters)");
}

// -- the files at start -------------------------------------------------------

TEST_CASE("a plain endpoint needs no files") {
  auto checked = check_caf_tls(caf_config{});
  REQUIRE(checked.is_ok());
  CHECK(checked->key_passphrase.empty());
}

TEST_CASE("a certificate, its key and a CA file pass the start check") {
  tls_files files;
  auto checked = check_caf_tls(files.config());
  REQUIRE_MESSAGE(checked.is_ok(), (checked ? "" : checked.error().message()));
  CHECK(checked->key_passphrase.empty());
}

TEST_CASE("a missing TLS file refuses the start naming its key and path") {
  tls_files files;
  auto missing = (files.dir.path() / "absent.pem").string();
  auto cfg = files.config();
  cfg.tls.certificate = missing;
  CHECK(check_failure(cfg) == "caf.tls.certificate file '" + missing + "' does not exist");
  cfg = files.config();
  cfg.tls.key = missing;
  CHECK(check_failure(cfg) == "caf.tls.key file '" + missing + "' does not exist");
  cfg = files.config();
  cfg.tls.ca_file = missing;
  CHECK(check_failure(cfg) == "caf.tls.ca_file file '" + missing + "' does not exist");
  cfg = files.config();
  cfg.tls.key_passphrase_file = missing;
  CHECK(check_failure(cfg) == "caf.tls.key_passphrase_file file '" + missing + "' does not exist");
  cfg = files.config();
  cfg.tls.ca_file = files.dir.str();
  CHECK(check_failure(cfg)
        == "caf.tls.ca_file file '" + files.dir.str() + "' is not a regular file");
}

TEST_CASE("a file without PEM of the expected kind is refused without quoting it") {
  tls_files files;
  auto junk = files.dir.path() / "junk.pem";
  write_text(junk, "not a certificate\n", fs::perms::owner_read | fs::perms::owner_write);
  auto cfg = files.config();
  cfg.tls.certificate = junk.string();
  CHECK(check_failure(cfg)
        == "caf.tls.certificate file '" + junk.string() + "' holds no PEM certificate");
  cfg = files.config();
  cfg.tls.ca_file = junk.string();
  CHECK(check_failure(cfg)
        == "caf.tls.ca_file file '" + junk.string() + "' holds no PEM certificate");
  // A certificate where the key should be.
  auto cert_as_key = files.dir.path() / "cert-as-key.pem";
  write_text(cert_as_key, read_text(files.server.certificate),
             fs::perms::owner_read | fs::perms::owner_write);
  cfg = files.config();
  cfg.tls.key = cert_as_key.string();
  CHECK(check_failure(cfg)
        == "caf.tls.key file '" + cert_as_key.string() + "' holds no PEM private key");
  // A key where the certificate should be.
  cfg = files.config();
  cfg.tls.certificate = files.server.key.string();
  CHECK(check_failure(cfg)
        == "caf.tls.certificate file '" + files.server.key.string() + "' holds no PEM certificate");
}

TEST_CASE("a private key readable by group or others is refused") {
  tls_files files;
  fs::permissions(files.server.key,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read
                    | fs::perms::others_read,
                  fs::perm_options::replace);
  auto message = check_failure(files.config());
  CHECK(message
        == "caf.tls.key file '" + files.server.key.string()
             + "' is accessible by group or others (mode 0644); it must be mode 0600 or "
               "stricter");
}

TEST_CASE("a key that is not the certificate's is refused naming both keys") {
  tls_files files;
  auto other = files.ca.issue("other", voxos::test::cert_use::server, files.dir.path(), "other");
  auto cfg = files.config();
  cfg.tls.key = other.key.string();
  CHECK(check_failure(cfg)
        == "caf.tls.key file '" + other.key.string() + "' is not the key of caf.tls.certificate");
}

TEST_CASE("an encrypted key opens only with the passphrase of its passphrase file") {
  tls_files files;
  const std::string passphrase = "correct horse battery staple";
  auto locked =
    files.ca.issue("voxosd", voxos::test::cert_use::server, files.dir.path(), "locked", passphrase);
  auto cfg = files.config();
  cfg.tls.certificate = locked.certificate.string();
  cfg.tls.key = locked.key.string();

  // No passphrase configured: refused, never a terminal prompt.
  CHECK(check_failure(cfg)
        == "caf.tls.key file '" + locked.key.string()
             + "' is encrypted; set caf.tls.key_passphrase_file");

  // A wrong one.
  auto pass_file = files.dir.path() / "key-pass";
  write_text(pass_file, "wrong horse\n", fs::perms::owner_read | fs::perms::owner_write);
  cfg.tls.key_passphrase_file = pass_file.string();
  auto wrong = check_failure(cfg);
  CHECK(wrong
        == "caf.tls.key file '" + locked.key.string()
             + "' does not open with the passphrase of caf.tls.key_passphrase_file");
  CHECK(wrong.find("wrong horse") == std::string::npos);

  // The right one, with the trailing newline an editor leaves.
  write_text(pass_file, passphrase + "\n", fs::perms::owner_read | fs::perms::owner_write);
  auto checked = check_caf_tls(cfg);
  REQUIRE_MESSAGE(checked.is_ok(), (checked ? "" : checked.error().message()));
  CHECK(checked->key_passphrase == passphrase);

  // The passphrase file is a secret: private to its owner, and not empty.
  fs::permissions(pass_file, fs::perms::owner_read | fs::perms::group_read,
                  fs::perm_options::replace);
  auto exposed = check_failure(cfg);
  CHECK(exposed.find("caf.tls.key_passphrase_file file '" + pass_file.string()
                     + "' is accessible by group or others")
        == 0);
  write_text(pass_file, "\n", fs::perms::owner_read | fs::perms::owner_write);
  CHECK(check_failure(cfg)
        == "caf.tls.key_passphrase_file file '" + pass_file.string()
             + "': expected a passphrase of 1 to 1023 bytes without NUL "
               "characters (one trailing newline is ignored)");
}
