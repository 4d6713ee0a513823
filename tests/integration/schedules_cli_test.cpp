// `voxosctl schedules` as a process against an in-process node: the
// operator lists a tenant's schedules, pauses, resumes and deletes one over
// the admin routes, and an unknown id exits non-zero with not_found.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/clock.hpp"
#include "config/time_zone.hpp"
#include "support/child_process.hpp"
#include "support/tool_session.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// `voxosctl --url URL ARGS...` with the admin token in its environment.
test::finished_run voxosctl(test::tool_session& s, std::vector<std::string> args) {
  test::temp_dir cwd;
  std::vector<std::string> argv{VOXOSCTL_PATH, "--url",
                                "http://127.0.0.1:" + std::to_string(s.node.get().http_port())};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_to_end(std::move(argv), cwd.str(), {"VOXOS_ADMIN_TOKEN=" + test::admin_token});
}

} // namespace

TEST_CASE("voxosctl schedules lists, pauses, resumes and deletes a tenant's schedule") {
  test::tool_session s;
  s.grant("create_agent_schedule");
  auto run = s.start_run();
  auto made = s.result_of(
    run, "create_agent_schedule",
    {{"task_name", "Check prices"},
     {"instruction", "Check the flight prices."},
     {"timing", {{"kind", "once"}, {"at", iso_date_time(wall_clock_us() / 1'000'000 + 86'400)}}},
     {"timezone", "UTC"}});
  auto id = made["schedule_id"].get<std::string>();

  auto listed = voxosctl(s, {"schedules", "list", s.tenant_id});
  REQUIRE_MESSAGE(listed.code == 0, listed.err);
  auto doc = json::parse(listed.out);
  REQUIRE(doc["schedules"].size() == 1);
  CHECK(doc["schedules"][0]["schedule_id"] == id);

  auto paused = voxosctl(s, {"schedules", "pause", s.tenant_id, id});
  REQUIRE_MESSAGE(paused.code == 0, paused.err);
  CHECK(json::parse(paused.out)["state"] == "paused");
  auto resumed = voxosctl(s, {"schedules", "resume", s.tenant_id, id});
  REQUIRE_MESSAGE(resumed.code == 0, resumed.err);
  CHECK(json::parse(resumed.out)["state"] == "active");
  auto deleted = voxosctl(s, {"schedules", "delete", s.tenant_id, id});
  REQUIRE_MESSAGE(deleted.code == 0, deleted.err);
  CHECK(json::parse(deleted.out)["deleted"] == id);

  auto again = voxosctl(s, {"schedules", "delete", s.tenant_id, id});
  CHECK(again.code != 0);
  CHECK(again.err.find("not_found") != std::string::npos);
  CHECK(s.node.call("GET", "/v1/schedules", s.token).body["schedules"].empty());
}
