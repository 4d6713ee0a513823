// Saturation and the throughput frontier: tool calls through the runtime
// (voxosd, a process of its own, on its defaults but for the limits named
// below) from several agent hosts, over HTTP and over the CAF network, beside
// our client (an mcp_connection in this process) calling the same peer
// straight, on the same machine.
//
// The peer is bench/echo_peer.hpp in this process (answers at once): the
// fastest peer there is, so what limits a rate is the client or the runtime,
// never the peer (an SDK-built Node peer is busy at a whole core long before
// either: see mcp_client_bench).
//
// Three paths, each `tools/call` of `echo` with the same arguments:
//   - straight: our client, one connection (mcp.max_in_flight requests at
//     once, the rest queued in it), called from event-based actors;
//   - through the runtime over CAF: `--hosts` agent hosts, each an actor
//     system of its own reaching the node's run_host over the CAF network,
//     each with its share of the runs; one round of one call per run at a
//     time;
//   - through the runtime over HTTP: the same hosts and runs, each run's
//     rounds posted to /v1/runs/{id}/tool-calls from a thread of its own on a
//     kept-alive connection.
// All runs belong to one tenant and call through its one connection to the
// peer, so both sides meet the same per-connection bound.
//
// Saturation: closed loop, `C` calls outstanding (C in --concurrency, each
// for --seconds), the highest completed rate of each path; the ratio of
// each runtime path to straight (target >= 0.8).
// Frontier: open loop, Poisson arrivals at offered rates rising by
// --step (x1.2) from --from (calls/s) until p99 passes 20 ms at two steps in
// a row; each step measured --repeats times (3), the window of median p99
// counting (so one burst of another process does not decide it); latency runs
// from each call's scheduled time (a call waiting for a free run or slot
// waits on the clock, so a path that falls behind shows it); the frontier
// for 1 ms, 5 ms, 20 ms is the highest offered rate reached with every rate
// below it also under the bound (target: the 1 ms frontier through the
// runtime >= 0.7x the straight one).
//
// The node's HTTP held-request limits are raised to the runs' count
// (http.threads 64, max_held_requests and max_held_per_tenant 48): by
// default one tenant may hold 15 rounds at once, fewer than the runs here.
// The store syncs its WAL (the default).
//
//   saturation_bench [--seconds S] [--hosts H] [--runs N] [--from R] [--step X]
//                    [--repeats K] [--concurrency C1,C2,...] [--profile straight|caf|http]
//                    [--profile-rate R] [--voxosd PATH]
//   (defaults 2, 4, 32, 400, 1.2, 3, 8,16,32; --runs is the total over the hosts;
//   --voxosd: another build's voxosd, to compare two builds through the same
//   clients and peer; this build's by default; --profile-rate: with --profile,
//   an open loop at R calls/s instead of 16 at once, to profile waiting)
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "actors/run_host/run_host.hpp"
#include "bench/echo_peer.hpp"
#include "bench/process_figures.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;
using bench::own_cpu_seconds;
using bench::percentile;
using bench::process_cpu_seconds;
using bench::verdict;

