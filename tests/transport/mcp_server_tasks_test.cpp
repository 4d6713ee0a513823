// transport/mcp_server's tasks extension (SEP-2663) at 2026-07-28 over
// loopback HTTP: hand-offs made tasks, the tasks methods, their bounds, and
// callers kept apart.
#include "transport/mcp_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "support/mcp_served.hpp"

using nlohmann::json;
using namespace voxos;
using namespace voxos::test;

namespace {

constexpr const char* tasks_id = "io.modelcontextprotocol/tasks";

/// A request's _meta declaring the tasks extension (and elicitation).
json task_meta() {
  return modern_meta(
    {{"extensions", {{tasks_id, json::object()}}}, {"elicitation", json::object()}});
}

http_header_list as(const std::string& principal) {
  return {{"X-Test-Principal", principal}};
}

/// tools/call of `name` as `principal`, declaring the extension or not.
mcp_answer call(uint16_t port, const std::string& name, bool declare = true,
                const std::string& principal = "alice", json arguments = json::object()) {
  return modern(port, "tools/call",
                {{"name", name},
                 {"arguments", std::move(arguments)},
                 {"_meta", declare ? task_meta() : modern_meta()}},
                as(principal));
}

/// One of tasks/get, tasks/update, tasks/cancel on `task_id` as `principal`.
mcp_answer task_request(uint16_t port, const std::string& method, const std::string& task_id,
                        const std::string& principal = "alice", json extra = json::object()) {
  extra["taskId"] = task_id;
  if (!extra.contains("_meta"))
    extra["_meta"] = task_meta();
  return modern(port, method, std::move(extra), as(principal));
}

/// The id of the task a CreateTaskResult names.
std::string created_task(const mcp_answer& answer) {
  auto result = answer.message()["result"];
  REQUIRE_MESSAGE(result["resultType"] == "task", answer.body);
  return result["taskId"].get<std::string>();
}

/// Polls tasks/get until the task leaves `status` (bounded): the task then.
json once_not(uint16_t port, const std::string& task_id, const std::string& status) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  json task;
  do {
    task = task_request(port, "tasks/get", task_id).message()["result"];
    if (task["status"] != status)
      return task;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < deadline);
  FAIL("the task stayed " << status);
  return task;
}

/// A gate a test opens: work waits at it (or until cancelled) and records
/// whether it saw the cancellation.
struct gate {
  std::promise<void> opened;
  std::shared_future<void> open = opened.get_future().share();
  std::atomic<bool> saw_cancel{false};
  std::atomic<bool> entered{false};

  /// Waits for the gate, bounded so a broken server fails the test, not the run.
  mcp_outcome pass(mcp_call_context& ctx, const std::string& text) {
    entered = true;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (open.wait_for(std::chrono::milliseconds(5)) != std::future_status::ready) {
      if (ctx.cancelled()) {
        saw_cancel = true;
        return mcp_text_result("stopped");
      }
      if (std::chrono::steady_clock::now() > deadline)
        return mcp_tool_error("the gate never opened");
    }
    return mcp_text_result(text);
  }
};

/// A task-capable tool whose handler hands `work` off.
mcp_tool handing_off(std::string name, mcp_task_support support,
                     std::function<mcp_outcome(mcp_call_context&)> work) {
  mcp_tool tool;
  tool.name = std::move(name);
  tool.task_support = support;
  tool.handler = [work = std::move(work)](const json&, mcp_call_context&) -> mcp_outcome {
    return mcp_run_as_task{work, "queued"};
  };
  return tool;
}

mcp_tool gated(std::shared_ptr<gate> at, mcp_task_support support = mcp_task_support::optional) {
  return handing_off("gated", support,
                     [at](mcp_call_context& ctx) { return at->pass(ctx, "through the gate"); });
}

/// A served server with the gated tool (registered before it starts).
struct gated_server {
  explicit gated_server(mcp_server_options options = {}) : served(std::move(options)) {
    REQUIRE(served.server.add_tool(gated(at)).is_ok());
  }
  uint16_t start() {
    served.start();
    return served.port;
  }

