#include "transport/mcp_registry.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "transport/ascii.hpp"
#include "transport/http_client.hpp"
#include "transport/mcp_pagination.hpp"
#include "transport/mcp_tasks.hpp"

namespace voxos {

namespace {

constexpr std::size_t max_tool_name = 64;

// Methods the server itself serves: no extension may take them.
constexpr std::array<std::string_view, 17> core_methods = {"initialize",
                                                           "ping",
                                                           "server/discover",
                                                           "subscriptions/listen",
                                                           "tools/list",
                                                           "tools/call",
                                                           "resources/list",
                                                           "resources/templates/list",
                                                           "resources/read",
                                                           "prompts/list",
                                                           "prompts/get",
                                                           "resources/subscribe",
                                                           "resources/unsubscribe",
                                                           "completion/complete",
                                                           "logging/setLevel",
                                                           "notifications/initialized",
                                                           "notifications/cancelled"};

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

status refuse(std::string what) {
  return status::error(errc::config_invalid, std::move(what));
}

/// Sets `name` to `value` in `object` unless the value is empty or null.
void put(nlohmann::json& object, const char* name, const std::string& value) {
  if (!value.empty())
    object[name] = value;
}
void put(nlohmann::json& object, const char* name, const nlohmann::json& value) {
  if (!value.is_null())
    object[name] = value;
}

/// A schema for tools: an object whose "type" is "object".
bool is_object_schema(const nlohmann::json& schema) {
  return schema.is_object() && schema.contains("type") && schema["type"] == "object";
}

/// Splits a level-1 URI template into its literals and variable names.
status parse_template(std::string_view text, std::vector<std::string>& literals,
                      std::vector<std::string>& names) {
  literals.emplace_back();
  for (std::size_t pos = 0; pos < text.size();) {
    if (text[pos] == '}')
      return refuse("resource template: unbalanced '}'");
    if (text[pos] != '{') {
      literals.back() += text[pos++];
      continue;
    }
    auto close = text.find('}', pos);
    if (close == std::string_view::npos)
      return refuse("resource template: unbalanced '{'");
    auto name = text.substr(pos + 1, close - pos - 1);
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
        }))
      return refuse("resource template: a variable name must be letters, digits or '_' "
                    "(operators such as '+' are not supported)");
    if (std::find(names.begin(), names.end(), name) != names.end())
      return refuse("resource template: a variable appears twice");
    if (!names.empty() && literals.back().empty())
      return refuse("resource template: two variables must be separated by text");
    names.emplace_back(name);
    literals.emplace_back();
    pos = close + 1;
  }
  if (names.empty())
    return refuse("resource template: no variable (register a resource instead)");
  return status::ok();
}

template <class Map>
std::vector<std::string> keys_of(const Map& map) {
  std::vector<std::string> keys;
  keys.reserve(map.size());
  for (const auto& [key, value] : map)
    keys.emplace_back(key);
  return keys;
}

template <class Map, class Listed>
result<mcp_listing> page_of(const Map& map, std::string_view list,
                            const std::optional<std::string>& cursor, std::size_t page_size,
                            Listed listed) {
  auto keys = keys_of(map);
  auto page = mcp_page_of(keys, list, cursor, page_size);
  if (!page)
    return page.error();
  mcp_listing listing;
  for (auto idx = page->begin; idx < page->end; ++idx)
    listing.items.push_back(listed(*map.find(keys[idx])->second));
  listing.next_cursor = std::move(page->next_cursor);
  return listing;
}

nlohmann::json listed_resource(const mcp_resource& resource) {
  nlohmann::json out = {{"uri", resource.uri}, {"name", resource.name}};
  put(out, "title", resource.title);
  put(out, "description", resource.description);
  put(out, "mimeType", resource.mime_type);
  put(out, "annotations", resource.annotations);
  return out;
}

