#include "actors/mcp/discovery.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace voxos {

using json = nlohmann::json;

namespace {

std::string string_member(const json& obj, const char* key) {
  auto found = obj.find(key);
  return found != obj.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

bool read_tool(const json& entry, tool_definition& out) {
  if (!entry.is_object())
    return false;
  // A name the tenant's records cannot keep would fail the whole server's
  // record, so such a tool is skipped like one without a schema.
  auto name = string_member(entry, "name");
  if (!is_storable_tool_name(name))
    return false;
  auto input = entry.find("inputSchema");
  if (input == entry.end() || !input->is_object())
    return false;
  out.name = std::move(name);
  out.title = string_member(entry, "title");
  out.description = string_member(entry, "description");
  out.input_schema = input->dump();
  if (auto output = entry.find("outputSchema"); output != entry.end() && output->is_object())
    out.output_schema = output->dump();
  if (auto notes = entry.find("annotations"); notes != entry.end() && notes->is_object()) {
    if (out.title.empty())
      out.title = string_member(*notes, "title");
    if (auto hint = notes->find("readOnlyHint"); hint != notes->end() && hint->is_boolean())
      out.read_only_hint = hint->get<bool>();
    if (auto hint = notes->find("destructiveHint"); hint != notes->end() && hint->is_boolean())
      out.destructive_hint = hint->get<bool>();
    if (auto hint = notes->find("idempotentHint"); hint != notes->end() && hint->is_boolean())
      out.idempotent_hint = hint->get<bool>();
  }
  return true;
}

} // namespace

result<discovered_tools> read_discovery(std::string_view answer_json) {
  auto doc = json::parse(answer_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("tools") || !doc["tools"].is_array())
    return status::error(errc::bad_json, "discovery answer has no tools array");
  discovered_tools out;
  out.truncated = doc.value("truncated", false);
  out.tools.reserve(doc["tools"].size());
  for (const auto& entry : doc["tools"]) {
    tool_definition def;
    if (read_tool(entry, def))
      out.tools.push_back(std::move(def));
    else
      ++out.skipped;
  }
  return out;
}

std::vector<tool_definition> bound_cache(std::vector<tool_definition> tools,
                                         const std::vector<std::string>& allowed, std::size_t max) {
  if (tools.size() <= max)
    return tools;
  auto is_allowed = [&allowed](const tool_definition& def) {
    return std::find(allowed.begin(), allowed.end(), def.name) != allowed.end();
  };
  std::stable_partition(tools.begin(), tools.end(), is_allowed);
  tools.resize(max);
  return tools;
}

} // namespace voxos
