// Tests for config/internal_tools.cpp: the registry against the product
// document's table, default grants, channel scope, guidance and schemas.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/internal_tools.hpp"

namespace {

using nlohmann::json;
using voxos::find_internal_tool;
using voxos::internal_tool;
using voxos::internal_tools;
using voxos::risk_level;
using voxos::tool_scope;

const internal_tool& tool_named(std::string_view name) {
  const auto* tool = find_internal_tool(name);
  REQUIRE_MESSAGE(tool != nullptr, name);
  return *tool;
}

/// Every object schema inside `schema` forbids extra properties and
/// requires only properties it declares.
void check_objects_strict(const json& schema, const std::string& where) {
  if (schema.is_object()) {
    if (schema.value("type", "") == "object") {
      INFO(where);
      CHECK(schema.contains("properties"));
      CHECK(schema.value("additionalProperties", true) == false);
      if (schema.contains("required")) {
        REQUIRE(schema["required"].is_array());
        for (const auto& name : schema["required"])
          CHECK(schema["properties"].contains(name.get<std::string>()));
      }
    }
    for (const auto& [key, value] : schema.items())
      check_objects_strict(value, where + "/" + key);
  } else if (schema.is_array()) {
    for (std::size_t idx = 0; idx < schema.size(); ++idx)
      check_objects_strict(schema[idx], where + "/" + std::to_string(idx));
  }
}

/// Every property name declared anywhere in `schema`.
void collect_property_names(const json& schema, std::set<std::string>& out) {
  if (schema.is_object()) {
    if (schema.contains("properties") && schema["properties"].is_object())
      for (const auto& [name, _] : schema["properties"].items())
        out.insert(name);
    for (const auto& [_, value] : schema.items())
      collect_property_names(value, out);
  } else if (schema.is_array()) {
    for (const auto& value : schema)
      collect_property_names(value, out);
  }
}

std::set<std::string> top_level_properties(const internal_tool& tool) {
  std::set<std::string> out;
  const auto schema = json::parse(tool.input_schema);
  for (const auto& [name, _] : schema["properties"].items())
    out.insert(name);
  return out;
}

} // namespace

TEST_CASE("the registry lists the product table in order then docs and time tools") {
  const std::vector<std::string> expected{
    "search_agent_history", "read_agent_history",    "record_agent_improvement",
    "list_agent_memories",  "list_agent_skills",     "get_agent_skill",
    "list_task_plans",      "search_contacts",       "delegate_agent_task",
    "create_agent_memory",  "propose_agent_memory",  "archive_agent_memory",
    "create_user_skill",    "update_user_skill",     "archive_user_skill",
    "create_task_plan",     "create_agent_schedule", "update_task_step",
    "complete_task_plan",   "search_product_docs",   "read_product_doc",
    "get_current_time"};
  std::vector<std::string> names;
  for (const auto& tool : internal_tools())
    names.push_back(tool.name);
  CHECK(names == expected);
}

TEST_CASE("risk and kind follow the product table") {
  struct row {
    const char* name;
    risk_level risk;
    const char* kind;
  };
  const std::vector<row> table{
    {"search_agent_history", risk_level::medium, "Account evidence search"},
    {"read_agent_history", risk_level::medium, "Bounded cited context"},
    {"record_agent_improvement", risk_level::medium, "Policy-assessed knowledge candidate"},
    {"list_agent_memories", risk_level::low, "Read-only"},
    {"list_agent_skills", risk_level::low, "Read-only"},
    {"get_agent_skill", risk_level::low, "Read-only"},
    {"list_task_plans", risk_level::low, "Read-only"},
    {"search_contacts", risk_level::low, "Read-only, denied by default"},
    {"delegate_agent_task", risk_level::medium,
     "Queues a durable child run with a user-allowed model"},
    {"create_agent_memory", risk_level::medium, "Mutating"},
    {"propose_agent_memory", risk_level::medium, "Mutating"},
    {"archive_agent_memory", risk_level::medium, "Mutating"},
    {"create_user_skill", risk_level::medium, "Mutating"},
    {"update_user_skill", risk_level::medium, "Mutating"},
    {"archive_user_skill", risk_level::medium, "Mutating"},
    {"create_task_plan", risk_level::medium, "Mutating"},
    {"create_agent_schedule", risk_level::medium, "Schedules a future turn in the current chat"},
    {"update_task_step", risk_level::medium, "Mutating"},
    {"complete_task_plan", risk_level::medium, "Mutating"},
  };
  for (const auto& r : table) {
    INFO(r.name);
    const auto& tool = tool_named(r.name);
    CHECK(tool.risk == r.risk);
    CHECK(tool.kind == r.kind);
  }
}

