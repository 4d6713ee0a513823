// The account history: search_agent_history and the index rebuild, in
// process, over a real RocksDB event store.
//   store    100,000 reported turns (turn.reported on chat.<id>, 5,000 chats
//            of 20 turns, realistic text from turn_text.hpp, deterministic)
//            of one tenant and 100 of another, written with sync off;
//   rebuild  each tenant's history index rebuilt from the store
//            (rebuild_history, then a commit), turns per second, beside the
//            floor: paging through the same events without indexing them;
//   search   search_agent_history (the tool function: query, index, snippets,
//            the JSON result) with `--limit` excerpts (default 20, the
//            schema's most): the large tenant alone; then, in alternating
//            blocks, the small tenant alone and the small tenant while the
//            large one is searched on another thread (each tenant's index
//            its own), the large tenant's figures taken in those blocks.
// Targets: large tenant p99 <= 5 ms while the small one is searched; small
// tenant p99 concurrent <= 1.2x alone; rebuild >= 50,000 turns/s.
//
//   history_bench [--turns N] [--queries N] [--blocks N] [--limit N]
//                 [--in-memory] [--dir DIR]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tools/history.hpp"
#include "storage/event_db.hpp"
#include "turn_text.hpp"

namespace {

using namespace voxos;
using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr const char* large_tenant = "t_large";
constexpr const char* small_tenant = "t_small";
constexpr int turns_per_chat = 20;

double micros_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
}

double quantile(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

const char* verdict(bool met) {
  return met ? "met" : "MISSED";
}

std::string load_average() {
  std::ifstream in{"/proc/loadavg"};
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

uint64_t directory_bytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir, ec))
    if (entry.is_regular_file(ec))
      total += entry.file_size(ec);
  return total;
}

[[noreturn]] void fail(const std::string& what, const status& st) {
  std::fprintf(stderr, "history_bench: %s: %s\n", what.c_str(), st.message().c_str());
  std::exit(1);
}

/// Writes `turns` reported turns of `tenant` (chats of turns_per_chat, a
/// minute apart); answers the text bytes written.
uint64_t fill(event_db& db, const std::string& tenant, int turns, uint64_t seed) {
  bench::turn_generator gen{seed};
  uint64_t bytes = 0;
  int64_t now_us = 1'700'000'000'000'000;
  std::vector<append_request> requests;
  auto flush = [&] {
    std::vector<const append_request*> group;
    for (const auto& req : requests)
      group.push_back(&req);
    for (auto& res : db.append_group(group, now_us))
      if (!res)
        fail("append", res.error());
    requests.clear();
  };
  for (int chat_idx = 0; chat_idx * turns_per_chat < turns; ++chat_idx) {
    gen.start_chat();
    append_request req;
    req.tenant = tenant;
    req.stream = "chat.c_" + std::to_string(chat_idx);
    for (int turn = 1; turn <= turns_per_chat && chat_idx * turns_per_chat + turn <= turns;
         ++turn) {
      auto text = gen.next();
      bytes += text.user.size() + text.assistant.size();
      req.events.push_back({"turn.reported", json{{"run_id", "r_" + std::to_string(chat_idx)},
                                                  {"turn", turn},
                                                  {"user", std::move(text.user)},
                                                  {"assistant", std::move(text.assistant)}}
                                               .dump()});
    }
    requests.push_back(std::move(req));
    if (requests.size() == 256)
      flush();
    now_us += 60'000'000;
  }
  flush();
  return bytes;
}

/// Pages through a tenant's chat streams without indexing: the floor.
double read_rate(const event_db& db, const std::string& tenant) {
  auto start = clock_type::now();
  uint64_t events = 0;
  tenant_query query;
  query.tenant = tenant;
  query.stream_prefix = "chat.";
  query.limit = 4096;
  while (true) {
    auto page = db.read_tenant(query);
    if (!page)
      fail("read", page.error());
    events += page->size();
    if (page->size() < query.limit)
      break;
    query.after_stream = page->back().stream;
    query.after_seq = page->back().seq;
  }
  return static_cast<double>(events) / (micros_since(start) / 1e6);
}

/// Microseconds this thread has run.
double thread_cpu_us() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
}

