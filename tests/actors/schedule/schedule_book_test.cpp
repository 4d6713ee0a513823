// actors/schedule/schedule_book: a schedule made from a run's context, each
// broken rule refused with its own code, the stored form, what a due
// schedule fires (and the events that go with it), pause and resume, and
// the index of due times. Times are given, never read from the clock.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "actors/schedule/schedule_book.hpp"
#include "config/civil_time.hpp"
#include "config/time_zone.hpp"

using namespace voxos;
using nlohmann::json;
namespace sc = voxos::schedules;

namespace {

constexpr int64_t hour = 3600;

/// 2030-01-15T12:00:00Z, the tests' "now".
const int64_t now_s = from_civil({2030, 1, 15, 12, 0, 0});

sc::requester asker(int64_t at_s = now_s) {
  return {"a_1", "c_1", "r_1", at_s * 1'000'000};
}

json once_at(const std::string& at, const std::string& zone = "UTC") {
  return {{"task_name", "Call mum"},
          {"instruction", "Remind me to call mum."},
          {"timing", {{"kind", "once"}, {"at", at}}},
          {"timezone", zone}};
}

json every(int64_t seconds, const std::string& zone = "UTC") {
  return {{"task_name", "Check prices"},
          {"instruction", "Check the flight prices."},
          {"timing", {{"kind", "interval"}, {"every_seconds", seconds}}},
          {"timezone", zone}};
}

sc::creation made(const json& args, int64_t at_s = now_s, sc::create_limits limits = {}) {
  return sc::create(asker(at_s), args, limits, 0, system_time_zones());
}

sc::record accepted(const json& args, int64_t at_s = now_s) {
  auto out = made(args, at_s);
  REQUIRE_MESSAGE(!out.refused, (out.refused ? out.refused->message : ""));
  return std::move(out.rec);
}

std::string refusal_code(const json& args, sc::create_limits limits = {}) {
  auto out = made(args, now_s, limits);
  REQUIRE(out.refused);
  return out.refused->code;
}

} // namespace

TEST_CASE("a schedule takes its agent, chat and run from the context and is due at its first "
          "occurrence") {
  auto out = made(once_at("2030-01-15T14:30", "Europe/London"));
  REQUIRE_FALSE(out.refused);
  CHECK(out.schedule_id.rfind("sc_", 0) == 0);
  CHECK(out.rec.agent_id == "a_1");
  CHECK(out.rec.chat_id == "c_1");
  CHECK(out.rec.created_by_run == "r_1");
  CHECK(out.rec.st == sc::state::active);
  CHECK_FALSE(out.rec.last_fired_s);
  CHECK(out.rec.next_due_s == now_s + 2 * hour + 1800); // London is UTC in January
  auto listing = sc::to_listing(out.schedule_id, out.rec);
  CHECK(listing["next_due_utc"] == "2030-01-15T14:30:00Z");
  CHECK(listing["next_due_local"] == "2030-01-15T14:30:00+00:00");
}

