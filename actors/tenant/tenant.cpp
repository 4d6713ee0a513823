#include "actors/tenant/tenant.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>

#include "actors/mcp/discovery.hpp"
#include "actors/mcp/mcp_connection.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/run/location.hpp"
#include "actors/run/run.hpp"
#include "actors/run/tool_catalog.hpp"
#include "actors/run/tool_names.hpp"
#include "actors/run/tool_view.hpp"
#include "actors/schedule/schedule_keeper.hpp"
#include "actors/tenant/example_install.hpp"
#include "actors/tenant/example_skills.hpp"
#include "actors/tenant/server_credentials.hpp"
#include "actors/tenant/server_setup.hpp"
#include "actors/tenant/server_sign_in.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "actors/tenant/tenant_logic.hpp"
#include "actors/tenant/tenant_queries.hpp"
#include "actors/tools/delegation.hpp"
#include "actors/tools/tool_desk.hpp"
#include "actors/work/work_queue.hpp"
#include "config/clock.hpp"
#include "config/internal_tools.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "storage/digest.hpp"
#include "transport/auth/broker_credentials.hpp"
#include "transport/auth/server_auth.hpp"
#include "transport/url_policy.hpp"

namespace voxos {

namespace {

using nlohmann::json;
using tenant_events::loaded_tenant;

constexpr auto store_timeout = std::chrono::seconds(30);
/// Projection entries a tenant may have (agents, servers, grants, ...).
constexpr uint32_t max_config_entries = 1'000'000;
/// Runs whose composed view stays in memory; older runs answer from the
/// persisted snapshot with a view recomposed on the current definitions.
constexpr std::size_t recent_runs = 256;
constexpr const char* audit_stream = "audit";
/// Audit events one audit read looks at (newest first).
constexpr uint32_t max_audit_events_read = 64;
/// MCP server records one tenant may have.
constexpr std::size_t max_servers = 256;
/// Longest a connection test may take (session, then every discovery page);
/// below the HTTP API's wait for an answer.
constexpr uint32_t connection_test_ms = 25'000;

std::string make_id(std::string_view prefix) {
  return std::string{prefix} + digest::random_hex(8);
}

std::optional<channel> parse_channel(const std::string& name) {
  for (auto c : {channel::owner_text_chat, channel::in_app_voice, channel::phone_call, channel::sms,
                 channel::whatsapp, channel::scheduled_run, channel::webhook,
                 channel::manual_worker_run, channel::subagent})
    if (to_string(c) == name)
      return c;
  return std::nullopt;
}

json view_to_json(const tool_view& view) {
  auto entry = [](const view_entry& e, bool with_schema) {
    json out{{"model_name", e.model_name()},
             {"origin", to_string(e.origin)},
             {"server_id", e.server_id()},
             {"tool", e.tool()},
             {"read_only", e.read_only}};
    if (!e.route_action().empty())
      out["route_action"] = e.route_action();
    if (with_schema) {
      out["description"] = e.description();
      out["input_schema"] = json::parse(e.input_schema(), nullptr, false);
    }
    return out;
  };
  json direct = json::array();
  for (const auto& e : view.direct)
    direct.push_back(entry(e, true));
  json catalog = json::array();
  for (const auto& e : view.catalog)
    catalog.push_back(entry(e, false));
  return {{"kind", view.kind == view_kind::voice ? "voice" : "text"},
          {"catalog_mode", view.catalog_mode},
          {"external_tools", view.external_tools},
          {"external_schema_tokens", view.external_schema_tokens},
          {"direct", direct},
          {"catalog", catalog}};
}

view_kind kind_of(channel c) {
  return c == channel::in_app_voice || c == channel::phone_call ? view_kind::voice
                                                                : view_kind::text;
}

struct run_entry {
  effective_policy snapshot;
  json view;
};

/// A run whose actor is alive.
struct live_run {
  run_actor actor;
  std::string chat_id;
  uint64_t turns = 0;
};

using live_run_map = std::unordered_map<std::string, live_run>;

/// Bytes of one turn's user or assistant text.
constexpr std::size_t max_turn_text_bytes = 64 * 1024;
/// The preset whose calls go through the Grounding Lite normaliser.
constexpr std::string_view maps_grounding_preset = "google_maps_grounding_lite";

struct tenant_actor_state {
  static inline const char* name = "tenant";
  std::string tenant_id;
  event_store_actor store;
  loaded_tenant cfg;
  /// cfg.state indexed for compose_policy, and its model-facing tool names
  /// ordered for compose_view; both emptied by every change to cfg, rebuilt
  /// by the next run start (see current_policy_index, current_tool_names).
  std::optional<policy_index> policy;
  std::optional<tool_name_order> tool_names;
  view_options view_opts;
  std::map<std::string, run_entry> runs;
  std::deque<std::string> run_order;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
  tenant_services services;
  /// One MCP client session per server, made by its connection test and
  /// killed when the server is deleted or tested afresh (and when this
  /// actor ends: see tenant_behavior).
  std::shared_ptr<std::map<std::string, mcp_connection_actor>> connections;
  /// Per OAuth server, how many times its credentials were replaced (a
  /// sign-in, a new machine client) in this actor's life. A connection's
  /// credentials report with the number they were opened under; a report
  /// from before a replacement (a refresh that was running when it happened)
  /// is dropped, so it never overwrites newer credentials.
  std::unordered_map<std::string, uint64_t> credential_epochs;
  /// Broker requests waiting for a refresh of their server's tokens that is
  /// in flight (one refresh at a time per server: a refresh token is spent
  /// once).
  std::unordered_map<std::string, std::vector<caf::typed_response_promise<std::string>>>
    broker_waiting;
  /// The runs whose actors live (killed when this actor ends), and each
  /// run's id by its actor's id (for their down messages).
  std::shared_ptr<live_run_map> live_runs;
  /// Starts past their run.max_live_runs check and not yet spawned or
  /// refused (they wait on the store): counted against the bound too.
  size_t starting_runs = 0;
  std::unordered_map<caf::actor_id, std::string> run_of_actor;
  /// "<server id>@<cache version>" of caches a run start has already tried
  /// to repair with a live discovery: one try per cache version.
  std::unordered_set<std::string> repairs_tried;
  /// Servers whose connection announced that their tools changed.
  std::unordered_set<std::string> stale_caches;
  node_metrics* metrics = nullptr;
  /// Runs the tenant's internal tools over its data (linked: it ends with
  /// this actor); told of every change to contacts and phones.
  tool_desk_actor desk;
  /// The tenant's queued work (linked, like the desk).
  work_queue_actor queue;
  /// The tenant's agent schedules, fired into the queue (linked).
  schedule_keeper_actor schedules;
};

using self_pointer = tenant_actor::stateful_pointer<tenant_actor_state>;

append_request config_append(const std::string& tenant_id, std::vector<event_draft> events) {
  append_request req;
  req.tenant = tenant_id;
  req.stream = tenant_events::stream;
  req.events = std::move(events);
  return req;
}

using string_promise = caf::typed_response_promise<std::string>;

/// Records an audit event, then calls `done(ok)`: callers answer only once
/// the decision they report is durable in the audit stream.
template <class F>
void audit(self_pointer self, std::string type, json data, F done) {
  append_request req;
  req.tenant = self->state.tenant_id;
  req.stream = audit_stream;
  req.events.push_back({std::move(type), data.dump()});
  self->request(self->state.store, store_timeout, append_atom::value, std::move(req))
    .then([done](const append_result&) mutable { done(true); },
          [done](caf::error& err) mutable {
            log::error("tenant", "audit append failed: " + message_of(err));
            done(false);
          });
}

work_queue_options queue_options(const work_config& cfg) {
  work_queue_options out;
  out.leases.lease_us = int64_t{cfg.lease_ms} * 1000;
  out.leases.max_attempts = cfg.max_attempts;
  out.leases.retry_delay_us = int64_t{cfg.retry_delay_ms} * 1000;
  out.max_pending = cfg.max_pending;
  out.max_lease_wait_ms = cfg.max_lease_wait_ms;
  return out;
}

schedule_keeper_options keeper_options(const work_config& cfg) {
  schedule_keeper_options out;
  out.limits.timing.min_interval_s = cfg.min_schedule_interval_s;
  out.limits.max_schedules = cfg.max_schedules;
  return out;
}

/// What the tool desk reads of this tenant's configuration, as it is now.
tool_desk_data_ptr desk_data(const tenant_state& state) {
  auto out = std::make_shared<tool_desk_data>();
  out->contacts = state.contacts;
  out->phones = state.phones;
  out->subagent_models = state.subagent_models;
  return out;
}

tool_desk_options desk_options(const tenant_services& services, const std::string& tenant_id) {
  const auto& cfg = services.tools;
  tool_desk_options out;
  if (!services.index_dir.empty())
    out.history.index.dir = services.index_dir + "/" + tenant_id + "/history";
  out.history.max_read_bytes = cfg.history_context_bytes;
  out.knowledge.pending_candidates = cfg.pending_candidates;
  out.knowledge.memories_per_agent = cfg.memories_per_agent;
  out.knowledge.skills = cfg.skills;
  out.plans.open_plans_per_agent = cfg.open_plans_per_agent;
  out.delegation.children_per_run = cfg.delegations_per_run;
  out.delegation.summary_bytes = cfg.delegation_summary_bytes;
  return out;
}

/// Applies events that are durable to the state in memory (and empties the
/// policy index and tool name order they make stale); tells the tool desk of contact, phone and
/// subagent model changes.
void apply_durable(self_pointer self, const std::vector<event_draft>& events) {
  self->state.policy.reset();
  self->state.tool_names.reset();
  bool desk_reads = false;
  for (const auto& ev : events) {
    if (auto applied = tenant_events::apply(ev, self->state.cfg); !applied)
      log::error("tenant", "applying a stored event failed: " + applied.message());
    desk_reads = desk_reads || ev.type.rfind("contact.", 0) == 0 || ev.type.rfind("phone.", 0) == 0
                 || ev.type.rfind("subagent_models.", 0) == 0;
  }
  if (desk_reads && self->state.desk)
    self->send(self->state.desk, contact_atom::value, desk_data(self->state.cfg.state));
}

/// Appends `events` (not empty) durably, then applies them in memory; then
/// `done(error or none)`. Other messages wait meanwhile (await): changes are
/// serial, so no change is made from a record another one is replacing.
template <class F>
void append_serially(self_pointer self, std::vector<event_draft> events, F done) {
  self
    ->request(self->state.store, store_timeout, append_atom::value,
              config_append(self->state.tenant_id, events))
    .await(
      [self, events, done](const append_result&) mutable {
        apply_durable(self, events);
        done(caf::error{});
      },
      [done](caf::error& err) mutable { done(std::move(err)); });
}

/// Appends `events` durably, then applies them in memory and delivers
/// `answer()` to `promise`. Other messages wait meanwhile (await).
template <class F>
void commit_into(self_pointer self, std::vector<event_draft> events,
                 caf::typed_response_promise<std::string> promise, F answer) {
  if (events.empty()) {
    promise.deliver(answer());
    return;
  }
  append_serially(self, std::move(events), [promise, answer](caf::error err) mutable {
    if (err)
      promise.deliver(std::move(err));
    else
      promise.deliver(answer());
  });
}

/// Appends `events` durably, then applies them in memory and answers with
/// `answer()`. Other messages wait meanwhile (await): changes are serial.
template <class F>
caf::result<std::string> commit(self_pointer self, std::vector<event_draft> events, F answer) {
  if (events.empty())
    return answer();
  auto promise = self->make_response_promise<std::string>();
  commit_into(self, std::move(events), promise, std::move(answer));
  return promise;
}

/// Refuses a change: an audit event, then the error.
caf::result<std::string> refuse(self_pointer self, const status& why, json what) {
  what["code"] = to_string(why.code());
  auto promise = self->make_response_promise<std::string>();
  audit(self, "config.refused", std::move(what),
        [promise, err = to_error(why)](bool) mutable { promise.deliver(std::move(err)); });
  return promise;
}

/// A deletion `events` (or its refusal, audited with `what`) answered as
/// {"deleted": id} once durable.
caf::result<std::string> delete_entity(self_pointer self, result<std::vector<event_draft>> events,
                                       json what, const std::string& id) {
  if (!events)
    return refuse(self, events.error(), std::move(what));
  return commit(self, std::move(*events), [id] { return json{{"deleted", id}}.dump(); });
}

/// The policy index of the current configuration, built if a change emptied it.
const policy_index& current_policy_index(tenant_actor_state& st) {
  if (!st.policy)
    st.policy.emplace(st.cfg.state);
  return *st.policy;
}

/// The tool name order of the current configuration, built if a change emptied it.
const tool_name_order& current_tool_names(tenant_actor_state& st) {
  if (!st.tool_names)
    st.tool_names.emplace(st.cfg.state);
  return *st.tool_names;
}

void remember_run(self_pointer self, const std::string& run_id, run_entry entry) {
  auto& st = self->state;
  st.runs[run_id] = std::move(entry);
  st.run_order.push_back(run_id);
  while (st.run_order.size() > recent_runs) {
    st.runs.erase(st.run_order.front());
    st.run_order.pop_front();
  }
}

/// The snapshot a run's first event ("run.started") persisted.
result<effective_policy> snapshot_of(const event_record& started) {
  auto doc = json::parse(started.data, nullptr, false);
  if (!doc.is_object() || !doc.contains("snapshot"))
    return status::error(errc::corrupt_data, "malformed run record");
  return tenant_events::policy_from_json(doc["snapshot"]);
}

/// Calls `fn(snapshot, promise)` with a run's snapshot, from memory or read
/// from the run's stream; `fn` answers through the promise. Answers
/// not_found for a run this tenant does not have.
template <class F>
void with_snapshot(self_pointer self, const std::string& run_id,
                   caf::typed_response_promise<std::string> promise, F fn) {
  auto& st = self->state;
  if (auto found = st.runs.find(run_id); found != st.runs.end()) {
    fn(found->second.snapshot, promise);
    return;
  }
  if (run_id.size() > 64) {
    promise.deliver(make_error(errc::not_found, "no such run for this tenant"));
    return;
  }
  stream_query q{st.tenant_id, "run." + run_id, 1, 1};
  self->request(st.store, store_timeout, read_atom::value, q)
    .then(
      [promise, fn](std::vector<event_record>& events) mutable {
        if (events.empty()) {
          promise.deliver(make_error(errc::not_found, "no such run for this tenant"));
          return;
        }
        auto snapshot = snapshot_of(events.front());
        if (!snapshot) {
          promise.deliver(to_error(snapshot.error()));
          return;
        }
        fn(*snapshot, promise);
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

template <class F>
caf::result<std::string> with_snapshot(self_pointer self, const std::string& run_id, F fn) {
  auto promise = self->make_response_promise<std::string>();
  with_snapshot(self, run_id, promise, std::move(fn));
  return promise;
}

json audit_decisions(const effective_policy& p) {
  json rows = json::array();
  for (const auto& d : p.decisions)
    rows.push_back({d.tool(), d.server_id(), to_string(d.why)});
  return rows;
}

// -- MCP servers: create, connection test, delete ------------------------------

void drop_connection(self_pointer self, const std::string& server_id) {
  auto& conns = *self->state.connections;
  if (auto found = conns.find(server_id); found != conns.end()) {
    caf::anon_send_exit(found->second, caf::exit_reason::kill);
    conns.erase(found);
  }
}

caf::result<std::string> create_server(self_pointer self, const std::string& text) {
  auto& st = self->state;
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return make_error(errc::bad_json, "server: expected one JSON object");
  if (st.cfg.state.servers.size() >= max_servers)
    return refuse(self, status::error(errc::out_of_range, "a tenant has at most 256 servers"),
                  {{"op", "create_server"}});
  auto server_id = make_id("s_");
  auto made = server_setup::from_request(doc, *st.services.urls, st.tenant_id, server_id);
  if (!made)
    return refuse(self, made.error(), {{"op", "create_server"}});
  auto rec = std::move(made->record);
  if (!made->headers.empty()) {
    // Under the server's data key, made now (an orphan if the append fails:
    // the next start erases it).
    auto sealed =
      server_credentials::seal_headers(*st.services.keys, st.tenant_id, server_id, made->headers);
    if (!sealed)
      return to_error(sealed.error());
    rec.sealed_headers = std::move(*sealed);
  }
  return commit(self, {tenant_events::server_upserted(rec)}, [self, server_id] {
    return tenant_events::to_json(self->state.cfg.state.servers.at(server_id), false).dump();
  });
}

/// Folds a successful discovery into the record and answers it.
void finish_test(self_pointer self, const std::string& server_id, const std::string& answer,
                 string_promise promise) {
  auto& st = self->state;
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end()) {
    promise.deliver(make_error(errc::not_found, "the server was deleted during its test"));
    return;
  }
  auto found = read_discovery(answer);
  if (!found) {
    promise.deliver(to_error(found.error()));
    return;
  }
  auto skipped = found->skipped;
  auto tested = server_setup::with_discovery(rec->second, std::move(found->tools),
                                             st.services.mcp.max_cached_tools, wall_clock_us());
  commit_into(self, {tenant_events::server_upserted(tested)}, promise, [self, server_id, skipped] {
    const auto& now = self->state.cfg.state.servers.at(server_id);
    auto out = tenant_events::to_json(now, false);
    out["discovered"] = now.cached_tools.size();
    out["skipped"] = skipped;
    return out.dump();
  });
}

/// A failed test: the server is no longer connected and the test is
/// recorded with its error; the caller gets `err`.
void fail_test(self_pointer self, const std::string& server_id, caf::error err,
               string_promise promise) {
  auto& st = self->state;
  drop_connection(self, server_id);
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end()) {
    promise.deliver(std::move(err));
    return;
  }
  // (an error of CAF's own here is the test's deadline)
  bool ours = err.category() == error_category();
  auto down = server_setup::with_failed_test(
    rec->second, ours ? code_of(err) : errc::unavailable,
    ours ? message_of(err) : std::string{"the server did not answer in time"}, wall_clock_us());
  std::vector<event_draft> events{tenant_events::server_upserted(down)};
  self->request(st.store, store_timeout, append_atom::value, config_append(st.tenant_id, events))
    .await(
      [self, events, promise, err](const append_result&) mutable {
        apply_durable(self, events);
        promise.deliver(std::move(err));
      },
      [promise, err](caf::error&) mutable { promise.deliver(std::move(err)); });
}

// -- OAuth servers: their credentials and the browser sign-in ------------------

/// A server's sealed OAuth value, opened and read as JSON; nullopt if none.
result<std::optional<json>> open_oauth_value(const tenant_actor_state& st,
                                             const mcp_server_record& rec, std::string_view purpose,
                                             const std::string& sealed) {
  if (sealed.empty())
    return std::optional<json>{};
  auto text =
    server_credentials::open_text(*st.services.keys, st.tenant_id, rec.server_id, purpose, sealed);
  if (!text)
    return text.error();
  auto doc = json::parse(*text, nullptr, false);
  OPENSSL_cleanse(text->data(), text->size());
  if (doc.is_discarded())
    return status::error(errc::corrupt_data, "a server's sealed OAuth value does not decode");
  return std::optional<json>{std::move(doc)};
}

/// A server's stored OAuth client (T = client_registration) or tokens
/// (T = token_set), opened from the vault; nullopt if none is stored.
template <class T>
result<std::optional<T>> open_stored(const tenant_actor_state& st, const mcp_server_record& rec) {
  constexpr bool is_client = std::is_same_v<T, auth::client_registration>;
  auto doc = open_oauth_value(st, rec,
                              is_client ? server_credentials::oauth_client_purpose
                                        : server_credentials::oauth_tokens_purpose,
                              is_client ? rec.sealed_oauth_client : rec.sealed_oauth_tokens);
  if (!doc)
    return doc.error();
  if (!*doc)
    return std::optional<T>{};
  auto read = T::from_json(**doc);
  if (!read)
    return read.error();
  return std::optional<T>{std::move(*read)};
}

/// `doc` sealed for the server and `purpose` (the record's text form).
result<std::string> seal_oauth_value(const tenant_actor_state& st, const std::string& server_id,
                                     std::string_view purpose, const json& doc) {
  auto text = doc.dump();
  auto sealed =
    server_credentials::seal_text(*st.services.keys, st.tenant_id, server_id, purpose, text);
  OPENSSL_cleanse(text.data(), text.size());
  return sealed;
}

/// The credentials of a connection to an OAuth server: the client and
/// tokens opened from the vault, held in memory by the connection; new
/// tokens and a give-up (needs_auth) are told to the tenant, which seals
/// and records them. The node has no browser: a server without usable
/// tokens answers needs_auth until its owner signs in again.
result<std::shared_ptr<auth::server_auth>> oauth_credentials(self_pointer self,
                                                             const mcp_server_record& rec) {
  auto& st = self->state;
  if (!st.services.sign_in)
    return status::error(errc::needs_auth,
                         "this node cannot sign in to servers: it has no OAuth state secret");
  auto registered = open_stored<auth::client_registration>(st, rec);
  if (!registered)
    return registered.error();
  auto held = open_stored<auth::token_set>(st, rec);
  if (!held)
    return held.error();
  const auto& ctx = *st.services.sign_in;
  auth::oauth_settings settings;
  settings.kind = rec.auth == auth_mode::oauth_authorization_code
                    ? auth::oauth_settings::grant::authorization_code
                    : auth::oauth_settings::grant::client_credentials;
  settings.server_url = rec.url;
  settings.profile.client_name = ctx.client_name;
  settings.profile.redirect_uri = ctx.redirect_uri;
  settings.profile.metadata_document_url = ctx.metadata_document_url;
  if (settings.kind == auth::oauth_settings::grant::client_credentials)
    settings.profile.pre_registered = *registered;
  auto tenant = caf::actor_cast<caf::actor>(self);
  auto server_id = rec.server_id;
  auto epoch = st.credential_epochs[server_id];
  settings.on_tokens = [tenant, server_id, epoch](const auth::client_registration& used,
                                                  const auth::token_set& fresh) {
    caf::anon_send(tenant, tokens_atom::value, server_id, epoch, used.to_json().dump(),
                   fresh.to_json().dump());
  };
  settings.on_needs_auth = [tenant, server_id, epoch] {
    caf::anon_send(tenant, needs_auth_atom::value, server_id, epoch);
  };
  return std::shared_ptr<auth::server_auth>{std::make_shared<auth::oauth_session>(
    ctx.fetch, std::move(settings), std::move(*registered), std::move(*held))};
}

/// Runs `job` (it blocks on an authorization server) on a worker thread of
/// its own; `then` gets its outcome back on the tenant's thread.
template <class T, class Then>
void off_thread(self_pointer self, std::function<result<T>()> job, Then then) {
  auto box = std::make_shared<std::optional<result<T>>>();
  auto worker =
    self->system().spawn<caf::detached>([job, box](caf::event_based_actor* me) -> caf::behavior {
      return {[job, box, me](run_atom) {
        *box = job();
        me->quit();
        return true;
      }};
    });
  // The authorization work bounds each request itself (auth_fetch: 10 s);
  // a sign-in makes a handful.
  self->request(worker, std::chrono::seconds{90}, run_atom::value)
    .then([box, then](bool) mutable { then(std::move(**box)); },
          [then](caf::error& err) mutable {
            then(result<T>{status::error(code_of(err), message_of(err))});
          });
}

/// The OAuth server `server_id` of this tenant, or the refusal.
result<const mcp_server_record*> oauth_server(const tenant_actor_state& st,
                                              const std::string& server_id, bool browser_sign_in) {
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end())
    return status::error(errc::not_found, "no such server for this tenant");
  if (browser_sign_in ? !server_setup::signs_in_by_browser(rec->second.auth)
                      : !server_setup::is_oauth(rec->second.auth)
                          || server_setup::signs_in_by_browser(rec->second.auth))
    return status::error(errc::conflict, browser_sign_in
                                           ? "this server does not sign in through a browser"
                                           : "this server takes no machine client");
  if (!st.services.sign_in)
    return status::error(errc::conflict,
                         "this node cannot sign in to servers: it has no OAuth state secret");
  return &rec->second;
}

caf::result<std::string> start_sign_in(self_pointer self, const std::string& server_id,
                                       const std::string& body) {
  auto& st = self->state;
  auto rec = oauth_server(st, server_id, true);
  if (!rec)
    return refuse(self, rec.error(), {{"op", "sign_in"}, {"server_id", server_id}});
  auto doc = json::parse(body, nullptr, false);
  if (!doc.is_object())
    return make_error(errc::bad_json, "sign-in: expected one JSON object");
  auto id = doc.value("client_id", std::string{});
  auto secret = doc.value("client_secret", std::string{});
  if (id.empty() != secret.empty())
    return make_error(errc::missing_field,
                      "client_id, client_secret: give both to replace the client, or neither");
  std::optional<auth::client_registration> replacement;
  if (!id.empty()) {
    replacement.emplace();
    replacement->client_id = std::move(id);
    replacement->client_secret = std::move(secret);
  }
  auto stored = open_stored<auth::client_registration>(st, **rec);
  if (!stored)
    return to_error(stored.error());
  auto stored_client = std::move(*stored);
  // A preset's variants share one client (Google Workspace: one server per
  // product, one OAuth web client): with blank fields and none stored, the
  // client another server of the same preset holds is used, and sealed
  // again for this one.
  if (!replacement && !stored_client && !(*rec)->preset_id.empty())
    for (const auto& [other_id, other] : st.cfg.state.servers) {
      if (other_id == server_id || other.preset_id != (*rec)->preset_id
          || other.sealed_oauth_client.empty())
        continue;
      auto shared = open_stored<auth::client_registration>(st, other);
      if (shared && *shared && !(*shared)->dynamic) {
        replacement = std::move(**shared);
        break;
      }
    }
  auto ctx = st.services.sign_in;
  auto tenant_id = st.tenant_id;
  auto url = (*rec)->url;
  auto promise = self->make_response_promise<std::string>();
  off_thread<server_sign_in::started>(
    self,
    [ctx, tenant_id, server_id, url, stored_client, replacement] {
      return server_sign_in::start(*ctx, tenant_id, server_id, url, stored_client, replacement,
                                   wall_clock_ms());
    },
    [self, server_id, promise](result<server_sign_in::started> started) mutable {
      if (!started) {
        promise.deliver(to_error(started.error()));
        return;
      }
      auto& st = self->state;
      auto now = st.cfg.state.servers.find(server_id);
      if (now == st.cfg.state.servers.end()) {
        promise.deliver(make_error(errc::not_found, "the server was deleted during sign-in"));
        return;
      }
      // The pending sign-in, with its client (a replacement, or a new
      // registration), is sealed before the provider is opened. The client
      // replaces the stored one only when the sign-in completes: the stored
      // tokens belong to the stored client until then.
      auto pending_doc = started->sign_in.to_json();
      pending_doc["client"] = started->client.to_json();
      auto pending =
        seal_oauth_value(st, server_id, server_credentials::sign_in_purpose, pending_doc);
      OPENSSL_cleanse(started->sign_in.verifier.data(), started->sign_in.verifier.size());
      if (!pending) {
        promise.deliver(to_error(pending.error()));
        return;
      }
      auto updated = now->second;
      updated.sealed_sign_in = std::move(*pending);
      updated.sign_in_flow = started->sign_in.flow;
      json answer{{"authorization_url", started->authorization_url},
                  {"redirect_uri", st.services.sign_in->redirect_uri}};
      commit_into(self, {tenant_events::server_upserted(updated)}, promise,
                  [answer] { return answer.dump(); });
    });
  return promise;
}

caf::result<std::string> test_server(self_pointer self, const std::string& server_id);

caf::result<std::string> finish_sign_in(self_pointer self, const std::string& server_id,
                                        const std::string& flow, const std::string& query) {
  auto& st = self->state;
  auto rec = oauth_server(st, server_id, true);
  if (!rec)
    return refuse(self, rec.error(), {{"op", "sign_in_callback"}, {"server_id", server_id}});
  // One pending sign-in per server: another, a used or a replaced one is
  // refused (a replayed state finds nothing).
  if ((*rec)->sign_in_flow.empty() || (*rec)->sign_in_flow != flow) {
    st.metrics->sign_ins_refused.fetch_add(1, std::memory_order_relaxed);
    return refuse(self,
                  status::error(errc::unauthorized,
                                "sign-in: no such sign-in is waiting (used, replaced or unknown)"),
                  {{"op", "sign_in_callback"}, {"server_id", server_id}});
  }
  auto pending_doc =
    open_oauth_value(st, **rec, server_credentials::sign_in_purpose, (*rec)->sealed_sign_in);
  if (!pending_doc || !*pending_doc || !(**pending_doc).contains("client"))
    return make_error(errc::corrupt_data, "sign-in: the pending sign-in does not open");
  auto pending = server_sign_in::pending::from_json(**pending_doc);
  auto client = auth::client_registration::from_json((**pending_doc)["client"]);
  if (!pending || !client)
    return make_error(errc::corrupt_data, "sign-in: the pending sign-in does not decode");
  auto fields_doc = json::parse(query, nullptr, false);
  auth::form_fields answer;
  if (fields_doc.is_object())
    for (const auto& [name, value] : fields_doc.items())
      if (value.is_string())
        answer.emplace_back(name, value.get<std::string>());
  // The sign-in is used now, whatever its outcome: a replay finds nothing.
  auto used = **rec;
  used.sealed_sign_in.clear();
  used.sign_in_flow.clear();
  auto ctx = st.services.sign_in;
  auto url = (*rec)->url;
  auto promise = self->make_response_promise<std::string>();
  append_serially(self, {tenant_events::server_upserted(used)}, [=](caf::error err) mutable {
    if (err) {
      promise.deliver(std::move(err));
      return;
    }
    off_thread<auth::token_set>(
      self,
      [ctx, url, client = *client, pending = *pending, answer] {
        return server_sign_in::finish(*ctx, url, client, pending, answer, wall_clock_ms());
      },
      [self, server_id, client = *client, promise](result<auth::token_set> tokens) mutable {
        auto& st = self->state;
        if (!tokens) {
          st.metrics->sign_ins_refused.fetch_add(1, std::memory_order_relaxed);
          promise.deliver(to_error(tokens.error()));
          return;
        }
        st.metrics->sign_ins.fetch_add(1, std::memory_order_relaxed);
        auto now = st.cfg.state.servers.find(server_id);
        if (now == st.cfg.state.servers.end()) {
          promise.deliver(make_error(errc::not_found, "the server was deleted during sign-in"));
          return;
        }
        auto sealed = seal_oauth_value(st, server_id, server_credentials::oauth_tokens_purpose,
                                       tokens->to_json());
        auto sealed_client = seal_oauth_value(
          st, server_id, server_credentials::oauth_client_purpose, client.to_json());
        if (!sealed || !sealed_client) {
          promise.deliver(to_error(!sealed ? sealed.error() : sealed_client.error()));
          return;
        }
        // New credentials: whatever an older connection reports from now
        // on is stale.
        ++st.credential_epochs[server_id];
        drop_connection(self, server_id);
        auto signed_in = now->second;
        signed_in.sealed_oauth_tokens = std::move(*sealed);
        signed_in.sealed_oauth_client = std::move(*sealed_client);
        signed_in.needs_auth = false;
        append_serially(
          self, {tenant_events::server_upserted(signed_in)},
          [self, server_id, promise](caf::error failed) mutable {
            if (failed) {
              promise.deliver(std::move(failed));
              return;
            }
            // Tested and discovered with the new tokens.
            self
              ->request(caf::actor_cast<tenant_actor>(self),
                        std::chrono::milliseconds{connection_test_ms * 2}, connect_atom::value,
                        server_atom::value, server_id)
              .then([promise](std::string& record) mutable { promise.deliver(std::move(record)); },
                    [promise](caf::error& failed) mutable { promise.deliver(std::move(failed)); });
          });
      });
  });
  return promise;
}

void store_tokens(self_pointer self, const std::string& server_id, uint64_t epoch,
                  const std::string& client_text, const std::string& tokens_text);
void mark_needs_auth(self_pointer self, const std::string& server_id, uint64_t epoch);

/// The broker's answer for a brokered server's current access token.
std::string broker_answer(const auth::token_set& tokens) {
  auto now_ms = wall_clock_ms();
  json out{{"access_token", tokens.access_token}, {"token_type", "Bearer"}};
  if (tokens.expires_at_ms != 0)
    out["expires_in"] = std::max<int64_t>(0, (tokens.expires_at_ms - now_ms) / 1000);
  return out.dump();
}

/// The broker route's question: the current access token of brokered server
/// `server_id`, refreshed first when it expires within a minute (one refresh
/// at a time; the rotated tokens are sealed and stored).
caf::result<std::string> broker_token(self_pointer self, const std::string& server_id) {
  auto& st = self->state;
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end())
    return make_error(errc::not_found, "no such server for this tenant");
  if (rec->second.auth != auth_mode::brokered_oauth)
    return make_error(errc::forbidden, "the server is not a brokered one");
  if (rec->second.needs_auth || rec->second.sealed_oauth_tokens.empty() || !st.services.sign_in)
    return make_error(errc::needs_auth, "the server needs signing in (again)");
  auto stored_tokens = open_stored<auth::token_set>(st, rec->second);
  auto stored_client = open_stored<auth::client_registration>(st, rec->second);
  if (!stored_tokens || !*stored_tokens || !stored_client || !*stored_client)
    return make_error(errc::corrupt_data, "a brokered server's credentials do not open");
  auto& tokens = *stored_tokens;
  auto& client = *stored_client;
  constexpr int64_t refresh_margin_ms = 60'000;
  if (!tokens->expired(wall_clock_ms(), refresh_margin_ms))
    return broker_answer(*tokens);
  auto promise = self->make_response_promise<std::string>();
  auto& waiting = st.broker_waiting[server_id];
  waiting.push_back(promise);
  if (waiting.size() > 1)
    return promise; // a refresh is in flight: its answer is ours too
  auto ctx = st.services.sign_in;
  auto url = rec->second.url;
  auto epoch = st.credential_epochs[server_id];
  off_thread<auth::token_set>(
    self,
    [ctx, url, client = *client, held = *tokens] {
      return server_sign_in::refresh(*ctx, url, client, held);
    },
    [self, server_id, client = *client, epoch](result<auth::token_set> fresh) mutable {
      auto& st = self->state;
      auto waiting = std::move(st.broker_waiting[server_id]);
      st.broker_waiting.erase(server_id);
      if (!fresh) {
        if (fresh.error().code() == errc::needs_auth)
          mark_needs_auth(self, server_id, epoch);
        for (auto& promise : waiting)
          promise.deliver(to_error(fresh.error()));
        return;
      }
      auto answer = broker_answer(*fresh);
      store_tokens(self, server_id, epoch, client.to_json().dump(), fresh->to_json().dump());
      for (auto& promise : waiting)
        promise.deliver(answer);
    });
  return promise;
}

caf::result<std::string> set_machine_client(self_pointer self, const std::string& server_id,
                                            const std::string& body) {
  auto& st = self->state;
  auto rec = oauth_server(st, server_id, false);
  if (!rec)
    return refuse(self, rec.error(), {{"op", "set_client"}, {"server_id", server_id}});
  auto doc = json::parse(body, nullptr, false);
  if (!doc.is_object())
    return make_error(errc::bad_json, "client: expected one JSON object");
  auth::client_registration client;
  client.client_id = doc.value("client_id", std::string{});
  if (client.client_id.empty() || client.client_id.size() > 512)
    return make_error(errc::missing_field, "client_id: 1 to 512 bytes, required");
  if ((*rec)->auth == auth_mode::private_key_jwt) {
    client.method = auth::client_auth_method::private_key_jwt;
    client.private_key_pem = doc.value("private_key_pem", std::string{});
    client.signing_alg = doc.value("signing_alg", std::string{});
    auto key = auth::signing_key::from_pem(client.private_key_pem, client.signing_alg);
    if (!key)
      return make_error(errc::out_of_range, "private_key_pem: " + key.error().message());
    client.signing_alg = std::string{key->alg_name()};
  } else {
    client.client_secret = doc.value("client_secret", std::string{});
    if (client.client_secret.empty())
      return make_error(errc::missing_field, "client_secret: required");
    auto method = doc.value("token_endpoint_auth_method", std::string{"client_secret_basic"});
    if (method != "client_secret_basic" && method != "client_secret_post")
      return make_error(errc::out_of_range,
                        "token_endpoint_auth_method: client_secret_basic or client_secret_post");
    client.method = *auth::client_auth_method_from(method);
  }
  auto sealed =
    seal_oauth_value(st, server_id, server_credentials::oauth_client_purpose, client.to_json());
  OPENSSL_cleanse(client.client_secret.data(), client.client_secret.size());
  OPENSSL_cleanse(client.private_key_pem.data(), client.private_key_pem.size());
  if (!sealed)
    return to_error(sealed.error());
  auto updated = **rec;
  updated.sealed_oauth_client = std::move(*sealed);
  updated.sealed_oauth_tokens.clear();
  ++st.credential_epochs[server_id];
  drop_connection(self, server_id);
  return commit(self, {tenant_events::server_upserted(updated)}, [self, server_id] {
    return tenant_events::to_json(self->state.cfg.state.servers.at(server_id), false).dump();
  });
}

/// New tokens from a connection's credentials (a grant or a refresh):
/// sealed and stored, replacing the old ones in one event; the server no
/// longer needs signing in.
void store_tokens(self_pointer self, const std::string& server_id, uint64_t epoch,
                  const std::string& client_text, const std::string& tokens_text) {
  auto& st = self->state;
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end() || !server_setup::is_oauth(rec->second.auth)
      || epoch != st.credential_epochs[server_id])
    return;
  auto client = seal_oauth_value(st, server_id, server_credentials::oauth_client_purpose,
                                 json::parse(client_text, nullptr, false));
  auto tokens = seal_oauth_value(st, server_id, server_credentials::oauth_tokens_purpose,
                                 json::parse(tokens_text, nullptr, false));
  if (!client || !tokens) {
    log::error("tenant", "sealing a server's new tokens failed: "
                           + (!client ? client.error() : tokens.error()).message());
    return;
  }
  auto updated = rec->second;
  updated.sealed_oauth_client = std::move(*client);
  updated.sealed_oauth_tokens = std::move(*tokens);
  updated.needs_auth = false;
  append_serially(self, {tenant_events::server_upserted(updated)}, [](caf::error err) {
    if (err)
      log::error("tenant", "storing a server's new tokens failed: " + message_of(err));
  });
}

