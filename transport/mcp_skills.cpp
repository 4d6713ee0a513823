// The Skills extension served from a provider (mcp_skills.hpp): the caller's
// catalog of one request, its entries with digests, the `skill://`
// resources, directory reads, and the registration on mcp_server.
#include "transport/mcp_skills.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/base64.hpp"
#include "config/log.hpp"
#include "transport/auth/auth_crypto.hpp"
#include "transport/mcp_pagination.hpp"

namespace voxos {

namespace {

constexpr std::string_view scheme = "skill://";
constexpr std::string_view skill_md_file = "SKILL.md";
constexpr std::string_view markdown = "text/markdown";
constexpr std::string_view directory_type = "inode/directory";

// -- the caller's catalog --------------------------------------------------------------

/// The skills one request serves: checked, one per name, bounded, in name
/// order.
struct catalog {
  std::vector<mcp_skill> skills;

  const mcp_skill* find(std::string_view name) const {
    auto found = std::lower_bound(
      skills.begin(), skills.end(), name,
      [](const mcp_skill& skill, std::string_view key) { return skill.name < key; });
    return found != skills.end() && found->name == name ? &*found : nullptr;
  }
};

/// Asks the provider and keeps what may be served (mcp_skills.hpp, "Per
/// caller").
result<catalog> catalog_of(const mcp_skill_provider& provider, const mcp_skills_options& options,
                           const mcp_caller& caller) {
  auto answered = provider(caller);
  if (!answered)
    return answered.error();
  auto& skills = *answered;
  std::stable_sort(skills.begin(), skills.end(),
                   [](const mcp_skill& a, const mcp_skill& b) { return a.name < b.name; });
  catalog out;
  std::size_t total = 0;
  std::size_t left_out = 0;
  std::string previous; // the name of the skill before, served or not
  for (auto& skill : skills) {
    bool repeated = !previous.empty() && skill.name == previous;
    previous = skill.name;
    if (repeated || !mcp_check_skill(skill, options).is_ok()) {
      ++left_out;
      continue;
    }
    auto bytes = mcp_skill_bytes(skill);
    if (out.skills.size() >= options.max_skills || total + bytes > options.max_total_bytes) {
      ++left_out;
      continue;
    }
    total += bytes;
    out.skills.push_back(std::move(skill));
  }
  if (left_out > 0)
    log::debug("mcp_skills", std::to_string(left_out)
                               + " skill(s) left out (a broken rule, a repeated name or a bound)");
  return out;
}

/// The answer to a request whose provider failed.
mcp_error unavailable(const status& failure) {
  log::warn("mcp_skills", "the skill provider failed: " + std::string{to_string(failure.code())});
  return mcp_error{mcp_code::internal_error, "skills unavailable", nullptr};
}

// -- URIs, entries and resources -------------------------------------------------------

std::string skill_uri(const mcp_skill& skill, std::string_view path) {
  std::string uri{scheme};
  uri += skill.name;
  if (!path.empty()) {
    uri += '/';
    uri += path;
  }
  return uri;
}

nlohmann::json manifest_item(std::string uri, std::string_view bytes) {
  return {{"uri", std::move(uri)}, {"digest", mcp_skill_digest(bytes)}, {"size", bytes.size()}};
}

nlohmann::json frontmatter_of(const mcp_skill& skill) {
  nlohmann::json out = {{"name", skill.name}, {"description", skill.description}};
  if (!skill.metadata.empty())
    out["metadata"] = skill.metadata;
  return out;
}

/// A skill entry of skills/list and skills/get: SKILL.md first, then the
/// files in path order, each with the digest and size of its served bytes.
nlohmann::json entry_of(const mcp_skill& skill) {
  auto uri = skill_uri(skill, skill_md_file);
  auto resources = nlohmann::json::array({manifest_item(uri, mcp_skill_md(skill))});
  std::vector<const mcp_skill_file*> files;
  for (const auto& file : skill.files)
    files.push_back(&file);
  std::sort(files.begin(), files.end(),
            [](const mcp_skill_file* a, const mcp_skill_file* b) { return a->path < b->path; });
  for (const auto* file : files)
    resources.push_back(manifest_item(skill_uri(skill, file->path), file->content));
  return {{"uri", std::move(uri)},
          {"frontmatter", frontmatter_of(skill)},
          {"resources", std::move(resources)}};
}

/// The resource of a skill's SKILL.md (`file` null) or of one of its files,
/// as resources/list and directory reads list it.
mcp_resource resource_of(const mcp_skill& skill, const mcp_skill_file* file) {
  mcp_resource out;
  if (!file) {
    out.uri = skill_uri(skill, skill_md_file);
    out.name = skill.name;
    out.title = skill.title;
    out.description = skill.description;
    out.mime_type = markdown;
    return out;
  }
  out.uri = skill_uri(skill, file->path);
  auto slash = file->path.rfind('/');
  out.name = slash == std::string::npos ? file->path : file->path.substr(slash + 1);
  out.mime_type = file->mime_type;
  return out;
}

nlohmann::json listed(const mcp_resource& resource) {
  nlohmann::json out = {{"uri", resource.uri}, {"name", resource.name}};
  if (!resource.title.empty())
    out["title"] = resource.title;
  if (!resource.description.empty())
    out["description"] = resource.description;
  out["mimeType"] = resource.mime_type;
  return out;
}

/// A `skill://` URI split into the skill's name and the rest ("" for the
/// skill's root); nullopt for another scheme or no name.
std::optional<std::pair<std::string_view, std::string_view>> split_uri(std::string_view uri) {
  if (uri.substr(0, scheme.size()) != scheme)
    return std::nullopt;
  uri.remove_prefix(scheme.size());
  auto slash = uri.find('/');
  auto name = uri.substr(0, slash);
  if (name.empty())
    return std::nullopt;
  if (slash == std::string_view::npos)
    return std::make_pair(name, std::string_view{});
  return std::make_pair(name, uri.substr(slash + 1));
}

mcp_outcome read_resource(const catalog& skills, const std::string& uri, mcp_call_context& ctx) {
  auto parts = split_uri(uri);
  const mcp_skill* skill = parts ? skills.find(parts->first) : nullptr;
  if (!skill || parts->second.empty())
    return mcp_resource_not_found(uri, ctx);
  if (parts->second == skill_md_file)
    return nlohmann::json{
      {"contents", {{{"uri", uri}, {"mimeType", markdown}, {"text", mcp_skill_md(*skill)}}}}};
  for (const auto& file : skill->files) {
    if (file.path != parts->second)
      continue;
    nlohmann::json content = {{"uri", uri}, {"mimeType", file.mime_type}};
    if (file.binary)
      content["blob"] = base64::encode(reinterpret_cast<const unsigned char*>(file.content.data()),
                                       file.content.size(), base64::alphabet::standard, true);
    else
      content["text"] = file.content;
    return nlohmann::json{{"contents", nlohmann::json::array({std::move(content)})}};
  }
  return mcp_resource_not_found(uri, ctx);
}

// -- the methods -----------------------------------------------------------------------

mcp_error bad_params(std::string message, nlohmann::json data = nullptr) {
  return mcp_error{mcp_code::invalid_params, "Invalid params: " + std::move(message),
                   std::move(data)};
}

/// The request's cursor: nullopt when absent; an error when not a string.
std::optional<mcp_error> cursor_of(const nlohmann::json& params,
                                   std::optional<std::string>& cursor) {
  if (!params.contains("cursor"))
    return std::nullopt;
  if (!params["cursor"].is_string())
    return bad_params("cursor must be a string");
  cursor = params["cursor"].get<std::string>();
  return std::nullopt;
}

mcp_outcome list_skills(const catalog& skills, const mcp_skills_options& options,
                        const nlohmann::json& params) {
  std::optional<std::string> cursor;
  if (auto refused = cursor_of(params, cursor))
    return *refused;
  std::vector<std::string> names;
  for (const auto& skill : skills.skills)
    names.push_back(skill.name);
  auto page = mcp_page_of(names, "skills", cursor, options.page_size);
  if (!page)
    return bad_params("invalid cursor");
  nlohmann::json result = {{"skills", nlohmann::json::array()}};
  for (auto idx = page->begin; idx < page->end; ++idx)
    result["skills"].push_back(entry_of(skills.skills[idx]));
  if (page->next_cursor)
    result["nextCursor"] = *page->next_cursor;
  return result;
}

mcp_outcome get_skill(const catalog& skills, const nlohmann::json& params) {
  if (!params.contains("uri") || !params["uri"].is_string())
    return bad_params("uri must be a string");
  const auto& uri = params["uri"].get_ref<const std::string&>();
  auto parts = split_uri(uri);
  const mcp_skill* skill =
    parts && parts->second == skill_md_file ? skills.find(parts->first) : nullptr;
  if (!skill)
    return bad_params("unknown skill", {{"uri", uri}});
  return nlohmann::json{{"skill", entry_of(*skill)}};
}

/// The direct children of directory `dir` ("" the root) of `skill`, by
/// URI; empty when `dir` is no directory of it.
std::map<std::string, nlohmann::json> children_of(const mcp_skill& skill, std::string_view dir) {
  std::map<std::string, nlohmann::json> children;
  if (dir.empty()) {
    auto readme = listed(resource_of(skill, nullptr));
    auto uri = readme["uri"].get<std::string>();
    children.emplace(std::move(uri), std::move(readme));
  }
  std::string under = dir.empty() ? std::string{} : std::string{dir} + "/";
  for (const auto& file : skill.files) {
    if (file.path.compare(0, under.size(), under) != 0)
      continue;
    auto rest = std::string_view{file.path}.substr(under.size());
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) {
      auto item = listed(resource_of(skill, &file));
      auto uri = item["uri"].get<std::string>();
      children.emplace(std::move(uri), std::move(item));
      continue;
    }
    auto name = std::string{rest.substr(0, slash)};
    auto uri = skill_uri(skill, under + name);
    children.emplace(uri,
                     nlohmann::json{{"uri", uri}, {"name", name}, {"mimeType", directory_type}});
  }
  return children;
}

mcp_outcome read_directory(const catalog& skills, const mcp_skills_options& options,
                           const nlohmann::json& params) {
  if (!params.contains("uri") || !params["uri"].is_string())
    return bad_params("uri must be a string");
  const auto& uri = params["uri"].get_ref<const std::string&>();
  std::optional<std::string> cursor;
  if (auto refused = cursor_of(params, cursor))
    return *refused;
  auto parts = split_uri(uri);
  const mcp_skill* skill = parts ? skills.find(parts->first) : nullptr;
  // A directory URI has no trailing slash; SKILL.md and files are not
  // directories, and a directory holds at least one file.
  std::map<std::string, nlohmann::json> children;
  if (skill && uri.back() != '/')
    children = children_of(*skill, parts->second);
  if (children.empty())
    return bad_params("not a directory", {{"uri", uri}});
  std::vector<std::string> keys;
  for (const auto& [key, item] : children)
    keys.push_back(key);
  auto page = mcp_page_of(keys, "directory " + uri, cursor, options.directory_page_size);
  if (!page)
    return bad_params("invalid cursor");
  nlohmann::json result = {{"resources", nlohmann::json::array()}};
  for (auto idx = page->begin; idx < page->end; ++idx)
    result["resources"].push_back(children[keys[idx]]);
  if (page->next_cursor)
    result["nextCursor"] = *page->next_cursor;
  return result;
}

/// The shared state of the registered handlers.
struct skills_service {
  mcp_skill_provider provider;
  mcp_skills_options options;

