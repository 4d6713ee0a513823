#include "actors/tools/delegation.hpp"

#include <algorithm>
#include <optional>

#include "transport/json_text.hpp"

namespace voxos::delegation {

using json = nlohmann::json;

namespace {

/// The arguments the registry schema allows; anything else is refused.
constexpr std::string_view accepted[] = {"task", "context", "model"};

tool_outcome invalid(std::string message) {
  return tool_outcome::error("invalid_arguments", std::move(message));
}

/// The argument `key` when it is a non-empty UTF-8 string; else empty.
std::string text_of(const json& args, const char* key) {
  auto found = args.find(key);
  if (found == args.end() || !found->is_string())
    return {};
  const auto& text = found->get_ref<const std::string&>();
  return is_utf8(text) ? text : std::string{};
}

/// Checks the arguments' shape (the schema did first): refusal or none.
std::optional<tool_outcome> check_shape(const json& args) {
  if (!args.is_object())
    return invalid("arguments: expected an object with task and context.");
  for (const auto& member : args.items())
    if (std::find(std::begin(accepted), std::end(accepted), member.key()) == std::end(accepted))
      return invalid("arguments: only task, context and model are accepted; the child's user, "
                     "agent, run, chat and credentials come from this run.");
  if (text_of(args, "task").empty())
    return invalid("task: expected a non-empty string.");
  auto context = text_of(args, "context");
  if (context != "isolated" && context != "summary")
    return invalid("context: expected isolated or summary.");
  if (args.contains("model") && text_of(args, "model").empty())
    return invalid("model: expected a non-empty string.");
  return std::nullopt;
}

} // namespace

plan plan_child(const subagent_allowlist& allowed, const tool_context& ctx, const json& args,
                std::size_t children_so_far, const limits& lim) {
  plan out;
  auto refuse = [&out](tool_outcome why) {
    out.refusal = std::move(why);
    return out;
  };
  // The calling run: a live run with its chat, never a child itself.
  if (ctx.chan == channel::subagent)
    return refuse(tool_outcome::error("not_inherited", "a child run cannot delegate further."));
  if (ctx.run_id.empty() || ctx.chat_id.empty() || ctx.agent_id.empty())
    return refuse(
      tool_outcome::error("unavailable", "delegation needs a run in a chat to return to."));
  if (auto bad = check_shape(args))
    return refuse(std::move(*bad));
  // The model, resolved to the one provider that lists it.
  std::string provider;
  auto model = text_of(args, "model");
  if (!model.empty()) {
    std::size_t listing = 0;
    for (const auto& [name, models] : allowed.providers)
      if (std::find(models.begin(), models.end(), model) != models.end()) {
        provider = name;
        ++listing;
      }
    if (listing == 0)
      return refuse(tool_outcome::error(
        "model_not_allowed", "model: not in the user's subagent model allowlist; omit it to use "
                             "the default model."));
    if (listing > 1)
      return refuse(tool_outcome::error(
        "model_ambiguous", "model: more than one provider of the user's subagent model "
                           "allowlist lists it; omit it or ask the user to keep it under one."));
  }
  if (children_so_far >= lim.children_per_run)
    return refuse(tool_outcome::error("too_many_children",
                                      "this run has queued " + std::to_string(lim.children_per_run)
                                        + " child runs already (tools.delegations_per_run)."));
  // The child: ids made here, authority from the context.
  auto& child = out.child;
  child.item_id = work::child_item_id();
  child.k = work::kind::child_run;
  child.agent_id = ctx.agent_id;
  child.chat_id = ctx.chat_id;
  child.run_id = work::run_id_of(child.item_id);
  child.text = text_of(args, "task");
  child.enqueued_us = ctx.now_us;
  child.parent_run_id = ctx.run_id;
  child.context = text_of(args, "context");
  child.provider = std::move(provider);
  child.model = std::move(model);
  return out;
}

tool_outcome queued(const work::item& child) {
  json out{{"status", "queued"},
           {"child_run_id", child.run_id},
           {"item_id", child.item_id},
           {"context", child.context},
           {"message", "The child run is queued. Its result will arrive as a later turn of this "
                       "chat; do not wait for it or delegate the same task again."}};
  if (!child.model.empty()) {
    out["provider"] = child.provider;
    out["model"] = child.model;
  }
  return tool_outcome::ok(std::move(out));
}

std::string summary_text(const std::vector<event_record>& chat_events, std::size_t max_bytes) {
  // Newest first, each turn whole while it fits; the newest alone is cut.
  std::vector<std::string> kept;
  std::size_t used = 0;
  for (auto pos = chat_events.rbegin(); pos != chat_events.rend(); ++pos) {
    if (pos->type != "turn.reported")
      continue;
    auto doc = json::parse(pos->data, nullptr, false);
    if (!doc.is_object())
      continue;
    auto block = "User: " + doc.value("user", std::string{})
                 + "\nAssistant: " + doc.value("assistant", std::string{}) + "\n\n";
    if (used + block.size() > max_bytes) {
      if (kept.empty())
        kept.push_back(utf8_prefix(block, max_bytes));
      break;
    }
    used += block.size();
    kept.push_back(std::move(block));
  }
  std::string out;
  for (auto pos = kept.rbegin(); pos != kept.rend(); ++pos)
    out += *pos;
  return out;
}

std::size_t child_counts::of(const std::string& run_id) const {
  auto found = counts_.find(run_id);
  return found == counts_.end() ? 0 : found->second;
}

void child_counts::add(const std::string& run_id) {
  auto [pos, fresh] = counts_.try_emplace(run_id, 0);
  ++pos->second;
  if (!fresh)
    return;
  order_.push_back(run_id);
  while (order_.size() > max_runs_) {
    counts_.erase(order_.front());
    order_.pop_front();
  }
}

} // namespace voxos::delegation
