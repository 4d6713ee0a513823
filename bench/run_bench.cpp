// Tool calls through the runtime (tenant -> run -> wave -> connection),
// in process, against the SDK-built peer (tests/peers/sdk_peer.mjs, answering
// JSON), each figure beside a peer measured in the same run:
//   a. a wave of eight `sleep` 200 ms calls vs one such call (ratio; target
//      <= 1.05x), beside the TypeScript SDK client doing the same with
//      Promise.all (tests/peers/run_wave_bench.mjs);
//   b. the time the runtime adds to one call, as a paired figure: the same
//      call through the runtime and straight at our client (its own
//      mcp_connection), alternating call by call, against bench/echo_peer.hpp
//      (a cpp-httplib peer that answers at once); the distribution (p50,
//      p99) of the per-pair differences, on three lines interleaved in
//      blocks: store WAL sync off (read-only `echo`), sync on (read-only
//      `echo`; targets for both: p50 <= 40 us, p99 <= 100 us), sync on
//      (mutating `note`; target: p99 <= the disk floor's p99 + 100 us); the
//      disk floor measured between the blocks: a 200-byte append + fdatasync
//      on a file in the synced store's own directory (no target), beside one
//      append to each store alone; then the same pairs against the SDK peer
//      (no target: its millisecond tails) and the SDK client's sequential
//      echo;
//   c. memory per idle run actor at 10,000 live runs (sync off; the tenants'
//      history indexes on disk, as voxosd keeps them): RSS and heap
//      before and after starting them, per run (target <= 8 KiB), beside
//      10,000 bare CAF actors; the WAL bytes the starts wrote (RocksDB's
//      memtable holds about as much, so it is part of the RSS growth);
//   d. cancel with eight `sleep` 20 s calls in flight at the peer: the run's
//      own cancel_to_closed_us and the cancel's round trip, p50/p99 (target
//      <= 10 ms), beside our client cancelling eight requests straight.
// Nothing here asserts timing: figures and ratios are printed.
//
//   run_bench [--rounds N] [--pairs N] [--block N] [--floor N] [--calls-sync N]
//             [--calls-nosync N] [--runs N] [--cancels N] [--paired-only]
//             (defaults 9, 10000, 250, 2000, 300, 2000, 10000, 20; --paired-only
//             runs b alone, against the echo peer: for profiling)
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/mcp/mcp_connection.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/tenant/tenant.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "bench/echo_peer.hpp"
#include "bench/process_figures.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "support/child_process.hpp"
#include "support/node_peer.hpp"
#include "support/temp_dir.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;
using bench::percentile;
using bench::verdict;

namespace {

constexpr auto ask_timeout = std::chrono::seconds{60};
/// The SDK peer's tools the bench's agent may call.
const std::vector<std::string> sdk_tools{"echo", "sleep"};
/// The echo peer's: `note` is annotated not read-only (a mutating call).
const std::vector<std::string> echo_tools{"echo", "sleep", "note"};

struct bench_options {
  int rounds = 9;               ///< a: single calls and waves
  int pairs = 10'000;           ///< b: pairs per line against the echo peer
  int block = 250;              ///< b: pairs per line in each interleaved block
  int floor_samples = 2'000;    ///< b: fdatasync samples, spread over the blocks
  int calls_sync = 300;         ///< b: pairs against the SDK peer, store sync on
  int calls_nosync = 2000;      ///< b: pairs against the SDK peer, store sync off
  bool paired_only = false;     ///< b alone, against the echo peer
  int live_runs = 10'000;       ///< c: live runs at the end
  int cancels = 20;             ///< d: cancelled rounds
  int sleep_ms = 200;           ///< a: the sleep of each call
  int cancel_sleep_ms = 20'000; ///< d: the sleep of the cancelled calls
};

double us_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
}

/// Resident set of this process, bytes (/proc/self/statm).
double rss_bytes() {
  std::ifstream in{"/proc/self/statm"};
  long pages_total = 0;
  long pages_resident = 0;
  in >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

/// Bytes malloc has handed out and not had back (every arena, and mmapped blocks).
double heap_bytes() {
  auto info = ::mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd);
}

/// Bytes of RocksDB's write-ahead logs in `dir`.
double wal_bytes(const std::filesystem::path& dir) {
  double total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".log")
      total += static_cast<double>(entry.file_size(ec));
  return total;
}

/// Sends `xs` to `hdl` and waits for the answer; nullopt (after a message on
/// stderr naming `what`) on an error.
template <class T, class Handle, class... Ts>
std::optional<T> ask(caf::scoped_actor& self, const Handle& hdl, const char* what, Ts&&... xs) {
  std::optional<T> out;
  self->request(hdl, ask_timeout, std::forward<Ts>(xs)...)
    .receive([&](T& answer) { out = std::move(answer); },
             [&](caf::error& err) {
               std::fprintf(stderr, "%s failed: %s\n", what, message_of(err).c_str());
             });
  return out;
}

/// The string `key` of the JSON object `text`, or of its first element when
/// `text` is an array; "" if there is none.
std::string field_of(const std::string& text, const char* key) {
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_array() && !doc.empty())
    doc = doc[0];
  if (!doc.is_object())
    return {};
  auto found = doc.find(key);
  return found != doc.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