/// A connection's credentials gave up: the server needs signing in again,
/// and its tools leave new runs' views until it does.
void mark_needs_auth(self_pointer self, const std::string& server_id, uint64_t epoch) {
  auto& st = self->state;
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end() || rec->second.needs_auth
      || epoch != st.credential_epochs[server_id])
    return;
  auto updated = rec->second;
  updated.needs_auth = true;
  st.metrics->servers_needing_auth.fetch_add(1, std::memory_order_relaxed);
  log::info("tenant", "a server needs signing in again: " + server_id);
  append_serially(self, {tenant_events::server_upserted(updated)}, [](caf::error err) {
    if (err)
      log::error("tenant", "recording that a server needs signing in failed: " + message_of(err));
  });
}

/// A new session with server `server_id` (its credentials opened from the
/// vault), replacing any the tenant had, and kept as the tenant's session.
result<mcp_connection_actor> open_connection(self_pointer self, const std::string& server_id,
                                             const mcp_server_record& rec) {
  auto& st = self->state;
  auto headers = server_credentials::open_headers(*st.services.keys, st.tenant_id, rec);
  if (!headers)
    return headers.error();
  mcp_endpoint endpoint{server_id, rec.transport, rec.url, std::move(*headers)};
  if (rec.auth == auth_mode::brokered_oauth) {
    // The endpoint bearer (its static header) and a fresh broker assertion
    // with every request; the provider's tokens stay here.
    if (!st.services.sign_in)
      return status::error(errc::needs_auth,
                           "this node cannot broker: it has no OAuth state secret");
    endpoint.auth = std::make_shared<auth::broker_credentials>(st.services.sign_in->broker_key,
                                                               st.tenant_id, server_id);
  } else if (server_setup::is_oauth(rec.auth)) {
    auto credentials = oauth_credentials(self, rec);
    if (!credentials)
      return credentials.error();
    endpoint.auth = std::move(*credentials);
  }
  drop_connection(self, server_id);
  auto conn = spawn_mcp_connection(self->system(), std::move(endpoint), st.services.urls,
                                   st.services.mcp, caf::actor_cast<caf::actor>(self));
  (*st.connections)[server_id] = conn;
  return conn;
}

