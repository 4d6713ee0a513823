// The internal tool registry. Rows follow the table under "Internal Tools" in
// the product document "MCP And Tools", in its order; the product
// documentation tools and the current-time tool follow.
//
// Every input schema is JSON Schema draft 2020-12, an object with
// "additionalProperties": false, naming only what the model may supply.
// Tenant, owner, agent, run, chat and credential authority always come from
// the trusted execution context, never from model arguments.
#include "config/internal_tools.hpp"

#include <initializer_list>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace voxos {

namespace {

internal_tool make_tool(std::string name, risk_level risk, std::string kind) {
  internal_tool out;
  out.name = std::move(name);
  out.risk = risk;
  out.kind = std::move(kind);
  return out;
}

/// Low-risk tools over the agent's own data: granted without a decision.
/// A strict draft 2020-12 object schema: these properties, these required,
/// nothing else. `properties` is a JSON object's text.
std::string object_schema(std::string_view properties,
                          std::initializer_list<const char*> required) {
  auto doc = nlohmann::ordered_json::object();
  doc["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  doc["type"] = "object";
  doc["properties"] = nlohmann::ordered_json::parse(properties);
  doc["required"] = nlohmann::ordered_json::array();
  for (const auto* name : required)
    doc["required"].push_back(name);
  doc["additionalProperties"] = false;
  return doc.dump(2);
}

/// The input of list tools: an optional page size and the previous page's cursor.
const char* const paging_properties = R"json({
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "cursor": {"type": "string", "maxLength": 256, "description": "From the previous page."}
  })json";

internal_tool low_read_only(std::string name) {
  auto out = make_tool(std::move(name), risk_level::low, "Read-only");
  out.read_only = true;
  out.default_granted = true;
  return out;
}

/// Medium-risk writes: the owner toggles them on the Tools page.
internal_tool medium_mutating(std::string name, std::string kind = "Mutating") {
  auto out = make_tool(std::move(name), risk_level::medium, std::move(kind));
  out.mutating = true;
  return out;
}

/// Product docs and current time: global data, safe on every channel.
internal_tool global_read_only(std::string name, std::string kind) {
  auto out = make_tool(std::move(name), risk_level::low, std::move(kind));
  out.read_only = true;
  out.default_granted = true;
  out.global_read_only = true;
  return out;
}

