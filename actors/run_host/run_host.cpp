#include "actors/run_host/run_host.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <unordered_map>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/directory/token_cache.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/tenant/tenant.hpp"
#include "config/clock.hpp"
#include "messages/error.hpp"
#include "storage/digest.hpp"
#include "transport/json_text.hpp"

namespace voxos {

namespace {

using nlohmann::json;

// A token secret longer than this matches nothing; refuse it before hashing.
constexpr std::size_t max_token_bytes = 512;
constexpr auto directory_timeout = std::chrono::seconds(30);

/// A run a host actor started.
struct hosted_run {
  tenant_actor tenant;
  std::string run_id;
};

/// A host's runs are checked for ones that ended another way (HTTP DELETE,
/// a tenant's limits, another host's cancel, a failure) once it has this
/// many, then each time the count doubles past what the last check left.
/// So a host's list holds at most twice its live runs, plus this floor.
constexpr std::size_t prune_floor = 64;
constexpr auto prune_timeout = std::chrono::seconds(30);

/// The runs one host actor started, as far as the run host knows.
struct host_runs {
  std::vector<hosted_run> runs;
  std::size_t prune_at = prune_floor;
};

struct run_host_state {
  static inline const char* name = "run_host";
  directory_actor directory;
  std::string node_id;
  /// The node's token cache (token_cache.hpp), shared with the HTTP API;
  /// the directory forgets a token there when it revokes it.
  std::shared_ptr<node_token_cache> tokens;
  /// The runs each host actor started and has not ended (a host is
  /// monitored while it has any).
  std::unordered_map<caf::actor_addr, host_runs> runs_by_host;
  actor_counters* counters = nullptr;
  node_metrics* metrics = nullptr;
  std::optional<running_guard> running;

