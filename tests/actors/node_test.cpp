// Starting and stopping a whole node in-process.
#include <doctest/doctest.h>

#include "actors/node/node.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;

namespace {

node_config config_for(const test::temp_dir& dir) {
  node_config cfg;
  cfg.data_dir = dir.str();
  cfg.http.port = 0;
  cfg.caf.port = 0;
  cfg.http.broker_port = 0;
  cfg.log_level = "error";
  return cfg;
}

node_secrets secrets_with_key(char key_byte) {
  node_secrets secrets;
  secrets.vault_key_id = "k1";
  secrets.vault_key = std::string(32, key_byte);
  secrets.oauth_state_secret = std::string(32, 's');
  secrets.admin_token = std::string(40, 'a');
  return secrets;
}

} // namespace

TEST_CASE("a node refuses to start with a vault key that cannot open its sealed values") {
  test::temp_dir dir;
  auto cfg = config_for(dir);
  {
    auto first = node::start(cfg, secrets_with_key('A'));
    REQUIRE(first);
  }
  auto wrong = node::start(cfg, secrets_with_key('B'));
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().code() == errc::vault_open_failed);
  // The message names the likely cause, never key bytes.
  CHECK(wrong.error().message().find("BBBB") == std::string::npos);
  auto again = node::start(cfg, secrets_with_key('A'));
  CHECK(again);
}

TEST_CASE("a node whose HTTP port is taken fails to start and releases its data directory") {
  test::temp_dir dir;
  auto cfg = config_for(dir);
  auto holder = node::start(cfg, secrets_with_key('A'));
  REQUIRE(holder);
  test::temp_dir other_dir;
  auto clash = config_for(other_dir);
  clash.http.port = (*holder)->http_port();
  auto refused = node::start(clash, secrets_with_key('A'));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code() == errc::unavailable);
  // Nothing of the failed start holds other_dir: a node starts there now.
  clash.http.port = 0;
  CHECK(node::start(clash, secrets_with_key('A')));
}

TEST_CASE("stopping a node twice is harmless") {
  test::temp_dir dir;
  auto started = node::start(config_for(dir), secrets_with_key('A'));
  REQUIRE(started);
  (*started)->stop();
  (*started)->stop();
}
