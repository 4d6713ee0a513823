// What an MCP server offers: its tools, resources, resource templates,
// prompts, completion handler and extensions, checked when registered, and
// listed a page at a time in key order (mcp_pagination.hpp). Part of
// mcp_server; CAF-free.
//
// Threading: every member may be called from any thread. Lookups hand out
// shared pointers to immutable entries, so a handler runs without the
// registry's lock and may itself register or remove.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"
#include "transport/json_schema.hpp"
#include "transport/mcp_server.hpp"

namespace voxos {

/// A tool argument mirrored into an `Mcp-Param-<header>` HTTP header
/// (2026-07-28, `x-mcp-header`): where it sits in the arguments (a chain of
/// property names) and its type ("string", "integer" or "boolean").
struct mcp_header_param {
  std::vector<std::string> path;
  std::string header;
  std::string type;
};

struct mcp_tool_entry {
  mcp_tool tool;
  compiled_schema arguments; ///< the input schema, compiled
  nlohmann::json listed;     ///< the Tool object tools/list shows
  std::vector<mcp_header_param> header_params;
};

/// The `x-mcp-header` annotations of an input schema. Errors (config_invalid):
/// a value that is empty, not an RFC 9110 token, or repeated (ignoring
/// case); one on a property whose type is not string, integer or boolean; one
/// not reachable from the root by `properties` alone.
result<std::vector<mcp_header_param>> mcp_header_params(const nlohmann::json& input_schema);

struct mcp_template_entry {
  mcp_resource_template resource_template;
  std::vector<std::string> literals; ///< the text between variables (one more than names)
  std::vector<std::string> names;    ///< the variables, in order
  nlohmann::json listed;
};

/// A resource a URI reads: a plain resource, or a template with its
/// variables bound.
struct mcp_resource_match {
  mcp_resource_handler read;
  std::optional<mcp_cache_hint> cache;
  std::map<std::string, std::string> variables;
};

/// One page of a list: its items and the cursor of the next page.
struct mcp_listing {
  nlohmann::json items = nlohmann::json::array();
  std::optional<std::string> next_cursor;
};

/// The lists a registry serves.
enum class mcp_list { tools, resources, resource_templates, prompts };

/// True if `name` is a valid tool name: 1 to 64 of [A-Za-z0-9_./-] (SEP-986).
bool mcp_tool_name_valid(std::string_view name);

/// A URI template's variables bound from `uri`, or nullopt if it does not
/// match (level 1: a variable matches one or more characters other than '/').
std::optional<std::map<std::string, std::string>>
mcp_match_template(const std::vector<std::string>& literals, const std::vector<std::string>& names,
                   std::string_view uri);

class mcp_registry {
public:
  status add_tool(mcp_tool tool);
  bool remove_tool(std::string_view name);
  status add_resource(mcp_resource resource);
  bool remove_resource(std::string_view uri);
  status add_resource_template(mcp_resource_template resource_template);
  status add_resource_provider(mcp_resource_provider provider);
  status add_prompt(mcp_prompt prompt);
  bool remove_prompt(std::string_view name);
  void set_completion(mcp_completion_handler handler);
  status add_extension(mcp_extension extension);

  std::shared_ptr<const mcp_tool_entry> tool(std::string_view name) const;
  std::shared_ptr<const mcp_prompt> prompt(std::string_view name) const;
  /// The resource `uri` names: the provider whose prefix it has, else a
  /// plain resource, else the first template (in template order) that
  /// matches.
  std::optional<mcp_resource_match> resource(std::string_view uri) const;
  std::shared_ptr<const mcp_completion_handler> completion() const;
  std::shared_ptr<const mcp_extension_method> extension_method(std::string_view method) const;

  /// The resource providers, for resources/list to ask outside the lock.
  std::vector<std::shared_ptr<const mcp_resource_provider>> resource_providers() const;

  /// A page of a list; for resources, `provided` (what the providers listed
  /// for the caller) merged in URI order with the registered ones, the first
  /// of a repeated URI kept. Errors: an invalid cursor (out_of_range).
  result<mcp_listing> page(mcp_list list, const std::optional<std::string>& cursor,
                           std::size_t page_size,
                           const std::vector<mcp_resource>& provided = {}) const;

  /// The server capabilities for what is registered (tools, resources with
  /// subscribe, prompts, completions, extensions; listChanged throughout).
  nlohmann::json capabilities(bool logging) const;

private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const mcp_tool_entry>, std::less<>> tools_;
  std::map<std::string, std::shared_ptr<const mcp_resource>, std::less<>> resources_;
  std::map<std::string, std::shared_ptr<const mcp_template_entry>, std::less<>> templates_;
  std::vector<std::shared_ptr<const mcp_resource_provider>> providers_;
  std::map<std::string, std::shared_ptr<const mcp_prompt>, std::less<>> prompts_;
  std::shared_ptr<const mcp_completion_handler> completion_;
  std::map<std::string, nlohmann::json, std::less<>> extensions_; ///< id -> settings
  std::map<std::string, std::shared_ptr<const mcp_extension_method>, std::less<>> methods_;
};

} // namespace voxos
