#include "actors/mcp/mcp_connection.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_protocol.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "transport/ascii.hpp"
#include "transport/auth/server_auth.hpp"
#include "transport/jsonrpc.hpp"
#include "transport/mcp_http.hpp"
#include "transport/url_policy.hpp"

namespace voxos {

namespace {

using json = nlohmann::json;

/// What one worker does with one job.
enum class job_kind : uint8_t {
  request,       ///< Streamable HTTP: POST a request, await its answer
  send,          ///< Streamable HTTP: POST a notification or an answer
  close_session, ///< Streamable HTTP: DELETE the session
  listen,        ///< Streamable HTTP: the optional GET stream
  legacy_listen, ///< legacy HTTP+SSE: the GET stream that carries every answer
  legacy_send,   ///< legacy HTTP+SSE: POST any message to the endpoint
};

/// Where a caller's answer goes. It is given once, by whoever claims it
/// first: the worker that read the answer (straight to the caller, from the
/// worker's thread) or the connection (errors, deadline, cancel, close).
struct caller_reply {
  caf::response_promise promise; ///< made by the connection; never changed after
  std::atomic<bool> claimed{false};

  /// True for the one party that may answer.
  bool claim() { return !claimed.exchange(true); }
};

using reply_ptr = std::shared_ptr<caller_reply>;

/// One HTTP exchange handed to a worker, and what came of it. The worker
/// fills the outcome; the connection reads it when the worker hands it back.
struct mcp_job {
  job_kind kind = job_kind::request;
  std::string path;
  mcp_http_headers headers;
  std::string body;
  jsonrpc_id id;
  /// The POST may go again on a fresh connection after a reused one closed
  /// before a byte of the answer (http_client::post): false for a request
  /// the server may act on twice (a tools/call its caller did not vouch for).
  bool idempotent = false;
  // A request's bookkeeping, read back by the connection.
  uint64_t serial = 0; ///< of the pending request
  int worker = -1;     ///< index of the worker running it
  /// A caller's request: the worker answers it itself when it reads the answer.
  reply_ptr reply;
  /// Set by the connection (any thread may read it): abort and skip.
  std::atomic<bool> cancelled{false};
  // Outcome.
  std::optional<result<mcp_exchange>> exchange; ///< kind == request
  status outcome = status::ok();                ///< every other kind
};

using mcp_job_ptr = std::shared_ptr<mcp_job>;
using inbound_ptr = std::shared_ptr<jsonrpc_message>;

} // namespace

} // namespace voxos

// Local only: jobs and inbound messages never leave the process.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(voxos::mcp_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(voxos::inbound_ptr)

