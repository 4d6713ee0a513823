// delegate_agent_task's pure part (actors/tools/delegation.hpp): what a call
// queues, what it refuses, and the summary a child gets; each rule named
// after it. Through a node's HTTP API: tests/actors/delegation_api_test.cpp.
#include <doctest/doctest.h>

#include "actors/tools/delegation.hpp"

using namespace voxos;
using json = nlohmann::json;

namespace {

tool_context context(channel c = channel::owner_text_chat) {
  return {
    "t_1", "a_1", "r_0123456789abcdef", "c_1", c, caller_class::owner, contact_detail::full_numbers,
    "",    7};
}

subagent_allowlist allowlist() {
  subagent_allowlist out;
  out.providers["openai"] = {"gpt-4o-mini", "shared-model"};
  out.providers["anthropic"] = {"claude-3-5-haiku", "shared-model"};
  return out;
}

delegation::plan plan(json args, std::size_t children_so_far = 0, tool_context ctx = context()) {
  return delegation::plan_child(allowlist(), ctx, args, children_so_far, delegation::limits{});
}

std::string code_of(const delegation::plan& p) {
  REQUIRE(p.refused());
  return p.refusal.result["error"].get<std::string>();
}

event_record turn(uint64_t seq, const std::string& user, const std::string& assistant) {
  return {"t_1",
          "chat.c_1",
          seq,
          0,
          "turn.reported",
          json{{"run_id", "r_1"}, {"turn", seq}, {"user", user}, {"assistant", assistant}}.dump()};
}

} // namespace

TEST_CASE("a child takes its agent chat and parent run from the context, never the arguments") {
  auto p = plan({{"task", "Compare three flights"}, {"context", "isolated"}});
  REQUIRE_FALSE(p.refused());
  const auto& child = p.child;
  CHECK(child.k == work::kind::child_run);
  CHECK(child.agent_id == "a_1");
  CHECK(child.chat_id == "c_1");
  CHECK(child.parent_run_id == "r_0123456789abcdef");
  CHECK(child.run_id == work::run_id_of(child.item_id));
  CHECK(work::is_work_run(child.run_id));
  CHECK(child.text == "Compare three flights");
  CHECK(child.context == "isolated");
  CHECK(child.enqueued_us == 7);
  // No model: the host's default, with no provider.
  CHECK(child.provider.empty());
  CHECK(child.model.empty());
  // The item is one the queue accepts.
  CHECK(work::item_from_json(work::to_json(child)));
  auto answer = delegation::queued(child).result;
  CHECK(answer["status"] == "queued");
  CHECK(answer["child_run_id"] == child.run_id);
  CHECK(answer["item_id"] == child.item_id);
}

TEST_CASE("a model resolves to the one provider of the allowlist that lists it") {
  auto p = plan({{"task", "t"}, {"context", "summary"}, {"model", "claude-3-5-haiku"}});
  REQUIRE_FALSE(p.refused());
  CHECK(p.child.provider == "anthropic");
  CHECK(p.child.model == "claude-3-5-haiku");
  CHECK(p.child.context == "summary");
  CHECK(delegation::queued(p.child).result["provider"] == "anthropic");
}

TEST_CASE("a model outside the subagent allowlist is refused as model_not_allowed") {
  CHECK(code_of(plan({{"task", "t"}, {"context", "isolated"}, {"model", "gpt-5"}}))
        == "model_not_allowed");
  // An empty allowlist holds no model at all.
  auto none = delegation::plan_child(
    {}, context(), {{"task", "t"}, {"context", "isolated"}, {"model", "gpt-4o-mini"}}, 0,
    delegation::limits{});
  CHECK(code_of(none) == "model_not_allowed");
  // The refusal does not echo the model it refused.
  auto refused = plan({{"task", "t"}, {"context", "isolated"}, {"model", "secret-model-x"}});
  CHECK(refused.refusal.result.dump().find("secret-model-x") == std::string::npos);
}

