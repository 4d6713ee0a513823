// The work queue actor (actors/work/work_queue.hpp) over a real event store:
// leases over the long poll and to worker actors, completion once, restart.
#include <doctest/doctest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/work/work_queue.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/actor_store.hpp"

using namespace voxos;
using json = nlohmann::json;
namespace wk = voxos::work;

namespace {

constexpr auto wait = std::chrono::seconds(10);

struct queue_fixture : test::actor_store {
  std::unique_ptr<caf::scoped_actor> owner;
  work_queue_actor queue;
  work_queue_options opts;

  queue_fixture() {
    opts.leases.lease_us = 300'000;
    opts.leases.retry_delay_us = 0;
    start();
  }

  /// A queue afresh over the same store (as a tenant that restarted).
  void start() {
    if (queue) {
      caf::anon_send_exit(queue, caf::exit_reason::kill);
      owner.reset();
    }
    owner = std::make_unique<caf::scoped_actor>(*sys);
    queue = spawn_work_queue(owner->ptr(), "t_1", store, opts);
  }

  ~queue_fixture() {
    caf::anon_send_exit(queue, caf::exit_reason::kill);
    owner.reset();
    queue = nullptr;
  }

  template <class... Ts>
  std::pair<std::string, caf::error> ask(Ts&&... xs) {
    std::string out;
    caf::error failed;
    (*owner)
      ->request(queue, wait, std::forward<Ts>(xs)...)
      .receive([&](std::string& text) { out = std::move(text); },
               [&](caf::error& err) { failed = std::move(err); });
    return {out, failed};
  }

  json op(const std::string& name, json body) {
    auto [text, err] = ask(work_atom::value, name, body.dump());
    REQUIRE_MESSAGE(!err, message_of(err));
    return json::parse(text);
  }

  caf::error refused(const std::string& name, json body) {
    auto [text, err] = ask(work_atom::value, name, body.dump());
    REQUIRE_MESSAGE(err, text);
    return err;
  }

  void enqueue(const wk::item& it) {
    auto [text, err] = ask(enqueue_atom::value, wk::to_json(it).dump(), std::vector<event_draft>{});
    REQUIRE_MESSAGE(!err, message_of(err));
  }

  std::vector<event_record> chat(const std::string& chat_id) {
    std::vector<event_record> out;
    (*owner)
      ->request(store, wait, read_atom::value, stream_query{"t_1", wk::stream_of(chat_id), 1, 100})
      .receive([&](std::vector<event_record>& events) { out = std::move(events); },
               [&](caf::error& err) { FAIL(message_of(err)); });
    return out;
  }
};

wk::item scheduled(std::string schedule = "sc_1", int64_t occurrence = 1000) {
  wk::item it;
  it.item_id = wk::scheduled_item_id(schedule, occurrence);
  it.k = wk::kind::scheduled_turn;
  it.agent_id = "a_1";
  it.chat_id = "c_1";
  it.run_id = wk::run_id_of(it.item_id);
  it.text = "Check the forecast";
  it.schedule_id = std::move(schedule);
  it.occurrence_s = occurrence;
  return it;
}

std::vector<std::string> types_of(const std::vector<event_record>& events) {
  std::vector<std::string> out;
  for (const auto& ev : events)
    out.push_back(ev.type);
  return out;
}

/// A worker actor that hands every offer to `sink` (the test's mailbox).
caf::behavior forwarding_worker(caf::event_based_actor*, caf::actor sink) {
  return {[sink](work_atom, offer_atom, const std::string& lease) {
    caf::anon_send(sink, work_atom::value, offer_atom::value, lease);
  }};
}

} // namespace