TEST_CASE("search_contacts and delegate_agent_task are denied by default") {
  CHECK_FALSE(tool_named("search_contacts").default_granted);
  CHECK_FALSE(tool_named("delegate_agent_task").default_granted);
  CHECK(tool_named("search_contacts").risk == risk_level::low);
}

TEST_CASE("low risk read-only tools are granted by default and medium risk tools are not") {
  for (const auto& tool : internal_tools()) {
    INFO(tool.name);
    if (tool.risk != risk_level::low)
      CHECK_FALSE(tool.default_granted);
    else if (tool.name != "search_contacts")
      CHECK(tool.default_granted);
    CHECK(tool.risk != risk_level::high);
  }
}

TEST_CASE("mutating and read-only flags never overlap and follow the kind column") {
  const std::set<std::string> writers_without_mutating_kind{
    "delegate_agent_task", "create_agent_schedule", "record_agent_improvement"};
  const std::set<std::string> readers_without_read_only_kind{"search_agent_history",
                                                             "read_agent_history"};
  for (const auto& tool : internal_tools()) {
    INFO(tool.name);
    CHECK_FALSE((tool.mutating && tool.read_only));
    CHECK((tool.mutating || tool.read_only));
    bool mutating_kind = tool.kind == "Mutating";
    bool read_only_kind = tool.kind.rfind("Read-only", 0) == 0;
    CHECK(tool.mutating == (mutating_kind || writers_without_mutating_kind.count(tool.name) > 0));
    CHECK(tool.read_only
          == (read_only_kind || readers_without_read_only_kind.count(tool.name) > 0));
  }
}

TEST_CASE("create_agent_schedule alone is limited to interactive text chat") {
  for (const auto& tool : internal_tools()) {
    INFO(tool.name);
    CHECK((tool.scope == tool_scope::interactive_text_only)
          == (tool.name == voxos::internal_names::create_agent_schedule));
  }
}

TEST_CASE("docs and current-time tools are global read-only low risk and granted") {
  for (const auto& tool : internal_tools()) {
    INFO(tool.name);
    bool global = tool.name == "search_product_docs" || tool.name == "read_product_doc"
                  || tool.name == "get_current_time";
    CHECK(tool.global_read_only == global);
    if (global) {
      CHECK(tool.risk == risk_level::low);
      CHECK(tool.read_only);
      CHECK(tool.default_granted);
    }
  }
}

TEST_CASE("every internal tool schema is a strict object schema") {
  for (const auto& tool : internal_tools()) {
    INFO(tool.name);
    CHECK_FALSE(tool.description.empty());
    json schema;
    REQUIRE_NOTHROW(schema = json::parse(tool.input_schema));
    REQUIRE(schema.is_object());
    CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
    CHECK(schema["type"] == "object");
    REQUIRE(schema["properties"].is_object());
    REQUIRE(schema["required"].is_array());
    check_objects_strict(schema, tool.name);
  }
}

