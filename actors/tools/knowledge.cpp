#include "actors/tools/knowledge.hpp"

#include <algorithm>
#include <cctype>

#include "actors/tools/json_fields.hpp"
#include "actors/tools/paging.hpp"
#include "storage/digest.hpp"

namespace voxos::knowledge {

using json = nlohmann::json;

namespace {

// -- names ----------------------------------------------------------------------

template <class Enum, std::size_t N>
std::optional<Enum> parse_name(std::string_view text, const std::string_view (&names)[N]) {
  for (std::size_t idx = 0; idx < N; ++idx)
    if (names[idx] == text)
      return static_cast<Enum>(idx);
  return std::nullopt;
}

constexpr std::string_view change_names[] = {"memory",       "memory_archive", "skill",
                                             "skill_update", "skill_archive",  "diagnostic"};
constexpr std::string_view source_names[] = {"model", "memory_mcp", "skill_mcp"};
constexpr std::string_view review_names[] = {"pending", "applied", "confirmed", "rejected"};

// -- events -----------------------------------------------------------------------

constexpr std::string_view ev_submitted = "knowledge.candidate_submitted";
constexpr std::string_view ev_decided = "knowledge.candidate_decided";
constexpr std::string_view ev_memory_saved = "knowledge.memory_saved";
constexpr std::string_view ev_memory_archived = "knowledge.memory_archived";
constexpr std::string_view ev_skill_saved = "knowledge.skill_saved";
constexpr std::string_view ev_skill_archived = "knowledge.skill_archived";
constexpr std::string_view ev_consent = "knowledge.consent_set";

event_draft draft(std::string_view type, const json& data) {
  return {std::string{type}, data.dump()};
}

/// A skill's version saved: new, or over the current one (which becomes an
/// archived copy).
event_draft skill_saved(std::string_view slug, int version, const std::string& name,
                        const std::string& description, const std::string& instructions,
                        const std::string& candidate_id, int64_t now_us) {
  return draft(ev_skill_saved, {{"slug", slug},
                                {"version", version},
                                {"name", name},
                                {"description", description},
                                {"instructions", instructions},
                                {"candidate_id", candidate_id},
                                {"saved_us", now_us}});
}

json candidate_json(const candidate& c) {
  return {{"id", c.id},
          {"kind", to_string(c.kind)},
          {"source", to_string(c.from)},
          {"status", to_string(c.state)},
          {"agent_id", c.agent_id},
          {"run_id", c.run_id},
          {"chat_id", c.chat_id},
          {"tool", c.tool},
          {"target", c.target},
          {"title", c.title},
          {"content", c.content},
          {"description", c.description},
          {"rationale", c.rationale},
          {"submitted_us", c.submitted_us},
          {"decided_us", c.decided_us},
          {"decided_by", c.decided_by}};
}

result<candidate> candidate_of(const json& doc) {
  candidate c;
  auto kind = parse_name<change>(fields::text(doc, "kind"), change_names);
  auto from = parse_name<source>(fields::text(doc, "source"), source_names);
  c.id = fields::text(doc, "id");
  if (!kind || !from || c.id.empty())
    return status::error(errc::corrupt_data, "a knowledge candidate does not decode");
  c.kind = *kind;
  c.from = *from;
  c.agent_id = fields::text(doc, "agent_id");
  c.run_id = fields::text(doc, "run_id");
  c.chat_id = fields::text(doc, "chat_id");
  c.tool = fields::text(doc, "tool");
  c.target = fields::text(doc, "target");
  c.title = fields::text(doc, "title");
  c.content = fields::text(doc, "content");
  c.description = fields::text(doc, "description");
  c.rationale = fields::text(doc, "rationale");
  c.submitted_us = fields::integer(doc, "submitted_us");
  return c;
}

json version_json(const skill_version& v) {
  return {{"version", v.version},           {"name", v.name},
          {"description", v.description},   {"instructions", v.instructions},
          {"candidate_id", v.candidate_id}, {"saved_us", v.saved_us}};
}

// -- assessment -------------------------------------------------------------------

std::string lowered_trimmed(std::string_view text) {
  auto begin = text.find_first_not_of(" \t\r\n");
  auto end = text.find_last_not_of(" \t\r\n");
  std::string out;
  if (begin == std::string_view::npos)
    return out;
  for (auto ch : text.substr(begin, end - begin + 1))
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::size_t active_memories(const state& st, std::string_view agent_id) {
  return static_cast<std::size_t>(
    std::count_if(st.memories.begin(), st.memories.end(),
                  [&](auto& m) { return !m.second.archived && m.second.agent_id == agent_id; }));
}

/// The policy's verdict on a new candidate: nullopt when it may be stored.
std::optional<tool_outcome> assess_candidate(const state& st, const candidate& c,
                                             const limits& lim) {
  if (looks_like_credential(c.content) || looks_like_credential(c.title)
      || looks_like_credential(c.description) || looks_like_credential(c.rationale))
    return tool_outcome::error(
      "credential_like_content",
      "the candidate looks like it holds a credential (a key, token or password); knowledge "
      "never stores credentials. Nothing was stored.");
  if (st.pending >= lim.pending_candidates)
    return tool_outcome::error("too_many_pending",
                               "the owner already has " + std::to_string(lim.pending_candidates)
                                 + " candidates to review; nothing was stored.");
  switch (c.kind) {
  case change::memory: {
    auto wanted = lowered_trimmed(c.content);
    for (const auto& [id, m] : st.memories)
      if (!m.archived && m.agent_id == c.agent_id && lowered_trimmed(m.content) == wanted)
        return tool_outcome::error("duplicate", "this agent already has that memory (" + id
                                                  + "); nothing was stored.");
    if (active_memories(st, c.agent_id) >= lim.memories_per_agent)
      return tool_outcome::error("too_many_memories",
                                 "this agent has the most memories it may keep ("
                                   + std::to_string(lim.memories_per_agent)
                                   + "); archive some first. Nothing was stored.");
    break;
  }
  case change::memory_archive: {
    auto found = st.memories.find(c.target);
    if (found == st.memories.end() || found->second.agent_id != c.agent_id)
      return tool_outcome::error("not_found", "this agent has no memory with that ID.");
    if (found->second.archived)
      return tool_outcome::error("conflict", "that memory is already archived.");
    break;
  }
  case change::skill:
    if (c.target.empty())
      return tool_outcome::error("invalid_name",
                                 "the skill name needs at least one letter or digit.");
    if (slug_taken(st, c.target))
      return tool_outcome::error("slug_exists",
                                 "a skill with the slug '" + c.target
                                   + "' already exists (slugs are never overwritten): choose "
                                     "another name, or update that skill.");
    if (st.skills.size() >= lim.skills)
      return tool_outcome::error("too_many_skills", "this account has the most skills it may "
                                                    "keep; nothing was stored.");
    break;
  case change::skill_update:
  case change::skill_archive: {
    auto found = st.skills.find(c.target);
    if (found == st.skills.end())
      return tool_outcome::error("not_found", "no skill has that slug.");
    if (found->second.archived)
      return tool_outcome::error("conflict", "that skill is archived.");
    break;
  }
  case change::diagnostic:
    break;
  }
  return std::nullopt;
}

/// The events that apply candidate `c` (already assessed), decided by `by`.
std::vector<event_draft> application(const state& st, const candidate& c, int64_t now_us,
                                     std::string_view by) {
  std::vector<event_draft> out;
  out.push_back(draft(ev_decided, {{"id", c.id},
                                   {"status", by == "policy" ? "applied" : "confirmed"},
                                   {"decided_by", by},
                                   {"decided_us", now_us}}));
  switch (c.kind) {
  case change::memory:
    out.push_back(draft(ev_memory_saved, {{"id", "mem_" + digest::random_hex(8)},
                                          {"agent_id", c.agent_id},
                                          {"title", c.title},
                                          {"content", c.content},
                                          {"candidate_id", c.id},
                                          {"created_us", now_us}}));
    break;
  case change::memory_archive:
    out.push_back(draft(ev_memory_archived, {{"id", c.target}, {"archived_us", now_us}}));
    break;
  case change::skill:
  case change::skill_update: {
    int version = 1;
    auto name = c.title;
    auto description = c.description;
    auto instructions = c.content;
    if (auto found = st.skills.find(c.target); found != st.skills.end()) {
      version = found->second.current.version + 1;
      // An update names only what changes.
      if (name.empty())
        name = found->second.current.name;
      if (description.empty())
        description = found->second.current.description;
      if (instructions.empty())
        instructions = found->second.current.instructions;
    }
    out.push_back(skill_saved(c.target, version, name, description, instructions, c.id, now_us));
    break;
  }
  case change::skill_archive:
    out.push_back(draft(ev_skill_archived, {{"slug", c.target}, {"archived_us", now_us}}));
    break;
  case change::diagnostic:
    break; // the decided candidate is the record
  }
  return out;
}

/// Whether the automatic-saving consent applies `c` at once: a model's new
/// memory, memory archive, skill or diagnostic in a run. A proposal
/// (propose_agent_memory), a drafted skill (create_user_skill), a change to
/// an existing skill, and whatever the node's MCP servers submit always wait
/// for the owner, as their tools say.
bool applies_by_consent(const candidate& c) {
  if (c.from != source::model || c.tool == "propose_agent_memory" || c.tool == "create_user_skill")
    return false;
  return c.kind != change::skill_update && c.kind != change::skill_archive;
}

/// Submits `c` (origin filled from the context): assessed, then stored as
/// pending, or applied at once under the automatic-saving consent when a
/// model in a run submitted it.
tool_outcome submit(const state& st, candidate c, const tool_context& ctx, const limits& lim) {
  c.id = "cand_" + digest::random_hex(8);
  c.agent_id = ctx.agent_id;
  c.run_id = ctx.run_id;
  c.chat_id = ctx.chat_id;
  c.submitted_us = ctx.now_us;
  if (auto refused = assess_candidate(st, c, lim))
    return std::move(*refused);
  tool_write write{std::string{stream}, {draft(ev_submitted, candidate_json(c))}};
  json answer{{"candidate_id", c.id}, {"kind", to_string(c.kind)}};
  if (st.automatic_saving && applies_by_consent(c)) {
    auto applied = application(st, c, ctx.now_us, "policy");
    for (auto& ev : applied)
      write.events.push_back(std::move(ev));
    answer["status"] = "applied";
    answer["message"] = "Saved under the account's automatic-saving consent.";
  } else {
    answer["status"] = "pending_review";
    answer["message"] = "Submitted for the owner's review; it is not active until confirmed.";
  }
  if (c.kind == change::skill || c.kind == change::skill_update || c.kind == change::skill_archive)
    answer["slug"] = c.target;
  auto out = tool_outcome::ok(std::move(answer));
  out.writes.push_back(std::move(write));
  return out;
}

// -- the tools -----------------------------------------------------------------------

std::vector<const memory*> agent_memories(const state& st, std::string_view agent_id,
                                          bool archived) {
  std::vector<const memory*> out;
  for (const auto& [id, m] : st.memories)
    if (m.agent_id == agent_id && (archived || !m.archived))
      out.push_back(&m);
  std::sort(out.begin(), out.end(), [](const memory* a, const memory* b) {
    return a->created_us != b->created_us ? a->created_us > b->created_us : a->id < b->id;
  });
  return out;
}

tool_outcome list_memories_tool(const state& st, const tool_context& ctx, const json& args) {
  auto all = agent_memories(st, ctx.agent_id, false);
  auto page = page_of(args, all.size(), 20);
  if (!page)
    return tool_outcome::error("invalid_cursor", page.error().message());
  json items = json::array();
  for (auto idx = page->begin; idx < page->end; ++idx)
    items.push_back({{"memory_id", all[idx]->id},
                     {"title", all[idx]->title},
                     {"content", all[idx]->content},
                     {"created_us", all[idx]->created_us}});
  json out{{"memories", std::move(items)}, {"total", all.size()}};
  if (!page->next_cursor.empty())
    out["next_cursor"] = page->next_cursor;
  return tool_outcome::ok(std::move(out));
}

tool_outcome list_skills_tool(const state& st, const json& args) {
  std::vector<const skill*> active;
  for (const auto& [slug, s] : st.skills)
    if (!s.archived)
      active.push_back(&s);
  auto page = page_of(args, active.size(), 20);
  if (!page)
    return tool_outcome::error("invalid_cursor", page.error().message());
  json items = json::array();
  for (auto idx = page->begin; idx < page->end; ++idx)
    items.push_back(to_json(*active[idx], false));
  json out{{"skills", std::move(items)}, {"total", active.size()}};
  if (!page->next_cursor.empty())
    out["next_cursor"] = page->next_cursor;
  return tool_outcome::ok(std::move(out));
}

tool_outcome get_skill_tool(const state& st, const json& args) {
  auto found = st.skills.find(args.at("slug").get<std::string>());
  if (found == st.skills.end() || found->second.archived)
    return tool_outcome::error("not_found", "no active skill has that slug.");
  return tool_outcome::ok(to_json(found->second, true));
}

} // namespace

std::string_view to_string(change x) noexcept {
  return change_names[static_cast<std::size_t>(x)];
}
std::string_view to_string(source x) noexcept {
  return source_names[static_cast<std::size_t>(x)];
}
std::string_view to_string(review x) noexcept {
  return review_names[static_cast<std::size_t>(x)];
}

bool looks_like_credential(std::string_view text) {
  static constexpr std::string_view markers[] = {"-----BEGIN", "sk-",         "sk_live_", "ghp_",
                                                 "gho_",       "github_pat_", "xoxb-",    "xoxp-",
                                                 "AKIA",       "AIza",        "ya29.",    "eyJ"};
  // A marker counts when a long run of key characters follows it.
  auto key_char = [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'
           || ch == '/' || ch == '+' || ch == '=';
  };
  auto run_at = [&](std::size_t pos) {
    std::size_t len = 0;
    while (pos + len < text.size() && key_char(text[pos + len]))
      ++len;
    return len;
  };
  for (auto marker : markers)
    for (auto pos = text.find(marker); pos != std::string_view::npos;
         pos = text.find(marker, pos + 1))
      if (marker == "-----BEGIN" || run_at(pos) >= marker.size() + 16)
        return true;
  // "password: x", "Bearer x" and any 40+ character run of key characters
  // mixing letters and digits (hex or base64 secrets).
  std::string lowered{text};
  for (auto& ch : lowered)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (std::string_view label : {"password:", "password=", "passwd:", "bearer ",
                                 "api_key=", "apikey=", "secret:", "secret="})
    for (auto pos = lowered.find(label); pos != std::string::npos;
         pos = lowered.find(label, pos + 1)) {
      auto value = lowered.find_first_not_of(" \t", pos + label.size());
      if (value != std::string::npos && run_at(value) >= 6)
        return true;
    }
  for (std::size_t pos = 0; pos < text.size();) {
    auto len = run_at(pos);
    if (len >= 40) {
      auto word = text.substr(pos, len);
      bool digit = std::any_of(word.begin(), word.end(), [](char ch) {
        return std::isdigit(static_cast<unsigned char>(ch));
      });
      bool alpha = std::any_of(word.begin(), word.end(), [](char ch) {
        return std::isalpha(static_cast<unsigned char>(ch));
      });
      if (digit && alpha && word.find("://") == std::string_view::npos
          && std::count(word.begin(), word.end(), '/') < 3)
        return true;
    }
    pos += std::max<std::size_t>(len, 1);
  }
  return false;
}

std::string slug_of(std::string_view name) {
  std::string out;
  bool dash = false;
  for (auto ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) && c < 0x80) {
      if (dash && !out.empty())
        out += '-';
      dash = false;
      out += static_cast<char>(std::tolower(c));
    } else {
      dash = true;
    }
    if (out.size() >= 64)
      break;
  }
  while (!out.empty() && out.back() == '-')
    out.pop_back();
  return out;
}

