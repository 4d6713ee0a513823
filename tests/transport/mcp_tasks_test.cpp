// transport/mcp_tasks: the task table's state machine and bounds, and the
// task worker pool, without HTTP.
#include "transport/mcp_tasks.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

using nlohmann::json;
using namespace voxos;

namespace {

mcp_task_table::limits roomy() {
  return {16, 8, std::chrono::hours(1), std::chrono::milliseconds(500)};
}

std::shared_ptr<const mcp_task_job> job_of(const std::string& principal) {
  auto job = std::make_shared<mcp_task_job>();
  job->method = "tools/call";
  job->caller = std::make_shared<const mcp_caller>(mcp_caller{principal, {}});
  job->work = [](mcp_call_context&) -> mcp_outcome { return json::object(); };
  return job;
}

/// A new task of `principal`: its id and first run.
std::pair<std::string, mcp_task_run> create(mcp_task_table& table, const std::string& principal) {
  mcp_task_run run;
  auto created = table.create(job_of(principal), "", run);
  REQUIRE_MESSAGE(created.is_ok(), created.error().message());
  return {(*created)["taskId"].get<std::string>(), run};
}

json elicit(const std::string& message) {
  return {{"method", "elicitation/create"}, {"params", {{"message", message}}}};
}

json accepted(const std::string& value) {
  return {{"action", "accept"}, {"content", {{"value", value}}}};
}

} // namespace

TEST_CASE("a new task is working, carries its times, TTL and poll interval, and only its "
          "creator finds it") {
  mcp_task_table table{roomy()};
  mcp_task_run run;
  auto created = table.create(job_of("alice"), "starting", run);
  REQUIRE(created.is_ok());
  const auto& seed = *created;
  auto id = seed["taskId"].get<std::string>();
  CHECK(id.size() == 22); // 128 bits, base64url
  CHECK(seed["status"] == "working");
  CHECK(seed["statusMessage"] == "starting");
  CHECK(seed["ttlMs"] == 3600000);
  CHECK(seed["pollIntervalMs"] == 500);
  CHECK(seed["createdAt"].get<std::string>().back() == 'Z');
  CHECK_FALSE(seed.contains("result"));
  CHECK(run.task_id == id);
  CHECK_FALSE(*run.cancelled);

  auto found = table.get(id, "alice");
  REQUIRE(found);
  CHECK((*found)["taskId"] == id);
  CHECK_FALSE(table.get(id, "mallory"));
  CHECK_FALSE(table.get("no-such-task", "alice"));
  CHECK_FALSE(table.get("", "alice"));
}

TEST_CASE("tasks are bounded in all and per principal, and the bound leaves others room") {
  mcp_task_table table{{3, 2, std::chrono::hours(1), std::chrono::seconds(1)}};
  create(table, "alice");
  create(table, "alice");
  mcp_task_run run;
  auto third = table.create(job_of("alice"), "", run);
  REQUIRE_FALSE(third.is_ok());
  CHECK(third.error().code() == errc::unavailable);
  CHECK(third.error().message() == "too many tasks of this caller; wait for some to expire");
  create(table, "bob");
  auto past_all = table.create(job_of("carol"), "", run);
  REQUIRE_FALSE(past_all.is_ok());
  CHECK(past_all.error().message() == "too many tasks; try again later");
  CHECK(table.size() == 3);
}

TEST_CASE("a task whose TTL passed is discarded: unknown from then on, its work cancelled") {
  mcp_task_table table{{4, 4, std::chrono::milliseconds(0), std::chrono::seconds(1)}};
  auto [id, run] = create(table, "alice");
  CHECK_FALSE(table.get(id, "alice"));
  CHECK(*run.cancelled);
  CHECK(table.size() == 0);
  CHECK_FALSE(table.cancel(id, "alice"));
}

TEST_CASE("a completed task inlines its result, a failed one its error and no result") {
  mcp_task_table table{roomy()};
  auto [done, run_done] = create(table, "alice");
  table.complete(done, {{"content", json::array()}, {"isError", true}});
  auto completed = *table.get(done, "alice");
  CHECK(completed["status"] == "completed");
  CHECK(completed["result"]["isError"] == true);
  CHECK_FALSE(completed.contains("error"));

  auto [broke, run_broke] = create(table, "alice");
  table.fail(broke, -32603, "the job broke", nullptr);
  auto failed = *table.get(broke, "alice");
  CHECK(failed["status"] == "failed");
  CHECK(failed["error"] == json{{"code", -32603}, {"message", "the job broke"}});
  CHECK(failed["statusMessage"] == "the job broke");
  CHECK_FALSE(failed.contains("result"));
  // Terminal: a late outcome changes nothing.
  table.complete(broke, json::object());
  CHECK((*table.get(broke, "alice"))["status"] == "failed");
}

