// `voxosctl skills` and the Makefile's example-skills targets as processes:
// the shipped catalog listed, one install request per load, one line per
// skill and a summary, and the exit codes.
//
// The node side is a stand-in on a loopback port: the node's route for
// POST /v1/admin/tenants/{id}/skills/examples is not served by this tree's
// HTTP API yet, so the stand-in answers as that route is specified to, with
// the same request parser and plan (actors/tenant/example_install.hpp) over
// a fixed tenant. It counts the requests it gets and keeps the last body.
#include <doctest/doctest.h>

#include <atomic>
#include <mutex>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/tenant/example_install.hpp"
#include "tests/actors/tenant/policy_fixtures.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/loopback_http.hpp"
#include "tests/support/temp_dir.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

const std::string source_dir = VOXOS_SOURCE_DIR;
const std::string catalog_dir = source_dir + "/examples/skills";
const std::string token = "vxa_cli-test-admin-token";

/// Answers install requests for tenant t_a as the node's route is specified
/// to: the GitHub server is tested and allows the triage tools, the digest's
/// get_me is not allowed, and "github-pull-request-digest" is not there; the
/// Calendar server was never tested; there is no Drive or OpenBnB server.
struct stand_in_node {
  test::loopback_server http;
  std::atomic<int> requests{0};
  std::mutex mutex;
  std::string last_body;
  std::set<std::string> existing_slugs;

  stand_in_node() {
    auto t = test::base_tenant();
    auto gh = test::server_from_preset("s_gh", "github");
    gh.allowed_tools = {"list_issues", "search_code", "get_file_contents", "list_pull_requests",
                        "get_commit"};
    t.servers.emplace("s_gh", gh);
    auto cal = test::server_from_preset("s_cal", "google_workspace");
    cal.variant = "calendar";
    cal.connected = false;
    cal.cached_tools = {};
    t.servers.emplace("s_cal", cal);
    http.svr.Post(
      R"(/v1/admin/tenants/([a-z0-9_-]{1,64})/skills/examples)",
      [this, t](const httplib::Request& req, httplib::Response& res) {
        ++requests;
        std::lock_guard<std::mutex> guard{mutex};
        last_body = req.body;
        if (req.get_header_value("Authorization") != "Bearer " + token || req.matches[1] != "t_a") {
          res.status = req.matches[1] != "t_a" ? 404 : 401;
          res.set_content(R"({"error":{"code":"not_found","message":"no such tenant"}})",
                          "application/json");
          return;
        }
        auto parsed = parse_install_request(req.body);
        if (!parsed) {
          res.status = 400;
          res.set_content(json{{"error",
                                {{"code", to_string(parsed.error().code())},
                                 {"message", parsed.error().message()}}}}
                            .dump(),
                          "application/json");
          return;
        }
        auto verdicts = plan_example_install(t, parsed->skills, existing_slugs, parsed->dry_run);
        for (const auto& v : verdicts)
          if (v.outcome == example_outcome::installed)
            existing_slugs.insert(v.slug);
        res.set_content(install_response_json(verdicts), "application/json");
      });
    http.start();
  }

  std::string url() const { return http.url(""); }
};

struct run_result {
  int code = 0;
  std::string out;
  std::string err;
};

run_result run(std::vector<std::string> argv, const std::string& cwd,
               std::vector<std::string> env = {}) {
  test::temp_dir logs;
  test::child_process child{std::move(argv), cwd, (logs.path() / "stderr").string(),
                            std::move(env)};
  REQUIRE(child.started());
  run_result out;
  out.out = child.read_all();
  out.code = child.wait();
  out.err = child.error_output();
  return out;
}

run_result voxosctl(const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<std::string> argv{VOXOSCTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, cwd, {"VOXOS_ADMIN_TOKEN=" + token});
}

