#include "actors/tenant/tenant_queries.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "actors/tenant/tenant_events.hpp"

namespace voxos::tenant_queries {

using nlohmann::json;

namespace {

/// A decimal (at most six digits) within 1 .. `max`, or nullopt.
std::optional<uint32_t> bounded_count(const std::string& text, uint32_t max) {
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  auto value = std::stoul(text);
  if (value < 1 || value > max)
    return std::nullopt;
  return static_cast<uint32_t>(value);
}

bool row_matches(const audit_filter& filter, const std::string& phase, const json& agent_id,
                 const json& tool) {
  auto equals = [](const json& value, const std::string& wanted) {
    return wanted.empty() || (value.is_string() && value.get_ref<const std::string&>() == wanted);
  };
  return (filter.phase.empty() || filter.phase == phase) && equals(agent_id, filter.agent_id)
         && equals(tool, filter.tool);
}

const json& field_or_null(const json& doc, const char* name) {
  static const json null_value;
  auto found = doc.find(name);
  return found != doc.end() ? *found : null_value;
}

} // namespace

json server_detail(const mcp_server_record& rec) {
  auto out = tenant_events::to_json(rec, false);
  auto tools = json::array();
  for (const auto& named : rec.cached_tools.by_name()) {
    const auto& def = *named.def;
    json tool{{"name", def.name}};
    if (!def.title.empty())
      tool["title"] = def.title;
    tool["description"] = def.description;
    tool["read_only"] = def.read_only_hint;
    tool["idempotent"] = def.idempotent_hint;
    if (!def.read_only_hint)
      tool["destructive"] = def.destructive_hint;
    tool["allowed"] = std::find(rec.allowed_tools.begin(), rec.allowed_tools.end(), def.name)
                      != rec.allowed_tools.end();
    tools.push_back(std::move(tool));
  }
  out["tools"] = std::move(tools);
  return out;
}

// -- audit ----------------------------------------------------------------------

result<audit_query>
audit_query_of(const std::function<std::optional<std::string>(std::string_view)>& param) {
  audit_query out;
  if (auto limit = param("limit")) {
    auto count = bounded_count(*limit, max_audit_rows);
    if (!count)
      return status::error(errc::out_of_range, "limit: an integer from 1 to 10000");
    out.limit = *count;
  }
  if (auto agent_id = param("agent_id")) {
    if (!tenant_events::is_id(*agent_id))
      return status::error(errc::out_of_range, "agent_id: 1 to 64 characters of [a-z0-9_-]");
    out.filter.agent_id = *agent_id;
  }
  if (auto tool = param("tool")) {
    if (!tenant_events::is_tool_name(*tool))
      return status::error(errc::out_of_range, "tool: 1 to 128 characters of [A-Za-z0-9_.-]");
    out.filter.tool = *tool;
  }
  if (auto phase = param("phase")) {
    if (*phase != "compose" && *phase != "execute" && *phase != "config")
      return status::error(errc::out_of_range, "phase: one of compose, execute, config");
    out.filter.phase = *phase;
  }
  return out;
}

std::string to_text(const audit_filter& filter) {
  return json{{"agent_id", filter.agent_id}, {"tool", filter.tool}, {"phase", filter.phase}}.dump();
}

audit_filter audit_filter_of(const std::string& text) {
  auto doc = json::parse(text, nullptr, false);
  if (!doc.is_object())
    return {};
  return {doc.value("agent_id", ""), doc.value("tool", ""), doc.value("phase", "")};
}

json audit_rows(const std::vector<event_record>& events, const audit_filter& filter,
                uint32_t limit) {
  json rows = json::array();
  for (auto it = events.rbegin(); it != events.rend() && rows.size() < limit; ++it) {
    auto doc = json::parse(it->data, nullptr, false);
    if (!doc.is_object())
      continue;
    if (it->type == "policy.composed" || it->type == "calls.decided") {
      std::string phase = it->type == "policy.composed" ? "compose" : "execute";
      const auto& agent_id = field_or_null(doc, "agent_id");
      // (the event's phase and agent first: most events then cost no row)
      auto by_event = filter;
      by_event.tool.clear();
      if (!row_matches(by_event, phase, agent_id, json{}))
        continue;
      const auto& decisions = field_or_null(doc, "decisions");
      if (!decisions.is_array())
        continue;
      for (const auto& d : decisions) {
        if (rows.size() >= limit)
          break;
        if (!d.is_array() || d.size() < 3 || !row_matches(filter, phase, agent_id, d[0]))
          continue;
        rows.push_back({{"phase", phase},
                        {"time_us", it->time_us},
                        {"run_id", field_or_null(doc, "run_id")},
                        {"agent_id", agent_id},
                        {"channel", field_or_null(doc, "channel")},
                        {"tool", d[0]},
                        {"server_id", d[1]},
                        {"reason", d[2]}});
      }
    } else {
      std::string phase = it->type == "config.refused" ? "config" : "execute";
      if (!row_matches(filter, phase, field_or_null(doc, "agent_id"), field_or_null(doc, "tool")))
        continue;
      doc["phase"] = phase;
      doc["time_us"] = it->time_us;
      rows.push_back(std::move(doc));
    }
  }
  return rows;
}

// -- runs -------------------------------------------------------------------------

result<uint32_t> run_limit_of(const std::optional<std::string>& text) {
  if (!text)
    return default_run_rows;
  auto count = bounded_count(*text, max_run_rows);
  if (!count)
    return status::error(errc::out_of_range, "limit: an integer from 1 to 500");
  return *count;
}

json run_list(const std::string& history_answer,
              const std::function<bool(const std::string&)>& is_live) {
  auto runs = json::array();
  auto doc = json::parse(history_answer, nullptr, false);
  if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array())
    return json{{"runs", std::move(runs)}};
  for (auto& run : doc["runs"]) {
    auto run_id = run.value("run_id", "");
    auto outcome = run.value("outcome", "");
    json entry{{"run_id", run_id},
               {"agent_id", run.value("agent_id", "")},
               {"channel", run.value("channel", "")},
               {"chat_id", run.value("chat_id", "")},
               {"started_us", run.value("started_us", int64_t{0})}};
    if (outcome == "finished" || outcome == "cancelled") {
      entry["state"] = outcome;
      entry["ended_us"] = run.value("ended_us", int64_t{0});
    } else {
      entry["state"] = is_live(run_id) ? "live" : "interrupted";
    }
    runs.push_back(std::move(entry));
  }
  return json{{"runs", std::move(runs)}};
}