  std::shared_ptr<gate> at = std::make_shared<gate>();
  mcp_served served;
};

json elicitation(const std::string& message) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema",
             {{"type", "object"}, {"properties", {{"value", {{"type", "string"}}}}}}}}}};
}

json accepted(const std::string& value) {
  return {{"action", "accept"}, {"content", {{"value", value}}}};
}

/// A task asking two questions at once, then answering with both.
mcp_tool two_questions() {
  return handing_off(
    "two_questions", mcp_task_support::optional, [](mcp_call_context& ctx) -> mcp_outcome {
      const auto& answers = ctx.input_responses();
      if (!answers.contains("name") || !answers.contains("city")) {
        mcp_input_required input;
        input.input_requests = {{"name", elicitation("name?")}, {"city", elicitation("city?")}};
        input.state = json{{"asked", true}};
        return input;
      }
      return mcp_text_result(answers["name"]["content"].value("value", "") + " of "
                             + answers["city"]["content"].value("value", "") + " "
                             + ctx.request_state()->dump());
    });
}

} // namespace

TEST_CASE("server/discover advertises the tasks extension, and max_tasks 0 neither advertises "
          "nor serves it") {
  {
    mcp_served served;
    served.start();
    auto discovered = modern(served.port, "server/discover").json();
    CHECK(discovered["result"]["capabilities"]["extensions"][tasks_id] == json::object());
  }
  mcp_server_options options;
  options.max_tasks = 0;
  mcp_served served{options};
  auto at = std::make_shared<gate>();
  REQUIRE(served.server.add_tool(gated(at)).is_ok());
  served.start();
  auto discovered = modern(served.port, "server/discover").json();
  CHECK_FALSE(discovered["result"]["capabilities"].contains("extensions"));
  auto get = task_request(served.port, "tasks/get", "t1");
  CHECK(get.status == 404);
  CHECK(get.json()["error"]["code"] == mcp_code::method_not_found);
  // The hand-off runs in the request.
  at->opened.set_value();
  auto result = call(served.port, "gated").message()["result"];
  CHECK(result["resultType"] == "complete");
  CHECK(result["content"][0]["text"] == "through the gate");
}

TEST_CASE("a hand-off becomes a task for a request declaring the extension: working at once, "
          "then completed with the result inlined") {
  gated_server server;
  auto port = server.start();
  auto& at = server.at;
  auto answer = call(port, "gated");
  REQUIRE(answer.status == 200);
  auto created = answer.message()["result"];
  CHECK(created["resultType"] == "task");
  CHECK(created["status"] == "working");
  CHECK(created["statusMessage"] == "queued");
  CHECK(created["ttlMs"] == 3600000);
  CHECK(created["pollIntervalMs"] == 1000);
  CHECK_FALSE(created.contains("result"));
  CHECK_FALSE(created.contains("requestState"));
  auto task_id = created["taskId"].get<std::string>();
  CHECK(server.served.server.task_count() == 1);

  // Found at once, still working: the work waits at the gate.
  auto working = task_request(port, "tasks/get", task_id).message()["result"];
  CHECK(working["resultType"] == "complete");
  CHECK(working["taskId"] == task_id);
  CHECK(working["status"] == "working");

  at->opened.set_value();
  auto done = once_not(port, task_id, "working");
  CHECK(done["status"] == "completed");
  CHECK(done["result"]["content"][0]["text"] == "through the gate");
  CHECK_FALSE(done["result"].contains("resultType"));
  CHECK_FALSE(done.contains("error"));
}