TEST_CASE("delegation and scheduling schemas carry no authority fields") {
  CHECK(top_level_properties(tool_named("delegate_agent_task"))
        == std::set<std::string>{"task", "context", "model"});
  CHECK(top_level_properties(tool_named("create_agent_schedule"))
        == std::set<std::string>{"task_name", "instruction", "timing", "timezone"});
  const std::vector<std::string> authority_words{"user",     "agent",      "run",    "session",
                                                 "provider", "credential", "url",    "token",
                                                 "chat",     "owner",      "account"};
  for (auto name : {"delegate_agent_task", "create_agent_schedule"}) {
    std::set<std::string> properties;
    collect_property_names(json::parse(tool_named(name).input_schema), properties);
    for (const auto& property : properties) {
      // Compare whole snake_case words: "instruction" is not "run".
      std::vector<std::string> words;
      std::string word;
      for (char ch : property + "_") {
        if (ch == '_') {
          words.push_back(word);
          word.clear();
        } else {
          word += ch;
        }
      }
      for (const auto& w : words) {
        INFO(name << ": " << property);
        CHECK(std::find(authority_words.begin(), authority_words.end(), w)
              == authority_words.end());
      }
    }
  }
  auto delegate = json::parse(tool_named("delegate_agent_task").input_schema);
  CHECK(delegate["properties"]["context"]["enum"] == json::array({"isolated", "summary"}));
  CHECK(delegate["required"] == json::array({"task", "context"}));
}

TEST_CASE("the schedule timing is one-shot or a fixed interval") {
  auto schema = json::parse(tool_named("create_agent_schedule").input_schema);
  const auto& choices = schema["properties"]["timing"]["oneOf"];
  REQUIRE(choices.size() == 2);
  CHECK(choices[0]["properties"]["kind"]["const"] == "once");
  CHECK(choices[1]["properties"]["kind"]["const"] == "interval");
  CHECK(choices[0]["required"] == json::array({"kind", "at"}));
  // An interval counts seconds, from one to ten years of 365.25 days.
  const auto& every = choices[1]["properties"]["every_seconds"];
  CHECK(every["type"] == "integer");
  CHECK(every["minimum"] == 1);
  CHECK(every["maximum"] == 315'576'000);
  CHECK(choices[1]["required"] == json::array({"kind", "every_seconds"}));
  CHECK(choices[1]["properties"].contains("starts_at"));
  CHECK_FALSE(choices[1]["properties"].contains("every_minutes"));
  for (const auto& choice : choices)
    CHECK(choice["additionalProperties"] == false);
}

TEST_CASE("guidance tools carry the product document guidance") {
  const auto& contacts = tool_named("search_contacts").description;
  for (auto phrase :
       {"not_found", "unique", "ambiguous", "search first", "choose", "only when no match exists"})
    CHECK_MESSAGE(contacts.find(phrase) != std::string::npos, phrase);

  const auto& delegate = tool_named("delegate_agent_task").description;
  for (auto phrase : {"independent multi-step work", "already available", "tool catalog",
                      "single-action", "isolated", "summary", "allowlist"})
    CHECK_MESSAGE(delegate.find(phrase) != std::string::npos, phrase);

  const auto& schedule = tool_named("create_agent_schedule").description;
  for (auto phrase : {"reminders", "future checks", "monitoring", "follow-ups", "one-shot",
                      "fixed interval", "this chat", "timezone", "local wall-clock",
                      "whole number of days", "same local time across daylight-saving changes"})
    CHECK_MESSAGE(schedule.find(phrase) != std::string::npos, phrase);

  const auto& plan = tool_named("create_task_plan").description;
  CHECK(plan.find("planning record") != std::string::npos);
  CHECK(plan.find("does not schedule") != std::string::npos);
}

TEST_CASE("find_internal_tool answers exact names only") {
  CHECK(find_internal_tool("search_contacts") != nullptr);
  CHECK(find_internal_tool("Search_Contacts") == nullptr);
  CHECK(find_internal_tool("search_contact") == nullptr);
  CHECK(find_internal_tool("") == nullptr);
  for (auto name :
       {voxos::internal_names::search_contacts, voxos::internal_names::delegate_agent_task,
        voxos::internal_names::create_agent_schedule, voxos::internal_names::create_task_plan})
    CHECK(find_internal_tool(name) != nullptr);
}

TEST_CASE("internal tool names are unique") {
  std::set<std::string> seen;
  for (const auto& tool : internal_tools())
    CHECK_MESSAGE(seen.insert(tool.name).second, tool.name);
}
