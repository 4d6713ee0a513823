// The internal tools through a node's HTTP API over a real RocksDB store:
// a run's calls reach the tenant's tool desk with the run's context, writes
// are durable before the answer, the owner reviews candidates, and refused
// input stores nothing.
#include <doctest/doctest.h>

#include "support/tool_session.hpp"

using namespace voxos;
using nlohmann::json;
using test::admin_token;

namespace {

/// A tenant whose default agent has the medium-risk writes toggled on.
struct tools_fixture : test::tool_session {
  tools_fixture() {
    for (auto tool :
         {"record_agent_improvement", "create_task_plan", "update_task_step", "complete_task_plan",
          "create_user_skill", "create_agent_memory", "search_contacts"})
      grant(tool);
  }
};

} // namespace

TEST_CASE("a run's internal tool calls do their work through the tool desk") {
  tools_fixture f;
  auto run = f.start_run();
  auto made = f.result_of(run, "create_task_plan",
                          {{"title", "Move flat"}, {"steps", {"Pack", "Book a van"}}});
  auto plan_id = made["plan"]["plan_id"].get<std::string>();
  CHECK(made["plan"]["run_id"] == run); // from the execution context
  f.result_of(run, "update_task_step",
              {{"plan_id", plan_id}, {"step_index", 1}, {"status", "done"}});
  auto listed = f.result_of(run, "list_task_plans", json::object());
  REQUIRE(listed["plans"].size() == 1);
  CHECK(listed["plans"][0]["steps"][1]["status"] == "done");
  // A tool's own refusal is a tool error, not a failure of the call.
  auto missing =
    f.call(run, "update_task_step", {{"plan_id", plan_id}, {"step_index", 7}, {"status", "done"}});
  CHECK(missing["status"] == "tool_error");
  CHECK(missing["output"]["result"]["structuredContent"]["error"] == "not_found");
}

TEST_CASE("an improvement waits for review and the owner's confirmation reaches the next run") {
  tools_fixture f;
  auto run = f.start_run();
  auto submitted = f.result_of(
    run, "record_agent_improvement",
    {{"kind", "memory"}, {"title", "Seat"}, {"content", "Prefers aisle seats on long flights"}});
  CHECK(submitted["status"] == "pending_review");
  auto id = submitted["candidate_id"].get<std::string>();
  CHECK(f.result_of(run, "list_agent_memories", json::object())["memories"].empty());
  auto pending = f.node.call("GET", "/v1/knowledge/candidates", f.token);
  REQUIRE(pending.status == 200);
  REQUIRE(pending.body["candidates"].size() == 1);
  CHECK(pending.body["candidates"][0]["run_id"] == run);
  CHECK(pending.body["candidates"][0]["agent_id"] == f.agent_id);
  auto confirmed = f.node.call("POST", "/v1/knowledge/candidates/" + id + "/confirm", f.token);
  REQUIRE_MESSAGE(confirmed.status == 200, confirmed.raw);
  auto next = f.start_run();
  auto memories = f.result_of(next, "list_agent_memories", json::object());
  REQUIRE(memories["memories"].size() == 1);
  CHECK(memories["memories"][0]["content"] == "Prefers aisle seats on long flights");
  // Decided once.
  CHECK(f.node.call("POST", "/v1/knowledge/candidates/" + id + "/reject", f.token).status == 409);
}

TEST_CASE("knowledge and plans survive a restart of the node") {
  tools_fixture f;
  auto run = f.start_run();
  f.result_of(run, "create_task_plan", {{"title", "Keep"}, {"steps", {"One"}}});
  CHECK(f.node.call("PUT", "/v1/knowledge/consent", f.token, R"({"automatic_saving":true})").status
        == 200);
  auto saved = f.result_of(run, "create_agent_memory", {{"content", "Lives in Porto"}});
  CHECK(saved["status"] == "applied");
  f.node.stop();
  f.node.start();
  auto again = f.start_run();
  CHECK(f.result_of(again, "list_task_plans", json::object())["plans"].size() == 1);
  CHECK(f.result_of(again, "list_agent_memories", json::object())["memories"].size() == 1);
  auto candidates = f.node.call("GET", "/v1/knowledge/candidates?status=all", f.token);
  CHECK(candidates.body["automatic_saving"] == true);
}