TEST_CASE("input requests get keys unique over the task's life, a partial answer keeps the rest "
          "outstanding and the last one resumes the work with answers by its own keys") {
  mcp_task_table table{roomy()};
  auto [id, run] = create(table, "alice");
  table.ask(id, {{"name", elicit("name?")}, {"age", elicit("age?")}}, json{{"round", 1}}, 1);
  auto asked = *table.get(id, "alice");
  CHECK(asked["status"] == "input_required");
  CHECK(asked["inputRequests"] == json{{"name", elicit("name?")}, {"age", elicit("age?")}});

  auto partial = table.update(id, "alice", {{"name", accepted("Ada")}});
  CHECK(partial.known);
  CHECK_FALSE(partial.resumed);
  auto waiting = *table.get(id, "alice");
  CHECK(waiting["status"] == "input_required");
  CHECK(waiting["inputRequests"] == json{{"age", elicit("age?")}});

  auto last = table.update(id, "alice", {{"age", accepted("36")}});
  REQUIRE(last.resumed);
  CHECK(last.resumed->input_responses == json{{"name", accepted("Ada")}, {"age", accepted("36")}});
  CHECK(last.resumed->state == json{{"round", 1}});
  CHECK(last.resumed->round == 1);
  CHECK((*table.get(id, "alice"))["status"] == "working");

  // The work asks again under a key it used before: the client sees a new one.
  table.ask(id, {{"name", elicit("name again?")}}, std::nullopt, 2);
  auto again = *table.get(id, "alice");
  CHECK(again["inputRequests"] == json{{"name-2", elicit("name again?")}});
  auto answered = table.update(id, "alice", {{"name-2", accepted("Grace")}});
  REQUIRE(answered.resumed);
  CHECK(answered.resumed->input_responses == json{{"name", accepted("Grace")}});
}

TEST_CASE("tasks/update ignores keys not outstanding and refuses a non-object answer to an "
          "outstanding one, storing nothing") {
  mcp_task_table table{roomy()};
  auto [id, run] = create(table, "alice");
  // Working: nothing is outstanding yet.
  auto early = table.update(id, "alice", {{"confirm", accepted("yes")}});
  CHECK(early.known);
  CHECK_FALSE(early.resumed);
  table.ask(id, {{"confirm", elicit("sure?")}, {"other", elicit("and?")}}, std::nullopt, 1);

  auto unknown_keys = table.update(id, "alice", {{"never-issued", accepted("x")}});
  CHECK(unknown_keys.known);
  CHECK_FALSE(unknown_keys.bad_key);
  CHECK((*table.get(id, "alice"))["inputRequests"].size() == 2);

  auto bad = table.update(id, "alice", {{"other", accepted("x")}, {"confirm", 12345}});
  REQUIRE(bad.bad_key);
  CHECK(*bad.bad_key == "confirm");
  // Nothing was taken, not even the good answer beside the bad one.
  CHECK((*table.get(id, "alice"))["inputRequests"].size() == 2);

  auto foreign = table.update(id, "mallory", {{"confirm", accepted("x")}});
  CHECK_FALSE(foreign.known);
  CHECK((*table.get(id, "alice"))["inputRequests"].size() == 2);
}

TEST_CASE("cancelling a live task cancels it and its work, cancelling again or a terminal task "
          "leaves it as it is, another principal cannot") {
  mcp_task_table table{roomy()};
  auto [id, run] = create(table, "alice");
  CHECK_FALSE(table.cancel(id, "mallory"));
  CHECK((*table.get(id, "alice"))["status"] == "working");
  CHECK_FALSE(*run.cancelled);

  CHECK(table.cancel(id, "alice"));
  CHECK(*run.cancelled);
  CHECK((*table.get(id, "alice"))["status"] == "cancelled");
  CHECK_FALSE(table.runnable(id));
  CHECK(table.cancel(id, "alice"));
  CHECK((*table.get(id, "alice"))["status"] == "cancelled");
  table.complete(id, json::object()); // the work ending late changes nothing
  CHECK((*table.get(id, "alice"))["status"] == "cancelled");

  auto [done, done_run] = create(table, "alice");
  table.complete(done, {{"content", json::array()}});
  CHECK(table.cancel(done, "alice"));
  CHECK((*table.get(done, "alice"))["status"] == "completed");
  CHECK_FALSE(*done_run.cancelled);
}

TEST_CASE("the change hook hears every status change with the task as tasks/get shows it") {
  mcp_task_table table{roomy()};
  std::vector<std::string> heard;
  table.on_change([&heard](const std::string& principal, const std::string&, const json& task) {
    heard.push_back(principal + ":" + task["status"].get<std::string>());
  });
  auto [id, run] = create(table, "alice");
  table.ask(id, {{"confirm", elicit("sure?")}}, std::nullopt, 1);
  table.update(id, "alice", {{"confirm", accepted("yes")}});
  table.complete(id, {{"content", json::array()}});
  CHECK(heard
        == std::vector<std::string>{"alice:input_required", "alice:working", "alice:completed"});
}

TEST_CASE("the pool runs posted jobs, stop waits for the running one, drops the queued ones and "
          "refuses new ones") {
  mcp_task_pool pool{1};
  std::promise<void> started;
  std::promise<void> release;
  auto released = release.get_future().share();
  std::atomic<bool> second_ran{false};
  REQUIRE(pool.post([&started, released] {
    started.set_value();
    released.wait();
  }));
  REQUIRE(pool.post([&second_ran] { second_ran = true; }));
  started.get_future().wait();
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    pool.stop();
    stopped = true;
  });
  // Once posting fails the pool has stopped taking jobs; the first still runs.
  while (pool.post([] {}))
    std::this_thread::yield();
  CHECK_FALSE(stopped);
  release.set_value();
  stopper.join();
  CHECK(stopped);
  CHECK_FALSE(second_ran);
}