/// Polls the peer's counters until `in_flight` equals `count` (at most 10 s).
bool wait_in_flight(uint16_t port, int count) {
  auto until = clock_type::now() + std::chrono::seconds{10};
  while (clock_type::now() < until) {
    auto stats = test::peer_stats(port);
    if (stats.is_object() && stats["in_flight"] == count)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  return false;
}

/// One tenant on its own event store, its default agent granted the peer's
/// bench tools.
struct bench_tenant {
  /// The peer's tools its agent is granted.
  std::vector<std::string> tools;
  std::filesystem::path store_dir;
  event_store_actor store;
  tenant_actor tenant;
  std::string agent_id;
  std::string server_id;
  /// Peer tool -> the model-facing name a run's view gives it.
  std::map<std::string, std::string> model_names;
  /// Runs started and not cancelled.
  int live_runs = 0;
  /// The first run start's answer: its bytes and the view's direct tools.
  std::size_t start_answer_bytes = 0;
  std::size_t view_direct_tools = 0;
};

/// Spawns the store (on `dir`, WAL sync as given) and the tenant, then sets
/// the tenant up through its typed messages, as the HTTP API would: create
/// the server, test it, enable and trust it with an allowlist, test again
/// (enabling needs a fresh test), grant each tool to the default agent.
std::optional<bench_tenant> make_tenant(caf::actor_system& sys, node_metrics& metrics,
                                        const test::temp_dir& dir, bool sync,
                                        const tenant_services& services,
                                        const std::string& peer_url, const char* tenant_id,
                                        const std::vector<std::string>& tools) {
  bench_tenant out;
  out.tools = tools;
  out.store_dir = dir.path() / "store";
  event_db_options db_opts;
  db_opts.sync = sync;
  db_opts.projectors.push_back(&tenant_events::project);
  auto db = event_db::open(out.store_dir.string(), std::move(db_opts));
  if (!db) {
    std::fprintf(stderr, "cannot open the event store: %s\n", db.error().message().c_str());
    return std::nullopt;
  }
  std::shared_ptr<event_db> shared_db{std::move(*db)};
  out.store = spawn_event_store(sys, shared_db, metrics, event_store_options{});
  // Data keys over this tenant's store (its server has no headers: none is made).
  auto sealer = vault::create("k1", std::string(32, 'k'));
  if (!sealer) {
    std::fprintf(stderr, "vault: %s\n", sealer.error().message().c_str());
    return std::nullopt;
  }
  auto own = services;
  own.keys =
    std::make_shared<server_keys>(std::make_shared<const vault>(std::move(*sealer)), shared_db);
  out.tenant = spawn_tenant(sys, tenant_id, out.store, metrics, own);

  caf::scoped_actor self{sys};
  auto agents =
    ask<std::string>(self, out.tenant, "list agents", list_atom::value, agent_atom::value);
  if (!agents)
    return std::nullopt;
  out.agent_id = field_of(*agents, "agent_id");
  auto made =
    ask<std::string>(self, out.tenant, "create server", create_atom::value, server_atom::value,
                     json{{"url", peer_url}, {"label", "SDK peer"}}.dump());
  if (!made)
    return std::nullopt;
  out.server_id = field_of(*made, "server_id");
  if (out.agent_id.empty() || out.server_id.empty()) {
    std::fprintf(stderr, "the tenant answered no agent or no server id\n");
    return std::nullopt;
  }
  if (!ask<std::string>(self, out.tenant, "connection test", connect_atom::value,
                        server_atom::value, out.server_id))
    return std::nullopt;
  json patch{{"enabled", true}, {"trusted", true}, {"allowed_tools", tools}};
  if (!ask<std::string>(self, out.tenant, "patch server", server_atom::value, out.server_id,
                        patch.dump()))
    return std::nullopt;
  if (!ask<std::string>(self, out.tenant, "second connection test", connect_atom::value,
                        server_atom::value, out.server_id))
    return std::nullopt;
  for (const auto& tool : tools)
    if (!ask<std::string>(self, out.tenant, "grant", grant_atom::value, out.agent_id, out.server_id,
                          tool, std::string{"allow"}))
      return std::nullopt;
  return out;
}

/// Starts a run of the default agent; learns the tools' model-facing names.
std::optional<std::string> start_run(caf::scoped_actor& self, bench_tenant& t) {
  // Agent, channel, caller number, chat id (a new chat), location (none).
  auto started =
    ask<std::string>(self, t.tenant, "start run", create_atom::value, run_atom::value, t.agent_id,
                     std::string{"owner_text_chat"}, std::string{}, std::string{}, std::string{});
  if (!started)
    return std::nullopt;
  ++t.live_runs;
  if (t.model_names.empty()) {
    auto doc = json::parse(*started, nullptr, false);
    auto direct =
      doc.is_object() ? doc.value("/view/direct"_json_pointer, json::array()) : json::array();
    t.start_answer_bytes = started->size();
    t.view_direct_tools = direct.size();
    for (const auto& entry : direct)
      if (entry.is_object() && entry.value("server_id", "") == t.server_id)
        t.model_names[entry.value("tool", "")] = entry.value("model_name", "");
    for (const auto& tool : t.tools)
      if (t.model_names[tool].empty()) {
        std::fprintf(stderr, "the run's view has no `%s` of the peer\n", tool.c_str());
        return std::nullopt;
      }
    return field_of(*started, "run_id");
  }
  // Only the id: parsing the whole answer (snapshot and view) would put
  // this thread's work into the figures of the phases that start many runs.
  constexpr std::string_view key = R"("run_id":")";
  auto from = started->find(key);
  auto to = from == std::string::npos ? from : started->find('"', from + key.size());
  if (to == std::string::npos) {
    std::fprintf(stderr, "start run: no run_id in the answer\n");
    return std::nullopt;
  }
  return started->substr(from + key.size(), to - from - key.size());
}

