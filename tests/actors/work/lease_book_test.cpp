// The work queue's bookkeeping (actors/work/lease_book.hpp) and the item
// model (work_item.hpp): each rule, named after it.
#include <doctest/doctest.h>

#include "actors/work/lease_book.hpp"
#include "actors/work/work_item.hpp"

using namespace voxos;
using json = nlohmann::json;
namespace wk = voxos::work;

namespace {

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
  it.enqueued_us = 5;
  return it;
}

wk::item child(std::string parent = "r_parent") {
  wk::item it;
  it.item_id = wk::child_item_id();
  it.k = wk::kind::child_run;
  it.agent_id = "a_1";
  it.chat_id = "c_1";
  it.run_id = wk::run_id_of(it.item_id);
  it.text = "Compare three offers";
  it.parent_run_id = std::move(parent);
  it.context = "isolated";
  return it;
}

wk::lease_options options() {
  wk::lease_options opts;
  opts.lease_us = 1'000;
  opts.max_attempts = 3;
  opts.retry_delay_us = 100;
  return opts;
}

bool is_conflict(const status& st, std::string_view words) {
  return st.code() == errc::conflict && st.message().find(words) != std::string::npos;
}

} // namespace

TEST_CASE("one schedule occurrence is one item and one run, however often it is fired") {
  CHECK(wk::scheduled_item_id("sc_1", 60) == wk::scheduled_item_id("sc_1", 60));
  CHECK(wk::scheduled_item_id("sc_1", 60) != wk::scheduled_item_id("sc_1", 120));
  CHECK(wk::scheduled_item_id("sc_1", 60) != wk::scheduled_item_id("sc_2", 60));
  auto id = wk::scheduled_item_id("sc_1", 60);
  CHECK(wk::run_id_of(id) == wk::run_id_of(id));
  CHECK(wk::is_work_run(wk::run_id_of(id)));
  CHECK_FALSE(wk::is_work_run("r_0123456789abcdef"));
  CHECK(wk::child_item_id() != wk::child_item_id());
}

TEST_CASE("an item survives its JSON form, and a malformed stored item names its field") {
  for (const auto& it : {scheduled(), child()}) {
    auto back = wk::item_from_json(wk::to_json(it));
    REQUIRE(back);
    CHECK(back->item_id == it.item_id);
    CHECK(back->k == it.k);
    CHECK(back->run_id == it.run_id);
    CHECK(back->text == it.text);
    CHECK(back->occurrence_s == it.occurrence_s);
    CHECK(back->parent_run_id == it.parent_run_id);
  }
  auto doc = wk::to_json(child());
  doc["context"] = "everything";
  auto bad = wk::item_from_json(doc);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code() == errc::corrupt_data);
  CHECK(bad.error().message().find("context") != std::string::npos);
  doc = wk::to_json(scheduled());
  doc["chat_id"] = "../other";
  CHECK_FALSE(wk::item_from_json(doc));
}

TEST_CASE("the projection keeps each unsettled item and forgets it once settled") {
  auto it = scheduled();
  event_record ev{"t_1", wk::stream_of("c_1"),      1,
                  0,     std::string{wk::enqueued}, wk::to_json(it).dump()};
  std::vector<state_write> out;
  REQUIRE(wk::project(ev, out).is_ok());
  REQUIRE(out.size() == 1);
  CHECK(out[0].key == wk::work_prefix("t_1") + it.item_id);
  CHECK(out[0].value.has_value());
  out.clear();
  ev.type = wk::completed;
  ev.data = json{{"item_id", it.item_id}, {"run_id", it.run_id}}.dump();
  REQUIRE(wk::project(ev, out).is_ok());
  REQUIRE(out.size() == 1);
  CHECK_FALSE(out[0].value.has_value());
  // a turn report or any other chat event projects nothing
  out.clear();
  ev.type = "turn.reported";
  REQUIRE(wk::project(ev, out).is_ok());
  CHECK(out.empty());
}

