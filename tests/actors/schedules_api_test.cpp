// Agent schedules through a node's HTTP API over a real RocksDB store: a
// run's create_agent_schedule call makes a schedule in the run's own chat
// (the model names nothing else), each bad input is refused with its own
// code, audited, and stores nothing; the owner lists, pauses, resumes and
// deletes; another tenant sees none of it; a due schedule's turn is queued
// and leased; and restarts of the node over the same store fire a missed
// one-shot once and an interval that missed several once.
//
// A restart's missed turns are made by rewriting a stored schedule as if it
// had been made hours ago (its record read back and its timing parsed at
// that earlier time), so nothing waits for a clock.
#include <doctest/doctest.h>

#include <string>

#include "actors/schedule/schedule_book.hpp"
#include "actors/work/work_item.hpp"
#include "config/civil_time.hpp"
#include "config/clock.hpp"
#include "config/time_zone.hpp"
#include "support/node_store.hpp"
#include "support/tool_session.hpp"

using namespace voxos;
using nlohmann::json;
using test::admin_token;

namespace {

constexpr int64_t hour = 3600;
constexpr const char* tool = "create_agent_schedule";

int64_t now_s() {
  return floor_div(wall_clock_us(), 1'000'000);
}

/// A local time in UTC, as the tool takes it.
std::string utc_text(int64_t utc_s) {
  return iso_date_time(utc_s);
}

json once_at(int64_t utc_s) {
  return {{"task_name", "Call mum"},
          {"instruction", "Remind me to call mum."},
          {"timing", {{"kind", "once"}, {"at", utc_text(utc_s)}}},
          {"timezone", "UTC"}};
}

json hourly() {
  return {{"task_name", "Check prices"},
          {"instruction", "Check the flight prices."},
          {"timing", {{"kind", "interval"}, {"every_seconds", hour}}},
          {"timezone", "UTC"}};
}

/// A tenant whose default agent may schedule; intervals from one second.
struct schedule_fixture : test::tool_session {
  schedule_fixture()
      : test::tool_session([](node_config& cfg) { cfg.work.min_schedule_interval_s = 1; }) {
    grant(tool);
  }

  /// A run in a new owner text chat: {run_id, chat_id}.
  std::pair<std::string, std::string> chat_run() {
    auto run = node.call("POST", "/v1/runs", token,
                         json{{"agent_id", agent_id}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(run.status == 201, run.raw);
    return {run.body["run_id"].get<std::string>(), run.body["chat_id"].get<std::string>()};
  }

  /// Schedules through a run's call; answers the schedule id.
  std::string schedule(const json& args) {
    auto run = chat_run().first;
    auto made = result_of(run, tool, args);
    return made["schedule_id"].get<std::string>();
  }

  json listed(const std::string& with_token) {
    auto list = node.call("GET", "/v1/schedules", with_token);
    REQUIRE_MESSAGE(list.status == 200, list.raw);
    return list.body["schedules"];
  }

  json work_items() {
    auto items = node.call("GET", "/v1/work/items", token);
    REQUIRE_MESSAGE(items.status == 200, items.raw);
    return items.body["items"];
  }

  /// A lease of the next ready item, waiting up to 20 s for one.
  json lease() {
    auto leased = node.call("POST", "/v1/work/lease", token, R"({"wait_ms":20000})");
    REQUIRE_MESSAGE(leased.status == 200, leased.raw);
    return leased.body["lease"];
  }

  /// Every stored event of the tenant (the node stops; start() again).
  std::vector<event_record> stored_events() {
    node.stop();
    auto db = test::open_node_store(dir);
    auto events = db->read_tenant(tenant_id, 10'000);
    REQUIRE(events);
    return std::move(*events);
  }

  /// With the node stopped: rewrites schedule `id` as if it had been made at
  /// `made_s` with `timing` (the tool's argument), optionally paused.
  void backdate(const std::string& id, const json& timing, int64_t made_s, bool paused = false) {
    auto db = test::open_node_store(dir);
    auto entries = db->scan_state(work::schedule_prefix(tenant_id) + id, 1);
    REQUIRE(entries);
    REQUIRE(entries->size() == 1);
    auto loaded = schedules::from_json(json::parse(entries->front().second), system_time_zones());
    REQUIRE_MESSAGE(loaded, entries->front().second);
    auto rec = loaded->second;
    auto parsed =
      parse_timing(timing, rec.timing.zone, made_s, schedule_bounds{}, system_time_zones());
    REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message()));
    rec.timing = *parsed;
    rec.timing_json = timing_to_json(rec.timing).dump();
    rec.created_us = made_s * 1'000'000;
    rec.next_due_s = next_occurrence(rec.timing, *rec.zone, made_s);
    if (paused) {
      rec.st = schedules::state::paused;
      rec.next_due_s.reset();
    }
    append_request req{tenant_id,
                       work::stream_of(rec.chat_id),
                       {schedules::saved_event(id, rec)},
                       append_request::any_seq};
    REQUIRE(db->append(req, wall_clock_us()));
  }
};

std::size_t count_events(const std::vector<event_record>& events, std::string_view type,
                         std::string_view holding = {}) {
  std::size_t out = 0;
  for (const auto& ev : events)
    if (ev.type == type && ev.data.find(holding) != std::string::npos)
      ++out;
  return out;
}

/// The reason a run's recorded activity gives for its only call.
std::string activity_reason(const std::vector<event_record>& events, const std::string& run_id) {
  for (const auto& ev : events)
    if (ev.stream == "run." + run_id && ev.type == "tools.round")
      return json::parse(ev.data)["calls"][0]["reason"].get<std::string>();
  return "";
}

} // namespace

TEST_CASE("create_agent_schedule stores a schedule in the run's own chat and the owner lists it") {
  schedule_fixture f;
  auto [run, chat] = f.chat_run();
  auto due = now_s() + hour;
  auto made = f.result_of(run, tool, once_at(due));
  auto id = made["schedule_id"].get<std::string>();
  CHECK(made["task_name"] == "Call mum");
  CHECK(made["next_due_utc"] == utc_text(due) + "Z");
  CHECK(made["next_due_local"] == utc_text(due) + "+00:00");
  CHECK(made["note"].get<std::string>().find("this chat") != std::string::npos);

  auto listed = f.listed(f.token);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["schedule_id"] == id);
  CHECK(listed[0]["agent_id"] == f.agent_id);
  CHECK(listed[0]["chat_id"] == chat);
  CHECK(listed[0]["created_by_run"] == run);
  CHECK(listed[0]["instruction"] == "Remind me to call mum.");
  CHECK(listed[0]["state"] == "active");
  CHECK(listed[0]["next_due_s"] == due);
  CHECK(listed[0]["last_fired_s"].is_null());

