// Task plans (actors/tools/plans.hpp): each rule, named after it.
#include <doctest/doctest.h>

#include "actors/tools/plans.hpp"

using namespace voxos;
using json = nlohmann::json;
namespace pl = voxos::plans;

namespace {

tool_context context(std::string agent = "a_1") {
  tool_context ctx;
  ctx.tenant_id = "t_1";
  ctx.agent_id = std::move(agent);
  ctx.run_id = "r_1";
  ctx.chat_id = "c_1";
  ctx.now_us = 42;
  return ctx;
}

tool_outcome call(pl::state& st, std::string_view tool, json args, tool_context ctx = context(),
                  pl::limits lim = {}) {
  auto out = pl::call(st, ctx, tool, args, lim);
  for (const auto& write : out.writes) {
    CHECK(write.stream == pl::stream);
    for (const auto& ev : write.events)
      REQUIRE(pl::apply(st, ev.type, json::parse(ev.data)).is_ok());
  }
  return out;
}

std::string make_plan(pl::state& st, tool_context ctx = context()) {
  auto out =
    call(st, "create_task_plan", {{"title", "Move flat"}, {"steps", {"Pack", "Book van"}}}, ctx);
  REQUIRE_FALSE(out.is_error);
  return out.result["plan"]["plan_id"].get<std::string>();
}

} // namespace

TEST_CASE("a task plan is a record that schedules nothing and sends nothing") {
  pl::state st;
  auto out = call(st, "create_task_plan", {{"title", "Trip"}, {"steps", {"Flights", "Hotel"}}});
  // Its only effect is one event on the plans stream.
  REQUIRE(out.writes.size() == 1);
  CHECK(out.writes[0].stream == "plans");
  REQUIRE(out.writes[0].events.size() == 1);
  CHECK(out.writes[0].events[0].type == "plan.created");
  CHECK(out.result["note"].get<std::string>().find("nothing is scheduled") != std::string::npos);
  const auto& p = st.plans.begin()->second;
  CHECK(p.run_id == "r_1");
  CHECK(p.chat_id == "c_1");
  CHECK(p.steps.size() == 2);
  CHECK(p.steps[1].status == "pending");
}

TEST_CASE("update_task_step sets one step's status and note") {
  pl::state st;
  auto id = make_plan(st);
  auto out = call(st, "update_task_step",
                  {{"plan_id", id}, {"step_index", 1}, {"status", "done"}, {"note", "Booked"}});
  CHECK(out.result["plan"]["steps"][1]["status"] == "done");
  CHECK(st.plans.at(id).steps[1].note == "Booked");
  CHECK(st.plans.at(id).steps[0].status == "pending");
}

TEST_CASE("a plan step that does not exist is not found and nothing is stored") {
  pl::state st;
  auto id = make_plan(st);
  auto out = call(st, "update_task_step", {{"plan_id", id}, {"step_index", 2}, {"status", "done"}});
  CHECK(out.result["error"] == "not_found");
  CHECK(out.writes.empty());
}

TEST_CASE("another agent's or tenant's plan id is not found and nothing is stored") {
  pl::state st;
  auto id = make_plan(st, context("a_1"));
  for (auto tool : {"update_task_step", "complete_task_plan"}) {
    CAPTURE(tool);
    auto out =
      call(st, tool, {{"plan_id", id}, {"step_index", 0}, {"status", "done"}}, context("a_2"));
    CHECK(out.result["error"] == "not_found");
    CHECK(out.writes.empty());
    auto foreign = call(
      st, tool, {{"plan_id", "plan_of_another_tenant"}, {"step_index", 0}, {"status", "done"}});
    CHECK(foreign.result["error"] == "not_found");
  }
  CHECK(call(st, "list_task_plans", {{"status", "all"}}, context("a_2")).result["plans"].empty());
}

TEST_CASE("complete_task_plan closes a plan once") {
  pl::state st;
  auto id = make_plan(st);
  auto done = call(st, "complete_task_plan", {{"plan_id", id}, {"summary", "Moved"}});
  CHECK(done.result["plan"]["status"] == "completed");
  CHECK(st.plans.at(id).completed);
  auto again = call(st, "complete_task_plan", {{"plan_id", id}});
  CHECK(again.result["error"] == "conflict");
  auto step =
    call(st, "update_task_step", {{"plan_id", id}, {"step_index", 0}, {"status", "done"}});
  CHECK(step.result["error"] == "conflict");
}

TEST_CASE("list_task_plans lists the agent's plans by status, newest first") {
  pl::state st;
  auto ctx = context();
  auto first = make_plan(st, ctx);
  ctx.now_us = 100;
  auto second = make_plan(st, ctx);
  call(st, "complete_task_plan", {{"plan_id", first}});
  auto open = call(st, "list_task_plans", json::object());
  REQUIRE(open.result["plans"].size() == 1);
  CHECK(open.result["plans"][0]["plan_id"] == second);
  auto all = call(st, "list_task_plans", {{"status", "all"}});
  REQUIRE(all.result["plans"].size() == 2);
  CHECK(all.result["plans"][0]["plan_id"] == second);
  CHECK(call(st, "list_task_plans", {{"status", "completed"}}).result["plans"][0]["plan_id"]
        == first);
}

TEST_CASE("open plans per agent are bounded") {
  pl::state st;
  pl::limits lim;
  lim.open_plans_per_agent = 2;
  make_plan(st);
  make_plan(st);
  auto out = call(st, "create_task_plan", {{"title", "x"}, {"steps", {"y"}}}, context(), lim);
  CHECK(out.result["error"] == "too_many_open_plans");
  CHECK(out.writes.empty());
}
