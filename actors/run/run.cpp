#include "actors/run/run.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "actors/run/wave.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "transport/json_text.hpp"

namespace voxos {

namespace {

using nlohmann::json;

constexpr auto store_timeout = std::chrono::seconds(30);
constexpr const char* audit_stream = "audit";

enum class run_phase : uint8_t { idle, executing, cancelling };

std::string_view to_string(run_phase x) {
  switch (x) {
  case run_phase::idle:
    return "idle";
  case run_phase::executing:
    return "executing";
  case run_phase::cancelling:
    return "cancelling";
  }
  return "idle";
}

struct run_state {
  static inline const char* name = "run";
  run_setup setup;
  /// What the run remembers across rounds; made by its first round or turn
  /// (an idle run that never called holds none).
  std::unique_ptr<run_memory> memory;
  run_phase phase = run_phase::idle;
  /// The round in progress (on the heap: an idle run holds a pointer).
  std::unique_ptr<tool_round> round;
  caf::typed_response_promise<std::vector<tool_output>> round_promise;
  /// The wave in flight and the round's calls it carries.
  std::unique_ptr<wave> in_flight;
  std::vector<std::size_t> wave_calls;
  /// The params each call of the wave was sent with (for the trace).
  std::vector<std::string> wave_params;
  /// Per call of the round: time from the round's start to its answer.
  std::vector<int64_t> call_us;
  int64_t round_started_us = 0;
  /// When the wave in flight was sent.
  int64_t wave_started_us = 0;
  /// The round's decisions are not yet acknowledged by the store (durable
  /// when its WAL sync is on); its outputs wait for them (see start_round).
  bool decisions_pending = false;
  /// Every call of the round is settled; the answer waits for the decisions.
  bool answer_waiting = false;
  // Counters (health).
  uint64_t rounds = 0;
  uint64_t calls = 0;
  uint64_t waves = 0;
  std::size_t peak_wave = 0;
  // Cancellation.
  int64_t cancel_started_us = 0;
  /// When the last request in flight at the cancel came back (closed).
  int64_t cancel_closed_us = 0;
  std::size_t cancelled_calls = 0;
  std::optional<caf::typed_response_promise<std::string>> cancel_promise;
  /// Listeners of the activity (shared with the exit hook that tells them
  /// the run ended).
  std::shared_ptr<std::vector<caf::actor>> listeners;
  node_metrics* metrics = nullptr;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
};

using self_pointer = run_actor::stateful_pointer<run_state>;

/// The run's memory, made on first use.
run_memory& memory_of(run_state& st) {
  if (!st.memory)
    st.memory = std::make_unique<run_memory>();
  return *st.memory;
}

/// Listeners one run keeps.
constexpr std::size_t max_listeners = 8;

/// Sends one activity event (JSON text) to every listener.
void emit(self_pointer self, const std::string& text) {
  for (const auto& listener : *self->state.listeners)
    caf::anon_send(listener, tool_atom::value, text);
}

// Activity events, written by hand (every round of a run that a host holds
// makes several), with their keys in sorted order, as nlohmann writes them.

/// {"calls":[{"call_id","name","reason","server_id","status","tool"}],"event":"round","round":N}
std::string round_event(const tool_round& round, uint64_t round_no) {
  std::string out = "{\"calls\":[";
  bool first = true;
  for (const auto& call : round.calls) {
    out += first ? "{" : ",{";
    first = false;
    append_json_member(out, "call_id", call.call_id);
    out += ',';
    append_json_member(out, "name", call.name);
    out += ',';
    append_json_member(out, "reason", call.reason);
    out += ',';
    append_json_member(out, "server_id",
                       call.entry != nullptr ? call.entry->server_id() : std::string_view{});
    out += ',';
    append_json_member(out, "status", to_string(call.status));
    out += ',';
    append_json_member(out, "tool",
                       call.entry != nullptr ? call.entry->tool() : std::string_view{});
    out += '}';
  }
  return out + "],\"event\":\"round\",\"round\":" + std::to_string(round_no) + '}';
}

/// {"calls":[call_id...],"event":"wave","round":N}
std::string wave_event(const tool_round& round, const std::vector<std::size_t>& wave_calls,
                       uint64_t round_no) {
  std::string out = "{\"calls\":[";
  for (std::size_t idx = 0; idx < wave_calls.size(); ++idx) {
    if (idx != 0)
      out += ',';
    append_json_string(out, round.calls[wave_calls[idx]].call_id);
  }
  return out + "],\"event\":\"wave\",\"round\":" + std::to_string(round_no) + '}';
}

/// {"call_id","event":"call","reason","round","status","us"}
std::string call_event(const round_call& call, uint64_t round_no, int64_t us) {
  std::string out = "{";
  append_json_member(out, "call_id", call.call_id);
  out += ",\"event\":\"call\",";
  append_json_member(out, "reason", call.reason);
  out += ",\"round\":" + std::to_string(round_no) + ',';
  append_json_member(out, "status", to_string(call.status));
  return out + ",\"us\":" + std::to_string(us) + '}';
}

std::string run_stream(const run_state& st) {
  return "run." + st.setup.run_id;
}

/// How long a record may take: `awaited` records (the run's end) wait at
/// most store_timeout; a round's records set no timer (a timer per round
/// costs a wake of CAF's clock thread on the call path), though its outputs
/// wait for its decisions. A store that is gone refuses them at once, and
/// the store answers every append it takes (a stopped writer fails what
/// waits).
enum class wait : bool { not_awaited, awaited };

/// Whether a record is synced before the store acknowledges it: intents
/// (decisions) and ends are; a round's activity (what already happened) is
/// durable with the store's next synced write (append_request::sync_deferred),
/// so a round costs one WAL sync, not two.
enum class sync : bool { now, deferred };

/// Appends one event to `stream` of the run's tenant; then `done(ok)`.
template <class F>
void record(self_pointer self, std::string stream, std::string type, std::string data, wait how,
            F done, sync when = sync::now) {
  append_request req;
  req.tenant = self->state.setup.tenant_id;
  req.stream = stream;
  req.events.push_back({type, data});
  req.sync_deferred = when == sync::deferred;
  auto timeout = how == wait::awaited ? caf::duration{store_timeout} : caf::duration{caf::infinite};
  // The run's own records (its rounds, its end) feed the tenant's history
  // once the store acknowledges them; the audit's do not.
  std::optional<event_record> history;
  if (self->state.setup.desk && stream.rfind("run.", 0) == 0)
    history = event_record{req.tenant, std::move(stream), 0, 0, std::move(type), std::move(data)};
  self->request(self->state.setup.store, timeout, append_atom::value, std::move(req))
    .then(
      [self, done, history = std::move(history)](const append_result& appended) mutable {
        if (history) {
          history->seq = appended.first_seq;
          history->time_us = wall_clock_us();
          self->send(self->state.setup.desk, history_atom::value, std::move(*history));
        }
        done(true);
      },
      [done](caf::error& err) mutable {
        log::error("run", "recording failed: " + message_of(err));
        done(false);
      });
}

void run_next_wave(self_pointer self);

/// Ends a run whose decisions or activity the store refused: the round
/// still open (possibly one that started after the refused record was
/// queued) and a cancel waiting for it fail with storage_failure; nothing
/// is left unanswered.
void end_unrecorded(self_pointer self, const char* why) {
  auto& st = self->state;
  if (st.round && st.round_promise.pending())
    st.round_promise.deliver(
      make_error(errc::storage_failure, "the run could not record its tool round"));
  if (st.cancel_promise && st.cancel_promise->pending())
    st.cancel_promise->deliver(make_error(errc::storage_failure, why));
  self->quit(make_error(errc::storage_failure, why));
}

/// Ends a cancellation: records it, answers the canceller, ends the run.
void finish_cancel(self_pointer self) {
  auto& st = self->state;
  auto closed_us =
    (st.cancel_closed_us != 0 ? st.cancel_closed_us : steady_clock_us()) - st.cancel_started_us;
  json summary{{"run_id", st.setup.run_id},
               {"cancelled_calls", st.cancelled_calls},
               {"cancel_to_closed_us", closed_us}};
  record(self, run_stream(st), "run.cancelled", summary.dump(), wait::awaited,
         [self, summary](bool) {
           if (self->state.cancel_promise)
             self->state.cancel_promise->deliver(summary.dump());
           self->quit();
         });
}

/// Records the settled round's activity on the run's stream; a run that
/// cannot record it ends (its next request fails, and so does a round that
/// started before the refusal came back).
void record_activity(self_pointer self, const tool_round& round) {
  auto& st = self->state;
  // {"round":N,"calls":[{"call_id","name","status","reason","us"[,"server_id","tool"]}]},
  // written by hand: this is on every round's path.
  std::string activity = "{\"round\":" + std::to_string(st.rounds) + ",\"calls\":[";
  for (std::size_t call_idx = 0; call_idx < round.calls.size(); ++call_idx) {
    const auto& call = round.calls[call_idx];
    activity += call_idx == 0 ? "{" : ",{";
    append_json_member(activity, "call_id", call.call_id);
    activity += ',';
    append_json_member(activity, "name", call.name);
    activity += ',';
    append_json_member(activity, "status", to_string(call.status));
    activity += ',';
    append_json_member(activity, "reason", call.reason);
    activity += ",\"us\":" + std::to_string(st.call_us[call_idx]);
    if (call.entry != nullptr) {
      activity += ',';
      append_json_member(activity, "server_id", call.entry->server_id());
      activity += ',';
      append_json_member(activity, "tool", call.entry->tool());
    }
    activity += '}';
  }
  activity += "]}";
  record(
    self, run_stream(st), "tools.round", std::move(activity), wait::not_awaited,
    [self](bool ok) {
      if (!ok)
        end_unrecorded(self, "the run cannot record its activity");
    },
    sync::deferred);
}

/// Records the round's activity (every call is settled), then answers it:
/// the record is in the store's queue before anyone can read after the
/// answer. Not before the round's decisions are acknowledged: until then the
/// answer waits (answer_waiting), and their acknowledgment answers it.
void answer_round(self_pointer self) {
  auto& st = self->state;
  if (st.decisions_pending) {
    st.answer_waiting = true;
    return;
  }
  st.answer_waiting = false;
  auto round = std::move(*st.round);
  st.round.reset();
  auto outputs = round_outputs(round);
  if (st.setup.trace)
    st.setup.trace->outputs(st.rounds, round, outputs);
  record_activity(self, round);
  if (!st.listeners->empty())
    emit(self, "{\"event\":\"answered\",\"round\":" + std::to_string(st.rounds) + '}');
  st.round_promise.deliver(std::move(outputs));
  if (st.phase == run_phase::cancelling) {
    for (const auto& call : round.calls)
      if (call.status == call_status::cancelled)
        ++st.cancelled_calls;
    finish_cancel(self);
    return;
  }
  st.phase = run_phase::idle;
}

void on_wave_answers(self_pointer self, std::vector<wave_answer>& answers) {
  auto& st = self->state;
  auto& round = *st.round;
  auto now = steady_clock_us();
  st.metrics->wave_latency.observe(static_cast<uint64_t>(now - st.wave_started_us));
  for (std::size_t idx = 0; idx < st.wave_calls.size(); ++idx) {
    auto call_idx = st.wave_calls[idx];
    result<std::string> answer =
      idx >= answers.size()
        ? result<std::string>{status::error(errc::internal, "the wave lost an answer")}
      : answers[idx].code == 0
        ? result<std::string>{std::move(answers[idx].text)}
        : result<std::string>{
          status::error(static_cast<errc>(answers[idx].code), std::move(answers[idx].text))};
    if (st.setup.trace && idx < answers.size() && idx < st.wave_params.size())
      st.setup.trace->mcp(st.rounds, std::string{round.calls[call_idx].entry->server_id()},
                          st.wave_params[idx], answers[idx].code,
                          answer ? *answer : answer.error().message());
    settle_call(round.calls[call_idx], round, memory_of(st), st.setup.limits, answer);
    remember_places(round.calls[call_idx], st.setup.adapters, memory_of(st));
    st.call_us[call_idx] = now - st.round_started_us;
    st.metrics->call_latency.observe(static_cast<uint64_t>(st.call_us[call_idx]));
    if (!st.listeners->empty())
      emit(self, call_event(round.calls[call_idx], st.rounds, st.call_us[call_idx]));
  }
  st.wave_calls.clear();
  st.wave_params.clear();
  if (st.phase == run_phase::cancelling && st.cancel_closed_us == 0)
    st.cancel_closed_us = now;
  run_next_wave(self);
}

/// The wave in flight has every answer: the round goes on with them.
void finish_wave(self_pointer self) {
  auto& st = self->state;
  auto answers = st.in_flight->take_answers();
  st.in_flight.reset();
  on_wave_answers(self, answers);
}

/// Call `call_idx` of wave `number` answered: once the wave's last call is
/// in, the round goes on with every answer. (An answer of an earlier wave
/// finds none: every wave ends only once each of its calls came back or its
/// target ended.)
void wave_answered(self_pointer self, uint64_t number, std::size_t call_idx, wave_answer answer) {
  auto& st = self->state;
  if (st.in_flight && st.in_flight->number() == number
      && st.in_flight->answer(call_idx, std::move(answer)))
    finish_wave(self);
}

/// Sends every call of the next wave from the run itself (wave.hpp).
void send_wave(self_pointer self, std::vector<wave_call> calls) {
  auto& st = self->state;
  auto number = st.waves;
  st.in_flight = std::make_unique<wave>(self, std::move(calls), number);
  auto& sent = st.in_flight->calls();
  for (std::size_t call_idx = 0; call_idx < sent.size(); ++call_idx) {
    auto& call = sent[call_idx];
    auto on_result = [self, number, call_idx](std::string& result) {
      wave_answered(self, number, call_idx, {0, std::move(result)});
    };
    auto on_error = [self, number, call_idx](caf::error& err) {
      auto code =
        err.category() == error_category() ? err.code() : static_cast<uint8_t>(errc::unavailable);
      wave_answered(self, number, call_idx, {code, message_of(err)});
    };
    if (call.desk)
      self
        ->request(call.desk, std::chrono::milliseconds{st.setup.call_timeout_ms}, tool_atom::value,
                  *call.context, call.integration_id, std::move(call.params))
        .then(on_result, on_error);
    else
      self
        ->request(call.connection, caf::infinite, request_atom::value,
                  st.in_flight->key_of(call_idx), std::string{"tools/call"}, std::move(call.params),
                  st.setup.call_timeout_ms, call.resend_safe)
        .then(on_result, on_error);
  }
}

void run_next_wave(self_pointer self) {
  auto& st = self->state;
  auto& round = *st.round;
  if (st.phase == run_phase::cancelling)
    cancel_round(round);
  auto next = next_wave(round, st.setup.limits);
  if (next.empty()) {
    answer_round(self);
    return;
  }
  std::vector<wave_call> calls;
  calls.reserve(next.size());
  for (auto call_idx : next) {
    auto& call = round.calls[call_idx];
    if (call.entry->origin != tool_origin::mcp) {
      // Internal and phone integration tools: the tenant's tool desk.
      wave_call desk_call;
      desk_call.desk = st.setup.desk;
      desk_call.context = st.setup.context;
      if (call.entry->origin == tool_origin::integration)
        desk_call.integration_id = std::string{call.entry->server_id()};
      desk_call.params = call_params(call);
      calls.push_back(std::move(desk_call));
      st.wave_calls.push_back(call_idx);
      if (st.setup.trace)
        st.wave_params.push_back(calls.back().params);
      continue;
    }
    auto conn = st.setup.connections.find(std::string{call.entry->server_id()});
    if (conn == st.setup.connections.end()) {
      // The tenant gives a connection for every server of the snapshot.
      settle_call(call, round, memory_of(st), st.setup.limits,
                  status::error(errc::internal, "no connection for this server"));
      continue;
    }
    wave_call mcp_call;
    mcp_call.connection = conn->second;
    mcp_call.params = call_params(call);
    mcp_call.resend_safe = call.resend_safe;
    calls.push_back(std::move(mcp_call));
    st.wave_calls.push_back(call_idx);
    if (st.setup.trace)
      st.wave_params.push_back(calls.back().params);
  }
  if (calls.empty()) {
    run_next_wave(self);
    return;
  }
  ++st.waves;
  st.peak_wave = std::max(st.peak_wave, calls.size());
  // Told before the wave is sent, so that its connections run first on this
  // thread (the scheduler takes the newest job first).
  if (!st.listeners->empty())
    emit(self, wave_event(round, st.wave_calls, st.rounds));
  st.wave_started_us = steady_clock_us();
  send_wave(self, std::move(calls));
}

/// The round's audit record, as decided (before any wave):
/// {"run_id","agent_id","channel","round","decisions":[[tool,server_id,reason],...]},
/// written by hand: this is on every round's path.
std::string decided_record(const run_state& st) {
  std::string out = "{";
  append_json_member(out, "run_id", st.setup.run_id);
  out += ',';
  append_json_member(out, "agent_id", st.setup.snapshot.agent_id);
  out += ',';
  append_json_member(out, "channel", to_string(st.setup.snapshot.chan));
  out += ",\"round\":" + std::to_string(st.rounds) + ",\"decisions\":[";
  bool first = true;
  for (const auto& call : st.round->calls) {
    out += first ? "[" : ",[";
    first = false;
    append_json_string(out, call.entry != nullptr ? call.entry->tool() : call.name);
    out += ',';
    append_json_string(out, call.entry != nullptr ? call.entry->server_id() : std::string_view{});
    out += ',';
    append_json_string(out, call.reason);
    out += ']';
  }
  out += "]}";
  return out;
}

caf::result<std::vector<tool_output>> start_round(self_pointer self, std::vector<tool_call>& in) {
  auto& st = self->state;
  if (st.phase != run_phase::idle)
    return make_error(errc::conflict, "this run is already executing a tool round");
  std::vector<tool_call> traced;
  if (st.setup.trace)
    traced = in; // (a refused response is traced whole)
  auto made = make_round(std::move(in), st.setup.limits);
  if (!made) {
    if (st.setup.trace)
      st.setup.trace->refused(st.rounds, traced, made.error());
    return to_error(made.error());
  }
  st.round = std::make_unique<tool_round>(std::move(*made));
  if (st.setup.trace) {
    std::vector<tool_call> accepted;
    for (const auto& call : st.round->calls)
      accepted.push_back({call.call_id, call.name, call.arguments});
    st.setup.trace->calls(st.rounds + 1, accepted);
  }
  st.round_started_us = steady_clock_us();
  st.call_us.assign(st.round->calls.size(), 0);
  ++st.rounds;
  st.calls += st.round->calls.size();
  st.phase = run_phase::executing;
  decide_round(*st.round, st.setup.view, st.setup.catalog.get(), st.setup.snapshot,
               st.setup.adapters, memory_of(st), st.setup.limits);
  st.round_promise = self->make_response_promise<std::vector<tool_output>>();
  if (!st.listeners->empty())
    emit(self, round_event(*st.round, st.rounds));
  // The decisions (as decided, before any wave) go to the audit stream in
  // one write. A call that may change something leaves only once that
  // write is acknowledged (durable when the store syncs its WAL), so no
  // effect happens without its record. Read-only calls leave at once, beside
  // the write. Either way the outputs wait for it: nothing reaches the host
  // that the audit could lose. A run whose decisions cannot be recorded ends,
  // failing its round.
  bool write_ahead = std::any_of(st.round->calls.begin(), st.round->calls.end(), [](const auto& c) {
    return c.status == call_status::pending && !c.read_only;
  });
  st.decisions_pending = true;
  // Queued before the first wave is sent: the scheduler runs the newest job
  // first, so a read-only wave's connection still takes it before the store.
  record(self, audit_stream, "calls.decided", decided_record(st), wait::not_awaited,
         [self, write_ahead](bool ok) {
           auto& st = self->state;
           if (!ok) {
             end_unrecorded(self, "the run cannot record its decisions");
             return;
           }
           st.decisions_pending = false;
           if (write_ahead)
             run_next_wave(self);
           else if (st.answer_waiting)
             answer_round(self);
         });
  if (!write_ahead)
    run_next_wave(self);
  return st.round_promise;
}

run_actor::behavior_type run_behavior(self_pointer self, run_setup setup, node_metrics* metrics) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.metrics = metrics;
  st.counters = &metrics->actor("run");
  st.running.emplace(*st.counters);
  st.listeners = std::make_shared<std::vector<caf::actor>>();
  // Listeners learn that the run ended, and why.
  self->attach_functor([listeners = st.listeners](const caf::error& reason) {
    auto why = reason ? message_of(reason) : std::string{"ended"};
    for (const auto& listener : *listeners)
      caf::anon_send(listener, close_atom::value, why);
  });
  // A connection (or desk) that ended holds none of the wave's calls any more.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.in_flight && st.in_flight->target_down(msg.source))
      finish_wave(self);
  });
  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](tool_atom,
                 std::vector<tool_call>& calls) -> caf::result<std::vector<tool_output>> {
      note();
      return start_round(self, calls);
    },
    [self, note](cancel_atom) -> caf::result<std::string> {
      note();
      auto& st = self->state;
      if (st.phase == run_phase::cancelling)
        return make_error(errc::conflict, "this run is already being cancelled");
      st.cancel_started_us = steady_clock_us();
      if (st.setup.trace)
        st.setup.trace->cancel();
      auto promise = self->make_response_promise<std::string>();
      st.cancel_promise = promise;
      auto was = st.phase;
      st.phase = run_phase::cancelling;
      if (was == run_phase::idle)
        finish_cancel(self);
      // Executing: the wave in flight is cancelled. (While a round's
      // decisions are awaited no wave is out: once they are in, the round
      // ends with its unsent calls cancelled.)
      else if (st.in_flight)
        st.in_flight->cancel();
      return promise;
    },
    [self, note](close_atom) -> caf::result<bool> {
      note();
      auto& st = self->state;
      if (st.phase != run_phase::idle)
        return make_error(errc::conflict, "this run is executing a tool round");
      auto promise = self->make_response_promise<bool>();
      record(self, run_stream(st), "run.finished",
             json{{"run_id", st.setup.run_id}, {"rounds", st.rounds}, {"calls", st.calls}}.dump(),
             wait::awaited, [self, promise](bool ok) mutable {
               promise.deliver(ok);
               self->quit();
             });
      return promise;
    },
    [self, note](turn_atom, const std::string& assistant) {
      note();
      auto& st = self->state;
      auto cards = turn_place_cards(assistant, memory_of(st));
      if (st.setup.trace)
        st.setup.trace->turn(st.rounds, assistant, cards, st.phase != run_phase::idle);
      return cards;
    },
    [self, note](listen_atom, caf::actor& listener) {
      note();
      auto& listeners = *self->state.listeners;
      if (listeners.size() == max_listeners)
        listeners.erase(listeners.begin());
      listeners.push_back(std::move(listener));
    },
    [self, note](health_atom) {
      note();
      const auto& st = self->state;
      return json{{"run_id", st.setup.run_id},
                  {"phase", to_string(st.phase)},
                  {"rounds", st.rounds},
                  {"calls", st.calls},
                  {"waves", st.waves},
                  {"peak_wave", st.peak_wave},
                  {"in_flight", st.in_flight ? st.in_flight->in_flight() : 0}}
        .dump();
    },
  };
}

} // namespace

run_actor spawn_run(caf::actor_system& sys, run_setup setup, node_metrics& metrics) {
  return sys.spawn(run_behavior, std::move(setup), &metrics);
}

} // namespace voxos
