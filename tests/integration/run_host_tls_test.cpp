// The CAF endpoint over TLS (caf.transport "tls"): an agent host that
// presents a certificate of the node's CA reaches the published run_host
// with caf::openssl::remote_actor; a host without a certificate, one with a
// certificate of another CA, and a plain caf::io client get no actor. Real
// TLS over loopback, with certificates made at test time.
//
// Refused connections are attempted the way remote_actor attempts them (a
// connect request to the middleman actor), but with a deadline, so a peer
// that never answers fails the test instead of hanging it.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/node/node.hpp"
#include "actors/run_host/run_host.hpp"
#include "messages/register.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"
#include "support/test_certs.hpp"

using namespace voxos;

namespace {

constexpr auto connect_deadline = std::chrono::seconds(10);

/// The certificates of one test: the node's CA with a server and a client
/// certificate, and another CA with a client certificate of its own.
struct test_pki {
  test::temp_dir dir;
  test::test_ca ca{"Voxos Test CA", dir.path(), "ca"};
  test::test_ca other_ca{"Other Test CA", dir.path(), "other-ca"};
  test::cert_files server = ca.issue("voxosd", test::cert_use::server, dir.path(), "server");
  test::cert_files client = ca.issue("agent-host", test::cert_use::client, dir.path(), "client");
  test::cert_files stranger =
    other_ca.issue("agent-host", test::cert_use::client, dir.path(), "stranger");
};

/// What an agent host presents over TLS, and the CA it trusts.
struct host_identity {
  std::filesystem::path certificate;
  std::filesystem::path key;
  std::filesystem::path ca_file;
};

/// An agent host's actor system with caf::openssl loaded; without an
/// identity CAF runs anonymous TLS (no certificate, no verification).
struct tls_host_config : caf::actor_system_config {
  explicit tls_host_config(const std::optional<host_identity>& identity) {
    register_types(*this);
    load<caf::io::middleman>();
    load<caf::openssl::manager>();
    set("scheduler.max-threads", size_t{1});
    if (identity) {
      set("openssl.certificate", identity->certificate.string());
      set("openssl.key", identity->key.string());
      set("openssl.cafile", identity->ca_file.string());
    }
  }
};

/// An agent host's actor system with plain caf::io only.
struct plain_host_config : caf::actor_system_config {
  plain_host_config() {
    register_types(*this);
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{1});
  }
};

/// An in-process node on fresh data under `pki.dir`, both ports bound to 0,
/// its CAF endpoint over TLS with the server certificate.
node_config tls_node_config(const test_pki& pki) {
  node_config cfg;
  cfg.data_dir = (pki.dir.path() / "var").string();
  cfg.http.port = 0;
  cfg.http.threads = 2;
  cfg.caf.port = 0;
  cfg.http.broker_port = 0;
  cfg.log_level = "error";
  cfg.caf.transport = caf_transport::tls;
  cfg.caf.tls.certificate = pki.server.certificate.string();
  cfg.caf.tls.key = pki.server.key.string();
  cfg.caf.tls.ca_file = pki.ca.certificate().string();
  return cfg;
}

node_secrets test_secrets() {
  node_secrets secrets;
  secrets.vault_key_id = "k1";
  secrets.vault_key = std::string(32, 'k');
  secrets.oauth_state_secret = std::string(32, 's');
  secrets.admin_token = "vxa_test-admin-token-0123456789abcdefghij";
  return secrets;
}

std::unique_ptr<node> start_node(const node_config& cfg) {
  auto started = node::start(cfg, test_secrets());
  REQUIRE_MESSAGE(started, (started ? "" : started.error().message()));
  return std::move(*started);
}

/// Asks `middleman` (caf::io's or caf::openssl's middleman actor) to connect
/// to the run host on loopback `port`, as remote_actor does, within
/// connect_deadline. Answers the actor, or the error.
caf::expected<run_host_actor> connect(caf::actor_system& sys,
                                      const caf::io::middleman_actor& middleman, uint16_t port) {
  caf::expected<run_host_actor> out{caf::sec::request_timeout};
  caf::scoped_actor self{sys};
  self
    ->request(middleman, connect_deadline, caf::connect_atom::value, std::string{"127.0.0.1"}, port)
    .receive(
      [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
        if (ptr)
          out = caf::actor_cast<run_host_actor>(std::move(ptr));
        else
          out = caf::make_error(caf::sec::no_actor_published_at_port);
      },
      [&](caf::error& err) { out = std::move(err); });
  return out;
}

