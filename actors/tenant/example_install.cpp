#include "actors/tenant/example_install.hpp"

#include <exception>
#include <optional>

#include <nlohmann/json.hpp>

#include "transport/json_body.hpp"

namespace voxos {

namespace {

using nlohmann::json;

constexpr example_outcome all_outcomes[] = {example_outcome::installed,
                                            example_outcome::would_install, example_outcome::exists,
                                            example_outcome::blocked};
constexpr skill_readiness all_readiness[] = {skill_readiness::ready, skill_readiness::warning,
                                             skill_readiness::blocked};

/// The member of `all` whose name is `text`, if any.
template <class Enum, std::size_t N>
std::optional<Enum> from_name(const Enum (&all)[N], const std::string& text) {
  for (auto x : all)
    if (to_string(x) == text)
      return x;
  return std::nullopt;
}

status at(const std::string& path, errc code, const std::string& what) {
  return status::error(code, path + ": " + what);
}

/// One answer entry, its fields checked (see the header).
result<example_verdict> verdict_from_json(const json& entry, const std::string& path) {
  if (!entry.is_object())
    return at(path, errc::wrong_type, "expected an object");
  if (auto ok = check_json_fields(entry, {{"slug", json_kind::string, true, 64},
                                          {"outcome", json_kind::string, true, 32},
                                          {"readiness", json_kind::string, true, 32},
                                          {"reason", json_kind::string, true, 64},
                                          {"server_id", json_kind::string, false, 64}});
      !ok)
    return at(path, ok.code(), ok.message());
  example_verdict out;
  out.slug = entry["slug"].get<std::string>();
  auto outcome = from_name(all_outcomes, entry["outcome"].get<std::string>());
  if (!outcome)
    return at(path + ".outcome", errc::out_of_range,
              "must be installed, would_install, exists or blocked");
  auto readiness = from_name(all_readiness, entry["readiness"].get<std::string>());
  if (!readiness)
    return at(path + ".readiness", errc::out_of_range, "must be ready, warning or blocked");
  out.outcome = *outcome;
  out.check.readiness = *readiness;
  out.check.reason = entry["reason"].get<std::string>();
  if (out.check.reason.empty())
    return at(path + ".reason", errc::out_of_range, "must not be empty");
  if (auto server = entry.find("server_id"); server != entry.end())
    out.check.server_id = server->get<std::string>();
  bool blocked_outcome = out.outcome == example_outcome::blocked;
  bool blocked_readiness = out.check.readiness == skill_readiness::blocked;
  if (out.outcome != example_outcome::exists && blocked_outcome != blocked_readiness)
    return at(path + ".outcome", errc::out_of_range,
              "blocked if and only if readiness is blocked (unless exists)");
  return out;
}

} // namespace

std::string_view to_string(example_outcome x) noexcept {
  switch (x) {
  case example_outcome::installed:
    return "installed";
  case example_outcome::would_install:
    return "would_install";
  case example_outcome::exists:
    return "exists";
  case example_outcome::blocked:
    return "blocked";
  }
  return "blocked";
}

std::vector<example_verdict> plan_example_install(const tenant_state& tenant,
                                                  const std::vector<example_skill>& skills,
                                                  const std::set<std::string>& existing_slugs,
                                                  bool dry_run) {
  std::vector<example_verdict> out;
  std::set<std::string> planned;
  for (const auto& skill : skills) {
    example_verdict verdict;
    verdict.slug = skill.slug;
    verdict.check = check_skill(tenant, skill.dependencies);
    if (existing_slugs.count(skill.slug) > 0 || !planned.insert(skill.slug).second)
      verdict.outcome = example_outcome::exists;
    else if (verdict.check.readiness == skill_readiness::blocked)
      verdict.outcome = example_outcome::blocked;
    else
      verdict.outcome = dry_run ? example_outcome::would_install : example_outcome::installed;
    out.push_back(std::move(verdict));
  }
  return out;
}

std::string install_response_json(const std::vector<example_verdict>& verdicts) {
  auto entries = json::array();
  for (const auto& v : verdicts) {
    json entry{{"slug", v.slug},
               {"outcome", to_string(v.outcome)},
               {"readiness", to_string(v.check.readiness)},
               {"reason", v.check.reason}};
    if (!v.check.server_id.empty())
      entry["server_id"] = v.check.server_id;
    entries.push_back(std::move(entry));
  }
  return json{{"skills", std::move(entries)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

result<std::vector<example_verdict>>
parse_install_response(std::string_view body, const example_install_request& request) {
  try {
    auto doc = parse_json_object(body, {{"skills", json_kind::array, true, request.skills.size()}});
    if (!doc)
      return doc.error();
    const auto& entries = (*doc)["skills"];
    if (entries.size() != request.skills.size())
      return status::error(errc::out_of_range, "skills: must hold one entry per requested skill");
    std::vector<example_verdict> out;
    for (std::size_t skill_idx = 0; skill_idx < entries.size(); ++skill_idx) {
      auto path = "skills[" + std::to_string(skill_idx) + "]";
      auto verdict = verdict_from_json(entries[skill_idx], path);
      if (!verdict)
        return verdict.error();
      if (verdict->slug != request.skills[skill_idx].slug)
        return at(path + ".slug", errc::out_of_range, "must be the requested skill's, in order");
      auto wrong_mode =
        request.dry_run ? example_outcome::installed : example_outcome::would_install;
      if (verdict->outcome == wrong_mode)
        return at(path + ".outcome", errc::out_of_range,
                  request.dry_run ? "installed in a dry run" : "would_install outside a dry run");
      out.push_back(std::move(verdict).value());
    }
    return out;
  } catch (const std::exception&) {
    // Only allocation failures get here: parsing runs without exceptions.
    return status::error(errc::internal, "cannot read the answer");
  }
}

} // namespace voxos