TEST_CASE("without the extension a hand-off runs in the request, and a tool that needs a task is "
          "refused with -32021 naming the extension") {
  mcp_served served;
  auto at = std::make_shared<gate>();
  at->opened.set_value();
  REQUIRE(served.server.add_tool(gated(at)).is_ok());
  std::atomic<bool> required_ran{false};
  REQUIRE(served.server
            .add_tool(handing_off("needs_task", mcp_task_support::required,
                                  [&required_ran](mcp_call_context&) -> mcp_outcome {
                                    required_ran = true;
                                    return mcp_text_result("ran");
                                  }))
            .is_ok());
  served.start();
  auto plain = call(served.port, "gated", false).message()["result"];
  CHECK(plain["resultType"] == "complete");
  CHECK(plain["content"][0]["text"] == "through the gate");
  CHECK_FALSE(plain.contains("taskId"));
  CHECK(served.server.task_count() == 0);

  auto refused = call(served.port, "needs_task", false);
  CHECK(refused.status == 400);
  CHECK(refused.json()["error"]["code"] == mcp_code::missing_client_capability);
  CHECK(refused.json()["error"]["data"]
        == json{{"requiredCapabilities", {{"extensions", {{tasks_id, json::object()}}}}}});
  CHECK_FALSE(required_ran);
}

TEST_CASE("a tool not marked task-capable runs its hand-off in the request even when the "
          "extension is declared") {
  mcp_served served;
  REQUIRE(served.server
            .add_tool(handing_off("inline", mcp_task_support::none,
                                  [](mcp_call_context& ctx) -> mcp_outcome {
                                    return mcp_text_result("task id: [" + ctx.task_id() + "]");
                                  }))
            .is_ok());
  served.start();
  auto result = call(served.port, "inline").message()["result"];
  CHECK(result["resultType"] == "complete");
  CHECK(result["content"][0]["text"] == "task id: []");
}

TEST_CASE("the tasks methods without the extension declared are 400 -32021") {
  mcp_served served;
  served.start();
  for (const char* method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    json params = {{"_meta", modern_meta()}};
    if (std::string{method} == "tasks/update")
      params["inputResponses"] = json::object();
    auto answer = task_request(served.port, method, "some-task", "alice", params);
    CHECK_MESSAGE(answer.status == 400, method);
    CHECK_MESSAGE(answer.json()["error"]["code"] == mcp_code::missing_client_capability, method);
  }
}

TEST_CASE("another caller's task is unknown to every tasks method, and its cancel leaves the task "
          "running") {
  gated_server server;
  auto port = server.start();
  auto& at = server.at;
  auto task_id = created_task(call(port, "gated", true, "alice"));
  for (const char* method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    json params = {{"inputResponses", {{"value", accepted("x")}}}};
    auto answer = task_request(port, method, task_id, "mallory", params);
    CHECK_MESSAGE(answer.status == 200, method);
    CHECK_MESSAGE(answer.json()["error"]["code"] == mcp_code::invalid_params, method);
    CHECK_MESSAGE(answer.json()["error"]["message"] == "Invalid params: task not found", method);
  }
  CHECK_FALSE(at->saw_cancel);
  at->opened.set_value();
  CHECK(once_not(port, task_id, "working")["status"] == "completed");
}

TEST_CASE("an unknown task id is -32602 to every tasks method, a taskId that is not a string and "
          "tasks/update without an inputResponses object are -32602 too") {
  mcp_served served;
  served.start();
  for (const char* method : {"tasks/get", "tasks/update", "tasks/cancel"}) {
    auto answer = task_request(served.port, method, "never-issued", "alice",
                               {{"inputResponses", json::object()}});
    CHECK_MESSAGE(answer.json()["error"]["code"] == mcp_code::invalid_params, method);
    CHECK_MESSAGE(answer.json()["error"]["message"] == "Invalid params: task not found", method);
  }
  auto numeric = modern(served.port, "tasks/get", {{"taskId", 42}, {"_meta", task_meta()}});
  CHECK(numeric.json()["error"]["message"] == "Invalid params: taskId must be a string");
  auto no_responses = task_request(served.port, "tasks/update", "never-issued");
  CHECK(no_responses.json()["error"]["message"]
        == "Invalid params: inputResponses must be an object");
}

