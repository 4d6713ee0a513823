// voxosd as a process: boots on embedded defaults exactly as scripts/run
// starts it, refuses a held data directory, a corrupt configuration and a
// production configuration without secrets, and stops cleanly on SIGTERM.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include "support/voxosd_process.hpp"

using namespace voxos;

TEST_CASE("voxosd boots on embedded defaults as scripts/run starts it") {
  // scripts/run starts `voxosd` with no arguments in the checkout; here the
  // working directory is a fresh one, so ./var is new. The defaults bind
  // 127.0.0.1:7100 (HTTP) and 7101 (CAF): this test needs them free.
  test::temp_dir dir;
  test::child_process node{{VOXOSD_PATH}, dir.str(), (dir.path() / "voxosd.log").string()};
  REQUIRE(node.started());
  REQUIRE_MESSAGE(node.wait_for_line("is up"),
                  "voxosd did not come up (is port 7100 or 7101 in use?): " << node.error_output());
  CHECK(node.output().find("http://127.0.0.1:7100") != std::string::npos);
  CHECK(node.output().find("http://localhost:7100") != std::string::npos);

  httplib::Client cli{"127.0.0.1", 7100};
  auto health = cli.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(health->body.find("\"ok\"") != std::string::npos);

  // Generated secrets are private to the owner.
  struct stat st {};
  REQUIRE(::stat((dir.path() / "var" / "secrets.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // voxosctl, run where the node runs, finds it and shows live actors.
  test::child_process ctl{
    {VOXOSCTL_PATH, "status"}, dir.str(), (dir.path() / "voxosctl.log").string()};
  CHECK(ctl.wait_for_line("event_store"));
  CHECK(ctl.wait() == 0);
  CHECK(ctl.output().find("actors running: ") != std::string::npos);
  CHECK(ctl.output().find("run_host") != std::string::npos);
  CHECK(ctl.output().find("run host: 0 runs remembered") != std::string::npos);

  test::child_process ping{{VOXOSCTL_PATH, "ping"}, dir.str(), (dir.path() / "ping.log").string()};
  CHECK(ping.wait_for_line("pong from node"));
  CHECK(ping.wait() == 0);

  node.signal(SIGTERM);
  CHECK(node.wait() == 0);
  // The log never carries the generated admin token.
  auto secrets = test::read_json(dir.path() / "var" / "secrets.json");
  CHECK(node.error_output().find(secrets["admin_token"].get<std::string>()) == std::string::npos);
}

TEST_CASE("a second voxosd on a held data directory is refused and the first keeps serving") {
  test::temp_dir dir;
  auto config = test::test_config(dir);
  test::voxosd_process first{dir, config, "first.log"};
  REQUIRE(first.wait_up());
  test::voxosd_process second{dir, config, "second.log"};
  CHECK(second.proc().wait() == 1);
  CHECK(second.proc().error_output().find("data_dir_locked") != std::string::npos);
  auto health = first.client().Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
}

TEST_CASE("a corrupt configuration refuses to boot naming the key and stores nothing") {
  test::temp_dir dir;
  auto config = test::test_config(dir, R"({"http":{"prot":7100}})");
  test::voxosd_process node{dir, config};
  CHECK(node.proc().wait() == 2);
  CHECK(node.proc().error_output().find("http.prot") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "var"));

  auto not_json = (dir.path() / "broken.json").string();
  test::write_file(not_json, "{\"http\": {\"port\": 7100,");
  test::voxosd_process broken{dir, not_json, "broken.log"};
  CHECK(broken.proc().wait() == 2);
  CHECK(broken.proc().error_output().find("not valid JSON") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "var"));
}

TEST_CASE("a production configuration without a secret source refuses to start") {
  test::temp_dir dir;
  auto config = test::test_config(dir, R"({"profile":"production"})");
  test::voxosd_process node{dir, config};
  CHECK(node.proc().wait() == 2);
  CHECK(node.proc().error_output().find("secrets.source") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "var" / "secrets.json"));
}

TEST_CASE("voxosctl audit prints a tenant's policy decisions") {
  test::temp_dir dir;
  test::voxosd_process node{dir, test::test_config(dir)};
  REQUIRE(node.wait_up());
  auto [tenant_id, token] = node.make_tenant("Acme");
  auto cli = node.client();
  httplib::Headers tenant{{"Authorization", "Bearer " + token}};
  auto agents = cli.Get("/v1/agents", tenant);
  REQUIRE(agents);
  auto agent_id = nlohmann::json::parse(agents->body)[0]["agent_id"].get<std::string>();
  auto run = cli.Post("/v1/runs", tenant,
                      nlohmann::json{{"agent_id", agent_id}, {"channel", "owner_text_chat"}}.dump(),
                      "application/json");
  REQUIRE(run);
  REQUIRE(run->status == 201);

  test::child_process ctl{
    {VOXOSCTL_PATH, "--data-dir", (dir.path() / "var").string(), "audit", tenant_id, "200"},
    dir.str(),
    (dir.path() / "audit.log").string()};
  const auto& out = ctl.read_all();
  CHECK(ctl.wait() == 0);
  CHECK(out.find("platform_default") != std::string::npos);
  CHECK(out.find("web_search_exa@") != std::string::npos);
  CHECK(out.find("not_granted") != std::string::npos);
}
