// The MCP client, beside its peers in one run:
//  1. our mcp_connection vs the official TypeScript SDK clients
//     (tests/peers/sdk_client_bench.mjs), on four lanes: the 1.x SDK
//     (@modelcontextprotocol/sdk) against its own server speaking
//     2025-11-25, answering JSON and answering SSE
//     (tests/peers/sdk_peer.mjs); the 2.x client (@modelcontextprotocol/client)
//     against a 2.x server (@modelcontextprotocol/server,
//     tests/peers/sdk2_peer.mjs) speaking 2026-07-28, answering JSON and SSE.
//     Each client against a fresh instance of the lane's peer, after the same
//     warm-up: sequential and 8-in-flight tools/call rates, p50/p99, CPU
//     seconds per 1,000 calls (the whole process of each client: this one's
//     rusage, the SDK client's Node process.cpuUsage), peak memory (first
//     lane), and a wave of eight 200 ms calls;
//  2. the floor: our client vs a bare cpp-httplib client, both sequential
//     against a minimal cpp-httplib JSON-RPC echo peer in this process,
//     the same requests on one kept-alive connection each, in alternating
//     rounds; ours called from an event-based actor, as the runtime's waves
//     call it (also printed: from a blocking thread, whose own wake-up
//     every call pays).
// Targets: at least 2.5x the SDK's rates and at most a fifth of its CPU per
// call on every lane, a fifth of its memory, within 1.5x of the bare floor.
//
//   mcp_client_bench [CALLS] [--floor-only]   (default 2000 per phase;
//   --floor-only: part 2 alone, e.g. under a profiler)

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
#include "bench/process_figures.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/node_peer.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;
using bench::own_cpu_seconds;
using bench::process_cpu_seconds;
using bench::verdict;

