#include "actors/metrics/node_metrics.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "config/clock.hpp"

namespace voxos {

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

/// One unlabelled sample of `type` (counter, gauge) with its header.
void sample(std::string& out, const char* name, const char* type, const char* help,
            uint64_t value) {
  header(out, name, type, help);
  out += name;
  out += ' ';
  out += std::to_string(value);
  out += '\n';
}

void counter(std::string& out, const char* name, const char* help, uint64_t value) {
  sample(out, name, "counter", help, value);
}

void gauge(std::string& out, const char* name, const char* help, uint64_t value) {
  sample(out, name, "gauge", help, value);
}

std::string seconds(uint64_t micros) {
  auto whole = micros / 1000000;
  auto frac = micros % 1000000;
  auto text = std::to_string(frac);
  return std::to_string(whole) + "." + std::string(6 - text.size(), '0') + text;
}

} // namespace

void actor_counters::on_message(uint64_t depth) noexcept {
  messages.fetch_add(1, std::memory_order_relaxed);
  mailbox_depth.store(depth, std::memory_order_relaxed);
  auto prev = mailbox_depth_max.load(std::memory_order_relaxed);
  while (depth > prev
         && !mailbox_depth_max.compare_exchange_weak(prev, depth, std::memory_order_relaxed)) {
  }
}

void latency_histogram::observe(uint64_t micros) noexcept {
  std::size_t idx = 0;
  while (idx < bounds_us.size() && micros > bounds_us[idx])
    ++idx;
  buckets_[idx].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_us_.fetch_add(micros, std::memory_order_relaxed);
}

void latency_histogram::render(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (std::size_t idx = 0; idx < buckets_.size(); ++idx) {
    cumulative += buckets_[idx].load(std::memory_order_relaxed);
    out += name;
    out += "_bucket{le=\"";
    out += idx < bounds_us.size() ? seconds(bounds_us[idx]) : std::string{"+Inf"};
    out += "\"} ";
    out += std::to_string(cumulative);
    out += '\n';
  }
  out += name + "_sum " + seconds(sum_us()) + "\n";
  out += name + "_count " + std::to_string(count()) + "\n";
}

node_metrics::node_metrics() : started_us_(wall_clock_us()) {}

actor_counters& node_metrics::actor(const std::string& kind) {
  std::lock_guard<std::mutex> guard{kinds_mutex_};
  auto& slot = kinds_[kind];
  if (!slot)
    slot = std::make_unique<actor_counters>();
  return *slot;
}