TEST_CASE("a queued item is leased, completed once, and its answer lands with the completion") {
  queue_fixture f;
  auto it = scheduled();
  f.enqueue(it);
  auto lease = f.op("lease", json::object())["lease"];
  REQUIRE(lease.is_object());
  CHECK(lease["item_id"] == it.item_id);
  CHECK(lease["run_id"] == it.run_id);
  auto lease_id = lease["lease_id"].get<std::string>();
  auto done =
    f.op("complete", {{"item_id", it.item_id}, {"lease_id", lease_id}, {"answer", "Sunny"}});
  CHECK(done["run_id"] == it.run_id);
  CHECK(done["chat_id"] == "c_1");
  auto events = f.chat("c_1");
  CHECK(types_of(events)
        == std::vector<std::string>{"work.enqueued", "turn.reported", "work.completed"});
  CHECK(json::parse(events[1].data)["assistant"] == "Sunny");
  CHECK(json::parse(events[1].data)["run_id"] == it.run_id);
  // completing twice answers precisely and appends nothing
  auto again =
    f.refused("complete", {{"item_id", it.item_id}, {"lease_id", lease_id}, {"answer", "Sunny"}});
  CHECK(code_of(again) == errc::conflict);
  CHECK(message_of(again).find("already settled") != std::string::npos);
  CHECK(f.chat("c_1").size() == 3);
  // and the same occurrence cannot be queued again
  auto [text, err] = f.ask(enqueue_atom::value, wk::to_json(it).dump(), std::vector<event_draft>{});
  CHECK(code_of(err) == errc::conflict);
}

TEST_CASE("a completion with a bad answer or another lease id is refused and stores nothing") {
  queue_fixture f;
  auto it = scheduled();
  f.enqueue(it);
  auto lease_id = f.op("lease", json::object())["lease"]["lease_id"].get<std::string>();
  CHECK(code_of(f.refused("complete", {{"item_id", it.item_id}, {"lease_id", lease_id}}))
        == errc::missing_field);
  CHECK(code_of(f.refused("complete", {{"item_id", it.item_id},
                                       {"lease_id", lease_id},
                                       {"answer", std::string(64 * 1024 + 1, 'a')}}))
        == errc::out_of_range);
  CHECK(code_of(f.refused("complete",
                          {{"item_id", it.item_id}, {"lease_id", "l_other"}, {"answer", "x"}}))
        == errc::conflict);
  CHECK(code_of(f.refused("heartbeat", {{"item_id", "w_nope"}, {"lease_id", lease_id}}))
        == errc::not_found);
  CHECK(types_of(f.chat("c_1")) == std::vector<std::string>{"work.enqueued"});
  // the lease still holds for its holder
  f.op("complete", {{"item_id", it.item_id}, {"lease_id", lease_id}, {"answer", "ok"}});
}

TEST_CASE("a long poll with nothing to lease answers null after its wait, within the bound") {
  queue_fixture f;
  CHECK(f.op("lease", {{"wait_ms", 50}})["lease"].is_null());
  CHECK(code_of(f.refused("lease", {{"wait_ms", 10'000'000}})) == errc::out_of_range);
  CHECK(code_of(f.refused("lease", {{"kinds", {"browser"}}})) == errc::out_of_range);
}