TEST_CASE("each broken rule of a new schedule is refused with its own code") {
  CHECK(refusal_code(once_at("2030-01-15T11:59")) == "in_past");
  CHECK(refusal_code(once_at("2030-01-15T12:00")) == "in_past");
  CHECK(refusal_code(every(59)) == "interval_too_short");
  sc::create_limits short_max;
  short_max.timing.max_interval_s = 7 * 86'400;
  CHECK(refusal_code(every(8 * 86'400), short_max) == "interval_too_long");
  CHECK(refusal_code(once_at("2041-01-15T12:00")) == "too_far_ahead");
  CHECK(refusal_code(once_at("2030-01-16T09:00", "Mars/Olympus_Mons")) == "unknown_timezone");
  CHECK(refusal_code(once_at("2030-01-16T09:00", "../../etc/passwd")) == "unknown_timezone");
  CHECK(refusal_code(once_at("2030-02-30T09:00")) == "invalid_arguments");
  auto starts_past = every(hour);
  starts_past["timing"]["starts_at"] = "2030-01-01T09:00";
  CHECK(refusal_code(starts_past) == "in_past");
}

TEST_CASE("a refused schedule's message names the rule, never the rejected value") {
  auto out = made(once_at("2041-03-04T05:06", "Mars/Olympus_Mons"));
  REQUIRE(out.refused);
  CHECK(out.refused->message.find("Mars") == std::string::npos);
  out = made(once_at("2041-03-04T05:06"));
  REQUIRE(out.refused);
  CHECK(out.refused->message.find("2041") == std::string::npos);
  CHECK(out.refused->message.find("timing.at") != std::string::npos);
}

TEST_CASE("the minimum interval is the configured one") {
  sc::create_limits tight;
  tight.timing.min_interval_s = 5;
  CHECK_FALSE(made(every(5), now_s, tight).refused);
  CHECK(refusal_code(every(4), tight) == "interval_too_short");
}

TEST_CASE("a tenant holding its most schedules is refused too_many_schedules") {
  sc::create_limits two;
  two.max_schedules = 2;
  CHECK_FALSE(sc::create(asker(), every(hour), two, 1, system_time_zones()).refused);
  auto out = sc::create(asker(), every(hour), two, 2, system_time_zones());
  REQUIRE(out.refused);
  CHECK(out.refused->code == "too_many_schedules");
}

TEST_CASE("a stored schedule reads back as it was written") {
  auto rec = accepted(every(86'400, "America/New_York"));
  rec.last_fired_s = now_s - 10;
  rec.resumed_s = now_s - 5;
  auto text = sc::to_json_text("sc_1", rec);
  auto back = sc::from_json(json::parse(text), system_time_zones());
  REQUIRE_MESSAGE(back, (back ? "" : back.error().message()));
  CHECK(back->first == "sc_1");
  CHECK(back->second.instruction == rec.instruction);
  CHECK(back->second.timing.every_s == 86'400);
  CHECK(back->second.timing.zone == "America/New_York");
  CHECK(back->second.zone == rec.zone); // one shared zone
  CHECK(back->second.last_fired_s == rec.last_fired_s);
  CHECK(back->second.resumed_s == rec.resumed_s);
  CHECK(back->second.next_due_s == rec.next_due_s);
  CHECK(sc::to_json_text("sc_1", back->second) == text);
}

TEST_CASE("a malformed stored schedule is corrupt data") {
  auto good = json::parse(sc::to_json_text("sc_1", accepted(every(hour))));
  for (const char* key : {"agent_id", "chat_id", "timing", "state", "created_us", "timezone"}) {
    CAPTURE(key);
    auto bad = good;
    bad.erase(key);
    auto read = sc::from_json(bad, system_time_zones());
    REQUIRE_FALSE(read);
    CHECK(read.error().code() == errc::corrupt_data);
  }
  auto other_zone = good;
  other_zone["timezone"] = "Europe/Paris";
  CHECK_FALSE(sc::from_json(other_zone, system_time_zones()));
  auto fired_text = good;
  fired_text["last_fired_s"] = "yesterday";
  CHECK_FALSE(sc::from_json(fired_text, system_time_zones()));
}

TEST_CASE("a due one-shot fires once and is deleted by the append that queues its turn") {
  auto rec = accepted(once_at("2030-01-15T13:00"));
  auto due = now_s + hour;
  CHECK_FALSE(sc::fire("sc_1", rec, (due - 1) * 1'000'000).fire);
  auto fired = sc::fire("sc_1", rec, (due + 5) * 1'000'000);
  REQUIRE(fired.fire);
  CHECK(fired.occurrence_s == due);
  CHECK(fired.gone);
  CHECK_FALSE(fired.next_due_s);
  CHECK(fired.item.item_id == work::scheduled_item_id("sc_1", due));
  CHECK(fired.item.run_id == work::run_id_of(fired.item.item_id));
  CHECK(fired.item.k == work::kind::scheduled_turn);
  CHECK(fired.item.agent_id == "a_1");
  CHECK(fired.item.chat_id == "c_1");
  CHECK(fired.item.text == "Remind me to call mum.");
  CHECK(fired.item.schedule_id == "sc_1");
  REQUIRE(fired.with.size() == 1);
  CHECK(fired.with[0].type == "schedule.deleted");
  CHECK(json::parse(fired.with[0].data) == json{{"schedule_id", "sc_1"}});
}

TEST_CASE("a one-shot missed by hours fires once, for its own time") {
  auto rec = accepted(once_at("2030-01-15T13:00"));
  auto fired = sc::fire("sc_1", rec, (now_s + 30 * hour) * 1'000'000);
  REQUIRE(fired.fire);
  CHECK(fired.occurrence_s == now_s + hour);
  CHECK(fired.gone);
}

TEST_CASE("an interval that missed several occurrences fires once for the latest and goes on") {
  auto rec = accepted(every(hour));
  auto first = *rec.next_due_s;
  auto late = first + 5 * hour + 600; // five more occurrences passed
  auto fired = sc::fire("sc_1", rec, late * 1'000'000);
  REQUIRE(fired.fire);
  CHECK(fired.occurrence_s == first + 5 * hour);
  CHECK(fired.next_due_s == first + 6 * hour);
  CHECK_FALSE(fired.gone);
  REQUIRE(fired.with.size() == 1);
  CHECK(fired.with[0].type == "schedule.saved");
  auto saved = json::parse(fired.with[0].data);
  CHECK(saved["last_fired_s"] == first + 5 * hour);
  CHECK(saved["next_due_s"] == first + 6 * hour);
  // The record with that fire recorded fires nothing more until the next one.
  rec.last_fired_s = fired.occurrence_s;
  rec.next_due_s = fired.next_due_s;
  CHECK_FALSE(sc::fire("sc_1", rec, (late + 60) * 1'000'000).fire);
  CHECK(sc::fire("sc_1", rec, (first + 6 * hour) * 1'000'000).fire);
}

TEST_CASE("one occurrence is one item, however often it is fired") {
  auto rec = accepted(every(hour));
  auto at = (*rec.next_due_s + 10) * 1'000'000;
  CHECK(sc::fire("sc_1", rec, at).item.item_id == sc::fire("sc_1", rec, at + 999).item.item_id);
  CHECK(sc::fire("sc_1", rec, at).item.item_id != sc::fire("sc_2", rec, at).item.item_id);
}

TEST_CASE("a paused schedule is never due and what fell in the pause never fires") {
  auto rec = accepted(every(hour));
  auto first = *rec.next_due_s;
  auto paused = sc::pause("sc_1", rec);
  REQUIRE(paused.after);
  CHECK(paused.event.type == "schedule.saved");
  CHECK(json::parse(paused.event.data)["state"] == "paused");
  CHECK_FALSE(paused.after->next_due_s);
  CHECK_FALSE(sc::fire("sc_1", *paused.after, (first + 3 * hour) * 1'000'000).fire);
  // Resumed between occurrences: next due is the following one, and nothing
  // of the pause fires at it but that occurrence.
  auto resume_at = first + 3 * hour + 60;
  auto resumed = sc::resume("sc_1", *paused.after, resume_at);
  REQUIRE(resumed.after);
  CHECK(resumed.after->next_due_s == first + 4 * hour);
  CHECK_FALSE(sc::fire("sc_1", *resumed.after, (resume_at + 1) * 1'000'000).fire);
  auto fired = sc::fire("sc_1", *resumed.after, (first + 4 * hour) * 1'000'000);
  REQUIRE(fired.fire);
  CHECK(fired.occurrence_s == first + 4 * hour);
}

TEST_CASE("pausing a paused or resuming an active schedule changes nothing") {
  auto rec = accepted(every(hour));
  CHECK(sc::resume("sc_1", rec, now_s).event.type.empty());
  auto paused = sc::pause("sc_1", rec);
  CHECK(sc::pause("sc_1", *paused.after).event.type.empty());
}

TEST_CASE("a one-shot whose time passed while it was paused cannot be resumed") {
  auto rec = accepted(once_at("2030-01-15T13:00"));
  auto paused = sc::pause("sc_1", rec);
  auto early = sc::resume("sc_1", *paused.after, now_s + 60);
  REQUIRE(early.after);
  CHECK(early.after->next_due_s == now_s + hour);
  auto late = sc::resume("sc_1", *paused.after, now_s + 2 * hour);
  REQUIRE(late.refused);
  CHECK(late.refused->code == "passed");
  CHECK(late.event.type.empty());
}

TEST_CASE("the index holds active schedules not being written, earliest first") {
  sc::book book;
  auto hourly = accepted(every(hour));
  auto daily = accepted(every(86'400));
  book.put("sc_b", daily);
  book.put("sc_a", hourly);
  CHECK(book.next_due() == hourly.next_due_s);
  auto all = book.due(now_s + 2 * 86'400);
  REQUIRE(all.size() == 2);
  CHECK(all[0] == "sc_a");
  CHECK(all[1] == "sc_b");
  CHECK(book.due(now_s).empty());
  book.update("sc_a", [](sc::record& r) { r.busy = true; });
  CHECK(book.next_due() == daily.next_due_s);
  book.update("sc_a", [](sc::record& r) { r.busy = false; });
  book.put("sc_b", *sc::pause("sc_b", daily).after);
  CHECK(book.due(now_s + 2 * 86'400).size() == 1);
  book.erase("sc_a");
  CHECK_FALSE(book.next_due());
  CHECK(book.size() == 1);
}

TEST_CASE("a fired item's text reads as the work queue's own form of it") {
  auto rec = accepted(every(hour));
  rec.instruction = "Say \"hi\" \\ \n\u00e9t\u00e9";
  auto fired = sc::fire("sc_1", rec, (*rec.next_due_s + 1) * 1'000'000);
  REQUIRE(fired.fire);
  CHECK(json::parse(sc::item_text(fired.item)) == work::to_json(fired.item));
  work::item child;
  child.item_id = "w_1";
  child.k = work::kind::child_run;
  child.parent_run_id = "r_1";
  child.context = "isolated";
  child.model = "m";
  CHECK(json::parse(sc::item_text(child)) == work::to_json(child));
}

TEST_CASE("a stored record keeps its timing's stored form") {
  auto rec = accepted(every(86'400, "Europe/Paris"));
  auto stored = json::parse(sc::to_json_text("sc_1", rec));
  CHECK(stored["timing"] == timing_to_json(rec.timing));
}