TEST_CASE("a work event outside its chat's stream, or for another chat, is refused") {
  auto it = scheduled();
  std::vector<state_write> out;
  event_record elsewhere{"t_1", "plans", 1, 0, std::string{wk::enqueued}, wk::to_json(it).dump()};
  CHECK_FALSE(wk::project(elsewhere, out).is_ok());
  event_record other_chat{"t_1", wk::stream_of("c_2"),      1,
                          0,     std::string{wk::enqueued}, wk::to_json(it).dump()};
  CHECK_FALSE(wk::project(other_chat, out).is_ok());
  event_record not_json{"t_1", wk::stream_of("c_1"), 1, 0, std::string{wk::enqueued}, "nope"};
  CHECK_FALSE(wk::project(not_json, out).is_ok());
  CHECK(out.empty());
}

TEST_CASE("ready items are leased oldest first, one holder each") {
  wk::lease_book book{options()};
  auto first = scheduled("sc_1");
  auto second = scheduled("sc_2");
  REQUIRE(book.add(first, 10).is_ok());
  REQUIRE(book.add(second, 20).is_ok());
  CHECK_FALSE(book.take("h", "l_0", 5)); // nothing ready yet
  auto a = book.take("h1", "l_1", 30);
  auto b = book.take("h2", "l_2", 30);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->it->item.item_id == first.item_id);
  CHECK(b->it->item.item_id == second.item_id);
  CHECK(a->expires_us == 30 + 1'000);
  CHECK_FALSE(book.take("h3", "l_3", 30));
  CHECK(book.leased_count() == 2);
}

TEST_CASE("an item already queued is refused a second time") {
  wk::lease_book book{options()};
  REQUIRE(book.add(scheduled(), 0).is_ok());
  CHECK(book.add(scheduled(), 0).code() == errc::conflict);
}

TEST_CASE("a lease holder filters by kind") {
  wk::lease_book book{options()};
  REQUIRE(book.add(scheduled(), 0).is_ok());
  REQUIRE(book.add(child(), 0).is_ok());
  auto got = book.take("h", "l_1", 1, {wk::kind::child_run});
  REQUIRE(got);
  CHECK(got->it->item.k == wk::kind::child_run);
}