std::vector<tool_call> sleep_calls(const bench_tenant& t, int count, int ms) {
  std::vector<tool_call> calls;
  for (int call_idx = 0; call_idx < count; ++call_idx)
    calls.push_back(
      {"s" + std::to_string(call_idx), t.model_names.at("sleep"), json{{"ms", ms}}.dump()});
  return calls;
}

/// False (after a message on stderr) unless every output is "ok".
bool all_ok(const std::vector<tool_output>& outputs) {
  for (const auto& out : outputs)
    if (out.status != "ok") {
      std::fprintf(stderr, "call %s: %s %s\n", out.call_id.c_str(), out.status.c_str(),
                   out.output.c_str());
      return false;
    }
  return true;
}

/// One round through the tenant; false unless every output is "ok".
bool round_trip(caf::scoped_actor& self, const bench_tenant& t, const std::string& run_id,
                std::vector<tool_call> calls) {
  auto outputs = ask<std::vector<tool_output>>(self, t.tenant, "tool round", tool_atom::value,
                                               run_id, std::move(calls));
  return outputs && all_ok(*outputs);
}

// -- a. a wave of eight vs one ----------------------------------------------------

struct wave_figures {
  double single_ms = 0;
  double wave_ms = 0;
};

std::optional<wave_figures> measure_waves(caf::actor_system& sys, bench_tenant& t,
                                          const bench_options& opts) {
  caf::scoped_actor self{sys};
  auto run_id = start_run(self, t);
  if (!run_id || !round_trip(self, t, *run_id, sleep_calls(t, 8, 1)))
    return std::nullopt;
  std::vector<double> singles;
  std::vector<double> waves;
  for (int round = 0; round < opts.rounds; ++round) {
    auto start = clock_type::now();
    if (!round_trip(self, t, *run_id, sleep_calls(t, 1, opts.sleep_ms)))
      return std::nullopt;
    singles.push_back(us_since(start) / 1000);
    start = clock_type::now();
    if (!round_trip(self, t, *run_id, sleep_calls(t, 8, opts.sleep_ms)))
      return std::nullopt;
    waves.push_back(us_since(start) / 1000);
  }
  return wave_figures{percentile(singles, 0.5), percentile(waves, 0.5)};
}

// -- b. added time per call: the same call through the runtime and straight ---------

/// Where one line's pairs come from: a run of `t` calling the peer's `tool`
/// through the runtime, and `direct` (our client, an mcp_connection of its
/// own) calling the same tool of the same peer. Without `t`, both sides of
/// a pair are the same straight call: the method's own floor (what two
/// identical paths differ by on this machine).
struct pair_source {
  bench_tenant* t = nullptr; ///< none: both sides straight
  std::string run_id;
  std::string tool;
  mcp_connection_actor direct;
  uint64_t next_key = 1;
  int next_call = 0;
};

/// One line's figures, pair by pair.
struct paired_figures {
  std::vector<double> runtime_us;
  std::vector<double> direct_us;
  std::vector<double> added_us; ///< runtime - straight, of each pair
};

std::optional<pair_source> make_pair_source(caf::scoped_actor& self, bench_tenant& t,
                                            std::string tool, const mcp_connection_actor& direct) {
  auto run_id = start_run(self, t);
  if (!run_id)
    return std::nullopt;
  pair_source out;
  out.t = &t;
  out.run_id = std::move(*run_id);
  out.tool = std::move(tool);
  out.direct = direct;
  return out;
}

/// `pairs` pairs from `src` (into `out` unless null): each the same call,
/// same arguments, through the runtime (one round of one call) and straight,
/// one right after the other, the order swapped every pair, so that neither
/// side always runs right after the other (after a synced store's fsync of
/// the previous round's records, say). Both messages are built before
/// either clock starts; each clock stops when its answer is in.
bool measure_pairs(caf::scoped_actor& self, pair_source& src, int pairs, paired_figures* out) {
  const std::string no_name;
  const auto& model_name = src.t != nullptr ? src.t->model_names.at(src.tool) : no_name;
  for (int pair_idx = 0; pair_idx < pairs; ++pair_idx) {
    auto call_idx = src.next_call++;
    auto text = "call " + std::to_string(call_idx);
    std::vector<tool_call> calls{{"c1", model_name, json{{"text", text}}.dump()}};
    auto params = json{{"name", src.tool}, {"arguments", {{"text", text}}}}.dump();
    auto params_again = params; // for the floor's first side
    std::string method = "tools/call";
    std::string method_again = method;
    double runtime_us = 0;
    double direct_us = 0;
    auto straight_call = [&](std::string& method, std::string& params, double& us) {
      auto start = clock_type::now();
      auto answer =
        ask<std::string>(self, src.direct, "direct call", request_atom::value, src.next_key++,
                         std::move(method), std::move(params), uint32_t{0});
      us = us_since(start);
      return answer.has_value();
    };
    auto through_runtime = [&] {
      if (src.t == nullptr)
        return straight_call(method_again, params_again, runtime_us);
      auto start = clock_type::now();
      auto outputs = ask<std::vector<tool_output>>(self, src.t->tenant, "tool round",
                                                   tool_atom::value, src.run_id, std::move(calls));
      runtime_us = us_since(start);
      return outputs && all_ok(*outputs);
    };
    auto straight = [&] { return straight_call(method, params, direct_us); };
    bool ok = call_idx % 2 == 0 ? through_runtime() && straight() : straight() && through_runtime();
    if (!ok)
      return false;
    if (out != nullptr) {
      out->runtime_us.push_back(runtime_us);
      out->direct_us.push_back(direct_us);
      out->added_us.push_back(runtime_us - direct_us);
    }
  }
  return true;
}

