#include "actors/tenant/tenant.hpp"

#include <chrono>
#include <deque>
#include <map>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/metrics/node_metrics.hpp"
#include "actors/run/tool_view.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "actors/tenant/tenant_logic.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "storage/digest.hpp"

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
    json out{{"model_name", e.model_name},
             {"origin", to_string(e.origin)},
             {"server_id", e.server_id},
             {"tool", e.tool},
             {"read_only", e.read_only}};
    if (!e.route_action.empty())
      out["route_action"] = e.route_action;
    if (with_schema) {
      out["description"] = e.description;
      out["input_schema"] = json::parse(e.input_schema, nullptr, false);
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

struct tenant_actor_state {
  static inline const char* name = "tenant";
  std::string tenant_id;
  event_store_actor store;
  loaded_tenant cfg;
  view_options view_opts;
  std::map<std::string, run_entry> runs;
  std::deque<std::string> run_order;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
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

/// Appends `events` durably, then applies them in memory and answers with
/// `answer()`. Other messages wait meanwhile (await): changes are serial.
template <class F>
caf::result<std::string> commit(self_pointer self, std::vector<event_draft> events, F answer) {
  if (events.empty())
    return answer();
  auto promise = self->make_response_promise<std::string>();
  self
    ->request(self->state.store, store_timeout, append_atom::value,
              config_append(self->state.tenant_id, events))
    .await(
      [self, promise, events, answer](const append_result&) mutable {
        for (const auto& ev : events)
          if (auto st = tenant_events::apply(ev, self->state.cfg); !st)
            log::error("tenant", "applying a stored event failed: " + st.message());
        promise.deliver(answer());
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
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

void remember_run(self_pointer self, const std::string& run_id, run_entry entry) {
  auto& st = self->state;
  st.runs[run_id] = std::move(entry);
  st.run_order.push_back(run_id);
  while (st.run_order.size() > recent_runs) {
    st.runs.erase(st.run_order.front());
    st.run_order.pop_front();
  }
}

/// Calls `fn(snapshot, promise)` with a run's snapshot, from memory or read
/// from the run's stream; `fn` answers through the promise. Answers
/// not_found for a run this tenant does not have.
template <class F>
caf::result<std::string> with_snapshot(self_pointer self, const std::string& run_id, F fn) {
  auto& st = self->state;
  auto promise = self->make_response_promise<std::string>();
  if (auto found = st.runs.find(run_id); found != st.runs.end()) {
    fn(found->second.snapshot, promise);
    return promise;
  }
  if (run_id.size() > 64) {
    promise.deliver(make_error(errc::not_found, "no such run for this tenant"));
    return promise;
  }
  stream_query q{st.tenant_id, "run." + run_id, 1, 1};
  self->request(st.store, store_timeout, read_atom::value, q)
    .then(
      [promise, fn](std::vector<event_record>& events) mutable {
        if (events.empty()) {
          promise.deliver(make_error(errc::not_found, "no such run for this tenant"));
          return;
        }
        auto doc = json::parse(events.front().data, nullptr, false);
        auto snapshot =
          doc.is_object() && doc.contains("snapshot")
            ? tenant_events::policy_from_json(doc["snapshot"])
            : result<effective_policy>{status::error(errc::corrupt_data, "malformed run record")};
        if (!snapshot) {
          promise.deliver(to_error(snapshot.error()));
          return;
        }
        fn(*snapshot, promise);
      },
      [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
  return promise;
}

json audit_decisions(const effective_policy& p) {
  json rows = json::array();
  for (const auto& d : p.decisions)
    rows.push_back({d.tool, d.server_id, to_string(d.why)});
  return rows;
}

tenant_actor::behavior_type tenant_behavior(self_pointer self, std::string tenant_id,
                                            event_store_actor store, node_metrics* metrics) {
  auto& st = self->state;
  st.tenant_id = std::move(tenant_id);
  st.store = std::move(store);
  st.cfg.state.tenant_id = st.tenant_id;
  st.counters = &metrics->actor("tenant");
  st.running.emplace(*st.counters);

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
        auto migrations =
          tenant_logic::pending_migrations(self->state.cfg, make_id, wall_clock_us());
        if (migrations.empty())
          return;
        self
          ->request(self->state.store, store_timeout, append_atom::value,
                    config_append(self->state.tenant_id, migrations))
          .await(
            [self, migrations](const append_result&) {
              for (const auto& ev : migrations)
                if (auto applied = tenant_events::apply(ev, self->state.cfg); !applied)
                  log::error("tenant", "applying a migration failed: " + applied.message());
            },
            [self](caf::error& err) {
              log::error("tenant", "cannot apply migrations: " + message_of(err));
              self->quit(std::move(err));
            });
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
                 const std::string& caller) -> caf::result<std::string> {
      note();
      auto& st = self->state;
      auto c = parse_channel(chan);
      if (!c)
        return make_error(errc::out_of_range, "channel: not a known channel");
      if (*c == channel::subagent)
        return make_error(errc::out_of_range,
                          "channel: subagent runs are started by delegation, not by hosts");
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
      auto snapshot = compose_policy(st.cfg.state, ctx, wall_clock_us());
      auto view = compose_view(snapshot, st.cfg.state, st.view_opts, kind_of(*c));
      auto view_json = view_to_json(view);
      auto snapshot_json = tenant_events::to_json(snapshot);
      // The run's record: its own stream, first event the snapshot.
      append_request run_record;
      run_record.tenant = st.tenant_id;
      run_record.stream = "run." + ctx.run_id;
      run_record.events.push_back(
        {"run.started", json{{"run_id", ctx.run_id}, {"snapshot", snapshot_json}}.dump()});
      run_record.expected_next = 1;
      json composed{{"run_id", ctx.run_id},
                    {"agent_id", agent_id},
                    {"channel", chan},
                    {"caller", to_string(snapshot.caller)},
                    {"decisions", audit_decisions(snapshot)}};
      auto promise = self->make_response_promise<std::string>();
      auto answer =
        json{{"run_id", ctx.run_id}, {"snapshot", snapshot_json}, {"view", view_json}}.dump();
      self->request(st.store, store_timeout, append_atom::value, std::move(run_record))
        .then(
          [self, promise, answer, composed = std::move(composed), run_id = ctx.run_id,
           snapshot = std::move(snapshot),
           view_json = std::move(view_json)](const append_result&) mutable {
            remember_run(self, run_id, {std::move(snapshot), std::move(view_json)});
            // The run answers once its composition decisions are audited.
            audit(self, "policy.composed", std::move(composed), [promise, answer](bool ok) mutable {
              if (ok)
                promise.deliver(answer);
              else
                promise.deliver(
                  make_error(errc::storage_failure, "the run's decisions were not audited"));
            });
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
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
                                   kind_of(snapshot.chan));
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
    [self, note](list_atom, audit_atom, uint32_t limit) -> caf::result<std::string> {
      note();
      auto promise = self->make_response_promise<std::string>();
      // Audit events can be large (a run's composition holds a decision per
      // tool): read only the newest few, enough for `limit` rows in practice.
      stream_query q{self->state.tenant_id, audit_stream, stream_query::newest,
                     std::min(limit, max_audit_events_read)};
      self->request(self->state.store, store_timeout, read_atom::value, q)
        .then(
          [promise, limit](std::vector<event_record>& events) mutable {
            // Flatten to one row per decision, newest first.
            json rows = json::array();
            for (auto it = events.rbegin(); it != events.rend() && rows.size() < limit; ++it) {
              auto doc = json::parse(it->data, nullptr, false);
              if (!doc.is_object())
                continue;
              if (it->type == "policy.composed") {
                for (auto& d : doc["decisions"]) {
                  if (rows.size() >= limit)
                    break;
                  rows.push_back({{"phase", "compose"},
                                  {"time_us", it->time_us},
                                  {"run_id", doc["run_id"]},
                                  {"agent_id", doc["agent_id"]},
                                  {"channel", doc["channel"]},
                                  {"tool", d[0]},
                                  {"server_id", d[1]},
                                  {"reason", d[2]}});
                }
              } else {
                doc["phase"] = it->type == "config.refused" ? "config" : "execute";
                doc["time_us"] = it->time_us;
                rows.push_back(doc);
              }
            }
            promise.deliver(rows.dump());
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
  };
}

} // namespace

tenant_actor spawn_tenant(caf::actor_system& sys, std::string tenant_id, event_store_actor store,
                          node_metrics& metrics) {
  return sys.spawn(tenant_behavior, std::move(tenant_id), std::move(store), &metrics);
}

} // namespace voxos