TEST_CASE("a model two providers list is refused as model_ambiguous") {
  CHECK(code_of(plan({{"task", "t"}, {"context", "isolated"}, {"model", "shared-model"}}))
        == "model_ambiguous");
}

TEST_CASE("delegation arguments other than task context and model are refused") {
  for (auto key : {"user_id", "agent_id", "run_id", "session", "provider", "credential", "url",
                   "token", "chat_id"}) {
    CAPTURE(key);
    CHECK(code_of(plan({{"task", "t"}, {"context", "isolated"}, {key, "x"}}))
          == "invalid_arguments");
  }
  CHECK(code_of(plan({{"task", ""}, {"context", "isolated"}})) == "invalid_arguments");
  CHECK(code_of(plan({{"task", "t"}, {"context", "everything"}})) == "invalid_arguments");
  CHECK(code_of(plan({{"task", "t"}, {"context", "isolated"}, {"model", 3}}))
        == "invalid_arguments");
  CHECK(code_of(plan(json::array())) == "invalid_arguments");
}

TEST_CASE("a run queues at most children_per_run children") {
  delegation::limits lim;
  lim.children_per_run = 2;
  json args{{"task", "t"}, {"context", "isolated"}};
  CHECK_FALSE(delegation::plan_child({}, context(), args, 1, lim).refused());
  CHECK(code_of(delegation::plan_child({}, context(), args, 2, lim)) == "too_many_children");
}

TEST_CASE("a child run cannot delegate further and a call outside a chat queues nothing") {
  CHECK(code_of(plan({{"task", "t"}, {"context", "isolated"}}, 0, context(channel::subagent)))
        == "not_inherited");
  auto no_chat = context();
  no_chat.chat_id.clear();
  CHECK(code_of(plan({{"task", "t"}, {"context", "isolated"}}, 0, no_chat)) == "unavailable");
}

TEST_CASE("each child gets its own item and run id") {
  json args{{"task", "t"}, {"context", "isolated"}};
  auto first = plan(args);
  auto second = plan(args);
  CHECK(first.child.item_id != second.child.item_id);
  CHECK(first.child.run_id != second.child.run_id);
}

TEST_CASE("a summary keeps the newest turns within its bound, oldest first") {
  std::vector<event_record> chat{
    {"t_1", "chat.c_1", 1, 0, "chat.opened", R"({"chat_id":"c_1"})"},
    turn(2, "first question", "first answer"),
    turn(3, "second question", "second answer"),
    {"t_1", "chat.c_1", 4, 0, "work.enqueued", "{}"},
    turn(5, "third question", "third answer"),
  };
  auto all = delegation::summary_text(chat, 8 * 1024);
  CHECK(all.find("User: first question\nAssistant: first answer") == 0);
  CHECK(all.find("second question") < all.find("third question"));
  // Room for two turns: the oldest goes.
  auto newest = std::string{"User: third question\nAssistant: third answer\n\n"};
  auto before = std::string{"User: second question\nAssistant: second answer\n\n"};
  auto two = delegation::summary_text(chat, newest.size() + before.size() + 1);
  CHECK(two == before + newest);
  // The newest turn alone over the bound is cut to it, on a character boundary.
  std::vector<event_record> long_turn{turn(1, "é" + std::string(100, 'x'), "y")};
  auto cut = delegation::summary_text(long_turn, 7);
  CHECK(cut == "User: "); // (7 bytes would split the é)
  CHECK(delegation::summary_text(long_turn, 20).size() == 20);
  CHECK(delegation::summary_text({}, 1024).empty());
}

TEST_CASE("child counts forget the oldest runs past their bound") {
  delegation::child_counts counts{2};
  counts.add("r_a");
  counts.add("r_a");
  counts.add("r_b");
  CHECK(counts.of("r_a") == 2);
  counts.add("r_c");
  CHECK(counts.of("r_a") == 0);
  CHECK(counts.of("r_b") == 1);
  CHECK(counts.of("r_c") == 1);
}
