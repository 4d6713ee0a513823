// Durable work end to end: a real voxosd killed with SIGKILL and started
// again on its data, and the example host as workers over the CAF network.
// Each kind of work fires or is redelivered once after the restart, and its
// answer reaches its chat once (counted in the store after the node stops).
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <ctime>
#include <thread>

#include "actors/work/work_item.hpp"
#include "support/node_store.hpp"
#include "support/voxosd_process.hpp"

using namespace voxos;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// Short bounds so the tests need no long waits: schedules every second,
/// leases of three seconds, retries at once.
const std::string work_config =
  R"({"work": {"min_schedule_interval_s": 1, "lease_ms": 3000, "retry_delay_ms": 0}})";

struct node_session {
  test::temp_dir dir;
  std::string config = test::test_config(dir, work_config);
  std::unique_ptr<test::voxosd_process> node;
  std::string tenant_id;
  std::string token;
  std::string agent_id;

  node_session() {
    start();
    std::tie(tenant_id, token) = node->make_tenant("durable");
    auto agents = call("GET", "/v1/agents");
    REQUIRE(agents.is_array());
    agent_id = agents[0]["agent_id"].get<std::string>();
    for (const char* tool : {"create_agent_schedule", "delegate_agent_task"})
      call("PUT", "/v1/agents/" + agent_id + "/grants",
           {{"server_id", ""}, {"tool", tool}, {"decision", "allow"}});
  }

  void start() {
    node = std::make_unique<test::voxosd_process>(dir, config);
    REQUIRE(node->wait_up());
  }

  void kill() {
    node->proc().signal(SIGKILL);
    CHECK(node->proc().wait() == -SIGKILL);
  }

  void stop() {
    node->proc().signal(SIGTERM);
    node->proc().wait();
  }

  json call(const std::string& method, const std::string& path, const json& body = nullptr) {
    auto cli = node->client();
    httplib::Headers auth{{"Authorization", "Bearer " + token}};
    httplib::Result res =
      method == "GET" ? cli.Get(path.c_str(), auth)
      : method == "PUT"
        ? cli.Put(path.c_str(), auth, body.dump(), "application/json")
        : cli.Post(path.c_str(), auth, body.is_null() ? "{}" : body.dump(), "application/json");
    REQUIRE(res);
    REQUIRE_MESSAGE(res->status < 300, method << " " << path << ": " << res->body);
    return json::parse(res->body, nullptr, false);
  }

  /// One tool call in a fresh owner text-chat run, which then finishes;
  /// answers the call's output and the run's chat.
  std::pair<json, std::string> tool(const std::string& name, const json& args) {
    auto run = call("POST", "/v1/runs", {{"agent_id", agent_id}, {"channel", "owner_text_chat"}});
    auto run_id = run["run_id"].get<std::string>();
    auto out = call("POST", "/v1/runs/" + run_id + "/tool-calls",
                    {{"calls", {{{"call_id", "c1"}, {"name", name}, {"arguments", args}}}}});
    call("POST", "/v1/runs/" + run_id + "/finish");
    return {out["outputs"][0], run["chat_id"].get<std::string>()};
  }