TEST_CASE("another tenant's candidate plan or memory id is not found and nothing is stored") {
  tools_fixture f;
  auto run = f.start_run();
  auto submitted = f.result_of(run, "record_agent_improvement",
                               {{"kind", "memory"}, {"content", "Owner likes green tea"}});
  f.result_of(run, "create_task_plan", {{"title", "Mine"}, {"steps", {"A"}}});
  auto [other_id, other_token] = f.node.make_tenant("Other");
  auto before = f.node.stored_events();
  auto id = submitted["candidate_id"].get<std::string>();
  CHECK(f.node.call("POST", "/v1/knowledge/candidates/" + id + "/confirm", other_token).status
        == 404);
  CHECK(f.node
          .call("POST",
                "/v1/admin/tenants/" + other_id + "/knowledge/candidates/" + id + "/confirm",
                admin_token)
          .status
        == 404);
  auto other_agents = f.node.call("GET", "/v1/agents", other_token).body;
  auto other_run = f.node.call(
    "POST", "/v1/runs", other_token,
    json{{"agent_id", other_agents[0]["agent_id"]}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE(other_run.status == 201);
  // (the other tenant's run start stores its snapshot and audit: counted from here)
  before = f.node.stored_events();
  json body{
    {"calls",
     {{{"call_id", "x"}, {"name", "list_task_plans"}, {"arguments", {{"status", "all"}}}}}}};
  auto listed =
    f.node.call("POST", "/v1/runs/" + other_run.body["run_id"].get<std::string>() + "/tool-calls",
                other_token, body.dump());
  REQUIRE(listed.status == 200);
  CHECK(listed.body["outputs"][0]["output"]["structuredContent"]["plans"].empty());
  // A read stores its round's audit and activity only (two events), no knowledge.
  CHECK(f.node.stored_events() == before + 2);
  CHECK(f.node.call("GET", "/v1/knowledge/candidates", f.token).body["pending"] == 1);
}

TEST_CASE("knowledge review input that is malformed is refused with a specific error") {
  tools_fixture f;
  CHECK(f.node.call("GET", "/v1/knowledge/candidates?status=everything", f.token).status == 400);
  CHECK(f.node.call("GET", "/v1/knowledge/candidates?limit=100000", f.token).status == 400);
  CHECK(f.node.call("PUT", "/v1/knowledge/consent", f.token, R"({"automatic_saving":"yes"})").status
        == 400);
  CHECK(f.node.call("PUT", "/v1/knowledge/consent", f.token, R"({"automatic_saving":true,"x":1})")
          .status
        == 400);
  CHECK(f.node.call("POST", "/v1/knowledge/candidates/cand_nope/confirm", f.token).status == 404);
  CHECK(f.node.call("GET", "/v1/knowledge/candidates", "").status == 401);
}

TEST_CASE("a skill body of 10 MB is refused with a specific error and nothing is stored") {
  tools_fixture f;
  auto run = f.start_run();
  auto before = f.node.stored_events();
  json huge{{"calls",
             {{{"call_id", "c1"},
               {"name", "create_user_skill"},
               {"arguments", {{"name", "Huge"}, {"instructions", std::string(10 << 20, 'x')}}}}}}};
  auto refused = f.node.call("POST", "/v1/runs/" + run + "/tool-calls", f.token, huge.dump());
  CHECK(refused.status == 413);
  CHECK(f.node.stored_events() == before);
  // Under the body limit but over the schema's bound: not sent to the desk.
  auto out = f.call(run, "create_user_skill",
                    {{"name", "Long"}, {"instructions", std::string(30'000, 'x')}});
  CHECK(out["status"] == "invalid_arguments");
  CHECK(out.dump().find("xxxx") == std::string::npos);
  CHECK(f.node.call("GET", "/v1/skills", f.token).body["skills"].empty());
  CHECK(f.node.call("GET", "/v1/knowledge/candidates", f.token).body["candidates"].empty());
  // Only the round's audit row and activity are stored.
  CHECK(f.node.stored_events() == before + 2);
}

TEST_CASE("a run continues only a chat of its own tenant") {
  tools_fixture f;
  auto first = f.node.call("POST", "/v1/runs", f.token,
                           json{{"agent_id", f.agent_id}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE(first.status == 201);
  auto chat = first.body["chat_id"].get<std::string>();
  auto again = f.node.call(
    "POST", "/v1/runs", f.token,
    json{{"agent_id", f.agent_id}, {"channel", "owner_text_chat"}, {"chat_id", chat}}.dump());
  CHECK(again.status == 201);
  CHECK(again.body["chat_id"] == chat);
  // Another tenant cannot name it, nor may anyone name a chat that was never opened.
  auto [other_id, other_token] = f.node.make_tenant("Other");
  auto other_agent = f.node.call("GET", "/v1/agents", other_token).body[0]["agent_id"];
  auto before = f.node.stored_events();
  auto foreign = f.node.call(
    "POST", "/v1/runs", other_token,
    json{{"agent_id", other_agent}, {"channel", "owner_text_chat"}, {"chat_id", chat}}.dump());
  CHECK(foreign.status == 404);
  auto unknown = f.node.call(
    "POST", "/v1/runs", f.token,
    json{{"agent_id", f.agent_id}, {"channel", "owner_text_chat"}, {"chat_id", "c_never"}}.dump());
  CHECK(unknown.status == 404);
  // Each refusal is one audit row; no run was stored.
  CHECK(f.node.stored_events() == before + 2);
}

TEST_CASE("listing 10,000 memories at once is refused by the tool's schema") {
  tools_fixture f;
  auto run = f.start_run();
  auto out = f.call(run, "list_agent_memories", {{"limit", 10000}});
  CHECK(out["status"] == "invalid_arguments");
  CHECK(out["output"]["problems"][0]["path"] == "/limit");
}