TEST_CASE("an Mcp-Name header that is not the request's taskId is 400 -32020") {
  mcp_served served;
  served.start();
  auto headers = modern_headers("tasks/get", "another-task");
  auto answer =
    mcp_send(served.port, "POST",
             rpc(1, "tasks/get", {{"taskId", "a-task"}, {"_meta", task_meta()}}), headers);
  CHECK(answer.status == 400);
  CHECK(answer.json()["error"]["code"] == mcp_code::header_mismatch);
  auto missing = mcp_send(served.port, "POST",
                          rpc(1, "tasks/get", {{"taskId", "a-task"}, {"_meta", task_meta()}}),
                          modern_headers("tasks/get"));
  CHECK(missing.json()["error"]["message"] == "Missing Mcp-Name header");
}

TEST_CASE("cancelling a working task acks, makes it cancelled and its work sees cancelled(), "
          "cancelling it again acks the same and changes nothing") {
  gated_server server;
  auto port = server.start();
  auto& at = server.at;
  auto task_id = created_task(call(port, "gated"));
  REQUIRE(eventually(at->entered)); // running, not waiting for a worker
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto ack = task_request(port, "tasks/cancel", task_id).message()["result"];
    CHECK(ack == json{{"resultType", "complete"}});
    auto task = task_request(port, "tasks/get", task_id).message()["result"];
    CHECK(task["status"] == "cancelled");
    CHECK_FALSE(task.contains("result"));
  }
  CHECK(eventually(at->saw_cancel));
  // The work's own ending comes after the cancellation and changes nothing.
  CHECK(task_request(port, "tasks/get", task_id).message()["result"]["status"] == "cancelled");
}

TEST_CASE("a work's JSON-RPC error fails its task with the error inlined, a thrown exception is "
          "an internal error, a tool error completes it") {
  mcp_served served;
  REQUIRE(
    served.server
      .add_tool(handing_off("breaks", mcp_task_support::optional,
                            [](mcp_call_context&) -> mcp_outcome {
                              return mcp_error{-32001, "upstream refused", {{"retry", false}}};
                            }))
      .is_ok());
  REQUIRE(served.server
            .add_tool(handing_off(
              "throws", mcp_task_support::optional,
              [](mcp_call_context&) -> mcp_outcome { throw std::runtime_error("secret detail"); }))
            .is_ok());
  REQUIRE(served.server
            .add_tool(handing_off(
              "tool_error", mcp_task_support::optional,
              [](mcp_call_context&) -> mcp_outcome { return mcp_tool_error("no such file"); }))
            .is_ok());
  served.start();
  auto broke = once_not(served.port, created_task(call(served.port, "breaks")), "working");
  CHECK(broke["status"] == "failed");
  CHECK(broke["error"]
        == json{{"code", -32001}, {"message", "upstream refused"}, {"data", {{"retry", false}}}});
  CHECK_FALSE(broke.contains("result"));

  auto threw = once_not(served.port, created_task(call(served.port, "throws")), "working");
  CHECK(threw["status"] == "failed");
  CHECK(threw["error"] == json{{"code", mcp_code::internal_error}, {"message", "internal error"}});
  CHECK(threw.dump().find("secret") == std::string::npos);

  auto erred = once_not(served.port, created_task(call(served.port, "tool_error")), "working");
  CHECK(erred["status"] == "completed");
  CHECK(erred["result"]["isError"] == true);
}