namespace {

using fire_atom = caf::atom_constant<caf::atom("fire")>;
using go_atom = caf::atom_constant<caf::atom("go")>;
using over_atom = caf::atom_constant<caf::atom("over")>;

struct bench_options {
  double seconds = 2;
  int hosts = 4;
  int runs = 32;
  double from = 400;
  double step = 1.2;
  int repeats = 3; ///< windows per ladder step; the median p99 counts
  std::vector<int> concurrency{8, 16, 32};
  /// "straight", "caf" or "http": that path's closed loop at 16 at once for
  /// `seconds`, nothing else (to profile voxosd meanwhile); "" measures all.
  std::string profile;
  /// With --profile: an open loop at this rate (calls/s) instead, to profile
  /// waiting at a low rate (off-CPU); 0: the closed loop.
  double profile_rate = 0;
  /// The voxosd binary measured.
  std::string voxosd = VOXOSD_PATH;
};

double us_between(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

/// What one measure of one path gave.
struct load_figures {
  double offered = 0; ///< calls/s offered (open loop), 0 for a closed loop
  double rate = 0;    ///< calls/s completed
  double p50_us = 0;
  double p99_us = 0;
  std::size_t calls = 0;
  std::size_t failed = 0;
  double node_cpu_per_call_us = 0; ///< voxosd's CPU per call (runtime paths)
  double own_cpu_per_call_us = 0;  ///< this process's (hosts or client, and the peer)
};

/// Latencies and failures gathered by a driver.
struct samples {
  std::mutex mutex;
  std::vector<double> latencies_us;
  std::size_t failed = 0;
  void add(double us, bool ok) {
    std::lock_guard<std::mutex> guard{mutex};
    if (ok)
      latencies_us.push_back(us);
    else
      ++failed;
  }
};

/// Poisson arrival times at `rate` per second over `seconds` from `start`
/// (a fixed seed: every path meets the same arrivals).
std::vector<clock_type::time_point> arrivals(double rate, double seconds,
                                             clock_type::time_point start) {
  std::mt19937_64 rng{42};
  std::exponential_distribution<double> gap{rate};
  std::vector<clock_type::time_point> out;
  double at = 0;
  for (;;) {
    at += gap(rng);
    if (at >= seconds)
      return out;
    out.push_back(
      start + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(at)));
  }
}

/// Calls `fire(t)` at each arrival `t` (late ones at once), from this thread.
template <class Fire>
void pace(const std::vector<clock_type::time_point>& times, Fire fire) {
  for (auto at : times) {
    if (clock_type::now() < at)
      std::this_thread::sleep_until(at);
    fire(at);
  }
}

// -- the actor-driven paths (straight, and the runtime over CAF) -------------------

/// Sends one call on `slot` (a run, or a place in the connection) from
/// `self`, then calls `done(ok)` when it is answered.
using call_fn = std::function<void(caf::event_based_actor* self, std::size_t slot,
                                   std::function<void(bool)> done)>;

/// A driver's state: `slots` places, each with at most one call outstanding.
/// Closed loop (`go`): every slot calls again as soon as it is answered,
/// until `stop_at`. Open loop (`fire` with the scheduled time): a call takes
/// a free slot or waits for one; `over` says no more will come.
struct driver_state {
  call_fn call;
  std::vector<std::size_t> free;
  std::deque<clock_type::time_point> backlog;
  std::size_t outstanding = 0;
  clock_type::time_point stop_at;
  bool closed_loop = false;
  bool no_more = false;
  samples* out = nullptr;
  std::promise<void> finished;
  bool ended = false;
};

void issue(caf::event_based_actor* self, const std::shared_ptr<driver_state>& st, std::size_t slot,
           clock_type::time_point scheduled);

void slot_free(caf::event_based_actor* self, const std::shared_ptr<driver_state>& st,
               std::size_t slot) {
  if (st->closed_loop && clock_type::now() < st->stop_at) {
    issue(self, st, slot, clock_type::now());
    return;
  }
  if (!st->backlog.empty()) {
    auto scheduled = st->backlog.front();
    st->backlog.pop_front();
    issue(self, st, slot, scheduled);
    return;
  }
  st->free.push_back(slot);
  if (st->outstanding == 0 && (st->closed_loop || st->no_more) && !st->ended) {
    st->ended = true;
    st->finished.set_value();
  }
}

void issue(caf::event_based_actor* self, const std::shared_ptr<driver_state>& st, std::size_t slot,
           clock_type::time_point scheduled) {
  ++st->outstanding;
  st->call(self, slot, [self, st, slot, scheduled](bool ok) {
    st->out->add(us_between(scheduled, clock_type::now()), ok);
    --st->outstanding;
    slot_free(self, st, slot);
  });
}

caf::behavior driver(caf::event_based_actor* self, std::shared_ptr<driver_state> st) {
  return {
    [=](go_atom) {
      auto slots = st->free;
      st->free.clear();
      for (auto slot : slots)
        issue(self, st, slot, clock_type::now());
    },
    [=](fire_atom, int64_t scheduled_ns) {
      clock_type::time_point scheduled{std::chrono::nanoseconds{scheduled_ns}};
      if (st->free.empty()) {
        st->backlog.push_back(scheduled);
        return;
      }
      auto slot = st->free.back();
      st->free.pop_back();
      issue(self, st, slot, scheduled);
    },
    [=](over_atom) {
      st->no_more = true;
      if (st->outstanding == 0 && st->backlog.empty() && !st->ended) {
        st->ended = true;
        st->finished.set_value();
      }
    },
  };
}

/// A driver per (actor system, call function, slot count): spawned for one
/// measure, then left to end with its system.
struct actor_path {
  std::vector<caf::actor_system*> systems; ///< one per host (one for straight)
  std::vector<call_fn> calls;              ///< one per system
  std::vector<std::size_t> slots;          ///< slots per system
};

/// One measure on `path`: closed loop with `slots_each` slots per system for
/// `seconds`, or (rate > 0) open loop at `rate` split evenly over the
/// systems, every system's full slots available.
void measure_actors(samples& out, const actor_path& path, std::size_t slots_each, double rate,
                    double seconds) {
  std::vector<std::shared_ptr<driver_state>> states;
  std::vector<caf::actor> drivers;
  std::vector<std::future<void>> done;
  for (std::size_t idx = 0; idx < path.systems.size(); ++idx) {
    auto st = std::make_shared<driver_state>();
    st->call = path.calls[idx];
    auto count = rate > 0 ? path.slots[idx] : std::min(slots_each, path.slots[idx]);
    for (std::size_t slot = 0; slot < count; ++slot)
      st->free.push_back(slot);
    st->out = &out;
    st->closed_loop = rate <= 0;
    st->stop_at =
      clock_type::now()
      + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
    done.push_back(st->finished.get_future());
    drivers.push_back(path.systems[idx]->spawn(driver, st));
    states.push_back(std::move(st));
  }
  if (rate <= 0) {
    for (auto& hdl : drivers)
      caf::anon_send(hdl, go_atom::value);
  } else {
    auto times = arrivals(rate, seconds, clock_type::now() + std::chrono::milliseconds{5});
    std::size_t next = 0;
    pace(times, [&](clock_type::time_point at) {
      caf::anon_send(
        drivers[next++ % drivers.size()], fire_atom::value,
        static_cast<int64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count()));
    });
    for (auto& hdl : drivers)
      caf::anon_send(hdl, over_atom::value);
  }
  for (auto& one : done)
    one.wait();
  for (auto& hdl : drivers)
    caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
}

