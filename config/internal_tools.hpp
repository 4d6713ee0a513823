// The internal tool registry: the built-in tools over Voxos-owned agent data,
// as the product document's table lists them, plus the read-only product
// documentation tools and the current-time tool. CAF-free, immutable.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/tool_types.hpp"

namespace voxos {

/// Channels an internal tool is restricted to, beyond grants.
enum class tool_scope : uint8_t {
  any,                   ///< wherever the agent's grants allow it
  interactive_text_only, ///< only an interactive, authenticated text-chat turn
                         ///< (create_agent_schedule)
  /// Only an authenticated owner conversation: owner text chat and owner
  /// in-app voice (the history tools). A phone caller's number, even an
  /// admin contact's, does not authenticate the owner.
  owner_conversation_only,
};

struct internal_tool {
  std::string name;
  risk_level risk = risk_level::medium;
  std::string kind;       ///< the product document's "Kind" column
  bool mutating = false;  ///< changes stored data (never offered to messaging media)
  bool read_only = false; ///< safe to run concurrently in a wave
  /// Granted without an explicit decision. search_contacts and
  /// delegate_agent_task are denied by default; see the README of
  /// actors/tenant for the rule each default follows.
  bool default_granted = false;
  tool_scope scope = tool_scope::any;
  /// Product-docs and current-time tools: safe for every channel, including
  /// inbound messaging intersections.
  bool global_read_only = false;
  std::string description;  ///< model-facing guidance
  std::string input_schema; ///< JSON Schema (draft 2020-12) as text
};

/// Every internal tool, in the product document's order.
const std::vector<internal_tool>& internal_tools();

/// One tool by exact name, or nullptr.
const internal_tool* find_internal_tool(std::string_view name);

/// Names the policy refers to.
namespace internal_names {
inline constexpr std::string_view search_contacts = "search_contacts";
inline constexpr std::string_view delegate_agent_task = "delegate_agent_task";
inline constexpr std::string_view create_agent_schedule = "create_agent_schedule";
inline constexpr std::string_view create_task_plan = "create_task_plan";
inline constexpr std::string_view tool_search = "tool_search";
inline constexpr std::string_view tool_describe = "tool_describe";
inline constexpr std::string_view tool_call = "tool_call";
inline constexpr std::string_view use_browser = "use_browser";
} // namespace internal_names

} // namespace voxos