bool slug_taken(const state& st, std::string_view slug) {
  if (st.skills.count(std::string{slug}) != 0)
    return true;
  for (const auto& [id, c] : st.candidates)
    if (c.state == review::pending && c.kind == change::skill && c.target == slug)
      return true;
  return false;
}

status apply(state& st, std::string_view type, const json& data) {
  auto corrupt = [&] {
    return status::error(errc::corrupt_data, "a knowledge event does not decode");
  };
  if (!data.is_object())
    return corrupt();
  if (type == ev_submitted) {
    auto c = candidate_of(data);
    if (!c)
      return c.error();
    if (st.candidates.count(c->id) != 0)
      return corrupt();
    st.candidate_order.push_back(c->id);
    st.candidates.emplace(c->id, std::move(*c));
    ++st.pending;
    return status::ok();
  }
  if (type == ev_decided) {
    auto found = st.candidates.find(fields::text(data, "id"));
    auto decided = parse_name<review>(fields::text(data, "status"), review_names);
    if (found == st.candidates.end() || !decided || *decided == review::pending
        || found->second.state != review::pending)
      return corrupt();
    found->second.state = *decided;
    found->second.decided_by = fields::text(data, "decided_by");
    found->second.decided_us = fields::integer(data, "decided_us");
    --st.pending;
    return status::ok();
  }
  if (type == ev_memory_saved) {
    memory m;
    m.id = fields::text(data, "id");
    m.agent_id = fields::text(data, "agent_id");
    m.title = fields::text(data, "title");
    m.content = fields::text(data, "content");
    m.candidate_id = fields::text(data, "candidate_id");
    m.created_us = fields::integer(data, "created_us");
    if (m.id.empty() || m.agent_id.empty())
      return corrupt();
    st.memories[m.id] = std::move(m);
    return status::ok();
  }
  if (type == ev_memory_archived) {
    auto found = st.memories.find(fields::text(data, "id"));
    if (found == st.memories.end())
      return corrupt();
    found->second.archived = true;
    found->second.archived_us = fields::integer(data, "archived_us");
    return status::ok();
  }
  if (type == ev_skill_saved) {
    auto slug = fields::text(data, "slug");
    if (slug.empty())
      return corrupt();
    skill_version v;
    v.version = static_cast<int>(fields::integer(data, "version"));
    v.name = fields::text(data, "name");
    v.description = fields::text(data, "description");
    v.instructions = fields::text(data, "instructions");
    v.candidate_id = fields::text(data, "candidate_id");
    v.saved_us = fields::integer(data, "saved_us");
    auto& s = st.skills[slug];
    if (s.slug.empty()) {
      s.slug = slug;
    } else {
      s.archived_copies.push_back(std::move(s.current));
    }
    s.current = std::move(v);
    s.archived = false;
    return status::ok();
  }
  if (type == ev_skill_archived) {
    auto found = st.skills.find(fields::text(data, "slug"));
    if (found == st.skills.end())
      return corrupt();
    found->second.archived = true;
    return status::ok();
  }
  if (type == ev_consent) {
    auto found = data.find("automatic_saving");
    if (found == data.end() || !found->is_boolean())
      return corrupt();
    st.automatic_saving = found->get<bool>();
    return status::ok();
  }
  return corrupt();
}

