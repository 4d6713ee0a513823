// The tasks extension of the MCP server (mcp_server.hpp, mcp_tasks.hpp): a
// hand-off made a task, its work's runs on the task workers, and the
// methods tasks/get, tasks/update and tasks/cancel.
#include "transport/mcp_server_state.hpp"

#include <utility>
#include <variant>

namespace voxos {

using namespace mcp_detail;

namespace {

/// Runs one run of a task's work on a task worker and records how it ended.
void run_task(const std::shared_ptr<mcp_server_state>& state_ptr, const mcp_task_run& run) {
  auto& state = *state_ptr;
  auto& tasks = state.tasks;
  if (!tasks.runnable(run.task_id))
    return; // cancelled or discarded while it waited for a worker
  const auto& id = run.task_id;
  auto ctx = mcp_call_run::task_context(
    run, [state_ptr] { return state_ptr->stopping.load(); },
    [state_ptr, id](std::string message) {
      state_ptr->tasks.set_status_message(id, std::move(message));
    });
  auto outcome = invoke(run.job->method, run.job->work, ctx);
  if (auto* result = std::get_if<nlohmann::json>(&outcome)) {
    if (result->is_object())
      tasks.complete(id, std::move(*result));
    else
      tasks.fail(id, mcp_code::internal_error, "the handler's result is not an object", nullptr);
    return;
  }
  if (auto* error = std::get_if<mcp_error>(&outcome)) {
    tasks.fail(id, error->code, error->message, error->data);
    return;
  }
  if (std::holds_alternative<mcp_run_as_task>(outcome)) {
    tasks.fail(id, mcp_code::internal_error, "the handed-off work handed off again", nullptr);
    return;
  }
  auto& input = std::get<mcp_input_required>(outcome);
  if (input.input_requests.is_object() && input.input_requests.empty()) {
    tasks.fail(id, mcp_code::internal_error,
               "the task's work asked for input without an input request", nullptr);
    return;
  }
  if (auto refused = check_input(input, ctx)) {
    tasks.fail(id, refused->code, refused->message, refused->data);
    return;
  }
  if (run.round + 1 >= state.options.max_input_rounds) {
    tasks.fail(id, mcp_code::internal_error, "the task asked for input too many times", nullptr);
    return;
  }
  tasks.ask(id, input.input_requests, std::move(input.state), run.round + 1);
}

/// Hands a run to the task workers.
void post_run(const std::shared_ptr<mcp_server_state>& state_ptr, mcp_task_run run) {
  std::weak_ptr<mcp_server_state> weak = state_ptr;
  bool posted = state_ptr->task_pool.post([weak, run = std::move(run)] {
    if (auto state = weak.lock())
      run_task(state, run);
  });
  (void)posted; // refused only once the server stops, when no task runs any more
}

std::string task_error_text(const jsonrpc_id& id, const mcp_error& error) {
  return error_text(id, error.code, error.message, error.data);
}

} // namespace

namespace mcp_detail {

mcp_error tasks_not_declared() {
  nlohmann::json required = {
    {"extensions", {{std::string{mcp_tasks_extension}, nlohmann::json::object()}}}};
  return {mcp_code::missing_client_capability,
          "Missing required client capability",
          {{"requiredCapabilities", std::move(required)}}};
}

std::string start_task(const std::shared_ptr<mcp_server_state>& state_ptr,
                       const mcp_request_info& info, const std::string& method,
                       mcp_run_as_task handoff, const jsonrpc_id& id) {
  auto job = std::make_shared<mcp_task_job>();
  job->method = method;
  job->caller = info.caller;
  job->version = info.version;
  job->capabilities = info.capabilities;
  job->client_info = info.client_info;
  job->work = std::move(handoff.work);
  mcp_task_run first;
  auto created = state_ptr->tasks.create(std::move(job), std::move(handoff.status_message), first);
  if (!created)
    return task_error_text(id, {mcp_code::internal_error, created.error().message(), nullptr});
  // Stored before the answer goes out: a tasks/get right after it finds the task.
  post_run(state_ptr, std::move(first));
  auto result = std::move(*created);
  result["resultType"] = "task";
  return response_text(id, result);
}

bool is_task_method(std::string_view method) {
  return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel";
}

void serve_task_method(const std::shared_ptr<mcp_server_state>& state_ptr,
                       const mcp_request_info& info, const jsonrpc_id& id,
                       const std::string& method, const nlohmann::json& params,
                       httplib::Response& res) {
  auto& state = *state_ptr;
  auto refuse = [&](int http_status, const mcp_error& error) {
    answer_error(res, http_status, id, error.code, error.message, error.data);
  };
  if (!mcp_declares_tasks(info.capabilities)) {
    refuse(400, tasks_not_declared());
    return;
  }
  if (!params.contains("taskId") || !params["taskId"].is_string()) {
    refuse(200, {mcp_code::invalid_params, "Invalid params: taskId must be a string", nullptr});
    return;
  }
  const auto task_id = params["taskId"].get<std::string>();
  const auto& principal = info.caller->principal;
  const mcp_error unknown{mcp_code::invalid_params, "Invalid params: task not found", nullptr};
  nlohmann::json ack = {{"resultType", "complete"}};

  if (method == "tasks/get") {
    auto found = state.tasks.get(task_id, principal);
    if (!found) {
      refuse(200, unknown);
      return;
    }
    (*found)["resultType"] = "complete";
    answer(res, 200, response_text(id, *found));
    return;
  }
  if (method == "tasks/cancel") {
    if (!state.tasks.cancel(task_id, principal)) {
      refuse(200, unknown);
      return;
    }
    answer(res, 200, response_text(id, ack));
    return;
  }
  // tasks/update
  if (!params.contains("inputResponses") || !params["inputResponses"].is_object()) {
    refuse(200,
           {mcp_code::invalid_params, "Invalid params: inputResponses must be an object", nullptr});
    return;
  }
  auto updated = state.tasks.update(task_id, principal, params["inputResponses"]);
  if (!updated.known) {
    refuse(200, unknown);
    return;
  }
  if (updated.bad_key) {
    refuse(200,
           {mcp_code::invalid_params,
            "Invalid params: inputResponses." + *updated.bad_key + " must be an object", nullptr});
    return;
  }
  if (updated.resumed)
    post_run(state_ptr, std::move(*updated.resumed));
  answer(res, 200, response_text(id, ack));
}

} // namespace mcp_detail

} // namespace voxos