std::string node_metrics::prometheus(int64_t running_actors) const {
  std::string out;
  out.reserve(4096);
  header(out, "voxos_actors_running_total", "gauge", "Actors running in the actor system.");
  out += "voxos_actors_running_total " + std::to_string(running_actors) + "\n";
  {
    std::lock_guard<std::mutex> guard{kinds_mutex_};
    header(out, "voxos_actors_running", "gauge", "Actors running, by kind.");
    for (auto& [kind, c] : kinds_)
      out +=
        "voxos_actors_running{kind=\"" + kind + "\"} " + std::to_string(c->running.load()) + "\n";
    header(out, "voxos_actor_messages_total", "counter", "Messages handled, by actor kind.");
    for (auto& [kind, c] : kinds_)
      out += "voxos_actor_messages_total{kind=\"" + kind + "\"} "
             + std::to_string(c->messages.load()) + "\n";
    header(out, "voxos_actor_mailbox_depth", "gauge",
           "Mailbox depth last sampled inside the actor, by kind.");
    for (auto& [kind, c] : kinds_)
      out += "voxos_actor_mailbox_depth{kind=\"" + kind + "\"} "
             + std::to_string(c->mailbox_depth.load()) + "\n";
    header(out, "voxos_actor_mailbox_depth_max", "gauge",
           "Highest mailbox depth sampled, by kind.");
    for (auto& [kind, c] : kinds_)
      out += "voxos_actor_mailbox_depth_max{kind=\"" + kind + "\"} "
             + std::to_string(c->mailbox_depth_max.load()) + "\n";
  }
  counter(out, "voxos_event_store_appended_events_total", "Events durably appended.",
          appended_events.load());
  counter(out, "voxos_event_store_append_requests_total", "Append requests received.",
          append_requests.load());
  counter(out, "voxos_event_store_append_failures_total", "Append requests refused or failed.",
          append_failures.load());
  counter(out, "voxos_event_store_write_batches_total",
          "RocksDB write batches (one WAL sync each).", write_batches.load());
  struct histogram_line {
    const latency_histogram& values;
    const char* name;
    const char* help;
  };
  for (const auto& h : {
         histogram_line{sync_latency, "voxos_event_store_sync_seconds",
                        "Duration of one batched RocksDB write with WAL sync."},
         histogram_line{append_latency, "voxos_event_store_append_seconds",
                        "Append request arrival to acknowledgement."},
         histogram_line{wave_latency, "voxos_run_wave_seconds",
                        "Duration of one wave of tool calls, sent until its last answer."},
         histogram_line{call_latency, "voxos_run_call_seconds",
                        "A tool call sent in a wave: its round's start to its answer."},
       }) {
    header(out, h.name, "histogram", h.help);
    h.values.render(out, h.name);
  }
  gauge(out, "voxos_event_store_bytes",
        "Bytes in the event store's SST files and memtables (sampled).", store_bytes.load());
  counter(out, "voxos_http_requests_total", "HTTP API requests answered.", http_requests.load());
  counter(out, "voxos_http_errors_total", "HTTP API responses with status >= 400.",
          http_errors.load());
  header(out, "voxos_http_held_requests", "gauge",
         "HTTP requests holding a worker thread while they wait (streams, tool-call rounds).");
  out += "voxos_http_held_requests " + std::to_string(http_held_requests.load()) + "\n";
  counter(out, "voxos_http_held_refused_total",
          "HTTP requests refused because the node or their tenant held as many as allowed.",
          http_held_refused.load());
  header(out, "voxos_run_host_hosted_runs", "gauge",
         "Runs the CAF run host remembers for the agent hosts that started them.");
  out += "voxos_run_host_hosted_runs " + std::to_string(hosted_runs.load()) + "\n";
  header(out, "voxos_work_pending", "gauge", "Queued work items not settled, across tenants.");
  out += "voxos_work_pending " + std::to_string(work_pending.load()) + "\n";
  header(out, "voxos_work_workers", "gauge", "Worker actors of agent hosts registered.");
  out += "voxos_work_workers " + std::to_string(work_workers.load()) + "\n";
  counter(out, "voxos_work_enqueued_total", "Work items queued (scheduled turns, child runs).",
          work_enqueued.load());
  counter(out, "voxos_work_completed_total", "Work items completed with their answer.",
          work_completed.load());
  counter(out, "voxos_work_failed_total", "Work items recorded failed or cancelled.",
          work_failed.load());
  counter(out, "voxos_work_redelivered_total",
          "Leases that expired or whose host went away; their items were offered again.",
          work_redelivered.load());
  counter(out, "voxos_mcp_servers_needing_auth_total",
          "Times an MCP server was found to need signing in again (credentials missing, revoked "
          "or past refresh).",
          servers_needing_auth.load());
  counter(out, "voxos_mcp_sign_ins_total", "Browser sign-ins to MCP servers completed.",
          sign_ins.load());
  counter(out, "voxos_mcp_sign_ins_refused_total",
          "Browser sign-ins to MCP servers refused at the callback.", sign_ins_refused.load());
  header(out, "voxos_uptime_seconds", "gauge", "Seconds since the node started.");
  out +=
    "voxos_uptime_seconds " + seconds(static_cast<uint64_t>(wall_clock_us() - started_us_)) + "\n";
  return out;
}

nlohmann::json node_metrics::snapshot(int64_t running_actors) const {
  nlohmann::json actors = nlohmann::json::object();
  {
    std::lock_guard<std::mutex> guard{kinds_mutex_};
    for (auto& [kind, c] : kinds_)
      actors[kind] = {{"running", c->running.load()},
                      {"messages", c->messages.load()},
                      {"mailbox_depth", c->mailbox_depth.load()},
                      {"mailbox_depth_max", c->mailbox_depth_max.load()}};
  }
  auto mean = [](const latency_histogram& h) {
    return h.count() == 0 ? 0.0 : static_cast<double>(h.sum_us()) / static_cast<double>(h.count());
  };
  return {
    {"uptime_s", (wall_clock_us() - started_us_) / 1000000},
    {"actors_running", running_actors},
    {"actors", actors},
    {"event_store",
     {{"appended_events", appended_events.load()},
      {"append_requests", append_requests.load()},
      {"append_failures", append_failures.load()},
      {"write_batches", write_batches.load()},
      {"sync_mean_us", mean(sync_latency)},
      {"append_mean_us", mean(append_latency)},
      {"bytes", store_bytes.load()}}},
    {"runs",
     {{"waves", wave_latency.count()},
      {"wave_mean_us", mean(wave_latency)},
      {"calls", call_latency.count()},
      {"call_mean_us", mean(call_latency)}}},
    {"http",
     {{"requests", http_requests.load()},
      {"errors", http_errors.load()},
      {"held_requests", http_held_requests.load()},
      {"held_refused", http_held_refused.load()}}},
    {"run_host", {{"hosted_runs", hosted_runs.load()}}},
    {"work",
     {{"pending", work_pending.load()},
      {"workers", work_workers.load()},
      {"enqueued", work_enqueued.load()},
      {"completed", work_completed.load()},
      {"failed", work_failed.load()},
      {"redelivered", work_redelivered.load()}}},
    {"mcp_auth",
     {{"servers_needing_auth", servers_needing_auth.load()},
      {"sign_ins", sign_ins.load()},
      {"sign_ins_refused", sign_ins_refused.load()}}},
  };
}

} // namespace voxos