nlohmann::json listed_prompt(const mcp_prompt& prompt) {
  nlohmann::json out = {{"name", prompt.name}};
  put(out, "title", prompt.title);
  put(out, "description", prompt.description);
  if (!prompt.arguments.empty()) {
    auto& arguments = out["arguments"] = nlohmann::json::array();
    for (const auto& argument : prompt.arguments) {
      nlohmann::json item = {{"name", argument.name}, {"required", argument.required}};
      put(item, "description", argument.description);
      arguments.push_back(std::move(item));
    }
  }
  return out;
}

} // namespace

namespace {

/// Collects the annotations under `node`; `reachable` while the chain from
/// the root is `properties` keys only.
status collect_headers(const nlohmann::json& node, bool reachable, std::vector<std::string>& path,
                       std::vector<mcp_header_param>& out) {
  if (node.is_array()) {
    for (const auto& item : node)
      if (auto found = collect_headers(item, false, path, out); !found)
        return found;
    return status::ok();
  }
  if (!node.is_object())
    return status::ok();
  if (auto found = node.find("x-mcp-header"); found != node.end()) {
    if (!reachable || path.empty())
      return refuse("x-mcp-header is allowed only on properties reached from the root by "
                    "'properties' alone");
    if (!found->is_string() || !is_http_token(found->get_ref<const std::string&>()))
      return refuse("x-mcp-header must be a non-empty HTTP token");
    auto type = node.contains("type") && node["type"].is_string() ? node["type"].get<std::string>()
                                                                  : std::string{};
    if (type != "string" && type != "integer" && type != "boolean")
      return refuse("x-mcp-header is allowed only on string, integer or boolean properties");
    const auto& header = found->get_ref<const std::string&>();
    for (const auto& other : out)
      if (equals_ignoring_case(other.header, header))
        return refuse("x-mcp-header values must be unique, ignoring case");
    out.push_back({path, header, type});
  }
  for (const auto& [key, value] : node.items()) {
    if (key == "properties" && reachable && value.is_object()) {
      for (const auto& [name, sub] : value.items()) {
        path.push_back(name);
        auto found = collect_headers(sub, true, path, out);
        path.pop_back();
        if (!found)
          return found;
      }
    } else if (key != "x-mcp-header") {
      if (auto found = collect_headers(value, false, path, out); !found)
        return found;
    }
  }
  return status::ok();
}

} // namespace

result<std::vector<mcp_header_param>> mcp_header_params(const nlohmann::json& input_schema) {
  std::vector<mcp_header_param> out;
  std::vector<std::string> path;
  if (auto found = collect_headers(input_schema, true, path, out); !found)
    return found;
  return out;
}

bool mcp_tool_name_valid(std::string_view name) {
  return !name.empty() && name.size() <= max_tool_name
         && std::all_of(name.begin(), name.end(), [](char ch) {
              return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.'
                     || ch == '/' || ch == '-';
            });
}

std::optional<std::map<std::string, std::string>>
mcp_match_template(const std::vector<std::string>& literals, const std::vector<std::string>& names,
                   std::string_view uri) {
  // literals[0] var[0] literals[1] var[1] ... literals[n]; a variable runs up
  // to the next literal (never empty, never across '/').
  if (uri.substr(0, literals[0].size()) != literals[0])
    return std::nullopt;
  std::size_t pos = literals[0].size();
  std::map<std::string, std::string> variables;
  for (std::size_t idx = 0; idx < names.size(); ++idx) {
    const auto& next = literals[idx + 1];
    std::size_t end = 0;
    if (next.empty()) {
      // The last variable takes the rest.
      if (idx + 1 != names.size())
        return std::nullopt;
      end = uri.size();
    } else {
      end = uri.find(next, pos);
      if (end == std::string_view::npos)
        return std::nullopt;
    }
    auto value = uri.substr(pos, end - pos);
    if (value.empty() || value.find('/') != std::string_view::npos)
      return std::nullopt;
    variables[names[idx]] = std::string{value};
    pos = end + next.size();
  }
  if (pos != uri.size())
    return std::nullopt;
  return variables;
}

