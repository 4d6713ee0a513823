// The event_store actor: concurrent writers share group commits, every
// acknowledged append is readable with gap-free sequences, and a refused
// request in a group affects no other.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/event_db.hpp"
#include "support/actor_store.hpp"

using namespace voxos;

namespace {

/// (the node's projectors pass over this file's events: no tenant state,
/// no work or schedule event)
struct store_fixture : test::actor_store {};

append_request one_event(const std::string& stream, const std::string& data) {
  append_request req;
  req.tenant = "t_a";
  req.stream = stream;
  req.events.push_back({"test.event", data});
  return req;
}

} // namespace

TEST_CASE("concurrent writers share group commits and every stream stays gap-free") {
  store_fixture f;
  constexpr int writers = 64;
  constexpr int per_writer = 20;
  std::atomic<int> acked{0};
  std::atomic<int> refused{0};
  std::atomic<int> done{0};
  caf::scoped_actor self{*f.sys};
  auto waiter = caf::actor_cast<caf::actor>(self);
  for (int writer_idx = 0; writer_idx < writers; ++writer_idx) {
    f.sys->spawn([&, writer_idx, waiter](caf::event_based_actor* self) {
      // Every writer appends to one of four shared streams; every 7th append
      // of writer 0 is malformed and must be refused alone.
      auto stream = "s" + std::to_string(writer_idx % 4);
      auto next = std::make_shared<std::function<void(int)>>();
      // The pending response handler holds the only strong reference, so the
      // chain frees itself after the last answer.
      std::weak_ptr<std::function<void(int)>> weak = next;
      *next = [&, self, stream, writer_idx, waiter, weak](int n) {
        auto next = weak.lock();
        if (n == per_writer) {
          ++done;
          self->send(waiter, writer_idx);
          return;
        }
        bool bad = writer_idx == 0 && n % 7 == 0;
        self
          ->request(f.store, caf::infinite, append_atom::value,
                    one_event(stream, bad ? "not json" : R"({"n":1})"))
          .then(
            [&, next, n](const append_result&) {
              ++acked;
              (*next)(n + 1);
            },
            [&, next, n, bad](caf::error& err) {
              CHECK(bad);
              CHECK(code_of(err) == errc::bad_json);
              ++refused;
              (*next)(n + 1);
            });
      };
      (*next)(0);
    });
  }
  // Each writer reports when its last append is answered.
  for (int writer_idx = 0; writer_idx < writers; ++writer_idx)
    self->receive([](int) {},
                  caf::after(std::chrono::seconds(60)) >> [] { FAIL("a writer never finished"); });
  REQUIRE(done == writers);
  std::size_t total = 0;
  CHECK(refused == 3); // n = 0, 7, 14 of writer 0
  for (int stream_idx = 0; stream_idx < 4; ++stream_idx) {
    self
      ->request(f.store, std::chrono::seconds(10), read_atom::value,
                stream_query{"t_a", "s" + std::to_string(stream_idx), 1, 10000})
      .receive(
        [&](const std::vector<event_record>& events) {
          for (std::size_t idx = 0; idx < events.size(); ++idx)
            CHECK(events[idx].seq == idx + 1);
          total += events.size();
        },
        [](caf::error& err) { FAIL(message_of(err)); });
  }
  CHECK(total == static_cast<std::size_t>(acked.load()));
  CHECK(acked == writers * per_writer - 3);
  // Fewer syncs than appends: groups were shared.
  CHECK(f.metrics.write_batches.load() < f.metrics.append_requests.load());
}

TEST_CASE("the newest events of a stream come back in order") {
  store_fixture f;
  caf::scoped_actor self{*f.sys};
  for (int n = 1; n <= 30; ++n)
    self
      ->request(f.store, std::chrono::seconds(10), append_atom::value,
                one_event("audit", R"({"n":)" + std::to_string(n) + "}"))
      .receive([](const append_result&) {}, [](caf::error& err) { FAIL(message_of(err)); });
  self
    ->request(f.store, std::chrono::seconds(10), read_atom::value,
              stream_query{"t_a", "audit", stream_query::newest, 5})
    .receive(
      [](const std::vector<event_record>& events) {
        REQUIRE(events.size() == 5);
        CHECK(events.front().seq == 26);
        CHECK(events.back().seq == 30);
      },
      [](caf::error& err) { FAIL(message_of(err)); });
}

TEST_CASE("a read sees every append that reached the store before it, answered or not") {
  store_fixture f;
  caf::scoped_actor self{*f.sys};
  // Appends not awaited (each waits for a synced group), then reads at once:
  // each read must see all of them, and the appends are answered first.
  constexpr int appends = 40;
  for (int n = 1; n <= appends; ++n)
    self->send(f.store, append_atom::value,
               one_event("audit", R"({"n":)" + std::to_string(n) + "}"));
  std::size_t read_back = 0;
  self
    ->request(f.store, std::chrono::seconds(10), read_atom::value,
              stream_query{"t_a", "audit", 1, 1000})
    .receive([&](const std::vector<event_record>& events) { read_back = events.size(); },
             [](caf::error& err) { FAIL(message_of(err)); });
  CHECK(read_back == appends);
  std::size_t scanned = 0;
  for (int n = 1; n <= 5; ++n)
    self->send(f.store, append_atom::value, one_event("other", R"({"m":1})"));
  self->request(f.store, std::chrono::seconds(10), scan_atom::value, std::string{"t_a"}, 1000u)
    .receive([&](const std::vector<event_record>& events) { scanned = events.size(); },
             [](caf::error& err) { FAIL(message_of(err)); });
  CHECK(scanned == appends + 5);
}

TEST_CASE("a deferred append is acknowledged once written and synced by deferred_sync") {
  test::temp_dir dir;
  node_metrics metrics; // outlives the actor system
  caf::actor_system_config cfg;
  register_types(cfg);
  cfg.set("scheduler.max-threads", size_t{2});
  auto sys = std::make_unique<caf::actor_system>(cfg);
  std::shared_ptr<event_db> db{test::open_node_store(dir)};
  event_store_options opts;
  opts.deferred_sync = std::chrono::milliseconds{300};
  auto store = spawn_event_store(*sys, db, metrics, opts);
  {
    caf::scoped_actor self{*sys};
    auto req = one_event("run.r_1", R"({"round":1})");
    req.sync_deferred = true;
    std::optional<append_result> appended;
    self->request(store, std::chrono::seconds{10}, append_atom::value, req)
      .receive([&](const append_result& res) { appended = res; },
               [&](caf::error& err) { FAIL("append failed: " << to_string(err)); });
    REQUIRE(appended.has_value());
    CHECK(appended->first_seq == 1);
    // Written without a sync (nothing else came), then synced by the store
    // on its own about 300 ms later.
    CHECK(db->wal_unsynced());
    bool synced = false;
    for (int polls = 0; polls < 5'000 && !synced; ++polls) {
      synced = !db->wal_unsynced();
      if (!synced)
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    CHECK(synced);
    CHECK(metrics.write_batches.load() == 1);
  }
  caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
  store = nullptr;
  sys.reset();
}
