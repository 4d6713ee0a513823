// `voxosctl skills` and the Makefile's example-skills targets as processes,
// against an in-process node: the shipped catalog listed; a load is one
// request to POST /v1/admin/tenants/{id}/skills/examples, printed as one
// line per skill and a summary; the node writes the installable skills into
// the account, bodies as the catalog holds them, never over an existing
// slug, and changes nothing else; and the exit codes.
//
// The account's servers are real records made through the HTTP API. The
// catalog's presets (GitHub, Google Workspace, OpenBnB) sign in with OAuth
// at fixed public URLs that a test cannot reach, so their servers are
// created and never signed in or tested: enabled and trusted, their skills
// install with the needs_auth warning; absent, untrusted or disabled, they
// are blocked (actors/tenant/skill_dependencies.hpp). Requests are counted
// by the node's own counter of answered requests (request_counter).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/file_scan.hpp"
#include "support/loopback_http.hpp"
#include "support/running_node.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

const std::string source_dir = VOXOS_SOURCE_DIR;
const std::string catalog_dir = source_dir + "/examples/skills";

using run_result = test::finished_run;

run_result voxosctl(const std::vector<std::string>& args, const std::string& cwd,
                    const std::string& admin_token = test::admin_token) {
  std::vector<std::string> argv{VOXOSCTL_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return test::run_to_end(argv, cwd, {"VOXOS_ADMIN_TOKEN=" + admin_token});
}

/// `--url URL skills load --user-id USER --mcp KEY --catalog CATALOG`.
std::vector<std::string> load_args(const std::string& url, const std::string& user,
                                   const std::string& mcp,
                                   const std::string& catalog = catalog_dir) {
  return {"--url", url, "skills", "load", "--user-id", user, "--mcp", mcp, "--catalog", catalog};
}

bool holds(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

bool shows(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex{pattern});
}

/// Counts the requests the node answers to other clients than the test's
/// own node.call(): voxosctl's and make's, by the node's own counter
/// (GET /v1/admin/status, metrics.http.requests). The test's calls share one
/// kept-alive connection (running_node::keep_alive), so each is counted
/// before the next is read and they are left out exactly. Another client's
/// request is counted just after its answer is written, so that client may
/// see the answer a moment before: a count short of the one expected is read
/// again, at most max_readings times.
class request_counter {
public:
  explicit request_counter(test::running_node& node) : node_(node), mark_(others()) {}

  /// Counts from now on.
  void restart() { mark_ = others(); }

  /// Requests answered to other clients since construction or restart(),
  /// read until `expected` show (more show at once).
  int64_t answered(int64_t expected) {
    auto seen = others() - mark_;
    for (int reading = 1; reading < max_readings && seen < expected; ++reading)
      seen = others() - mark_;
    return seen;
  }

private:
  static constexpr int max_readings = 1000;

  int64_t others() {
    // Every call sent before this reading is counted when it is answered.
    auto own = static_cast<int64_t>(node_.requests_sent());
    auto status = node_.call("GET", "/v1/admin/status", test::admin_token);
    REQUIRE(status.status == 200);
    return status.body["metrics"]["http"]["requests"].get<int64_t>() - own;
  }

  test::running_node& node_;
  int64_t mark_;
};

/// The shipped catalog's entry for `slug`, its body file read into "body".
json catalog_entry(const std::string& slug) {
  auto catalog = json::parse(test::file_bytes(catalog_dir + "/catalog.json"));
  for (auto entry : catalog["skills"])
    if (entry["slug"] == slug) {
      entry["body"] = test::file_bytes(catalog_dir + "/" + entry["body"].get<std::string>());
      return entry;
    }
  FAIL("no example skill " << slug);
  return {};
}

/// A node and one owner's account on it: a tenant (the user id) and its token.
struct account {
  test::temp_dir dir;
  test::running_node node{dir};
  test::temp_dir cwd;
  std::string user_id;
  std::string token;
  std::string agent_id;

  account() {
    node.keep_alive(); // (request_counter)
    std::tie(user_id, token) = node.make_tenant("Owner");
    agent_id = node.call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
  }

  std::string url() { return "http://127.0.0.1:" + std::to_string(node.get().http_port()); }

  /// A server made by `create`, then changed by `patch`; its id.
  std::string add_server(const json& create, const json& patch) {
    auto made = node.call("POST", "/v1/servers", token, create.dump());
    REQUIRE_MESSAGE(made.status == 201, made.raw);
    auto id = made.body["server_id"].get<std::string>();
    auto patched = node.call("PATCH", "/v1/servers/" + id, token, patch.dump());
    REQUIRE_MESSAGE(patched.status == 200, patched.raw);
    return id;
  }

  /// The account's active skills, bodies included.
  json skills() {
    auto listed = node.call("GET", "/v1/skills", token);
    REQUIRE(listed.status == 200);
    return listed.body["skills"];
  }

  /// What installing never changes: the servers (flags, allowlists, test
  /// and sign-in state) and the agent's grants.
  json setup() {
    auto servers = node.call("GET", "/v1/servers", token);
    auto grants = node.call("GET", "/v1/agents/" + agent_id + "/grants", token);
    REQUIRE(servers.status == 200);
    REQUIRE(grants.status == 200);
    return {{"servers", servers.body}, {"grants", grants.body}};
  }

  /// `voxosctl skills load` of `mcp` into this account (or `user`) from
  /// the shipped catalog (or `catalog`), `extra` appended.
  run_result load(const std::string& mcp, std::vector<std::string> extra = {},
                  const std::string& user = {}, const std::string& catalog = catalog_dir) {
    auto args = load_args(url(), user.empty() ? user_id : user, mcp, catalog);
    args.insert(args.end(), extra.begin(), extra.end());
    return voxosctl(args, cwd.str());
  }
};

/// An account with Google Workspace servers, neither signed in nor tested:
/// Calendar enabled and trusted, Drive trusted but disabled.
struct workspace_account : account {
  std::string calendar = add_server(
    {{"preset_id", "google_workspace"}, {"variant", "calendar"}},
    {{"enabled", true}, {"trusted", true}, {"allowed_tools", {"list_calendars", "list_events"}}});
  std::string drive = add_server({{"preset_id", "google_workspace"}, {"variant", "drive"}},
                                 {{"trusted", true}, {"allowed_tools", {"search_files"}}});
};

/// A copy of the shipped catalog whose agenda body says something else.
struct edited_catalog {
  test::temp_dir dir;
  edited_catalog() {
    std::filesystem::copy(catalog_dir, dir.path(), std::filesystem::copy_options::recursive);
    std::ofstream{dir.path() / "google-calendar-week-agenda.md"} << "# Another agenda\n";
  }
};

/// Every skill of `skills` is its catalog entry: name, description, body.
void check_as_in_catalog(const json& skills) {
  for (const auto& skill : skills) {
    auto entry = catalog_entry(skill["slug"].get<std::string>());
    CHECK(skill["name"] == entry["name"]);
    CHECK(skill["description"] == entry["description"]);
    CHECK(skill["instructions"] == entry["body"]);
    CHECK(skill["version"] == 1);
  }
}

std::vector<std::string> slugs_of(const json& skills) {
  std::vector<std::string> out;
  for (const auto& skill : skills)
    out.push_back(skill["slug"].get<std::string>());
  return out;
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

TEST_CASE("voxosctl skills load installs with one request, one line per skill and a summary") {
  workspace_account a;
  auto setup = a.setup();
  auto events = a.node.stored_events();

  // A dry run: nothing written, a blocked skill still exits 0.
  request_counter requests{a.node};
  auto dry = a.load("google-workspace", {"--dry-run"});
  CHECK_MESSAGE(dry.code == 0, dry.err);
  CHECK(requests.answered(1) == 1);
  CHECK(holds(dry.out, "loading 2 example skills of 'google-workspace' into the account of user "
                         + a.user_id + " (dry run)\n"));
  CHECK(shows(dry.out, "\nwould install +google-calendar-week-agenda +warning +needs_auth "
                       "\\(server "
                         + a.calendar + "\\): the server needs signing in"));
  CHECK(shows(dry.out, "\nblocked +google-drive-document-brief +blocked +disabled \\(server "
                         + a.drive + "\\): the server is disabled"));
  CHECK(holds(dry.out, "summary: 1 would be installed (1 with a readiness warning), 0 already "
                       "present, 1 blocked; dry run: nothing was written"));
  CHECK(a.skills().empty());
  CHECK(a.node.stored_events() == events);
  CHECK(a.setup() == setup);

  // For real: the installable skill is written as the catalog holds it, in
  // one event; no server, allowlist or grant changes.
  requests.restart();
  auto real = a.load("google-workspace");
  CHECK_MESSAGE(real.code == 0, real.err);
  CHECK(requests.answered(1) == 1);
  CHECK(shows(real.out, "\ninstalled +google-calendar-week-agenda +warning +needs_auth \\(server "
                          + a.calendar + "\\)"));
  CHECK(shows(real.out, "\nblocked +google-drive-document-brief +blocked +disabled"));
  CHECK(holds(real.out, "summary: 1 installed (1 with a readiness warning), 0 already present, "
                        "1 blocked\n"));
  CHECK(holds(real.out, "installing changes no server, allowlist or grant"));
  auto installed = a.skills();
  CHECK(slugs_of(installed) == std::vector<std::string>{"google-calendar-week-agenda"});
  check_as_in_catalog(installed);
  CHECK(a.node.stored_events() == events + 1);
  CHECK(a.setup() == setup);

  // Again, from a catalog whose agenda now says something else: the
  // installed skill is kept as it is and nothing is written.
  edited_catalog edited;
  requests.restart();
  auto again = a.load("google-workspace", {}, {}, edited.dir.str());
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(requests.answered(1) == 1);
  CHECK(a.skills() == installed);
  CHECK(a.node.stored_events() == events + 1);
  CHECK(a.setup() == setup);
}

TEST_CASE("voxosctl skills load reports an existing skill as kept, in a dry run and for real") {
  workspace_account a;
  auto first = a.load("google-workspace");
  REQUIRE_MESSAGE(first.code == 0, first.err);

  auto dry = a.load("google-workspace", {"--dry-run"});
  CHECK_MESSAGE(dry.code == 0, dry.err);
  CHECK(shows(dry.out, "\nexists +google-calendar-week-agenda +warning +kept as it is: an "
                       "existing skill is never overwritten"));
  CHECK(holds(dry.out, "summary: 0 would be installed (0 with a readiness warning), 1 already "
                       "present, 1 blocked; dry run: nothing was written"));

  edited_catalog edited;
  auto again = a.load("google-workspace", {}, {}, edited.dir.str());
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(shows(again.out, "\nexists +google-calendar-week-agenda +warning +kept as it is: an "
                         "existing skill is never overwritten"));
  CHECK(holds(again.out, "summary: 0 installed (0 with a readiness warning), 1 already present, "
                         "1 blocked\n"));
}

TEST_CASE("voxosctl skills load blocks only the skills of a missing or untrusted server") {
  account a;
  auto github = a.add_server({{"preset_id", "github"}}, {{"enabled", true}, {"trusted", true}});
  auto events = a.node.stored_events();

  // Both GitHub skills install, each with the server's warning.
  auto gh = a.load("github");
  CHECK_MESSAGE(gh.code == 0, gh.err);
  for (const char* slug : {"github-issue-triage", "github-pull-request-digest"})
    CHECK_MESSAGE(shows(gh.out, std::string{"\ninstalled +"} + slug
                                  + " +warning +needs_auth \\(server " + github + "\\)"),
                  slug);
  CHECK(holds(gh.out, "summary: 2 installed (2 with a readiness warning), 0 already present, "
                      "0 blocked"));
  CHECK(a.node.stored_events() == events + 2);

  // No OpenBnB server: blocked, naming no server.
  auto setup = a.setup();
  auto missing = a.load("openbnb");
  CHECK_MESSAGE(missing.code == 0, missing.err);
  CHECK(shows(missing.out, "\nblocked +openbnb-accommodation-shortlist +blocked +missing: no "
                           "server of the required preset"));
  CHECK(holds(missing.out, "summary: 0 installed (0 with a readiness warning), 0 already "
                           "present, 1 blocked"));
  CHECK(a.setup() == setup);
  CHECK(a.node.stored_events() == events + 2);

  // One that is enabled but not trusted: blocked, naming it.
  auto openbnb = a.add_server({{"preset_id", "openbnb"}}, {{"enabled", true}});
  setup = a.setup();
  events = a.node.stored_events();
  auto untrusted = a.load("openbnb");
  CHECK_MESSAGE(untrusted.code == 0, untrusted.err);
  CHECK(shows(untrusted.out, "\nblocked +openbnb-accommodation-shortlist +blocked +untrusted "
                             "\\(server "
                               + openbnb + "\\): the server is not trusted"));
  auto kept = a.skills();
  CHECK(slugs_of(kept)
        == std::vector<std::string>{"github-issue-triage", "github-pull-request-digest"});
  check_as_in_catalog(kept);
  CHECK(a.node.stored_events() == events);
  CHECK(a.setup() == setup);
}

TEST_CASE("voxosctl skills load exits non-zero on a request error or an unreachable node") {
  account a;
  auto events = a.node.stored_events();
  request_counter requests{a.node};
  auto unknown = a.load("openbnb", {}, "t_unknown");
  CHECK(unknown.code == 1);
  CHECK(requests.answered(1) == 1);
  CHECK(holds(unknown.err, "not_found"));

  MESSAGE(unknown.err);

  requests.restart();
  auto wrong_token = voxosctl(load_args(a.url(), a.user_id, "openbnb"), a.cwd.str(),
                              "vxa_not-the-admin-token-0123456789abcdefgh");
  CHECK(wrong_token.code == 1);
  CHECK(requests.answered(1) == 1);
  CHECK(holds(wrong_token.err, "unauthorized: an admin token is required"));
  CHECK(a.node.stored_events() == events);
  CHECK(a.skills().empty());

  auto [fd, port] = test::loopback_listener();
  ::close(fd);
  auto unreachable = voxosctl(
    load_args("http://127.0.0.1:" + std::to_string(port), a.user_id, "openbnb"), a.cwd.str());
  CHECK(unreachable.code == 1);
  CHECK(holds(unreachable.err, "cannot reach"));
}

TEST_CASE("voxosctl skills load refuses a bad user id or MCP key before sending anything") {
  account a;
  request_counter requests{a.node};
  auto bad_user = a.load("github", {}, "../" + a.user_id);
  CHECK(bad_user.code == 1);
  CHECK(holds(bad_user.err, "--user-id: must be a tenant id"));
  auto bad_key = a.load("gitlab");
  CHECK(bad_key.code == 1);
  CHECK(holds(bad_key.err, "the catalog has: openbnb, github, google-workspace"));
  auto no_key =
    voxosctl({"--url", a.url(), "skills", "load", "--user-id", a.user_id, "--catalog", catalog_dir},
             a.cwd.str());
  CHECK(no_key.code == 2);
  CHECK(requests.answered(0) == 0);
}

TEST_CASE("make example-skills targets call voxosctl and name a missing USER_ID or MCP") {
  account a;
  a.add_server({{"preset_id", "github"}}, {{"enabled", true}, {"trusted", true}});
  auto events = a.node.stored_events();
  auto make = [&](std::vector<std::string> vars) {
    std::vector<std::string> argv{"/usr/bin/make",
                                  "--no-print-directory",
                                  "-s",
                                  "-C",
                                  source_dir,
                                  std::string{"VOXOSCTL="} + VOXOSCTL_PATH,
                                  "VOXOSCTL_FLAGS=--url " + a.url()};
    argv.insert(argv.end(), vars.begin(), vars.end());
    return test::run_to_end(argv, source_dir, {"VOXOS_ADMIN_TOKEN=" + test::admin_token});
  };
  auto listed = make({"example-skills-list"});
  CHECK_MESSAGE(listed.code == 0, listed.err);
  CHECK(holds(listed.out, "5 example skills for 3 MCPs"));

  request_counter requests{a.node};
  auto no_user = make({"example-skills-load", "MCP=github"});
  CHECK(no_user.code != 0);
  CHECK(holds(no_user.err, "USER_ID is required"));
  auto no_mcp = make({"example-skills-load", "USER_ID=" + a.user_id});
  CHECK(no_mcp.code != 0);
  CHECK(holds(no_mcp.err, "MCP is required"));
  auto odd_dry_run =
    make({"example-skills-load", "USER_ID=" + a.user_id, "MCP=github", "DRY_RUN=yes"});
  CHECK(odd_dry_run.code != 0);
  CHECK(holds(odd_dry_run.err, "DRY_RUN must be 1, 0 or empty"));
  CHECK(requests.answered(0) == 0);

  requests.restart();
  auto dry = make({"example-skills-load", "USER_ID=" + a.user_id, "MCP=github", "DRY_RUN=1"});
  CHECK_MESSAGE(dry.code == 0, dry.err);
  CHECK(requests.answered(1) == 1);
  CHECK(shows(dry.out, "would install +github-issue-triage +warning"));
  CHECK(holds(dry.out, "dry run: nothing was written"));
  CHECK(a.skills().empty());
  CHECK(a.node.stored_events() == events);

  auto real = make({"example-skills-load", "USER_ID=" + a.user_id, "MCP=github", "DRY_RUN=0"});
  CHECK_MESSAGE(real.code == 0, real.err);
  CHECK(holds(real.out, "summary: 2 installed (2 with a readiness warning)"));
  CHECK(slugs_of(a.skills())
        == std::vector<std::string>{"github-issue-triage", "github-pull-request-digest"});
}