  ~run_host_state() {
    if (metrics)
      for (const auto& [host, entry] : runs_by_host)
        metrics->hosted_runs.fetch_sub(entry.runs.size());
  }
};

using self_pointer = run_host_actor::stateful_pointer<run_host_state>;

/// Resolves `token` to its tenant actor (remembered, or asked of the
/// directory), then calls `fn(tenant)`; answers `promise` with the error
/// otherwise.
template <class Promise, class F>
void with_tenant(self_pointer self, const std::string& token, Promise promise, F fn) {
  auto& st = self->state;
  if (token.empty() || token.size() > max_token_bytes) {
    promise.deliver(make_error(errc::unauthorized, "the token is not valid"));
    return;
  }
  auto key = digest::sha256_hex(token);
  auto asked_us = steady_clock_us();
  auto known = st.tokens->find(key, asked_us);
  if (known.value)
    if (auto tenant = caf::actor_cast<tenant_actor>(known.value->tenant.lock())) {
      fn(tenant);
      return;
    }
  // The identity's tenant actor, remembered until the identity's entry
  // expires, never longer.
  auto with_identity = [self, key, promise, fn](const tenant_identity& who) mutable {
    self->request(self->state.directory, directory_timeout, config_atom::value, who.tenant_id)
      .then(
        [self, key, fn](const tenant_actor& tenant) mutable {
          self->state.tokens->update(key, steady_clock_us(), [&](remembered_token& entry) {
            entry.tenant = caf::actor_cast<caf::weak_actor_ptr>(tenant);
          });
          fn(tenant);
        },
        [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
  };
  if (known.value) {
    with_identity(known.value->identity);
    return;
  }
  self->request(st.directory, directory_timeout, auth_atom::value, token)
    .then(
      [self, key, asked_us, generation = known.generation,
       with_identity](const tenant_identity& who) mutable {
        self->state.tokens->put(key, remembered_token{who, {}}, asked_us, generation);
        with_identity(who);
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

/// A CAF message's strings are bytes as sent; over HTTP, the JSON parser
/// refuses bytes that are not UTF-8, and everything behind the tenant (event
/// records, traces, the model's view) relies on that. The CAF boundary
/// refuses them the same way: the first field (in the order given) that is
/// not UTF-8, by name, with errc::bad_json.
std::optional<caf::error>
not_utf8(std::initializer_list<std::pair<std::string_view, const std::string*>> fields) {
  for (const auto& [name, text] : fields)
    if (!is_utf8(*text))
      return make_error(errc::bad_json, std::string{name} + ": must be valid UTF-8");
  return std::nullopt;
}

std::optional<caf::error> not_utf8(const std::vector<tool_call>& calls) {
  for (const auto& call : calls)
    if (auto err = not_utf8(
          {{"call_id", &call.call_id}, {"name", &call.name}, {"arguments", &call.arguments}}))
      return err;
  return std::nullopt;
}

/// Forgets a run of `tenant` that ended; a host with no run left is no
/// longer watched.
void forget_run(self_pointer self, const caf::actor_addr& host, const tenant_actor& tenant,
                const std::string& run_id) {
  auto found = self->state.runs_by_host.find(host);
  if (found == self->state.runs_by_host.end())
    return;
  auto& runs = found->second.runs;
  auto kept = std::remove_if(runs.begin(), runs.end(), [&](const hosted_run& r) {
    return r.run_id == run_id && r.tenant == tenant;
  });
  self->state.metrics->hosted_runs.fetch_sub(static_cast<uint64_t>(runs.end() - kept));
  runs.erase(kept, runs.end());
  // the next check comes when the list doubles what is left
  found->second.prune_at = std::min(found->second.prune_at, std::max(prune_floor, runs.size() * 2));
  if (runs.empty()) {
    self->demonitor(host);
    self->state.runs_by_host.erase(found);
  }
}

/// Remembers a run `host` started; past the host's prune mark, asks each of
/// its runs' tenants whether the run is still live and forgets the ended.
void remember_run(self_pointer self, const caf::actor_addr& host, hosted_run run) {
  auto& entry = self->state.runs_by_host[host];
  if (entry.runs.empty())
    self->monitor(host);
  entry.runs.push_back(std::move(run));
  self->state.metrics->hosted_runs.fetch_add(1);
  if (entry.runs.size() < entry.prune_at)
    return;
  entry.prune_at = std::max(prune_floor, entry.runs.size() * 2);
  for (const auto& known : entry.runs)
    self->request(known.tenant, prune_timeout, health_atom::value, run_atom::value, known.run_id)
      .then([](const std::string&) {},
            [self, host, tenant = known.tenant, run_id = known.run_id](caf::error& err) {
              if (code_of(err) == errc::not_found)
                forget_run(self, host, tenant, run_id);
            });
}

run_ticket ticket_of(const std::string& started) {
  auto doc = json::parse(started, nullptr, false);
  run_ticket out;
  if (!doc.is_object())
    return out;
  out.run_id = doc.value("run_id", "");
  out.chat_id = doc.value("chat_id", "");
  out.instructions = doc.value("instructions", "");
  if (auto view = doc.find("view"); view != doc.end())
    out.view = view->dump();
  return out;
}

run_host_actor::behavior_type run_host_behavior(self_pointer self, directory_actor directory,
                                                std::string node_id, node_metrics* metrics,
                                                std::shared_ptr<node_token_cache> tokens) {
  auto& st = self->state;
  st.directory = std::move(directory);
  st.tokens = tokens ? std::move(tokens) : std::make_shared<node_token_cache>(0);
  st.node_id = std::move(node_id);
  st.metrics = metrics;
  st.counters = &metrics->actor("run_host");
  st.running.emplace(*st.counters);
  // A host that became unreachable: its runs are cancelled.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto found = self->state.runs_by_host.find(msg.source);
    if (found == self->state.runs_by_host.end())
      return;
    const auto& runs = found->second.runs;
    if (msg.reason == caf::exit_reason::remote_link_unreachable)
      for (const auto& run : runs)
        self->request(run.tenant, caf::infinite, cancel_atom::value, run_atom::value, run.run_id)
          .then([](const std::string&) {}, [](caf::error&) {});
    self->state.metrics->hosted_runs.fetch_sub(runs.size());
    self->state.runs_by_host.erase(found);
  });
  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](ping_atom) {
      note();
      return pong_reply{self->state.node_id, VOXOS_VERSION, wall_clock_us()};
    },
    [self, note](whoami_atom, const std::string& token) -> caf::result<tenant_identity> {
      note();
      if (token.empty() || token.size() > max_token_bytes)
        return make_error(errc::unauthorized, "the token is not valid");
      return self->delegate(self->state.directory, auth_atom::value, token);
    },
    [self, note](create_atom, run_atom, const std::string& token,
                 const run_start& req) -> caf::result<run_ticket> {
      note();
      if (auto err = not_utf8({{"agent_id", &req.agent_id},
                               {"channel", &req.channel},
                               {"caller_number", &req.caller_number},
                               {"chat_id", &req.chat_id},
                               {"location", &req.location}}))
        return std::move(*err);
      // Before the promise: making it takes the sender out of the message.
      auto host = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto promise = self->make_response_promise<run_ticket>();
      with_tenant(self, token, promise, [self, promise, req, host](tenant_actor tenant) mutable {
        self
          ->request(tenant, caf::infinite, create_atom::value, run_atom::value, req.agent_id,
                    req.channel, req.caller_number, req.chat_id, req.location)
          .then(
            [self, promise, host, tenant](const std::string& started) mutable {
              auto ticket = ticket_of(started);
              if (host)
                remember_run(self, host, {tenant, ticket.run_id});
              promise.deliver(std::move(ticket));
            },
            [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      });
      return promise;
    },
    [self, note](tool_atom, const std::string& token, const std::string& run_id,
                 std::vector<tool_call>& calls) -> caf::result<std::vector<tool_output>> {
      note();
      if (auto err = not_utf8({{"run_id", &run_id}}))
        return std::move(*err);
      if (auto err = not_utf8(calls))
        return std::move(*err);
      auto promise = self->make_response_promise<std::vector<tool_output>>();
      with_tenant(self, token, promise,
                  [promise, run_id, calls = std::move(calls)](tenant_actor tenant) mutable {
                    promise.delegate(tenant, tool_atom::value, run_id, std::move(calls));
                  });
      return promise;
    },
    [self, note](turn_atom, const std::string& token, const std::string& run_id,
                 const std::string& user,
                 const std::string& assistant) -> caf::result<std::string> {
      note();
      if (auto err = not_utf8({{"run_id", &run_id}, {"user", &user}, {"assistant", &assistant}}))
        return std::move(*err);
      auto promise = self->make_response_promise<std::string>();
      with_tenant(self, token, promise, [promise, run_id, user, assistant](tenant_actor t) mutable {
        promise.delegate(t, turn_atom::value, run_id, user, assistant);
      });
      return promise;
    },
    [self, note](work_atom, const std::string& token, const std::string& op,
                 const std::string& body) -> caf::result<std::string> {
      note();
      if (op != "lease" && op != "begin" && op != "heartbeat" && op != "complete" && op != "fail")
        return make_error(errc::not_found, "unknown work operation");
      if (auto err = not_utf8({{"body", &body}}))
        return std::move(*err);
      auto promise = self->make_response_promise<std::string>();
      with_tenant(self, token, promise, [promise, op, body](tenant_actor t) mutable {
        promise.delegate(t, work_atom::value, op, body);
      });
      return promise;
    },
    [self, note](work_atom, const std::string& token, caf::actor& worker,
                 uint32_t capacity) -> caf::result<bool> {
      note();
      auto promise = self->make_response_promise<bool>();
      with_tenant(self, token, promise, [promise, worker, capacity](tenant_actor t) mutable {
        promise.delegate(t, work_atom::value, worker, capacity);
      });
      return promise;
    },
    [self, note](cancel_atom, const std::string& token,
                 const std::string& run_id) -> caf::result<std::string> {
      note();
      if (auto err = not_utf8({{"run_id", &run_id}}))
        return std::move(*err);
      // Before the promise: making it takes the sender out of the message.
      auto host = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto promise = self->make_response_promise<std::string>();
      with_tenant(self, token, promise, [self, promise, run_id, host](tenant_actor t) mutable {
        // (a run of this tenant only: another tenant's token cancels nothing
        // and unwatches nothing)
        forget_run(self, host, t, run_id);
        promise.delegate(t, cancel_atom::value, run_atom::value, run_id);
      });
      return promise;
    },
    [self, note](close_atom, const std::string& token,
                 const std::string& run_id) -> caf::result<bool> {
      note();
      if (auto err = not_utf8({{"run_id", &run_id}}))
        return std::move(*err);
      // Before the promise: making it takes the sender out of the message.
      auto host = caf::actor_cast<caf::actor_addr>(self->current_sender());
      auto promise = self->make_response_promise<bool>();
      with_tenant(self, token, promise, [self, promise, run_id, host](tenant_actor t) mutable {
        // (forgotten once closed: a refused close, during a round, leaves the
        // run watched, so the host's disconnection still cancels it)
        self->request(t, caf::infinite, close_atom::value, run_atom::value, run_id)
          .then(
            [self, promise, run_id, host, t](bool closed) mutable {
              forget_run(self, host, t, run_id);
              promise.deliver(closed);
            },
            [self, promise, run_id, host, t](caf::error& err) mutable {
              if (code_of(err) == errc::not_found) // (ended another way)
                forget_run(self, host, t, run_id);
              promise.deliver(std::move(err));
            });
      });
      return promise;
    },
  };
}

} // namespace

run_host_actor spawn_run_host(caf::actor_system& sys, directory_actor directory,
                              std::string node_id, node_metrics& metrics,
                              std::shared_ptr<node_token_cache> tokens) {
  return sys.spawn(run_host_behavior, std::move(directory), std::move(node_id), &metrics,
                   std::move(tokens));
}

} // namespace voxos