namespace voxos {

namespace {

using job_atom = caf::atom_constant<caf::atom("job")>;
using exchange_atom = caf::atom_constant<caf::atom("exchange")>;
using exchanged_atom = caf::atom_constant<caf::atom("exchanged")>;
using inbound_atom = caf::atom_constant<caf::atom("inbound")>;
using endpoint_atom = caf::atom_constant<caf::atom("endpoint")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
using listened_atom = caf::atom_constant<caf::atom("listened")>;

/// What every worker of one connection shares: where to connect and how.
struct connection_env {
  std::shared_ptr<const url_policy> policy;
  checked_url url;
  http_client::options request_opts; ///< requests, notifications, DELETE
  http_client::options stream_opts;  ///< the long-lived GET stream
  mcp_exchange_limits limits;
  /// The endpoint's credentials (OAuth), or null: asked for the
  /// Authorization of every exchange, and told of every 401 and 403.
  std::shared_ptr<auth::server_auth> auth;
  /// The 2026-07-28 revision, once spoken: an answer may ask for input
  /// (input_required), which the connection handles, so a worker answers no
  /// such caller itself. Set by the connection when the era is decided.
  mutable std::atomic<bool> stateless{false};
};

// -- workers: blocking HTTP on their own threads --------------------------------

/// A worker's client and the job it runs, shared with the connection so it
/// can abort the job from its own thread (and when it is killed).
struct worker_link {
  std::mutex mtx;
  std::unique_ptr<http_client> client;
  mcp_job* running = nullptr;
  /// The connection is gone: a job the worker starts after that (its
  /// message was in the mailbox before the worker's exit) is aborted at
  /// once, not left blocking on a stream the server keeps open.
  bool ended = false;
};

/// Aborts `job`: it is skipped if not started, and its exchange is cut off
/// (socket closed) if it is running on `link`.
void abort_job(worker_link& link, mcp_job& job) {
  job.cancelled.store(true);
  std::lock_guard<std::mutex> guard{link.mtx};
  if (link.running == &job && link.client)
    link.client->cancel();
}

/// Aborts whatever `link` runs, and every job it starts later (the
/// connection is going away).
void abort_running(worker_link& link) {
  std::lock_guard<std::mutex> guard{link.mtx};
  link.ended = true;
  if (link.running) {
    link.running->cancelled.store(true);
    if (link.client)
      link.client->cancel();
  }
}

/// The worker's client for `job`, made (resolving and checking the server's
/// addresses) if it has none or its last one was cancelled. Marks `job` as
/// running; a cancel that came first, or the end of the connection, cancels
/// the client at once.
result<http_client*> start_job(worker_link& link, const connection_env& env,
                               const http_client::options& opts, mcp_job& job) {
  std::unique_ptr<http_client> fresh;
  {
    std::lock_guard<std::mutex> guard{link.mtx};
    if (!link.client || link.client->cancelled())
      link.client.reset();
  }
  if (!link.client) {
    auto addrs = resolve(env.url.url.host, env.url.url.port);
    if (!addrs)
      return addrs.error();
    auto made = http_client::create(*env.policy, env.url, std::move(*addrs), opts);
    if (!made)
      return made.error();
    fresh = std::move(*made);
  }
  std::lock_guard<std::mutex> guard{link.mtx};
  if (fresh)
    link.client = std::move(fresh);
  link.running = &job;
  if (job.cancelled.load() || link.ended)
    link.client->cancel();
  return link.client.get();
}

void finish_job(worker_link& link) {
  std::lock_guard<std::mutex> guard{link.mtx};
  link.running = nullptr;
}

/// New credentials one exchange may ask for after a 401 or 403: a refresh, a
/// new grant, a step-up.
constexpr uint32_t max_auth_retries = 3;

/// Sets the Authorization header of `headers` to `value` (none when empty).
void set_authorization(mcp_http_headers& headers, const std::string& value) {
  auto& extra = headers.extra;
  extra.erase(std::remove_if(extra.begin(), extra.end(),
                             [](const auto& header) {
                               return equals_ignoring_case(header.first, "Authorization");
                             }),
              extra.end());
  if (!value.empty())
    extra.emplace_back("Authorization", value);
}

/// Fails `job` with `failure`, whatever its kind.
void fail_job(mcp_job& job, const status& failure) {
  if (job.kind == job_kind::request)
    job.exchange = failure;
  job.outcome = failure;
}

/// The one HTTP exchange of `job`.
void exchange_once(const connection_env& env, http_client& http, mcp_job& job,
                   const mcp_message_sink& sink, const caf::actor_addr& connection) {
  switch (job.kind) {
  case job_kind::request:
    job.exchange = streamable_request(http, job.path, job.headers, job.body, job.id, sink,
                                      env.limits, job.idempotent);
    break;
  case job_kind::send:
    job.outcome = streamable_send(http, job.path, job.headers, job.body);
    break;
  case job_kind::close_session:
    job.outcome = streamable_close_session(http, job.path, job.headers);
    break;
  case job_kind::listen: {
    auto done = streamable_listen(http, job.path, job.headers, sink, env.limits);
    job.outcome = done ? status::ok() : done.error();
    break;
  }
  case job_kind::legacy_listen:
    job.outcome = legacy_sse_listen(
      http, env.url.url, job.headers,
      [connection](std::string path) {
        if (auto target = caf::actor_cast<caf::actor>(connection))
          caf::anon_send(target, endpoint_atom::value, std::move(path));
      },
      sink, env.limits);
    break;
  case job_kind::legacy_send:
    job.outcome = legacy_sse_send(http, job.path, job.headers, job.body, job.idempotent);
    break;
  }
}

void run_job(const connection_env& env, worker_link& link, const caf::actor_addr& connection,
             mcp_job& job) {
  const bool stream = job.kind == job_kind::listen || job.kind == job_kind::legacy_listen;
  const auto& opts = stream ? env.stream_opts : env.request_opts;
  auto client = start_job(link, env, opts, job);
  if (!client) {
    if (job.kind == job_kind::request)
      job.exchange = client.error();
    job.outcome = client.error();
    finish_job(link);
    return;
  }
  auto sink = [connection](jsonrpc_message&& msg) {
    if (auto target = caf::actor_cast<caf::actor>(connection))
      caf::anon_send(target, inbound_atom::value,
                     std::make_shared<jsonrpc_message>(std::move(msg)));
  };
  auto& http = **client;
  // A request's exchange may stay silent until the request's deadline (a
  // server answering JSON says nothing until it has the result): the
  // connection's deadline timer bounds it, not mcp.read_timeout_ms.
  if (!stream)
    http.set_read_timeout(job.kind == job_kind::request ? opts.total_deadline : opts.read_timeout);
  // With credentials: each exchange carries the current Authorization; a 401
  // or 403 is shown to them, and the exchange made once more with a new one
  // (the server refused it before running anything), at most
  // max_auth_retries times.
  auth::server_auth* credentials = env.auth.get();
  for (uint32_t attempt = 0;; ++attempt) {
    mcp_auth_refusal refusal;
    std::string sent;
    if (credentials != nullptr) {
      // (none: a static Authorization of the endpoint, if any, goes as it is)
      sent = credentials->authorization();
      if (!sent.empty())
        set_authorization(job.headers, sent);
      for (auto& [name, value] : credentials->exchange_headers()) {
        auto& extra = job.headers.extra;
        extra.erase(std::remove_if(extra.begin(), extra.end(),
                                   [&name](const auto& header) {
                                     return equals_ignoring_case(header.first, name);
                                   }),
                    extra.end());
        extra.emplace_back(std::move(name), std::move(value));
      }
      job.headers.refusal = &refusal;
    }
    exchange_once(env, http, job, sink, connection);
    job.headers.refusal = nullptr;
    if (credentials == nullptr || refusal.http_status == 0 || job.cancelled.load())
      break;
    if (attempt == max_auth_retries) {
      fail_job(job, status::error(errc::needs_auth, "the server refused every new credential (HTTP "
                                                      + std::to_string(refusal.http_status) + ")"));
      break;
    }
    if (auto again = credentials->refused(refusal.http_status, refusal.challenge, sent); !again) {
      fail_job(job, again);
      break;
    }
  }
  finish_job(link);
}

/// Requests whose callers a worker has answered, handed back to the
/// connection without a message of their own: the connection collects them
/// (drain) before it handles any message, so it never acts on a request
/// already answered, and its caller's next request finds the slot free. A
/// message is sent instead while requests wait for a slot, so that the slot
/// is given on at once. Shared by the connection and its workers.
struct handback_box {
  std::mutex mtx;
  std::vector<mcp_job_ptr> jobs;
  bool slots_wanted = false; ///< requests are waiting: hand back with a message
};

/// What a caller is answered for `answer`: the raw result text, or why not.
result<std::string> outcome_of(jsonrpc_message& answer) {
  if (auto* ok = std::get_if<jsonrpc_response>(&answer))
    return std::move(ok->result);
  if (auto* err = std::get_if<jsonrpc_error_response>(&answer))
    return jsonrpc_error_status(err->code);
  return status::error(errc::bad_json, "server answered with a non-answer");
}

/// Answers `promise` with `outcome`: the result text, or the error.
template <class Promise>
void deliver_outcome(Promise& promise, result<std::string> outcome) {
  if (outcome)
    promise.deliver(std::move(*outcome));
  else
    promise.deliver(to_error(outcome.error()));
}

/// Workers hold the connection weakly: an owner dropping its last handle
/// ends the connection, and with it (linked) every worker.
caf::behavior worker_behavior(caf::event_based_actor* self,
                              std::shared_ptr<const connection_env> env,
                              std::shared_ptr<worker_link> link, caf::actor_addr connection,
                              std::shared_ptr<handback_box> box) {
  return {
    [env, link, connection](job_atom, mcp_job_ptr& job) {
      run_job(*env, *link, connection, *job);
      return job;
    },
    // A request. Its answer goes straight to the caller (one thread hop
    // fewer); the job goes back to the connection first (in the box, or as
    // a message), so that it has freed the slot before the caller's next
    // request can arrive. Failures are the connection's to answer (a
    // session may have to be renewed).
    [self, env, link, connection, box](exchange_atom, mcp_job_ptr& job) {
      run_job(*env, *link, connection, *job);
      std::optional<result<std::string>> direct;
      caf::response_promise to_caller;
      if (job->reply && job->exchange && *job->exchange) {
        auto& answer = (*job->exchange)->answer;
        bool is_answer = std::holds_alternative<jsonrpc_response>(answer)
                         || std::holds_alternative<jsonrpc_error_response>(answer);
        const auto* ok = std::get_if<jsonrpc_response>(&answer);
        bool asks_input = env->stateless.load(std::memory_order_relaxed) && ok != nullptr
                          && may_require_input(ok->result);
        if (is_answer && !asks_input && job->reply->claim()) {
          direct = outcome_of(answer);
          const auto& made = job->reply->promise;
          to_caller = caf::response_promise{caf::actor_cast<caf::strong_actor_ptr>(self),
                                            made.source(), made.stages(), made.id()};
        }
      }
      bool boxed = false;
      if (direct) {
        std::lock_guard<std::mutex> guard{box->mtx};
        if (!box->slots_wanted) {
          box->jobs.push_back(job);
          boxed = true;
        }
      }
      if (!boxed)
        if (auto target = caf::actor_cast<caf::actor>(connection))
          caf::anon_send(target, exchanged_atom::value, std::move(job));
      if (direct)
        deliver_outcome(to_caller, std::move(*direct));
    },
    // A stream may stay open as long as the server likes: it is started by
    // a plain message, not a request, so that no reply handle keeps the
    // connection alive meanwhile; the outcome goes back the same way.
    [env, link, connection](listened_atom, mcp_job_ptr& job) {
      run_job(*env, *link, connection, *job);
      if (auto target = caf::actor_cast<caf::actor>(connection))
        caf::anon_send(target, listened_atom::value, std::move(job));
    },
  };
}

// -- the connection -------------------------------------------------------------

using clock_type = std::chrono::steady_clock;

enum class phase : uint8_t { idle, connecting, ready, closed };

std::string_view to_string(phase x) {
  switch (x) {
  case phase::idle:
    return "idle";
  case phase::connecting:
    return "connecting";
  case phase::ready:
    return "ready";
  case phase::closed:
    return "closed";
  }
  return "closed";
}

/// Completion of one request: the raw result JSON text, or why there is none.
using request_done = std::function<void(result<std::string>)>;

/// What a request is for, besides its method.
enum class request_role : uint8_t {
  plain,
  /// The server/discover probe: sent as the stateless revision, before the
  /// era is known, ahead of everything waiting.
  probe,
  /// `connect`'s ping: it only waits for the session; at the stateless
  /// revision, which has none, it is answered without being sent.
  readiness,
  /// Part of connecting (the stateless revision's first tools/list): sent
  /// ahead of everything waiting.
  setup,
};

/// A request from submission to its answer.
struct pending_request {
  uint64_t serial = 0;
  std::optional<uint64_t> caller_key; ///< set for callers' requests (cancellable by key)
  std::string method;
  std::string params; ///< JSON object text or ""
  request_done done;  ///< the connection's own requests
  reply_ptr reply;    ///< callers' requests
  clock_type::time_point deadline;
  std::optional<jsonrpc_id> id; ///< once sent
  mcp_job_ptr job;              ///< while a worker has it
  int worker = -1;              ///< index of that worker
  /// Sending it twice is harmless: any method but tools/call, or a call its
  /// caller vouched for (a read-only or idempotent tool). Decides only the
  /// transport's resend after a connection closed with no answer; a request
  /// the server provably did not run (session expired or lost, version
  /// refused) is sent again whatever this says.
  bool resend_safe = false;
  bool retried = false; ///< already sent again (session expired or lost, version refused)
  /// 2026-07-28: times sent again with the input its server asked for; the
  /// caller's params, kept while `params` carries the input responses.
  unsigned input_rounds = 0;
  std::optional<std::string> first_params;
  request_role role = request_role::plain;
};

struct worker_slot {
  caf::actor actor;
  std::shared_ptr<worker_link> link;
  bool busy = false;
};

/// Which revisions a server speaks: the 2026-07-28 stateless one (modern),
/// or those with the initialize handshake (legacy); unknown until the
/// server/discover probe tells (see start_connect).
enum class era : uint8_t { unknown, modern, legacy };

struct connection_state {
  static inline const char* name = "mcp_connection";