bool handles(std::string_view tool_name) {
  static constexpr std::string_view names[] = {
    "record_agent_improvement", "list_agent_memories",  "list_agent_skills",    "get_agent_skill",
    "create_agent_memory",      "propose_agent_memory", "archive_agent_memory", "create_user_skill",
    "update_user_skill",        "archive_user_skill"};
  return std::find(std::begin(names), std::end(names), tool_name) != std::end(names);
}

tool_outcome call(const state& st, const tool_context& ctx, std::string_view tool_name,
                  const json& args, const limits& lim) {
  if (tool_name == "list_agent_memories")
    return list_memories_tool(st, ctx, args);
  if (tool_name == "list_agent_skills")
    return list_skills_tool(st, args);
  if (tool_name == "get_agent_skill")
    return get_skill_tool(st, args);
  candidate c;
  c.tool = std::string{tool_name};
  c.from = source::model;
  if (tool_name == "record_agent_improvement") {
    auto kind = fields::text(args, "kind");
    c.kind = kind == "skill"        ? change::skill
             : kind == "diagnostic" ? change::diagnostic
                                    : change::memory;
    c.title = fields::text(args, "title");
    c.content = fields::text(args, "content");
    c.rationale = fields::text(args, "rationale");
    if (c.kind == change::skill) {
      c.target = slug_of(c.title);
      if (c.title.empty())
        return tool_outcome::error("invalid_name", "a skill candidate needs a title, which "
                                                   "becomes its name and slug.");
    }
  } else if (tool_name == "create_agent_memory" || tool_name == "propose_agent_memory") {
    c.kind = change::memory;
    c.title = fields::text(args, "title");
    c.content = fields::text(args, "content");
    c.rationale = fields::text(args, "reason");
  } else if (tool_name == "archive_agent_memory") {
    c.kind = change::memory_archive;
    c.target = fields::text(args, "memory_id");
  } else if (tool_name == "create_user_skill") {
    c.kind = change::skill;
    c.title = fields::text(args, "name");
    c.description = fields::text(args, "description");
    c.content = fields::text(args, "instructions");
    c.target = slug_of(c.title);
  } else if (tool_name == "update_user_skill") {
    c.kind = change::skill_update;
    c.target = fields::text(args, "slug");
    c.description = fields::text(args, "description");
    c.content = fields::text(args, "instructions");
  } else if (tool_name == "archive_user_skill") {
    c.kind = change::skill_archive;
    c.target = fields::text(args, "slug");
  } else {
    return tool_outcome::error("unknown_tool", "this tool is not a knowledge tool.");
  }
  return submit(st, std::move(c), ctx, lim);
}