/// `voxosctl --url URL skills load --user-id USER --mcp KEY --catalog
/// <shipped> [extra...]` in `cwd`.
run_result load(const std::string& url, const std::string& user_id, const std::string& mcp,
                const std::string& cwd, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"--url", url,     "skills", "load",      "--user-id",
                                user_id, "--mcp", mcp,      "--catalog", catalog_dir};
  args.insert(args.end(), extra.begin(), extra.end());
  return voxosctl(args, cwd);
}

bool holds(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("voxosctl skills list prints every shipped example skill with what it needs") {
  test::temp_dir cwd;
  auto listed = voxosctl({"skills", "list", "--catalog", catalog_dir}, cwd.str());
  CHECK_MESSAGE(listed.code == 0, listed.err);
  for (const char* slug :
       {"openbnb-accommodation-shortlist", "github-issue-triage", "github-pull-request-digest",
        "google-calendar-week-agenda", "google-drive-document-brief"})
    CHECK_MESSAGE(holds(listed.out, slug), slug);
  CHECK(holds(listed.out, "needs openbnb: airbnb_search, airbnb_listing, maps_distance_matrix, "
                          "maps_search_places, maps_place_details"));
  CHECK(holds(listed.out, "needs google_workspace/calendar: list_calendars"));
  CHECK(holds(listed.out, "5 example skills for 3 MCPs (openbnb, github, google-workspace)"));

  // Without --catalog: examples/skills under the working directory.
  auto here = voxosctl({"skills", "list"}, source_dir);
  CHECK(here.code == 0);
  CHECK(here.out == listed.out);
  auto elsewhere = voxosctl({"skills", "list"}, cwd.str());
  CHECK(elsewhere.code == 1);
  CHECK(holds(elsewhere.err, "catalog.json: not a readable regular file"));
}

TEST_CASE("voxosctl skills load sends one request and prints one line per skill and a summary") {
  stand_in_node node;
  test::temp_dir cwd;
  // A dry run: nothing written, a blocked skill still exits 0.
  auto dry = load(node.url(), "t_a", "github", cwd.str(), {"--dry-run"});
  CHECK_MESSAGE(dry.code == 0, dry.err);
  CHECK(node.requests == 1);
  auto sent = json::parse(node.last_body);
  CHECK(sent["dry_run"] == true);
  REQUIRE(sent["skills"].size() == 2);
  CHECK(sent["skills"][0]["slug"] == "github-issue-triage");
  CHECK(sent["skills"][0]["body"].get<std::string>().rfind("# Issue triage", 0) == 0);
  CHECK(holds(dry.out, "loading 2 example skills of 'github' into the account of user t_a "
                       "(dry run)"));
  CHECK(std::regex_search(dry.out, std::regex{"would install +github-issue-triage +ready"}));
  CHECK(std::regex_search(dry.out, std::regex{"blocked +github-pull-request-digest +blocked +"
                                              "not_allowed \\(server s_gh\\): a required tool"}));
  CHECK(holds(dry.out, "summary: 1 would be installed (0 with a readiness warning), 0 already "
                       "present, 1 blocked; dry run: nothing was written"));
  CHECK(node.existing_slugs.empty());

  // For real, then again: the installed skill is kept as it is.
  auto real = load(node.url(), "t_a", "github", cwd.str());
  CHECK_MESSAGE(real.code == 0, real.err);
  CHECK(node.requests == 2);
  CHECK(json::parse(node.last_body)["dry_run"] == false);
  CHECK(std::regex_search(real.out, std::regex{"installed +github-issue-triage +ready"}));
  CHECK(holds(real.out, "summary: 1 installed (0 with a readiness warning), 0 already present, "
                        "1 blocked"));
  auto again = load(node.url(), "t_a", "github", cwd.str());
  CHECK(again.code == 0);
  CHECK(node.requests == 3);
  CHECK(std::regex_search(again.out, std::regex{"exists +github-issue-triage +ready +kept as it "
                                                "is: an existing skill is never overwritten"}));

  // Google Workspace: Calendar never tested (a warning), no Drive server.
  auto ws = load(node.url(), "t_a", "google-workspace", cwd.str());
  CHECK_MESSAGE(ws.code == 0, ws.err);
  CHECK(std::regex_search(ws.out, std::regex{"installed +google-calendar-week-agenda +warning +"
                                             "untested \\(server s_cal\\)"}));
  CHECK(std::regex_search(ws.out, std::regex{"blocked +google-drive-document-brief +blocked +"
                                             "missing: no server of the required preset"}));
  CHECK(holds(ws.out, "summary: 1 installed (1 with a readiness warning), 0 already present, "
                      "1 blocked"));
}

TEST_CASE("voxosctl skills load exits non-zero on a request error or an unreachable node") {
  stand_in_node node;
  test::temp_dir cwd;
  auto refused = load(node.url(), "t_unknown", "openbnb", cwd.str());
  CHECK(refused.code == 1);
  CHECK(node.requests == 1);
  CHECK(holds(refused.err, "not_found: no such tenant"));

  auto [fd, port] = test::loopback_listener();
  ::close(fd);
  auto unreachable = load("http://127.0.0.1:" + std::to_string(port), "t_a", "openbnb", cwd.str());
  CHECK(unreachable.code == 1);
  CHECK(holds(unreachable.err, "cannot reach"));
}

TEST_CASE("voxosctl skills load refuses a bad user id or MCP key before sending anything") {
  stand_in_node node;
  test::temp_dir cwd;
  auto bad_user = load(node.url(), "../t_a", "github", cwd.str());
  CHECK(bad_user.code == 1);
  CHECK(holds(bad_user.err, "--user-id: must be a tenant id"));
  auto bad_key = load(node.url(), "t_a", "gitlab", cwd.str());
  CHECK(bad_key.code == 1);
  CHECK(holds(bad_key.err, "the catalog has: openbnb, github, google-workspace"));
  auto no_key =
    voxosctl({"--url", node.url(), "skills", "load", "--user-id", "t_a", "--catalog", catalog_dir},
             cwd.str());
  CHECK(no_key.code == 2);
  CHECK(node.requests == 0);
}

TEST_CASE("make example-skills targets call voxosctl and name a missing USER_ID or MCP") {
  stand_in_node node;
  auto make = [&](std::vector<std::string> vars) {
    std::vector<std::string> argv{"/usr/bin/make",
                                  "--no-print-directory",
                                  "-s",
                                  "-C",
                                  source_dir,
                                  std::string{"VOXOSCTL="} + VOXOSCTL_PATH,
                                  "VOXOSCTL_FLAGS=--url " + node.url()};
    argv.insert(argv.end(), vars.begin(), vars.end());
    return run(argv, source_dir, {"VOXOS_ADMIN_TOKEN=" + token});
  };
  auto listed = make({"example-skills-list"});
  CHECK_MESSAGE(listed.code == 0, listed.err);
  CHECK(holds(listed.out, "5 example skills for 3 MCPs"));

  auto no_user = make({"example-skills-load", "MCP=github"});
  CHECK(no_user.code != 0);
  CHECK(holds(no_user.err, "USER_ID is required"));
  auto no_mcp = make({"example-skills-load", "USER_ID=t_a"});
  CHECK(no_mcp.code != 0);
  CHECK(holds(no_mcp.err, "MCP is required"));
  auto odd_dry_run = make({"example-skills-load", "USER_ID=t_a", "MCP=github", "DRY_RUN=yes"});
  CHECK(odd_dry_run.code != 0);
  CHECK(holds(odd_dry_run.err, "DRY_RUN must be 1, 0 or empty"));
  CHECK(node.requests == 0);

  auto dry = make({"example-skills-load", "USER_ID=t_a", "MCP=github", "DRY_RUN=1"});
  CHECK_MESSAGE(dry.code == 0, dry.err);
  CHECK(node.requests == 1);
  CHECK(json::parse(node.last_body)["dry_run"] == true);
  CHECK(holds(dry.out, "dry run: nothing was written"));
}