  mcp_endpoint endpoint;
  mcp_config cfg;
  std::shared_ptr<const connection_env> env;
  /// Every link of every worker, for aborting all exchanges when the actor
  /// ends however it ends (shared with an attached functor).
  std::shared_ptr<std::vector<std::shared_ptr<worker_link>>> all_links;
  std::shared_ptr<handback_box> box = std::make_shared<handback_box>();

  phase current = phase::idle;
  bool legacy = false; ///< speaking the legacy HTTP+SSE transport
  bool legacy_tried = false;
  std::string post_path; ///< where requests go: the URL's path, or the legacy endpoint
  std::string session_id;
  std::optional<mcp_server_hello> hello;

  uint64_t next_serial = 1;
  int64_t next_id = 1;
  std::map<uint64_t, pending_request> pending; ///< by serial
  std::map<uint64_t, uint64_t> by_key;         ///< caller key -> serial
  std::map<jsonrpc_id, uint64_t> by_id;        ///< sent id -> serial
  std::deque<uint64_t> waiting;                ///< serials not yet sent, in order
  /// Every pending request's deadline, earliest first. One timer message is
  /// armed for the earliest (`timer_at`), not one per request.
  std::set<std::pair<clock_type::time_point, uint64_t>> deadlines;
  std::optional<clock_type::time_point> timer_at;

  std::vector<worker_slot> workers; ///< request workers
  worker_slot control;              ///< notifications, answers, DELETE, in order
  worker_slot listener;             ///< the GET stream
  mcp_job_ptr listen_job;