tool_outcome submit_from_server(const state& st, const tool_context& ctx, source from, change kind,
                                const json& given, const limits& lim) {
  candidate c;
  c.kind = kind;
  c.from = from;
  c.tool = from == source::memory_mcp ? "memory_mcp" : "skill_mcp";
  c.title = fields::text(given, "title");
  c.content = fields::text(given, "content");
  c.description = fields::text(given, "description");
  c.rationale = fields::text(given, "rationale");
  c.target = kind == change::skill ? slug_of(c.title) : fields::text(given, "target");
  return submit(st, std::move(c), ctx, lim);
}

result<std::vector<event_draft>> confirm(const state& st, std::string_view candidate_id,
                                         int64_t now_us, const limits& lim) {
  auto found = st.candidates.find(std::string{candidate_id});
  if (found == st.candidates.end())
    return status::error(errc::not_found, "no candidate with this id");
  if (found->second.state != review::pending)
    return status::error(errc::conflict, "this candidate was already decided");
  // Assessed again against today's state (not the pending bound: it leaves it).
  auto again = found->second;
  state without = {};
  const state* against = &st;
  if (again.kind == change::skill) {
    // Its own pending entry must not count as taking the slug.
    without.skills = st.skills;
    against = &without;
  }
  limits relaxed = lim;
  relaxed.pending_candidates = std::numeric_limits<std::size_t>::max();
  if (auto refused = assess_candidate(*against, again, relaxed))
    return status::error(errc::conflict, "the candidate no longer applies: "
                                           + refused->result["message"].get<std::string>());
  return application(st, again, now_us, "owner");
}