std::vector<internal_tool> build_registry() {
  std::vector<internal_tool> out;
  out.reserve(22);

  // -- Account history and knowledge writes ---------------------------------
  {
    auto tool = make_tool("search_agent_history", risk_level::medium, "Account evidence search");
    tool.read_only = true;
    tool.scope = tool_scope::owner_conversation_only;
    tool.description =
      "Search bounded retained evidence from this account's earlier conversations and runs. "
      "Returns matching excerpts with evidence IDs to pass to read_agent_history.";
    tool.input_schema = object_schema(R"json({
    "query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "What to look for."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 20, "description": "Maximum excerpts (default 5)."}
  })json",
                                      {"query"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = make_tool("read_agent_history", risk_level::medium, "Bounded cited context");
    tool.read_only = true;
    tool.scope = tool_scope::owner_conversation_only;
    tool.description =
      "Read the bounded context around one evidence ID returned by search_agent_history, "
      "with a citation to the conversation or run it came from.";
    tool.input_schema = object_schema(R"json({
    "evidence_id": {"type": "string", "minLength": 1, "maxLength": 128, "description": "An evidence ID from search_agent_history."}
  })json",
                                      {"evidence_id"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("record_agent_improvement", "Policy-assessed knowledge candidate");
    tool.description =
      "Submit a memory, skill or diagnostic candidate learned in this conversation. The "
      "account's knowledge policy assesses it; it does not become active by itself, and "
      "only the owner can approve it.";
    tool.input_schema = object_schema(R"json({
    "kind": {"type": "string", "enum": ["memory", "skill", "diagnostic"]},
    "title": {"type": "string", "minLength": 1, "maxLength": 200},
    "content": {"type": "string", "minLength": 1, "maxLength": 8000, "description": "The candidate itself."},
    "rationale": {"type": "string", "maxLength": 2000, "description": "Why it would help future runs."}
  })json",
                                      {"kind", "content"});
    out.push_back(std::move(tool));
  }

  // -- Low-risk reads over the agent's own data -----------------------------
  {
    auto tool = low_read_only("list_agent_memories");
    tool.description = "List this agent's active memories, newest first.";
    tool.input_schema = object_schema(paging_properties, {});
    out.push_back(std::move(tool));
  }
  {
    auto tool = low_read_only("list_agent_skills");
    tool.description = "List the skills available to this agent with slug, name and summary.";
    tool.input_schema = object_schema(paging_properties, {});
    out.push_back(std::move(tool));
  }
  {
    auto tool = low_read_only("get_agent_skill");
    tool.description = "Read one skill's full instructions by its slug from list_agent_skills.";
    tool.input_schema = object_schema(R"json({
    "slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"}
  })json",
                                      {"slug"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = low_read_only("list_task_plans");
    tool.description = "List this agent's task plans with their steps and status.";
    tool.input_schema = object_schema(R"json({
    "status": {"type": "string", "enum": ["open", "completed", "all"]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50}
  })json",
                                      {});
    out.push_back(std::move(tool));
  }
  {
    // Low risk yet denied by default: a phone integration may add the grant
    // when no explicit decision exists; an explicit denial is never replaced.
    auto tool = make_tool("search_contacts", risk_level::low, "Read-only, denied by default");
    tool.read_only = true;
    tool.default_granted = false;
    tool.description =
      "Search the authenticated user's saved contacts by name or number. Returns a typed "
      "resolution, not_found, unique or ambiguous, with contact IDs, display names and phone "
      "numbers only (no notes, email addresses or admin flags). When the user names a person, "
      "search first; proceed with a unique match; ask the user to choose between ambiguous "
      "matches; ask for a number or offer to create a contact only when no match exists.";
    tool.input_schema = object_schema(R"json({
    "query": {"type": "string", "minLength": 1, "maxLength": 200, "description": "A name, part of a name, or a phone number."}
  })json",
                                      {"query"});
    out.push_back(std::move(tool));
  }

  // -- Delegation ------------------------------------------------------------
  {
    // Denied by default: needs an explicit internal tool grant. A child run
    // never inherits this tool, so delegation cannot recurse.
    auto tool = medium_mutating("delegate_agent_task",
                                "Queues a durable child run with a user-allowed model");
    tool.default_granted = false;
    tool.description =
      "Queue a durable child run for independent multi-step work. Do not use it to reach a "
      "tool that is already available in this run: call a direct tool, or use the run's tool "
      "catalog, for ordinary single-action lookups. Give a scoped task and a context: isolated "
      "(the child sees only the task) or summary (the child also gets this conversation's "
      "recent turns); optionally name a model from the user's subagent allowlist. The child "
      "cannot use tools this run lacks and cannot delegate further. You get the child's id at "
      "once; its result arrives as a later turn of this chat.";
    tool.input_schema = object_schema(R"json({
    "task": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "The scoped task, complete enough to run without this conversation."},
    "context": {"type": "string", "enum": ["isolated", "summary"]},
    "model": {"type": "string", "minLength": 1, "maxLength": 128, "description": "A model from the user's subagent allowlist; omit for the default."}
  })json",
                                      {"task", "context"});
    out.push_back(std::move(tool));
  }

  // -- Legacy memory and skill writes (candidates under the same policy) -----
  {
    auto tool = medium_mutating("create_agent_memory");
    tool.description =
      "Submit a new memory for this agent. It is a candidate under the account's knowledge "
      "policy and may need owner review before it becomes active.";
    tool.input_schema = object_schema(R"json({
    "content": {"type": "string", "minLength": 1, "maxLength": 2000},
    "title": {"type": "string", "minLength": 1, "maxLength": 200}
  })json",
                                      {"content"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("propose_agent_memory");
    tool.description =
      "Propose a memory for the owner to review in Knowledge, when the user has not clearly "
      "asked you to remember it.";
    tool.input_schema = object_schema(R"json({
    "content": {"type": "string", "minLength": 1, "maxLength": 2000},
    "reason": {"type": "string", "maxLength": 1000}
  })json",
                                      {"content"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("archive_agent_memory");
    tool.description =
      "Archive one of this agent's memories by its ID from list_agent_memories. Archived "
      "memories stop being used but are kept for review.";
    tool.input_schema = object_schema(R"json({
    "memory_id": {"type": "string", "minLength": 1, "maxLength": 128}
  })json",
                                      {"memory_id"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("create_user_skill");
    tool.description =
      "Draft a new user skill: named, reusable instructions. It is saved as a draft; the "
      "owner activates skills in Knowledge.";
    tool.input_schema = object_schema(R"json({
    "name": {"type": "string", "minLength": 1, "maxLength": 100},
    "description": {"type": "string", "maxLength": 500},
    "instructions": {"type": "string", "minLength": 1, "maxLength": 20000}
  })json",
                                      {"name", "instructions"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("update_user_skill");
    tool.description =
      "Propose a revision of a user skill by slug. The revision stays a draft until the owner "
      "confirms it in Knowledge.";
    tool.input_schema = R"json({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"},
    "description": {"type": "string", "maxLength": 500},
    "instructions": {"type": "string", "minLength": 1, "maxLength": 20000}
  },
  "required": ["slug"],
  "minProperties": 2,
  "additionalProperties": false
})json";
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("archive_user_skill");
    tool.description =
      "Archive a user skill by slug. The owner can restore archived skills in Knowledge.";
    tool.input_schema = object_schema(R"json({
    "slug": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,63}$"}
  })json",
                                      {"slug"});
    out.push_back(std::move(tool));
  }

  // -- Planning and scheduling ------------------------------------------------
  {
    auto tool = medium_mutating("create_task_plan");
    tool.description =
      "Record a plan for multi-step work as an ordered list of steps. A plan is a planning "
      "record only: it does not schedule execution, reminders or notifications and sends "
      "nothing.";
    tool.input_schema = object_schema(R"json({
    "title": {"type": "string", "minLength": 1, "maxLength": 200},
    "steps": {"type": "array", "minItems": 1, "maxItems": 50, "items": {"type": "string", "minLength": 1, "maxLength": 500}}
  })json",
                                      {"title", "steps"});
    out.push_back(std::move(tool));
  }
  {
    // Authority (owner, agent, run, chat) comes from the authenticated run
    // context; scheduled runs, webhooks, worker runs and subagents never see
    // this tool (scope below).
    auto tool =
      medium_mutating("create_agent_schedule", "Schedules a future turn in the current chat");
    tool.scope = tool_scope::interactive_text_only;
    tool.description =
      "Schedule a future turn in this chat, only for explicit reminders, future checks, "
      "monitoring and follow-ups. The schedule is one-shot or repeats at a fixed interval, and "
      "each future response returns to this chat; it cannot target another chat or a "
      "messaging sender. Supply only a task name, the instruction for the future turn, the "
      "timing and an IANA timezone. Times are local wall-clock times in that timezone "
      "(YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS, no offset), in the future and at most ten "
      "years ahead. A one-shot runs once at `at`. A fixed interval repeats every "
      "`every_seconds` (by default at least one minute, at most ten years), first at "
      "`starts_at` or, without it, one interval from now. An interval that is a whole number "
      "of days (86400, 604800) keeps the same local time across daylight-saving changes; any "
      "other interval counts elapsed time. A local time skipped by a daylight-saving change "
      "runs at the shifted time, and a repeated one runs once, at its first occurrence. Turns "
      "missed while the service was unavailable run once when it returns.";
    tool.input_schema = object_schema(R"json({
    "task_name": {"type": "string", "minLength": 1, "maxLength": 100},
    "instruction": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "What the future turn should do."},
    "timing": {"oneOf": [{"type": "object", "properties": {"kind": {"const": "once"}, "at": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?$", "description": "Local date and time of the turn."}}, "required": ["kind", "at"], "additionalProperties": false}, {"type": "object", "properties": {"kind": {"const": "interval"}, "every_seconds": {"type": "integer", "minimum": 1, "maximum": 315576000, "description": "Seconds between turns; a whole number of days keeps the local time."}, "starts_at": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2})?$", "description": "Local date and time of the first turn."}}, "required": ["kind", "every_seconds"], "additionalProperties": false}]},
    "timezone": {"type": "string", "minLength": 1, "maxLength": 64, "description": "IANA timezone, e.g. Europe/London."}
  })json",
                                      {"task_name", "instruction", "timing", "timezone"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("update_task_step");
    tool.description = "Set the status of one step of a task plan, with an optional short note.";
    tool.input_schema = object_schema(R"json({
    "plan_id": {"type": "string", "minLength": 1, "maxLength": 128},
    "step_index": {"type": "integer", "minimum": 0, "maximum": 49},
    "status": {"type": "string", "enum": ["pending", "in_progress", "done", "skipped"]},
    "note": {"type": "string", "maxLength": 1000}
  })json",
                                      {"plan_id", "step_index", "status"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = medium_mutating("complete_task_plan");
    tool.description = "Mark a task plan complete, with an optional summary of the outcome.";
    tool.input_schema = object_schema(R"json({
    "plan_id": {"type": "string", "minLength": 1, "maxLength": 128},
    "summary": {"type": "string", "maxLength": 2000}
  })json",
                                      {"plan_id"});
    out.push_back(std::move(tool));
  }

  // -- Global read-only: product documentation and current time -------------
  {
    auto tool = global_read_only("search_product_docs", "Read-only, global product docs");
    tool.description =
      "Search the Voxos product documentation. Returns matching passages with document IDs "
      "for read_product_doc. The docs are global; they hold no user data.";
    tool.input_schema = object_schema(R"json({
    "query": {"type": "string", "minLength": 1, "maxLength": 300},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10}
  })json",
                                      {"query"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = global_read_only("read_product_doc", "Read-only, global product docs");
    tool.description = "Read one Voxos product documentation page by its document ID.";
    tool.input_schema = object_schema(R"json({
    "doc_id": {"type": "string", "pattern": "^[a-z0-9][a-z0-9/_-]{0,127}$"}
  })json",
                                      {"doc_id"});
    out.push_back(std::move(tool));
  }
  {
    auto tool = global_read_only("get_current_time", "Read-only, current time");
    tool.description =
      "Return the current date and time in the given IANA timezone, or in UTC when none is "
      "given.";
    tool.input_schema = object_schema(R"json({
    "timezone": {"type": "string", "minLength": 1, "maxLength": 64, "description": "IANA timezone, e.g. America/New_York."}
  })json",
                                      {});
    out.push_back(std::move(tool));
  }
  return out;
}

} // namespace

const std::vector<internal_tool>& internal_tools() {
  static const std::vector<internal_tool> registry = build_registry();
  return registry;
}

const internal_tool* find_internal_tool(std::string_view name) {
  for (const auto& tool : internal_tools())
    if (tool.name == name)
      return &tool;
  return nullptr;
}

} // namespace voxos
