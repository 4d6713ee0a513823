#include "transport/auth/auth_crypto.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "support/test_keys.hpp"

using nlohmann::json;
using voxos::errc;
using voxos::auth::base64url;
using voxos::auth::hmac_sha256;
using voxos::auth::make_jwt;
using voxos::auth::signing_key;
using voxos::auth::verify_hs256;
using voxos::test::split_jws;

namespace {

std::string hex(const std::string& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char ch : bytes) {
    out += digits[ch >> 4];
    out += digits[ch & 0x0F];
  }
  return out;
}

bool is_base64url_text(const std::string& text) {
  for (char ch : text)
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
          || ch == '-' || ch == '_'))
      return false;
  return true;
}

/// A secret of 40 bytes, long enough for HS256.
const std::string secret = "0123456789-hs256-test-secret-0123456789";

/// `token` with its claims replaced by `claims` (the signature kept).
std::string with_claims(const std::string& token, const json& claims) {
  auto first = token.find('.');
  auto second = token.find('.', first + 1);
  return token.substr(0, first + 1) + base64url(claims.dump()) + token.substr(second);
}

/// An unsigned-looking token with `header`, `claims` and `signature` bytes.
std::string token_of(const json& header, const json& claims, const std::string& signature) {
  return base64url(header.dump()) + "." + base64url(claims.dump()) + "." + base64url(signature);
}

/// `from_pem`'s refusal of `pem` for `alg`: out_of_range with `message`, and
/// nothing of the key text in it.
void check_refused(const std::string& pem, const std::string& alg, const std::string& message) {
  auto key = signing_key::from_pem(pem, alg);
  REQUIRE_FALSE(key.is_ok());
  CHECK(key.error().code() == errc::out_of_range);
  CHECK(key.error().message() == message);
  CHECK(key.error().message().find("-----") == std::string::npos);
  if (auto newline = pem.find('\n'); newline != std::string::npos)
    CHECK(key.error().message().find(pem.substr(newline + 1, 32)) == std::string::npos);
}

} // namespace

// -- hashes and encodings -----------------------------------------------------

TEST_CASE("base64url encodes the RFC 4648 vectors without padding, with - and _") {
  CHECK(base64url("") == "");
  CHECK(base64url("f") == "Zg");
  CHECK(base64url("fo") == "Zm8");
  CHECK(base64url("foo") == "Zm9v");
  CHECK(base64url("foob") == "Zm9vYg");
  CHECK(base64url("fooba") == "Zm9vYmE");
  CHECK(base64url("foobar") == "Zm9vYmFy");
  CHECK(base64url(std::string{"\xfb\xff\xbf", 3}) == "-_-_");
}