  // One event, in the chat's stream.
  auto events = f.stored_events();
  REQUIRE(count_events(events, "schedule.saved") == 1);
  for (const auto& ev : events) {
    if (ev.type != "schedule.saved")
      continue;
    CHECK(ev.stream == "chat." + chat);
    auto saved = json::parse(ev.data);
    CHECK(saved["schedule_id"] == id);
    CHECK(saved["agent_id"] == f.agent_id);
    CHECK(saved["chat_id"] == chat);
    CHECK(saved["created_by_run"] == run);
    CHECK(saved["task_name"] == "Call mum");
    CHECK(saved["timezone"] == "UTC");
  }
}

TEST_CASE("each bad schedule is refused with its own code, audited, and nothing is stored") {
  schedule_fixture f;
  auto now = now_s();
  auto bad_zone = once_at(now + hour);
  bad_zone["timezone"] = "Mars/Olympus_Mons";
  auto too_often = hourly();
  too_often["timing"]["every_seconds"] = 0;
  auto over_ten_years = hourly();
  over_ten_years["timing"]["every_seconds"] = 316'000'000;
  auto another_chat = once_at(now + hour);
  another_chat["chat_id"] = "c_0123456789abcdef";
  struct bad_input {
    const char* what;
    json args;
    const char* status;
    const char* code;
  };
  std::vector<bad_input> cases{
    {"a one-shot in the past", once_at(now - 60), "tool_error", "in_past"},
    {"a one-shot eleven years ahead", once_at(now + 11 * 366 * 86'400), "tool_error",
     "too_far_ahead"},
    {"an unknown timezone", bad_zone, "tool_error", "unknown_timezone"},
    {"an interval under the minimum", too_often, "invalid_arguments", "invalid_arguments"},
    {"an interval over ten years", over_ten_years, "invalid_arguments", "invalid_arguments"},
    {"a chat_id argument", another_chat, "invalid_arguments", "invalid_arguments"},
  };
  std::vector<std::pair<std::string, std::string>> runs; // run id, code
  for (const auto& c : cases) {
    CAPTURE(c.what);
    auto run = f.chat_run().first;
    auto out = f.call(run, tool, c.args);
    CHECK(out["status"] == c.status);
    if (std::string_view{c.status} == "tool_error")
      CHECK(out["output"]["result"]["structuredContent"]["error"] == c.code);
    runs.emplace_back(run, c.code);
  }
  CHECK(f.listed(f.token).empty());
  auto events = f.stored_events();
  CHECK(count_events(events, "schedule.saved") == 0);
  for (const auto& [run, code] : runs) {
    CAPTURE(run);
    CHECK(activity_reason(events, run) == code);
  }
}

TEST_CASE("an interval under the node's minimum is refused as interval_too_short") {
  test::tool_session f; // work.min_schedule_interval_s: 60
  f.grant(tool);
  auto run = f.start_run();
  auto args = hourly();
  args["timing"]["every_seconds"] = 59;
  auto out = f.call(run, tool, args);
  CHECK(out["status"] == "tool_error");
  CHECK(out["output"]["result"]["structuredContent"]["error"] == "interval_too_short");
  auto list = f.node.call("GET", "/v1/schedules", f.token);
  CHECK(list.body["schedules"].empty());
}

TEST_CASE("the owner pauses, resumes and deletes a schedule over HTTP") {
  schedule_fixture f;
  auto id = f.schedule(hourly());
  auto paused = f.node.call("POST", "/v1/schedules/" + id + "/pause", f.token);
  REQUIRE_MESSAGE(paused.status == 200, paused.raw);
  CHECK(paused.body["state"] == "paused");
  CHECK(paused.body["next_due_s"].is_null());
  CHECK(f.listed(f.token)[0]["state"] == "paused");
  auto resumed = f.node.call("POST", "/v1/schedules/" + id + "/resume", f.token);
  REQUIRE_MESSAGE(resumed.status == 200, resumed.raw);
  CHECK(resumed.body["state"] == "active");
  CHECK(resumed.body["next_due_s"].get<int64_t>() > now_s() - 5);
  auto deleted = f.node.call("DELETE", "/v1/schedules/" + id, f.token);
  REQUIRE_MESSAGE(deleted.status == 200, deleted.raw);
  CHECK(deleted.body["deleted"] == id);
  CHECK(f.listed(f.token).empty());
  CHECK(f.node.call("POST", "/v1/schedules/" + id + "/pause", f.token).status == 404);
  CHECK(f.node.call("DELETE", "/v1/schedules/" + id, f.token).status == 404);
  auto events = f.stored_events();
  CHECK(count_events(events, "schedule.saved", id) == 3); // made, paused, resumed
  CHECK(count_events(events, "schedule.deleted", id) == 1);
}

TEST_CASE("another tenant's token cannot see, pause, resume or delete a schedule") {
  schedule_fixture f;
  auto id = f.schedule(hourly());
  auto [other_tenant, other_token] = f.node.make_tenant("Other");
  CHECK(f.listed(other_token).empty());
  CHECK(f.node.call("POST", "/v1/schedules/" + id + "/pause", other_token).status == 404);
  CHECK(f.node.call("POST", "/v1/schedules/" + id + "/resume", other_token).status == 404);
  CHECK(f.node.call("DELETE", "/v1/schedules/" + id, other_token).status == 404);
  // The operator's route for the other tenant does not reach it either.
  CHECK(f.node
          .call("POST", "/v1/admin/tenants/" + other_tenant + "/schedules/" + id + "/pause",
                admin_token)
          .status
        == 404);
  auto mine = f.listed(f.token);
  REQUIRE(mine.size() == 1);
  CHECK(mine[0]["state"] == "active");
}

TEST_CASE("a due schedule's turn is queued in its chat and leased to an agent host") {
  schedule_fixture f;
  auto [run, chat] = f.chat_run();
  auto due = now_s() + 3;
  auto id = f.result_of(run, tool, once_at(due))["schedule_id"].get<std::string>();
  auto lease = f.lease();
  REQUIRE_FALSE(lease.is_null());
  CHECK(lease["kind"] == "scheduled_turn");
  CHECK(lease["schedule_id"] == id);
  CHECK(lease["occurrence_s"] == due);
  CHECK(lease["item_id"] == work::scheduled_item_id(id, due));
  CHECK(lease["run_id"] == work::run_id_of(lease["item_id"].get<std::string>()));
  CHECK(lease["chat_id"] == chat);
  CHECK(lease["agent_id"] == f.agent_id);
  CHECK(lease["text"] == "Remind me to call mum.");
  // A one-shot is gone with its turn.
  CHECK(f.listed(f.token).empty());
}

TEST_CASE("after restarts a one-shot missed while the node was down fires exactly once") {
  schedule_fixture f;
  auto id = f.schedule(once_at(now_s() + hour));
  f.node.stop();
  auto now = now_s();
  f.backdate(id, {{"kind", "once"}, {"at", utc_text(now - 2 * hour)}}, now - 3 * hour);
  f.node.start();
  auto lease = f.lease();
  REQUIRE_FALSE(lease.is_null());
  CHECK(lease["schedule_id"] == id);
  CHECK(lease["occurrence_s"] == now - 2 * hour);
  // Restarted with the turn queued: it is offered again, not fired again.
  f.node.stop();
  f.node.start();
  auto again = f.lease();
  REQUIRE_FALSE(again.is_null());
  CHECK(again["item_id"] == lease["item_id"]);
  auto item = again["item_id"].get<std::string>();
  auto begun = f.node.call("POST", "/v1/work/items/" + item + "/begin", f.token,
                           json{{"lease_id", again["lease_id"]}}.dump());
  REQUIRE_MESSAGE(begun.status == 200, begun.raw);
  auto done =
    f.node.call("POST", "/v1/work/items/" + item + "/complete", f.token,
                json{{"lease_id", again["lease_id"]}, {"answer", "Call mum now."}}.dump());
  REQUIRE_MESSAGE(done.status == 200, done.raw);
  // Restarted with the turn answered: nothing is left to fire.
  f.node.stop();
  f.node.start();
  CHECK(f.work_items().empty());
  CHECK(f.listed(f.token).empty());
  auto events = f.stored_events();
  CHECK(count_events(events, "work.enqueued", id) == 1);
  CHECK(count_events(events, "turn.reported", item) == 1);
}

TEST_CASE("after restarts an interval that missed several occurrences fires exactly once") {
  schedule_fixture f;
  auto id = f.schedule(hourly());
  f.node.stop();
  // Made six hours ago, first due five and a half hours ago: five missed
  // occurrences, the latest half an hour ago, the next in half an hour.
  auto now = now_s();
  auto first = now - 5 * hour - 1800;
  f.backdate(id, {{"kind", "interval"}, {"every_seconds", hour}, {"starts_at", utc_text(first)}},
             now - 6 * hour);
  f.node.start();
  auto lease = f.lease();
  REQUIRE_FALSE(lease.is_null());
  CHECK(lease["occurrence_s"] == first + 5 * hour);
  auto listed = f.listed(f.token);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["last_fired_s"] == first + 5 * hour);
  CHECK(listed[0]["next_due_s"] == first + 6 * hour);
  f.node.stop();
  f.node.start();
  auto items = f.work_items();
  REQUIRE(items.size() == 1);
  CHECK(items[0]["item_id"] == lease["item_id"]);
  auto events = f.stored_events();
  CHECK(count_events(events, "work.enqueued", id) == 1);
}