struct tenant_index {
  std::unique_ptr<history_index> index;
  tool_context ctx;
  double rebuild_s = 0;
  double rebuild_cpu_s = 0; ///< the rebuilding thread's CPU time
  uint64_t indexed = 0;
};

tenant_index rebuild(const event_db& db, const std::string& tenant, const std::string& dir) {
  history_options opts;
  opts.index.dir = dir;
  auto start = clock_type::now();
  auto cpu_start = thread_cpu_us();
  auto index = history_index::open(tenant, opts);
  if (!index)
    fail("open index", index.error());
  auto report = rebuild_history(**index, db);
  if (!report)
    fail("rebuild", report.error());
  // What a commit writes belongs to the rebuild (in memory it does nothing).
  if (auto st = (*index)->commit(); !st)
    fail("commit", st);
  tenant_index out;
  out.rebuild_s = micros_since(start) / 1e6;
  out.rebuild_cpu_s = (thread_cpu_us() - cpu_start) / 1e6;
  out.indexed = report->indexed;
  out.index = std::move(*index);
  out.ctx.tenant_id = tenant;
  out.ctx.agent_id = "a_bench";
  out.ctx.run_id = "r_bench";
  out.ctx.chat_id = "c_bench";
  return out;
}

std::vector<json> make_queries(std::size_t count, int limit, uint64_t seed) {
  bench::query_generator gen{seed};
  std::vector<json> out;
  for (std::size_t idx = 0; idx < count; ++idx)
    out.push_back(json{{"query", gen.next()}, {"limit", limit}});
  return out;
}

/// Searches' durations: on the wall clock (what a caller waits) and on the
/// searching thread's CPU clock (what the search costs, without the time
/// the thread was preempted).
struct timings {
  std::vector<double> wall_us;
  std::vector<double> cpu_us;
};

/// One search through the tool, timed into `into`.
void search_once(const tenant_index& t, const json& args, timings& into) {
  auto start = clock_type::now();
  auto cpu_start = thread_cpu_us();
  auto outcome = search_agent_history(*t.index, t.ctx, args);
  into.cpu_us.push_back(thread_cpu_us() - cpu_start);
  into.wall_us.push_back(micros_since(start));
  if (outcome.is_error) {
    std::fprintf(stderr, "history_bench: search failed: %s\n", outcome.result.dump().c_str());
    std::exit(1);
  }
}

void print_row(const std::string& what, const timings& t) {
  std::printf(
    "  %-38s p50 %7.1f us  p99 %7.1f us   thread CPU p50 %7.1f us  p99 %7.1f us   (%zu)\n",
    what.c_str(), quantile(t.wall_us, 0.5), quantile(t.wall_us, 0.99), quantile(t.cpu_us, 0.5),
    quantile(t.cpu_us, 0.99), t.wall_us.size());
}

} // namespace

