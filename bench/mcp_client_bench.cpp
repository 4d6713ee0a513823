// The MCP client, beside its peers in one run:
//  1. our mcp_connection vs the official TypeScript SDK client
//     (tests/peers/sdk_client_bench.mjs), both against the same SDK-built
//     peer answering as JSON (each against a fresh instance, after the same
//     warm-up): sequential and 8-in-flight tools/call rates,
//     p50/p99, CPU seconds per 1,000 calls, peak memory, and a wave of eight
//     200 ms calls;
//  2. the floor: our client vs a bare cpp-httplib client, both sequential
//     against a minimal cpp-httplib JSON-RPC echo peer in this process,
//     the same requests on one kept-alive connection each, in alternating
//     rounds; ours called from an event-based actor, as the runtime's waves
//     call it (also printed: from a blocking thread, whose own wake-up
//     every call pays).
// Targets (the issue's): at least 2x the SDK's rates, at most a fifth of its
// CPU per call and memory, within 1.5x of the bare floor.
//
//   mcp_client_bench [CALLS] [--floor-only]   (default 2000 per phase;
//   --floor-only: part 2 alone, e.g. under a profiler)
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "bench/echo_peer.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/node_peer.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
         + static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

/// Peak resident memory of this process, MiB (VmHWM).
double peak_rss_mib() {
  std::ifstream in{"/proc/self/status"};
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

struct phase_figures {
  double calls_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double cpu_s_per_1000 = 0;
};

phase_figures summarise(std::vector<double>& latencies, double wall_s, double cpu_s) {
  std::sort(latencies.begin(), latencies.end());
  auto at = [&](double q) {
    auto idx = static_cast<std::size_t>(q * static_cast<double>(latencies.size() - 1));
    return latencies[idx];
  };
  phase_figures out;
  out.calls_per_s = static_cast<double>(latencies.size()) / wall_s;
  out.p50_us = at(0.5);
  out.p99_us = at(0.99);
  out.cpu_s_per_1000 = cpu_s / static_cast<double>(latencies.size()) * 1000.0;
  return out;
}

std::string echo_params(std::size_t idx) {
  return json{{"name", "echo"}, {"arguments", {{"text", "call " + std::to_string(idx)}}}}.dump();
}

/// `count` echo calls through `conn`, `width` callers at once. Appends each
/// call's latency (us) to `latencies` when given.
phase_figures run_phase(caf::actor_system& sys, const mcp_connection_actor& conn, std::size_t count,
                        unsigned width, const char* tool = "echo",
                        std::vector<double>* latencies = nullptr) {
  std::atomic<std::size_t> next{0};
  std::atomic<uint64_t> key{1'000'000 * width};
  std::vector<std::vector<double>> per_thread(width);
  std::atomic<bool> failed{false};
  auto cpu0 = cpu_seconds();
  auto t0 = clock_type::now();
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < width; ++w)
    threads.emplace_back([&, w] {
      caf::scoped_actor self{sys};
      for (;;) {
        auto idx = next.fetch_add(1);
        if (idx >= count)
          return;
        auto start = clock_type::now();
        std::string params = std::string{tool} == "echo"
                               ? echo_params(idx)
                               : json{{"name", tool}, {"arguments", {{"ms", 200}}}}.dump();
        // No timer of the caller's own: the connection answers every
        // request by its deadline (mcp.request_timeout_ms here).
        self
          ->request(conn, caf::infinite, request_atom::value, key.fetch_add(1),
                    std::string{"tools/call"}, params, uint32_t{0})
          .receive([](const std::string&) {},
                   [&](caf::error& err) {
                     std::fprintf(stderr, "call failed: %s\n", message_of(err).c_str());
                     failed = true;
                   });
        per_thread[w].push_back(
          std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
      }
    });
  for (auto& thread : threads)
    thread.join();
  double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  double cpu = cpu_seconds() - cpu0;
  std::vector<double> all;
  for (auto& part : per_thread)
    all.insert(all.end(), part.begin(), part.end());
  if (failed)
    std::fprintf(stderr, "some calls failed: figures are not comparable\n");
  if (latencies != nullptr)
    latencies->insert(latencies->end(), all.begin(), all.end());
  auto out = summarise(all, wall, cpu);
  out.calls_per_s = static_cast<double>(count) / wall;
  return out;
}

/// Sequential calls from an event-based actor: what is left to do.
struct call_chain {
  mcp_connection_actor conn;
  /// Calls not yet made, shared by the chains of one phase.
  std::shared_ptr<std::atomic<long>> left;
  uint64_t key = 5'000'000;
  clock_type::time_point started;
  std::vector<double>* latencies = nullptr;
  std::promise<bool> done;
};

void call_next(caf::event_based_actor* self, const std::shared_ptr<call_chain>& chain) {
  auto idx = chain->left->fetch_sub(1);
  if (idx <= 0) {
    chain->done.set_value(true);
    self->quit();
    return;
  }
  chain->started = clock_type::now();
  self
    ->request(chain->conn, caf::infinite, request_atom::value, chain->key++,
              std::string{"tools/call"}, echo_params(static_cast<std::size_t>(idx)), uint32_t{0})
    .then(
      [self, chain](const std::string&) {
        chain->latencies->push_back(
          std::chrono::duration<double, std::micro>(clock_type::now() - chain->started).count());
        call_next(self, chain);
      },
      [self, chain](caf::error& err) {
        std::fprintf(stderr, "call failed: %s\n", message_of(err).c_str());
        chain->done.set_value(false);
        self->quit();
      });
}

/// `count` echo calls through `conn` from `width` event-based actors on the
/// scheduler, each making its calls one after another, as the node's waves
/// call a connection (a blocking caller's thread adds a wake-up of its own to
/// every call). Appends each call's latency (us) to `latencies`; returns the
/// seconds they took.
double run_from_actors(caf::actor_system& sys, const mcp_connection_actor& conn, std::size_t count,
                       unsigned width, std::vector<double>& latencies) {
  auto left = std::make_shared<std::atomic<long>>(static_cast<long>(count));
  std::vector<std::shared_ptr<call_chain>> chains;
  std::vector<std::vector<double>> per_chain(width);
  std::vector<std::future<bool>> finished;
  for (unsigned idx = 0; idx < width; ++idx) {
    auto chain = std::make_shared<call_chain>();
    chain->conn = conn;
    chain->left = left;
    chain->key = 5'000'000 + uint64_t{idx} * 1'000'000'000;
    chain->latencies = &per_chain[idx];
    finished.push_back(chain->done.get_future());
    chains.push_back(std::move(chain));
  }
  auto t0 = clock_type::now();
  for (auto& chain : chains)
    sys.spawn([chain](caf::event_based_actor* self) { call_next(self, chain); });
  bool ok = true;
  for (auto& one : finished)
    ok = one.get() && ok;
  auto seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (!ok)
    std::fprintf(stderr, "some calls failed: figures are not comparable\n");
  for (auto& part : per_chain)
    latencies.insert(latencies.end(), part.begin(), part.end());
  return seconds;
}

mcp_connection_actor connect(caf::actor_system& sys, const std::string& url) {
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  return spawn_mcp_connection(
    sys, mcp_endpoint{"bench", transport_kind::streamable_http, url, {}, {}}, policy, mcp_config{});
}

/// Ends the session and the connection's workers, so that the actor system
/// can end at once.
void close(caf::actor_system& sys, const mcp_connection_actor& conn) {
  caf::scoped_actor self{sys};
  self->request(conn, std::chrono::seconds{10}, close_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
}

/// The floor: `count` calls on `cli` (one kept-alive connection), the same
/// requests as our client sends (same headers, same body), built and read
/// with nlohmann, nothing else. Returns the seconds they took.
double bare_floor(httplib::Client& cli, std::size_t count) {
  httplib::Headers headers{{"Accept", "application/json, text/event-stream"},
                           {"MCP-Protocol-Version", "2025-11-25"}};
  auto t0 = clock_type::now();
  for (std::size_t idx = 0; idx < count; ++idx) {
    auto body = json{{"jsonrpc", "2.0"},
                     {"id", idx + 1},
                     {"method", "tools/call"},
                     {"params", json::parse(echo_params(idx))}}
                  .dump();
    auto res = cli.Post("/mcp", headers, body, "application/json");
    if (!res || res->status != 200)
      std::fprintf(stderr, "bare call failed\n");
    else if (json::parse(res->body, nullptr, false).is_discarded())
      std::fprintf(stderr, "bare call answered no JSON\n");
  }
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void print_phase(const char* what, const phase_figures& ours, double sdk_rate, double sdk_p50,
                 double sdk_p99, double sdk_cpu) {
  std::printf("%-22s voxos %7.0f calls/s (p50 %6.0f us, p99 %6.0f us, %.3f cpu-s/1000)"
              " | sdk %6.0f calls/s (p50 %6.0f us, p99 %6.0f us, %.3f cpu-s/1000)"
              " | rate x%.2f (target >= 2), cpu /%.1f (target >= 5)\n",
              what, ours.calls_per_s, ours.p50_us, ours.p99_us, ours.cpu_s_per_1000, sdk_rate,
              sdk_p50, sdk_p99, sdk_cpu, ours.calls_per_s / sdk_rate,
              sdk_cpu / std::max(ours.cpu_s_per_1000, 1e-9));
}

/// Part 1: our client and the SDK's against the SDK peer. 0 on success.
int compare_with_sdk(std::size_t calls) {
  auto peer = test::start_sdk_peer({"--json"});
  if (!peer->up()) {
    std::fprintf(stderr, "sdk peer did not start: %s\n", peer->error_output().c_str());
    return 1;
  }
  double rss_before = peak_rss_mib();
  phase_figures seq, par;
  double wave_ms = 0;
  double rss_ours = 0;
  {
    caf::actor_system_config cfg;
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    caf::actor_system sys{cfg};
    auto conn = connect(sys, peer->url());
    // Warm-up: session, workers, and the peer's JIT, which takes a thousand
    // calls or so to settle; the SDK client warms up the same way.
    run_phase(sys, conn, 1000, 1);
    run_phase(sys, conn, 1000, 8);
    seq = run_phase(sys, conn, calls, 1);
    par = run_phase(sys, conn, calls, 8);
    auto t0 = clock_type::now();
    run_phase(sys, conn, 8, 8, "sleep");
    wave_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    rss_ours = peak_rss_mib();
    close(sys, conn);
  }

  // The SDK client, the same calls against a fresh peer started the same
  // way (a peer that has served ours would have aged: its heap grows).
  peer = test::start_sdk_peer({"--json"});
  if (!peer->up()) {
    std::fprintf(stderr, "sdk peer did not start again: %s\n", peer->error_output().c_str());
    return 1;
  }
  test::child_process sdk{
    {test::node_path(), "sdk_client_bench.mjs", peer->url(), "--calls", std::to_string(calls)},
    test::peers_dir().string(),
    "/dev/null",
    {}};
  auto sdk_out = json::parse(sdk.read_all(std::chrono::seconds{600}), nullptr, false);
  sdk.wait();
  if (!sdk_out.is_object()) {
    std::fprintf(stderr, "the SDK client bench printed no figures\n");
    return 1;
  }
  std::printf("MCP client vs the TypeScript SDK %s client, %zu calls per phase, SDK-built peer "
              "answering JSON:\n",
              sdk_out.value("sdk_version", "").c_str(), calls);
  print_phase("sequential", seq, sdk_out["seq_calls_per_s"], sdk_out["seq_p50_us"],
              sdk_out["seq_p99_us"], sdk_out["seq_cpu_s_per_1000"]);
  print_phase("8 in flight", par, sdk_out["par_calls_per_s"], sdk_out["par_p50_us"],
              sdk_out["par_p99_us"], sdk_out["par_cpu_s_per_1000"]);
  double sdk_rss = sdk_out["peak_rss_mib"];
  std::printf("peak memory            voxos %.1f MiB (process peak %.1f, %.1f before the client)"
              " | sdk %.1f MiB | /%.1f (target >= 5)\n",
              rss_ours, rss_ours, rss_before, sdk_rss, sdk_rss / rss_ours);
  std::printf("wave of eight 200 ms   voxos %.0f ms | sdk %.0f ms\n", wave_ms,
              static_cast<double>(sdk_out["wave_ms"]));
  return 0;
}

/// Part 2: the floor, the same JSON-RPC over cpp-httplib with nothing else.
void compare_with_floor(std::size_t calls) {
  httplib::Server svr;
  bench::serve_echo(svr);
  int port = svr.bind_to_any_port("127.0.0.1");
  std::thread server{[&] { svr.listen_after_bind(); }};
  while (!svr.is_running())
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  double floor_rate = 0;
  phase_figures on_floor;      // called from an actor, as waves call it
  phase_figures from_blocking; // called from a blocking thread (scoped_actor)
  {
    caf::actor_system_config cfg;
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    caf::actor_system sys{cfg};
    auto conn = connect(sys, "http://127.0.0.1:" + std::to_string(port) + "/mcp");
    httplib::Client bare{"127.0.0.1", static_cast<uint16_t>(port)};
    bare.set_tcp_nodelay(true);
    bare.set_keep_alive(true);
    bare_floor(bare, 200); // warm-up, as for ours
    std::vector<double> warm;
    run_from_actors(sys, conn, 200, 1, warm);
    run_phase(sys, conn, 200, 1);
    // Alternating rounds: every client meets the same load from whatever
    // else runs on the machine.
    constexpr std::size_t rounds = 8;
    const std::size_t per_round = std::max<std::size_t>(calls / rounds, 1);
    double bare_s = 0;
    double ours_s = 0;
    double blocking_s = 0;
    std::vector<double> latencies;
    std::vector<double> blocking_latencies;
    for (std::size_t round = 0; round < rounds; ++round) {
      bare_s += bare_floor(bare, per_round);
      ours_s += run_from_actors(sys, conn, per_round, 1, latencies);
      auto part = run_phase(sys, conn, per_round, 1, "echo", &blocking_latencies);
      blocking_s += static_cast<double>(per_round) / part.calls_per_s;
    }
    floor_rate = static_cast<double>(per_round * rounds) / bare_s;
    on_floor = summarise(latencies, ours_s, 0);
    from_blocking = summarise(blocking_latencies, blocking_s, 0);
    close(sys, conn);
  }
  svr.stop();
  server.join();
  std::printf("floor (httplib echo)   voxos %.0f calls/s (p50 %.0f us, p99 %.0f us) | bare httplib "
              "%.0f calls/s | x%.2f of the floor (target <= 1.5)\n"
              "                       (voxos called from an actor, as the runtime's waves call it; "
              "from a blocking thread: %.0f calls/s, p50 %.0f us, x%.2f)\n",
              on_floor.calls_per_s, on_floor.p50_us, on_floor.p99_us, floor_rate,
              floor_rate / on_floor.calls_per_s, from_blocking.calls_per_s, from_blocking.p50_us,
              floor_rate / from_blocking.calls_per_s);
}

} // namespace

int main(int argc, char** argv) {
  std::size_t calls = 2000;
  bool floor_only = false;
  for (int idx = 1; idx < argc; ++idx) {
    std::string arg = argv[idx];
    if (arg == "--floor-only")
      floor_only = true;
    else
      calls = std::stoul(arg);
  }
  if (!floor_only)
    if (int failed = compare_with_sdk(calls); failed != 0)
      return failed;
  compare_with_floor(calls);
  return 0;
}