/// One small event appended to `store` and answered (durable, with sync on).
bool store_append(caf::scoped_actor& self, const event_store_actor& store) {
  append_request req;
  req.tenant = "t_bench_store";
  req.stream = "bench";
  req.events.push_back({"bench.appended", R"({"bench":true})"});
  return ask<append_result>(self, store, "append", append_atom::value, std::move(req)).has_value();
}

/// The disk's floor: 200 bytes appended to a file and fdatasync'd, beside
/// one append to each store alone.
struct floor_figures {
  std::vector<double> fdatasync_us;
  std::vector<double> synced_append_us;
  std::vector<double> unsynced_append_us;
};

/// `samples` floor samples on the file `fd` (into `out` unless null). A
/// synced append first, untimed, waits out the store's sync of the records
/// the last rounds queued, so the floor is measured on a quiet disk.
bool measure_floor(caf::scoped_actor& self, int fd, const bench_tenant& synced,
                   const bench_tenant& unsynced, int samples, floor_figures* out) {
  if (!store_append(self, synced.store))
    return false;
  std::string bytes(200, 'x');
  bytes.back() = '\n';
  for (int sample = 0; sample < samples; ++sample) {
    auto start = clock_type::now();
    if (::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())
        || ::fdatasync(fd) != 0) {
      std::perror("floor append + fdatasync");
      return false;
    }
    auto sync_us = us_since(start);
    start = clock_type::now();
    if (!store_append(self, synced.store))
      return false;
    auto synced_us = us_since(start);
    start = clock_type::now();
    if (!store_append(self, unsynced.store))
      return false;
    if (out != nullptr) {
      out->unsynced_append_us.push_back(us_since(start));
      out->fdatasync_us.push_back(sync_us);
      out->synced_append_us.push_back(synced_us);
    }
  }
  return true;
}

/// The three lines against the echo peer and the disk floor.
struct echo_figures {
  paired_figures sync_off;    ///< read-only `echo`, store sync off
  paired_figures sync_on;     ///< read-only `echo`, store sync on
  paired_figures sync_on_mut; ///< mutating `note`, store sync on
  paired_figures same_call;   ///< the same straight call on both sides
  floor_figures floor;
};

/// `opts.pairs` pairs per line, in blocks of `opts.block`: each block runs
/// the four lines one after the other (starting with a different one each
/// block; each line's block after 10 pairs not recorded, so the switch from
/// the other lines' runs and store is not in the figures), then its share
/// of the floor samples; so every figure sees the same machine.
std::optional<echo_figures> measure_added(caf::actor_system& sys, bench_tenant& unsynced,
                                          bench_tenant& synced, const mcp_connection_actor& direct,
                                          const bench_options& opts) {
  caf::scoped_actor self{sys};
  auto off = make_pair_source(self, unsynced, "echo", direct);
  auto on = make_pair_source(self, synced, "echo", direct);
  auto on_mut = make_pair_source(self, synced, "note", direct);
  if (!off || !on || !on_mut)
    return std::nullopt;
  auto floor_path = synced.store_dir / "disk_floor.bench";
  int fd = ::open(floor_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror("open the floor file in the store's directory");
    return std::nullopt;
  }
  pair_source same;
  same.tool = "echo";
  same.direct = direct;
  echo_figures out;
  pair_source* sources[] = {&*off, &*on, &*on_mut, &same};
  paired_figures* lines[] = {&out.sync_off, &out.sync_on, &out.sync_on_mut, &out.same_call};
  // Warm-up: sessions, workers, validators, the disk.
  bool ok = measure_floor(self, fd, synced, unsynced, 20, nullptr);
  for (auto* src : sources)
    ok = ok && measure_pairs(self, *src, 200, nullptr);
  int blocks = (opts.pairs + opts.block - 1) / opts.block;
  for (int block = 0; ok && block < blocks; ++block) {
    int pairs = std::min(opts.block, opts.pairs - block * opts.block);
    for (int line = 0; ok && line < 4; ++line) {
      auto idx = static_cast<std::size_t>((block + line) % 4);
      ok = measure_pairs(self, *sources[idx], 10, nullptr)
           && measure_pairs(self, *sources[idx], pairs, lines[idx]);
    }
    int samples = opts.floor_samples / blocks + (block < opts.floor_samples % blocks ? 1 : 0);
    ok = ok && measure_floor(self, fd, synced, unsynced, samples, &out.floor);
  }
  ::close(fd);
  std::filesystem::remove(floor_path);
  if (!ok)
    return std::nullopt;
  return out;
}

/// Pairs against the SDK peer: a warm-up of 100, then `pairs`.
std::optional<paired_figures> measure_sdk_pairs(caf::actor_system& sys, bench_tenant& t,
                                                const mcp_connection_actor& direct, int pairs) {
  caf::scoped_actor self{sys};
  auto src = make_pair_source(self, t, "echo", direct);
  paired_figures out;
  if (!src || !measure_pairs(self, *src, 100, nullptr) || !measure_pairs(self, *src, pairs, &out))
    return std::nullopt;
  return out;
}

// -- c. memory per idle run ---------------------------------------------------------