int main(int argc, char** argv) {
  int turns = 100'000;
  std::size_t queries = 2'000;
  int blocks = 10;
  int limit = 20;
  bool in_memory = false;
  std::string base;
  for (int arg = 1; arg < argc; ++arg) {
    auto is = [&](const char* flag) { return std::strcmp(argv[arg], flag) == 0 && arg + 1 < argc; };
    if (is("--turns"))
      turns = std::atoi(argv[++arg]);
    else if (is("--queries"))
      queries = static_cast<std::size_t>(std::atoi(argv[++arg]));
    else if (is("--blocks"))
      blocks = std::atoi(argv[++arg]);
    else if (is("--limit"))
      limit = std::atoi(argv[++arg]);
    else if (is("--dir"))
      base = argv[++arg];
    else if (std::strcmp(argv[arg], "--in-memory") == 0)
      in_memory = true;
  }
  bool own_dir = base.empty();
  if (own_dir) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "history-bench-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      return 1;
    base = tmpl;
  }

  // -- the store ----------------------------------------------------------------------
  event_db_options store_opts;
  store_opts.sync = false;
  auto db = event_db::open(base + "/store", store_opts);
  if (!db)
    fail("open store", db.error());
  auto large_bytes = fill(**db, large_tenant, turns, 42);
  fill(**db, small_tenant, 100, 7);
  std::printf("store: %d turns of %s (%d chats), 100 of %s, %.0f bytes of text per turn; load "
              "average %s\n",
              turns, large_tenant, (turns + turns_per_chat - 1) / turns_per_chat, small_tenant,
              static_cast<double>(large_bytes) / turns, load_average().c_str());

  // -- rebuild --------------------------------------------------------------------------
  auto floor = read_rate(**db, large_tenant);
  auto index_dir = [&](const char* tenant) {
    return in_memory ? std::string{} : base + "/index-" + tenant;
  };
  auto large = rebuild(**db, large_tenant, index_dir(large_tenant));
  auto small = rebuild(**db, small_tenant, index_dir(small_tenant));
  auto rate = static_cast<double>(large.indexed) / large.rebuild_s;
  std::string where =
    in_memory ? std::string{"in memory"}
              : std::to_string(directory_bytes(index_dir(large_tenant)) >> 20) + " MiB on disk";
  std::printf("rebuild %s: %llu turns in %.2f s = %.0f turns/s (%.0f per second of the thread's "
              "CPU; index %s); reading the events alone: %.0f turns/s\n  target >= 50,000 "
              "turns/s: %s\n",
              large_tenant, static_cast<unsigned long long>(large.indexed), large.rebuild_s, rate,
              static_cast<double>(large.indexed) / large.rebuild_cpu_s, where.c_str(), floor,
              verdict(rate >= 50'000));

  // -- search ---------------------------------------------------------------------------
  auto large_queries = make_queries(queries, limit, 42);
  auto small_queries = make_queries(queries, limit, 7);
  std::printf("search_agent_history, limit %d, %zu distinct queries per tenant:\n", limit, queries);
  // Warm-up, then the large tenant alone.
  timings warm_up, large_alone;
  for (std::size_t idx = 0; idx < std::min<std::size_t>(200, queries); ++idx) {
    search_once(large, large_queries[idx], warm_up);
    search_once(small, small_queries[idx], warm_up);
  }
  for (const auto& args : large_queries)
    search_once(large, args, large_alone);

  // Alternating blocks: the small tenant alone, then beside the large one.
  timings small_alone, small_beside, large_beside;
  std::size_t large_next = 0;
  std::size_t small_next = 0;
  auto per_block = std::max<std::size_t>(1, queries / static_cast<std::size_t>(blocks));
  for (int block = 0; block < blocks; ++block) {
    for (std::size_t idx = 0; idx < per_block; ++idx)
      search_once(small, small_queries[small_next++ % queries], small_alone);
    std::atomic<bool> large_done{false};
    std::thread other{[&] {
      for (std::size_t idx = 0; idx < per_block / 4 + 1; ++idx)
        search_once(large, large_queries[large_next++ % queries], large_beside);
      large_done = true;
    }};
    while (!large_done)
      search_once(small, small_queries[small_next++ % queries], small_beside);
    other.join();
  }
  auto large_name = std::string{large_tenant} + " (" + std::to_string(turns) + " turns)";
  auto small_name = std::string{small_tenant} + " (100 turns)";
  print_row(large_name + " alone", large_alone);
  print_row(large_name + " beside " + small_tenant, large_beside);
  print_row(small_name + " alone", small_alone);
  print_row(small_name + " beside " + large_tenant, small_beside);
  auto large_p99_ms = quantile(large_beside.wall_us, 0.99) / 1000;
  auto ratio = quantile(small_beside.wall_us, 0.99) / quantile(small_alone.wall_us, 0.99);
  auto cpu_ratio = quantile(small_beside.cpu_us, 0.99) / quantile(small_alone.cpu_us, 0.99);
  std::printf("  target %s p99 <= 5 ms beside %s (%.2f ms): %s\n", large_tenant, small_tenant,
              large_p99_ms, verdict(large_p99_ms <= 5));
  std::printf("  target %s p99 beside %s <= 1.2x alone (x%.2f; thread CPU x%.2f): %s\n",
              small_tenant, large_tenant, ratio, cpu_ratio, verdict(ratio <= 1.2));

  large.index.reset();
  small.index.reset();
  db->reset();
  if (own_dir) {
    std::error_code ec;
    std::filesystem::remove_all(base, ec);
  }
  return 0;
}
