// The path agent hosts use: a second process reaches voxosd's published
// run_host over the CAF network, pings it and asks who a token speaks for.
#include <doctest/doctest.h>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/run_host/run_host.hpp"
#include "messages/error.hpp"
#include "support/caf_host.hpp"
#include "support/voxosd_process.hpp"

using namespace voxos;

TEST_CASE("an agent host in another process pings the run host and learns its tenant") {
  test::temp_dir dir;
  test::voxosd_process node{dir, test::test_config(dir)};
  REQUIRE(node.wait_up());

  // A tenant and its token, made through the operator API.
  auto [tenant_id, token] = node.make_tenant("Acme");

  test::caf_host_config cfg;
  caf::actor_system sys{cfg};
  auto host = sys.middleman().remote_actor<run_host_actor>("127.0.0.1", node.caf_port());
  REQUIRE(host);
  caf::scoped_actor self{sys};

  bool ponged = false;
  self->request(*host, std::chrono::seconds(10), ping_atom::value)
    .receive(
      [&](const pong_reply& pong) {
        ponged = true;
        CHECK(pong.node_id == node.node_id());
        CHECK(pong.time_us > 0);
      },
      [&](caf::error& err) { FAIL("ping failed: " << sys.render(err)); });
  CHECK(ponged);

  bool identified = false;
  self->request(*host, std::chrono::seconds(10), whoami_atom::value, token)
    .receive(
      [&](const tenant_identity& who) {
        identified = true;
        CHECK(who.tenant_id == tenant_id);
        CHECK(who.tenant_name == "Acme");
      },
      [&](caf::error& err) { FAIL("whoami failed: " << sys.render(err)); });
  CHECK(identified);

  for (const auto& bad : {std::string{"vxt_not-a-token"}, std::string{}, std::string(4096, 'x')}) {
    bool refused = false;
    self->request(*host, std::chrono::seconds(10), whoami_atom::value, bad)
      .receive([&](const tenant_identity&) { FAIL("a bad token was accepted"); },
               [&](caf::error& err) {
                 refused = true;
                 CHECK(code_of(err) == errc::unauthorized);
                 CHECK(message_of(err).find(bad.empty() ? "\x01" : bad) == std::string::npos);
               });
    CHECK(refused);
  }
}