// -- routes -----------------------------------------------------------------------

json route_list(const std::vector<route_explanation>& routes) {
  auto out = json::array();
  for (const auto& route : routes) {
    const auto& res = route.resolved;
    bool pinned = res.mode == route_mode::pinned;
    bool resolved = !res.server_id.empty();
    json entry{{"action", res.action}, {"mode", pinned ? "pinned" : "automatic"}};
    if (pinned)
      entry["pinned"] = {{"server_id", route.pinned_server_id}, {"tool", route.pinned_tool}};
    entry["resolved"] =
      resolved ? json{{"server_id", res.server_id}, {"tool", res.tool}} : json(nullptr);
    if (pinned)
      entry["reason"] = resolved ? "pinned_selected" : "pinned_route_unavailable";
    else if (resolved)
      entry["reason"] = "automatic_selected";
    else
      entry["reason"] =
        route.candidates.empty() ? "no_implementation" : "no_available_implementation";
    auto candidates = json::array();
    for (const auto& c : route.candidates)
      candidates.push_back({{"server_id", c.server_id},
                            {"tool", c.tool},
                            {"available", c.available},
                            {"reason", to_string(c.why)}});
    entry["candidates"] = std::move(candidates);
    out.push_back(std::move(entry));
  }
  return json{{"routes", std::move(out)}};
}

} // namespace voxos::tenant_queries
