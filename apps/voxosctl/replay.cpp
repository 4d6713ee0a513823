// Replays a run's trace against a fresh node: a new actor system with an
// event store on a temporary RocksDB directory, and a run actor given what
// the recorded run was given (its snapshot, the view composed from the
// recorded server definitions, its catalog key, its limits). The run's MCP
// connections are replaced by actors that serve the recorded answers: each
// tools/call the replayed run sends is answered with what the recorded run
// got for the same server and params (in recorded order for repeats). A
// request the trace never saw answers "unavailable: not in the trace". An
// answer recorded as cancelled is held until the replayed run cancels that
// request. Each recorded round's calls go to the run as the host handed them
// over (and the recorded cancel, once the requests it cancelled are held),
// and its outputs are compared with the recorded ones.
//
// Redacted Grounding Lite results (trace.hpp): the recorded server answers
// the redacted form, so the replayed run's output for such a call is the
// redacted form too, compared with the recorded (redacted) output: the same
// call reached the same server and settled alike, nothing about the Maps
// content itself. A turn whose place cards were redacted is replayed (it
// clears the turn's searches as before) but its cards are not compared; the
// report says how many outputs and cards were redacted.
#include "apps/voxosctl/replay.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/event_store/event_store.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/run/run.hpp"
#include "actors/run/trace.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/digest.hpp"
#include "storage/event_db.hpp"

