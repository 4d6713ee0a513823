// The schedule keeper actor (actors/schedule/schedule_keeper.hpp) over a
// real event store and work queue: every schedule due in the same pass is
// fired once, a keeper started again fires nothing twice, a due turn the
// queue refuses is fired again after the retry delay, and owner operations
// on another tenant's id find nothing. Schedules due now are written into
// the store as made in the past, so nothing waits for a clock to reach them.
#include <doctest/doctest.h>

#include <set>

#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/schedule/schedule_keeper.hpp"
#include "actors/work/work_queue.hpp"
#include "config/civil_time.hpp"
#include "config/clock.hpp"
#include "config/time_zone.hpp"
#include "messages/error.hpp"
#include "support/actor_store.hpp"

using namespace voxos;
using json = nlohmann::json;
namespace sc = voxos::schedules;

namespace {

constexpr auto wait = std::chrono::seconds(20);

int64_t now_s() {
  return floor_div(wall_clock_us(), 1'000'000);
}

struct keeper_fixture : test::actor_store {
  std::unique_ptr<caf::scoped_actor> owner;  ///< the parent of queue and keeper
  std::unique_ptr<caf::scoped_actor> writer; ///< the test's own requests
  work_queue_actor queue;
  schedule_keeper_actor keeper;
  work_queue_options queue_opts;
  schedule_keeper_options keeper_opts;

  keeper_fixture() {
    queue_opts.leases.retry_delay_us = 0;
    writer = std::make_unique<caf::scoped_actor>(*sys);
  }

  /// The queue and keeper afresh over the same store (as a tenant that
  /// restarted).
  void start() {
    stop();
    owner = std::make_unique<caf::scoped_actor>(*sys);
    queue = spawn_work_queue(owner->ptr(), "t_1", store, queue_opts);
    keeper = spawn_schedule_keeper(owner->ptr(), "t_1", store, queue, keeper_opts);
  }

  void stop() {
    if (keeper)
      caf::anon_send_exit(keeper, caf::exit_reason::kill);
    if (queue)
      caf::anon_send_exit(queue, caf::exit_reason::kill);
    owner.reset();
    keeper = nullptr;
    queue = nullptr;
  }

  ~keeper_fixture() {
    stop();
    writer.reset();
  }

  /// Writes a one-shot made an hour before `at_s`, due at `at_s`.
  std::string one_shot(int index, int64_t at_s, const std::string& chat = "c_1") {
    auto made = sc::create({"a_1", chat, "r_1", (at_s - 3600) * 1'000'000},
                           {{"task_name", "Remind"},
                            {"instruction", "Reminder " + std::to_string(index)},
                            {"timing", {{"kind", "once"}, {"at", iso_date_time(at_s)}}},
                            {"timezone", "UTC"}},
                           {}, 0, system_time_zones());
    REQUIRE_FALSE(made.refused);
    append(chat, sc::saved_event(made.schedule_id, made.rec));
    return made.schedule_id;
  }

  void append(const std::string& chat, event_draft ev) {
    append_request req{"t_1", work::stream_of(chat), {std::move(ev)}, append_request::any_seq};
    (*writer)
      ->request(store, wait, append_atom::value, std::move(req))
      .receive([](const append_result&) {}, [](caf::error& err) { FAIL(message_of(err)); });
  }

  template <class Handle, class Atom>
  std::pair<std::string, caf::error> ask(const Handle& dest, Atom atom, std::string op,
                                         const json& body) {
    std::string out;
    caf::error failed;
    (*writer)
      ->request(dest, wait, atom, std::move(op), body.dump())
      .receive([&](std::string& text) { out = std::move(text); },
               [&](caf::error& err) { failed = std::move(err); });
    return {out, failed};
  }

