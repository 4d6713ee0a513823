// The directory and the tenant actors it spawns: a tenant actor that fails
// ends alone; the directory, the other tenants and the failed tenant's next
// request go on.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/directory/directory.hpp"
#include "actors/directory/directory_index.hpp"
#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "storage/vault.hpp"
#include "support/temp_dir.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;

namespace {

constexpr auto answer_timeout = std::chrono::seconds(10);

struct directory_fixture {
  test::temp_dir dir;
  node_metrics metrics; // outlives the actor system
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  event_store_actor store;
  directory_actor directory;

  directory_fixture() {
    register_types(cfg);
    cfg.set("scheduler.max-threads", size_t{2});
    sys = std::make_unique<caf::actor_system>(cfg);
    event_db_options opts;
    opts.projectors.push_back(&directory::project);
    opts.projectors.push_back(&tenant_events::project);
    auto db = event_db::open(dir.str() + "/store", std::move(opts));
    REQUIRE(db);
    auto index = directory_index::load(**db);
    REQUIRE(index);
    store = spawn_event_store(*sys, std::shared_ptr<event_db>(std::move(*db)), metrics, {});
    auto sealer = vault::create("k1", std::string(32, 'k'));
    REQUIRE(sealer.is_ok());
    tenant_services services;
    services.urls = std::make_shared<const url_policy>(std::vector<node_config::registered_url>{});
    services.secrets = std::make_shared<const vault>(std::move(*sealer));
    directory = spawn_directory(*sys, store, std::move(*index), metrics, std::move(services));
  }

  ~directory_fixture() {
    caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
    directory = nullptr;
    store = nullptr;
    sys.reset();
  }

  std::string create_tenant(const std::string& name) {
    caf::scoped_actor self{*sys};
    std::string id;
    self->request(directory, answer_timeout, create_atom::value, tenant_atom::value, name)
      .receive([&](const tenant_record& made) { id = made.tenant_id; },
               [&](caf::error& err) { FAIL("cannot create a tenant: " << sys->render(err)); });
    return id;
  }

  tenant_actor tenant(const std::string& tenant_id) {
    caf::scoped_actor self{*sys};
    tenant_actor out;
    self->request(directory, answer_timeout, config_atom::value, tenant_id)
      .receive([&](const tenant_actor& found) { out = found; },
               [&](caf::error& err) { FAIL("no tenant actor: " << sys->render(err)); });
    return out;
  }

  /// Whether `tenant` answers its agent list.
  bool answers(const tenant_actor& tenant) {
    caf::scoped_actor self{*sys};
    bool ok = false;
    self->request(tenant, answer_timeout, list_atom::value, agent_atom::value)
      .receive(
        [&](const std::string& agents) { ok = agents.find("agent_id") != std::string::npos; },
        [&](caf::error&) { ok = false; });
    return ok;
  }
};

} // namespace

TEST_CASE("a tenant actor that fails ends alone, and its next request starts it again") {
  directory_fixture f;
  auto first = f.create_tenant("Acme");
  auto second = f.create_tenant("Globex");
  auto failing = f.tenant(first);
  auto other = f.tenant(second);
  REQUIRE(f.answers(failing));
  REQUIRE(f.answers(other));

  // (the reason CAF gives an actor whose handler threw; kill would end its
  // links too, trapped or not)
  caf::scoped_actor self{*f.sys};
  self->monitor(failing);
  caf::anon_send_exit(failing, caf::exit_reason::unhandled_exception);
  bool down = false;
  self->receive([&](const caf::down_msg&) { down = true; }, caf::after(answer_timeout) >> [] {});
  REQUIRE(down);

  // The directory and the other tenant go on; the failed tenant's next
  // request gets a new actor, which reads its state back from the store.
  CHECK(f.answers(other));
  // (the directory learns of the exit through its own mailbox: poll briefly)
  auto again = f.tenant(first);
  for (int attempt = 0; attempt < 500 && again.address() == failing.address(); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    again = f.tenant(first);
  }
  CHECK(again.address() != failing.address());
  CHECK(f.answers(again));
  CHECK(f.tenant(second).address() == other.address());
}