caf::result<std::string> test_server(self_pointer self, const std::string& server_id) {
  auto& st = self->state;
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end())
    return refuse(self, status::error(errc::not_found, "no such server for this tenant"),
                  {{"op", "test_server"}, {"server_id", server_id}});
  // A test is a fresh session: whatever the old one knew may be stale.
  auto opened = open_connection(self, server_id, rec->second);
  if (!opened)
    return to_error(opened.error());
  auto conn = *opened;
  auto promise = self->make_response_promise<std::string>();
  self
    ->request(conn, std::chrono::milliseconds{connection_test_ms}, list_atom::value,
              tool_atom::value)
    .then([self, server_id,
           promise](std::string& answer) mutable { finish_test(self, server_id, answer, promise); },
          [self, server_id, promise](caf::error& err) mutable {
            fail_test(self, server_id, std::move(err), promise);
          });
  return promise;
}

/// The deletion event first, then the erasure of the server's data key (a
/// stop between the two leaves an orphan key, which the next start erases).
caf::result<std::string> delete_server(self_pointer self, const std::string& server_id) {
  auto promise = self->make_response_promise<std::string>();
  append_serially(self, {tenant_events::server_deleted(server_id)},
                  [self, server_id, promise](caf::error err) mutable {
                    if (err) {
                      promise.deliver(std::move(err));
                      return;
                    }
                    auto answer = json{{"deleted", server_id}}.dump();
                    auto& st = self->state;
                    self
                      ->request(st.services.keeper, store_timeout, erase_atom::value,
                                server_atom::value, st.tenant_id, server_id)
                      .then([promise, answer](bool) mutable { promise.deliver(answer); },
                            [promise, answer](caf::error& failed) mutable {
                              log::error("tenant",
                                         "erasing the credentials of a deleted server failed ("
                                           + message_of(failed) + "); the next start erases them");
                              promise.deliver(answer);
                            });
                  });
  return promise;
}