/// Pings `host` and checks that the pong comes from `expected_node_id`.
void expect_pong(caf::actor_system& sys, const run_host_actor& host,
                 const std::string& expected_node_id) {
  caf::scoped_actor self{sys};
  bool ponged = false;
  self->request(host, std::chrono::seconds(10), ping_atom::value)
    .receive(
      [&](const pong_reply& pong) {
        ponged = true;
        CHECK(pong.node_id == expected_node_id);
        CHECK(pong.time_us > 0);
      },
      [&](caf::error& err) { FAIL("ping failed: " << sys.render(err)); });
  CHECK(ponged);
}

/// A host with the node CA's client certificate connects and gets a pong:
/// the endpoint still serves after whatever the test did before.
void expect_trusted_host_served(const test_pki& pki, node& server) {
  tls_host_config cfg{host_identity{pki.client.certificate, pki.client.key, pki.ca.certificate()}};
  caf::actor_system sys{cfg};
  auto host = caf::openssl::remote_actor<run_host_actor>(sys, "127.0.0.1", server.caf_port());
  REQUIRE_MESSAGE(host, (host ? "" : sys.render(host.error())));
  expect_pong(sys, *host, server.node_id());
}

/// A connection that must be refused: no actor, because the connection
/// closed before CAF's own handshake completed (the TLS handshake failed);
/// not the deadline, nobody waited it out.
void expect_refused(caf::actor_system& sys, const caf::expected<run_host_actor>& host) {
  REQUIRE_FALSE_MESSAGE(host, "the endpoint handed out its run host");
  INFO("refused with: " << sys.render(host.error()));
  CHECK(host.error() == caf::sec::disconnect_during_handshake);
}

/// A connection the host's own verification must refuse. caf::openssl
/// calls SSL_connect once when it opens the connection: if the node's
/// certificate has already arrived by then (a loaded machine delays that
/// call), the verification fails inside it and CAF answers
/// cannot_connect_to_node; otherwise it fails later, as a disconnect during
/// CAF's handshake. Either is the TLS handshake failing, and neither is the
/// deadline.
void expect_host_refused(caf::actor_system& sys, const caf::expected<run_host_actor>& host) {
  REQUIRE_FALSE_MESSAGE(host, "the host accepted the node");
  INFO("refused with: " << sys.render(host.error()));
  CHECK((host.error() == caf::sec::disconnect_during_handshake
         || host.error() == caf::sec::cannot_connect_to_node));
}

} // namespace

