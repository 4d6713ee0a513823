// Task plans: create_task_plan, update_task_step, complete_task_plan,
// list_task_plans. CAF-free.
//
// A plan is a planning record of one agent: an ordered list of steps with
// statuses. It schedules nothing and sends nothing: no timer, no
// notification, no message leaves because of it. Plans are the agent's
// (another agent's plan id, or another tenant's, is not_found); the run and
// chat that made it come from the execution context.
//
// State changes only through events on the tenant's stream "plans".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tools/tool_context.hpp"
#include "messages/status.hpp"

namespace voxos::plans {

inline constexpr std::string_view stream = "plans";

/// Open plans one agent may hold (tools.max_open_plans).
struct limits {
  std::size_t open_plans_per_agent = 200;
};

struct step {
  std::string title;
  std::string status = "pending"; ///< pending | in_progress | done | skipped
  std::string note;
  int64_t updated_us = 0;
};

struct plan {
  std::string id;
  std::string agent_id;
  std::string run_id;
  std::string chat_id;
  std::string title;
  std::vector<step> steps;
  bool completed = false;
  std::string summary;
  int64_t created_us = 0;
  int64_t completed_us = 0;
};

struct state {
  std::map<std::string, plan> plans; ///< by id
};

status apply(state& st, std::string_view type, const nlohmann::json& data);

bool handles(std::string_view tool_name);

tool_outcome call(const state& st, const tool_context& ctx, std::string_view tool_name,
                  const nlohmann::json& args, const limits& lim);

nlohmann::json to_json(const plan& p);

} // namespace voxos::plans