// -- the HTTP path ---------------------------------------------------------------

/// The runs over HTTP: a thread per run, each posting its rounds on a
/// kept-alive connection. Closed loop: the first `slots` threads call again
/// and again until the end. Open loop: every thread takes the next
/// scheduled call from a shared queue.
struct http_path {
  uint16_t port = 0;
  std::string token;
  std::vector<std::string> run_ids;
  std::string model_name;
};

bool post_round(httplib::Client& cli, const http_path& path, const std::string& run_id,
                const std::string& body) {
  httplib::Headers headers{{"Authorization", "Bearer " + path.token}};
  auto res =
    cli.Post(("/v1/runs/" + run_id + "/tool-calls").c_str(), headers, body, "application/json");
  return res && res->status == 200 && res->body.find(R"("status":"ok")") != std::string::npos;
}

void measure_http(samples& out, const http_path& path, std::size_t slots, double rate,
                  double seconds) {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<clock_type::time_point> queue;
  bool no_more = false;
  auto stop_at =
    clock_type::now()
    + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
  auto body = json{{"calls", json::array({{{"call_id", "c1"},
                                           {"name", path.model_name},
                                           {"arguments", {{"text", "saturation"}}}}})}}
                .dump();
  std::size_t threads = rate > 0 ? path.run_ids.size() : std::min(slots, path.run_ids.size());
  std::vector<std::thread> workers;
  for (std::size_t idx = 0; idx < threads; ++idx)
    workers.emplace_back([&, idx] {
      httplib::Client cli{"127.0.0.1", path.port};
      cli.set_tcp_nodelay(true);
      cli.set_keep_alive(true);
      cli.set_read_timeout(60);
      const auto& run_id = path.run_ids[idx];
      for (;;) {
        clock_type::time_point scheduled;
        if (rate <= 0) {
          scheduled = clock_type::now();
          if (scheduled >= stop_at)
            return;
        } else {
          std::unique_lock<std::mutex> lock{mutex};
          ready.wait(lock, [&] { return !queue.empty() || no_more; });
          if (queue.empty())
            return;
          scheduled = queue.front();
          queue.pop_front();
        }
        bool ok = post_round(cli, path, run_id, body);
        out.add(us_between(scheduled, clock_type::now()), ok);
      }
    });
  if (rate > 0) {
    auto times = arrivals(rate, seconds, clock_type::now() + std::chrono::milliseconds{5});
    pace(times, [&](clock_type::time_point at) {
      {
        std::lock_guard<std::mutex> guard{mutex};
        queue.push_back(at);
      }
      ready.notify_one();
    });
    {
      std::lock_guard<std::mutex> guard{mutex};
      no_more = true;
    }
    ready.notify_all();
  }
  for (auto& worker : workers)
    worker.join();
}

// -- measures and the ladder -------------------------------------------------------