TEST_CASE("a heartbeat or completion under another lease id is refused as a lost lease") {
  wk::lease_book book{options()};
  auto it = scheduled();
  REQUIRE(book.add(it, 0).is_ok());
  REQUIRE(book.take("h1", "l_1", 0));
  CHECK(is_conflict(book.heartbeat(it.item_id, "l_other", 10).error(), "lease lost"));
  CHECK(is_conflict(book.finish(it.item_id, "l_other").error(), "lease lost"));
  CHECK(book.check("w_unknown", "l_1").code() == errc::not_found);
  auto beat = book.heartbeat(it.item_id, "l_1", 500);
  REQUIRE(beat);
  CHECK(*beat == 1'500);
}

TEST_CASE("an expired lease goes to another host, and the first host's completion is refused") {
  wk::lease_book book{options()};
  auto it = scheduled();
  REQUIRE(book.add(it, 0).is_ok());
  REQUIRE(book.take("h1", "l_1", 0));
  std::vector<wk::item> exhausted;
  auto holders = book.expire(1'000, exhausted);
  CHECK(holders == std::vector<std::string>{"h1"});
  CHECK(exhausted.empty());
  CHECK_FALSE(book.take("h2", "l_2", 1'050)); // the retry delay
  auto again = book.take("h2", "l_2", 1'100);
  REQUIRE(again);
  CHECK(again->it->attempts == 2);
  CHECK(is_conflict(book.finish(it.item_id, "l_1").error(), "lease lost"));
  auto done = book.finish(it.item_id, "l_2");
  REQUIRE(done);
  book.settled(it.item_id);
  CHECK_FALSE(book.holds(it.item_id));
}

TEST_CASE("a worker that completes twice is told the item is already settled") {
  wk::lease_book book{options()};
  auto it = scheduled();
  REQUIRE(book.add(it, 0).is_ok());
  REQUIRE(book.take("h1", "l_1", 0));
  REQUIRE(book.finish(it.item_id, "l_1"));
  // while the completion is being written, and after it
  CHECK(is_conflict(book.finish(it.item_id, "l_1").error(), "already settled"));
  book.settled(it.item_id);
  CHECK(is_conflict(book.finish(it.item_id, "l_1").error(), "already settled"));
  CHECK(book.add(it, 0).code() == errc::conflict);
}

TEST_CASE("a completion whose write failed leaves the lease with its holder") {
  wk::lease_book book{options()};
  auto it = scheduled();
  REQUIRE(book.add(it, 0).is_ok());
  REQUIRE(book.take("h1", "l_1", 0));
  REQUIRE(book.finish(it.item_id, "l_1"));
  book.unsettle(it.item_id, 10);
  CHECK(book.check(it.item_id, "l_1").is_ok());
  CHECK(book.find(it.item_id)->holder == "h1");
}

TEST_CASE("an item whose lease expired max_attempts times is exhausted, not offered again") {
  wk::lease_book book{options()};
  auto it = scheduled();
  REQUIRE(book.add(it, 0).is_ok());
  int64_t now = 0;
  std::vector<wk::item> exhausted;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    REQUIRE(book.take("h", "l_" + std::to_string(attempt), now));
    now += 1'000;
    book.expire(now, exhausted);
    now += 100;
  }
  REQUIRE(exhausted.size() == 1);
  CHECK(exhausted.front().item_id == it.item_id);
  CHECK_FALSE(book.take("h", "l_9", now + 10'000));
}

TEST_CASE("a host that goes away has its leases offered again at once") {
  wk::lease_book book{options()};
  REQUIRE(book.add(scheduled("sc_1"), 0).is_ok());
  REQUIRE(book.add(scheduled("sc_2"), 0).is_ok());
  REQUIRE(book.take("gone", "l_1", 0));
  REQUIRE(book.take("stays", "l_2", 0));
  auto released = book.release_holder("gone", 5);
  CHECK(released.size() == 1);
  auto again = book.take("other", "l_3", 5);
  REQUIRE(again);
  CHECK(again->it->item.item_id == released.front());
}

TEST_CASE("a failure with a retry gives the item back after the retry delay") {
  wk::lease_book book{options()};
  auto it = scheduled();
  REQUIRE(book.add(it, 0).is_ok());
  REQUIRE(book.take("h", "l_1", 0));
  REQUIRE(book.release(it.item_id, "l_1", 10).is_ok());
  CHECK_FALSE(book.take("h", "l_2", 50));
  CHECK(book.take("h", "l_2", 110));
}

TEST_CASE("cancelling a parent's children settles only that parent's unsettled children") {
  wk::lease_book book{options()};
  auto mine = child("r_parent");
  auto waiting = child("r_parent");
  auto other = child("r_other");
  REQUIRE(book.add(mine, 0).is_ok());
  REQUIRE(book.add(waiting, 0).is_ok());
  REQUIRE(book.add(other, 0).is_ok());
  REQUIRE(book.take("h", "l_1", 0, {})); // the oldest: `mine`
  auto picked = book.settle_if([](const wk::item& it) { return it.parent_run_id == "r_parent"; });
  CHECK(picked.size() == 2);
  CHECK(is_conflict(book.heartbeat(mine.item_id, "l_1", 1).error(), "already settled"));
  auto rest = book.take("h", "l_2", 1);
  REQUIRE(rest);
  CHECK(rest->it->item.item_id == other.item_id);
}

TEST_CASE("the next deadline is the earliest lease expiry or delayed ready time") {
  wk::lease_book book{options()};
  CHECK_FALSE(book.next_deadline());
  REQUIRE(book.add(scheduled("sc_1"), 5'000).is_ok());
  CHECK(*book.next_deadline() == 5'000);
  REQUIRE(book.add(scheduled("sc_2"), 0).is_ok());
  REQUIRE(book.take("h", "l_1", 0));
  CHECK(*book.next_deadline() == 1'000);
}
