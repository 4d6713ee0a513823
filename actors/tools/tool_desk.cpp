#include "actors/tools/tool_desk.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/local_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/tools/contacts.hpp"
#include "actors/tools/docs.hpp"
#include "actors/tools/json_fields.hpp"
#include "actors/tools/node_servers.hpp"
#include "actors/tools/time.hpp"
#include "config/clock.hpp"
#include "config/internal_tools.hpp"
#include "config/log.hpp"
#include "config/time_zone.hpp"
#include "messages/errc.hpp"
#include "messages/error.hpp"

namespace voxos {

namespace {

using json = nlohmann::json;

constexpr auto store_timeout = std::chrono::seconds(30);
/// Events read per request while loading knowledge and plans.
constexpr uint32_t load_page = 10'000;
/// Events read per request while rebuilding the history (run streams start
/// with their snapshot, which can be large).
constexpr uint32_t index_page = 1'000;

struct tool_desk_state {
  static inline const char* name = "tool_desk";
  std::string tenant_id;
  event_store_actor store;
  work_queue_actor queue;
  tool_desk_data_ptr data;
  tool_desk_options limits;
  std::unique_ptr<history_index> history;
  knowledge::state knowledge;
  plans::state plans;
  /// The next sequence of each stream the desk writes (its appends expect
  /// it: the desk is their only writer, and a write that may have landed
  /// unseen is never repeated over a state that does not know it).
  std::map<std::string, uint64_t> next_seq;
  /// Children each run queued with delegate_agent_task.
  delegation::child_counts children;
  /// A timer is set to flush the queued history events.
  bool history_flush_due = false;
};

using self_pointer = tool_desk_actor::stateful_pointer<tool_desk_state>;
using string_promise = caf::typed_response_promise<std::string>;

/// Applies one stored or just-appended event to the state it belongs to.
status apply_event(tool_desk_state& st, std::string_view stream, std::string_view type,
                   std::string_view data) {
  auto doc = json::parse(data, nullptr, false);
  if (stream == knowledge::stream)
    return knowledge::apply(st.knowledge, type, doc);
  if (stream == plans::stream)
    return plans::apply(st.plans, type, doc);
  return status::ok(); // phone sessions: nothing held in memory
}

/// Reads `stream` from `from`, page by page, applying each event; then `done`.
/// Other messages wait meanwhile (await): no call sees half a state.
template <class Done>
void load_stream(self_pointer self, std::string stream, uint64_t from, Done done) {
  stream_query q{self->state.tenant_id, stream, from, load_page};
  self->request(self->state.store, store_timeout, read_atom::value, q)
    .await(
      [self, stream, done](std::vector<event_record>& events) mutable {
        // An event that does not apply is left out (and logged): one bad
        // record never keeps a tenant's tools from starting.
        for (const auto& ev : events)
          if (auto applied = apply_event(self->state, stream, ev.type, ev.data); !applied)
            log::error("tool_desk",
                       "an event of " + stream + " was left out: " + applied.message());
        if (!events.empty())
          self->state.next_seq[stream] = events.back().seq + 1;
        if (events.size() == load_page)
          load_stream(self, stream, events.back().seq + 1, done);
        else
          done();
      },
      [self, stream](caf::error& err) {
        log::error("tool_desk", "cannot read " + stream + ": " + message_of(err));
        self->quit(std::move(err));
      });
}

/// Indexes the tenant's events under `prefix` ("chat.", "run."), page by
/// page from after (`stream`, `seq`); then `done`. Other messages wait
/// meanwhile (await). A history event that does not decode is left out (and
/// logged); a store that cannot be read ends the desk.
template <class Done>
void index_streams(self_pointer self, std::string prefix, std::string stream, uint64_t seq,
                   Done done) {
  auto& st = self->state;
  self
    ->request(st.store, store_timeout, scan_atom::value, st.tenant_id, prefix, stream, seq,
              index_page)
    .await(
      [self, prefix, done](std::vector<event_record>& events) mutable {
        for (const auto& ev : events)
          if (auto indexed = self->state.history->index(ev); !indexed)
            log::warn("tool_desk",
                      "a history event was left out of the index: " + indexed.error().message());
        if (events.size() == index_page)
          index_streams(self, prefix, events.back().stream, events.back().seq, done);
        else
          done();
      },
      [self](caf::error& err) {
        log::error("tool_desk", "cannot read the history: " + message_of(err));
        self->quit(std::move(err));
      });
}

/// Reads knowledge and plans afresh from the store (awaited: nothing is
/// served meanwhile).
void reload(self_pointer self) {
  auto& st = self->state;
  st.knowledge = {};
  st.plans = {};
  st.next_seq.clear();
  load_stream(self, std::string{knowledge::stream}, 1,
              [self] { load_stream(self, std::string{plans::stream}, 1, [] {}); });
}

/// Appends `writes` in order (awaited: no other message is served meanwhile),
/// applies them, then answers `answer`; a refused append answers its error
/// and leaves the state as it was.
void commit(self_pointer self, std::vector<tool_write> writes, std::size_t next,
            string_promise promise, std::string answer) {
  if (next == writes.size()) {
    promise.deliver(std::move(answer));
    return;
  }
  auto& st = self->state;
  append_request req;
  req.tenant = st.tenant_id;
  req.stream = writes[next].stream;
  req.events = writes[next].events;
  if (req.stream == knowledge::stream || req.stream == plans::stream) {
    auto seq = st.next_seq.find(req.stream);
    req.expected_next = seq == st.next_seq.end() ? 1 : seq->second;
  }
  self->request(st.store, store_timeout, append_atom::value, std::move(req))
    .await(
      [self, writes, next, promise, answer](const append_result& appended) mutable {
        auto& st = self->state;
        st.next_seq[writes[next].stream] = appended.last_seq + 1;
        for (const auto& ev : writes[next].events)
          if (auto applied = apply_event(st, writes[next].stream, ev.type, ev.data); !applied)
            log::error("tool_desk", "an appended event did not apply: " + applied.message());
        commit(self, std::move(writes), next + 1, std::move(promise), std::move(answer));
      },
      [self, promise](caf::error& err) mutable {
        // Refused, or no answer: it may have landed all the same. The state
        // is read again from the store before anything else is served.
        promise.deliver(std::move(err));
        reload(self);
      });
}

/// The outcome of one call: its events made durable, then its result.
caf::result<std::string> settle(self_pointer self, tool_outcome outcome) {
  auto answer = to_call_result(outcome);
  if (outcome.writes.empty())
    return answer;
  auto promise = self->make_response_promise<std::string>();
  commit(self, std::move(outcome.writes), 0, promise, std::move(answer));
  return promise;
}

tool_outcome run_tool(tool_desk_state& st, const tool_context& ctx,
                      const std::string& integration_id, const std::string& name,
                      const json& args) {
  if (!integration_id.empty()) {
    for (const auto& phone : st.data->phones)
      if (phone.integration_id == integration_id && phone.place_call_tool == name) {
        if (!phone.connected || !phone.call_capable)
          return tool_outcome::error("integration_unavailable",
                                     "the phone integration is not connected for calls.");
        return contacts::place_call(st.data->contacts, phone, ctx, args);
      }
    return tool_outcome::error("unknown_tool", "this run has no such integration tool.");
  }
  if (knowledge::handles(name))
    return knowledge::call(st.knowledge, ctx, name, args, st.limits.knowledge);
  if (plans::handles(name))
    return plans::call(st.plans, ctx, name, args, st.limits.plans);
  if (name == "search_contacts")
    return contacts::search(st.data->contacts, ctx, args);
  if (name == "get_current_time")
    return get_current_time(system_time_zones(), ctx, args);
  if (name == "search_agent_history")
    return search_agent_history(*st.history, ctx, args);
  if (name == "read_agent_history")
    return read_agent_history(*st.history, ctx, args);
  if (name == "search_product_docs")
    return docs::docs_index::node().search(args);
  if (name == "read_product_doc")
    return docs::docs_index::node().read(args);
  return tool_outcome::error("not_executable", "this internal tool is not executed by the desk.");
}

// -- create_agent_schedule --------------------------------------------------------

/// The model's answer to a schedule the keeper made, or its refusal.
tool_outcome schedule_outcome(const std::string& answer) {
  auto doc = json::parse(answer, nullptr, false);
  if (doc.is_object() && doc.contains("error"))
    return tool_outcome::error(fields::text(doc, "error"), fields::text(doc, "message"));
  if (!doc.is_object() || !doc.contains("schedule") || !doc["schedule"].is_object())
    return tool_outcome::error("unavailable", "the schedule keeper's answer was not understood.");
  const auto& made = doc["schedule"];
  return tool_outcome::ok(
    {{"schedule_id", made.value("schedule_id", "")},
     {"task_name", made.value("task_name", "")},
     {"timezone", made.value("timezone", "")},
     {"next_due_utc", made.value("next_due_utc", json{})},
     {"next_due_local", made.value("next_due_local", json{})},
     {"note", "Scheduled. Each scheduled turn runs in this chat and its response returns to this "
              "chat; the owner can list, pause, resume or delete it."}});
}

/// create_agent_schedule: only in an owner's text chat (the policy keeps it
/// out of every other channel; this is the second lock); the agent, run and
/// chat are the run's. The keeper's answer is awaited, so calls stay served
/// one at a time.
caf::result<std::string> create_schedule(self_pointer self, const tool_context& ctx,
                                         const json& args) {
  const auto& keeper = self->state.limits.schedules;
  if (ctx.chan != channel::owner_text_chat)
    return to_call_result(tool_outcome::error(
      "text_chat_only", "schedules are made only in an interactive, authenticated text chat."));
  if (!keeper)
    return to_call_result(
      tool_outcome::error("not_executable", "this internal tool is not executed by the desk."));
  json body{{"agent_id", ctx.agent_id},
            {"chat_id", ctx.chat_id},
            {"run_id", ctx.run_id},
            {"arguments", args}};
  auto promise = self->make_response_promise<std::string>();
  self->request(keeper, store_timeout, schedule_atom::value, std::string{"create"}, body.dump())
    .await(
      [promise](const std::string& answer) mutable {
        promise.deliver(to_call_result(schedule_outcome(answer)));
      },
      [promise](caf::error& err) mutable {
        log::warn("tool_desk", "a schedule was not stored: " + message_of(err));
        promise.deliver(to_call_result(tool_outcome::error(
          "unavailable", "the schedule was not stored; nothing was scheduled. Try again later.")));
      });
  return promise;
}

/// delegate_agent_task (delegation.hpp): the child's item enqueued with the
/// tenant's queue, awaited (no other call is served meanwhile, so a run's
/// bound holds), then the model's answer.
caf::result<std::string> delegate_task(self_pointer self, const tool_context& ctx,
                                       const json& args) {
  auto& st = self->state;
  auto planned = delegation::plan_child(st.data->subagent_models, ctx, args,
                                        st.children.of(ctx.run_id), st.limits.delegation);
  if (planned.refused())
    return to_call_result(planned.refusal);
  auto promise = self->make_response_promise<std::string>();
  self
    ->request(st.queue, store_timeout, enqueue_atom::value, work::to_json(planned.child).dump(),
              std::vector<event_draft>{})
    .await(
      [self, promise, child = planned.child](const std::string&) mutable {
        self->state.children.add(child.parent_run_id);
        promise.deliver(to_call_result(delegation::queued(child)));
      },
      [promise](caf::error& err) mutable {
        if (code_of(err) == errc::out_of_range) {
          promise.deliver(to_call_result(tool_outcome::error("queue_full", message_of(err))));
          return;
        }
        promise.deliver(std::move(err));
      });
  return promise;
}

// -- the owner's side -------------------------------------------------------------

/// Events decided by the owner: appended, applied, then `answer` (JSON of
/// what changed).
caf::result<std::string> owner_commit(self_pointer self, result<std::vector<event_draft>> events,
                                      std::string answer) {
  if (!events)
    return to_error(events.error());
  tool_outcome done;
  done.writes.push_back({std::string{knowledge::stream}, std::move(*events)});
  auto promise = self->make_response_promise<std::string>();
  commit(self, std::move(done.writes), 0, promise, std::move(answer));
  return promise;
}

/// Example skills the tenant checked: each installed unless its slug exists.
caf::result<std::string> install_skills(self_pointer self, const json& body) {
  auto& st = self->state;
  auto now = wall_clock_us();
  json outcomes = json::array();
  std::vector<event_draft> events;
  // Slugs installed earlier in this request are taken, and count against the bound.
  std::set<std::string> added;
  for (const auto& skill : body.value("skills", json::array())) {
    auto slug = fields::text(skill, "slug");
    auto lim = st.limits.knowledge;
    lim.skills = lim.skills > added.size() ? lim.skills - added.size() : 0;
    auto made = added.count(slug) != 0
                  ? result<std::vector<event_draft>>{status::error(
                    errc::conflict, "a skill with this slug exists; it is never overwritten")}
                  : knowledge::install_skill(st.knowledge, slug, skill, now, lim);
    if (!made) {
      outcomes.push_back({{"slug", slug},
                          {"outcome", made.error().code() == errc::conflict ? "exists" : "refused"},
                          {"reason", made.error().message()}});
      continue;
    }
    added.insert(slug);
    outcomes.push_back({{"slug", slug}, {"outcome", "installed"}});
    for (auto& ev : *made)
      events.push_back(std::move(ev));
  }
  json answer{{"skills", std::move(outcomes)}};
  if (events.empty())
    return answer.dump();
  return owner_commit(self, std::move(events), answer.dump());
}

/// One call through the node's own MCP servers (node_servers.hpp), for
/// agent `agent_id` of this tenant, already checked against its grants and
/// audited by the tenant: the tool runs as in a run, except that the Memory
/// MCP's and the Skill MCP's writes are proposals and drafts for review.
caf::result<std::string> server_call(self_pointer self, const json& body) {
  auto& st = self->state;
  const auto* server = find_node_server(fields::text(body, "server"));
  auto tool = fields::text(body, "tool");
  if (server == nullptr
      || std::find(server->tools.begin(), server->tools.end(), tool) == server->tools.end())
    return make_error(errc::not_found, "no such tool on this server");
  tool_context ctx;
  ctx.tenant_id = st.tenant_id;
  ctx.agent_id = fields::text(body, "agent_id");
  ctx.now_us = wall_clock_us();
  auto args = body.value("arguments", json::object());
  if (tool == "propose_agent_memory")
    return settle(self,
                  knowledge::submit_from_server(st.knowledge, ctx, knowledge::source::memory_mcp,
                                                knowledge::change::memory,
                                                {{"content", fields::text(args, "content")},
                                                 {"rationale", fields::text(args, "reason")}},
                                                st.limits.knowledge));
  if (tool == "create_user_skill")
    return settle(self, knowledge::submit_from_server(
                          st.knowledge, ctx, knowledge::source::skill_mcp, knowledge::change::skill,
                          {{"title", fields::text(args, "name")},
                           {"description", fields::text(args, "description")},
                           {"content", fields::text(args, "instructions")}},
                          st.limits.knowledge));
  return settle(self, run_tool(st, ctx, "", tool, args));
}

caf::result<std::string> owner_op(self_pointer self, const std::string& op, const json& body) {
  auto& st = self->state;
  auto now = wall_clock_us();
  if (op == "candidates.list") {
    auto which = fields::text(body, "status");
    auto limit = body.value("limit", 100);
    return knowledge::list_candidates(st.knowledge, which.empty() ? "pending" : which,
                                      static_cast<std::size_t>(limit))
      .dump();
  }
  if (op == "candidates.confirm" || op == "candidates.reject") {
    auto id = fields::text(body, "id");
    auto events = op == "candidates.confirm"
                    ? knowledge::confirm(st.knowledge, id, now, st.limits.knowledge)
                    : knowledge::reject(st.knowledge, id, now);
    return owner_commit(
      self, std::move(events),
      json{{"id", id}, {"status", op == "candidates.confirm" ? "confirmed" : "rejected"}}.dump());
  }
  if (op == "consent.set") {
    bool on = fields::flag(body, "automatic_saving");
    return owner_commit(self, knowledge::set_consent(on, now),
                        json{{"automatic_saving", on}}.dump());
  }
  if (op == "memories.list")
    return knowledge::list_memories(st.knowledge, fields::text(body, "agent_id"),
                                    fields::flag(body, "archived"))
      .dump();
  if (op == "skills.list")
    return knowledge::list_skills(st.knowledge, fields::flag(body, "archived"),
                                  fields::flag(body, "versions"))
      .dump();
  if (op == "skills.get") {
    auto found = st.knowledge.skills.find(fields::text(body, "slug"));
    if (found == st.knowledge.skills.end() || found->second.archived)
      return make_error(errc::not_found, "no active skill has this slug");
    return knowledge::to_json(found->second, true).dump();
  }
  if (op == "skills.install")
    return install_skills(self, body);
  if (op == "runs.list") {
    st.history->flush(); // (the runs whose events wait in the batch are listed too)
    auto runs = json::array();
    for (auto& run : st.history->recent_runs(static_cast<std::size_t>(body.value("limit", 50))))
      runs.push_back({{"run_id", std::move(run.run_id)},
                      {"agent_id", std::move(run.agent_id)},
                      {"channel", std::move(run.chan)},
                      {"chat_id", std::move(run.chat_id)},
                      {"started_us", run.started_us},
                      {"outcome", std::move(run.outcome)},
                      {"ended_us", run.ended_us}});
    return json{{"runs", std::move(runs)}}.dump();
  }
  if (op == "mcp.call")
    return server_call(self, body);
  if (op == "skills.slugs") {
    json slugs = json::array();
    for (const auto& [slug, skill] : st.knowledge.skills)
      slugs.push_back(slug);
    for (const auto& [id, c] : st.knowledge.candidates)
      if (c.state == knowledge::review::pending && c.kind == knowledge::change::skill)
        slugs.push_back(c.target);
    auto held = st.knowledge.skills.size();
    auto limit = st.limits.knowledge.skills;
    return json{{"slugs", std::move(slugs)}, {"room", held < limit ? limit - held : 0}}.dump();
  }
  return make_error(errc::not_found, "unknown knowledge operation");
}

tool_desk_actor::behavior_type desk_behavior(self_pointer self, std::string tenant_id,
                                             event_store_actor store, work_queue_actor queue,
                                             tool_desk_data_ptr data, tool_desk_options limits) {
  auto& st = self->state;
  st.tenant_id = std::move(tenant_id);
  st.store = std::move(store);
  st.queue = std::move(queue);
  st.data = data ? std::move(data) : std::make_shared<const tool_desk_data>();
  st.limits = limits;
  auto index = history_index::open(st.tenant_id, limits.history);
  if (index) {
    st.history = std::move(*index);
  } else {
    // (nothing is served: the desk ends before its first message)
    log::error("tool_desk", "cannot open the history index: " + index.error().message());
    self->quit(to_error(index.error()));
  }
  load_stream(self, std::string{knowledge::stream}, 1, [self] {
    load_stream(self, std::string{plans::stream}, 1, [self] {
      index_streams(self, "chat.", "", 0, [self] {
        index_streams(self, "run.", "", 0, [self] {
          if (auto committed = self->state.history->commit(); !committed)
            log::warn("tool_desk", "the history index was not written: " + committed.message());
        });
      });
    });
  });
  return {
    [self](tool_atom, tool_context& ctx, std::string& integration_id,
           std::string& params) -> caf::result<std::string> {
      auto doc = json::parse(params, nullptr, false);
      if (!doc.is_object() || !doc.contains("name") || !doc["name"].is_string())
        return make_error(errc::bad_json, "tools/call params: expected {name, arguments}");
      auto name = doc["name"].get<std::string>();
      auto args = doc.contains("arguments") ? doc["arguments"] : json::object();
      if (ctx.tenant_id != self->state.tenant_id)
        return make_error(errc::forbidden, "this call is not of this desk's tenant");
      if (ctx.now_us == 0)
        ctx.now_us = wall_clock_us();
      if (integration_id.empty() && name == internal_names::create_agent_schedule)
        return create_schedule(self, ctx, args);
      if (integration_id.empty() && name == internal_names::delegate_agent_task)
        return delegate_task(self, ctx, args);
      return settle(self, run_tool(self->state, ctx, integration_id, name, args));
    },
    [self](contact_atom, tool_desk_data_ptr& data) {
      if (data)
        self->state.data = std::move(data);
    },
    [self](history_atom, event_record& ev) {
      // Indexed in batches (history.hpp): at once when nothing else waits
      // for the desk (a backlog of events is indexed in one go as its last
      // is taken) or the batch is full, else within batch_ms.
      auto& st = self->state;
      if (st.history->queue(std::move(ev)) || self->mailbox().empty()) {
        st.history->flush();
      } else if (!st.history_flush_due) {
        st.history_flush_due = true;
        self->delayed_send(self, std::chrono::milliseconds{st.limits.history.batch_ms},
                           history_atom::value);
      }
    },
    [self](history_atom) {
      self->state.history_flush_due = false;
      self->state.history->flush();
    },
    [self](knowledge_atom, const std::string& op,
           const std::string& body) -> caf::result<std::string> {
      auto doc = json::parse(body, nullptr, false);
      if (!doc.is_object())
        return make_error(errc::bad_json, "expected one JSON object");
      return owner_op(self, op, doc);
    },
    [self](health_atom) -> std::string {
      auto& st = self->state;
      return json{{"memories", st.knowledge.memories.size()},
                  {"skills", st.knowledge.skills.size()},
                  {"candidates", st.knowledge.candidates.size()},
                  {"pending", st.knowledge.pending},
                  {"plans", st.plans.plans.size()}}
        .dump();
    },
  };
}

} // namespace

tool_desk_actor spawn_tool_desk(caf::local_actor* tenant, std::string tenant_id,
                                event_store_actor store, work_queue_actor queue,
                                tool_desk_data_ptr data, tool_desk_options limits) {
  return tenant->spawn<caf::linked>(desk_behavior, std::move(tenant_id), std::move(store),
                                    std::move(queue), std::move(data), limits);
}

} // namespace voxos