/// Runs `measure` (filling samples) and sums it up, with the CPU of this
/// process and of voxosd (`node_pid`, or 0) over it.
template <class Measure>
load_figures figures_of(double offered, pid_t node_pid, Measure measure) {
  auto own0 = own_cpu_seconds();
  auto node0 = node_pid > 0 ? process_cpu_seconds(node_pid) : 0;
  auto start = clock_type::now();
  samples got;
  measure(got);
  auto wall = std::chrono::duration<double>(clock_type::now() - start).count();
  load_figures out;
  out.offered = offered;
  out.calls = got.latencies_us.size();
  out.failed = got.failed;
  out.rate = static_cast<double>(out.calls) / wall;
  out.p50_us = percentile(got.latencies_us, 0.5);
  out.p99_us = percentile(got.latencies_us, 0.99);
  auto per_call = [&](double cpu) {
    return out.calls > 0 ? cpu / static_cast<double>(out.calls) * 1e6 : 0;
  };
  out.own_cpu_per_call_us = per_call(own_cpu_seconds() - own0);
  if (node_pid > 0)
    out.node_cpu_per_call_us = per_call(process_cpu_seconds(node_pid) - node0);
  return out;
}

/// One path as the bench drives it: a measure at (slots, rate), and whose
/// CPU besides this process's counts.
struct path_driver {
  const char* name;
  std::function<void(samples& out, std::size_t slots, double rate, double seconds)> measure;
  pid_t node_pid = 0;
};

load_figures measure(const path_driver& path, std::size_t slots, double rate, double seconds) {
  return figures_of(rate, path.node_pid,
                    [&](samples& out) { path.measure(out, slots, rate, seconds); });
}

struct path_results {
  std::vector<std::pair<int, load_figures>> closed; ///< per concurrency
  load_figures best;                                ///< the highest closed-loop rate
  std::vector<load_figures> ladder;
};