TEST_CASE("sha256 and hmac_sha256 match their published vectors") {
  CHECK(hex(voxos::auth::sha256("abc"))
        == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // RFC 4231 test case 2.
  CHECK(hex(hmac_sha256("Jefe", "what do ya want for nothing?"))
        == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("random_base64url gives the encoded length and differs each call") {
  auto first = voxos::auth::random_base64url(32);
  auto second = voxos::auth::random_base64url(32);
  CHECK(first.size() == 43);
  CHECK(is_base64url_text(first));
  CHECK(first != second);
  CHECK(voxos::auth::random_base64url(16).size() == 22);
}

// -- PKCE ---------------------------------------------------------------------

TEST_CASE("pkce challenge of the RFC 7636 appendix B verifier is its published value") {
  CHECK(voxos::auth::pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
        == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
}

TEST_CASE("a pkce pair has a 43-character unreserved verifier and its S256 challenge") {
  std::set<std::string> verifiers;
  for (int pair_idx = 0; pair_idx < 8; ++pair_idx) {
    auto pair = voxos::auth::make_pkce();
    CHECK(pair.verifier.size() == 43);
    CHECK(is_base64url_text(pair.verifier));
    CHECK(pair.challenge == voxos::auth::pkce_challenge(pair.verifier));
    CHECK(pair.challenge.size() == 43);
    verifiers.insert(pair.verifier);
  }
  CHECK(verifiers.size() == 8);
}

// -- signing keys and JWTs ----------------------------------------------------

TEST_CASE("an ES256 token from a P-256 key verifies with its public key as DER") {
  auto ec = voxos::test::ec_key("P-256");
  auto key = signing_key::from_pem(voxos::test::pem_of(ec.get()));
  REQUIRE_MESSAGE(key.is_ok(), key.error().message());
  CHECK(key->alg() == signing_key::algorithm::es256);
  CHECK(key->alg_name() == "ES256");

  auto token = make_jwt(*key, json{{"sub", "client-1"}, {"n", 1}}, "key-7");
  REQUIRE(token.is_ok());
  auto parts = split_jws(*token);
  CHECK(parts.header == json{{"alg", "ES256"}, {"typ", "JWT"}, {"kid", "key-7"}});
  CHECK(parts.claims == json{{"sub", "client-1"}, {"n", 1}});
  CHECK(parts.signature.size() == 64);
  CHECK(voxos::test::signature_verifies(ec.get(), parts.signing_input, parts.signature, true));
  // The check can fail: another input does not verify.
  CHECK_FALSE(
    voxos::test::signature_verifies(ec.get(), parts.signing_input + "x", parts.signature, true));
}

TEST_CASE("an RS256 token from a 2048-bit key verifies with its public key") {
  auto rsa = voxos::test::rsa_key(2048);
  auto key = signing_key::from_pem(voxos::test::pem_of(rsa.get()), "RS256");
  REQUIRE_MESSAGE(key.is_ok(), key.error().message());
  CHECK(key->alg() == signing_key::algorithm::rs256);
  CHECK(key->alg_name() == "RS256");

  auto token = make_jwt(*key, json{{"iss", "me"}}, {}, "client-authentication+jwt");
  REQUIRE(token.is_ok());
  auto parts = split_jws(*token);
  CHECK(parts.header == json{{"alg", "RS256"}, {"typ", "client-authentication+jwt"}});
  CHECK_FALSE(parts.header.contains("kid"));
  CHECK(parts.signature.size() == 256);
  CHECK(voxos::test::signature_verifies(rsa.get(), parts.signing_input, parts.signature, false));
  auto other = voxos::test::rsa_key(2048);
  CHECK_FALSE(
    voxos::test::signature_verifies(other.get(), parts.signing_input, parts.signature, false));
}

TEST_CASE("from_pem refuses what is not a usable private key with a message naming the fault") {
  check_refused("not a key at all", "", "private key: not a PEM private key");
  check_refused("", "", "private key: not a PEM private key");
  auto ec = voxos::test::ec_key("P-256");
  check_refused(voxos::test::pem_of(ec.get(), true), "", "private key: not a PEM private key");
  check_refused(voxos::test::pem_of(voxos::test::ec_key("P-384").get()), "",
                "private key: an EC key that is not P-256");
  check_refused(voxos::test::pem_of(voxos::test::rsa_key(1024).get()), "",
                "private key: RSA below 2048 bits");
  check_refused(voxos::test::pem_of(voxos::test::ed25519_key().get()), "",
                "private key: unsupported algorithm");
}

TEST_CASE("from_pem refuses a key that does not fit the algorithm asked for") {
  auto ec_pem = voxos::test::pem_of(voxos::test::ec_key("P-256").get());
  auto rsa_pem = voxos::test::pem_of(voxos::test::rsa_key(2048).get());
  check_refused(ec_pem, "RS256", "private key: the key does not fit RS256");
  check_refused(rsa_pem, "ES256", "private key: the key does not fit ES256");
  check_refused(ec_pem, "HS256", "private key: unsupported algorithm");
  check_refused(rsa_pem, "none", "private key: unsupported algorithm");
  CHECK(signing_key::from_pem(ec_pem, "ES256").is_ok());
}

TEST_CASE("an encrypted private key is refused without asking anyone for its passphrase") {
  const std::string passphrase = "pass-phrase";
  auto pem = voxos::test::encrypted_pem_of(voxos::test::ec_key("P-256").get(), passphrase);
  // Read in a child without a terminal (setsid) whose stdin holds the
  // passphrase: a read that asked for one would get it there and succeed,
  // or wait (then the alarm ends it).
  int feed[2];
  REQUIRE(::pipe(feed) == 0);
  const std::string typed = passphrase + "\n";
  REQUIRE(::write(feed[1], typed.data(), typed.size()) == static_cast<ssize_t>(typed.size()));
  ::close(feed[1]);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::setsid();
    ::dup2(feed[0], STDIN_FILENO);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
    ::alarm(10);
    auto key = signing_key::from_pem(pem);
    const bool refused =
      !key.is_ok() && key.error().message() == "private key: not a PEM private key";
    ::_exit(refused ? 0 : 1);
  }
  ::close(feed[0]);
  int child_status = 0;
  REQUIRE(::waitpid(child, &child_status, 0) == child);
  REQUIRE(WIFEXITED(child_status));
  CHECK(WEXITSTATUS(child_status) == 0);
}

TEST_CASE("an HS256 key needs 32 bytes and never names its secret") {
  const std::string short_secret = "short-secret-of-31-bytes-xxxxxx";
  REQUIRE(short_secret.size() == 31);
  auto refused = signing_key::hmac(short_secret);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.error().code() == errc::out_of_range);
  CHECK(refused.error().message().find(short_secret) == std::string::npos);
  CHECK(signing_key::hmac(std::string(32, 'k')).is_ok());
}

TEST_CASE("an HS256 token made with a secret verifies with it and gives its claims back") {
  auto key = signing_key::hmac(secret);
  REQUIRE(key.is_ok());
  CHECK(key->alg_name() == "HS256");
  json claims{{"sub", "tenant-1"}, {"aud", "node"}, {"exp", 4102444800}};
  auto token = make_jwt(*key, claims);
  REQUIRE(token.is_ok());
  CHECK(split_jws(*token).header == json{{"alg", "HS256"}, {"typ", "JWT"}});
  auto verified = verify_hs256(*token, secret);
  REQUIRE_MESSAGE(verified.is_ok(), verified.error().message());
  CHECK(*verified == claims);
}

TEST_CASE("verify_hs256 refuses tampered claims, another secret and other algorithms") {
  auto key = signing_key::hmac(secret);
  REQUIRE(key.is_ok());
  auto token = make_jwt(*key, json{{"sub", "alice"}});
  REQUIRE(token.is_ok());
  auto expect = [](const std::string& candidate, const std::string& key_text,
                   const std::string& message) {
    auto verified = verify_hs256(candidate, key_text);
    REQUIRE_FALSE(verified.is_ok());
    CHECK(verified.error().code() == errc::unauthorized);
    CHECK(verified.error().message() == message);
    CHECK(verified.error().message().find(key_text) == std::string::npos);
    CHECK(verified.error().message().find(candidate.substr(0, 10)) == std::string::npos);
  };
  expect(with_claims(*token, json{{"sub", "mallory"}}), secret, "bad signature");
  expect(*token, secret + "x", "bad signature");
  expect(*token, std::string(40, 'z'), "bad signature");
  // A cut signature (40 of its 43 characters: 30 bytes that decode).
  expect(token->substr(0, token->size() - 3), secret, "bad signature");

  // alg "none", with no signature and with a valid HMAC beside it.
  const json claims{{"sub", "alice"}};
  expect(token_of(json{{"alg", "none"}}, claims, ""), secret, "unexpected algorithm");
  auto none_input = base64url(json{{"alg", "none"}}.dump()) + "." + base64url(claims.dump());
  expect(none_input + "." + base64url(hmac_sha256(secret, none_input)), secret,
         "unexpected algorithm");
  expect(token_of(json{{"alg", "HS512"}}, claims, std::string(64, 'x')), secret,
         "unexpected algorithm");
  expect(token_of(json{{"alg", "RS256"}}, claims, std::string(256, 'x')), secret,
         "unexpected algorithm");
  expect(token_of(json{{"typ", "JWT"}}, claims, std::string(32, 'x')), secret,
         "unexpected algorithm");
  // An alg that is not a string is no algorithm either (and throws nothing).
  expect(token_of(json{{"alg", 256}}, claims, std::string(32, 'x')), secret,
         "unexpected algorithm");
  expect(token_of(json{{"alg", json::array({"HS256"})}}, claims, std::string(32, 'x')), secret,
         "unexpected algorithm");
}

TEST_CASE("verify_hs256 refuses malformed tokens as malformed") {
  auto key = signing_key::hmac(secret);
  REQUIRE(key.is_ok());
  auto token = make_jwt(*key, json{{"sub", "alice"}});
  REQUIRE(token.is_ok());
  const json header{{"alg", "HS256"}};
  const std::string candidates[] = {
    "",
    "abc",
    "a.b",
    *token + ".extra",
    "!!!.!!!.!!!",
    *token + "=",                                                   // padded base64url
    base64url("not json") + "." + base64url("{}") + ".c2ln",        // header not JSON
    base64url(header.dump()) + "." + base64url("[1,2]") + ".c2ln",  // claims not an object
    base64url("\"HS256\"") + "." + base64url("{}") + ".c2ln",       // header not an object
    base64url(header.dump()) + "." + base64url("{\"a\":") + ".c2ln" // cut claims
  };
  for (const auto& candidate : candidates) {
    CAPTURE(candidate);
    auto verified = verify_hs256(candidate, secret);
    REQUIRE_FALSE(verified.is_ok());
    CHECK(verified.error().code() == errc::unauthorized);
    CHECK(verified.error().message() == "malformed token");
  }
}
