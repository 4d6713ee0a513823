// Durable work: the queue's throughput to CAF workers with WAL sync on
// (group commit batches the syncs), beside the event store's own rate for
// the same appends in the same run.
//
//   work_bench [--items N] [--workers W] [--capacity C]
//
// Schedules: 10,000 one-shots due in the same second, made through the
// schedule keeper as the tool desk makes them; each one's lateness is its
// work item's durable time minus the due second (p99 target 50 ms). Then
// 10,000 idle ones (due in a year) loaded by a keeper afresh: the heap it
// holds per schedule (target 1 KiB).
//
// Queue: N items enqueued, then W worker actors (capacity C each) register;
// each completes every lease it is pushed at once (an append of the answer
// and the completion to the item's chat, synced). Throughput is items
// completed per second from the registration to the last completion.
// Peer: the same N completion appends sent straight to the event store by
// W*C closed-loop writers (what the queue cannot beat: its floor).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <algorithm>
#include <ctime>

#include <malloc.h>
#include <unistd.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/node/node.hpp"
#include "actors/schedule/schedule_keeper.hpp"
#include "actors/work/work_queue.hpp"
#include "messages/register.hpp"
#include "storage/event_db.hpp"

namespace {

using namespace voxos;
using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
namespace wk = voxos::work;

// Short: a request's timeout stays armed in CAF's clock until it is due,
// and keeps the actor system from shutting down until then.
constexpr auto wait = std::chrono::seconds(5);

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

const char* verdict(bool met) {
  return met ? "met" : "MISSED";
}

wk::item item_number(std::size_t n) {
  wk::item it;
  it.item_id = wk::scheduled_item_id("sc_bench", static_cast<int64_t>(n));
  it.k = wk::kind::scheduled_turn;
  it.agent_id = "a_bench";
  it.chat_id = "c_" + std::to_string(n % 64);
  it.run_id = wk::run_id_of(it.item_id);
  it.text = "Check the forecast for the site visit and say if it will rain";
  it.schedule_id = "sc_bench";
  it.occurrence_s = static_cast<int64_t>(n);
  return it;
}

/// A worker that completes each pushed lease at once; counts completions.
caf::behavior completing_worker(caf::event_based_actor* self, work_queue_actor queue,
                                std::atomic<std::size_t>* done) {
  return {[self, queue, done](work_atom, offer_atom, const std::string& text) {
    auto lease = json::parse(text);
    json body{{"item_id", lease["item_id"]},
              {"lease_id", lease["lease_id"]},
              {"answer", "It will be dry until the evening."}};
    self->request(queue, wait, work_atom::value, std::string{"complete"}, body.dump())
      .then([done](const std::string&) { done->fetch_add(1); }, [](caf::error&) { std::abort(); });
  }};
}

struct store_world {
  std::filesystem::path dir;
  node_metrics metrics;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  event_store_actor store;