struct memory_figures {
  int runs = 0;
  double rss_per_run = 0;
  double heap_per_run = 0;
  double wal_per_run = 0;
  double start_us = 0;        ///< one run start, on average
  int block_runs = 0;         ///< starts in each of the two blocks below
  double first_starts_us = 0; ///< one start, over the first block_runs measured
  double last_starts_us = 0;  ///< ... and over the last block_runs
  /// The answer to one run more than max_live_runs ("" unless live_runs reached it).
  std::string refused;
  std::size_t answer_bytes = 0; ///< a run start's answer
  std::size_t direct_tools = 0; ///< the direct tools of a run's view
  double floor_rss_per_actor = 0;
  double floor_heap_per_actor = 0;
};

std::optional<memory_figures> measure_memory(caf::actor_system& sys, bench_tenant& t,
                                             const bench_options& opts, unsigned max_live_runs) {
  caf::scoped_actor self{sys};
  // Warm-up: more runs than the tenant keeps composed views of (256), so
  // that bounded cache is full before the measure.
  for (int run_idx = 0; run_idx < 300 && t.live_runs < opts.live_runs / 2; ++run_idx)
    if (!start_run(self, t))
      return std::nullopt;
  memory_figures out;
  out.runs = opts.live_runs - t.live_runs;
  auto rss0 = rss_bytes();
  auto heap0 = heap_bytes();
  auto wal0 = wal_bytes(t.store_dir);
  auto start = clock_type::now();
  auto block_start = start;
  int block_runs = out.block_runs = std::min(1000, out.runs);
  for (int run_idx = 0; run_idx < out.runs; ++run_idx) {
    if (run_idx == out.runs - block_runs)
      block_start = clock_type::now();
    if (!start_run(self, t))
      return std::nullopt;
    if (run_idx + 1 == block_runs)
      out.first_starts_us = us_since(start) / block_runs;
  }
  out.last_starts_us = us_since(block_start) / block_runs;
  out.start_us = us_since(start) / out.runs;
  out.rss_per_run = (rss_bytes() - rss0) / out.runs;
  out.heap_per_run = (heap_bytes() - heap0) / out.runs;
  out.wal_per_run = (wal_bytes(t.store_dir) - wal0) / out.runs;
  out.answer_bytes = t.start_answer_bytes;
  out.direct_tools = t.view_direct_tools;
  // One more: refused while max_live_runs are live.
  if (t.live_runs >= static_cast<int>(max_live_runs))
    self
      ->request(t.tenant, ask_timeout, create_atom::value, run_atom::value, t.agent_id,
                std::string{"owner_text_chat"}, std::string{}, std::string{}, std::string{})
      .receive([&](std::string&) { out.refused = "accepted: the bound did not hold"; },
               [&](caf::error& err) { out.refused = "refused: " + message_of(err); });

  // The floor: as many bare CAF actors (an empty behaviour, no state).
  std::vector<caf::actor> bare;
  bare.reserve(static_cast<std::size_t>(out.runs));
  rss0 = rss_bytes();
  heap0 = heap_bytes();
  for (int actor_idx = 0; actor_idx < out.runs; ++actor_idx)
    bare.push_back(sys.spawn(
      [](caf::event_based_actor*) -> caf::behavior { return {[](int value) { return value; }}; }));
  out.floor_rss_per_actor = (rss_bytes() - rss0) / out.runs;
  out.floor_heap_per_actor = (heap_bytes() - heap0) / out.runs;
  for (auto& hdl : bare)
    caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
  return out;
}

// -- d. cancel with eight calls in flight --------------------------------------------

struct cancel_figures {
  std::vector<double> to_closed_us; ///< the run's own figure
  std::vector<double> round_trip_us;
  std::vector<double> direct_us; ///< our client: cancel to the last of eight answers
};

bool measure_cancels(caf::actor_system& sys, bench_tenant& t, const mcp_connection_actor& direct,
                     uint16_t peer_port, const bench_options& opts, cancel_figures& out) {
  caf::scoped_actor caller{sys};
  caf::scoped_actor canceller{sys};
  for (int rep = 0; rep < opts.cancels; ++rep) {
    auto run_id = start_run(caller, t);
    if (!run_id)
      return false;
    auto pending = caller->request(t.tenant, caf::infinite, tool_atom::value, *run_id,
                                   sleep_calls(t, 8, opts.cancel_sleep_ms));
    if (!wait_in_flight(peer_port, 8)) {
      std::fprintf(stderr, "the peer never had eight calls in flight\n");
      return false;
    }
    auto start = clock_type::now();
    auto summary =
      ask<std::string>(canceller, t.tenant, "cancel", cancel_atom::value, run_atom::value, *run_id);
    out.round_trip_us.push_back(us_since(start));
    if (!summary)
      return false;
    --t.live_runs;
    auto doc = json::parse(*summary, nullptr, false);
    if (!doc.is_object()) {
      std::fprintf(stderr, "cancel answered no JSON object\n");
      return false;
    }
    out.to_closed_us.push_back(doc.value("cancel_to_closed_us", -1.0));
    bool all_cancelled = doc.value("cancelled_calls", 0) == 8;
    pending.receive(
      [&](std::vector<tool_output>& outputs) {
        for (const auto& output : outputs)
          all_cancelled = all_cancelled && output.status == "cancelled";
      },
      [&](caf::error& err) {
        std::fprintf(stderr, "cancelled round: %s\n", message_of(err).c_str());
        all_cancelled = false;
      });
    if (!all_cancelled) {
      std::fprintf(stderr, "a cancelled round answered calls that were not cancelled\n");
      return false;
    }
    if (!wait_in_flight(peer_port, 0))
      return false;
  }
  // The floor: eight requests on our own connection, cancelled by key.
  uint64_t next_key = 1'000'000;
  for (int rep = 0; rep < opts.cancels; ++rep) {
    json params{{"name", "sleep"}, {"arguments", {{"ms", opts.cancel_sleep_ms}}}};
    std::vector<uint64_t> keys;
    using handle_type =
      decltype(caller->request(direct, caf::infinite, request_atom::value, uint64_t{},
                               std::string{}, std::string{}, uint32_t{}));
    std::vector<handle_type> pending;
    for (int call_idx = 0; call_idx < 8; ++call_idx) {
      keys.push_back(next_key++);
      pending.push_back(caller->request(direct, caf::infinite, request_atom::value, keys.back(),
                                        std::string{"tools/call"}, params.dump(), uint32_t{0}));
    }
    if (!wait_in_flight(peer_port, 8))
      return false;
    auto start = clock_type::now();
    for (auto key : keys)
      caller->send(direct, cancel_atom::value, key);
    for (auto& handle : pending)
      handle.receive([](std::string&) {}, [](caf::error&) {});
    out.direct_us.push_back(us_since(start));
    if (!wait_in_flight(peer_port, 0))
      return false;
  }
  return true;
}