TEST_CASE("a long poll waiting when work arrives gets it") {
  queue_fixture f;
  std::string answer;
  auto waiting = (*f.owner)->request(f.queue, wait, work_atom::value, std::string{"lease"},
                                     json{{"wait_ms", 5'000}}.dump());
  caf::scoped_actor other{*f.sys};
  auto it = scheduled();
  other
    ->request(f.queue, wait, enqueue_atom::value, wk::to_json(it).dump(),
              std::vector<event_draft>{})
    .receive([](std::string&) {}, [](caf::error& err) { FAIL(message_of(err)); });
  waiting.receive([&](std::string& text) { answer = std::move(text); },
                  [](caf::error& err) { FAIL(message_of(err)); });
  CHECK(json::parse(answer)["lease"]["item_id"] == it.item_id);
}

TEST_CASE("a worker that goes away holding a lease has it offered to another worker") {
  queue_fixture f;
  caf::scoped_actor sink{*f.sys};
  auto first = f.sys->spawn(forwarding_worker, caf::actor{sink});
  auto [ok, err] = std::pair<bool, caf::error>{};
  (*f.owner)
    ->request(f.queue, wait, work_atom::value, caf::actor{first}, uint32_t{1})
    .receive([&](bool b) { ok = b; }, [&](caf::error& e) { err = std::move(e); });
  REQUIRE(ok);
  auto it = scheduled();
  f.enqueue(it);
  std::string offered;
  sink->receive([&](work_atom, offer_atom, std::string& lease) { offered = std::move(lease); });
  CHECK(json::parse(offered)["item_id"] == it.item_id);
  auto first_lease = json::parse(offered)["lease_id"].get<std::string>();
  // the first worker dies; the second gets the same item under a new lease
  auto second = f.sys->spawn(forwarding_worker, caf::actor{sink});
  (*f.owner)
    ->request(f.queue, wait, work_atom::value, caf::actor{second}, uint32_t{1})
    .receive([](bool) {}, [](caf::error& e) { FAIL(message_of(e)); });
  caf::anon_send_exit(first, caf::exit_reason::kill);
  sink->receive([&](work_atom, offer_atom, std::string& lease) { offered = std::move(lease); });
  auto again = json::parse(offered);
  CHECK(again["item_id"] == it.item_id);
  CHECK(again["lease_id"] != first_lease);
  CHECK(again["attempt"] == 2);
  // the dead worker's lease no longer completes it; the new one does, once
  CHECK(code_of(f.refused("complete",
                          {{"item_id", it.item_id}, {"lease_id", first_lease}, {"answer", "a"}}))
        == errc::conflict);
  f.op("complete", {{"item_id", it.item_id}, {"lease_id", again["lease_id"]}, {"answer", "b"}});
  CHECK(types_of(f.chat("c_1"))
        == std::vector<std::string>{"work.enqueued", "turn.reported", "work.completed"});
  caf::anon_send_exit(second, caf::exit_reason::kill);
}

TEST_CASE("a lease that is not kept alive expires and goes to the next host") {
  queue_fixture f;
  auto it = scheduled();
  f.enqueue(it);
  auto first = f.op("lease", json::object())["lease"];
  REQUIRE(first.is_object());
  // a long poll gets it once the 300 ms lease has expired
  auto second = f.op("lease", {{"wait_ms", 5'000}})["lease"];
  REQUIRE(second.is_object());
  CHECK(second["item_id"] == it.item_id);
  CHECK(code_of(f.refused("heartbeat", {{"item_id", it.item_id}, {"lease_id", first["lease_id"]}}))
        == errc::conflict);
}

TEST_CASE("a restarted queue offers its unsettled items again and never its settled ones") {
  queue_fixture f;
  auto done = scheduled("sc_1");
  auto open = scheduled("sc_2");
  f.enqueue(done);
  f.enqueue(open);
  auto lease = f.op("lease", json::object())["lease"];
  REQUIRE(lease["item_id"] == done.item_id);
  f.op("complete", {{"item_id", done.item_id}, {"lease_id", lease["lease_id"]}, {"answer", "a"}});
  REQUIRE(f.op("lease", json::object())["lease"]["item_id"] == open.item_id); // leased, then lost
  f.start();
  auto items = f.op("list", json::object())["items"];
  REQUIRE(items.size() == 1);
  CHECK(items[0]["item_id"] == open.item_id);
  CHECK(items[0]["state"] == "ready");
  auto again = f.op("lease", json::object())["lease"];
  CHECK(again["item_id"] == open.item_id);
}

TEST_CASE("a malformed item is refused and stores nothing") {
  queue_fixture f;
  auto doc = wk::to_json(scheduled());
  doc["chat_id"] = "Not a chat";
  auto [text, err] = f.ask(enqueue_atom::value, doc.dump(), std::vector<event_draft>{});
  CHECK(code_of(err) == errc::out_of_range);
  CHECK(f.op("list", json::object())["items"].empty());
}