// -- runs: the live run actors ------------------------------------------------

/// The tenant's session with a server, made on first use (nothing is sent
/// until a request). Shared by every run of the tenant that may call it.
result<mcp_connection_actor> connection_for(self_pointer self, const std::string& server_id) {
  auto& st = self->state;
  auto& conns = *st.connections;
  if (auto found = conns.find(server_id); found != conns.end())
    return found->second;
  auto rec = st.cfg.state.servers.find(server_id);
  if (rec == st.cfg.state.servers.end())
    return status::error(errc::not_found, "no such server for this tenant");
  return open_connection(self, server_id, rec->second);
}

round_limits limits_of(const run_config& cfg) {
  round_limits out;
  out.wave_width = cfg.wave_width;
  out.max_calls = cfg.max_calls;
  out.max_argument_bytes = cfg.max_argument_bytes;
  out.max_corrections = cfg.max_corrections;
  return out;
}

/// Spawns the actor of a run whose snapshot is persisted and audited: it
/// gets the view, its catalog, and a connection to each server the
/// snapshot allows, and nothing else.
status spawn_run_actor(self_pointer self, const std::string& run_id, const std::string& chat_id,
                       const std::string& caller_number, const effective_policy& snapshot,
                       tool_view view) {
  auto& st = self->state;
  run_setup setup;
  setup.tenant_id = st.tenant_id;
  setup.run_id = run_id;
  setup.snapshot = run_part(snapshot);
  auto key = fresh_catalog_key();
  if (!key)
    return key.error();
  if (view.catalog_mode) {
    auto catalog = tool_catalog::build(view, *key);
    if (!catalog)
      return catalog.error();
    setup.catalog = std::make_shared<const tool_catalog>(std::move(*catalog));
  }
  auto kind = view.kind;
  setup.view = std::move(view);
  for (const auto& tool : snapshot.tools) {
    if (tool.origin != tool_origin::mcp)
      continue;
    std::string server_id{tool.server_id()};
    if (setup.connections.count(server_id) != 0)
      continue;
    auto conn = connection_for(self, server_id);
    if (!conn)
      return conn.error();
    setup.connections.emplace(server_id, *conn);
    auto rec = st.cfg.state.servers.find(server_id);
    if (rec != st.cfg.state.servers.end() && rec->second.preset_id == maps_grounding_preset)
      setup.adapters.emplace(server_id, call_adapter::maps_grounding_lite);
  }
  setup.desk = st.desk;
  auto context = std::make_shared<tool_context>();
  context->tenant_id = st.tenant_id;
  context->agent_id = snapshot.agent_id;
  context->run_id = run_id;
  context->chat_id = chat_id;
  context->chan = snapshot.chan;
  context->caller = snapshot.caller;
  context->contacts = snapshot.contacts;
  context->caller_number = caller_number;
  setup.context = std::move(context);
  setup.limits = limits_of(st.services.run);
  setup.call_timeout_ms = st.services.run.call_timeout_ms;
  setup.store = st.store;
  // The trace, when the node records them: what the run was given first.
  if (!st.services.run.trace_dir.empty()) {
    auto trace = run_trace::create(st.services.run.trace_dir + "/" + run_id + ".jsonl",
                                   st.services.run.trace_max_bytes);
    if (!trace)
      return trace.error();
    std::vector<const mcp_server_record*> servers;
    for (const auto& [server_id, conn] : setup.connections)
      if (auto rec = st.cfg.state.servers.find(server_id); rec != st.cfg.state.servers.end())
        servers.push_back(&rec->second);
    (*trace)->header(st.tenant_id, snapshot, servers, setup.adapters, *key, kind, setup.limits);
    setup.trace = std::move(*trace);
  }
  OPENSSL_cleanse(key->data(), key->size());
  auto run = spawn_run(self->system(), std::move(setup), *st.metrics);
  self->monitor(run);
  st.run_of_actor[run.id()] = run_id;
  (*st.live_runs)[run_id] = live_run{run, chat_id};
  return status::ok();
}

/// The live run `run_id` of this tenant, or not_found.
result<run_actor> live(self_pointer self, const std::string& run_id) {
  auto found = self->state.live_runs->find(run_id);
  if (found == self->state.live_runs->end())
    return status::error(errc::not_found, "no live run with this id for this tenant");
  return found->second.actor;
}

// -- run start ---------------------------------------------------------------

/// What a host asked for, checked: the run's context, its chat, and the
/// location paragraph of its instructions.
struct run_start {
  run_context ctx;
  std::string chat_id;
  std::string instructions;
  bool new_chat = false; ///< the chat starts with this run ("chat.opened" first)
  /// A child run's parent snapshot, which ctx.parent points into.
  std::shared_ptr<const effective_policy> parent;
  /// A work item's run: what its start answer adds (work_ticket).
  json ticket = json::object();
};