  /// Runs `serve` over the caller's catalog, or answers the provider's failure.
  template <class Serve>
  mcp_outcome with_catalog(const mcp_caller& caller, Serve serve) const {
    auto skills = catalog_of(provider, options, caller);
    if (!skills)
      return unavailable(skills.error());
    return serve(*skills);
  }
};

mcp_extension_method method_of(std::shared_ptr<const skills_service> service,
                               mcp_outcome (*run)(const catalog&, const mcp_skills_options&,
                                                  const nlohmann::json&)) {
  mcp_extension_method method;
  method.cacheable = true;
  method.cache = service->options.cache;
  method.handler = [service, run](const nlohmann::json& params, mcp_call_context& ctx) {
    return service->with_catalog(
      ctx.caller(), [&](const catalog& skills) { return run(skills, service->options, params); });
  };
  return method;
}

} // namespace

std::string mcp_skill_digest(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned char byte : auth::sha256(bytes)) {
    out += hex[byte >> 4];
    out += hex[byte & 0xf];
  }
  return out;
}

status mcp_add_skills(mcp_server& server, mcp_skill_provider provider, mcp_skills_options options) {
  if (!provider)
    return status::error(errc::config_invalid, "skills: a provider is required");
  if (options.page_size == 0 || options.directory_page_size == 0)
    return status::error(errc::config_invalid, "skills: page sizes must be at least 1");
  auto service =
    std::make_shared<const skills_service>(skills_service{std::move(provider), std::move(options)});

  mcp_resource_provider resources;
  resources.uri_prefix = std::string{scheme};
  resources.cache = service->options.cache;
  resources.list = [service](const mcp_caller& caller) -> result<std::vector<mcp_resource>> {
    auto skills = catalog_of(service->provider, service->options, caller);
    if (!skills)
      return skills.error();
    std::vector<mcp_resource> out;
    for (const auto& skill : skills->skills) {
      out.push_back(resource_of(skill, nullptr));
      for (const auto& file : skill.files)
        out.push_back(resource_of(skill, &file));
    }
    return out;
  };
  resources.read = [service](const std::string& uri, const std::map<std::string, std::string>&,
                             mcp_call_context& ctx) {
    return service->with_catalog(
      ctx.caller(), [&](const catalog& skills) { return read_resource(skills, uri, ctx); });
  };

  mcp_extension extension;
  extension.id = std::string{mcp_skills_extension_id};
  extension.methods["skills/list"] = method_of(service, list_skills);
  extension.methods["skills/get"] =
    method_of(service, [](const catalog& skills, const mcp_skills_options&,
                          const nlohmann::json& params) { return get_skill(skills, params); });
  if (service->options.directory_read) {
    extension.settings = {{"directoryRead", true}};
    extension.methods["resources/directory/read"] = method_of(service, read_directory);
  }
  if (auto added = server.add_resource_provider(std::move(resources)); !added)
    return added;
  return server.add_extension(std::move(extension));
}

} // namespace voxos
