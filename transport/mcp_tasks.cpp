#include "transport/mcp_tasks.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include "transport/auth/auth_crypto.hpp"

namespace voxos {

namespace {

constexpr std::size_t task_id_bytes = 16;

/// ISO 8601 in UTC with milliseconds: "2026-07-28T10:30:00.123Z".
std::string iso_time(std::chrono::system_clock::time_point when) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  auto length = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + length, sizeof text - length, ".%03dZ", static_cast<int>(ms % 1000));
  return text;
}

bool terminal(mcp_task_status status) {
  return status == mcp_task_status::completed || status == mcp_task_status::failed
         || status == mcp_task_status::cancelled;
}

} // namespace

std::string_view to_string(mcp_task_status status) {
  switch (status) {
  case mcp_task_status::working:
    return "working";
  case mcp_task_status::input_required:
    return "input_required";
  case mcp_task_status::completed:
    return "completed";
  case mcp_task_status::failed:
    return "failed";
  case mcp_task_status::cancelled:
    return "cancelled";
  }
  return "failed";
}

bool mcp_declares_tasks(const nlohmann::json& capabilities) {
  if (!capabilities.is_object())
    return false;
  auto extensions = capabilities.find("extensions");
  if (extensions == capabilities.end() || !extensions->is_object())
    return false;
  auto tasks = extensions->find(mcp_tasks_extension);
  return tasks != extensions->end() && tasks->is_object();
}

// -- mcp_task_table ---------------------------------------------------------------

struct mcp_task_table::task {
  std::string id;
  std::string principal;
  mcp_task_status status = mcp_task_status::working;
  std::string status_message;
  std::chrono::system_clock::time_point created;
  std::chrono::system_clock::time_point updated;
  clock::time_point expires;
  nlohmann::json result;
  nlohmann::json error;
  // input_required: the outstanding requests by the keys the client sees,
  // the work's key of each, the answers so far (by the work's keys), the
  // work's state, and every key ever issued (never reused).
  nlohmann::json outstanding = nlohmann::json::object();
  std::map<std::string, std::string> work_key;
  nlohmann::json answers = nlohmann::json::object();
  std::optional<nlohmann::json> state;
  std::size_t round = 0;
  std::set<std::string> issued;
  std::shared_ptr<const mcp_task_job> job;
  std::shared_ptr<std::atomic<bool>> cancelled;
};

mcp_task_table::mcp_task_table(limits bounds) : limits_(bounds) {}

mcp_task_table::~mcp_task_table() = default;

void mcp_task_table::on_change(change_hook hook) {
  std::lock_guard lock{mutex_};
  hook_ = std::move(hook);
}

result<nlohmann::json> mcp_task_table::create(std::shared_ptr<const mcp_task_job> job,
                                              std::string status_message, mcp_task_run& first_run) {
  auto now = clock::now();
  std::lock_guard lock{mutex_};
  sweep(now);
  if (tasks_.size() >= limits_.max_tasks)
    return status::error(errc::unavailable, "too many tasks; try again later");
  const auto& principal = job->caller->principal;
  std::size_t own = 0;
  for (const auto& [id, entry] : tasks_)
    own += entry->principal == principal ? 1 : 0;
  if (own >= limits_.max_per_principal)
    return status::error(errc::unavailable,
                         "too many tasks of this caller; wait for some to expire");
  auto entry = std::make_unique<task>();
  do
    entry->id = auth::random_base64url(task_id_bytes);
  while (tasks_.count(entry->id) != 0);
  entry->principal = principal;
  entry->status_message = std::move(status_message);
  entry->created = entry->updated = std::chrono::system_clock::now();
  entry->expires = now + limits_.ttl;
  entry->job = job;
  entry->cancelled = std::make_shared<std::atomic<bool>>(false);
  first_run = mcp_task_run{entry->id, std::move(job),  nlohmann::json::object(), std::nullopt,
                           0,         entry->cancelled};
  auto seed = detailed(*entry);
  tasks_.emplace(entry->id, std::move(entry));
  return seed;
}