  /// A lease of the next ready item, waiting for one up to 10 s.
  json lease() {
    auto [text, err] = ask(queue, work_atom::value, "lease", {{"wait_ms", 10'000}});
    REQUIRE_MESSAGE(!err, message_of(err));
    return json::parse(text)["lease"];
  }

  json items() {
    auto [text, err] = ask(queue, work_atom::value, "list", json::object());
    REQUIRE_MESSAGE(!err, message_of(err));
    return json::parse(text)["items"];
  }

  json schedules() {
    auto [text, err] = ask(keeper, schedule_atom::value, "list", json::object());
    REQUIRE_MESSAGE(!err, message_of(err));
    return json::parse(text)["schedules"];
  }
};

} // namespace

TEST_CASE("every schedule due in the same second fires in one pass, each once") {
  keeper_fixture f;
  constexpr int count = 300;
  auto due = now_s() - 60;
  std::set<std::string> made;
  for (int index = 0; index < count; ++index)
    made.insert(f.one_shot(index, due, "c_" + std::to_string(index % 7)));
  f.start();
  std::set<std::string> fired;
  for (int index = 0; index < count; ++index) {
    auto lease = f.lease();
    REQUIRE(lease.is_object());
    CHECK(lease["occurrence_s"] == due);
    fired.insert(lease["schedule_id"].get<std::string>());
  }
  CHECK(fired == made);
  CHECK(f.items().size() == count);
  // The keeper started again over the same store fires none of them twice.
  f.start();
  CHECK(f.schedules().empty());
  CHECK(f.items().size() == count);
}

TEST_CASE("a due turn the queue refuses is fired again after the retry delay") {
  keeper_fixture f;
  f.queue_opts.max_pending = 1;
  f.keeper_opts.retry_delay_s = 1;
  auto due = now_s() - 60;
  auto first = f.one_shot(1, due);
  auto second = f.one_shot(2, due);
  f.start();
  // One fits; the other is refused (work.max_pending) and kept.
  auto lease = f.lease();
  REQUIRE(lease.is_object());
  auto [done, err] =
    f.ask(f.queue, work_atom::value, "complete",
          {{"item_id", lease["item_id"]}, {"lease_id", lease["lease_id"]}, {"answer", "Done."}});
  REQUIRE_MESSAGE(!err, message_of(err));
  // Room again: the refused one fires at its retry.
  auto retried = f.lease();
  REQUIRE(retried.is_object());
  CHECK(retried["schedule_id"] != lease["schedule_id"]);
  std::set<std::string> both{lease["schedule_id"].get<std::string>(),
                             retried["schedule_id"].get<std::string>()};
  CHECK(both == std::set<std::string>{first, second});
  CHECK(retried["occurrence_s"] == due);
}

TEST_CASE("owner operations on a schedule id the keeper does not hold are not found") {
  keeper_fixture f;
  f.start();
  for (const char* op : {"pause", "resume", "delete"}) {
    CAPTURE(op);
    auto [text, err] =
      f.ask(f.keeper, schedule_atom::value, op, {{"schedule_id", "sc_0123456789abcdef"}});
    REQUIRE(err);
    CHECK(code_of(err) == errc::not_found);
  }
  auto [text, err] = f.ask(f.keeper, schedule_atom::value, "create", {{"agent_id", "a_1"}});
  REQUIRE(err);
  CHECK(code_of(err) == errc::missing_field);
}

TEST_CASE("owner operations sent together on one schedule are applied one at a time, in order") {
  keeper_fixture f;
  auto id = f.one_shot(1, now_s() + 3600);
  f.start();
  REQUIRE(f.schedules().size() == 1);
  auto& w = *f.writer;
  json body{{"schedule_id", id}};
  // All four are sent before any answer is read.
  auto paused = w->request(f.keeper, wait, schedule_atom::value, std::string{"pause"}, body.dump());
  auto resumed =
    w->request(f.keeper, wait, schedule_atom::value, std::string{"resume"}, body.dump());
  auto deleted =
    w->request(f.keeper, wait, schedule_atom::value, std::string{"delete"}, body.dump());
  auto again = w->request(f.keeper, wait, schedule_atom::value, std::string{"pause"}, body.dump());
  auto answer = [](auto& handle) {
    std::pair<json, caf::error> out;
    handle.receive([&](std::string& text) { out.first = json::parse(text); },
                   [&](caf::error& err) { out.second = std::move(err); });
    return out;
  };
  auto [first, first_err] = answer(paused);
  REQUIRE_MESSAGE(!first_err, message_of(first_err));
  CHECK(first["state"] == "paused");
  auto [second, second_err] = answer(resumed);
  REQUIRE_MESSAGE(!second_err, message_of(second_err));
  CHECK(second["state"] == "active");
  auto [third, third_err] = answer(deleted);
  REQUIRE_MESSAGE(!third_err, message_of(third_err));
  CHECK(third["deleted"] == id);
  auto [fourth, fourth_err] = answer(again);
  REQUIRE(fourth_err);
  CHECK(code_of(fourth_err) == errc::not_found);
  // The chat holds them in the same order.
  std::vector<std::string> states;
  w->request(f.store, wait, read_atom::value, stream_query{"t_1", work::stream_of("c_1"), 1, 100})
    .receive(
      [&](std::vector<event_record>& events) {
        for (const auto& ev : events)
          states.push_back(ev.type == "schedule.deleted"
                             ? std::string{"deleted"}
                             : json::parse(ev.data)["state"].get<std::string>());
      },
      [](caf::error& err) { FAIL(message_of(err)); });
  CHECK(states == std::vector<std::string>{"active", "paused", "active", "deleted"});
}
