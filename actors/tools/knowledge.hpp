// Knowledge: an agent's memories, the tenant's user skills, and the
// candidates that are the only way a model changes either. CAF-free.
//
// Every model-facing write (record_agent_improvement and the legacy
// create_agent_memory, propose_agent_memory, archive_agent_memory,
// create_user_skill, update_user_skill, archive_user_skill) submits a
// candidate. Policy assesses it (assess_candidate: credential-like content,
// duplicates, bounds) and it is applied at once only under the account's
// automatic-saving consent, only when a model in a run submitted it, and
// only for a new memory, a memory archive, or what record_agent_improvement
// submits (a memory, skill or diagnostic); a proposal (propose_agent_memory),
// a drafted skill (create_user_skill) and changes to existing skills always
// wait for the owner's review, as their tools tell the model. Only the owner's review (HTTP API,
// voxosctl) confirms or rejects: no tool can. What the model supplies about
// provenance is never read: a candidate's origin (run, chat, agent, tool,
// source) comes from the execution context.
//
// The node's own Memory MCP submits inferred proposals (source memory_mcp:
// never applied without review, whatever the consent) and its Skill MCP
// drafts (source skill_mcp: the same).
//
// Skills: a slug is never overwritten. Creating one that exists (active,
// archived, or pending as a candidate) is a conflict; an update keeps the
// previous version as an archived copy; archiving keeps the skill.
//
// State changes only through events on the tenant's stream "knowledge",
// applied in order by apply(); the tool desk appends them before it answers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tools/tool_context.hpp"
#include "messages/status.hpp"

namespace voxos::knowledge {

inline constexpr std::string_view stream = "knowledge";

/// Bounds (tools.* in the node's config).
struct limits {
  std::size_t pending_candidates = 1000; ///< waiting for review, per tenant
  std::size_t memories_per_agent = 5000; ///< active memories of one agent
  std::size_t skills = 1000;             ///< skills of one tenant, archived included
};

struct memory {
  std::string id;
  std::string agent_id;
  std::string title;
  std::string content;
  bool archived = false;
  std::string candidate_id; ///< the candidate it came from ("" when the owner wrote it)
  int64_t created_us = 0;
  int64_t archived_us = 0;
};

struct skill_version {
  int version = 1;
  std::string name;
  std::string description;
  std::string instructions;
  std::string candidate_id;
  int64_t saved_us = 0;
};

struct skill {
  std::string slug;
  skill_version current;
  bool archived = false;
  std::vector<skill_version> archived_copies; ///< earlier versions, oldest first
};

/// What a candidate asks for.
enum class change : uint8_t {
  memory,         ///< a new memory of the agent
  memory_archive, ///< archive one of the agent's memories (target: its id)
  skill,          ///< a new user skill (target: its slug)
  skill_update,   ///< a new version of a skill (target: its slug)
  skill_archive,  ///< archive a skill (target: its slug)
  diagnostic,     ///< a finding for the owner; applied, it is kept as a record
};

/// Who submitted it.
enum class source : uint8_t { model, memory_mcp, skill_mcp };

enum class review : uint8_t { pending, applied, confirmed, rejected };

struct candidate {
  std::string id;
  change kind = change::memory;
  source from = source::model;
  review state = review::pending;
  std::string agent_id;
  std::string run_id;
  std::string chat_id;
  std::string tool; ///< the tool that submitted it
  std::string target;
  std::string title;
  std::string content; ///< memory text, skill instructions, diagnostic text
  std::string description;
  std::string rationale;
  int64_t submitted_us = 0;
  int64_t decided_us = 0;
  std::string decided_by; ///< "policy" (automatic saving) or "owner"
};

struct state {
  std::map<std::string, memory> memories;      ///< by id
  std::map<std::string, skill> skills;         ///< by slug
  std::map<std::string, candidate> candidates; ///< by id
  std::vector<std::string> candidate_order;    ///< submission order
  std::size_t pending = 0;
  bool automatic_saving = false; ///< the account's automatic-saving consent
};

std::string_view to_string(change x) noexcept;
std::string_view to_string(source x) noexcept;
std::string_view to_string(review x) noexcept;

/// Applies one event of the stream; an event it does not know, or one that
/// does not decode, is corrupt_data.
status apply(state& st, std::string_view type, const nlohmann::json& data);

/// Whether `name` is one of this family's model-facing tools.
bool handles(std::string_view tool_name);

/// One model-facing call (arguments already valid against the tool's
/// registry schema).
tool_outcome call(const state& st, const tool_context& ctx, std::string_view tool_name,
                  const nlohmann::json& args, const limits& lim);

/// A candidate from the node's own MCP servers (source memory_mcp or
/// skill_mcp), for agent `ctx.agent_id`: never applied without review.
tool_outcome submit_from_server(const state& st, const tool_context& ctx, source from, change kind,
                                const nlohmann::json& given, const limits& lim);

// -- the owner's side --------------------------------------------------------

/// Confirms a pending candidate: the events that apply it, or not_found /
/// conflict (already decided; its target changed since: a slug now taken, a
/// memory or skill gone).
result<std::vector<event_draft>> confirm(const state& st, std::string_view candidate_id,
                                         int64_t now_us, const limits& lim);
/// Rejects a pending candidate.
result<std::vector<event_draft>> reject(const state& st, std::string_view candidate_id,
                                        int64_t now_us);
/// Sets the automatic-saving consent.
std::vector<event_draft> set_consent(bool automatic_saving, int64_t now_us);

/// An owner-installed skill (the example-skill loader): active at once;
/// conflict when the slug exists in any form.
result<std::vector<event_draft>> install_skill(const state& st, std::string_view slug,
                                               const nlohmann::json& given, int64_t now_us,
                                               const limits& lim);

/// Whether a slug exists in any form (skill, archived, or pending candidate).
bool slug_taken(const state& st, std::string_view slug);

nlohmann::json to_json(const candidate& c);
nlohmann::json to_json(const memory& m);
/// A skill as listed (`with_body`: its instructions too).
nlohmann::json to_json(const skill& s, bool with_body);

/// The owner's views: candidates (status "pending", "decided" or "all",
/// newest first), an agent's memories (archived too when asked), skills.
nlohmann::json list_candidates(const state& st, std::string_view which, std::size_t limit);
nlohmann::json list_memories(const state& st, std::string_view agent_id, bool archived);
/// `versions`: each skill's archived copies too ({version, instructions}).
nlohmann::json list_skills(const state& st, bool archived, bool versions = false);
/// A skill's archived copies, oldest first: [{version, instructions}].
nlohmann::json skill_versions_json(const skill& s);

/// Text that looks like a credential (keys, tokens, private keys): a
/// candidate holding it is refused and nothing is stored.
bool looks_like_credential(std::string_view text);

/// The slug of a skill name: lower-case letters and digits, words joined by
/// '-', at most 64 characters; empty when the name has no letter or digit.
std::string slug_of(std::string_view name);

} // namespace voxos::knowledge