/// "each side (no target): runtime p50 .. us p99 .. us, straight p50 .. us
/// p99 .. us, x.. / x.."
std::string sides_text(const paired_figures& x) {
  auto rt50 = percentile(x.runtime_us, 0.5);
  auto rt99 = percentile(x.runtime_us, 0.99);
  auto d50 = percentile(x.direct_us, 0.5);
  auto d99 = percentile(x.direct_us, 0.99);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "each side (no target): runtime p50 %4.0f us p99 %5.0f us, straight p50 %4.0f "
                "us p99 %5.0f us, x%.2f / x%.2f",
                rt50, rt99, d50, d99, rt50 / d50, rt99 / d99);
  return buf;
}

/// Section b's lines against the echo peer and the disk floor.
void print_added(const echo_figures& x, const bench_options& opts) {
  std::printf(
    "b. added time per call, paired: the same call through the runtime (tenant -> run -> wave "
    "-> connection; the round's decisions recorded in one write, which a mutating call waits "
    "for before it leaves and every output waits for before it is released; its activity "
    "queued, synced with the next write) and "
    "straight at our client (its own mcp_connection), alternating call by call (the order "
    "swapped every pair), against bench/echo_peer.hpp (a cpp-httplib peer that answers at "
    "once); added = runtime - straight, per pair; %d pairs per line, the three lines, the "
    "method's floor and the disk floor interleaved in blocks of %d pairs:\n",
    opts.pairs, opts.block);
  auto floor50 = percentile(x.floor.fdatasync_us, 0.5);
  auto floor99 = percentile(x.floor.fdatasync_us, 0.99);
  struct line {
    const char* name;
    const paired_figures* figures;
    bool mutating;
  };
  for (auto [name, figures, mutating] :
       {line{"store sync off, read-only `echo`", &x.sync_off, false},
        line{"store sync on,  read-only `echo`", &x.sync_on, false},
        line{"store sync on,  mutating `note` ", &x.sync_on_mut, true}}) {
    auto added50 = percentile(figures->added_us, 0.5);
    auto added99 = percentile(figures->added_us, 0.99);
    if (!mutating)
      std::printf("   %s: added p50 %4.0f us (target <= 40 us: %s), p99 %4.0f us (target <= 100 "
                  "us: %s) | %s\n",
                  name, added50, verdict(added50 <= 40), added99, verdict(added99 <= 100),
                  sides_text(*figures).c_str());
    else
      std::printf("   %s: added p50 %4.0f us (no target), p99 %4.0f us (target <= fdatasync p99 "
                  "+ 100 us = %.0f us: %s) | %s\n",
                  name, added50, added99, floor99 + 100, verdict(added99 <= floor99 + 100),
                  sides_text(*figures).c_str());
  }
  std::printf("   the method's own floor, the same straight call on both sides of a pair: "
              "difference p50 %4.0f us p99 %4.0f us (no target: what two identical paths "
              "differ by on this machine)\n",
              percentile(x.same_call.added_us, 0.5), percentile(x.same_call.added_us, 0.99));
  std::printf("   disk floor, the synced store's directory (%zu samples between the blocks): "
              "200-byte append + fdatasync p50 %.0f us p99 %.0f us (no target: the floor) | one "
              "append alone (ask to answer; no target): synced store p50 %.0f us p99 %.0f us, "
              "unsynced store p50 %.0f us p99 %.0f us\n",
              x.floor.fdatasync_us.size(), floor50, floor99,
              percentile(x.floor.synced_append_us, 0.5), percentile(x.floor.synced_append_us, 0.99),
              percentile(x.floor.unsynced_append_us, 0.5),
              percentile(x.floor.unsynced_append_us, 0.99));
}

} // namespace