status mcp_registry::add_tool(mcp_tool tool) {
  if (!mcp_tool_name_valid(tool.name))
    return refuse("tool name must be 1 to 64 of A-Z a-z 0-9 _ . / -");
  if (!tool.handler)
    return refuse("tool " + tool.name + ": no handler");
  if (!is_object_schema(tool.input_schema))
    return refuse("tool " + tool.name
                  + ": inputSchema must be an object schema (\"type\": \"object\")");
  if (!tool.output_schema.is_null() && !is_object_schema(tool.output_schema))
    return refuse("tool " + tool.name
                  + ": outputSchema must be an object schema (\"type\": \"object\")");
  if (!tool.annotations.is_null() && !tool.annotations.is_object())
    return refuse("tool " + tool.name + ": annotations must be an object");
  if (!tool.meta.is_null() && !tool.meta.is_object())
    return refuse("tool " + tool.name + ": _meta must be an object");
  auto compiled = compile_schema(tool.input_schema, schema_draft::draft2020_12);
  if (!compiled)
    return refuse("tool " + tool.name + ": inputSchema: " + compiled.error().message());
  auto headers = mcp_header_params(tool.input_schema);
  if (!headers)
    return refuse("tool " + tool.name + ": inputSchema: " + headers.error().message());

  nlohmann::json listed = {{"name", tool.name}};
  put(listed, "title", tool.title);
  put(listed, "description", tool.description);
  listed["inputSchema"] = tool.input_schema;
  put(listed, "outputSchema", tool.output_schema);
  put(listed, "annotations", tool.annotations);
  put(listed, "_meta", tool.meta);
  auto name = tool.name;
  auto entry = std::make_shared<const mcp_tool_entry>(
    mcp_tool_entry{std::move(tool), std::move(*compiled), std::move(listed), std::move(*headers)});
  std::unique_lock lock{mutex_};
  if (tools_.count(name) != 0)
    return refuse("tool " + name + " is already registered");
  tools_.emplace(std::move(name), std::move(entry));
  return status::ok();
}

bool mcp_registry::remove_tool(std::string_view name) {
  std::unique_lock lock{mutex_};
  auto found = tools_.find(name);
  if (found == tools_.end())
    return false;
  tools_.erase(found);
  return true;
}

status mcp_registry::add_resource(mcp_resource resource) {
  if (resource.uri.empty() || resource.name.empty())
    return refuse("resource: uri and name are required");
  if (!resource.read)
    return refuse("resource " + resource.uri + ": no handler");
  if (!resource.annotations.is_null() && !resource.annotations.is_object())
    return refuse("resource " + resource.uri + ": annotations must be an object");
  auto uri = resource.uri;
  std::unique_lock lock{mutex_};
  if (resources_.count(uri) != 0)
    return refuse("resource " + uri + " is already registered");
  for (const auto& provider : providers_)
    if (starts_with(uri, provider->uri_prefix))
      return refuse("resource " + uri + " lies under the prefix of a resource provider");
  resources_.emplace(std::move(uri), std::make_shared<const mcp_resource>(std::move(resource)));
  return status::ok();
}

bool mcp_registry::remove_resource(std::string_view uri) {
  std::unique_lock lock{mutex_};
  auto found = resources_.find(uri);
  if (found == resources_.end())
    return false;
  resources_.erase(found);
  return true;
}

status mcp_registry::add_resource_template(mcp_resource_template resource_template) {
  if (resource_template.uri_template.empty() || resource_template.name.empty())
    return refuse("resource template: uriTemplate and name are required");
  if (!resource_template.read)
    return refuse("resource template " + resource_template.uri_template + ": no handler");
  mcp_template_entry entry;
  if (auto parsed = parse_template(resource_template.uri_template, entry.literals, entry.names);
      !parsed)
    return parsed;
  entry.listed = {{"uriTemplate", resource_template.uri_template},
                  {"name", resource_template.name}};
  put(entry.listed, "title", resource_template.title);
  put(entry.listed, "description", resource_template.description);
  put(entry.listed, "mimeType", resource_template.mime_type);
  put(entry.listed, "annotations", resource_template.annotations);
  auto key = resource_template.uri_template;
  entry.resource_template = std::move(resource_template);
  std::unique_lock lock{mutex_};
  if (templates_.count(key) != 0)
    return refuse("resource template " + key + " is already registered");
  templates_.emplace(std::move(key), std::make_shared<const mcp_template_entry>(std::move(entry)));
  return status::ok();
}