  bool tools_changed = false;
  uint64_t tools_changes = 0;       ///< list_changed notifications received
  uint64_t tools_told = 0;          ///< messages sent to the listener
  caf::actor_addr changes_listener; ///< told of tools/list_changed (weakly held)
  /// 2026-07-28: per tool of the last discovery, the arguments its calls
  /// mirror into Mcp-Param-* headers (x-mcp-header; see mcp_protocol.hpp).
  std::unordered_map<std::string, std::vector<param_header>> param_headers;
  uint64_t server_requests = 0;
  uint64_t unexpected_answers = 0;
  era current_era = era::unknown;
};

using self_pointer = caf::stateful_actor<connection_state>*;

bool is_stateless(const connection_state& st) {
  return st.current_era == era::modern;
}

/// Request `req` is to be sent again: its old id answers nothing any more
/// (it gets a new one when it goes).
void forget_id(connection_state& st, pending_request& req) {
  if (req.id)
    st.by_id.erase(*req.id);
  req.id.reset();
}

/// Decides the era: from then on every request is framed for it.
void settle_era(connection_state& st, era decided) {
  st.current_era = decided;
  st.env->stateless.store(decided == era::modern, std::memory_order_relaxed);
}

mcp_http_headers session_headers(const connection_state& st) {
  mcp_http_headers out;
  out.session_id = st.session_id;
  if (st.hello)
    out.protocol_version = st.hello->protocol_version;
  out.extra = st.endpoint.headers;
  return out;
}

worker_slot spawn_worker(self_pointer self) {
  auto& st = self->state;
  worker_slot slot;
  slot.link = std::make_shared<worker_link>();
  st.all_links->push_back(slot.link);
  slot.actor = self->spawn<caf::detached + caf::linked>(
    worker_behavior, st.env, slot.link, caf::actor_cast<caf::actor_addr>(self), st.box);
  return slot;
}

/// Sends `body` (a notification or an answer) through the control worker,
/// after everything sent there before. `then` sees the outcome.
void send_control(self_pointer self, std::string body, std::function<void(status)> then = {}) {
  auto& st = self->state;
  if (!st.control.actor)
    st.control = spawn_worker(self);
  auto job = std::make_shared<mcp_job>();
  job->kind = st.legacy ? job_kind::legacy_send : job_kind::send;
  job->path = st.post_path;
  job->headers = session_headers(st);
  job->body = std::move(body);
  job->idempotent = true; // a notification or an answer runs no tool
  self->request(st.control.actor, caf::infinite, job_atom::value, std::move(job))
    .then(
      [then](mcp_job_ptr& done) {
        if (then)
          then(done->outcome);
      },
      [then](caf::error& err) {
        if (then)
          then(status::error(errc::unavailable, message_of(err)));
      });
}

void fail_all(self_pointer self, const status& why);
void dispatch(self_pointer self);
void start_connect(self_pointer self);
void learn_tools(self_pointer self);
void send_request(self_pointer self, pending_request& req);

/// Removes request `serial` and hands `outcome` to its completion.
void complete(self_pointer self, uint64_t serial, result<std::string> outcome) {
  auto& st = self->state;
  auto found = st.pending.find(serial);
  if (found == st.pending.end())
    return;
  auto req = std::move(found->second);
  st.pending.erase(found);
  if (req.caller_key)
    st.by_key.erase(*req.caller_key);
  if (req.id)
    st.by_id.erase(*req.id);
  st.deadlines.erase({req.deadline, serial});
  st.waiting.erase(std::remove(st.waiting.begin(), st.waiting.end(), serial), st.waiting.end());
  if (req.reply) {
    if (!req.reply->claim())
      return; // the worker has answered it
    deliver_outcome(req.reply->promise, std::move(outcome));
  } else if (req.done) {
    req.done(std::move(outcome));
  }
}

/// Arms the deadline timer for the earliest deadline, unless a timer already
/// fires at or before it. Rounded up, so that it never fires early.
void arm_deadline_timer(self_pointer self) {
  auto& st = self->state;
  if (st.deadlines.empty())
    return;
  auto earliest = st.deadlines.begin()->first;
  if (st.timer_at && *st.timer_at <= earliest)
    return;
  st.timer_at = earliest;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(earliest - clock_type::now());
  self->delayed_send(self, std::max(wait, std::chrono::milliseconds{0}), deadline_atom::value);
}

/// Gives up request `serial` (deadline or caller's cancel): tells the server
/// (never for initialize, which the specification forbids cancelling) and
/// aborts its exchange, then answers `why`.
void abandon(self_pointer self, uint64_t serial, const char* why) {
  auto& st = self->state;
  auto found = st.pending.find(serial);
  if (found == st.pending.end())
    return;
  auto& req = found->second;
  if (req.reply && req.reply->claimed.load())
    return; // answered; the worker is handing the job back
  if (req.id && req.method != "initialize" && req.role != request_role::probe) {
    json params{{"reason", why}};
    std::visit([&params](const auto& id) { params["requestId"] = id; }, *req.id);
    if (auto note = make_jsonrpc_notification("notifications/cancelled", params))
      send_control(self, std::move(*note));
  }
  if (req.job && req.worker >= 0)
    abort_job(*st.workers[static_cast<std::size_t>(req.worker)].link, *req.job);
  complete(self, serial, status::error(errc::unavailable, why));
}

/// The requests of connecting (the handshake, the probe, the stateless
/// revision's first tools/list) go at once; the rest wait for them.
bool goes_first(const pending_request& req) {
  return req.method == "initialize" || req.role == request_role::probe
         || req.role == request_role::setup;
}

/// Submits a request; `timeout_ms` 0 means the configured default.
/// `vouched`: the caller says the request may run twice harmlessly (see
/// pending_request::resend_safe); a method other than tools/call always may.
void submit(self_pointer self, std::optional<uint64_t> caller_key, std::string method,
            std::string params, uint32_t timeout_ms, request_done done, reply_ptr reply = nullptr,
            request_role role = request_role::plain, bool vouched = false) {
  auto& st = self->state;
  auto refuse = [&](const char* why) {
    if (reply) {
      reply->claim();
      reply->promise.deliver(make_error(errc::unavailable, why));
    } else {
      done(status::error(errc::unavailable, why));
    }
  };
  if (st.current == phase::closed) {
    refuse("connection closed");
    return;
  }
  if (st.waiting.size() >= st.cfg.max_queued) {
    refuse("too many requests waiting");
    return;
  }
  uint32_t effective = timeout_ms == 0 ? st.cfg.request_timeout_ms
                                       : std::min(timeout_ms, st.cfg.max_request_timeout_ms);
  auto serial = st.next_serial++;
  pending_request req;
  req.serial = serial;
  req.caller_key = caller_key;
  req.method = std::move(method);
  req.params = std::move(params);
  req.done = std::move(done);
  req.reply = std::move(reply);
  req.deadline = clock_type::now() + std::chrono::milliseconds{effective};
  req.role = role;
  req.resend_safe = vouched || req.method != "tools/call";
  if (caller_key)
    st.by_key.emplace(*caller_key, serial);
  bool first = goes_first(req);
  st.deadlines.emplace(req.deadline, serial);
  st.pending.emplace(serial, std::move(req));
  arm_deadline_timer(self);
  if (first) {
    send_request(self, st.pending[serial]);
    return;
  }
  st.waiting.push_back(serial);
  if (st.current == phase::idle)
    start_connect(self);
  dispatch(self);
}

/// 2026-07-28: when `result` asks for input (see input_retry_params), sends
/// request `serial` again with it, at most mcp.max_input_rounds times, or
/// ends it with the reason it cannot be; true then. False for a complete
/// result.
bool answer_input_required(self_pointer self, uint64_t serial, const std::string& result) {
  auto& st = self->state;
  auto found = st.pending.find(serial);
  if (found == st.pending.end())
    return false;
  auto& req = found->second;
  auto retry = input_retry_params(req.first_params.value_or(req.params), result);
  if (retry && !*retry)
    return false;
  if (!retry) {
    complete(self, serial, retry.error());
    return true;
  }
  if (req.input_rounds >= st.cfg.max_input_rounds) {
    complete(self, serial,
             status::error(errc::rejected, "the server asked for input more often than "
                                           "mcp.max_input_rounds allows"));
    return true;
  }
  ++req.input_rounds;
  if (!req.first_params)
    req.first_params = std::move(req.params);
  req.params = std::move(**retry);
  forget_id(st, req);
  st.waiting.push_front(serial);
  dispatch(self);
  return true;
}

/// Handles a request's answer (from its exchange, or off a stream).
void on_answer(self_pointer self, uint64_t serial, jsonrpc_message& answer) {
  if (is_stateless(self->state))
    if (const auto* ok = std::get_if<jsonrpc_response>(&answer);
        ok != nullptr && may_require_input(ok->result)
        && answer_input_required(self, serial, ok->result))
      return;
  complete(self, serial, outcome_of(answer));
}

/// A Streamable HTTP initialize refused this way means the server may speak
/// the legacy HTTP+SSE transport (400, 404 or 405 in the specification).
bool suggests_legacy(const status& err) {
  return err.code() == errc::rejected || err.code() == errc::not_found
         || err.code() == errc::method_not_allowed
         // (a JSON-RPC error answered to initialize, as before it had a code of its own)
         || err.code() == errc::server_error;
}

void on_request_job(self_pointer self, uint64_t serial, int worker, mcp_job& job) {
  auto& st = self->state;
  st.workers[static_cast<std::size_t>(worker)].busy = false;
  auto found = st.pending.find(serial);
  if (found != st.pending.end() && found->second.job.get() == &job) {
    auto& req = found->second;
    req.job.reset();
    req.worker = -1;
    auto& exchange = *job.exchange;
    if (!exchange) {
      auto err = exchange.error();
      // The session it was sent in expired (404) or the server lost it (400
      // outside invalid params; see mcp_http_status_error): the server ran
      // nothing of it.
      bool expired = err.code() == errc::not_found && !job.headers.session_id.empty()
                     && req.method != "initialize";
      // The stateless revision: a server that does not take the version
      // answers UnsupportedProtocolVersionError (-32022; -32004 in later
      // drafts) with the versions it does; this client speaks only
      // 2026-07-28 statelessly, so it sends the request once more as it is
      // (the server may have refused it for another reason, e.g. a first
      // request) and then gives up (the probe then falls back to the
      // handshake).
      bool unsupported_version =
        (is_stateless(st) || req.role == request_role::probe)
        && (err.message().find("JSON-RPC error -32022") != std::string::npos
            || err.message().find("JSON-RPC error -32004") != std::string::npos);
      if (unsupported_version && !req.retried) {
        req.retried = true;
        forget_id(st, req);
        if (goes_first(req))
          send_request(self, req); // the others wait for it
        else
          st.waiting.push_front(serial);
      } else if (expired && !req.retried) {
        // Initialise afresh, then send this again, once. The first request
        // to come back so starts the new session; others of the old one
        // wait for it, or go in it once it is there.
        req.retried = true;
        forget_id(st, req);
        st.waiting.push_front(serial);
        if (st.current == phase::ready && st.session_id == job.headers.session_id) {
          log::info("mcp_connection", "session expired or lost; initialising again");
          st.session_id.clear();
          st.hello.reset();
          st.current = phase::idle;
          start_connect(self);
        } else if (st.current == phase::idle) {
          start_connect(self);
        }
      } else if (expired) {
        // Refused again in the session begun for it: a server answering
        // plain 400s to what it cannot take (the product's "still returns
        // HTTP 400": an argument rejection).
        complete(self, serial, refused_in_new_session(err));
      } else {
        complete(self, serial, std::move(err));
      }
    } else {
      if (!exchange->session_id.empty() && req.method == "initialize")
        st.session_id = exchange->session_id;
      on_answer(self, serial, exchange->answer);
    }
  }
  dispatch(self);
}

void send_request(self_pointer self, pending_request& req) {
  auto& st = self->state;
  jsonrpc_id id{st.next_id++};
  // The caller's params text goes into the request as it is (checked, not
  // parsed into a document and written again).
  const bool modern = is_stateless(st) || req.role == request_role::probe;
  result<std::string> stateless_params{std::string{}};
  if (modern)
    stateless_params = with_stateless_meta(req.params, VOXOS_VERSION);
  if (!stateless_params) {
    complete(self, req.serial, stateless_params.error());
    return;
  }
  auto body = make_jsonrpc_request_text(id, req.method, modern ? *stateless_params : req.params);
  if (!body) {
    complete(self, req.serial, body.error());
    return;
  }
  // The stateless revision's headers: the method, the tool's Mcp-Param-*
  // headers (x-mcp-header), the name.
  http_header_list stateless_headers;
  if (modern) {
    stateless_headers.emplace_back("Mcp-Method", req.method);
    if (auto name = stateless_name(req.method, req.params); !name.empty()) {
      if (auto marks = st.param_headers.find(name);
          req.method == "tools/call" && marks != st.param_headers.end()) {
        auto params = json::parse(req.params, nullptr, false);
        auto values = param_header_values(
          marks->second, params.is_object() ? params.value("arguments", json{}) : json{});
        if (!values) {
          complete(self, req.serial, values.error());
          return;
        }
        for (auto& header : *values)
          stateless_headers.push_back(std::move(header));
      }
      stateless_headers.emplace_back("Mcp-Name", std::move(name));
    }
  }
  req.id = id;
  st.by_id.emplace(id, req.serial);
  // A free worker, or a new one while under the limit (dispatch checked).
  int index = -1;
  for (std::size_t i = 0; i < st.workers.size(); ++i)
    if (!st.workers[i].busy) {
      index = static_cast<int>(i);
      break;
    }
  if (index < 0) {
    st.workers.push_back(spawn_worker(self));
    index = static_cast<int>(st.workers.size() - 1);
  }
  auto& slot = st.workers[static_cast<std::size_t>(index)];
  slot.busy = true;
  auto job = std::make_shared<mcp_job>();
  job->kind = st.legacy ? job_kind::legacy_send : job_kind::request;
  job->path = st.post_path;
  job->headers = session_headers(st);
  if (req.method == "initialize")
    job->headers.protocol_version.clear();
  if (modern) {
    job->headers.protocol_version = std::string{stateless_protocol_version};
    for (auto& header : stateless_headers)
      job->headers.extra.push_back(std::move(header));
  }
  job->body = std::move(*body);
  job->id = id;
  job->idempotent = req.resend_safe;
  job->serial = req.serial;
  job->worker = index;
  if (job->kind == job_kind::request)
    job->reply = req.reply;
  req.job = job;
  req.worker = index;
  // Workers are linked: one that dies takes the connection with it, so the
  // job always comes back (exchanged_atom).
  self->send(slot.actor, exchange_atom::value, std::move(job));
}

/// A worker handed back a request's job (and may have answered its caller).
void on_exchanged(self_pointer self, const mcp_job_ptr& done) {
  auto& st = self->state;
  auto serial = done->serial;
  auto index = done->worker;
  if (done->kind == job_kind::request) {
    on_request_job(self, serial, index, *done);
    return;
  }
  // Legacy: the POST only delivered the request; its answer comes on the
  // stream, unless the POST failed.
  st.workers[static_cast<std::size_t>(index)].busy = false;
  auto found = st.pending.find(serial);
  if (found != st.pending.end() && found->second.job == done) {
    found->second.job.reset();
    found->second.worker = -1;
    if (!done->outcome.is_ok())
      complete(self, serial, done->outcome);
  }
  dispatch(self);
}

/// Takes the jobs workers handed back in the box (see handback_box).
void drain(self_pointer self) {
  auto& st = self->state;
  std::vector<mcp_job_ptr> jobs;
  {
    std::lock_guard<std::mutex> guard{st.box->mtx};
    if (st.box->jobs.empty())
      return;
    jobs.swap(st.box->jobs);
  }
  for (auto& job : jobs)
    on_exchanged(self, job);
}

void send_waiting(self_pointer self) {
  auto& st = self->state;
  if (st.current != phase::ready)
    return;
  while (!st.waiting.empty()) {
    auto busy = static_cast<std::size_t>(
      std::count_if(st.workers.begin(), st.workers.end(), [](const auto& w) { return w.busy; }));
    if (busy >= st.cfg.max_in_flight)
      return;
    auto serial = st.waiting.front();
    st.waiting.pop_front();
    auto found = st.pending.find(serial);
    if (found == st.pending.end())
      continue;
    if (found->second.role == request_role::readiness && is_stateless(st))
      complete(self, serial, std::string{"{}"});
    else
      send_request(self, found->second);
  }
}

/// Sends what waits while slots are free; tells the workers whether
/// requests wait (then they hand jobs back with a message).
void dispatch(self_pointer self) {
  auto& st = self->state;
  drain(self);
  for (;;) {
    send_waiting(self);
    std::unique_lock<std::mutex> guard{st.box->mtx};
    if (!st.waiting.empty() && !st.box->jobs.empty()) {
      // A slot came free meanwhile.
      guard.unlock();
      drain(self);
      continue;
    }
    st.box->slots_wanted = !st.waiting.empty();
    return;
  }
}

void start_listen(self_pointer self, job_kind kind) {
  auto& st = self->state;
  if (!st.listener.actor)
    st.listener = spawn_worker(self);
  auto job = std::make_shared<mcp_job>();
  job->kind = kind;
  job->path = st.env->url.url.path_and_query;
  job->headers = session_headers(st);
  st.listen_job = job;
  caf::anon_send(st.listener.actor, listened_atom::value, std::move(job));
}

/// The GET stream ended (the server closed it, or we aborted it).
void on_listen_done(self_pointer self, const mcp_job_ptr& done) {
  auto& st = self->state;
  if (st.listen_job != done)
    return;
  st.listen_job.reset();
  if (done->kind == job_kind::legacy_listen && st.current != phase::closed) {
    // The legacy stream carries every answer: without it the session is gone.
    auto why =
      done->outcome.is_ok() ? status::error(errc::unavailable, "stream ended") : done->outcome;
    st.current = phase::idle;
    st.session_id.clear();
    st.hello.reset();
    st.post_path = st.env->url.url.path_and_query;
    fail_all(self, why);
  }
}

void on_initialized(self_pointer self, result<std::string> outcome) {
  auto& st = self->state;
  if (st.current != phase::connecting)
    return;
  if (!outcome) {
    auto err = outcome.error();
    if (!st.legacy && !st.legacy_tried && suggests_legacy(err)) {
      log::info("mcp_connection", "streamable HTTP refused; trying the legacy HTTP+SSE transport");
      st.legacy = true;
      st.legacy_tried = true;
      st.current = phase::idle;
      start_connect(self);
      return;
    }
    st.current = phase::idle;
    fail_all(self, err);
    return;
  }
  auto hello = read_initialize_result(*outcome);
  if (!hello) {
    st.current = phase::idle;
    fail_all(self, hello.error());
    return;
  }
  st.hello = std::move(*hello);
  auto note = make_jsonrpc_notification("notifications/initialized", nullptr);
  send_control(self, note ? std::move(*note) : std::string{}, [self](status sent) {
    auto& st = self->state;
    if (st.current != phase::connecting)
      return;
    if (!sent.is_ok()) {
      st.current = phase::idle;
      fail_all(self, sent);
      return;
    }
    st.current = phase::ready;
    if (!st.legacy)
      start_listen(self, job_kind::listen);
    dispatch(self);
  });
}

/// Whether a failed probe heard from the server (any HTTP answer, or a
/// JSON-RPC error), rather than failing to reach it.
bool server_answered(const status& err) {
  if (err.code() != errc::unavailable && err.code() != errc::forbidden)
    return true;
  return err.message().find("server answered HTTP") != std::string::npos;
}

void send_initialize(self_pointer self);

/// The era probe's outcome: a DiscoverResult offering 2026-07-28 means the
/// stateless revision from now on; any other answer (an older server says
/// "method not found", wants a session, refuses the version header, or
/// answers an empty result) means the handshake. A server that cannot be
/// reached fails the connect as the handshake would.
void on_discovered(self_pointer self, result<std::string> outcome) {
  auto& st = self->state;
  if (st.current != phase::connecting)
    return;
  if (outcome) {
    if (auto hello = read_discover_result(*outcome)) {
      settle_era(st, era::modern);
      st.hello = std::move(*hello);
      learn_tools(self);
      return;
    }
  } else if (!server_answered(outcome.error())) {
    st.current = phase::idle;
    fail_all(self, outcome.error());
    return;
  }
  log::debug("mcp_connection", "the server speaks no stateless revision; initialising");
  settle_era(st, era::legacy);
  send_initialize(self);
}

/// Asks `server/discover` as the stateless revision, to learn the server's
/// era (the dual-era rule of the 2026-07-28 revision; see on_discovered).
void send_probe(self_pointer self) {
  submit(
    self, std::nullopt, "server/discover", "", 0,
    [self](result<std::string> outcome) { on_discovered(self, std::move(outcome)); }, nullptr,
    request_role::probe);
}

void send_initialize(self_pointer self) {
  auto params = initialize_params(VOXOS_VERSION).dump();
  submit(self, std::nullopt, "initialize", std::move(params), 0,
         [self](result<std::string> outcome) { on_initialized(self, std::move(outcome)); });
}

void start_connect(self_pointer self) {
  auto& st = self->state;
  st.current = phase::connecting;
  st.session_id.clear();
  if (!is_stateless(st))
    st.hello.reset();
  st.post_path = st.env->url.url.path_and_query;
  if (is_stateless(st)) {
    // No handshake, no session, no GET stream: every request says its
    // version itself.
    if (!st.hello) {
      mcp_server_hello hello;
      hello.protocol_version = std::string{stateless_protocol_version};
      hello.capabilities = "{}";
      st.hello = std::move(hello);
    }
    learn_tools(self);
    return;
  }
  if (st.current_era == era::unknown && !st.legacy) {
    send_probe(self);
    return;
  }
  if (st.legacy) {
    // The endpoint event names where to POST; initialize goes there.
    start_listen(self, job_kind::legacy_listen);
    return;
  }
  send_initialize(self);
}

void fail_all(self_pointer self, const status& why) {
  auto& st = self->state;
  std::vector<uint64_t> serials;
  for (const auto& [serial, req] : st.pending)
    serials.push_back(serial);
  for (auto serial : serials) {
    auto found = st.pending.find(serial);
    if (found == st.pending.end())
      continue;
    if (found->second.job && found->second.worker >= 0)
      abort_job(*st.workers[static_cast<std::size_t>(found->second.worker)].link,
                *found->second.job);
    complete(self, serial, why);
  }
}

/// Tells the listener, if any, that the server's tools changed.
void tell_listener(self_pointer self) {
  auto& st = self->state;
  ++st.tools_told;
  if (auto target = caf::actor_cast<caf::actor>(st.changes_listener))
    self->send(target, changed_atom::value, tool_atom::value, st.endpoint.server_id);
}

/// notifications/tools/list_changed: the mark is set, and the listener told
/// once until a discovery clears it.
void on_tools_changed(self_pointer self) {
  auto& st = self->state;
  ++st.tools_changes;
  if (st.tools_changed)
    return;
  st.tools_changed = true;
  tell_listener(self);
}

void on_inbound(self_pointer self, jsonrpc_message& msg) {
  auto& st = self->state;
  if (auto* req = std::get_if<jsonrpc_request>(&msg)) {
    ++st.server_requests;
    send_control(self, answer_server_request(*req));
    return;
  }
  if (auto* note = std::get_if<jsonrpc_notification>(&msg)) {
    if (note->method == "notifications/tools/list_changed")
      on_tools_changed(self);
    // Progress, logging and the rest change nothing here; in particular,
    // progress never extends a request's deadline.
    return;
  }
  std::optional<jsonrpc_id> id;
  if (auto* ok = std::get_if<jsonrpc_response>(&msg))
    id = ok->id;
  else if (auto* err = std::get_if<jsonrpc_error_response>(&msg))
    id = err->id;
  auto found = id ? st.by_id.find(*id) : st.by_id.end();
  if (found == st.by_id.end()) {
    ++st.unexpected_answers;
    log::debug("mcp_connection", "dropped an answer carrying an id that was not asked");
    return;
  }
  on_answer(self, found->second, msg);
}

/// Discovery: one tools/list page after another, into `acc`.
struct discovery {
  /// Part of connecting (see learn_tools): its pages go ahead of requests
  /// waiting for the connection, and `done` hears the outcome instead of a
  /// caller.
  bool setup = false;
  std::function<void(result<std::string>)> done;
  json tools = json::array();
  std::unordered_map<std::string, std::vector<param_header>> param_headers;
  unsigned pages = 0;
  bool truncated = false;
  caf::typed_response_promise<std::string> promise;
  uint64_t changes_at_start = 0; ///< tools_changes when it started
  uint64_t told_at_start = 0;    ///< tools_told when it started
};

void list_page(self_pointer self, std::shared_ptr<discovery> acc, std::string cursor) {
  std::string params = cursor.empty() ? std::string{} : json{{"cursor", cursor}}.dump();
  auto finish = [acc](result<std::string> outcome) {
    if (acc->done)
      acc->done(std::move(outcome));
    else
      deliver_outcome(acc->promise, std::move(outcome));
  };
  submit(
    self, std::nullopt, "tools/list", std::move(params), 0,
    [self, acc, finish](result<std::string> outcome) mutable {
      if (!outcome) {
        finish(std::move(outcome));
        return;
      }
      auto page = json::parse(*outcome, nullptr, false);
      if (page.is_discarded() || !page.is_object() || !page.contains("tools")
          || !page["tools"].is_array()) {
        finish(status::error(errc::bad_json, "tools/list answer has no tools array"));
        return;
      }
      auto& st = self->state;
      for (auto& tool : page["tools"]) {
        if (acc->tools.size() >= st.cfg.max_cached_tools) {
          acc->truncated = true;
          break;
        }
        // 2026-07-28: a tool whose x-mcp-header marks are invalid is
        // dropped, never listed or called (SEP-2243).
        if (is_stateless(st) && tool.is_object()) {
          auto marks = param_headers_of(tool.value("inputSchema", json{}));
          if (!marks) {
            log::info("mcp_connection", "left out a tool: " + marks.error().message());
            continue;
          }
          if (!marks->empty() && tool.contains("name") && tool["name"].is_string())
            acc->param_headers[tool["name"].get<std::string>()] = std::move(*marks);
        }
        acc->tools.push_back(std::move(tool));
      }
      ++acc->pages;
      auto next = page.find("nextCursor");
      bool more = next != page.end() && next->is_string() && !next->get<std::string>().empty();
      if (more && !acc->truncated && acc->pages >= st.cfg.max_tool_pages)
        acc->truncated = true;
      if (more && !acc->truncated) {
        list_page(self, acc, next->get<std::string>());
        return;
      }
      st.param_headers = std::move(acc->param_headers);
      // A change announced meanwhile may be missing from these pages:
      // the mark stays, and the listener hears of it (once).
      if (st.tools_changes == acc->changes_at_start)
        st.tools_changed = false;
      else if (st.tools_told == acc->told_at_start)
        tell_listener(self);
      finish(json{{"tools", std::move(acc->tools)}, {"truncated", acc->truncated}}.dump());
    },
    nullptr, acc->setup ? request_role::setup : request_role::plain);
}

/// The stateless revision has no session to carry what a tools/call needs
/// besides its arguments: the Mcp-Param-* headers its tool's x-mcp-header
/// marks ask for. So connecting at that revision lists the tools first (the
/// caller's own discovery may come later, or never: a node's runs use the
/// tenant's cache). A failed listing does not fail the connect; calls then
/// carry no param headers until a discovery succeeds.
void learn_tools(self_pointer self) {
  auto acc = std::make_shared<discovery>();
  acc->setup = true;
  acc->changes_at_start = self->state.tools_changes;
  acc->told_at_start = self->state.tools_told;
  acc->done = [self](result<std::string> outcome) {
    auto& st = self->state;
    if (st.current != phase::connecting)
      return;
    if (!outcome)
      log::info("mcp_connection",
                "listing tools while connecting failed: " + outcome.error().message());
    st.current = phase::ready;
    dispatch(self);
  };
  list_page(self, acc, {});
}

std::string health_json(const connection_state& st) {
  auto busy =
    std::count_if(st.workers.begin(), st.workers.end(), [](const auto& w) { return w.busy; });
  return json{{"phase", to_string(st.current)},
              {"transport", st.legacy ? "sse" : "streamable_http"},
              {"protocol_version", st.hello ? st.hello->protocol_version : ""},
              {"session", !st.session_id.empty()},
              {"in_flight", busy},
              {"queued", st.waiting.size()},
              {"workers", st.workers.size()},
              {"tools_changed", st.tools_changed},
              {"server_requests", st.server_requests},
              {"unexpected_answers", st.unexpected_answers}}
    .dump();
}

std::string hello_json(const connection_state& st) {
  const auto& hello = *st.hello;
  return json{{"protocol_version", hello.protocol_version},
              {"server_name", hello.server_name},
              {"server_version", hello.server_version},
              {"capabilities", json::parse(hello.capabilities, nullptr, false)},
              {"instructions", hello.instructions},
              {"transport", st.legacy ? "sse" : "streamable_http"}}
    .dump();
}

/// Request `serial` is past its deadline.
void expire(self_pointer self, uint64_t serial) {
  auto& st = self->state;
  auto found = st.pending.find(serial);
  if (found == st.pending.end())
    return;
  auto& req = found->second;
  if (req.method == "initialize" || (req.reply && req.reply->claimed.load())) {
    // initialize is not cancellable on the server: abort the exchange, fail
    // the wait. An answered request only waits for its job to come back.
    if (req.job && req.worker >= 0)
      abort_job(*st.workers[static_cast<std::size_t>(req.worker)].link, *req.job);
    complete(self, serial, status::error(errc::unavailable, "request deadline exceeded"));
    return;
  }
  abandon(self, serial, "request deadline exceeded");
}

/// A caller's request (see mcp_connection_actor).
caf::result<std::string> take_request(self_pointer self, uint64_t key, std::string& method,
                                      std::string& params, uint32_t timeout_ms, bool resend_safe) {
  drain(self);
  auto& st = self->state;
  if (st.by_key.count(key) != 0)
    return make_error(errc::conflict, "a request with this key is in flight");
  if (method.empty() || method.size() > 256)
    return make_error(errc::out_of_range, "method must be 1 to 256 characters");
  auto reply = std::make_shared<caller_reply>();
  reply->promise = self->make_response_promise();
  caf::response_promise handle = reply->promise;
  submit(self, key, std::move(method), std::move(params), timeout_ms, {}, std::move(reply),
         request_role::plain, resend_safe);
  return handle;
}

caf::behavior connection_behavior(self_pointer self, mcp_endpoint endpoint,
                                  std::shared_ptr<const url_policy> policy, mcp_config cfg,
                                  checked_url checked, caf::actor_addr listener) {
  auto& st = self->state;
  st.endpoint = std::move(endpoint);
  st.changes_listener = std::move(listener);
  st.cfg = cfg;
  st.legacy = st.endpoint.transport == transport_kind::sse;
  st.legacy_tried = st.legacy;
  auto env = std::make_shared<connection_env>();
  env->policy = std::move(policy);
  env->auth = st.endpoint.auth;
  env->url = std::move(checked);
  env->request_opts.connect_timeout = std::chrono::milliseconds{cfg.connect_timeout_ms};
  env->request_opts.read_timeout = std::chrono::milliseconds{cfg.read_timeout_ms};
  // The session deadline acts first; this is the transport's hard bound.
  env->request_opts.total_deadline = std::chrono::milliseconds{cfg.max_request_timeout_ms + 1000};
  env->request_opts.max_body_bytes = cfg.max_body_bytes;
  env->stream_opts = env->request_opts;
  env->stream_opts.read_timeout = std::chrono::minutes{10};
  env->stream_opts.total_deadline = std::chrono::hours{24};
  env->limits.sse.max_event_bytes = cfg.max_message_bytes;
  env->limits.max_resumptions = cfg.max_resumptions;
  st.env = env;
  // The era: asked for by the endpoint, else learnt by the probe.
  if (st.endpoint.protocol_version == stateless_protocol_version)
    settle_era(st, era::modern);
  else if (st.legacy || !st.endpoint.protocol_version.empty())
    settle_era(st, era::legacy);
  st.post_path = env->url.url.path_and_query;
  st.all_links = std::make_shared<std::vector<std::shared_ptr<worker_link>>>();
  // However the actor ends, no exchange it started stays open.
  self->attach_functor([links = st.all_links] {
    for (auto& link : *links)
      abort_running(*link);
  });
  // Every handler first takes the jobs workers handed back (drain).
  return {
    [self](connect_atom) -> caf::result<std::string> {
      drain(self);
      auto& st = self->state;
      if (st.current == phase::ready)
        return hello_json(st);
      auto promise = self->make_response_promise<std::string>();
      // A ping once ready: it waits for the session like any request (at
      // the stateless revision it is answered unsent).
      submit(
        self, std::nullopt, "ping", "", 0,
        [self, promise](result<std::string> outcome) mutable {
          if (!outcome)
            promise.deliver(to_error(outcome.error()));
          else
            promise.deliver(hello_json(self->state));
        },
        nullptr, request_role::readiness);
      return promise;
    },
    [self](request_atom, uint64_t key, std::string& method, std::string& params,
           uint32_t timeout_ms) -> caf::result<std::string> {
      return take_request(self, key, method, params, timeout_ms, false);
    },
    [self](request_atom, uint64_t key, std::string& method, std::string& params,
           uint32_t timeout_ms, bool resend_safe) -> caf::result<std::string> {
      return take_request(self, key, method, params, timeout_ms, resend_safe);
    },
    [self](cancel_atom, uint64_t key) {
      drain(self);
      auto& st = self->state;
      auto found = st.by_key.find(key);
      if (found != st.by_key.end())
        abandon(self, found->second, "request cancelled");
    },
    [self](list_atom, tool_atom) -> caf::result<std::string> {
      drain(self);
      auto acc = std::make_shared<discovery>();
      acc->promise = self->make_response_promise<std::string>();
      acc->changes_at_start = self->state.tools_changes;
      acc->told_at_start = self->state.tools_told;
      list_page(self, acc, {});
      return acc->promise;
    },
    [self](health_atom) {
      drain(self);
      return health_json(self->state);
    },
    [self](close_atom) -> caf::result<bool> {
      drain(self);
      auto& st = self->state;
      auto promise = self->make_response_promise<bool>();
      bool had_session = !st.legacy && !st.session_id.empty();
      st.current = phase::closed;
      fail_all(self, status::error(errc::unavailable, "connection closed"));
      if (st.listen_job)
        abort_job(*st.listener.link, *st.listen_job);
      if (!had_session) {
        promise.deliver(true);
        self->quit(caf::exit_reason::user_shutdown);
        return promise;
      }
      if (!st.control.actor)
        st.control = spawn_worker(self);
      auto job = std::make_shared<mcp_job>();
      job->kind = job_kind::close_session;
      job->path = st.post_path;
      job->headers = session_headers(st);
      self->request(st.control.actor, caf::infinite, job_atom::value, std::move(job))
        .then(
          [self, promise](mcp_job_ptr&) mutable {
            promise.deliver(true);
            self->quit(caf::exit_reason::user_shutdown);
          },
          [self, promise](caf::error&) mutable {
            promise.deliver(true);
            self->quit(caf::exit_reason::user_shutdown);
          });
      return promise;
    },
    // -- internal ----------------------------------------------------------------
    [self](deadline_atom) {
      drain(self);
      auto& st = self->state;
      auto now = clock_type::now();
      if (st.timer_at && *st.timer_at <= now)
        st.timer_at.reset();
      while (!st.deadlines.empty() && st.deadlines.begin()->first <= now)
        expire(self, st.deadlines.begin()->second);
      arm_deadline_timer(self);
    },
    [self](exchanged_atom, mcp_job_ptr& done) {
      drain(self);
      on_exchanged(self, done);
    },
    [self](inbound_atom, inbound_ptr& msg) {
      drain(self);
      on_inbound(self, *msg);
    },
    [self](listened_atom, mcp_job_ptr& done) {
      drain(self);
      on_listen_done(self, done);
    },
    [self](endpoint_atom, std::string& path) {
      drain(self);
      auto& st = self->state;
      if (!st.legacy || st.current != phase::connecting)
        return;
      st.post_path = std::move(path);
      send_initialize(self);
    },
  };
}

} // namespace

mcp_connection_actor spawn_mcp_connection(caf::actor_system& sys, mcp_endpoint endpoint,
                                          std::shared_ptr<const url_policy> policy,
                                          const mcp_config& cfg, const caf::actor& listener) {
  auto checked = policy->check(endpoint.url, "mcp");
  if (!checked) {
    // An actor that refuses every request with the policy's error.
    auto err = checked.error();
    auto refuser = sys.spawn([err](caf::event_based_actor*) -> caf::behavior {
      return {
        [err](connect_atom) -> caf::result<std::string> { return to_error(err); },
        [err](request_atom, uint64_t, std::string&, std::string&,
              uint32_t) -> caf::result<std::string> { return to_error(err); },
        [err](request_atom, uint64_t, std::string&, std::string&, uint32_t,
              bool) -> caf::result<std::string> { return to_error(err); },
        [](cancel_atom, uint64_t) {},
        [err](list_atom, tool_atom) -> caf::result<std::string> { return to_error(err); },
        [](health_atom) {
          return std::string{R"({"phase":"closed","transport":"none","session":false})"};
        },
        [](close_atom) { return true; },
      };
    });
    return caf::actor_cast<mcp_connection_actor>(refuser);
  }
  auto handle = sys.spawn(connection_behavior, std::move(endpoint), std::move(policy), cfg,
                          std::move(*checked), caf::actor_cast<caf::actor_addr>(listener));
  return caf::actor_cast<mcp_connection_actor>(handle);
}

} // namespace voxos
