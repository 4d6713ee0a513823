// The tasks of the MCP server's tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663, served at 2026-07-28): each a state machine bound to the caller
// who created it, the table of them, bounded in number (all, and per caller)
// and each kept for its TTL from creation, and the worker threads that run
// their work. Part of mcp_server; CAF-free.
//
//   working --work asks for input--> input_required --every answer in--> working
//   working --work ends--> completed (a result, isError too) | failed (a JSON-RPC error)
//   working | input_required --tasks/cancel--> cancelled
//   any --TTL past--> discarded (unknown from then on; running work sees cancelled())
//
// A task of another principal, an expired one and one never issued are the
// same to a caller: unknown.
//
// Threading: every member may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"
#include "transport/mcp_server.hpp"

namespace voxos {

/// The extension's identifier (capabilities.extensions key).
inline constexpr std::string_view mcp_tasks_extension = "io.modelcontextprotocol/tasks";

enum class mcp_task_status : uint8_t { working, input_required, completed, failed, cancelled };

/// "working", "input_required", "completed", "failed" or "cancelled".
std::string_view to_string(mcp_task_status status);

/// True if a request's client capabilities declare the tasks extension.
bool mcp_declares_tasks(const nlohmann::json& capabilities);

/// What a task's work runs with: the creating request's context, kept for
/// the task's life, and the work itself.
struct mcp_task_job {
  std::string method; ///< the request the task stands for ("tools/call")
  std::shared_ptr<const mcp_caller> caller;
  std::string version;
  nlohmann::json capabilities = nlohmann::json::object();
  nlohmann::json client_info;
  std::function<mcp_outcome(mcp_call_context&)> work;
};

/// One run of a task's work, for a worker: the first, or one after the
/// client answered every input request of the previous run.
struct mcp_task_run {
  std::string task_id;
  std::shared_ptr<const mcp_task_job> job;
  nlohmann::json input_responses = nlohmann::json::object(); ///< by the work's own keys
  std::optional<nlohmann::json> state;                       ///< the previous run's
  std::size_t round = 0;                                     ///< input rounds so far
  std::shared_ptr<std::atomic<bool>> cancelled;
};

/// What tasks/update did.
struct mcp_task_update {
  bool known = false;                  ///< false: unknown task (nothing stored)
  std::optional<std::string> bad_key;  ///< an outstanding key whose answer is not an object
  std::optional<mcp_task_run> resumed; ///< every input answered: run this
};

/// The live tasks, by id.
class mcp_task_table {
public:
  struct limits {
    std::size_t max_tasks = 0;
    std::size_t max_per_principal = 0;
    std::chrono::milliseconds ttl{0};
    std::chrono::milliseconds poll_interval{0};
  };
  /// Called (outside the table's lock) with the principal, the task id and
  /// the task's DetailedTask each time a task's status changes.
  using change_hook =
    std::function<void(const std::string&, const std::string&, const nlohmann::json&)>;

  explicit mcp_task_table(limits bounds);
  ~mcp_task_table();
  mcp_task_table(const mcp_task_table&) = delete;
  mcp_task_table& operator=(const mcp_task_table&) = delete;

  void on_change(change_hook hook);

  /// A new working task of `principal` (id: 128 random bits, base64url) and
  /// its first run; the Task object (CreateTaskResult's fields without
  /// resultType). Errors: unavailable at max_tasks, or at max_per_principal
  /// of this principal's.
  result<nlohmann::json> create(std::shared_ptr<const mcp_task_job> job, std::string status_message,
                                mcp_task_run& first_run);

  /// The DetailedTask (tasks/get without resultType); nullopt if unknown.
  std::optional<nlohmann::json> get(std::string_view id, std::string_view principal);

  /// tasks/update: the answers to outstanding input requests (keys not
  /// outstanding are ignored). A task whose every request is answered goes
  /// back to working and its next run is handed back.
  mcp_task_update update(std::string_view id, std::string_view principal,
                         const nlohmann::json& responses);

  /// tasks/cancel: a working or input_required task becomes cancelled (its
  /// work sees cancelled()); a terminal one stays as it is. False if unknown.
  bool cancel(std::string_view id, std::string_view principal);

  /// Whether a run should still go ahead (the task is live and working).
  bool runnable(const std::string& id);

  /// A run's end: a result (completed), an error (failed), or input
  /// requests by the work's keys with its state (input_required; the keys
  /// the client sees are unique over the task's life). Ignored when the task
  /// is gone or already terminal.
  void complete(const std::string& id, nlohmann::json result);
  void fail(const std::string& id, int64_t code, const std::string& message,
            const nlohmann::json& data);
  void ask(const std::string& id, const nlohmann::json& input_requests,
           std::optional<nlohmann::json> state, std::size_t round);
  /// A working task's statusMessage (progress reported by its work).
  void set_status_message(const std::string& id, std::string message);

  /// Marks every task's work cancelled (the server stops).
  void stop();
  std::size_t size() const;

private:
  struct task;
  using clock = std::chrono::steady_clock;

  /// Drops tasks past their TTL; mutex_ held.
  void sweep(clock::time_point now);
  /// The live task `id` of `principal` (any principal when null); mutex_ held.
  task* find(std::string_view id, const std::string_view* principal);
  /// The task's DetailedTask; mutex_ held.
  nlohmann::json detailed(const task& entry) const;
  /// Moves a task to `status` and tells the hook; called with `lock` held,
  /// releases it.
  void changed(task& entry, mcp_task_status status, std::unique_lock<std::mutex>& lock);

  limits limits_;
  change_hook hook_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<task>, std::less<>> tasks_;
};

/// A fixed set of worker threads, started on the first job, running jobs in
/// order. stop() drops the jobs not started and waits for the running ones.
class mcp_task_pool {
public:
  explicit mcp_task_pool(std::size_t threads) : threads_(threads) {}
  ~mcp_task_pool() { stop(); }
  mcp_task_pool(const mcp_task_pool&) = delete;
  mcp_task_pool& operator=(const mcp_task_pool&) = delete;

  /// Queues `job`; false once stopped.
  bool post(std::function<void()> job);
  void stop();

private:
  void loop();

  std::size_t threads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool stopped_ = false;
};

} // namespace voxos