namespace voxos {

namespace {

/// Recorded answers by server id and params, in recorded order.
struct answer_book {
  std::map<std::pair<std::string, std::string>, std::deque<traced_answer>> answers;
  /// Requests held until their cancel (answers recorded as cancelled).
  std::atomic<std::size_t> held{0};
};

bool recorded_as_cancelled(const traced_answer& answer) {
  return answer.code == static_cast<uint8_t>(errc::unavailable)
         && answer.text == "request cancelled";
}

struct recorded_server_state {
  static inline const char* name = "recorded_server";
  std::shared_ptr<answer_book> book;
  std::string server_id;
  std::map<uint64_t, caf::typed_response_promise<std::string>> held;
};

using recorded_server_pointer = mcp_connection_actor::stateful_pointer<recorded_server_state>;

/// The recorded answer to a request, in recorded order.
caf::result<std::string> recorded_answer(recorded_server_pointer self, uint64_t key,
                                         const std::string& method, const std::string& params) {
  if (method != "tools/call")
    return make_error(errc::unavailable, "not in the trace");
  auto& answers = self->state.book->answers;
  auto found = answers.find({self->state.server_id, params});
  if (found == answers.end() || found->second.empty())
    return make_error(errc::unavailable, "not in the trace");
  auto answer = std::move(found->second.front());
  found->second.pop_front();
  if (recorded_as_cancelled(answer)) {
    auto promise = self->make_response_promise<std::string>();
    self->state.held.emplace(key, promise);
    ++self->state.book->held;
    return promise;
  }
  if (answer.code == 0)
    return std::move(answer.text);
  return make_error(static_cast<errc>(answer.code), std::move(answer.text));
}

/// Plays one server from the trace behind the mcp_connection interface.
mcp_connection_actor::behavior_type recorded_server(recorded_server_pointer self,
                                                    std::shared_ptr<answer_book> book,
                                                    std::string server_id) {
  self->state.book = std::move(book);
  self->state.server_id = std::move(server_id);
  return {
    [](connect_atom) -> caf::result<std::string> { return std::string{"{}"}; },
    [self](request_atom, uint64_t key, const std::string& method, const std::string& params,
           uint32_t) -> caf::result<std::string> {
      return recorded_answer(self, key, method, params);
    },
    [self](request_atom, uint64_t key, const std::string& method, const std::string& params,
           uint32_t,
           bool) -> caf::result<std::string> { return recorded_answer(self, key, method, params); },
    [self](cancel_atom, uint64_t key) {
      auto found = self->state.held.find(key);
      if (found == self->state.held.end())
        return;
      found->second.deliver(make_error(errc::unavailable, "request cancelled"));
      self->state.held.erase(found);
    },
    [](list_atom, tool_atom) -> caf::result<std::string> {
      return make_error(errc::unavailable, "not in the trace");
    },
    [](health_atom) -> caf::result<std::string> { return std::string{"{}"}; },
    [self](close_atom) -> caf::result<bool> {
      self->quit();
      return true;
    },
  };
}

} // namespace

int replay_trace(const std::string& path) {
  std::ifstream in{path};
  if (!in) {
    std::fprintf(stderr, "replay: cannot open %s\n", path.c_str());
    return 2;
  }
  auto trace = read_trace(in);
  if (!trace) {
    std::fprintf(stderr, "replay: %s\n", trace.error().message().c_str());
    return 2;
  }
  if (!trace->proves.empty())
    std::printf("trace %s proves: %s\n", trace->run_id.c_str(), trace->proves.c_str());

  // A fresh node's parts: actor system, event store on a temporary database.
  auto dir = std::filesystem::temp_directory_path() / ("voxos-replay-" + digest::random_hex(8));
  struct cleanup {
    std::filesystem::path dir;
    ~cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove_dir{dir};
  event_db_options db_opts;
  db_opts.sync = false;
  auto db = event_db::open(dir.string(), db_opts);
  if (!db) {
    std::fprintf(stderr, "replay: %s\n", db.error().message().c_str());
    return 2;
  }
  // The metrics outlive the actor system: actors count themselves out in it.
  node_metrics metrics;
  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};
  auto store = spawn_event_store(sys, std::shared_ptr<event_db>(std::move(*db)), metrics, {});

  // The run, given what the recorded run was given.
  run_setup setup;
  setup.tenant_id = trace->tenant.tenant_id;
  setup.run_id = trace->run_id;
  setup.snapshot = trace->snapshot;
  auto view = compose_view(trace->snapshot, trace->tenant, view_options{}, trace->kind);
  if (view.catalog_mode) {
    auto catalog = tool_catalog::build(view, trace->key);
    if (!catalog) {
      std::fprintf(stderr, "replay: %s\n", catalog.error().message().c_str());
      return 2;
    }
    setup.catalog = std::make_shared<const tool_catalog>(std::move(*catalog));
  }
  setup.view = std::move(view);
  auto book = std::make_shared<answer_book>();
  std::size_t to_hold = 0;
  for (auto& answer : trace->answers) {
    to_hold += recorded_as_cancelled(answer) ? 1 : 0;
    book->answers[{answer.server_id, answer.params}].push_back(answer);
  }
  std::vector<mcp_connection_actor> servers;
  for (const auto& [server_id, rec] : trace->tenant.servers) {
    servers.push_back(sys.spawn(recorded_server, book, server_id));
    setup.connections.emplace(server_id, servers.back());
  }
  setup.adapters = trace->adapters;
  setup.limits = trace->limits;
  setup.store = store;
  auto run = spawn_run(sys, std::move(setup), metrics);

  // Each round as the host handed it over, its outputs compared; between
  // rounds, the responses refused whole (their errors compared) and the
  // turns reported (their place cards compared), in recorded order.
  caf::scoped_actor self{sys};
  int differing = 0;
  std::size_t next_between = 0;
  auto replay_between = [&](uint64_t after_round) {
    for (; next_between < trace->between.size()
           && trace->between[next_between].after_round == after_round;
         ++next_between) {
      const auto& step = trace->between[next_between];
      auto round_no = static_cast<unsigned long long>(after_round);
      if (step.what == traced_between::kind::refused) {
        std::string got = "(answered)";
        self->request(run, std::chrono::minutes(1), tool_atom::value, step.calls)
          .receive([](const std::vector<tool_output>&) {},
                   [&](caf::error& err) {
                     got = std::string{to_string(code_of(err))} + ": " + message_of(err);
                   });
        if (got == step.error) {
          std::printf("after round %llu: the response refused alike\n", round_no);
        } else {
          ++differing;
          std::printf("after round %llu: the refusal differs\n  recorded: %s\n  replayed: %s\n",
                      round_no, step.error.c_str(), got.c_str());
        }
        continue;
      }
      std::string cards = "(no answer)";
      self->request(run, std::chrono::minutes(1), turn_atom::value, step.assistant)
        .receive([&](const std::string& answered) { cards = answered; },
                 [&](caf::error& err) { cards = "(refused: " + message_of(err) + ")"; });
      if (step.during_round) {
        // its cards came from the round's searches so far: not reproducible
        std::printf("after round %llu: a turn reported during that round, not compared\n",
                    round_no);
      } else if (step.cards_redacted != 0) {
        // the results they came from were redacted too: nothing to compare
        std::printf("after round %llu: the turn's %zu place cards redacted in the trace, not "
                    "compared\n",
                    round_no, step.cards_redacted);
      } else if (cards == step.cards) {
        std::printf("after round %llu: the turn's place cards identical\n", round_no);
      } else {
        ++differing;
        std::printf("after round %llu: the turn's place cards differ\n  recorded: %s\n"
                    "  replayed: %s\n",
                    round_no, step.cards.c_str(), cards.c_str());
      }
    }
  };
  replay_between(0);
  for (auto& round : trace->rounds) {
    std::vector<tool_output> replayed;
    bool failed = false;
    auto answered = self->request(run, std::chrono::minutes(1), tool_atom::value, round.calls);
    if (round.round == trace->cancelled_in_round) {
      // The recorded cancel came while these requests were in flight.
      for (int waited_ms = 0; book->held.load() < to_hold && waited_ms < 10'000; ++waited_ms)
        std::this_thread::sleep_for(std::chrono::milliseconds{1});
      self->send(run, cancel_atom::value);
    }
    std::move(answered).receive(
      [&](std::vector<tool_output>& outputs) { replayed = std::move(outputs); },
      [&](caf::error& err) {
        std::printf("round %llu: the replayed run refused it: %s\n",
                    static_cast<unsigned long long>(round.round), message_of(err).c_str());
        failed = true;
      });
    auto diff = failed ? std::string{} : compare_outputs(round.outputs, replayed);
    if (failed) {
      ++differing;
    } else if (diff.empty()) {
      std::printf("round %llu: %zu outputs identical", static_cast<unsigned long long>(round.round),
                  replayed.size());
      if (round.redacted != 0)
        std::printf(" (%zu Grounding Lite results redacted in the trace, compared redacted)",
                    round.redacted);
      std::printf("\n");
    } else {
      ++differing;
      std::printf("round %llu: outputs differ\n%s", static_cast<unsigned long long>(round.round),
                  diff.c_str());
    }
    replay_between(round.round);
  }
  anon_send_exit(run, caf::exit_reason::user_shutdown);
  for (const auto& conn : servers)
    anon_send_exit(conn, caf::exit_reason::user_shutdown);
  anon_send_exit(store, caf::exit_reason::user_shutdown);
  std::printf("%s: %zu rounds, %d differing\n", differing == 0 ? "identical" : "DIFFERENT",
              trace->rounds.size(), differing);
  return differing == 0 ? 0 : 1;
}

} // namespace voxos