TEST_CASE("a paused schedule fires nothing after a restart, and resuming it fires nothing missed") {
  schedule_fixture f;
  auto paused_id = f.schedule(hourly());
  auto control_id = f.schedule(once_at(now_s() + hour));
  f.node.stop();
  auto now = now_s();
  auto first = now - 5 * hour - 1800;
  f.backdate(paused_id,
             {{"kind", "interval"}, {"every_seconds", hour}, {"starts_at", utc_text(first)}},
             now - 6 * hour, true);
  f.backdate(control_id, {{"kind", "once"}, {"at", utc_text(now - 2 * hour)}}, now - 3 * hour);
  f.node.start();
  // The control, missed like the paused one, fires in the same pass.
  auto lease = f.lease();
  REQUIRE_FALSE(lease.is_null());
  CHECK(lease["schedule_id"] == control_id);
  auto resumed = f.node.call("POST", "/v1/schedules/" + paused_id + "/resume", f.token);
  REQUIRE_MESSAGE(resumed.status == 200, resumed.raw);
  CHECK(resumed.body["next_due_s"] == first + 6 * hour);
  CHECK(resumed.body["last_fired_s"].is_null());
  auto items = f.work_items();
  REQUIRE(items.size() == 1);
  CHECK(items[0]["schedule_id"] == control_id);
  // And a restart after the resume does not fire the pause's occurrences.
  f.node.stop();
  f.node.start();
  CHECK(f.work_items().size() == 1);
  auto events = f.stored_events();
  CHECK(count_events(events, "work.enqueued", paused_id) == 0);
}