TEST_CASE("an agent host with a certificate of the node's CA gets a pong over TLS") {
  test_pki pki;
  auto server = start_node(tls_node_config(pki));
  REQUIRE(server->caf_port() != 0);

  tls_host_config cfg{host_identity{pki.client.certificate, pki.client.key, pki.ca.certificate()}};
  caf::actor_system sys{cfg};
  auto host = caf::openssl::remote_actor<run_host_actor>(sys, "127.0.0.1", server->caf_port());
  REQUIRE_MESSAGE(host, (host ? "" : sys.render(host.error())));
  expect_pong(sys, *host, server->node_id());
  // A second host of the same CA, on its own connection.
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("an agent host without a certificate is refused in the TLS handshake") {
  test_pki pki;
  auto server = start_node(tls_node_config(pki));

  tls_host_config cfg{std::nullopt};
  caf::actor_system sys{cfg};
  expect_refused(sys, connect(sys, sys.openssl_manager().actor_handle(), server->caf_port()));
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("an agent host with a certificate of another CA is refused in the TLS handshake") {
  test_pki pki;
  auto server = start_node(tls_node_config(pki));

  // It trusts the node's CA, so only the node's check of its certificate
  // can refuse it.
  tls_host_config cfg{
    host_identity{pki.stranger.certificate, pki.stranger.key, pki.ca.certificate()}};
  caf::actor_system sys{cfg};
  expect_refused(sys, connect(sys, sys.openssl_manager().actor_handle(), server->caf_port()));
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("an agent host that does not trust the node's CA refuses the node") {
  test_pki pki;
  auto server = start_node(tls_node_config(pki));

  // A client certificate the node accepts, but a trust store without the
  // node's CA: the host's own verification ends the handshake.
  tls_host_config cfg{
    host_identity{pki.client.certificate, pki.client.key, pki.other_ca.certificate()}};
  caf::actor_system sys{cfg};
  expect_host_refused(sys, connect(sys, sys.openssl_manager().actor_handle(), server->caf_port()));
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("a plain CAF client gets no actor from the TLS endpoint") {
  test_pki pki;
  auto server = start_node(tls_node_config(pki));

  plain_host_config cfg;
  caf::actor_system sys{cfg};
  // Its BASP bytes are no TLS ClientHello: the node's handshake fails.
  expect_refused(sys, connect(sys, sys.middleman().actor_handle(), server->caf_port()));
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("a node with an encrypted key and its passphrase file serves agent hosts over TLS") {
  test_pki pki;
  const std::string passphrase = "node key passphrase 0123";
  auto locked =
    pki.ca.issue("voxosd", test::cert_use::server, pki.dir.path(), "locked", passphrase);
  auto pass_file = pki.dir.path() / "key-pass";
  {
    std::ofstream out{pass_file};
    out << passphrase << "\n";
  }
  std::filesystem::permissions(pass_file, std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  auto cfg = tls_node_config(pki);
  cfg.caf.tls.certificate = locked.certificate.string();
  cfg.caf.tls.key = locked.key.string();
  cfg.caf.tls.key_passphrase_file = pass_file.string();
  auto server = start_node(cfg);
  // Twice: CAF opens the key again for every connection.
  expect_trusted_host_served(pki, *server);
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("a node keeps serving TLS after its certificate, key and CA files change or go") {
  test_pki pki;
  // Copies of the node's files, so the test can take them away.
  auto own = [&](const std::filesystem::path& from, const char* name) {
    auto to = pki.dir.path() / name;
    std::filesystem::copy_file(from, to);
    std::filesystem::permissions(to, std::filesystem::perms::owner_read,
                                 std::filesystem::perm_options::replace);
    return to;
  };
  auto cfg = tls_node_config(pki);
  auto cert = own(cfg.caf.tls.certificate, "own.crt");
  auto key = own(cfg.caf.tls.key, "own.key");
  auto ca = own(cfg.caf.tls.ca_file, "own-ca.crt");
  cfg.caf.tls.certificate = cert.string();
  cfg.caf.tls.key = key.string();
  cfg.caf.tls.ca_file = ca.string();
  auto server = start_node(cfg);
  expect_trusted_host_served(pki, *server);
  // CAF opens these for every connection: it reads the copies pinned at start.
  std::filesystem::remove(key);
  std::filesystem::remove(ca);
  std::filesystem::permissions(cert, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace);
  {
    std::ofstream garbage{cert, std::ios::trunc};
    garbage << "not a certificate\n";
  }
  expect_trusted_host_served(pki, *server);
  expect_trusted_host_served(pki, *server);
}

TEST_CASE("voxosctl pings a TLS node with an operator certificate, and says what it lacks") {
  test_pki pki;
  auto server = start_node(tls_node_config(pki));
  auto caf = "127.0.0.1:" + std::to_string(server->caf_port());
  auto log = [&](const char* name) { return (pki.dir.path() / name).string(); };
  test::child_process ping{{VOXOSCTL_PATH, "--caf", caf, "--tls-cert",
                            pki.client.certificate.string(), "--tls-key", pki.client.key.string(),
                            "--tls-ca", pki.ca.certificate().string(), "ping"},
                           pki.dir.str(),
                           log("ping.log")};
  CHECK(ping.wait_for_line("pong from node " + server->node_id()));
  CHECK(ping.wait() == 0);
  // A certificate without its key and CA: refused before connecting.
  test::child_process half{
    {VOXOSCTL_PATH, "--caf", caf, "--tls-cert", pki.client.certificate.string(), "ping"},
    pki.dir.str(),
    log("half.log")};
  CHECK(half.wait() == 1);
  CHECK(half.error_output().find("pass --tls-cert, --tls-key and --tls-ca") != std::string::npos);
  // A certificate of another CA: the node refuses the handshake.
  test::child_process stranger{
    {VOXOSCTL_PATH, "--caf", caf, "--tls-cert", pki.stranger.certificate.string(), "--tls-key",
     pki.stranger.key.string(), "--tls-ca", pki.ca.certificate().string(), "ping"},
    pki.dir.str(),
    log("stranger.log")};
  CHECK(stranger.wait() == 1);
}

TEST_CASE("a node whose TLS files are unusable refuses to start and writes nothing") {
  test_pki pki;
  auto cfg = tls_node_config(pki);
  cfg.caf.tls.key = (pki.dir.path() / "absent.key").string();
  auto started = node::start(cfg, test_secrets());
  REQUIRE_FALSE(started);
  CHECK(started.error().code() == errc::config_invalid);
  CHECK(started.error().message() == "caf.tls.key file '" + cfg.caf.tls.key + "' does not exist");
  CHECK_FALSE(std::filesystem::exists(cfg.data_dir));

  // The client's key is not the server certificate's.
  cfg = tls_node_config(pki);
  cfg.caf.tls.key = pki.client.key.string();
  started = node::start(cfg, test_secrets());
  REQUIRE_FALSE(started);
  CHECK(started.error().message()
        == "caf.tls.key file '" + cfg.caf.tls.key + "' is not the key of caf.tls.certificate");
  CHECK_FALSE(std::filesystem::exists(cfg.data_dir));
}