status mcp_registry::add_resource_provider(mcp_resource_provider provider) {
  if (provider.uri_prefix.empty())
    return refuse("resource provider: uri_prefix is required");
  if (!provider.list || !provider.read)
    return refuse("resource provider " + provider.uri_prefix + ": list and read are required");
  const auto& prefix = provider.uri_prefix;
  std::unique_lock lock{mutex_};
  for (const auto& other : providers_)
    if (starts_with(prefix, other->uri_prefix) || starts_with(other->uri_prefix, prefix))
      return refuse("resource provider " + prefix + " overlaps the prefix of another");
  if (auto found = resources_.lower_bound(prefix);
      found != resources_.end() && starts_with(found->first, prefix))
    return refuse("resource provider " + prefix + " covers the registered resource "
                  + found->first);
  providers_.push_back(std::make_shared<const mcp_resource_provider>(std::move(provider)));
  return status::ok();
}

status mcp_registry::add_prompt(mcp_prompt prompt) {
  if (prompt.name.empty())
    return refuse("prompt: name is required");
  if (!prompt.get)
    return refuse("prompt " + prompt.name + ": no handler");
  for (const auto& argument : prompt.arguments)
    if (argument.name.empty())
      return refuse("prompt " + prompt.name + ": an argument has no name");
  auto name = prompt.name;
  std::unique_lock lock{mutex_};
  if (prompts_.count(name) != 0)
    return refuse("prompt " + name + " is already registered");
  prompts_.emplace(std::move(name), std::make_shared<const mcp_prompt>(std::move(prompt)));
  return status::ok();
}

bool mcp_registry::remove_prompt(std::string_view name) {
  std::unique_lock lock{mutex_};
  auto found = prompts_.find(name);
  if (found == prompts_.end())
    return false;
  prompts_.erase(found);
  return true;
}

void mcp_registry::set_completion(mcp_completion_handler handler) {
  auto shared =
    handler ? std::make_shared<const mcp_completion_handler>(std::move(handler)) : nullptr;
  std::unique_lock lock{mutex_};
  completion_ = std::move(shared);
}

status mcp_registry::add_extension(mcp_extension extension) {
  // An identifier with a prefix, as _meta keys have: "vendor.example/name".
  auto slash = extension.id.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == extension.id.size())
    return refuse("extension id must be a prefixed name such as io.modelcontextprotocol/skills");
  if (!extension.settings.is_object())
    return refuse("extension " + extension.id + ": settings must be an object");
  for (const auto& [method, entry] : extension.methods) {
    if (method.empty() || !entry.handler)
      return refuse("extension " + extension.id + ": a method has no name or no handler");
    if (std::find(core_methods.begin(), core_methods.end(), method) != core_methods.end())
      return refuse("extension " + extension.id + ": method " + method + " is the server's own");
    // Reserved for the tasks extension, which the server serves itself.
    if (method.rfind("tasks/", 0) == 0 || method.rfind("notifications/tasks", 0) == 0)
      return refuse("extension " + extension.id + ": method " + method
                    + " is reserved for the tasks extension");
  }
  if (extension.id == mcp_tasks_extension)
    return refuse("extension " + extension.id + " is the server's own");
  std::unique_lock lock{mutex_};
  if (extensions_.count(extension.id) != 0)
    return refuse("extension " + extension.id + " is already registered");
  for (const auto& [method, entry] : extension.methods)
    if (methods_.count(method) != 0)
      return refuse("extension " + extension.id + ": method " + method + " is already served");
  for (auto& [method, entry] : extension.methods)
    methods_.emplace(method, std::make_shared<const mcp_extension_method>(std::move(entry)));
  extensions_.emplace(std::move(extension.id), std::move(extension.settings));
  return status::ok();
}