TEST_CASE("a task's input: input_required with its requests, a partial tasks/update keeps it "
          "waiting for the rest, and the last answer completes it") {
  mcp_served served;
  REQUIRE(served.server.add_tool(two_questions()).is_ok());
  served.start();
  auto task_id = created_task(call(served.port, "two_questions"));
  auto asked = once_not(served.port, task_id, "working");
  REQUIRE(asked["status"] == "input_required");
  CHECK(asked["inputRequests"]
        == json{{"name", elicitation("name?")}, {"city", elicitation("city?")}});
  CHECK_FALSE(asked.contains("requestState"));

  auto ack =
    task_request(served.port, "tasks/update", task_id, "alice",
                 {{"inputResponses", {{"name", accepted("Ada")}, {"unknown", accepted("x")}}}});
  CHECK(ack.message()["result"] == json{{"resultType", "complete"}});
  auto waiting = task_request(served.port, "tasks/get", task_id).message()["result"];
  CHECK(waiting["status"] == "input_required");
  CHECK(waiting["inputRequests"] == json{{"city", elicitation("city?")}});

  task_request(served.port, "tasks/update", task_id, "alice",
               {{"inputResponses", {{"city", accepted("London")}}}});
  auto done = once_not(served.port, task_id, "working");
  CHECK(done["status"] == "completed");
  CHECK(done["result"]["content"][0]["text"] == R"(Ada of London {"asked":true})");
}

TEST_CASE("tasks/update answering an outstanding request with a non-object is -32602 and stores "
          "nothing") {
  mcp_served served;
  REQUIRE(served.server.add_tool(two_questions()).is_ok());
  served.start();
  auto task_id = created_task(call(served.port, "two_questions"));
  REQUIRE(once_not(served.port, task_id, "working")["status"] == "input_required");
  auto refused = task_request(served.port, "tasks/update", task_id, "alice",
                              {{"inputResponses", {{"name", accepted("Ada")}, {"city", 12345}}}});
  CHECK(refused.json()["error"]["code"] == mcp_code::invalid_params);
  CHECK(refused.json()["error"]["message"]
        == "Invalid params: inputResponses.city must be an object");
  auto task = task_request(served.port, "tasks/get", task_id).message()["result"];
  CHECK(task["inputRequests"].size() == 2);
}

TEST_CASE("a task's work asking for input the client did not declare fails the task with -32021") {
  mcp_served served;
  REQUIRE(served.server.add_tool(two_questions()).is_ok());
  served.start();
  json meta = modern_meta({{"extensions", {{tasks_id, json::object()}}}}); // no elicitation
  auto task_id = created_task(
    modern(served.port, "tools/call", {{"name", "two_questions"}, {"_meta", meta}}, as("alice")));
  auto failed = once_not(served.port, task_id, "working");
  CHECK(failed["status"] == "failed");
  CHECK(failed["error"]["code"] == mcp_code::missing_client_capability);
}

TEST_CASE("past max_tasks_per_principal a hand-off that would be a task fails with -32603, and "
          "another caller still gets one") {
  mcp_server_options options;
  options.max_tasks_per_principal = 2;
  gated_server server{options};
  auto port = server.start();
  auto& at = server.at;
  created_task(call(port, "gated", true, "alice"));
  created_task(call(port, "gated", true, "alice"));
  auto refused = call(port, "gated", true, "alice").message();
  CHECK(refused["error"]["code"] == mcp_code::internal_error);
  CHECK(refused["error"]["message"] == "too many tasks of this caller; wait for some to expire");
  created_task(call(port, "gated", true, "bob"));
  CHECK(server.served.server.task_count() == 3);
  at->opened.set_value();
}

TEST_CASE("tasks/result and tasks/list do not exist in the extension: -32601") {
  mcp_served served;
  served.start();
  for (const char* method : {"tasks/result", "tasks/list"}) {
    auto answer = task_request(served.port, method, "some-task");
    CHECK_MESSAGE(answer.status == 404, method);
    CHECK_MESSAGE(answer.json()["error"]["code"] == mcp_code::method_not_found, method);
  }
}

