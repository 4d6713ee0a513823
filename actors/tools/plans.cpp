#include "actors/tools/plans.hpp"

#include <algorithm>

#include "actors/tools/json_fields.hpp"
#include "storage/digest.hpp"

namespace voxos::plans {

using json = nlohmann::json;

namespace {

constexpr std::string_view ev_created = "plan.created";
constexpr std::string_view ev_step = "plan.step_updated";
constexpr std::string_view ev_completed = "plan.completed";

tool_outcome with_write(json answer, std::string_view type, const json& data) {
  auto out = tool_outcome::ok(std::move(answer));
  out.writes.push_back({std::string{stream}, {{std::string{type}, data.dump()}}});
  return out;
}

/// The agent's own plan, or the error the model sees.
const plan* own_plan(const state& st, const tool_context& ctx, const json& args,
                     tool_outcome& refused) {
  auto found = st.plans.find(fields::text(args, "plan_id"));
  if (found == st.plans.end() || found->second.agent_id != ctx.agent_id) {
    refused = tool_outcome::error("not_found", "this agent has no task plan with that ID.");
    return nullptr;
  }
  if (found->second.completed) {
    refused = tool_outcome::error("conflict", "that task plan is already complete.");
    return nullptr;
  }
  return &found->second;
}

tool_outcome create(const state& st, const tool_context& ctx, const json& args, const limits& lim) {
  auto open = std::count_if(st.plans.begin(), st.plans.end(), [&](const auto& entry) {
    return entry.second.agent_id == ctx.agent_id && !entry.second.completed;
  });
  if (static_cast<std::size_t>(open) >= lim.open_plans_per_agent)
    return tool_outcome::error("too_many_open_plans",
                               "this agent already has " + std::to_string(lim.open_plans_per_agent)
                                 + " open task plans; complete some first. Nothing was stored.");
  plan p;
  p.id = "plan_" + digest::random_hex(8);
  p.agent_id = ctx.agent_id;
  p.run_id = ctx.run_id;
  p.chat_id = ctx.chat_id;
  p.title = args.at("title").get<std::string>();
  for (const auto& title : args.at("steps"))
    p.steps.push_back({title.get<std::string>(), "pending", "", ctx.now_us});
  p.created_us = ctx.now_us;
  auto doc = to_json(p);
  json answer{{"plan", doc},
              {"note", "A plan is a record only: nothing is scheduled and nothing is sent."}};
  return with_write(std::move(answer), ev_created, doc);
}

tool_outcome update_step(const state& st, const tool_context& ctx, const json& args) {
  tool_outcome refused;
  const auto* p = own_plan(st, ctx, args, refused);
  if (p == nullptr)
    return refused;
  auto index = args.at("step_index").get<std::size_t>();
  if (index >= p->steps.size())
    return tool_outcome::error("not_found", "that task plan has " + std::to_string(p->steps.size())
                                              + " steps, numbered from 0.");
  json data{{"plan_id", p->id},
            {"step_index", index},
            {"status", args.at("status")},
            {"note", fields::text(args, "note")},
            {"updated_us", ctx.now_us}};
  auto updated = *p;
  updated.steps[index].status = args.at("status").get<std::string>();
  updated.steps[index].note = fields::text(args, "note");
  return with_write({{"plan", to_json(updated)}}, ev_step, data);
}

tool_outcome complete(const state& st, const tool_context& ctx, const json& args) {
  tool_outcome refused;
  const auto* p = own_plan(st, ctx, args, refused);
  if (p == nullptr)
    return refused;
  json data{
    {"plan_id", p->id}, {"summary", fields::text(args, "summary")}, {"completed_us", ctx.now_us}};
  auto done = *p;
  done.completed = true;
  done.summary = fields::text(args, "summary");
  return with_write({{"plan", to_json(done)}}, ev_completed, data);
}

tool_outcome list(const state& st, const tool_context& ctx, const json& args) {
  auto which = args.contains("status") ? args["status"].get<std::string>() : std::string{"open"};
  auto limit = args.contains("limit") ? args["limit"].get<std::size_t>() : std::size_t{20};
  std::vector<const plan*> mine;
  for (const auto& [id, p] : st.plans)
    if (p.agent_id == ctx.agent_id && (which == "all" || (which == "completed") == p.completed))
      mine.push_back(&p);
  std::sort(mine.begin(), mine.end(), [](const plan* a, const plan* b) {
    return a->created_us != b->created_us ? a->created_us > b->created_us : a->id < b->id;
  });
  json items = json::array();
  for (std::size_t idx = 0; idx < mine.size() && idx < limit; ++idx)
    items.push_back(to_json(*mine[idx]));
  return tool_outcome::ok({{"plans", std::move(items)}, {"total", mine.size()}});
}

} // namespace

json to_json(const plan& p) {
  json steps = json::array();
  for (std::size_t idx = 0; idx < p.steps.size(); ++idx)
    steps.push_back({{"index", idx},
                     {"title", p.steps[idx].title},
                     {"status", p.steps[idx].status},
                     {"note", p.steps[idx].note}});
  return {{"plan_id", p.id},
          {"agent_id", p.agent_id},
          {"run_id", p.run_id},
          {"chat_id", p.chat_id},
          {"title", p.title},
          {"steps", std::move(steps)},
          {"status", p.completed ? "completed" : "open"},
          {"summary", p.summary},
          {"created_us", p.created_us},
          {"completed_us", p.completed_us}};
}

status apply(state& st, std::string_view type, const json& data) {
  auto corrupt = status::error(errc::corrupt_data, "a plan event does not decode");
  if (!data.is_object())
    return corrupt;
  if (type == ev_created) {
    plan p;
    p.id = fields::text(data, "plan_id");
    p.agent_id = fields::text(data, "agent_id");
    p.run_id = fields::text(data, "run_id");
    p.chat_id = fields::text(data, "chat_id");
    p.title = fields::text(data, "title");
    p.created_us = fields::integer(data, "created_us", -1);
    auto steps = data.find("steps");
    if (p.id.empty() || p.agent_id.empty() || steps == data.end() || !steps->is_array())
      return corrupt;
    for (const auto& s : *steps)
      p.steps.push_back({fields::text(s, "title"), fields::text(s, "status"),
                         fields::text(s, "note"), p.created_us});
    st.plans[p.id] = std::move(p);
    return status::ok();
  }
  auto found = st.plans.find(fields::text(data, "plan_id"));
  if (found == st.plans.end())
    return corrupt;
  if (type == ev_step) {
    auto index = fields::integer(data, "step_index", -1);
    if (index < 0 || static_cast<std::size_t>(index) >= found->second.steps.size())
      return corrupt;
    auto& s = found->second.steps[static_cast<std::size_t>(index)];
    s.status = fields::text(data, "status");
    s.note = fields::text(data, "note");
    s.updated_us = fields::integer(data, "updated_us", -1);
    return status::ok();
  }
  if (type == ev_completed) {
    found->second.completed = true;
    found->second.summary = fields::text(data, "summary");
    found->second.completed_us = fields::integer(data, "completed_us", -1);
    return status::ok();
  }
  return corrupt;
}

bool handles(std::string_view tool_name) {
  return tool_name == "create_task_plan" || tool_name == "update_task_step"
         || tool_name == "complete_task_plan" || tool_name == "list_task_plans";
}

tool_outcome call(const state& st, const tool_context& ctx, std::string_view tool_name,
                  const json& args, const limits& lim) {
  if (tool_name == "create_task_plan")
    return create(st, ctx, args, lim);
  if (tool_name == "update_task_step")
    return update_step(st, ctx, args);
  if (tool_name == "complete_task_plan")
    return complete(st, ctx, args);
  if (tool_name == "list_task_plans")
    return list(st, ctx, args);
  return tool_outcome::error("unknown_tool", "this tool is not a task-plan tool.");
}

} // namespace voxos::plans
