// The directory and the tenant actors it spawns: a tenant actor that fails
// ends alone; the directory, the other tenants and the failed tenant's next
// request go on. The failed instance's runs are cancelled (recorded as
// cancelled, their actors gone); the other tenants' runs go on.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/directory/directory.hpp"
#include "actors/directory/directory_index.hpp"
#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
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
  vault_keeper_actor keeper;
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
    std::shared_ptr<event_db> shared_db{std::move(*db)};
    store = spawn_event_store(*sys, shared_db, metrics, {});
    auto sealer = vault::create("k1", std::string(32, 'k'));
    REQUIRE(sealer.is_ok());
    auto node_keys = std::make_shared<const vault>(std::move(*sealer));
    tenant_services services;
    services.urls = std::make_shared<const url_policy>(std::vector<node_config::registered_url>{});
    services.keys = std::make_shared<server_keys>(node_keys, shared_db);
    keeper = spawn_vault_keeper(*sys, shared_db, node_keys, services.keys, {});
    services.keeper = keeper;
    directory = spawn_directory(*sys, store, std::move(*index), metrics, std::move(services));
  }

  ~directory_fixture() {
    caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(keeper, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
    directory = nullptr;
    keeper = nullptr;
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

  /// The tenant actor of `tenant_id` once the directory has forgotten
  /// `failed` (it learns of the exit through its own mailbox: poll briefly).
  tenant_actor restarted(const std::string& tenant_id, const tenant_actor& failed) {
    auto again = tenant(tenant_id);
    for (int attempt = 0; attempt < 500 && again.address() == failed.address(); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      again = tenant(tenant_id);
    }
    return again;
  }

  /// Starts an owner text run of the tenant's default agent; answers its id.
  std::string start_run(const tenant_actor& tenant) {
    caf::scoped_actor self{*sys};
    std::string agent_id;
    self->request(tenant, answer_timeout, list_atom::value, agent_atom::value)
      .receive(
        [&](const std::string& agents) {
          agent_id = nlohmann::json::parse(agents).at(0).at("agent_id").get<std::string>();
        },
        [&](caf::error& err) { FAIL("no agents: " << sys->render(err)); });
    std::string run_id;
    self
      ->request(tenant, answer_timeout, create_atom::value, run_atom::value, agent_id,
                std::string{"owner_text_chat"}, std::string{}, std::string{}, std::string{})
      .receive(
        [&](const std::string& started) {
          run_id = nlohmann::json::parse(started).at("run_id").get<std::string>();
        },
        [&](caf::error& err) { FAIL("the run did not start: " << sys->render(err)); });
    return run_id;
  }

  /// The event types of a run's stream, as stored.
  std::vector<std::string> run_record(const std::string& tenant_id, const std::string& run_id) {
    caf::scoped_actor self{*sys};
    std::vector<std::string> types;
    self
      ->request(store, answer_timeout, read_atom::value,
                stream_query{tenant_id, "run." + run_id, 1, 100})
      .receive(
        [&](const std::vector<event_record>& events) {
          for (const auto& ev : events)
            types.push_back(ev.type);
        },
        [&](caf::error& err) { FAIL("cannot read the run: " << sys->render(err)); });
    return types;
  }

  /// Whether `tenant` answers the health of run `run_id` (a live run of its own).
  bool run_alive(const tenant_actor& tenant, const std::string& run_id) {
    caf::scoped_actor self{*sys};
    bool alive = false;
    self->request(tenant, answer_timeout, health_atom::value, run_atom::value, run_id)
      .receive([&](const std::string&) { alive = true; }, [&](caf::error&) { alive = false; });
    return alive;
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
  auto again = f.restarted(first, failing);
  CHECK(again.address() != failing.address());
  CHECK(f.answers(again));
  CHECK(f.tenant(second).address() == other.address());
}

TEST_CASE("a tenant restarted after a failure finds the runs of its failed instance cancelled "
          "and the other tenant's runs untouched") {
  directory_fixture f;
  auto first = f.create_tenant("Acme");
  auto second = f.create_tenant("Globex");
  auto failing = f.tenant(first);
  auto other = f.tenant(second);
  auto orphan = f.start_run(failing);
  auto bystander = f.start_run(other);
  REQUIRE(f.run_alive(failing, orphan));
  REQUIRE(f.run_alive(other, bystander));

  // Each run tells its listener when it ends.
  caf::scoped_actor orphan_listener{*f.sys};
  caf::scoped_actor bystander_listener{*f.sys};
  caf::scoped_actor self{*f.sys};
  for (auto [tenant, run_id, listener] :
       {std::tuple{failing, orphan, caf::actor_cast<caf::actor>(orphan_listener)},
        std::tuple{other, bystander, caf::actor_cast<caf::actor>(bystander_listener)}})
    self->request(tenant, answer_timeout, listen_atom::value, run_atom::value, run_id, listener)
      .receive([](bool) {},
               [&](caf::error& err) { FAIL("cannot listen: " << f.sys->render(err)); });

  caf::anon_send_exit(failing, caf::exit_reason::unhandled_exception);
  // The failed instance's run ends...
  bool ended = false;
  bool waited_out = false;
  orphan_listener->receive_while([&] { return !ended && !waited_out; })(
    [&](close_atom, const std::string&) { ended = true; }, [](tool_atom, const std::string&) {},
    caf::after(answer_timeout) >> [&] { waited_out = true; });
  REQUIRE(ended);

  // ... and after the restart its record says cancelled, like any other
  // cancellation; the new instance has no such live run.
  auto again = f.restarted(first, failing);
  REQUIRE(again.address() != failing.address());
  CHECK(f.run_record(first, orphan) == std::vector<std::string>{"run.started", "run.cancelled"});
  CHECK_FALSE(f.run_alive(again, orphan));

  // The other tenant's run is untouched: alive, unrecorded, and it still
  // ends normally when its host closes it.
  CHECK(f.run_alive(other, bystander));
  CHECK(f.run_record(second, bystander) == std::vector<std::string>{"run.started"});
  bool closed = false;
  self->request(other, answer_timeout, close_atom::value, run_atom::value, bystander)
    .receive([&](bool ok) { closed = ok; }, [](caf::error&) {});
  CHECK(closed);
  CHECK(f.run_record(second, bystander) == std::vector<std::string>{"run.started", "run.finished"});
}