TEST_CASE("input gathered before the hand-off stays synchronous, and the task's result reflects "
          "it") {
  mcp_served served;
  mcp_tool tool;
  tool.name = "ask_then_task";
  tool.task_support = mcp_task_support::required;
  tool.handler = [](const json&, mcp_call_context& ctx) -> mcp_outcome {
    const auto& answers = ctx.input_responses();
    if (!answers.contains("who")) {
      mcp_input_required input;
      input.input_requests = {{"who", elicitation("who?")}};
      return input;
    }
    auto who = answers["who"]["content"].value("value", "");
    return mcp_run_as_task{
      [who](mcp_call_context&) -> mcp_outcome { return mcp_text_result("Hello, " + who); }, {}};
  };
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto first = call(served.port, "ask_then_task").message()["result"];
  CHECK(first["resultType"] == "input_required");
  CHECK_FALSE(first.contains("taskId"));
  auto second = modern(served.port, "tools/call",
                       {{"name", "ask_then_task"},
                        {"inputResponses", {{"who", accepted("Alice")}}},
                        {"_meta", task_meta()}},
                       as("alice"))
                  .message()["result"];
  REQUIRE(second["resultType"] == "task");
  CHECK_FALSE(second.contains("requestState"));
  auto done = once_not(served.port, second["taskId"].get<std::string>(), "working");
  CHECK(done["result"]["content"][0]["text"] == "Hello, Alice");
}

TEST_CASE("progress a task's work reports becomes its statusMessage") {
  mcp_served served;
  auto at = std::make_shared<gate>();
  REQUIRE(served.server
            .add_tool(handing_off("reporter", mcp_task_support::optional,
                                  [at](mcp_call_context& ctx) -> mcp_outcome {
                                    ctx.progress(1, 2, "half way");
                                    ctx.log(mcp_log_level::error, "nobody hears this");
                                    return at->pass(ctx, "done");
                                  }))
            .is_ok());
  served.start();
  auto task_id = created_task(call(served.port, "reporter"));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  json task;
  do
    task = task_request(served.port, "tasks/get", task_id).message()["result"];
  while (task.value("statusMessage", "") != "half way"
         && std::chrono::steady_clock::now() < deadline);
  CHECK(task["statusMessage"] == "half way");
  CHECK(task["status"] == "working");
  at->opened.set_value();
}

TEST_CASE("a listen stream naming the caller's task hears its status changes, another caller's "
          "task is left out of the ack, naming tasks without the extension is -32021") {
  gated_server server; // both tasks are cancelled below: the gate stays shut
  auto port = server.start();
  auto mine = created_task(call(port, "gated", true, "alice"));
  auto theirs = created_task(call(port, "gated", true, "bob"));

  auto undeclared =
    modern(port, "subscriptions/listen",
           {{"notifications", {{"taskIds", {mine}}}}, {"_meta", modern_meta()}}, as("alice"));
  CHECK(undeclared.status == 400);
  CHECK(undeclared.json()["error"]["code"] == mcp_code::missing_client_capability);

  auto headers = modern_headers("subscriptions/listen");
  headers.emplace_back("X-Test-Principal", "alice");
  bool cancelled = false;
  auto stream =
    mcp_send(port, "POST",
             rpc(9, "subscriptions/listen",
                 {{"notifications", {{"taskIds", {mine, theirs}}}}, {"_meta", task_meta()}}),
             headers, [&](const std::string& body) {
               if (!cancelled && body.find("acknowledged") != std::string::npos) {
                 cancelled = true;
                 // Bob's first: were it heard here, it would be the first notification.
                 task_request(port, "tasks/cancel", theirs, "bob");
                 task_request(port, "tasks/cancel", mine);
               }
               return body.find("notifications/tasks") != std::string::npos;
             });
  auto events = stream.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0]["params"]["notifications"]["taskIds"] == json::array({mine}));
  CHECK(events[1]["method"] == "notifications/tasks");
  CHECK(events[1]["params"]["taskId"] == mine);
  CHECK(events[1]["params"]["status"] == "cancelled");
  CHECK(events[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 9);
}

TEST_CASE("stop cancels running work and waits for it to return") {
  auto at = std::make_shared<gate>();
  {
    mcp_served served;
    REQUIRE(served.server.add_tool(gated(at)).is_ok());
    served.start();
    created_task(call(served.port, "gated"));
    REQUIRE(eventually(at->entered));
    served.server.stop();
    CHECK(at->saw_cancel); // returned before stop() did
  }
}