result<std::vector<event_draft>> reject(const state& st, std::string_view candidate_id,
                                        int64_t now_us) {
  auto found = st.candidates.find(std::string{candidate_id});
  if (found == st.candidates.end())
    return status::error(errc::not_found, "no candidate with this id");
  if (found->second.state != review::pending)
    return status::error(errc::conflict, "this candidate was already decided");
  return std::vector<event_draft>{draft(ev_decided, {{"id", found->second.id},
                                                     {"status", "rejected"},
                                                     {"decided_by", "owner"},
                                                     {"decided_us", now_us}})};
}

std::vector<event_draft> set_consent(bool automatic_saving, int64_t now_us) {
  return {draft(ev_consent, {{"automatic_saving", automatic_saving}, {"set_us", now_us}})};
}

result<std::vector<event_draft>> install_skill(const state& st, std::string_view slug,
                                               const json& given, int64_t now_us,
                                               const limits& lim) {
  if (slug_taken(st, slug))
    return status::error(errc::conflict, "a skill with this slug exists; it is never overwritten");
  if (st.skills.size() >= lim.skills)
    return status::error(errc::out_of_range, "this account has the most skills it may keep");
  return std::vector<event_draft>{skill_saved(slug, 1, fields::text(given, "name"),
                                              fields::text(given, "description"),
                                              fields::text(given, "instructions"), "", now_us)};
}