/// The refusal of another run when the tenant has run.max_live_runs.
std::optional<caf::error> too_many_runs(const tenant_actor_state& st) {
  if (st.live_runs->size() + st.starting_runs < st.services.run.max_live_runs)
    return std::nullopt;
  return make_error(errc::out_of_range, "this tenant has "
                                          + std::to_string(st.services.run.max_live_runs)
                                          + " live runs (run.max_live_runs); finish or cancel "
                                            "one first");
}

/// Persists the run's snapshot (its stream's first event), audits the
/// composition, then spawns the run actor and answers the host.
void start_run(self_pointer self, run_start start, effective_policy snapshot,
               string_promise promise) {
  auto& st = self->state;
  // Checked again: a repair discovery may have let other runs start.
  if (auto full = too_many_runs(st)) {
    promise.deliver(std::move(*full));
    return;
  }
  // (the start holds its place under the bound until it is spawned or fails)
  ++st.starting_runs;
  auto settled = [self] { --self->state.starting_runs; };
  const auto& ctx = start.ctx;
  auto view =
    compose_view(snapshot, st.cfg.state, st.view_opts, kind_of(ctx.chan), &current_tool_names(st));
  auto view_json = view_to_json(view);
  auto snapshot_json = tenant_events::to_json(snapshot);
  append_request run_record;
  run_record.tenant = st.tenant_id;
  run_record.stream = "run." + ctx.run_id;
  run_record.events.push_back(
    {"run.started",
     json{{"run_id", ctx.run_id}, {"chat_id", start.chat_id}, {"snapshot", snapshot_json}}.dump()});
  run_record.expected_next = 1;
  json composed{{"run_id", ctx.run_id},
                {"agent_id", ctx.agent_id},
                {"channel", to_string(ctx.chan)},
                {"caller", to_string(snapshot.caller)},
                {"decisions", audit_decisions(snapshot)}};
  auto answer_doc = json{{"run_id", ctx.run_id},
                         {"chat_id", start.chat_id},
                         {"snapshot", snapshot_json},
                         {"view", view_json},
                         {"instructions", start.instructions}};
  answer_doc.update(start.ticket);
  auto answer = answer_doc.dump();
  event_record started{st.tenant_id,
                       run_record.stream,
                       1,
                       0,
                       run_record.events.front().type,
                       run_record.events.front().data};
  if (start.new_chat) {
    // The chat's stream opens with its first run: later runs may continue
    // it (the store serves a read after the appends queued before it).
    append_request opened;
    opened.tenant = st.tenant_id;
    opened.stream = "chat." + start.chat_id;
    opened.events.push_back(
      {"chat.opened",
       json{{"chat_id", start.chat_id}, {"run_id", ctx.run_id}, {"agent_id", ctx.agent_id}}
         .dump()});
    opened.expected_next = 1;
    self->request(st.store, store_timeout, append_atom::value, std::move(opened))
      .then(
        [](const append_result&) {},
        [](caf::error& err) { log::error("tenant", "a chat was not opened: " + message_of(err)); });
  }
  self->request(st.store, store_timeout, append_atom::value, std::move(run_record))
    .then(
      [self, promise, answer, composed = std::move(composed), run_id = ctx.run_id,
       chat_id = start.chat_id, caller_number = ctx.caller_number, snapshot = std::move(snapshot),
       view = std::move(view), view_json = std::move(view_json), settled,
       started = std::move(started)](const append_result&) mutable {
        started.time_us = wall_clock_us();
        self->send(self->state.desk, history_atom::value, std::move(started));
        remember_run(self, run_id, {snapshot, std::move(view_json)});
        // The run starts once its composition decisions are audited.
        audit(self, "policy.composed", std::move(composed),
              [self, promise, answer, run_id, chat_id, caller_number,
               snapshot = std::move(snapshot), view = std::move(view), settled](bool ok) mutable {
                settled();
                if (!ok) {
                  promise.deliver(
                    make_error(errc::storage_failure, "the run's decisions were not audited"));
                  return;
                }
                auto started =
                  spawn_run_actor(self, run_id, chat_id, caller_number, snapshot, std::move(view));
                if (!started)
                  promise.deliver(to_error(started));
                else
                  promise.deliver(answer);
              });
      },
      [promise, settled](caf::error& err) mutable {
        settled();
        promise.deliver(std::move(err));
      });
}

std::vector<std::string> caches_to_repair(tenant_actor_state& st, const effective_policy& snapshot);
template <class F>
void repair_caches(self_pointer self, std::vector<std::string> servers, F done);

/// Composes the run's snapshot (after one live discovery of servers whose
/// cache lacks a tool it would consider) and starts it.
void compose_and_start(self_pointer self, run_start start, string_promise promise) {
  auto& st = self->state;
  auto snapshot = compose_policy(current_policy_index(st), start.ctx, wall_clock_us());
  auto stale = caches_to_repair(st, snapshot);
  if (stale.empty()) {
    start_run(self, std::move(start), std::move(snapshot), std::move(promise));
    return;
  }
  // An allowlisted tool no discovery has described: one live discovery
  // of its server repairs the cache, then the run is composed afresh.
  repair_caches(self, std::move(stale), [self, start = std::move(start), promise]() mutable {
    auto again = compose_policy(current_policy_index(self->state), start.ctx, wall_clock_us());
    start_run(self, std::move(start), std::move(again), promise);
  });
}

/// What a work item's ticket adds to a run start's answer: the item, and
/// the parent chat's recent transcript for a `summary` child run ("" else).
json ticket_of(const work::item& it, const std::string& context_text) {
  return json{{"item", work::to_json(it)}, {"context_text", context_text}};
}

/// The answer to a host beginning a work item's run: the run's ticket, as a
/// run start answers, with the item.
std::string work_ticket(tenant_actor_state& st, const work::item& it,
                        const effective_policy& snapshot, const std::string& context_text) {
  auto view = compose_view(snapshot, st.cfg.state, st.view_opts, kind_of(snapshot.chan),
                           &current_tool_names(st));
  auto ticket = json{{"run_id", it.run_id},
                     {"chat_id", it.chat_id},
                     {"snapshot", tenant_events::to_json(snapshot)},
                     {"view", view_to_json(view)},
                     {"instructions", ""}};
  ticket.update(ticket_of(it, context_text));
  return ticket.dump();
}