std::shared_ptr<const mcp_tool_entry> mcp_registry::tool(std::string_view name) const {
  std::shared_lock lock{mutex_};
  auto found = tools_.find(name);
  return found == tools_.end() ? nullptr : found->second;
}

std::shared_ptr<const mcp_prompt> mcp_registry::prompt(std::string_view name) const {
  std::shared_lock lock{mutex_};
  auto found = prompts_.find(name);
  return found == prompts_.end() ? nullptr : found->second;
}

std::optional<mcp_resource_match> mcp_registry::resource(std::string_view uri) const {
  std::shared_lock lock{mutex_};
  for (const auto& provider : providers_)
    if (starts_with(uri, provider->uri_prefix))
      return mcp_resource_match{provider->read, provider->cache, {}};
  if (auto found = resources_.find(uri); found != resources_.end())
    return mcp_resource_match{found->second->read, found->second->cache, {}};
  for (const auto& [key, entry] : templates_)
    if (auto variables = mcp_match_template(entry->literals, entry->names, uri))
      return mcp_resource_match{entry->resource_template.read, entry->resource_template.cache,
                                std::move(*variables)};
  return std::nullopt;
}

std::shared_ptr<const mcp_completion_handler> mcp_registry::completion() const {
  std::shared_lock lock{mutex_};
  return completion_;
}

std::shared_ptr<const mcp_extension_method>
mcp_registry::extension_method(std::string_view method) const {
  std::shared_lock lock{mutex_};
  auto found = methods_.find(method);
  return found == methods_.end() ? nullptr : found->second;
}

std::vector<std::shared_ptr<const mcp_resource_provider>> mcp_registry::resource_providers() const {
  std::shared_lock lock{mutex_};
  return providers_;
}

result<mcp_listing> mcp_registry::page(mcp_list list, const std::optional<std::string>& cursor,
                                       std::size_t page_size,
                                       const std::vector<mcp_resource>& provided) const {
  std::shared_lock lock{mutex_};
  switch (list) {
  case mcp_list::tools:
    return page_of(tools_, "tools", cursor, page_size,
                   [](const mcp_tool_entry& entry) { return entry.listed; });
  case mcp_list::resources: {
    if (provided.empty())
      return page_of(resources_, "resources", cursor, page_size, listed_resource);
    std::map<std::string_view, const mcp_resource*> merged;
    for (const auto& [uri, resource] : resources_)
      merged.emplace(uri, resource.get());
    for (const auto& resource : provided)
      merged.emplace(resource.uri, &resource);
    return page_of(merged, "resources", cursor, page_size, listed_resource);
  }
  case mcp_list::resource_templates:
    return page_of(templates_, "resource_templates", cursor, page_size,
                   [](const mcp_template_entry& entry) { return entry.listed; });
  case mcp_list::prompts:
    return page_of(prompts_, "prompts", cursor, page_size, listed_prompt);
  }
  return status::error(errc::internal, "unknown list");
}

nlohmann::json mcp_registry::capabilities(bool logging) const {
  std::shared_lock lock{mutex_};
  auto out = nlohmann::json::object();
  if (!tools_.empty())
    out["tools"] = {{"listChanged", true}};
  if (!resources_.empty() || !templates_.empty() || !providers_.empty())
    out["resources"] = {{"subscribe", true}, {"listChanged", true}};
  if (!prompts_.empty())
    out["prompts"] = {{"listChanged", true}};
  if (completion_)
    out["completions"] = nlohmann::json::object();
  if (logging)
    out["logging"] = nlohmann::json::object();
  if (!extensions_.empty()) {
    auto& extensions = out["extensions"] = nlohmann::json::object();
    for (const auto& [id, settings] : extensions_)
      extensions[id] = settings;
  }
  return out;
}

} // namespace voxos