json to_json(const candidate& c) {
  return candidate_json(c);
}

json to_json(const memory& m) {
  return {{"memory_id", m.id},          {"agent_id", m.agent_id},
          {"title", m.title},           {"content", m.content},
          {"archived", m.archived},     {"candidate_id", m.candidate_id},
          {"created_us", m.created_us}, {"archived_us", m.archived_us}};
}

json to_json(const skill& s, bool with_body) {
  json out{{"slug", s.slug},
           {"name", s.current.name},
           {"description", s.current.description},
           {"version", s.current.version},
           {"archived", s.archived}};
  if (with_body) {
    out["instructions"] = s.current.instructions;
    out["archived_copies"] = s.archived_copies.size();
  }
  return out;
}

json skill_versions_json(const skill& s) {
  json out = json::array();
  for (const auto& v : s.archived_copies)
    out.push_back({{"version", v.version}, {"instructions", v.instructions}});
  return out;
}

json list_candidates(const state& st, std::string_view which, std::size_t limit) {
  json items = json::array();
  for (auto it = st.candidate_order.rbegin(); it != st.candidate_order.rend(); ++it) {
    const auto& c = st.candidates.at(*it);
    bool pending = c.state == review::pending;
    if ((which == "pending" && !pending) || (which == "decided" && pending))
      continue;
    if (items.size() >= limit)
      break;
    items.push_back(candidate_json(c));
  }
  return {{"candidates", std::move(items)},
          {"pending", st.pending},
          {"automatic_saving", st.automatic_saving}};
}

json list_memories(const state& st, std::string_view agent_id, bool archived) {
  json items = json::array();
  for (const auto* m : agent_memories(st, agent_id, archived))
    items.push_back(to_json(*m));
  return {{"memories", std::move(items)}};
}

json list_skills(const state& st, bool archived, bool versions) {
  json items = json::array();
  for (const auto& [slug, s] : st.skills)
    if (archived || !s.archived) {
      items.push_back(to_json(s, true));
      if (versions)
        items.back()["versions"] = skill_versions_json(s);
    }
  return {{"skills", std::move(items)}};
}

} // namespace voxos::knowledge