std::optional<nlohmann::json> mcp_task_table::get(std::string_view id, std::string_view principal) {
  std::lock_guard lock{mutex_};
  sweep(clock::now());
  auto* entry = find(id, &principal);
  if (!entry)
    return std::nullopt;
  return detailed(*entry);
}

mcp_task_update mcp_task_table::update(std::string_view id, std::string_view principal,
                                       const nlohmann::json& responses) {
  std::unique_lock lock{mutex_};
  sweep(clock::now());
  mcp_task_update out;
  auto* entry = find(id, &principal);
  if (!entry)
    return out;
  out.known = true;
  if (entry->status != mcp_task_status::input_required)
    return out; // nothing is outstanding: every key is one to ignore
  // Checked whole before anything is taken.
  for (const auto& [key, answer] : responses.items())
    if (entry->outstanding.contains(key) && !answer.is_object()) {
      out.bad_key = key;
      return out;
    }
  bool took = false;
  for (const auto& [key, answer] : responses.items()) {
    if (!entry->outstanding.contains(key))
      continue;
    entry->answers[entry->work_key[key]] = answer;
    entry->outstanding.erase(key);
    took = true;
  }
  if (!took)
    return out;
  if (!entry->outstanding.empty()) {
    changed(*entry, mcp_task_status::input_required, lock);
    return out;
  }
  out.resumed = mcp_task_run{entry->id,    entry->job,   std::move(entry->answers),
                             entry->state, entry->round, entry->cancelled};
  entry->answers = nlohmann::json::object();
  entry->work_key.clear();
  changed(*entry, mcp_task_status::working, lock);
  return out;
}

bool mcp_task_table::cancel(std::string_view id, std::string_view principal) {
  std::unique_lock lock{mutex_};
  sweep(clock::now());
  auto* entry = find(id, &principal);
  if (!entry)
    return false;
  if (terminal(entry->status))
    return true;
  *entry->cancelled = true;
  entry->outstanding = nlohmann::json::object();
  entry->status_message = "cancelled at the client's request";
  changed(*entry, mcp_task_status::cancelled, lock);
  return true;
}

bool mcp_task_table::runnable(const std::string& id) {
  std::lock_guard lock{mutex_};
  auto* entry = find(id, nullptr);
  return entry && entry->status == mcp_task_status::working && !*entry->cancelled;
}

void mcp_task_table::complete(const std::string& id, nlohmann::json result) {
  std::unique_lock lock{mutex_};
  auto* entry = find(id, nullptr);
  if (!entry || terminal(entry->status))
    return;
  entry->result = std::move(result);
  changed(*entry, mcp_task_status::completed, lock);
}

void mcp_task_table::fail(const std::string& id, int64_t code, const std::string& message,
                          const nlohmann::json& data) {
  std::unique_lock lock{mutex_};
  auto* entry = find(id, nullptr);
  if (!entry || terminal(entry->status))
    return;
  entry->error = {{"code", code}, {"message", message}};
  if (!data.is_null())
    entry->error["data"] = data;
  entry->status_message = message;
  changed(*entry, mcp_task_status::failed, lock);
}

void mcp_task_table::ask(const std::string& id, const nlohmann::json& input_requests,
                         std::optional<nlohmann::json> state, std::size_t round) {
  std::unique_lock lock{mutex_};
  auto* entry = find(id, nullptr);
  if (!entry || entry->status != mcp_task_status::working)
    return;
  entry->outstanding = nlohmann::json::object();
  entry->work_key.clear();
  for (const auto& [key, request] : input_requests.items()) {
    // The work's own key while it is fresh; a key it used before gets a
    // suffix, so no key names two requests over the task's life.
    std::string client_key = key;
    for (std::size_t suffix = 2; entry->issued.count(client_key) != 0; ++suffix)
      client_key = key + "-" + std::to_string(suffix);
    entry->issued.insert(client_key);
    entry->outstanding[client_key] = request;
    entry->work_key[client_key] = key;
  }
  entry->answers = nlohmann::json::object();
  entry->state = std::move(state);
  entry->round = round;
  changed(*entry, mcp_task_status::input_required, lock);
}