  std::unique_ptr<test::child_process> worker(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv{VOXOS_EXAMPLE_HOST_PATH, "--port",
                                  std::to_string(node->caf_port()), "--worker"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto proc = std::make_unique<test::child_process>(
      argv, dir.str(), dir.str() + "/worker.err", std::vector<std::string>{"VOXOS_TOKEN=" + token});
    REQUIRE(proc->wait_for_line("worker ready", 30s));
    return proc;
  }

  /// The chat's events of `type`, read from the store of the stopped node.
  std::vector<json> events_of(const std::string& chat_id, const std::string& type) {
    event_db_options opts;
    opts.projectors = node_projectors();
    auto db = event_db::open((dir.path() / "var" / "store").string(), opts);
    REQUIRE(db);
    auto events = (*db)->read_stream({tenant_id, work::stream_of(chat_id), 1, 10'000});
    REQUIRE(events);
    std::vector<json> out;
    for (const auto& ev : *events)
      if (ev.type == type)
        out.push_back(json::parse(ev.data));
    return out;
  }
};

/// "YYYY-MM-DDTHH:MM:SS" in UTC, `ahead` from now.
std::string utc_local(std::chrono::seconds ahead) {
  auto at = std::time(nullptr) + ahead.count();
  std::tm out{};
  gmtime_r(&at, &out);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &out);
  return text;
}

bool ok_output(const json& out) {
  return out.value("status", "") == "ok";
}

} // namespace

TEST_CASE("a one-shot schedule due while the node is down fires once after a SIGKILL restart") {
  node_session s;
  auto [made, chat_id] =
    s.tool("create_agent_schedule", {{"task_name", "Plants"},
                                     {"instruction", "Remind me to water the plants"},
                                     {"timing", {{"kind", "once"}, {"at", utc_local(3s)}}},
                                     {"timezone", "UTC"}});
  REQUIRE_MESSAGE(ok_output(made), made.dump());
  s.kill();
  std::this_thread::sleep_for(5s); // the occurrence passes while the node is down
  s.start();
  auto w = s.worker({"--items", "1"});
  REQUIRE(w->wait_for_line("completed", 30s));
  std::this_thread::sleep_for(2s); // nothing more is offered
  s.stop();
  w->signal(SIGTERM);
  w->wait();
  auto answers = s.events_of(chat_id, "turn.reported");
  auto fired = s.events_of(chat_id, "work.enqueued");
  CHECK(fired.size() == 1);
  REQUIRE(answers.size() == 1);
  CHECK(answers[0]["assistant"] == "Done: Remind me to water the plants");
  CHECK(s.events_of(chat_id, "work.completed").size() == 1);
}

TEST_CASE("an interval that missed several occurrences during a SIGKILL outage fires once, "
          "then goes on from now") {
  node_session s;
  auto [made, chat_id] =
    s.tool("create_agent_schedule", {{"task_name", "Pulse"},
                                     {"instruction", "Check the queue depth"},
                                     {"timing", {{"kind", "interval"}, {"every_seconds", 1}}},
                                     {"timezone", "UTC"}});
  REQUIRE_MESSAGE(ok_output(made), made.dump());
  std::this_thread::sleep_for(2s);
  s.kill();
  auto killed_at = std::time(nullptr);
  std::this_thread::sleep_for(5s); // about five occurrences are missed
  auto starting_at = std::time(nullptr);
  s.start();
  auto restarted_at = std::time(nullptr);
  std::this_thread::sleep_for(3s);
  s.stop();
  auto fired = s.events_of(chat_id, "work.enqueued");
  std::vector<int64_t> occurrences;
  for (const auto& ev : fired)
    occurrences.push_back(ev["occurrence_s"].get<int64_t>());
  // never the same occurrence twice, always in order
  for (std::size_t idx = 1; idx < occurrences.size(); ++idx)
    CHECK(occurrences[idx] > occurrences[idx - 1]);
  // the occurrences missed during the outage did not fire one by one ...
  std::size_t missed_fired = 0;
  std::size_t at_restart = 0;
  for (auto occ : occurrences) {
    if (occ > killed_at && occ < starting_at)
      ++missed_fired;
    if (occ >= starting_at && occ <= restarted_at)
      ++at_restart;
  }
  CHECK(missed_fired == 0);
  // ... but as one, the latest, when the node was back
  CHECK(at_restart >= 1);
  CHECK(at_restart <= restarted_at - starting_at + 1);
  // and it goes on after the restart
  REQUIRE_FALSE(occurrences.empty());
  CHECK(occurrences.back() >= restarted_at);
}

TEST_CASE("a child run leased when the node dies is redelivered once after a SIGKILL restart "
          "and its answer reaches the parent's chat once") {
  node_session s;
  auto [made, chat_id] =
    s.tool("delegate_agent_task",
           {{"task", "Compare the three quotes for the roof repair"}, {"context", "isolated"}});
  REQUIRE_MESSAGE(ok_output(made), made.dump());
  {
    auto holder = s.worker({"--hold-ms", "60000"});
    REQUIRE(holder->wait_for_line("begun", 30s));
    s.kill();
    CHECK(holder->wait_for_line("the node went away", 30s));
    holder->wait();
  }
  s.start();
  auto w = s.worker({"--items", "1"});
  REQUIRE(w->wait_for_line("completed", 30s));
  std::this_thread::sleep_for(2s);
  s.stop();
  w->signal(SIGTERM);
  w->wait();
  auto answers = s.events_of(chat_id, "turn.reported");
  std::size_t child_answers = 0;
  for (const auto& a : answers)
    if (a.contains("item_id"))
      ++child_answers;
  CHECK(child_answers == 1);
  CHECK(s.events_of(chat_id, "work.completed").size() == 1);
}

TEST_CASE("two example workers: the one killed holding a lease loses it to the other, which "
          "completes it once") {
  node_session s;
  auto holder = s.worker({"--hold-ms", "60000"});
  auto [made, chat_id] =
    s.tool("create_agent_schedule", {{"task_name", "Report"},
                                     {"instruction", "Send the weekly report"},
                                     {"timing", {{"kind", "once"}, {"at", utc_local(2s)}}},
                                     {"timezone", "UTC"}});
  REQUIRE_MESSAGE(ok_output(made), made.dump());
  REQUIRE(holder->wait_for_line("begun", 30s));
  auto other = s.worker();
  holder->signal(SIGKILL);
  holder->wait();
  REQUIRE(other->wait_for_line("completed", 30s));
  CHECK(other->output().find("attempt 2") != std::string::npos);
  std::this_thread::sleep_for(2s);
  s.stop();
  other->wait();
  auto answers = s.events_of(chat_id, "turn.reported");
  REQUIRE(answers.size() == 1);
  CHECK(answers[0]["assistant"] == "Done: Send the weekly report");
}
