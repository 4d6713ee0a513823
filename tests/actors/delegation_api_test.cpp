// delegate_agent_task and the subagent model allowlist through a node's HTTP
// API over a real RocksDB store: a run's call queues a durable child run, an
// agent host leases and begins it (its snapshot composed against the
// parent's), and completes it; the answer reaches the parent's chat once.
// The pure part: tests/actors/tools/delegation_test.cpp.
#include <doctest/doctest.h>

#include <set>

#include "actors/tenant/tenant_events.hpp"
#include "support/node_store.hpp"
#include "support/tool_session.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

const json two_providers{{"providers",
                          {{"openai", {"gpt-4o-mini", "gpt-4o"}},
                           {"anthropic", {"claude-3-5-haiku", "vendor/model:v1@2024"}}}}};

/// A tenant whose default agent may delegate, with an allowlist of two providers.
struct delegation_fixture : test::tool_session {
  explicit delegation_fixture(std::function<void(node_config&)> tweak = {})
      : test::tool_session(std::move(tweak)) {
    grant("delegate_agent_task");
    grant("create_task_plan");
    auto set = node.call("PUT", "/v1/subagent-models", token, two_providers.dump());
    REQUIRE_MESSAGE(set.status == 200, set.raw);
  }

  json delegate(const std::string& run_id, json args) {
    return call(run_id, "delegate_agent_task", std::move(args));
  }

  /// The queued work of the tenant.
  json items() {
    auto listed = node.call("GET", "/v1/work/items", token);
    REQUIRE_MESSAGE(listed.status == 200, listed.raw);
    return listed.body["items"];
  }

  /// Queued items not settling (a settled item leaves the list once its
  /// event is durable).
  std::size_t open_items() {
    std::size_t n = 0;
    for (const auto& it : items())
      n += it["state"] != "settling" ? 1 : 0;
    return n;
  }

  /// Asks for the queue's list until every item's settlement is durable
  /// (no sleeping: each ask is a round trip through the queue).
  void until_settled() {
    for (int ask_idx = 0; ask_idx < 10'000 && !items().empty(); ++ask_idx) {
    }
    REQUIRE(items().empty());
  }

  /// Leases the next item, as an agent host over HTTP.
  json lease() {
    auto leased = node.call("POST", "/v1/work/lease", token, "{}");
    REQUIRE_MESSAGE(leased.status == 200, leased.raw);
    REQUIRE_MESSAGE(leased.body["lease"].is_object(), leased.raw);
    return leased.body["lease"];
  }

  test::http_reply item_op(const json& lease, const std::string& op, json body = json::object()) {
    body["lease_id"] = lease["lease_id"];
    return node.call("POST", "/v1/work/items/" + lease["item_id"].get<std::string>() + "/" + op,
                     token, body.dump());
  }

  /// The run's start answer (snapshot, chat).
  json start(const std::string& chan = "owner_text_chat") {
    auto run =
      node.call("POST", "/v1/runs", token, json{{"agent_id", agent_id}, {"channel", chan}}.dump());
    REQUIRE_MESSAGE(run.status == 201, run.raw);
    return run.body;
  }
};

bool holds_tool(const json& snapshot, const std::string& name) {
  for (const auto& tool : snapshot["tools"])
    if (tool["name"] == name)
      return true;
  return false;
}

std::string reason_of(const json& snapshot, const std::string& name) {
  for (const auto& d : snapshot["decisions"])
    if (d["tool"] == name && d["server_id"] == "")
      return d["why"].get<std::string>();
  return "";
}

