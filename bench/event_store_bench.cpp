// Event-store append throughput with WAL sync on: our batched event_store
// actor with concurrent writers, beside unbatched single-put synced writes to
// RocksDB, in the same run on the same disk.
//
//   event_store_bench [--writers N] [--seconds S] [--dir DIR]
//
// N defaults to 128 closed-loop writers: the writer commits one group while
// the acknowledged writers of the previous group send their next appends, so
// each group holds about N/2 appends and each append waits for two syncs.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "messages/register.hpp"
#include "storage/event_codec.hpp"
#include "storage/event_db.hpp"
#include "storage/keys.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
const std::string payload =
  R"({"tool":"web_search_exa","decision":"allow","reason":"grant","agent":"a_1234567890","run":"r_1234567890"})";

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// Unbatched: one synced Put per event, sequential, to a fresh RocksDB with
// default options.
double single_put_rate(const std::string& dir, double budget_s) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(opts, dir, &raw).ok())
    std::abort();
  std::unique_ptr<rocksdb::DB> db{raw};
  rocksdb::WriteOptions wopts;
  wopts.sync = true;
  uint64_t count = 0;
  auto start = clock_type::now();
  while (seconds_since(start) < budget_s) {
    // The same key and value bytes the event store writes for one event.
    auto key = voxos::keys::event_key("t_bench", "audit.0", count + 1);
    auto value = voxos::event_codec::encode(wall_us(), "tool.decision", payload);
    if (!db->Put(wopts, key, value).ok())
      std::abort();
    ++count;
  }
  return static_cast<double>(count) / seconds_since(start);
}

// Flags the bench writers share with main(); outlive the actor system.
struct run_flags {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> acked{0};
  std::atomic<int> done{0};
};

// One closed-loop writer: its own stream, one append in flight, the next sent
// from the acknowledgement of the previous (no message to itself in between).
struct writer_state {
  static inline const char* name = "bench_writer";
  voxos::append_request req;
};

using writer_actor = caf::stateful_actor<writer_state>;

void append_next(writer_actor* self, const voxos::event_store_actor& store, run_flags& flags) {
  if (flags.stop) {
    ++flags.done;
    self->quit();
    return;
  }
  // No per-request timeout: CAF 0.17 keeps one in a clock multimap per request,
  // a cost of the harness, not of the store.
  self->request(store, caf::infinite, voxos::append_atom::value, self->state.req)
    .then(
      [self, store, &flags](const voxos::append_result&) {
        ++flags.acked;
        append_next(self, store, flags);
      },
      [](caf::error&) { std::abort(); });
}

caf::behavior writer_behavior(writer_actor* self, voxos::event_store_actor store, int writer_idx,
                              run_flags* flags) {
  auto& req = self->state.req;
  req.tenant = "t_bench";
  req.stream = "audit." + std::to_string(writer_idx);
  req.events.push_back({"tool.decision", payload});
  append_next(self, store, *flags);
  // Everything happens in response handlers; this keeps the actor alive.
  return {[](caf::unit_t) {}};
}

// Batched: `writers` actors, each appending one event at a time to its own
// stream and sending the next as soon as the previous is acknowledged.
double batched_rate(const std::string& dir, int writers, double budget_s, double& mean_batch,
                    double& mean_sync_us) {
  // Declared before the actor system: its actors use them until it is gone.
  voxos::node_metrics metrics;
  run_flags flags;
  caf::actor_system_config cfg;
  voxos::register_types(cfg);
  cfg.set("scheduler.max-threads", size_t{2});
  caf::actor_system sys{cfg};
  auto db = voxos::event_db::open(dir, {});
  if (!db)
    std::abort();
  auto store =
    voxos::spawn_event_store(sys, std::shared_ptr<voxos::event_db>(std::move(*db)), metrics, {});
  auto start = clock_type::now();
  for (int writer_idx = 0; writer_idx < writers; ++writer_idx)
    sys.spawn(writer_behavior, store, writer_idx, &flags);
  while (seconds_since(start) < budget_s)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  flags.stop = true;
  auto elapsed = seconds_since(start);
  while (flags.done < writers)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  mean_batch = static_cast<double>(metrics.append_requests.load())
               / static_cast<double>(std::max<uint64_t>(1, metrics.write_batches.load()));
  mean_sync_us = static_cast<double>(metrics.sync_latency.sum_us())
                 / static_cast<double>(std::max<uint64_t>(1, metrics.sync_latency.count()));
  caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
  return static_cast<double>(flags.acked.load()) / elapsed;
}

} // namespace

int main(int argc, char** argv) {
  int writers = 128;
  double budget_s = 3.0;
  std::string dir = (std::filesystem::temp_directory_path() / "voxos-bench-store").string();
  for (int arg_idx = 1; arg_idx + 1 < argc; arg_idx += 2) {
    std::string arg = argv[arg_idx];
    if (arg == "--writers")
      writers = std::atoi(argv[arg_idx + 1]);
    else if (arg == "--seconds")
      budget_s = std::atof(argv[arg_idx + 1]);
    else if (arg == "--dir")
      dir = argv[arg_idx + 1];
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto single = single_put_rate(dir + "/single", budget_s);
  double mean_batch = 0;
  double mean_sync_us = 0;
  auto batched = batched_rate(dir + "/batched", writers, budget_s, mean_batch, mean_sync_us);
  std::filesystem::remove_all(dir);
  std::printf("event store appends, WAL sync on (%.1f s each)\n", budget_s);
  std::printf("  RocksDB single Put, sync, sequential:   %10.0f appends/s (no target)\n", single);
  std::printf("  event_store actor, %3d writers, batched: %10.0f appends/s (mean %.1f per batch, "
              "%.0f us per write; no target)\n",
              writers, batched, mean_batch, mean_sync_us);
  std::printf("  ratio batched / single-put:             %10.1fx (target >= 20x: %s)\n",
              batched / single, batched / single >= 20 ? "met" : "MISSED");
  return 0;
}