  explicit store_world(const std::string& name) {
    dir = std::filesystem::temp_directory_path()
          / ("voxos-work-bench-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    register_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
    event_db_options opts;
    opts.sync = true; // WAL sync on: group commit batches it
    opts.projectors = node_projectors();
    auto db = event_db::open((dir / "store").string(), opts);
    if (!db) {
      std::fprintf(stderr, "cannot open the store: %s\n", db.error().message().c_str());
      std::exit(1);
    }
    store = spawn_event_store(*sys, std::shared_ptr<event_db>(std::move(*db)), metrics, {});
  }

  ~store_world() {
    caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
    store = nullptr;
    sys.reset();
    std::filesystem::remove_all(dir);
  }
};

/// Items per second through the queue: enqueue rate, then completion rate.
std::pair<double, double> queue_rate(std::size_t items, std::size_t workers, uint32_t capacity) {
  store_world world{"queue"};
  auto& sys = *world.sys;
  caf::scoped_actor self{sys};
  work_queue_options opts;
  opts.max_pending = items + 1;
  auto queue = spawn_work_queue(self.ptr(), "t_bench", world.store, opts);
  // Enqueue with many in flight (as a schedule keeper fires a due second).
  auto start = clock_type::now();
  using handle = decltype(self->request(queue, wait, enqueue_atom::value, std::string{},
                                        std::vector<event_draft>{}));
  std::vector<handle> pending;
  pending.reserve(items);
  for (std::size_t n = 0; n < items; ++n)
    pending.push_back(self->request(queue, wait, enqueue_atom::value,
                                    wk::to_json(item_number(n)).dump(),
                                    std::vector<event_draft>{}));
  for (auto& h : pending)
    h.receive([](const std::string&) {}, [](caf::error&) { std::abort(); });
  double enqueue_rate = static_cast<double>(items) / seconds_since(start);

  std::atomic<std::size_t> done{0};
  std::vector<caf::actor> pool;
  start = clock_type::now();
  for (std::size_t w = 0; w < workers; ++w) {
    pool.push_back(sys.spawn(completing_worker, queue, &done));
    self->request(queue, wait, work_atom::value, pool.back(), capacity)
      .receive([](bool) {}, [](caf::error&) { std::abort(); });
  }
  while (done.load() < items)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  double complete_rate = static_cast<double>(items) / seconds_since(start);
  for (auto& w : pool)
    caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(queue, caf::exit_reason::user_shutdown);
  return {enqueue_rate, complete_rate};
}

/// The same completion appends, straight to the event store from `writers`
/// closed-loop writers.
double store_rate(std::size_t items, std::size_t writers) {
  store_world world{"store"};
  auto& sys = *world.sys;
  std::atomic<std::size_t> done{0};
  std::atomic<std::size_t> next{0};
  auto writer = [&](caf::event_based_actor* self) -> caf::behavior {
    auto send_one = std::make_shared<std::function<void()>>();
    *send_one = [self, &done, &next, items, store = world.store, send_one] {
      auto n = next.fetch_add(1);
      if (n >= items) {
        self->quit();
        return;
      }
      auto it = item_number(n);
      append_request req;
      req.tenant = "t_bench";
      req.stream = wk::stream_of(it.chat_id);
      req.events.push_back({"turn.reported", json{{"run_id", it.run_id},
                                                  {"turn", 1},
                                                  {"user", it.text},
                                                  {"assistant", "It will be dry."}}
                                               .dump()});
      req.events.push_back(wk::settled_event(wk::completed, it));
      self->request(store, wait, append_atom::value, std::move(req))
        .then(
          [&done, send_one](const append_result&) {
            done.fetch_add(1);
            (*send_one)();
          },
          [](caf::error&) { std::abort(); });
    };
    (*send_one)();
    return {[](caf::message&) {}};
  };
  auto start = clock_type::now();
  for (std::size_t w = 0; w < writers; ++w)
    sys.spawn(writer);
  while (done.load() < items)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  return static_cast<double>(items) / seconds_since(start);
}

/// "YYYY-MM-DDTHH:MM:SS" of a UTC instant (a local time in zone UTC).
std::string iso_utc_local(int64_t utc_s) {
  auto at = static_cast<std::time_t>(utc_s);
  std::tm out{};
  gmtime_r(&at, &out);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &out);
  return text;
}

// -- schedules: 10,000 due in the same second; memory per idle schedule ------

struct schedule_figures {
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
  std::size_t fired = 0;
  double heap_per_schedule = 0;
};

std::size_t heap_in_use() {
  auto info = ::mallinfo2();
  return info.uordblks + info.hblkhd;
}

/// `count` one-shot schedules due at the same second, made through the
/// keeper's "create" (as the tool desk makes them), in 100 chats; each
/// one's lateness is its work.enqueued event's durable time minus the due
/// second. Then the keeper is started afresh over the same store and the
/// heap it holds for `count` idle schedules (none due for a year) is
/// measured against the heap before it loaded them.
schedule_figures schedule_lateness(std::size_t count) {
  store_world world{"schedules"};
  auto& sys = *world.sys;
  caf::scoped_actor self{sys};
  work_queue_options qopts;
  qopts.max_pending = count + 1;
  auto queue = spawn_work_queue(self.ptr(), "t_bench", world.store, qopts);
  schedule_keeper_options kopts;
  kopts.limits.max_schedules = 2 * count + 1;
  auto keeper = spawn_schedule_keeper(self.ptr(), "t_bench", world.store, queue, kopts);
  auto make = [&](int64_t due_s, std::size_t n) {
    json args{{"task_name", "Reminder " + std::to_string(n)},
              {"instruction", "Remind the owner to check the site visit forecast"},
              {"timing", {{"kind", "once"}, {"at", iso_utc_local(due_s)}}},
              {"timezone", "UTC"}};
    json body{{"agent_id", "a_bench"},
              {"chat_id", "c_" + std::to_string(n % 100)},
              {"run_id", "r_bench"},
              {"arguments", args}};
    return self->request(keeper, wait, schedule_atom::value, std::string{"create"}, body.dump());
  };
  // Due a whole second at least 8 s away: time to make them all first.
  auto due_s = std::time(nullptr) + 8;
  using handle = decltype(make(0, 0));
  std::vector<handle> pending;
  for (std::size_t n = 0; n < count; ++n)
    pending.push_back(make(due_s, n));
  for (auto& h : pending)
    h.receive(
      [](const std::string& answer) {
        if (answer.find("\"error\"") != std::string::npos) {
          std::fprintf(stderr, "a schedule was refused: %s\n", answer.c_str());
          std::abort();
        }
      },
      [](caf::error&) { std::abort(); });
  pending.clear();
  // Wait until every one fired.
  schedule_figures out;
  std::vector<double> lateness;
  for (int tries = 0; tries < 600 && lateness.size() < count; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::time(nullptr) < due_s + 1)
      continue;
    lateness.clear();
    std::string after_stream;
    uint64_t after_seq = 0;
    for (;;) {
      std::vector<event_record> page;
      self
        ->request(world.store, wait, scan_atom::value, std::string{"t_bench"}, std::string{"chat."},
                  after_stream, after_seq, uint32_t{10'000})
        .receive([&](std::vector<event_record>& events) { page = std::move(events); },
                 [](caf::error&) { std::abort(); });
      for (const auto& ev : page)
        if (ev.type == wk::enqueued)
          lateness.push_back(static_cast<double>(ev.time_us - due_s * 1'000'000) / 1000.0);
      if (page.size() < 10'000)
        break;
      after_stream = page.back().stream;
      after_seq = page.back().seq;
    }
  }
  out.fired = lateness.size();
  std::sort(lateness.begin(), lateness.end());
  if (!lateness.empty()) {
    out.p50_ms = lateness[lateness.size() / 2];
    out.p99_ms = lateness[std::min(lateness.size() - 1, lateness.size() * 99 / 100)];
    out.max_ms = lateness.back();
  }
  // Idle schedules: as many again, due in a year, then a keeper afresh
  // over the store loads them all.
  auto year_s = std::time(nullptr) + 365 * 86400;
  for (std::size_t n = 0; n < count; ++n)
    pending.push_back(make(year_s, n));
  for (auto& h : pending)
    h.receive([](const std::string&) {}, [](caf::error&) { std::abort(); });
  caf::anon_send_exit(keeper, caf::exit_reason::kill);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::malloc_trim(0);
  auto before = heap_in_use();
  auto fresh = spawn_schedule_keeper(self.ptr(), "t_bench", world.store, queue, kopts);
  std::string health;
  self->request(fresh, wait, health_atom::value)
    .receive([&](std::string& h) { health = std::move(h); }, [](caf::error&) { std::abort(); });
  auto held = json::parse(health).value("schedules", 0);
  out.heap_per_schedule =
    held > 0 ? static_cast<double>(heap_in_use() - before) / static_cast<double>(held) : 0;
  caf::anon_send_exit(fresh, caf::exit_reason::kill);
  caf::anon_send_exit(queue, caf::exit_reason::kill);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::size_t items = 40'000;
  std::size_t workers = 8;
  uint32_t capacity = 16;
  for (int idx = 1; idx + 1 < argc; idx += 2) {
    std::string arg = argv[idx];
    if (arg == "--items")
      items = std::strtoull(argv[idx + 1], nullptr, 10);
    else if (arg == "--workers")
      workers = std::strtoull(argv[idx + 1], nullptr, 10);
    else if (arg == "--capacity")
      capacity = static_cast<uint32_t>(std::strtoul(argv[idx + 1], nullptr, 10));
  }
  std::size_t schedules = 10'000;
  auto due = schedule_lateness(schedules);
  std::printf("schedules: %zu one-shots due in the same second, WAL sync on\n", schedules);
  std::printf("  fired and durably queued:    %zu of %zu\n", due.fired, schedules);
  std::printf("  lateness after the due second: p50 %.1f ms, p99 %.1f ms (target <= 50 ms: %s), "
              "max %.1f ms\n",
              due.p50_ms, due.p99_ms, verdict(due.fired == schedules && due.p99_ms <= 50),
              due.max_ms);
  std::printf("  memory per idle schedule (heap the keeper holds for %zu): %.0f B (target <= "
              "1 KiB: %s)\n",
              schedules, due.heap_per_schedule, verdict(due.heap_per_schedule <= 1024));
  auto [enqueue_rate, queue_complete] = queue_rate(items, workers, capacity);
  auto floor = store_rate(items, workers * capacity);
  std::printf("queue: %zu items, %zu CAF workers x capacity %u, WAL sync on (group commit)\n",
              items, workers, capacity);
  std::printf("  enqueue (all in flight):     %9.0f items/s  (no target)\n", enqueue_rate);
  std::printf("  offered + completed:         %9.0f items/s  target >= 20,000: %s\n",
              queue_complete, verdict(queue_complete >= 20'000));
  std::printf("  peer: the same appends straight to the store: %9.0f appends/s; queue/peer x%.2f "
              "(no target)\n",
              floor, queue_complete / floor);
  return 0;
}
