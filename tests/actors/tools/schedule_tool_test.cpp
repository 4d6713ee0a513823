// create_agent_schedule at the tool desk (actors/tools/tool_desk.hpp) over a
// real store, queue and schedule keeper: only an owner's text chat makes a
// schedule (the policy already keeps the tool out of every other channel;
// the desk is the second lock), with the agent, run and chat of the call's
// context; a desk without a keeper cannot run it.
#include <doctest/doctest.h>

#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/schedule/schedule_keeper.hpp"
#include "actors/tools/tool_desk.hpp"
#include "actors/work/work_queue.hpp"
#include "config/clock.hpp"
#include "config/time_zone.hpp"
#include "messages/error.hpp"
#include "support/actor_store.hpp"

using namespace voxos;
using json = nlohmann::json;

namespace {

constexpr auto wait = std::chrono::seconds(20);

struct desk_fixture : test::actor_store {
  std::unique_ptr<caf::scoped_actor> owner = std::make_unique<caf::scoped_actor>(*sys);
  work_queue_actor queue = spawn_work_queue(owner->ptr(), "t_1", store, {});
  schedule_keeper_actor keeper = spawn_schedule_keeper(owner->ptr(), "t_1", store, queue, {});
  tool_desk_actor desk;

  explicit desk_fixture(bool with_keeper = true) {
    tool_desk_options opts;
    if (with_keeper)
      opts.schedules = keeper;
    desk = spawn_tool_desk(owner->ptr(), "t_1", store, queue, nullptr, opts);
  }

  ~desk_fixture() {
    for (const auto& handle :
         {caf::actor_cast<caf::actor>(desk), caf::actor_cast<caf::actor>(keeper),
          caf::actor_cast<caf::actor>(queue)})
      caf::anon_send_exit(handle, caf::exit_reason::kill);
    owner.reset();
  }

  /// The CallToolResult's structured content of one call in `chan`.
  json call(channel chan) {
    tool_context ctx;
    ctx.tenant_id = "t_1";
    ctx.agent_id = "a_1";
    ctx.run_id = "r_1";
    ctx.chat_id = "c_1";
    ctx.chan = chan;
    json params{
      {"name", "create_agent_schedule"},
      {"arguments",
       {{"task_name", "Call mum"},
        {"instruction", "Remind me to call mum."},
        {"timing", {{"kind", "once"}, {"at", iso_date_time(wall_clock_us() / 1'000'000 + 86'400)}}},
        {"timezone", "UTC"}}}};
    json out;
    (*owner)
      ->request(desk, wait, tool_atom::value, ctx, std::string{}, params.dump())
      .receive([&](std::string& result) { out = json::parse(result)["structuredContent"]; },
               [](caf::error& err) { FAIL(message_of(err)); });
    return out;
  }

  json schedules() {
    json out;
    (*owner)
      ->request(keeper, wait, schedule_atom::value, std::string{"list"}, std::string{"{}"})
      .receive([&](std::string& text) { out = json::parse(text)["schedules"]; },
               [](caf::error& err) { FAIL(message_of(err)); });
    return out;
  }
};

} // namespace

TEST_CASE("the desk makes a schedule only in an owner's text chat, with the call's context") {
  desk_fixture f;
  for (auto chan :
       {channel::in_app_voice, channel::phone_call, channel::sms, channel::whatsapp,
        channel::scheduled_run, channel::webhook, channel::manual_worker_run, channel::subagent}) {
    CAPTURE(std::string{to_string(chan)});
    CHECK(f.call(chan)["error"] == "text_chat_only");
  }
  CHECK(f.schedules().empty());
  auto made = f.call(channel::owner_text_chat);
  REQUIRE_MESSAGE(made.contains("schedule_id"), made.dump());
  auto listed = f.schedules();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["schedule_id"] == made["schedule_id"]);
  CHECK(listed[0]["agent_id"] == "a_1");
  CHECK(listed[0]["chat_id"] == "c_1");
  CHECK(listed[0]["created_by_run"] == "r_1");
}

TEST_CASE("a desk without a schedule keeper cannot run create_agent_schedule") {
  desk_fixture f{false};
  CHECK(f.call(channel::owner_text_chat)["error"] == "not_executable");
  CHECK(f.schedules().empty());
}