void mcp_task_table::set_status_message(const std::string& id, std::string message) {
  std::lock_guard lock{mutex_};
  auto* entry = find(id, nullptr);
  if (!entry || terminal(entry->status))
    return;
  entry->status_message = std::move(message);
  entry->updated = std::chrono::system_clock::now();
}

void mcp_task_table::stop() {
  std::lock_guard lock{mutex_};
  for (const auto& [id, entry] : tasks_)
    *entry->cancelled = true;
}

std::size_t mcp_task_table::size() const {
  std::lock_guard lock{mutex_};
  return tasks_.size();
}

void mcp_task_table::sweep(clock::time_point now) {
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    if (now >= it->second->expires) {
      *it->second->cancelled = true;
      it = tasks_.erase(it);
    } else {
      ++it;
    }
  }
}

mcp_task_table::task* mcp_task_table::find(std::string_view id, const std::string_view* principal) {
  auto found = tasks_.find(id);
  if (found == tasks_.end() || (principal && found->second->principal != *principal))
    return nullptr;
  return found->second.get();
}

nlohmann::json mcp_task_table::detailed(const task& entry) const {
  nlohmann::json out = {{"taskId", entry.id},
                        {"status", to_string(entry.status)},
                        {"createdAt", iso_time(entry.created)},
                        {"lastUpdatedAt", iso_time(entry.updated)},
                        {"ttlMs", limits_.ttl.count()},
                        {"pollIntervalMs", limits_.poll_interval.count()}};
  if (!entry.status_message.empty())
    out["statusMessage"] = entry.status_message;
  if (entry.status == mcp_task_status::input_required)
    out["inputRequests"] = entry.outstanding;
  else if (entry.status == mcp_task_status::completed)
    out["result"] = entry.result;
  else if (entry.status == mcp_task_status::failed)
    out["error"] = entry.error;
  return out;
}

void mcp_task_table::changed(task& entry, mcp_task_status status,
                             std::unique_lock<std::mutex>& lock) {
  entry.status = status;
  entry.updated = std::chrono::system_clock::now();
  if (!hook_) {
    lock.unlock();
    return;
  }
  auto hook = hook_;
  auto principal = entry.principal;
  auto id = entry.id;
  auto now = detailed(entry);
  lock.unlock();
  hook(principal, id, now);
}

// -- mcp_task_pool ----------------------------------------------------------------

bool mcp_task_pool::post(std::function<void()> job) {
  std::lock_guard lock{mutex_};
  if (stopped_)
    return false;
  if (workers_.empty())
    for (std::size_t worker_idx = 0; worker_idx < std::max<std::size_t>(threads_, 1); ++worker_idx)
      workers_.emplace_back([this] { loop(); });
  jobs_.push_back(std::move(job));
  ready_.notify_one();
  return true;
}

void mcp_task_pool::stop() {
  std::deque<std::function<void()>> dropped;
  std::vector<std::thread> workers;
  {
    std::lock_guard lock{mutex_};
    stopped_ = true;
    dropped.swap(jobs_);
    workers.swap(workers_);
    ready_.notify_all();
  }
  // Outside the lock: a dropped job's captures may own what stops this pool.
  dropped.clear();
  for (auto& worker : workers) {
    if (worker.get_id() == std::this_thread::get_id())
      worker.detach(); // stopped from one of its own jobs: it ends after that job
    else
      worker.join();
  }
}

void mcp_task_pool::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock{mutex_};
      ready_.wait(lock, [this] { return stopped_ || !jobs_.empty(); });
      if (stopped_)
        return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

} // namespace voxos