/// The events of a stopped node's chat stream.
std::vector<event_record> chat_events(const test::temp_dir& dir, const std::string& tenant_id,
                                      const std::string& chat_id) {
  auto db = test::open_node_store(dir);
  auto events = db->read_stream({tenant_id, "chat." + chat_id, 1, 10'000});
  REQUIRE(events);
  return *events;
}

std::size_t count_of(const std::vector<event_record>& events, const std::string& type,
                     const std::string& item_id) {
  std::size_t n = 0;
  for (const auto& ev : events)
    if (ev.type == type && ev.data.find("\"" + item_id + "\"") != std::string::npos)
      ++n;
  return n;
}

} // namespace

TEST_CASE("delegate_agent_task is denied by default and queues nothing without a grant") {
  test::tool_session s;
  auto run = s.node.call("POST", "/v1/runs", s.token,
                         json{{"agent_id", s.agent_id}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE(run.status == 201);
  CHECK_FALSE(holds_tool(run.body["snapshot"], "delegate_agent_task"));
  CHECK(reason_of(run.body["snapshot"], "delegate_agent_task") == "not_granted");
  auto out = s.call(run.body["run_id"].get<std::string>(), "delegate_agent_task",
                    {{"task", "Find flights"}, {"context", "isolated"}});
  CHECK(out["status"] == "denied");
  CHECK(s.node.call("GET", "/v1/work/items", s.token).body["items"].empty());
}

TEST_CASE("a granted delegation queues a child run and answers its run id at once") {
  delegation_fixture f;
  auto parent = f.start();
  auto run_id = parent["run_id"].get<std::string>();
  auto out = f.delegate(run_id, {{"task", "Compare three flights to Porto"},
                                 {"context", "isolated"},
                                 {"model", "claude-3-5-haiku"}});
  REQUIRE_MESSAGE(out["status"] == "ok", out.dump());
  auto answer = out["output"]["structuredContent"];
  CHECK(answer["status"] == "queued");
  auto child_run = answer["child_run_id"].get<std::string>();
  CHECK(child_run.rfind("r_w", 0) == 0);
  CHECK(answer["message"].get<std::string>().find("later turn of this chat") != std::string::npos);
  auto items = f.items();
  REQUIRE(items.size() == 1);
  CHECK(items[0]["item_id"] == answer["item_id"]);
  CHECK(items[0]["run_id"] == child_run);
  CHECK(items[0]["kind"] == "child_run");
  CHECK(items[0]["parent_run_id"] == run_id);
  CHECK(items[0]["agent_id"] == f.agent_id);
  CHECK(items[0]["chat_id"] == parent["chat_id"]);
  CHECK(items[0]["provider"] == "anthropic");
  CHECK(items[0]["model"] == "claude-3-5-haiku");
  CHECK(items[0]["text"] == "Compare three flights to Porto");
}

TEST_CASE("a model outside the subagent allowlist is refused with its code and nothing is queued") {
  delegation_fixture f;
  auto run_id = f.start_run();
  auto out = f.delegate(run_id, {{"task", "t"}, {"context", "isolated"}, {"model", "gpt-5-pro"}});
  CHECK(out["status"] == "tool_error");
  CHECK(out["output"]["result"]["structuredContent"]["error"] == "model_not_allowed");
  CHECK(f.items().empty());
  // A model two providers list cannot be told apart: refused, nothing queued.
  auto both = two_providers;
  both["providers"]["openai"].push_back("claude-3-5-haiku");
  REQUIRE(f.node.call("PUT", "/v1/subagent-models", f.token, both.dump()).status == 200);
  out = f.delegate(run_id, {{"task", "t"}, {"context", "isolated"}, {"model", "claude-3-5-haiku"}});
  CHECK(out["output"]["result"]["structuredContent"]["error"] == "model_ambiguous");
  CHECK(f.items().empty());
}

TEST_CASE("authority arguments to delegate_agent_task are refused by the schema audited and "
          "queue nothing") {
  delegation_fixture f;
  const std::string authority[] = {"user_id",  "agent_id",   "run_id", "session",
                                   "provider", "credential", "url",    "token"};
  // (one run each: a run's corrections of one tool are bounded, run.max_corrections)
  std::set<std::string> runs;
  for (const auto& key : authority) {
    CAPTURE(key);
    auto run_id = f.start_run();
    runs.insert(run_id);
    auto out = f.delegate(run_id, {{"task", "t"}, {"context", "isolated"}, {key, "x"}});
    CHECK(out["status"] == "invalid_arguments");
  }
  CHECK(f.items().empty());
  auto audit = f.node.call("GET", "/v1/audit?limit=1000", f.token);
  REQUIRE(audit.status == 200);
  std::set<std::string> refused;
  for (const auto& row : audit.body)
    if (row.value("tool", "") == "delegate_agent_task"
        && row.value("reason", "") == "invalid_arguments")
      refused.insert(row.value("run_id", ""));
  CHECK(refused == runs);
}

TEST_CASE("a child run's snapshot is never wider than its parent's and holds neither delegation "
          "nor saved-profile authority") {
  delegation_fixture f;
  auto profile = tenant_events::to_json(
    browser_profile{"bp_mail", "Work mail", "https://mail.example.com", {f.agent_id}, "", ""});
  REQUIRE(f.node.call("PUT", "/v1/profiles", f.token, profile.dump()).status == 200);
  auto parent = f.start();
  const auto& parent_snapshot = parent["snapshot"];
  REQUIRE(parent_snapshot["profiles"].size() == 1);
  REQUIRE(holds_tool(parent_snapshot, "delegate_agent_task"));
  REQUIRE(holds_tool(parent_snapshot, "create_task_plan"));
  // The agent gains a tool after the parent started: the child does not.
  f.grant("create_agent_memory");
  auto out = f.delegate(parent["run_id"], {{"task", "Draft a plan"}, {"context", "isolated"}});
  REQUIRE_MESSAGE(out["status"] == "ok", out.dump());
  auto lease = f.lease();
  auto begun = f.item_op(lease, "begin");
  REQUIRE_MESSAGE(begun.status == 200, begun.raw);
  const auto& child = begun.body["snapshot"];
  CHECK(begun.body["run_id"] == out["output"]["structuredContent"]["child_run_id"]);
  CHECK(child["chan"] == "subagent");
  for (const auto& tool : child["tools"]) {
    CAPTURE(tool.dump());
    bool in_parent = false;
    for (const auto& mine : parent_snapshot["tools"])
      in_parent =
        in_parent || (mine["name"] == tool["name"] && mine["server_id"] == tool["server_id"]);
    CHECK(in_parent);
  }
  CHECK(holds_tool(child, "create_task_plan"));
  CHECK_FALSE(holds_tool(child, "delegate_agent_task"));
  CHECK(reason_of(child, "delegate_agent_task") == "not_inherited");
  CHECK_FALSE(holds_tool(child, "create_agent_memory"));
  CHECK(reason_of(child, "create_agent_memory") == "parent_not_granted");
  CHECK(child["profiles"].empty());
  // The child's run cannot delegate: the call is refused by its snapshot.
  auto nested = f.call(begun.body["run_id"].get<std::string>(), "delegate_agent_task",
                       {{"task", "again"}, {"context", "isolated"}});
  CHECK(nested["status"] == "denied");
  CHECK(f.items().size() == 1);
}

TEST_CASE("a child's result reaches the parent's chat as a later turn exactly once") {
  delegation_fixture f;
  auto parent = f.start();
  auto chat_id = parent["chat_id"].get<std::string>();
  auto out = f.delegate(parent["run_id"], {{"task", "Sum the invoices"}, {"context", "isolated"}});
  REQUIRE_MESSAGE(out["status"] == "ok", out.dump());
  auto item_id = out["output"]["structuredContent"]["item_id"].get<std::string>();
  auto lease = f.lease();
  REQUIRE(lease["item_id"] == item_id);
  REQUIRE(f.item_op(lease, "begin").status == 200);
  auto done = f.item_op(lease, "complete", {{"answer", "The invoices sum to 42 EUR."}});
  REQUIRE_MESSAGE(done.status == 200, done.raw);
  CHECK(done.body["chat_id"] == chat_id);
  // A worker that completes twice is refused.
  auto again = f.item_op(lease, "complete", {{"answer", "The invoices sum to 43 EUR."}});
  CHECK(again.status == 409);
  CHECK(again.raw.find("already settled") != std::string::npos);
  CHECK(f.items().empty());
  f.node.stop();
  auto events = chat_events(f.dir, f.tenant_id, chat_id);
  CHECK(count_of(events, "turn.reported", item_id) == 1);
  CHECK(count_of(events, "work.completed", item_id) == 1);
  for (const auto& ev : events)
    if (ev.type == "turn.reported")
      CHECK(json::parse(ev.data)["assistant"] == "The invoices sum to 42 EUR.");
}

TEST_CASE("a summary child begins with the parent chat's recent turns and an isolated one with "
          "none") {
  delegation_fixture f;
  auto run_id = f.start_run();
  auto turn =
    f.node.call("POST", "/v1/runs/" + run_id + "/turns", f.token,
                json{{"user", "Plan a weekend in Porto"}, {"assistant", "Gladly."}}.dump());
  REQUIRE_MESSAGE(turn.status == 201, turn.raw);
  REQUIRE(f.delegate(run_id, {{"task", "Find a hotel"}, {"context", "summary"}})["status"] == "ok");
  auto lease = f.lease();
  auto begun = f.item_op(lease, "begin");
  REQUIRE_MESSAGE(begun.status == 200, begun.raw);
  auto text = begun.body["context_text"].get<std::string>();
  CHECK(text.find("User: Plan a weekend in Porto") != std::string::npos);
  CHECK(text.find("Assistant: Gladly.") != std::string::npos);
  CHECK(begun.body["item"]["text"] == "Find a hotel");

  REQUIRE(f.delegate(run_id, {{"task", "Find a car"}, {"context", "isolated"}})["status"] == "ok");
  auto second = f.lease();
  auto isolated = f.item_op(second, "begin");
  REQUIRE_MESSAGE(isolated.status == 200, isolated.raw);
  CHECK(isolated.body["context_text"] == "");
}

TEST_CASE("cancelling the parent cancels its children not yet finished") {
  delegation_fixture f;
  auto parent = f.start();
  auto run_id = parent["run_id"].get<std::string>();
  REQUIRE(f.delegate(run_id, {{"task", "One"}, {"context", "isolated"}})["status"] == "ok");
  REQUIRE(f.delegate(run_id, {{"task", "Two"}, {"context", "isolated"}})["status"] == "ok");
  // One child is running on a host, the other still queued.
  auto lease = f.lease();
  auto begun = f.item_op(lease, "begin");
  REQUIRE(begun.status == 200);
  auto child_run = begun.body["run_id"].get<std::string>();
  REQUIRE(f.node.call("GET", "/v1/runs/" + child_run + "/health", f.token).status == 200);
  auto cancelled = f.node.call("DELETE", "/v1/runs/" + run_id, f.token);
  REQUIRE_MESSAGE(cancelled.status == 200, cancelled.raw);
  // Nothing is offered any more; the running child is being cancelled or gone.
  CHECK(f.open_items() == 0);
  CHECK(f.node.call("POST", "/v1/work/lease", f.token, "{}").body["lease"].is_null());
  auto health = f.node.call("GET", "/v1/runs/" + child_run + "/health", f.token);
  CHECK((health.status == 404 || health.body["phase"] == "cancelling"));
  // The host holding the lease learns it is gone; its answer is not recorded.
  CHECK(f.item_op(lease, "heartbeat").status == 409);
  CHECK(f.item_op(lease, "complete", {{"answer", "late"}}).status == 409);
  auto item_id = lease["item_id"].get<std::string>();
  f.until_settled();
  f.node.stop();
  auto events = chat_events(f.dir, f.tenant_id, parent["chat_id"]);
  std::size_t turns = 0;
  std::size_t cancels = 0;
  for (const auto& ev : events) {
    turns += ev.type == "turn.reported" ? 1 : 0;
    cancels += ev.type == "work.cancelled" ? 1 : 0;
  }
  CHECK(turns == 0);
  CHECK(cancels == 2);
  CHECK(count_of(events, "work.cancelled", item_id) == 1);
}

TEST_CASE("a run queues at most tools.delegations_per_run children") {
  delegation_fixture f{[](node_config& cfg) { cfg.tools.delegations_per_run = 2; }};
  auto run_id = f.start_run();
  json args{{"task", "t"}, {"context", "isolated"}};
  CHECK(f.delegate(run_id, args)["status"] == "ok");
  CHECK(f.delegate(run_id, args)["status"] == "ok");
  auto third = f.delegate(run_id, args);
  CHECK(third["output"]["result"]["structuredContent"]["error"] == "too_many_children");
  CHECK(f.items().size() == 2);
  // Another run has its own bound.
  CHECK(f.delegate(f.start_run(), args)["status"] == "ok");
}

// -- the allowlist -------------------------------------------------------------------

TEST_CASE("the owner sets and reads the subagent model allowlist and it survives a restart") {
  test::tool_session s;
  auto empty = s.node.call("GET", "/v1/subagent-models", s.token);
  REQUIRE(empty.status == 200);
  CHECK(empty.body == json{{"providers", json::object()}});
  auto set = s.node.call("PUT", "/v1/subagent-models", s.token, two_providers.dump());
  REQUIRE_MESSAGE(set.status == 200, set.raw);
  CHECK(set.body == two_providers);
  s.node.stop();
  s.node.start();
  auto read = s.node.call("GET", "/v1/subagent-models", s.token);
  REQUIRE(read.status == 200);
  CHECK(read.body == two_providers);
  // Replaced whole; an empty one clears it.
  json one{{"providers", {{"openai", {"gpt-4o"}}}}};
  REQUIRE(s.node.call("PUT", "/v1/subagent-models", s.token, one.dump()).status == 200);
  CHECK(s.node.call("GET", "/v1/subagent-models", s.token).body == one);
  REQUIRE(s.node.call("PUT", "/v1/subagent-models", s.token, R"({"providers":{}})").status == 200);
  CHECK(s.node.call("GET", "/v1/subagent-models", s.token).body["providers"].empty());
}

TEST_CASE("a bad subagent model allowlist is refused naming the path audited and stores nothing") {
  test::tool_session s;
  REQUIRE(s.node.call("PUT", "/v1/subagent-models", s.token, two_providers.dump()).status == 200);
  json many = json::object();
  for (int provider_idx = 0; provider_idx < 17; ++provider_idx)
    many["p" + std::to_string(provider_idx)] = {"m"};
  json long_list = json::array();
  for (int model_idx = 0; model_idx < 65; ++model_idx)
    long_list.push_back("m" + std::to_string(model_idx));
  struct bad_case {
    json providers;
    std::string path;
    std::string hidden; ///< the rejected value, never in the message
  };
  std::vector<bad_case> cases{
    {many, "providers: at most 16", ""},
    {{{"openai", long_list}}, "providers.openai: expected 1 to 64 models", ""},
    {{{"openai", json::array()}}, "providers.openai: expected 1 to 64 models", ""},
    {{{"openai", {"gpt 4o secret"}}}, "providers.openai[0]: expected", "gpt 4o secret"},
    {{{"openai", {std::string(129, 'm')}}}, "providers.openai[0]: expected", std::string(129, 'm')},
    {{{"openai", {"gpt-4o", "gpt-4o"}}}, "providers.openai[1]: a duplicate", ""},
    {{{"Open AI secret", {"gpt-4o"}}}, "providers: a provider name", "Open AI secret"},
    {{{"openai", "gpt-4o"}}, "providers.openai: expected an array", ""},
    {{{"openai", {7}}}, "providers.openai[0]: expected a string", ""},
  };
  for (const auto& bad : cases) {
    CAPTURE(bad.providers.dump());
    auto refused =
      s.node.call("PUT", "/v1/subagent-models", s.token, json{{"providers", bad.providers}}.dump());
    CHECK(refused.status == 400);
    CHECK_MESSAGE(refused.body["error"]["message"].get<std::string>().find(bad.path) == 0,
                  refused.raw);
    if (!bad.hidden.empty())
      CHECK(refused.raw.find(bad.hidden) == std::string::npos);
  }
  CHECK(s.node.call("GET", "/v1/subagent-models", s.token).body == two_providers);
  auto audit = s.node.call("GET", "/v1/audit?limit=100", s.token);
  std::size_t refusals = 0;
  for (const auto& row : audit.body)
    if (row.value("phase", "") == "config" && row.value("op", "") == "set_subagent_models")
      ++refusals;
  CHECK(refusals == cases.size());
}

TEST_CASE("another tenant's token sees and sets only its own subagent models") {
  test::tool_session s;
  REQUIRE(s.node.call("PUT", "/v1/subagent-models", s.token, two_providers.dump()).status == 200);
  auto [other_id, other_token] = s.node.make_tenant("Other");
  CHECK(s.node.call("GET", "/v1/subagent-models", other_token).body["providers"].empty());
  json theirs{{"providers", {{"mistral", {"mistral-small"}}}}};
  REQUIRE(s.node.call("PUT", "/v1/subagent-models", other_token, theirs.dump()).status == 200);
  CHECK(s.node.call("GET", "/v1/subagent-models", s.token).body == two_providers);
  CHECK(s.node.call("GET", "/v1/subagent-models", other_token).body == theirs);
}