/// Starts the run of a work item whose lease the host holds, under the
/// item's fixed run id; for an item delivered again, resumes it instead: its
/// live actor if it has one, else a new actor over its persisted snapshot.
void begin_work(self_pointer self, work::item it, std::string context_text,
                string_promise promise) {
  auto& st = self->state;
  if (st.live_runs->count(it.run_id) != 0) {
    with_snapshot(
      self, it.run_id, promise,
      [self, it, context_text](const effective_policy& snapshot, string_promise promise) {
        promise.deliver(work_ticket(self->state, it, snapshot, context_text));
      });
    return;
  }
  stream_query q{st.tenant_id, "run." + it.run_id, 1, 1};
  self->request(st.store, store_timeout, read_atom::value, q)
    .then(
      [self, it, context_text, promise](std::vector<event_record>& head) mutable {
        auto& st = self->state;
        if (!head.empty()) {
          // Delivered again: the run keeps the snapshot it started with.
          auto snapshot = snapshot_of(head.front());
          if (!snapshot) {
            promise.deliver(to_error(snapshot.error()));
            return;
          }
          auto view = compose_view(*snapshot, st.cfg.state, st.view_opts, kind_of(snapshot->chan),
                                   &current_tool_names(st));
          if (auto started =
                spawn_run_actor(self, it.run_id, it.chat_id, "", *snapshot, std::move(view));
              !started) {
            promise.deliver(to_error(started));
            return;
          }
          promise.deliver(work_ticket(st, it, *snapshot, context_text));
          return;
        }
        bool agent_known =
          std::any_of(st.cfg.state.agents.begin(), st.cfg.state.agents.end(),
                      [&](const agent_record& a) { return a.agent_id == it.agent_id; });
        if (!agent_known) {
          promise.deliver(make_error(errc::not_found, "the item's agent no longer exists"));
          return;
        }
        run_start start;
        start.ctx.run_id = it.run_id;
        start.ctx.agent_id = it.agent_id;
        start.ctx.chan = it.k == work::kind::child_run ? channel::subagent : channel::scheduled_run;
        start.chat_id = it.chat_id;
        start.ticket = ticket_of(it, context_text);
        if (it.k != work::kind::child_run) {
          compose_and_start(self, std::move(start), promise);
          return;
        }
        // A child run: the parent's snapshot bounds it.
        with_snapshot(self, it.parent_run_id, promise,
                      [self, start = std::move(start)](const effective_policy& parent,
                                                       string_promise inner) mutable {
                        start.parent = std::make_shared<const effective_policy>(parent);
                        start.ctx.parent = start.parent.get();
                        compose_and_start(self, std::move(start), inner);
                      });
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

/// Begins a work item's run (begin_work): a `summary` child run first gets
/// its parent chat's recent transcript (actors/tools/delegation.hpp), read
/// from the chat's newest events.
void begin_with_context(self_pointer self, work::item it, string_promise promise) {
  auto& st = self->state;
  if (it.k != work::kind::child_run || it.context != "summary") {
    begin_work(self, std::move(it), "", promise);
    return;
  }
  stream_query q{st.tenant_id, work::stream_of(it.chat_id), stream_query::newest,
                 delegation::summary_events};
  self->request(st.store, store_timeout, read_atom::value, q)
    .then(
      [self, it, promise](std::vector<event_record>& events) mutable {
        auto text =
          delegation::summary_text(events, self->state.services.tools.delegation_summary_bytes);
        begin_work(self, std::move(it), std::move(text), promise);
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
}

/// The owner's subagent model allowlist (delegate_agent_task): "get", or
/// "set" replacing it whole (a refusal is audited and stores nothing).
caf::result<std::string> subagent_models_op(self_pointer self, const std::string& op,
                                            const std::string& body) {
  if (op == "subagent_models.get")
    return tenant_events::to_json(self->state.cfg.state.subagent_models).dump();
  auto events = tenant_logic::set_subagent_models(json::parse(body, nullptr, false));
  if (!events)
    return refuse(self, events.error(), {{"op", "set_subagent_models"}});
  return commit(self, std::move(*events), [self] {
    return tenant_events::to_json(self->state.cfg.state.subagent_models).dump();
  });
}

/// An agent host's work operation (tenant.hpp): "begin" checks the lease
/// with the queue, then starts or resumes the run; "complete" feeds the
/// recorded answer to the history and ends the run; the rest is the queue's.
caf::result<std::string> work_op(self_pointer self, const std::string& op,
                                 const std::string& body) {
  auto& st = self->state;
  if (op == "lease" || op == "list")
    return self->delegate(st.queue, work_atom::value, op, body);
  // The owner's schedules (a schedule is made only by the tool, through the desk).
  if (op == "schedules.list" || op == "schedules.pause" || op == "schedules.resume"
      || op == "schedules.delete")
    return self->delegate(st.schedules, schedule_atom::value, op.substr(10), body);
  if (op == "subagent_models.get" || op == "subagent_models.set")
    return subagent_models_op(self, op, body);
  if (op != "begin" && op != "heartbeat" && op != "complete" && op != "fail")
    return make_error(errc::not_found, "unknown work operation");
  auto promise = self->make_response_promise<std::string>();
  // A refusal of the queue (a lease lost, an item of no such id for this
  // tenant, an item already settled, a bad answer) is audited.
  auto doc = json::parse(body, nullptr, false);
  auto item_id = doc.is_object() ? doc.value("item_id", std::string{}) : std::string{};
  if (!work::valid_item_id(item_id))
    item_id = "(malformed)";
  auto refused = [self, promise, op, item_id](caf::error& err) mutable {
    audit(self, "work.refused",
          {{"op", op}, {"item_id", item_id}, {"code", to_string(code_of(err))}},
          [promise, err](bool) mutable { promise.deliver(err); });
  };
  auto& queue = st.queue;
  if (op == "heartbeat" || op == "fail") {
    self->request(queue, store_timeout, work_atom::value, op, body)
      .then([promise](const std::string& answer) mutable { promise.deliver(answer); }, refused);
    return promise;
  }
  if (op == "begin") {
    self->request(queue, store_timeout, work_atom::value, std::string{"check"}, body)
      .then(
        [self, promise](const std::string& held) mutable {
          auto it = work::item_from_json(json::parse(held, nullptr, false));
          if (!it) {
            promise.deliver(to_error(it.error()));
            return;
          }
          begin_with_context(self, std::move(*it), promise);
        },
        refused);
    return promise;
  }
  self->request(queue, store_timeout, work_atom::value, op, body)
    .then(
      [self, promise](const std::string& done) mutable {
        auto doc = json::parse(done, nullptr, false);
        auto& st = self->state;
        const auto& turn = doc["turn_event"];
        event_record stored{
          st.tenant_id,    turn.value("stream", ""), turn.value("seq", uint64_t{0}),
          wall_clock_us(), turn.value("type", ""),   turn.value("data", "")};
        self->send(st.desk, history_atom::value, std::move(stored));
        // The run's work is done: it ends normally.
        if (auto run = live(self, doc.value("run_id", "")))
          caf::anon_send(*run, close_atom::value);
        doc.erase("turn_event");
        promise.deliver(doc.dump());
      },
      refused);
  return promise;
}

/// Servers of the snapshot to discover before the run is composed: those
/// whose connection announced a tools change (the mark is cleared), and
/// those whose cache lacks the definition of a tool the snapshot would
/// consider (allowlisted on a usable server: reason not_discovered) and
/// whose cache version no run start has tried to repair yet. Marks those
/// tried: a server that really lacks the tool costs one discovery per cache
/// version, not one per run.
std::vector<std::string> caches_to_repair(tenant_actor_state& st,
                                          const effective_policy& snapshot) {
  std::vector<std::string> out;
  for (const auto& decision : snapshot.decisions) {
    // Most decisions concern neither: no id is copied for them.
    if (st.stale_caches.empty() && decision.why != reason::not_discovered)
      continue;
    std::string server_id{decision.server_id()};
    if (st.stale_caches.erase(server_id) != 0) {
      if (std::find(out.begin(), out.end(), server_id) == out.end())
        out.push_back(std::move(server_id));
      continue;
    }
    if (decision.why != reason::not_discovered)
      continue;
    auto rec = st.cfg.state.servers.find(server_id);
    if (rec == st.cfg.state.servers.end())
      continue;
    if (st.repairs_tried.insert(server_id + "@" + rec->second.cache_version).second
        && std::find(out.begin(), out.end(), server_id) == out.end())
      out.push_back(std::move(server_id));
  }
  return out;
}

/// One live discovery per server in `servers` (through the tenant's shared
/// connection), each folded into its record's cache when it succeeds; then
/// `next()`, whatever the discoveries gave (a failed one leaves the cache,
/// and the tool stays out of the run).
template <class F>
void repair_caches(self_pointer self, std::vector<std::string> servers, F next) {
  auto pending = std::make_shared<std::size_t>(servers.size());
  auto done = std::make_shared<F>(std::move(next));
  auto one_done = [pending, done] {
    if (--*pending == 0)
      (*done)();
  };
  for (const auto& server_id : servers) {
    auto conn = connection_for(self, server_id);
    if (!conn) {
      one_done();
      continue;
    }
    self
      ->request(*conn, std::chrono::milliseconds{connection_test_ms}, list_atom::value,
                tool_atom::value)
      .then(
        [self, server_id, one_done](std::string& answer) {
          auto& st = self->state;
          auto rec = st.cfg.state.servers.find(server_id);
          auto found = read_discovery(answer);
          if (rec == st.cfg.state.servers.end() || !found) {
            one_done();
            return;
          }
          auto repaired =
            server_setup::with_discovery(rec->second, std::move(found->tools),
                                         st.services.mcp.max_cached_tools, wall_clock_us());
          // The repaired version counts as tried: it is what discovery said.
          st.repairs_tried.insert(server_id + "@" + repaired.cache_version);
          append_serially(self, {tenant_events::server_upserted(repaired)},
                          [one_done](const caf::error& err) {
                            if (!err)
                              log::info("tenant", "a run start repaired a server's tool cache");
                            one_done();
                          });
        },
        [one_done](caf::error&) { one_done(); });
  }
}

/// A chat id from a host: "" (a new chat) or 1-64 of [a-z0-9_-].
bool valid_chat_id(const std::string& id) {
  return id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char ch) {
           return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
         });
}

/// Config events one read of the history takes (a record may be large).
constexpr uint32_t history_page = 256;

/// Reads the tenant's config stream from `from`, page by page, until an
/// event holds an Exa record or the stream ends; then `done(found)`. Other
/// messages wait meanwhile (await); a failed read ends the actor.
template <class F>
void find_exa_in_history(self_pointer self, uint64_t from, F done) {
  stream_query q{self->state.tenant_id, tenant_events::stream, from, history_page};
  self->request(self->state.store, store_timeout, read_atom::value, q)
    .await(
      [self, done](std::vector<event_record>& events) mutable {
        if (tenant_logic::holds_exa_record(events))
          done(true);
        else if (events.size() < history_page)
          done(false);
        else
          find_exa_in_history(self, events.back().seq + 1, std::move(done));
      },
      [self](caf::error& err) {
        log::error("tenant", "cannot read the tenant's config history: " + message_of(err));
        self->quit(std::move(err));
      });
}

/// Curated example skills for the owner (voxosctl skills load): each checked
/// against this tenant's servers (example_install.hpp), then the installable
/// ones written by the desk, never over an existing slug. Changes no server,
/// allowlist, grant or credential.
caf::result<std::string> install_examples(self_pointer self, const std::string& body) {
  auto request = parse_install_request(body);
  if (!request)
    return to_error(request.error());
  auto promise = self->make_response_promise<std::string>();
  auto& desk = self->state.desk;
  self
    ->request(desk, store_timeout, knowledge_atom::value, std::string{"skills.slugs"},
              std::string{"{}"})
    .then(
      [self, promise, request = std::move(*request)](const std::string& slugs_text) mutable {
        std::set<std::string> existing;
        auto slugs = json::parse(slugs_text);
        for (const auto& slug : slugs["slugs"])
          existing.insert(slug.get<std::string>());
        auto verdicts =
          plan_example_install(self->state.cfg.state, request.skills, existing, request.dry_run);
        auto room = slugs.value("room", std::size_t{0});
        auto writing = static_cast<std::size_t>(
          std::count_if(verdicts.begin(), verdicts.end(), [](const example_verdict& v) {
            return v.outcome == example_outcome::installed
                   || v.outcome == example_outcome::would_install;
          }));
        if (writing > room) {
          promise.deliver(make_error(errc::out_of_range,
                                     "installing these skills would pass the account's bound of "
                                     "skills (tools.skills); nothing was installed"));
          return;
        }
        json writes = json::array();
        for (std::size_t idx = 0; idx < verdicts.size(); ++idx)
          if (verdicts[idx].outcome == example_outcome::installed)
            writes.push_back({{"slug", request.skills[idx].slug},
                              {"name", request.skills[idx].name},
                              {"description", request.skills[idx].description},
                              {"instructions", request.skills[idx].body}});
        if (writes.empty()) {
          promise.deliver(install_response_json(verdicts));
          return;
        }
        self
          ->request(self->state.desk, store_timeout, knowledge_atom::value,
                    std::string{"skills.install"}, json{{"skills", writes}}.dump())
          .then(
            [promise, verdicts](const std::string& written) mutable {
              // A slug taken meanwhile (a candidate confirmed) stays as it is.
              auto rows = json::parse(written);
              for (const auto& row : rows["skills"])
                if (row["outcome"] != "installed")
                  for (auto& v : verdicts)
                    if (v.slug == row["slug"])
                      v.outcome = example_outcome::exists;
              promise.deliver(install_response_json(verdicts));
            },
            [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

/// Appends the pending migrations durably, then applies them in memory.
/// Other messages wait meanwhile (await); a failed append ends the actor.
void apply_migrations(self_pointer self, bool exa_in_history) {
  auto migrations =
    tenant_logic::pending_migrations(self->state.cfg, make_id, wall_clock_us(), exa_in_history);
  if (migrations.empty())
    return;
  self
    ->request(self->state.store, store_timeout, append_atom::value,
              config_append(self->state.tenant_id, migrations))
    .await([self, migrations](const append_result&) { apply_durable(self, migrations); },
           [self](caf::error& err) {
             log::error("tenant", "cannot apply migrations: " + message_of(err));
             self->quit(std::move(err));
           });
}

tenant_actor::behavior_type tenant_behavior(self_pointer self, std::string tenant_id,
                                            event_store_actor store, node_metrics* metrics,
                                            tenant_services services) {
  auto& st = self->state;
  st.tenant_id = std::move(tenant_id);
  st.store = std::move(store);
  st.cfg.state.tenant_id = st.tenant_id;
  st.counters = &metrics->actor("tenant");
  st.running.emplace(*st.counters);
  st.services = std::move(services);
  st.metrics = metrics;
  st.connections = std::make_shared<std::map<std::string, mcp_connection_actor>>();
  st.live_runs = std::make_shared<live_run_map>();
  // The tenant's runs and MCP sessions end with it. At a shutdown the runs
  // stop with the node. After a failure the directory starts the tenant
  // afresh on its next request, and that instance knows none of them: each
  // run is cancelled as its host would cancel it (its round settled, its
  // wave's requests cancelled, "run.cancelled" recorded), then ends.
  self->attach_functor([conns = st.connections, runs = st.live_runs](const caf::error& reason) {
    bool shutdown = !reason || reason == caf::exit_reason::user_shutdown;
    for (auto& [id, run] : *runs)
      if (shutdown)
        caf::anon_send_exit(run.actor, caf::exit_reason::user_shutdown);
      else
        caf::anon_send(run.actor, cancel_atom::value);
    for (auto& [id, conn] : *conns)
      caf::anon_send_exit(conn, caf::exit_reason::kill);
  });
  // A run that ends (finished, cancelled, failed) is no longer live.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    auto found = st.run_of_actor.find(msg.source.id());
    if (found == st.run_of_actor.end())
      return;
    st.live_runs->erase(found->second);
    st.run_of_actor.erase(found);
  });

  // Load, then migrate, before serving anything (await holds other messages).
  self
    ->request(st.store, store_timeout, scan_atom::value, state_atom::value,
              tenant_events::state_prefix(st.tenant_id), max_config_entries)
    .await(
      [self](std::vector<state_entry>& entries) {
        std::vector<std::pair<std::string, std::string>> kv;
        kv.reserve(entries.size());
        for (auto& e : entries)
          kv.emplace_back(std::move(e.key), std::move(e.value));
        auto loaded = tenant_events::load(self->state.tenant_id, kv);
        if (!loaded) {
          log::error("tenant", "cannot load tenant state: " + loaded.error().message());
          self->quit(to_error(loaded.error()));
          return;
        }
        self->state.cfg = std::move(*loaded);
        self->state.policy.reset();
        self->state.tool_names.reset();
        auto queue_opts = queue_options(self->state.services.work);
        queue_opts.metrics = self->state.metrics;
        self->state.queue =
          spawn_work_queue(self, self->state.tenant_id, self->state.store, queue_opts);
        self->state.schedules =
          spawn_schedule_keeper(self, self->state.tenant_id, self->state.store, self->state.queue,
                                keeper_options(self->state.services.work));
        auto desk_opts = desk_options(self->state.services, self->state.tenant_id);
        desk_opts.schedules = self->state.schedules;
        self->state.desk =
          spawn_tool_desk(self, self->state.tenant_id, self->state.store, self->state.queue,
                          desk_data(self->state.cfg.state), std::move(desk_opts));
        // The Exa migration, still to come, respects an Exa record the
        // owner deleted: only the config stream remembers one.
        if (tenant_logic::exa_migration_pending(self->state.cfg))
          find_exa_in_history(
            self, 1, [self](bool exa_in_history) { apply_migrations(self, exa_in_history); });
        else
          apply_migrations(self, false);
      },
      [self](caf::error& err) {
        log::error("tenant", "cannot read tenant state: " + message_of(err));
        self->quit(std::move(err));
      });

  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](list_atom, agent_atom) -> caf::result<std::string> {
      note();
      json out = json::array();
      for (const auto& a : self->state.cfg.state.agents)
        out.push_back(tenant_events::to_json(a));
      return out.dump();
    },
    [self, note](create_atom, agent_atom, const std::string& name) -> caf::result<std::string> {
      note();
      auto events = tenant_logic::create_agent(self->state.cfg, name, make_id);
      if (!events)
        return refuse(self, events.error(), {{"op", "create_agent"}});
      auto agent = json::parse(events->front().data)["agent"];
      return commit(self, std::move(*events), [agent] { return agent.dump(); });
    },
    [self, note](list_atom, grant_atom, const std::string& agent_id) -> caf::result<std::string> {
      note();
      auto page = tenant_logic::grants_page(self->state.cfg, agent_id);
      if (!page)
        return to_error(page.error());
      return page->dump();
    },
    [self, note](grant_atom, const std::string& agent_id, const std::string& server_id,
                 const std::string& tool, const std::string& decision) -> caf::result<std::string> {
      note();
      auto events = tenant_logic::set_grant(self->state.cfg, agent_id, server_id, tool, decision);
      if (!events)
        return refuse(
          self, events.error(),
          {{"op", "set_grant"}, {"agent_id", agent_id}, {"server_id", server_id}, {"tool", tool}});
      return commit(self, std::move(*events), [self, agent_id, server_id, tool] {
        auto d = check_grant(self->state.cfg.state, agent_id, server_id, tool);
        std::string decision = "default";
        for (const auto& g : self->state.cfg.state.grants)
          if (g.agent_id == agent_id && g.server_id == server_id && g.tool == tool)
            decision = g.decision == grant_decision::allow ? "allow" : "deny";
        return json{{"agent_id", agent_id}, {"server_id", server_id}, {"tool", tool},
                    {"decision", decision}, {"allowed", d.allowed()}, {"reason", to_string(d.why)}}
          .dump();
      });
    },
    [self, note](route_atom, const std::string& agent_id, const std::string& action,
                 const std::string& mode, const std::string& server_id,
                 const std::string& tool) -> caf::result<std::string> {
      note();
      auto events =
        tenant_logic::set_route(self->state.cfg, agent_id, action, mode, server_id, tool);
      if (!events)
        return refuse(
          self, events.error(),
          {{"op", "set_route"}, {"agent_id", agent_id}, {"server_id", server_id}, {"tool", tool}});
      auto route = json::parse(events->front().data)["route"];
      return commit(self, std::move(*events), [route] { return route.dump(); });
    },
    [self, note](list_atom, server_atom) -> caf::result<std::string> {
      note();
      json out = json::array();
      for (const auto& [id, s] : self->state.cfg.state.servers)
        out.push_back(tenant_events::to_json(s, false));
      return out.dump();
    },
    [self, note](server_atom, const std::string& server_id,
                 const std::string& patch_text) -> caf::result<std::string> {
      note();
      auto doc = json::parse(patch_text, nullptr, false);
      if (doc.is_discarded() || !doc.is_object())
        return make_error(errc::bad_json, "server patch: expected one JSON object");
      tenant_logic::server_patch patch;
      for (auto& [key, value] : doc.items()) {
        if (key == "enabled" && value.is_boolean())
          patch.enabled = value.get<bool>();
        else if (key == "trusted" && value.is_boolean())
          patch.trusted = value.get<bool>();
        else if (key == "allowed_tools" && value.is_array()) {
          std::vector<std::string> tools;
          for (auto& t : value) {
            if (!t.is_string())
              return make_error(errc::wrong_type, "allowed_tools: expected strings");
            tools.push_back(t.get<std::string>());
          }
          patch.allowed_tools = std::move(tools);
        } else if (key == "enabled" || key == "trusted" || key == "allowed_tools")
          return make_error(errc::wrong_type, "field '" + key + "': wrong type");
        else
          return make_error(errc::unknown_field, "unknown field in server patch");
      }
      auto events = tenant_logic::patch_server(self->state.cfg, server_id, patch);
      if (!events)
        return refuse(self, events.error(), {{"op", "patch_server"}, {"server_id", server_id}});
      return commit(self, std::move(*events), [self, server_id] {
        return tenant_events::to_json(self->state.cfg.state.servers.at(server_id), false).dump();
      });
    },
    [self, note](create_atom, server_atom, const std::string& text) -> caf::result<std::string> {
      note();
      return create_server(self, text);
    },
    [self, note](connect_atom, server_atom,
                 const std::string& server_id) -> caf::result<std::string> {
      note();
      return test_server(self, server_id);
    },
    [self, note](revoke_atom, server_atom,
                 const std::string& server_id) -> caf::result<std::string> {
      note();
      if (self->state.cfg.state.servers.count(server_id) == 0)
        return refuse(self, status::error(errc::not_found, "no such server for this tenant"),
                      {{"op", "delete_server"}, {"server_id", server_id}});
      drop_connection(self, server_id);
      return delete_server(self, server_id);
    },
    [self, note](phone_atom, const std::string& text) -> caf::result<std::string> {
      note();
      auto doc = json::parse(text, nullptr, false);
      if (doc.is_discarded())
        return make_error(errc::bad_json, "phone: expected one JSON object");
      auto phone = tenant_events::phone_from_json(doc);
      if (!phone)
        return to_error(phone.error());
      auto events = tenant_logic::upsert_phone(self->state.cfg, *phone);
      if (!events)
        return refuse(self, events.error(), {{"op", "upsert_phone"}});
      auto answer = tenant_events::to_json(*phone).dump();
      return commit(self, std::move(*events), [answer] { return answer; });
    },
    [self, note](contact_atom, const std::string& text) -> caf::result<std::string> {
      note();
      auto doc = json::parse(text, nullptr, false);
      if (doc.is_discarded())
        return make_error(errc::bad_json, "contact: expected one JSON object");
      auto contact = tenant_events::contact_from_json(doc);
      if (!contact)
        return to_error(contact.error());
      auto events = tenant_logic::upsert_contact(self->state.cfg, *contact);
      if (!events)
        return refuse(self, events.error(), {{"op", "upsert_contact"}});
      auto answer = tenant_events::to_json(*contact).dump();
      return commit(self, std::move(*events), [answer] { return answer; });
    },
    [self, note](list_atom, phone_atom) -> caf::result<std::string> {
      note();
      json out = json::array();
      for (const auto& phone : self->state.cfg.state.phones)
        out.push_back(tenant_events::to_json(phone));
      return json{{"phones", std::move(out)}}.dump();
    },
    [self, note](list_atom, contact_atom) -> caf::result<std::string> {
      note();
      json out = json::array();
      for (const auto& contact : self->state.cfg.state.contacts)
        out.push_back(tenant_events::to_json(contact));
      return json{{"contacts", std::move(out)}}.dump();
    },
    [self, note](revoke_atom, phone_atom, const std::string& id) -> caf::result<std::string> {
      note();
      return delete_entity(self, tenant_logic::delete_phone(self->state.cfg, id),
                           {{"op", "delete_phone"}, {"integration_id", id}}, id);
    },
    [self, note](revoke_atom, contact_atom, const std::string& id) -> caf::result<std::string> {
      note();
      return delete_entity(self, tenant_logic::delete_contact(self->state.cfg, id),
                           {{"op", "delete_contact"}, {"contact_id", id}}, id);
    },
    [self, note](profile_atom, const std::string& text) -> caf::result<std::string> {
      note();
      auto doc = json::parse(text, nullptr, false);
      if (doc.is_discarded())
        return make_error(errc::bad_json, "profile: expected one JSON object");
      auto profile = tenant_events::profile_from_json(doc);
      if (!profile)
        return to_error(profile.error());
      auto events = tenant_logic::upsert_profile(self->state.cfg, *profile);
      if (!events)
        return refuse(self, events.error(),
                      {{"op", "upsert_profile"}, {"server_id", profile->server_id}});
      auto answer = tenant_events::to_json(*profile).dump();
      return commit(self, std::move(*events), [answer] { return answer; });
    },
    [self, note](create_atom, run_atom, const std::string& agent_id, const std::string& chan,
                 const std::string& caller, const std::string& requested_chat,
                 const std::string& location) -> caf::result<std::string> {
      note();
      auto& st = self->state;
      auto c = parse_channel(chan);
      if (!c)
        return make_error(errc::out_of_range, "channel: not a known channel");
      if (*c == channel::subagent)
        return make_error(errc::out_of_range,
                          "channel: subagent runs are started by delegation, not by hosts");
      if (!valid_chat_id(requested_chat))
        return make_error(errc::out_of_range, "chat_id: at most 64 of a-z, 0-9, '_' and '-'");
      // The location paragraph of the instructions: foreground text and
      // owner voice only, when fresh; never part of any tool's arguments.
      std::string instructions;
      if (!location.empty()) {
        if (location.size() > 1024)
          return make_error(errc::out_of_range, "location: at most 1024 bytes");
        // nlohmann's reader ends its input at a NUL, ignoring what follows.
        if (location.find('\0') != std::string::npos)
          return make_error(errc::bad_json, "location: expected one JSON object");
        auto where = parse_location(json::parse(location, nullptr, false));
        if (!where)
          return to_error(where.error());
        instructions =
          location_instructions(*where, *c, wall_clock_us(),
                                int64_t{st.services.run.location_max_age_s} * 1'000'000)
            .value_or("");
      }
      if (auto full = too_many_runs(st))
        return std::move(*full);
      bool agent_known = std::any_of(st.cfg.state.agents.begin(), st.cfg.state.agents.end(),
                                     [&](const agent_record& a) { return a.agent_id == agent_id; });
      if (!agent_known)
        return refuse(self, status::error(errc::not_found, "no such agent for this tenant"),
                      {{"op", "start_run"}});
      run_context ctx;
      ctx.run_id = make_id("r_");
      ctx.agent_id = agent_id;
      ctx.chan = *c;
      ctx.caller_number = caller;
      bool new_chat = requested_chat.empty();
      run_start start{std::move(ctx), new_chat ? make_id("c_") : requested_chat,
                      std::move(instructions), new_chat};
      auto promise = self->make_response_promise<std::string>();
      if (new_chat) {
        compose_and_start(self, std::move(start), promise);
        return promise;
      }
      // A chat to continue must be one of this tenant's: its stream opens
      // with the chat's first run.
      stream_query q{st.tenant_id, "chat." + requested_chat, 1, 1};
      self->request(st.store, store_timeout, read_atom::value, q)
        .then(
          [self, start = std::move(start), promise](std::vector<event_record>& head) mutable {
            if (head.empty()) {
              audit(self, "config.refused",
                    {{"op", "start_run"}, {"code", "not_found"}, {"reason", "unknown chat"}},
                    [promise](bool) mutable {
                      promise.deliver(make_error(errc::not_found, "no such chat for this tenant"));
                    });
              return;
            }
            compose_and_start(self, std::move(start), promise);
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](sign_in_atom, server_atom, const std::string& server_id,
                 const std::string& body) -> caf::result<std::string> {
      note();
      return start_sign_in(self, server_id, body);
    },
    [self, note](callback_atom, const std::string& server_id, const std::string& flow,
                 const std::string& query) -> caf::result<std::string> {
      note();
      return finish_sign_in(self, server_id, flow, query);
    },
    [self, note](broker_atom, const std::string& server_id) -> caf::result<std::string> {
      note();
      return broker_token(self, server_id);
    },
    [self, note](client_atom, server_atom, const std::string& server_id,
                 const std::string& body) -> caf::result<std::string> {
      note();
      return set_machine_client(self, server_id, body);
    },
    [self, note](tokens_atom, const std::string& server_id, uint64_t epoch,
                 const std::string& client_text, const std::string& tokens_text) {
      note();
      store_tokens(self, server_id, epoch, client_text, tokens_text);
    },
    [self, note](needs_auth_atom, const std::string& server_id, uint64_t epoch) {
      note();
      mark_needs_auth(self, server_id, epoch);
    },
    [self, note](changed_atom, tool_atom, const std::string& server_id) {
      note();
      auto& st = self->state;
      auto conn = st.connections->find(server_id);
      if (conn == st.connections->end() || conn->second.address() != self->current_sender())
        return;
      st.stale_caches.insert(server_id);
      log::info("tenant", "a server announced a change of its tools: the next run rediscovers it");
    },
    [self, note](tool_atom, const std::string& run_id,
                 std::vector<tool_call>& calls) -> caf::result<std::vector<tool_output>> {
      note();
      auto run = live(self, run_id);
      if (!run)
        return to_error(run.error());
      return self->delegate(*run, tool_atom::value, std::move(calls));
    },
    [self, note](cancel_atom, run_atom, const std::string& run_id) -> caf::result<std::string> {
      note();
      // Its children not yet finished go with it, whether it is live or
      // already ended.
      auto promise = self->make_response_promise<std::string>();
      self->request(self->state.queue, store_timeout, cancel_atom::value, run_id)
        .then(
          [self, promise, run_id](const std::vector<std::string>& children) mutable {
            for (const auto& child : children)
              if (auto run = live(self, child))
                caf::anon_send(*run, cancel_atom::value);
            auto run = live(self, run_id);
            if (run) {
              promise.delegate(*run, cancel_atom::value);
              return;
            }
            if (children.empty()) {
              promise.deliver(to_error(run.error()));
              return;
            }
            promise.deliver(
              json{{"run_id", run_id}, {"state", "ended"}, {"cancelled_children", children}}
                .dump());
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](close_atom, run_atom, const std::string& run_id) -> caf::result<bool> {
      note();
      auto run = live(self, run_id);
      if (!run)
        return to_error(run.error());
      return self->delegate(*run, close_atom::value);
    },
    [self, note](listen_atom, run_atom, const std::string& run_id,
                 caf::actor& listener) -> caf::result<bool> {
      note();
      auto run = live(self, run_id);
      if (!run)
        return to_error(run.error());
      self->send(*run, listen_atom::value, std::move(listener));
      return true;
    },
    [self, note](health_atom, run_atom, const std::string& run_id) -> caf::result<std::string> {
      note();
      auto run = live(self, run_id);
      if (!run)
        return to_error(run.error());
      return self->delegate(*run, health_atom::value);
    },
    [self, note](turn_atom, const std::string& run_id, const std::string& user,
                 const std::string& assistant) -> caf::result<std::string> {
      note();
      auto& st = self->state;
      auto found = st.live_runs->find(run_id);
      if (found == st.live_runs->end())
        return make_error(errc::not_found, "no live run with this id for this tenant");
      if (work::is_work_run(run_id))
        return make_error(errc::conflict, "a queued run's answer is recorded by completing its "
                                          "work item, not by a turn report");
      if (user.size() > max_turn_text_bytes || assistant.size() > max_turn_text_bytes)
        return make_error(errc::out_of_range, "turn: user and assistant text at most 64 KiB each");
      auto chat_id = found->second.chat_id;
      auto run = found->second.actor;
      auto turn = ++found->second.turns;
      append_request req;
      req.tenant = st.tenant_id;
      req.stream = "chat." + chat_id;
      req.events.push_back(
        {"turn.reported",
         json{{"run_id", run_id}, {"turn", turn}, {"user", user}, {"assistant", assistant}}
           .dump()});
      auto promise = self->make_response_promise<std::string>();
      event_record stored{st.tenant_id,           req.stream, 0, 0, req.events.front().type,
                          req.events.front().data};
      self->request(st.store, store_timeout, append_atom::value, std::move(req))
        .then(
          [self, promise, chat_id, turn, run, assistant,
           stored = std::move(stored)](const append_result& appended) mutable {
            stored.seq = appended.first_seq;
            stored.time_us = wall_clock_us();
            self->send(self->state.desk, history_atom::value, std::move(stored));
            // The answer's place cards come from the run's memory; the
            // transcript keeps the text only.
            self->request(run, store_timeout, turn_atom::value, assistant)
              .then(
                [promise, chat_id, turn](const std::string& cards) mutable {
                  promise.deliver(json{{"chat_id", chat_id},
                                       {"turn", turn},
                                       {"place_cards", json::parse(cards, nullptr, false)}}
                                    .dump());
                },
                [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](work_atom, const std::string& op,
                 const std::string& body) -> caf::result<std::string> {
      note();
      return work_op(self, op, body);
    },
    [self, note](work_atom, caf::actor& worker, uint32_t capacity) -> caf::result<bool> {
      note();
      return self->delegate(self->state.queue, work_atom::value, std::move(worker), capacity);
    },
    [self, note](knowledge_atom, const std::string& op,
                 const std::string& body) -> caf::result<std::string> {
      note();
      if (op == "skills.examples")
        return install_examples(self, body);
      // (a call through the node's MCP servers comes with its grant check
      // and audit only: see the tool_atom, server_atom handler)
      if (op == "mcp.call")
        return make_error(errc::forbidden, "not an owner operation");
      return self->delegate(self->state.desk, knowledge_atom::value, op, body);
    },
    [self, note](tool_atom, server_atom, const std::string& server, const std::string& agent_id,
                 const std::string& tool,
                 const std::string& arguments) -> caf::result<std::string> {
      note();
      auto& st = self->state;
      const auto& agents = st.cfg.state.agents;
      if (std::none_of(agents.begin(), agents.end(),
                       [&](const agent_record& a) { return a.agent_id == agent_id; }))
        return make_error(errc::not_found, "no agent with this id for this tenant");
      auto d = check_grant(st.cfg.state, agent_id, "", tool);
      auto promise = self->make_response_promise<std::string>();
      json body{{"server", server},
                {"agent_id", agent_id},
                {"tool", tool},
                {"arguments", json::parse(arguments, nullptr, false)}};
      // No call without its audit record: fail closed.
      audit(self, "call.decided",
            {{"run_id", ""},
             {"agent_id", agent_id},
             {"channel", "mcp:" + server},
             {"tool", tool},
             {"server_id", ""},
             {"reason", to_string(d.why)}},
            [self, promise, allowed = d.allowed(), body = std::move(body)](bool ok) mutable {
              if (!ok) {
                promise.deliver(make_error(errc::storage_failure, "the decision was not audited"));
                return;
              }
              if (!allowed) {
                promise.deliver(make_error(errc::forbidden, "this agent is not granted the tool"));
                return;
              }
              self
                ->request(self->state.desk, store_timeout, knowledge_atom::value,
                          std::string{"mcp.call"}, body.dump())
                .then(
                  [promise](std::string& result) mutable { promise.deliver(std::move(result)); },
                  [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
            });
      return promise;
    },
    [self, note](list_atom, tool_atom, const std::string& wanted) -> caf::result<std::string> {
      note();
      const auto& state = self->state.cfg.state;
      auto agent =
        std::find_if(state.agents.begin(), state.agents.end(), [&](const agent_record& a) {
          return wanted.empty() ? a.is_default : a.agent_id == wanted;
        });
      if (agent == state.agents.end())
        return make_error(errc::not_found, "no agent with this id for this tenant");
      json allowed = json::array();
      for (const auto& tool : internal_tools())
        if (check_grant(state, agent->agent_id, "", tool.name).allowed())
          allowed.push_back(tool.name);
      return json{{"agent_id", agent->agent_id}, {"allowed", std::move(allowed)}}.dump();
    },
    [self, note](run_atom, const std::string& run_id) -> caf::result<std::string> {
      note();
      if (auto found = self->state.runs.find(run_id); found != self->state.runs.end())
        return json{{"run_id", run_id},
                    {"snapshot", tenant_events::to_json(found->second.snapshot)},
                    {"view", found->second.view}}
          .dump();
      // Older runs: the persisted snapshot, with a view recomposed from it.
      return with_snapshot(
        self, run_id, [self, run_id](const effective_policy& snapshot, string_promise& promise) {
          auto view = compose_view(snapshot, self->state.cfg.state, self->state.view_opts,
                                   kind_of(snapshot.chan), &current_tool_names(self->state));
          promise.deliver(json{{"run_id", run_id},
                               {"snapshot", tenant_events::to_json(snapshot)},
                               {"view", view_to_json(view)}}
                            .dump());
        });
    },
    [self, note](check_atom, const std::string& run_id, const std::string& server_id,
                 const std::string& tool) -> caf::result<std::string> {
      note();
      return with_snapshot(
        self, run_id,
        [self, run_id, server_id, tool](const effective_policy& snapshot, string_promise& promise) {
          auto d = check_call(snapshot, server_id, tool);
          auto answer = json{{"allowed", d.allowed()}, {"reason", to_string(d.why)}}.dump();
          // No decision without its audit record: fail closed.
          audit(self, "call.decided",
                {{"run_id", run_id},
                 {"agent_id", snapshot.agent_id},
                 {"channel", to_string(snapshot.chan)},
                 {"tool", tool},
                 {"server_id", server_id},
                 {"reason", to_string(d.why)}},
                [promise, answer](bool ok) mutable {
                  if (ok)
                    promise.deliver(answer);
                  else
                    promise.deliver(
                      make_error(errc::storage_failure, "the decision was not audited"));
                });
        });
    },
    [self, note](list_atom, audit_atom, uint32_t limit,
                 const std::string& filter_text) -> caf::result<std::string> {
      note();
      auto promise = self->make_response_promise<std::string>();
      auto filter = tenant_queries::audit_filter_of(filter_text);
      // Audit events can be large (a run's composition holds a decision per
      // tool): read only the newest few, enough for `limit` rows in
      // practice (all of them when a filter may pass rows over).
      stream_query q{self->state.tenant_id, audit_stream, stream_query::newest,
                     filter.empty() ? std::min(limit, max_audit_events_read)
                                    : max_audit_events_read};
      self->request(self->state.store, store_timeout, read_atom::value, q)
        .then(
          [promise, filter, limit](std::vector<event_record>& events) mutable {
            promise.deliver(tenant_queries::audit_rows(events, filter, limit).dump());
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](list_atom, server_atom, const std::string& server_id) -> caf::result<std::string> {
      note();
      const auto& servers = self->state.cfg.state.servers;
      auto found = servers.find(server_id);
      if (found == servers.end())
        return make_error(errc::not_found, "server: no such server for this tenant");
      return tenant_queries::server_detail(found->second).dump();
    },
    [self, note](list_atom, create_atom, server_atom) -> caf::result<std::string> {
      note();
      return server_setup::offered_catalog(*self->state.services.urls).dump();
    },
    [self, note](list_atom, route_atom, const std::string& agent_id) -> caf::result<std::string> {
      note();
      const auto& agents = self->state.cfg.state.agents;
      if (std::none_of(agents.begin(), agents.end(),
                       [&](const agent_record& a) { return a.agent_id == agent_id; }))
        return make_error(errc::not_found, "agent: no such agent for this tenant");
      return tenant_queries::route_list(explain_routes(current_policy_index(self->state), agent_id))
        .dump();
    },
    [self, note](list_atom, run_atom, uint32_t limit) -> caf::result<std::string> {
      note();
      auto promise = self->make_response_promise<std::string>();
      self
        ->request(self->state.desk, store_timeout, knowledge_atom::value, std::string{"runs.list"},
                  json{{"limit", limit}}.dump())
        .then(
          [self, promise](std::string& answer) mutable {
            auto live = self->state.live_runs;
            promise.deliver(tenant_queries::run_list(answer, [&live](const std::string& run_id) {
                              return live->count(run_id) != 0;
                            }).dump());
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
  };
}

} // namespace

tenant_actor spawn_tenant(caf::actor_system& sys, std::string tenant_id, event_store_actor store,
                          node_metrics& metrics, tenant_services services) {
  return sys.spawn(tenant_behavior, std::move(tenant_id), std::move(store), &metrics,
                   std::move(services));
}

} // namespace voxos