namespace {

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
  /// The peer process's CPU over the phase, when measured.
  double peer_cpu_s_per_1000 = 0;
  double peer_busy = 0; ///< peer CPU seconds per wall second
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
  auto cpu0 = own_cpu_seconds();
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
  double cpu = own_cpu_seconds() - cpu0;
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

/// `count` sequential or `width`-wide calls (run_phase), with the CPU the
/// peer process `peer` used meanwhile.
phase_figures with_peer_cpu(pid_t peer, caf::actor_system& sys, const mcp_connection_actor& conn,
                            std::size_t count, unsigned width) {
  auto cpu0 = process_cpu_seconds(peer);
  auto out = run_phase(sys, conn, count, width);
  auto cpu = process_cpu_seconds(peer) - cpu0;
  out.peer_cpu_s_per_1000 = cpu / static_cast<double>(count) * 1000.0;
  out.peer_busy = cpu / (static_cast<double>(count) / out.calls_per_s);
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

/// A connection to `url` speaking `protocol_version` ("": learnt from the server).
mcp_connection_actor connect(caf::actor_system& sys, const std::string& url,
                             std::string protocol_version = {}) {
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  return spawn_mcp_connection(
    sys,
    mcp_endpoint{"bench", transport_kind::streamable_http, url, {}, std::move(protocol_version)},
    policy, mcp_config{});
}

/// Connects `conn`; the revision its session speaks ("?" on an error).
std::string protocol_of(caf::actor_system& sys, const mcp_connection_actor& conn) {
  caf::scoped_actor self{sys};
  std::string out = "?";
  self->request(conn, std::chrono::seconds{30}, connect_atom::value)
    .receive(
      [&](const std::string& hello) {
        out = json::parse(hello, nullptr, false).value("protocol_version", std::string{"?"});
      },
      [&](caf::error& err) {
        std::fprintf(stderr, "connect failed: %s\n", message_of(err).c_str());
      });
  return out;
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

/// One lane of part 1: which SDK generation, which revision, which answers.
struct sdk_lane {
  const char* name;                  ///< printed
  std::vector<std::string> peer_cmd; ///< the peer's script and flags, run in tests/peers
  std::string protocol_version;      ///< what our client's endpoint names
  int generation;                    ///< sdk_client_bench.mjs --generation
};

/// The targets: our client at least 2.5x the SDK client's call rate
/// and at most a fifth of its CPU per call, on every lane.
constexpr double rate_target = 2.5;
constexpr double cpu_target = 5;

void print_phase(const char* what, const phase_figures& ours, double sdk_rate, double sdk_p50,
                 double sdk_p99, double sdk_cpu) {
  double rate_ratio = ours.calls_per_s / sdk_rate;
  double cpu_ratio = sdk_cpu / std::max(ours.cpu_s_per_1000, 1e-9);
  std::printf("  %-12s voxos %5.0f calls/s (p50 %5.0f us, p99 %6.0f us, %.3f cpu-s/1000)"
              " | sdk %5.0f calls/s (p50 %5.0f us, p99 %6.0f us, %.3f cpu-s/1000)"
              " | rate x%.2f (target >= %.1f: %s), cpu /%.1f (target >= %.0f: %s)\n",
              what, ours.calls_per_s, ours.p50_us, ours.p99_us, ours.cpu_s_per_1000, sdk_rate,
              sdk_p50, sdk_p99, sdk_cpu, rate_ratio, rate_target,
              verdict(rate_ratio >= rate_target), cpu_ratio, cpu_target,
              verdict(cpu_ratio >= cpu_target));
}

std::unique_ptr<test::node_peer> start_peer(const sdk_lane& lane) {
  auto peer = std::make_unique<test::node_peer>(test::node_path(), lane.peer_cmd);
  if (!peer->up())
    std::fprintf(stderr, "%s: the peer did not start: %s\n", lane.name,
                 peer->error_output().c_str());
  return peer;
}

/// One lane of part 1: our client and the SDK's against the lane's peer.
/// `first`: also prints peak memory (this process's peak is its whole life's,
/// so only the first lane's is our client's). 0 on success.
int compare_lane(const sdk_lane& lane, std::size_t calls, bool first) {
  auto peer = start_peer(lane);
  if (!peer->up())
    return 1;
  double rss_before = peak_rss_mib();
  phase_figures seq, par;
  double wave_ms = 0;
  double rss_ours = 0;
  std::string spoken;
  {
    caf::actor_system_config cfg;
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    caf::actor_system sys{cfg};
    auto conn = connect(sys, peer->url(), lane.protocol_version);
    spoken = protocol_of(sys, conn);
    // Warm-up: session, workers, and the peer's JIT, which takes a thousand
    // calls or so to settle; the SDK client warms up the same way.
    run_phase(sys, conn, 1000, 1);
    run_phase(sys, conn, 1000, 8);
    auto pid = peer->proc().pid();
    seq = with_peer_cpu(pid, sys, conn, calls, 1);
    par = with_peer_cpu(pid, sys, conn, calls, 8);
    auto t0 = clock_type::now();
    run_phase(sys, conn, 8, 8, "sleep");
    wave_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    rss_ours = peak_rss_mib();
    close(sys, conn);
  }

  // The SDK client, the same calls against a fresh peer started the same
  // way (a peer that has served ours would have aged: its heap grows).
  peer = start_peer(lane);
  if (!peer->up())
    return 1;
  auto peer_cpu0 = process_cpu_seconds(peer->proc().pid());
  test::child_process sdk{{test::node_path(), "sdk_client_bench.mjs", peer->url(), "--calls",
                           std::to_string(calls), "--generation", std::to_string(lane.generation)},
                          test::peers_dir().string(),
                          "/dev/null",
                          {}};
  auto sdk_out = json::parse(sdk.read_all(std::chrono::seconds{600}), nullptr, false);
  sdk.wait();
  auto peer_cpu = process_cpu_seconds(peer->proc().pid()) - peer_cpu0;
  // Its calls: the warm-up's, the two phases', the wave's.
  auto sdk_calls = static_cast<double>(2 * std::min<std::size_t>(1000, calls) + 2 * calls + 8);
  if (!sdk_out.is_object()) {
    std::fprintf(stderr, "%s: the SDK client bench printed no figures\n", lane.name);
    return 1;
  }
  std::printf("%s: voxos speaking %s | %s %s speaking %s (Node %s), %zu calls per phase:\n",
              lane.name, spoken.c_str(), sdk_out.value("sdk_package", "?").c_str(),
              sdk_out.value("sdk_version", "?").c_str(),
              sdk_out.value("protocol_version", "?").c_str(),
              sdk_out.value("node_version", "?").c_str(), calls);
  print_phase("sequential", seq, sdk_out["seq_calls_per_s"], sdk_out["seq_p50_us"],
              sdk_out["seq_p99_us"], sdk_out["seq_cpu_s_per_1000"]);
  print_phase("8 in flight", par, sdk_out["par_calls_per_s"], sdk_out["par_p50_us"],
              sdk_out["par_p99_us"], sdk_out["par_cpu_s_per_1000"]);
  std::printf("  the peer (no target): while voxos called, sequential %.3f cpu-s/1000 (busy %.0f%% "
              "of a core), 8 in flight %.3f cpu-s/1000 (busy %.0f%%) | while the sdk called, %.3f "
              "cpu-s/1000 over all its calls\n",
              seq.peer_cpu_s_per_1000, seq.peer_busy * 100, par.peer_cpu_s_per_1000,
              par.peer_busy * 100, peer_cpu / sdk_calls * 1000);
  if (first) {
    double sdk_rss = sdk_out["peak_rss_mib"];
    std::printf("  peak memory  voxos %.1f MiB (process peak, %.1f before the client) | sdk %.1f "
                "MiB | /%.1f (target >= 5: %s)\n",
                rss_ours, rss_before, sdk_rss, sdk_rss / rss_ours,
                verdict(sdk_rss / rss_ours >= 5));
  }
  std::printf("  wave of eight 200 ms: voxos %.0f ms | sdk %.0f ms (no target)\n", wave_ms,
              static_cast<double>(sdk_out["wave_ms"]));
  return 0;
}

/// Part 1: our client and the SDK's, both generations: the 1.x SDK on the
/// 2025-11-25 lane answering JSON and SSE, the 2.x client against a 2.x
/// server on the 2026-07-28 lane answering JSON and SSE. 0 on success.
int compare_with_sdk(std::size_t calls) {
  const sdk_lane lanes[] = {
    {"sdk 1.x, 2025-11-25, JSON answers", {"sdk_peer.mjs", "--json"}, "2025-11-25", 1},
    {"sdk 1.x, 2025-11-25, SSE answers", {"sdk_peer.mjs", "--sse"}, "2025-11-25", 1},
    {"sdk 2.x, 2026-07-28, JSON answers", {"sdk2_peer.mjs", "--json"}, "2026-07-28", 2},
    {"sdk 2.x, 2026-07-28, SSE answers", {"sdk2_peer.mjs", "--sse"}, "2026-07-28", 2},
  };
  std::printf(
    "MCP client vs the TypeScript SDK clients, each against a fresh SDK-built peer of its "
    "generation after the same warm-up; CPU per call: this process's rusage vs the SDK "
    "client's Node process (process.cpuUsage); targets: rate >= x%.1f, cpu per call <= "
    "1/%.0f\n",
    rate_target, cpu_target);
  bool first = true;
  for (const auto& lane : lanes) {
    if (int failed = compare_lane(lane, calls, first); failed != 0)
      return failed;
    first = false;
  }
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
              "%.0f calls/s | x%.2f of the floor (target <= 1.5: %s)\n"
              "                       (voxos called from an actor, as the runtime's waves call it; "
              "from a blocking thread, no target: %.0f calls/s, p50 %.0f us, x%.2f)\n",
              on_floor.calls_per_s, on_floor.p50_us, on_floor.p99_us, floor_rate,
              floor_rate / on_floor.calls_per_s, verdict(floor_rate / on_floor.calls_per_s <= 1.5),
              from_blocking.calls_per_s, from_blocking.p50_us,
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