int main(int argc, char** argv) {
  bench_options opts;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--paired-only") {
      opts.paired_only = true;
      continue;
    }
    if (arg_idx + 1 == argc)
      break;
    int value = std::max(1, std::atoi(argv[++arg_idx]));
    std::pair<const char*, int*> numeric[] = {
      {"--rounds", &opts.rounds},         {"--pairs", &opts.pairs},
      {"--block", &opts.block},           {"--floor", &opts.floor_samples},
      {"--calls-sync", &opts.calls_sync}, {"--calls-nosync", &opts.calls_nosync},
      {"--runs", &opts.live_runs},        {"--cancels", &opts.cancels}};
    for (auto [name, field] : numeric)
      if (arg == name)
        *field = value;
  }
  std::unique_ptr<test::node_peer> peer;
  if (!opts.paired_only) {
    peer = test::start_sdk_peer({"--json"});
    if (!peer->up()) {
      std::fprintf(stderr, "sdk peer did not start: %s\n", peer->error_output().c_str());
      return 1;
    }
  }

  // Declared before the actor system: the stores close as it goes, then
  // their directories are removed.
  test::temp_dir dir_sync;
  test::temp_dir dir_nosync;
  test::temp_dir dir_echo_sync;
  test::temp_dir dir_echo_nosync;
  test::temp_dir dir_index; // the tenants' history indexes, on disk as a node keeps them
  node_metrics metrics;
  std::optional<wave_figures> waves;
  std::optional<paired_figures> sdk_with_sync;
  std::optional<paired_figures> sdk_without_sync;
  std::optional<echo_figures> added;
  // The even peer (bench/echo_peer.hpp): answers at once, so the pairs'
  // differences carry no millisecond tails of a Node peer.
  httplib::Server echo_server;
  bench::serve_echo(echo_server);
  int echo_port = echo_server.bind_to_any_port("127.0.0.1");
  std::thread echo_thread{[&] { echo_server.listen_after_bind(); }};
  const std::string echo_url = "http://127.0.0.1:" + std::to_string(echo_port) + "/mcp";
  std::optional<memory_figures> memory;
  cancel_figures cancels;
  bool ok = false;
  {
    caf::actor_system_config cfg;
    register_types(cfg);
    set_io_bound_scheduler(cfg);
    cfg.set("scheduler.max-threads", std::size_t{2}); // voxosd's default (caf.scheduler_threads)
    caf::actor_system sys{cfg};
    tenant_services services;
    std::vector<node_config::registered_url> urls{{echo_url, "mcp"}};
    if (peer)
      urls.push_back({peer->url(), "mcp"});
    services.urls = std::make_shared<const url_policy>(std::move(urls));
    services.mcp = mcp_config{};
    services.run = run_config{};
    // As voxosd: each tenant's history index in a directory of its own (in
    // memory, the index held about 2 KiB per run started, for the life of
    // the process; on disk, what a commit has not written yet).
    services.index_dir = dir_index.str();
    std::optional<bench_tenant> synced;
    std::optional<bench_tenant> unsynced;
    if (peer) {
      synced =
        make_tenant(sys, metrics, dir_sync, true, services, peer->url(), "t_bench_sync", sdk_tools);
      unsynced = make_tenant(sys, metrics, dir_nosync, false, services, peer->url(),
                             "t_bench_nosync", sdk_tools);
    }
    auto echo_synced =
      make_tenant(sys, metrics, dir_echo_sync, true, services, echo_url, "t_echo_sync", echo_tools);
    auto echo_unsynced = make_tenant(sys, metrics, dir_echo_nosync, false, services, echo_url,
                                     "t_echo_nosync", echo_tools);
    auto echo_direct = spawn_mcp_connection(
      sys, mcp_endpoint{"echo direct", transport_kind::streamable_http, echo_url, {}},
      services.urls, services.mcp);
    mcp_connection_actor direct;
    if (peer)
      direct = spawn_mcp_connection(
        sys, mcp_endpoint{"direct", transport_kind::streamable_http, peer->url(), {}},
        services.urls, services.mcp);
    if (echo_synced && echo_unsynced && (opts.paired_only || (synced && unsynced))) {
      if (!opts.paired_only)
        waves = measure_waves(sys, *synced, opts);
      if (opts.paired_only || waves)
        added = measure_added(sys, *echo_unsynced, *echo_synced, echo_direct, opts);
      ok = added.has_value();
      if (ok && !opts.paired_only) {
        sdk_with_sync = measure_sdk_pairs(sys, *synced, direct, opts.calls_sync);
        sdk_without_sync = measure_sdk_pairs(sys, *unsynced, direct, opts.calls_nosync);
        ok = sdk_with_sync && sdk_without_sync
             && measure_cancels(sys, *synced, direct, peer->port(), opts, cancels);
      }
      if (ok && !opts.paired_only) {
        memory = measure_memory(sys, *unsynced, opts, services.run.max_live_runs);
        ok = memory.has_value();
      }
    }
    if (direct)
      caf::anon_send_exit(direct, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(echo_direct, caf::exit_reason::user_shutdown);
    for (auto* t :
         {synced ? &*synced : nullptr, unsynced ? &*unsynced : nullptr,
          echo_synced ? &*echo_synced : nullptr, echo_unsynced ? &*echo_unsynced : nullptr})
      if (t != nullptr) {
        caf::anon_send_exit(t->tenant, caf::exit_reason::user_shutdown);
        caf::anon_send_exit(t->store, caf::exit_reason::user_shutdown);
      }
  }
  echo_server.stop();
  echo_thread.join();
  if (!ok) {
    std::fprintf(stderr, "run_bench: a phase failed; no figures\n");
    return 1;
  }
  if (opts.paired_only) {
    print_added(*added, opts);
    return 0;
  }

  // The SDK client against the same peer, once our actors are gone.
  test::temp_dir logs;
  test::child_process sdk{{test::node_path(), "run_wave_bench.mjs", peer->url(), "--rounds",
                           std::to_string(opts.rounds), "--ms", std::to_string(opts.sleep_ms),
                           "--calls", "300"},
                          test::peers_dir().string(),
                          (logs.path() / "sdk.log").string(),
                          {}};
  auto sdk_out = json::parse(sdk.read_all(std::chrono::seconds{300}), nullptr, false);
  sdk.wait();
  if (!sdk_out.is_object()) {
    std::fprintf(stderr, "run_wave_bench.mjs printed no figures: %s\n", sdk.error_output().c_str());
    return 1;
  }

  std::printf("Tool calls through the runtime (tenant -> run -> wave -> connection), in process, "
              "against the SDK-built peer answering JSON; SDK client %s on Node %s\n",
              sdk_out.value("sdk_version", "?").c_str(),
              sdk_out.value("node_version", "?").c_str());

  // a.
  double ratio = waves->wave_ms / waves->single_ms;
  double sdk_single = sdk_out.value("single_ms", 0.0);
  double sdk_wave = sdk_out.value("wave_ms", 0.0);
  std::printf("a. %d x `sleep` %d ms, median of %d (store sync on):\n"
              "   voxos runtime: one call %.1f ms, wave of eight %.1f ms: x%.3f (target <= 1.05: "
              "%s) | sdk client: one call %.1f ms, eight with Promise.all %.1f ms: x%.3f | "
              "voxos wave / sdk eight: x%.3f\n",
              8, opts.sleep_ms, opts.rounds, waves->single_ms, waves->wave_ms, ratio,
              verdict(ratio <= 1.05), sdk_single, sdk_wave, sdk_wave / sdk_single,
              waves->wave_ms / sdk_wave);

  // b.
  print_added(*added, opts);
  std::printf("   against the SDK-built peer (Node), paired the same way (no target: the peer's "
              "own millisecond tails land on either side of a pair):\n");
  for (auto [name, figures] : {std::pair{"store sync on ", &*sdk_with_sync},
                               std::pair{"store sync off", &*sdk_without_sync}})
    std::printf("   %s (%4zu pairs): added p50 %4.0f us p99 %5.0f us | %s\n", name,
                figures->added_us.size(), percentile(figures->added_us, 0.5),
                percentile(figures->added_us, 0.99), sides_text(*figures).c_str());
  std::printf("   sdk client straight to the peer (%d calls; no target): p50 %.0f us p99 %.0f us\n",
              sdk_out.value("calls", 0), sdk_out.value("echo_p50_us", 0.0),
              sdk_out.value("echo_p99_us", 0.0));

  // c.
  std::string refused_line =
    memory->refused.empty()
      ? ""
      : "   run " + std::to_string(opts.live_runs + 1) + ": " + memory->refused + "\n";
  std::printf(
    "c. memory per idle run at %d live runs (store sync off; measured over the last "
    "%d run starts, %.0f us each: first %d %.0f us, last %d %.0f us):\n"
    "   RSS +%.1f KiB per run (target <= 8 KiB: %s; x%.2f of the target), heap in use "
    "+%.1f KiB per run, WAL written %.1f KiB per run (RocksDB's memtable holds about "
    "as much: heap net of it ~%.1f KiB per run)\n"
    "   bare CAF actor (no target): RSS +%.2f KiB, heap +%.2f KiB per actor | run / bare: "
    "RSS x%.1f, heap x%.1f\n"
    "   one run start answers %zu bytes (snapshot + view of %zu direct tools, schemas "
    "included; no target)\n"
    "%s",
    opts.live_runs, memory->runs, memory->start_us, memory->block_runs, memory->first_starts_us,
    memory->block_runs, memory->last_starts_us, memory->rss_per_run / 1024,
    verdict(memory->rss_per_run <= 8 * 1024), memory->rss_per_run / (8 * 1024),
    memory->heap_per_run / 1024, memory->wal_per_run / 1024,
    (memory->heap_per_run - memory->wal_per_run) / 1024, memory->floor_rss_per_actor / 1024,
    memory->floor_heap_per_actor / 1024, memory->rss_per_run / memory->floor_rss_per_actor,
    memory->heap_per_run / memory->floor_heap_per_actor, memory->answer_bytes, memory->direct_tools,
    refused_line.c_str());

  // d.
  auto closed99 = percentile(cancels.to_closed_us, 0.99);
  auto trip99 = percentile(cancels.round_trip_us, 0.99);
  std::printf("d. cancel with eight `sleep` %d ms calls in flight at the peer, %d rounds (store "
              "sync on; target <= 10 ms):\n"
              "   run's cancel_to_closed_us p50 %.0f us p99 %.0f us (%s) | cancel round trip "
              "(incl. recording the round and run.cancelled) p50 %.0f us p99 %.0f us (%s)\n"
              "   our client cancelling eight requests straight (no target): cancel to the last "
              "answer p50 %.0f us p99 %.0f us | run's to-closed / straight p50: x%.2f\n",
              opts.cancel_sleep_ms, opts.cancels, percentile(cancels.to_closed_us, 0.5), closed99,
              verdict(closed99 <= 10'000), percentile(cancels.round_trip_us, 0.5), trip99,
              verdict(trip99 <= 10'000), percentile(cancels.direct_us, 0.5),
              percentile(cancels.direct_us, 0.99),
              percentile(cancels.to_closed_us, 0.5) / percentile(cancels.direct_us, 0.5));
  return 0;
}