constexpr double bounds_us[] = {1'000, 5'000, 20'000};

/// The highest offered rate of `ladder` with it and every rate below it
/// under `bound_us` at p99, and no failed call; 0 if the first is over.
double frontier(const std::vector<load_figures>& ladder, double bound_us) {
  double out = 0;
  for (const auto& step : ladder) {
    if (step.p99_us >= bound_us || step.failed > 0 || step.calls == 0)
      return out;
    out = step.offered;
  }
  return out;
}

path_results run_path(const path_driver& path, const bench_options& opts) {
  path_results out;
  // Warm-up: connections, the peer's threads, the runs' first rounds.
  measure(path, 16, 0, 1.0);
  for (int width : opts.concurrency) {
    auto got = measure(path, static_cast<std::size_t>(width), 0, opts.seconds);
    if (got.rate > out.best.rate)
      out.best = got;
    out.closed.emplace_back(width, got);
  }
  // The ladder, up to where p99 passes the largest bound at two steps in a
  // row, or the path completes well under what is offered (or the offered
  // rate is well past what it completed closed-loop). Each step is the
  // window of median p99 among `repeats`: a burst of another process on
  // this machine in one window does not end the ladder or decide a bound.
  int over = 0;
  for (double rate = opts.from; rate <= out.best.rate * 1.5; rate *= opts.step) {
    std::vector<load_figures> windows;
    for (int rep = 0; rep < opts.repeats; ++rep)
      windows.push_back(measure(path, 0, rate, opts.seconds));
    std::sort(windows.begin(), windows.end(),
              [](const load_figures& a, const load_figures& b) { return a.p99_us < b.p99_us; });
    auto got = windows[windows.size() / 2];
    for (const auto& window : windows)
      got.failed = std::max(got.failed, window.failed);
    out.ladder.push_back(got);
    over = got.p99_us >= bounds_us[2] ? over + 1 : 0;
    if (over == 2 || got.failed > 0 || got.rate < 0.8 * rate)
      break;
  }
  return out;
}

// -- the node --------------------------------------------------------------------

json read_json_file(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::stringstream buf;
  buf << in.rdbuf();
  return json::parse(buf.str(), nullptr, false);
}

/// voxosd in `dir` with the echo peer registered; its ports and admin token.
struct node_process {
  std::unique_ptr<test::child_process> proc;
  uint16_t http_port = 0;
  uint16_t caf_port = 0;
  std::string admin_token;
};

std::optional<node_process> start_node(const test::temp_dir& dir, const std::string& peer_url,
                                       const std::string& voxosd) {
  json cfg{{"data_dir", (dir.path() / "var").string()},
           {"log_level", "error"},
           {"http",
            {{"port", 0},
             {"broker_port", 0},
             {"threads", 64},
             {"max_held_requests", 48},
             {"max_held_per_tenant", 48}}},
           {"caf", {{"port", 0}}},
           {"registered_urls", json::array({{{"url", peer_url}, {"purpose", "mcp"}}})}};
  auto cfg_path = dir.path() / "voxosd.json";
  std::ofstream{cfg_path} << cfg.dump(2);
  node_process out;
  out.proc = std::make_unique<test::child_process>(
    std::vector<std::string>{voxosd, "--config", cfg_path.string()}, dir.str(),
    (dir.path() / "voxosd.log").string());
  if (!out.proc->wait_for_line("is up")) {
    std::fprintf(stderr, "voxosd did not start: %s\n", out.proc->error_output().c_str());
    return std::nullopt;
  }
  auto runtime = read_json_file(dir.path() / "var" / "runtime.json");
  auto secrets = read_json_file(dir.path() / "var" / "secrets.json");
  if (runtime.is_discarded() || secrets.is_discarded()) {
    std::fprintf(stderr, "voxosd wrote no runtime.json or secrets.json\n");
    return std::nullopt;
  }
  out.http_port = runtime["http_port"].get<uint16_t>();
  out.caf_port = runtime["caf_port"].get<uint16_t>();
  out.admin_token = secrets["admin_token"].get<std::string>();
  return out;
}

/// An HTTP call to the node; the answer's JSON, or discarded (after a
/// message on stderr) unless the status is `expect`.
json node_call(uint16_t port, const std::string& token, const std::string& method,
               const std::string& path, const json& body, int expect) {
  httplib::Client cli{"127.0.0.1", port};
  cli.set_read_timeout(60);
  httplib::Headers headers{{"Authorization", "Bearer " + token}};
  auto text = body.is_null() ? std::string{"{}"} : body.dump();
  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (method == "POST")
    res = cli.Post(path.c_str(), headers, text, "application/json");
  else if (method == "PATCH")
    res = cli.Patch(path.c_str(), headers, text, "application/json");
  else if (method == "PUT")
    res = cli.Put(path.c_str(), headers, text, "application/json");
  else
    res = cli.Get(path.c_str(), headers);
  if (!res || res->status != expect) {
    std::fprintf(stderr, "%s %s: %s\n", method.c_str(), path.c_str(),
                 res ? (std::to_string(res->status) + " " + res->body).c_str() : "no answer");
    return json(json::value_t::discarded);
  }
  return json::parse(res->body, nullptr, false);
}

/// A tenant of the node whose default agent may call the peer's `echo`:
/// its token, agent and the model-facing name of `echo`.
struct bench_tenant {
  std::string token;
  std::string agent_id;
  std::string model_name;
};

std::optional<bench_tenant> make_tenant(const node_process& node, const std::string& peer_url) {
  auto port = node.http_port;
  auto made =
    node_call(port, node.admin_token, "POST", "/v1/admin/tenants", {{"name", "Bench"}}, 201);
  if (made.is_discarded())
    return std::nullopt;
  auto tenant_id = made["tenant_id"].get<std::string>();
  auto issued = node_call(port, node.admin_token, "POST",
                          "/v1/admin/tenants/" + tenant_id + "/tokens", json::object(), 201);
  if (issued.is_discarded())
    return std::nullopt;
  bench_tenant out;
  out.token = issued["token"].get<std::string>();
  auto agents = node_call(port, out.token, "GET", "/v1/agents", nullptr, 200);
  auto server =
    node_call(port, out.token, "POST", "/v1/servers", {{"url", peer_url}, {"label", "echo"}}, 201);
  if (agents.is_discarded() || !agents.is_array() || agents.empty() || server.is_discarded())
    return std::nullopt;
  out.agent_id = agents[0]["agent_id"].get<std::string>();
  auto server_id = server["server_id"].get<std::string>();
  auto server_path = "/v1/servers/" + server_id;
  // Test, enable, trust and allowlist, test again (enabling needs a fresh
  // test), grant.
  if (node_call(port, out.token, "POST", server_path + "/test", nullptr, 200).is_discarded()
      || node_call(port, out.token, "PATCH", server_path,
                   {{"enabled", true}, {"trusted", true}, {"allowed_tools", {"echo"}}}, 200)
           .is_discarded()
      || node_call(port, out.token, "POST", server_path + "/test", nullptr, 200).is_discarded()
      || node_call(port, out.token, "PUT", "/v1/agents/" + out.agent_id + "/grants",
                   {{"server_id", server_id}, {"tool", "echo"}, {"decision", "allow"}}, 200)
           .is_discarded())
    return std::nullopt;
  return out;
}

/// The model-facing name of the peer's `echo` in a run's view (JSON text).
std::string echo_name(const std::string& view_text) {
  auto view = json::parse(view_text, nullptr, false);
  if (view.is_object())
    for (const auto& entry : view.value("direct", json::array()))
      if (entry.is_object() && entry.value("tool", "") == "echo")
        return entry.value("model_name", "");
  return {};
}

/// The first three fields of /proc/loadavg.
std::string load_average() {
  std::ifstream in{"/proc/loadavg"};
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

/// The actor system of one agent host: our types and the CAF network, one
/// scheduler thread (the hosts share this process with the peer and our
/// client; the node has the machine's two cores).
struct host_config : caf::actor_system_config {
  host_config() {
    register_types(*this);
    load<caf::io::middleman>();
    set_io_bound_scheduler(*this);
    set("scheduler.max-threads", std::size_t{1});
  }
};

// -- printing ----------------------------------------------------------------------

void print_path(const char* name, const path_results& x) {
  std::printf("  %s:\n    closed loop (no target):", name);
  for (const auto& [width, got] : x.closed)
    std::printf(" %d at once %.0f calls/s (p50 %.0f us, p99 %.0f us%s);", width, got.rate,
                got.p50_us, got.p99_us,
                got.failed > 0 ? (", " + std::to_string(got.failed) + " failed").c_str() : "");
  std::printf("\n    cpu per call at the best (no target): this process %.0f us",
              x.best.own_cpu_per_call_us);
  if (x.best.node_cpu_per_call_us > 0)
    std::printf(", voxosd %.0f us", x.best.node_cpu_per_call_us);
  std::printf("\n    open loop, offered -> p99 (no target):");
  for (const auto& step : x.ladder)
    std::printf(" %.0f/s %.0f us%s;", step.offered, step.p99_us,
                step.failed > 0 ? " (failures)" : "");
  std::printf("\n");
}

/// Every path's figures, then the saturation ratios and the frontiers;
/// the first path is the straight one.
void print_results(const std::vector<const char*>& names, const std::vector<path_results>& results,
                   const bench_options& opts) {
  for (std::size_t idx = 0; idx < results.size(); ++idx)
    print_path(names[idx], results[idx]);
  const auto& direct = results[0];
  for (std::size_t idx = 1; idx < results.size(); ++idx) {
    double ratio = results[idx].best.rate / direct.best.rate;
    std::printf("  saturation, %s: %.0f calls/s vs straight %.0f calls/s: x%.2f (target >= 0.8: "
                "%s)\n",
                names[idx], results[idx].best.rate, direct.best.rate, ratio, verdict(ratio >= 0.8));
  }
  // The frontier ratio at `bound`: 0 when the straight one is below the ladder.
  auto versus = [&](std::size_t idx, double bound) {
    double theirs = frontier(direct.ladder, bound);
    return theirs > 0 ? frontier(results[idx].ladder, bound) / theirs : 0;
  };
  for (std::size_t idx = 0; idx < results.size(); ++idx) {
    std::printf("  frontier, %s:", names[idx]);
    for (double bound : bounds_us) {
      double rate = frontier(results[idx].ladder, bound);
      std::printf(" p99 < %.0f ms: %s%.0f calls/s;", bound / 1000, rate == 0 ? "below " : "",
                  rate == 0 ? opts.from : rate);
    }
    if (idx == 0) {
      std::printf(" (no target)\n");
      continue;
    }
    bool measured = frontier(direct.ladder, bounds_us[0]) > 0;
    std::printf(" 1 ms frontier vs straight x%.2f (target >= 0.7: %s); 5 and 20 ms (no target): "
                "x%.2f, x%.2f\n",
                versus(idx, bounds_us[0]), verdict(measured && versus(idx, bounds_us[0]) >= 0.7),
                versus(idx, bounds_us[1]), versus(idx, bounds_us[2]));
  }
}

} // namespace

int main(int argc, char** argv) {
  bench_options opts;
  // (options come in pairs: a lone one, `--help` say, runs nothing)
  if (argc % 2 == 0) {
    std::fprintf(stderr, "usage: saturation_bench [--seconds S] [--hosts H] [--runs N] [--from R] "
                         "[--step X] [--repeats K] [--concurrency C1,C2,...] "
                         "[--profile straight|caf|http] [--profile-rate R] [--voxosd PATH]\n");
    return 2;
  }
  for (int idx = 1; idx + 1 < argc; idx += 2) {
    std::string arg = argv[idx];
    std::string value = argv[idx + 1];
    if (arg == "--seconds")
      opts.seconds = std::max(0.2, std::atof(value.c_str()));
    else if (arg == "--hosts")
      opts.hosts = std::max(1, std::atoi(value.c_str()));
    else if (arg == "--runs")
      opts.runs = std::max(1, std::atoi(value.c_str()));
    else if (arg == "--from")
      opts.from = std::max(10.0, std::atof(value.c_str()));
    else if (arg == "--step")
      opts.step = std::max(1.05, std::atof(value.c_str()));
    else if (arg == "--repeats")
      opts.repeats = std::max(1, std::atoi(value.c_str()));
    else if (arg == "--profile")
      opts.profile = value;
    else if (arg == "--profile-rate")
      opts.profile_rate = std::max(0.0, std::atof(value.c_str()));
    else if (arg == "--voxosd")
      opts.voxosd = value;
    else if (arg == "--concurrency") {
      opts.concurrency.clear();
      std::stringstream list{value};
      for (std::string part; std::getline(list, part, ',');)
        opts.concurrency.push_back(std::max(1, std::atoi(part.c_str())));
    } else {
      std::fprintf(stderr, "saturation_bench: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  opts.hosts = std::min(opts.hosts, opts.runs);

  // The peer: enough threads for every connection both sides keep open.
  httplib::Server peer;
  peer.new_task_queue = [] { return new httplib::ThreadPool(96); };
  bench::serve_echo(peer);
  int peer_port = peer.bind_to_any_port("127.0.0.1");
  std::thread peer_thread{[&] { peer.listen_after_bind(); }};
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port) + "/mcp";

  int status = 1;
  {
    test::temp_dir dir;
    auto node = start_node(dir, peer_url, opts.voxosd);
    auto tenant = node ? make_tenant(*node, peer_url) : std::nullopt;
    if (tenant) {
      // Straight: our client in this process.
      caf::actor_system_config client_cfg;
      register_types(client_cfg);
      set_io_bound_scheduler(client_cfg);
      caf::actor_system client_sys{client_cfg};
      auto policy = std::make_shared<const url_policy>(
        std::vector<node_config::registered_url>{{peer_url, "mcp"}});
      auto conn = spawn_mcp_connection(
        client_sys, mcp_endpoint{"bench", transport_kind::streamable_http, peer_url, {}}, policy,
        mcp_config{});
      auto params = json{{"name", "echo"}, {"arguments", {{"text", "saturation"}}}}.dump();
      auto next_key = std::make_shared<std::atomic<uint64_t>>(1);
      actor_path straight;
      straight.systems.push_back(&client_sys);
      straight.slots.push_back(static_cast<std::size_t>(opts.runs));
      straight.calls.push_back([conn, params, next_key](caf::event_based_actor* self, std::size_t,
                                                        std::function<void(bool)> done) {
        self
          ->request(conn, caf::infinite, request_atom::value, next_key->fetch_add(1),
                    std::string{"tools/call"}, params, uint32_t{0})
          .then([done](const std::string&) { done(true); }, [done](caf::error&) { done(false); });
      });

      // The agent hosts over CAF, each with its share of the runs.
      std::vector<std::unique_ptr<host_config>> host_cfgs;
      std::vector<std::unique_ptr<caf::actor_system>> hosts;
      actor_path over_caf;
      std::string model_name;
      bool ok = true;
      for (int host_idx = 0; ok && host_idx < opts.hosts; ++host_idx) {
        host_cfgs.push_back(std::make_unique<host_config>());
        hosts.push_back(std::make_unique<caf::actor_system>(*host_cfgs.back()));
        auto& sys = *hosts.back();
        auto run_host = sys.middleman().remote_actor<run_host_actor>("127.0.0.1", node->caf_port);
        if (!run_host) {
          std::fprintf(stderr, "cannot reach the run host: %s\n",
                       sys.render(run_host.error()).c_str());
          ok = false;
          break;
        }
        auto runs = std::make_shared<std::vector<std::string>>();
        int share = opts.runs / opts.hosts + (host_idx < opts.runs % opts.hosts ? 1 : 0);
        caf::scoped_actor self{sys};
        for (int run_idx = 0; ok && run_idx < share; ++run_idx)
          self
            ->request(*run_host, std::chrono::seconds{60}, create_atom::value, run_atom::value,
                      tenant->token, run_start{tenant->agent_id, "owner_text_chat", "", "", ""})
            .receive(
              [&](const run_ticket& ticket) {
                runs->push_back(ticket.run_id);
                if (model_name.empty())
                  model_name = echo_name(ticket.view);
              },
              [&](caf::error& err) {
                std::fprintf(stderr, "start run over CAF: %s\n", message_of(err).c_str());
                ok = false;
              });
        over_caf.systems.push_back(&sys);
        over_caf.slots.push_back(runs->size());
        auto token = tenant->token;
        auto host_hdl = *run_host;
        over_caf.calls.push_back(
          [host_hdl, token, runs, &model_name](caf::event_based_actor* self, std::size_t slot,
                                               std::function<void(bool)> done) {
            std::vector<tool_call> calls{{"c1", model_name, R"({"text":"saturation"})"}};
            self
              ->request(host_hdl, caf::infinite, tool_atom::value, token, (*runs)[slot],
                        std::move(calls))
              .then(
                [done](const std::vector<tool_output>& outputs) {
                  done(outputs.size() == 1 && outputs[0].status == "ok");
                },
                [done](caf::error&) { done(false); });
          });
      }
      if (model_name.empty())
        ok = false;

      // The same number of runs over HTTP.
      http_path over_http;
      over_http.port = node->http_port;
      over_http.token = tenant->token;
      over_http.model_name = model_name;
      for (int run_idx = 0; ok && run_idx < opts.runs; ++run_idx) {
        auto started =
          node_call(node->http_port, tenant->token, "POST", "/v1/runs",
                    {{"agent_id", tenant->agent_id}, {"channel", "owner_text_chat"}}, 201);
        ok = !started.is_discarded();
        if (ok)
          over_http.run_ids.push_back(started["run_id"].get<std::string>());
      }

      if (ok) {
        auto node_pid = node->proc->pid();
        path_driver paths[] = {
          {"straight: our client, one connection",
           [&](samples& out, std::size_t slots, double rate, double seconds) {
             measure_actors(out, straight, slots, rate, seconds);
           },
           0},
          {"through the runtime over CAF",
           [&](samples& out, std::size_t slots, double rate, double seconds) {
             // Closed loop: `slots` runs in all, spread over the hosts.
             auto each =
               rate > 0 ? slots : (slots + over_caf.systems.size() - 1) / over_caf.systems.size();
             measure_actors(out, over_caf, each, rate, seconds);
           },
           node_pid},
          {"through the runtime over HTTP",
           [&](samples& out, std::size_t slots, double rate, double seconds) {
             measure_http(out, over_http, slots, rate, seconds);
           },
           node_pid},
        };
        std::printf("Saturation and the throughput frontier: `echo` against bench/echo_peer.hpp "
                    "(answers at once), straight from our client vs through voxosd (its own "
                    "process, store sync on) from %d agent hosts with %d runs of one tenant, over "
                    "CAF and over HTTP; %.1f s per measure, %d per ladder step; load average %s\n",
                    opts.hosts, opts.runs, opts.seconds, opts.repeats, load_average().c_str());
        if (!opts.profile.empty()) {
          auto idx = opts.profile == "caf" ? 1 : opts.profile == "http" ? 2 : 0;
          if (opts.profile_rate > 0)
            std::fprintf(stderr, "voxosd pid %d: %s, open loop at %.0f calls/s for %.0f s\n",
                         static_cast<int>(node_pid), paths[idx].name, opts.profile_rate,
                         opts.seconds);
          else
            std::fprintf(stderr, "voxosd pid %d: %s, 16 at once for %.0f s\n",
                         static_cast<int>(node_pid), paths[idx].name, opts.seconds);
          auto got = opts.profile_rate > 0 ? measure(paths[idx], 0, opts.profile_rate, opts.seconds)
                                           : measure(paths[idx], 16, 0, opts.seconds);
          std::printf("  %s: %.0f calls/s (p50 %.0f us, p99 %.0f us), cpu per call: this process "
                      "%.0f us, voxosd %.0f us\n",
                      paths[idx].name, got.rate, got.p50_us, got.p99_us, got.own_cpu_per_call_us,
                      got.node_cpu_per_call_us);
        } else {
          std::vector<path_results> results;
          std::vector<const char*> names;
          for (const auto& path : paths) {
            results.push_back(run_path(path, opts));
            names.push_back(path.name);
          }
          print_results(names, results, opts);
          std::printf("  (load average at the end: %s)\n", load_average().c_str());
        }
        status = 0;
      }
      caf::scoped_actor self{client_sys};
      self->request(conn, std::chrono::seconds{10}, close_atom::value)
        .receive([](bool) {}, [](caf::error&) {});
    }
    if (node) {
      node->proc->signal(SIGTERM);
      node->proc->wait();
    }
  }
  peer.stop();
  peer_thread.join();
  if (status != 0)
    std::fprintf(stderr, "saturation_bench: a phase failed; no figures\n");
  return status;
}
