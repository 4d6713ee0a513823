#include "actors/tenant/example_skills.hpp"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/presets.hpp"
#include "transport/json_body.hpp"
#include "transport/json_text.hpp"

namespace voxos {

namespace {

using nlohmann::json;

constexpr std::size_t max_key_bytes = 64;

status at(const std::string& path, errc code, const std::string& what) {
  return status::error(code, path + ": " + what);
}

/// `checked`, its message prefixed with `path` when it failed.
status within(const std::string& path, status checked) {
  if (checked)
    return checked;
  return at(path, checked.code(), checked.message());
}

bool is_lower_alnum(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool is_body_file_name(std::string_view text) {
  constexpr std::string_view suffix = ".md";
  return text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix
         && is_example_slug(text.substr(0, text.size() - suffix.size()));
}

/// Non-empty, at most `max` bytes, UTF-8, no control characters; a
/// one-line text holds no tab or line break either.
status check_text(const std::string& path, const std::string& text, std::size_t max,
                  bool one_line) {
  if (text.empty())
    return at(path, errc::out_of_range, "must not be empty");
  if (text.size() > max)
    return at(path, errc::out_of_range, "longer than " + std::to_string(max) + " bytes");
  if (!is_utf8(text))
    return at(path, errc::out_of_range, "not UTF-8");
  if (has_control_characters(text) || (one_line && text.find_first_of("\t\n\r") != text.npos))
    return at(path, errc::out_of_range,
              one_line ? "holds a control character, tab or line break"
                       : "holds a control character other than tab, LF and CR");
  return status::ok();
}

status check_dependency(const skill_dependency& dep, const std::string& path,
                        const example_skill_limits& limits) {
  const preset* p = find_preset(dep.preset_id);
  if (p == nullptr)
    return at(path + ".preset_id", errc::out_of_range, "not a preset of the MCP preset catalog");
  // Each variant is its own server: a dependency names the one it needs.
  if (p->variants.empty() && !dep.variant.empty())
    return at(path + ".variant", errc::out_of_range, "the preset has no variants");
  if (!p->variants.empty() && dep.variant.empty())
    return at(path + ".variant", errc::missing_field,
              "required: each variant of the preset is its own server");
  if (!p->variants.empty()
      && std::none_of(p->variants.begin(), p->variants.end(),
                      [&](const preset_variant& v) { return v.id == dep.variant; }))
    return at(path + ".variant", errc::out_of_range, "not a variant of the preset");
  if (dep.tools.empty() || dep.tools.size() > limits.max_tools)
    return at(path + ".tools", errc::out_of_range,
              "must list 1 to " + std::to_string(limits.max_tools) + " tools");
  for (std::size_t tool_idx = 0; tool_idx < dep.tools.size(); ++tool_idx) {
    const auto& tool = dep.tools[tool_idx];
    auto tool_path = path + ".tools[" + std::to_string(tool_idx) + "]";
    if (find_preset_tool(*p, tool) == nullptr)
      return at(tool_path, errc::out_of_range, "not a tool the preset lists");
    if (std::find(dep.tools.begin(), dep.tools.begin() + tool_idx, tool)
        != dep.tools.begin() + tool_idx)
      return at(tool_path, errc::out_of_range, "listed twice");
  }
  return status::ok();
}

/// The array element at `path` as an object with exactly `fields`.
status check_object(const json& value, const std::string& path,
                    const std::vector<field_spec>& fields) {
  if (!value.is_object())
    return at(path, errc::wrong_type, "expected an object");
  return within(path, check_json_fields(value, fields.data(), fields.size()));
}

/// A dependency object: {"preset_id", "variant"?, "tools": [string...]}.
result<skill_dependency> dependency_from_json(const json& value, const std::string& path,
                                              const example_skill_limits& limits) {
  if (auto checked = check_object(value, path,
                                  {{"preset_id", json_kind::string, true, max_key_bytes},
                                   {"variant", json_kind::string, false, max_key_bytes},
                                   {"tools", json_kind::array, true, limits.max_tools}});
      !checked)
    return checked;
  skill_dependency out;
  out.preset_id = value["preset_id"].get<std::string>();
  if (auto variant = value.find("variant"); variant != value.end())
    out.variant = variant->get<std::string>();
  const auto& tools = value["tools"];
  for (std::size_t tool_idx = 0; tool_idx < tools.size(); ++tool_idx) {
    if (!tools[tool_idx].is_string())
      return at(path + ".tools[" + std::to_string(tool_idx) + "]", errc::wrong_type,
                "expected a string");
    out.tools.push_back(tools[tool_idx].get<std::string>());
  }
  return out;
}

/// A catalog or request entry: its fields checked (those both share, and
/// `own`: the body as a file name or as text, the MCP key), and the shared
/// ones read: slug, name, description, dependencies.
status read_entry(const json& entry, const std::string& path, const example_skill_limits& limits,
                  std::initializer_list<field_spec> own, example_skill& out) {
  std::vector<field_spec> fields{
    {"slug", json_kind::string, true, max_key_bytes},
    {"name", json_kind::string, true, limits.max_name_bytes},
    {"description", json_kind::string, true, limits.max_description_bytes},
    {"dependencies", json_kind::array, true, limits.max_dependencies}};
  fields.insert(fields.end(), own.begin(), own.end());
  if (auto ok = check_object(entry, path, fields); !ok)
    return ok;
  out.slug = entry["slug"].get<std::string>();
  out.name = entry["name"].get<std::string>();
  out.description = entry["description"].get<std::string>();
  const auto& deps = entry["dependencies"];
  for (std::size_t dep_idx = 0; dep_idx < deps.size(); ++dep_idx) {
    auto dep = dependency_from_json(
      deps[dep_idx], path + ".dependencies[" + std::to_string(dep_idx) + "]", limits);
    if (!dep)
      return dep.error();
    out.dependencies.push_back(std::move(dep).value());
  }
  return status::ok();
}

/// Refuses a slug that an earlier skill has.
status check_unique_slugs(const std::vector<example_skill>& skills) {
  std::map<std::string, std::size_t> first_at;
  for (std::size_t skill_idx = 0; skill_idx < skills.size(); ++skill_idx) {
    auto [found, inserted] = first_at.emplace(skills[skill_idx].slug, skill_idx);
    if (!inserted)
      return at("skills[" + std::to_string(skill_idx) + "].slug", errc::conflict,
                "the same slug as skills[" + std::to_string(found->second) + "]");
  }
  return status::ok();
}

/// A regular file's content, refused past `max_bytes`.
result<std::string> read_bounded_file(const std::filesystem::path& file, std::size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    return status::error(errc::not_found, "not a readable regular file");
  auto size = std::filesystem::file_size(file, ec);
  if (ec)
    return status::error(errc::not_found, "not a readable regular file");
  if (size > max_bytes)
    return status::error(errc::out_of_range, "longer than " + std::to_string(max_bytes) + " bytes");
  std::ifstream in{file, std::ios::binary};
  std::stringstream buf;
  buf << in.rdbuf();
  if (!in)
    return status::error(errc::not_found, "not a readable regular file");
  return buf.str();
}

} // namespace

bool is_example_slug(std::string_view text) {
  if (text.empty() || text.size() > max_key_bytes || !is_lower_alnum(text.front()))
    return false;
  return std::all_of(text.begin(), text.end(),
                     [](char ch) { return is_lower_alnum(ch) || ch == '-'; });
}

status check_example_skill(const example_skill& skill, const std::string& path,
                           const example_skill_limits& limits) {
  if (!is_example_slug(skill.slug))
    return at(path + ".slug", errc::out_of_range, "must match ^[a-z0-9][a-z0-9-]{0,63}$");
  if (auto ok = check_text(path + ".name", skill.name, limits.max_name_bytes, true); !ok)
    return ok;
  if (auto ok =
        check_text(path + ".description", skill.description, limits.max_description_bytes, true);
      !ok)
    return ok;
  if (auto ok = check_text(path + ".body", skill.body, limits.max_body_bytes, false); !ok)
    return ok;
  if (skill.dependencies.empty() || skill.dependencies.size() > limits.max_dependencies)
    return at(path + ".dependencies", errc::out_of_range,
              "must list 1 to " + std::to_string(limits.max_dependencies) + " dependencies");
  for (std::size_t dep_idx = 0; dep_idx < skill.dependencies.size(); ++dep_idx)
    if (auto ok = check_dependency(skill.dependencies[dep_idx],
                                   path + ".dependencies[" + std::to_string(dep_idx) + "]", limits);
        !ok)
      return ok;
  return status::ok();
}

result<std::vector<example_skill>> parse_example_catalog(std::string_view catalog_json,
                                                         const example_body_reader& read_body,
                                                         const example_skill_limits& limits) {
  try {
    // The document: {"version": 1, "skills": [...]}.
    if (catalog_json.size() > limits.max_catalog_bytes)
      return status::error(errc::out_of_range, "catalog: longer than "
                                                 + std::to_string(limits.max_catalog_bytes)
                                                 + " bytes");
    auto doc =
      parse_json_object(catalog_json, {{"version", json_kind::integer, true},
                                       {"skills", json_kind::array, true, limits.max_skills}});
    if (!doc)
      return within("catalog", doc.error());
    if ((*doc)["version"] != 1)
      return status::error(errc::out_of_range, "catalog.version: must be 1");

    // Each entry: its fields, its body, then what it would send.
    std::vector<example_skill> out;
    const auto& entries = (*doc)["skills"];
    for (std::size_t skill_idx = 0; skill_idx < entries.size(); ++skill_idx) {
      auto path = "skills[" + std::to_string(skill_idx) + "]";
      const auto& entry = entries[skill_idx];
      example_skill skill;
      if (auto ok = read_entry(entry, path, limits,
                               {{"mcp", json_kind::string, true, max_key_bytes},
                                {"body", json_kind::string, true, max_key_bytes + 3}},
                               skill);
          !ok)
        return ok;
      skill.mcp = entry["mcp"].get<std::string>();
      skill.body_file = entry["body"].get<std::string>();
      if (!is_example_slug(skill.mcp))
        return at(path + ".mcp", errc::out_of_range, "must match ^[a-z0-9][a-z0-9-]{0,63}$");
      if (!is_body_file_name(skill.body_file))
        return at(path + ".body", errc::out_of_range,
                  "must be a file name matching ^[a-z0-9][a-z0-9-]{0,63}\\.md$");
      auto body = read_body(skill.body_file);
      if (!body)
        return within(path + ".body", body.error());
      skill.body = std::move(body).value();
      if (auto ok = check_example_skill(skill, path, limits); !ok)
        return ok;
      out.push_back(std::move(skill));
    }
    if (auto ok = check_unique_slugs(out); !ok)
      return ok;
    return out;
  } catch (const std::exception&) {
    // Only allocation failures get here: parsing runs without exceptions.
    return status::error(errc::internal, "cannot read the catalog");
  }
}

result<std::vector<example_skill>> load_example_catalog(const std::string& dir,
                                                        const example_skill_limits& limits) {
  const std::filesystem::path root{dir};
  auto text = read_bounded_file(root / "catalog.json", limits.max_catalog_bytes);
  if (!text)
    return within("catalog.json", text.error());
  return parse_example_catalog(
    *text,
    [&](const std::string& file_name) {
      return read_bounded_file(root / file_name, limits.max_body_bytes);
    },
    limits);
}

std::vector<std::string> example_mcp_keys(const std::vector<example_skill>& catalog) {
  std::vector<std::string> out;
  for (const auto& skill : catalog)
    if (std::find(out.begin(), out.end(), skill.mcp) == out.end())
      out.push_back(skill.mcp);
  return out;
}

result<std::vector<example_skill>> select_examples(const std::vector<example_skill>& catalog,
                                                   std::string_view mcp) {
  std::vector<example_skill> out;
  std::copy_if(catalog.begin(), catalog.end(), std::back_inserter(out),
               [&](const example_skill& skill) { return skill.mcp == mcp; });
  if (!out.empty())
    return out;
  std::string known;
  for (const auto& key : example_mcp_keys(catalog))
    known += (known.empty() ? "" : ", ") + key;
  return status::error(errc::not_found,
                       "mcp: no example skill belongs to this key; the catalog has: "
                         + (known.empty() ? std::string{"none"} : known));
}

std::string install_request_json(const std::vector<example_skill>& skills, bool dry_run) {
  auto entries = json::array();
  for (const auto& skill : skills) {
    auto deps = json::array();
    for (const auto& dep : skill.dependencies) {
      json entry{{"preset_id", dep.preset_id}, {"tools", dep.tools}};
      if (!dep.variant.empty())
        entry["variant"] = dep.variant;
      deps.push_back(std::move(entry));
    }
    entries.push_back({{"slug", skill.slug},
                       {"name", skill.name},
                       {"description", skill.description},
                       {"body", skill.body},
                       {"dependencies", std::move(deps)}});
  }
  // Texts that are not UTF-8 never get this far (check_example_skill);
  // replace keeps dump() from throwing if one did.
  return json{{"dry_run", dry_run}, {"skills", std::move(entries)}}.dump(
    -1, ' ', false, json::error_handler_t::replace);
}

result<example_install_request> parse_install_request(std::string_view body,
                                                      const example_skill_limits& limits) {
  try {
    auto doc = parse_json_object(body, {{"dry_run", json_kind::boolean, true},
                                        {"skills", json_kind::array, true, limits.max_skills}});
    if (!doc)
      return doc.error();
    example_install_request out;
    out.dry_run = (*doc)["dry_run"].get<bool>();
    const auto& entries = (*doc)["skills"];
    if (entries.empty())
      return status::error(errc::out_of_range, "skills: must list at least one skill");
    for (std::size_t skill_idx = 0; skill_idx < entries.size(); ++skill_idx) {
      auto path = "skills[" + std::to_string(skill_idx) + "]";
      const auto& entry = entries[skill_idx];
      example_skill skill;
      if (auto ok = read_entry(entry, path, limits,
                               {{"body", json_kind::string, true, limits.max_body_bytes}}, skill);
          !ok)
        return ok;
      skill.body = entry["body"].get<std::string>();
      if (auto ok = check_example_skill(skill, path, limits); !ok)
        return ok;
      out.skills.push_back(std::move(skill));
    }
    if (auto ok = check_unique_slugs(out.skills); !ok)
      return ok;
    return out;
  } catch (const std::exception&) {
    // Only allocation failures get here: parsing runs without exceptions.
    return status::error(errc::internal, "cannot read the request");
  }
}

} // namespace voxos
