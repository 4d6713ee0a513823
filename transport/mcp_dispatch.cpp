// The methods of the MCP server (mcp_server.hpp) once a request's envelope
// passed: the lists, discovery and the session wire's own methods, answered
// here; tools, prompts, resources, completions and extension methods, checked
// here and run by mcp_call.cpp; the tasks methods, served by
// mcp_task_calls.cpp.
#include "transport/mcp_server_state.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <variant>

#include "config/log.hpp"
#include "transport/mcp_pagination.hpp"

namespace voxos {

using namespace mcp_detail;

namespace {

// -- list, discover and the other plain methods --------------------------------------

std::optional<mcp_list> list_of(std::string_view method) {
  if (method == "tools/list")
    return mcp_list::tools;
  if (method == "resources/list")
    return mcp_list::resources;
  if (method == "resources/templates/list")
    return mcp_list::resource_templates;
  if (method == "prompts/list")
    return mcp_list::prompts;
  return std::nullopt;
}

const char* list_member(mcp_list list) {
  switch (list) {
  case mcp_list::tools:
    return "tools";
  case mcp_list::resources:
    return "resources";
  case mcp_list::resource_templates:
    return "resourceTemplates";
  case mcp_list::prompts:
    return "prompts";
  }
  return "items";
}

const char* capability_of(mcp_list list) {
  switch (list) {
  case mcp_list::tools:
    return "tools";
  case mcp_list::resources:
  case mcp_list::resource_templates:
    return "resources";
  case mcp_list::prompts:
    return "prompts";
  }
  return "";
}

/// Adds the 2026-07-28 result fields to a complete result of a cacheable method.
void stamp(nlohmann::json& result, const mcp_request_info& info, const mcp_cache_hint& hint) {
  if (info.wire != mcp_wire::stateless)
    return;
  result["resultType"] = "complete";
  result["ttlMs"] = hint.ttl_ms;
  result["cacheScope"] = hint.shared ? "public" : "private";
}

/// The answer of a method that needs no handler of the embedder: a result
/// or an error (nullopt: not one of these methods).
using plain_answer = std::variant<nlohmann::json, mcp_error>;

/// What the resource providers list for `caller`, each keeping to its own
/// prefix (`per_caller`: some provider was asked); an internal error when
/// one cannot answer.
std::optional<plain_answer> provided_resources(mcp_server_state& state, const mcp_caller& caller,
                                               std::vector<mcp_resource>& provided,
                                               bool& per_caller) {
  for (const auto& provider : state.registry.resource_providers()) {
    per_caller = true;
    auto listed = provider->list(caller);
    if (!listed) {
      log::warn("mcp_server", "a resource provider (" + provider->uri_prefix + ") could not list: "
                                + std::string{to_string(listed.error().code())});
      return plain_answer{mcp_error{mcp_code::internal_error, "resources unavailable", nullptr}};
    }
    for (auto& resource : *listed)
      if (resource.uri.compare(0, provider->uri_prefix.size(), provider->uri_prefix) == 0)
        provided.push_back(std::move(resource));
  }
  return std::nullopt;
}

std::optional<plain_answer> plain_method(mcp_server_state& state, const mcp_request_info& info,
                                         const std::string& method, const nlohmann::json& params) {
  const bool stateless = info.wire == mcp_wire::stateless;
  if (auto list = list_of(method)) {
    auto caps = state.registry.capabilities(state.options.logging);
    if (!caps.contains(capability_of(*list)))
      return std::nullopt; // not offered: method not found
    std::optional<std::string> cursor;
    if (params.contains("cursor")) {
      if (!params["cursor"].is_string())
        return plain_answer{
          mcp_error{mcp_code::invalid_params, "Invalid params: cursor must be a string", nullptr}};
      cursor = params["cursor"].get<std::string>();
    }
    std::vector<mcp_resource> provided;
    bool per_caller = false;
    if (*list == mcp_list::resources && info.caller) {
      auto answer = provided_resources(state, *info.caller, provided, per_caller);
      if (answer)
        return answer;
    }
    auto page = state.registry.page(*list, cursor, state.options.page_size, provided);
    if (!page)
      return plain_answer{
        mcp_error{mcp_code::invalid_params, "Invalid params: invalid cursor", nullptr}};
    if (*list == mcp_list::tools && state.options.tool_visible && info.caller) {
      auto& items = page->items;
      items.erase(std::remove_if(items.begin(), items.end(),
                                 [&](const nlohmann::json& tool) {
                                   return !state.options.tool_visible(
                                     *info.caller, tool.value("name", std::string{}));
                                 }),
                  items.end());
    }
    nlohmann::json result = {{list_member(*list), std::move(page->items)}};
    if (page->next_cursor)
      result["nextCursor"] = *page->next_cursor;
    auto hint = state.options.list_cache;
    if (per_caller)
      hint.shared = false;
    stamp(result, info, hint);
    return plain_answer{std::move(result)};
  }
  if (method == "server/discover" && stateless) {
    auto capabilities = state.registry.capabilities(state.options.logging);
    if (state.options.max_tasks > 0)
      capabilities["extensions"][std::string{mcp_tasks_extension}] = nlohmann::json::object();
    nlohmann::json result = {{"supportedVersions", mcp_stateless_versions()},
                             {"capabilities", std::move(capabilities)}};
    if (!state.options.instructions.empty())
      result["instructions"] = state.options.instructions;
    result["_meta"] = {{std::string{mcp_meta::server_info}, server_info(state.options)}};
    stamp(result, info, state.options.discover_cache);
    return plain_answer{std::move(result)};
  }
  if (stateless)
    return std::nullopt;
  // The session wire's own methods.
  if (method == "ping")
    return plain_answer{nlohmann::json::object()};
  if (method == "logging/setLevel") {
    if (!state.options.logging)
      return std::nullopt;
    auto level = params.contains("level") && params["level"].is_string()
                   ? mcp_log_level_index(params["level"].get<std::string>())
                   : std::nullopt;
    if (!level)
      return plain_answer{
        mcp_error{mcp_code::invalid_params, "Invalid params: level must be a log level", nullptr}};
    info.session->set_log_level(*level);
    return plain_answer{nlohmann::json::object()};
  }
  if (method == "resources/subscribe" || method == "resources/unsubscribe") {
    if (!state.registry.capabilities(false).contains("resources"))
      return std::nullopt;
    if (!params.contains("uri") || !params["uri"].is_string())
      return plain_answer{
        mcp_error{mcp_code::invalid_params, "Invalid params: uri must be a string", nullptr}};
    auto uri = params["uri"].get<std::string>();
    if (method == "resources/subscribe")
      info.session->subscribe(uri);
    else
      info.session->unsubscribe(uri);
    return plain_answer{nlohmann::json::object()};
  }
  return std::nullopt;
}

// -- handler-backed methods -------------------------------------------------------------

/// A request refused with a JSON-RPC error before its handler runs.
struct refused_call {
  int http_status;
  mcp_error error;
};

refused_call bad_params(std::string message, nlohmann::json data = nullptr) {
  return {200, mcp_error{mcp_code::invalid_params, "Invalid params: " + std::move(message),
                         std::move(data)}};
}

/// Capabilities a tool needs that the client did not declare.
nlohmann::json missing_capabilities(const mcp_tool& tool, const nlohmann::json& declared) {
  auto missing = nlohmann::json::object();
  for (const auto& name : tool.required_capabilities) {
    auto found = declared.find(name);
    if (found == declared.end() || found->is_null() || *found == false)
      missing[name] = nlohmann::json::object();
  }
  return missing;
}

/// The text of a tool error for arguments failing the input schema.
std::string argument_errors(const validation_result& checked) {
  std::string text = "Invalid arguments:";
  std::size_t shown = 0;
  for (const auto& error : checked.errors) {
    if (++shown > 8) {
      text += " (more errors not shown)";
      break;
    }
    text += " ";
    text += error.instance_path.empty() ? std::string{"(root)"} : error.instance_path;
    text += ": ";
    text += error.constraint;
    text += " (schema ";
    text += error.schema_path;
    text += ");";
  }
  return text;
}

refused_call header_mismatch(std::string message) {
  return {400, mcp_error{mcp_code::header_mismatch, std::move(message), nullptr}};
}

/// True if a plain header value holds only what HTTP allows unencoded.
bool plain_header_chars(std::string_view value) {
  return std::all_of(value.begin(), value.end(), [](char ch) {
    auto byte = static_cast<unsigned char>(ch);
    return byte == '\t' || (byte >= 0x20 && byte <= 0x7e);
  });
}

/// 2026-07-28: each argument a tool mirrors into `Mcp-Param-<name>` must
/// come with that header, equal to it after decoding (numerically for an
/// integer); an argument absent or null expects no header.
std::optional<refused_call> check_header_params(const mcp_tool_entry& entry,
                                                const nlohmann::json& arguments,
                                                const httplib::Request& req) {
  for (const auto& param : entry.header_params) {
    const nlohmann::json* value = &arguments;
    for (const auto& step : param.path) {
      if (!value->is_object() || !value->contains(step)) {
        value = nullptr;
        break;
      }
      value = &(*value)[step];
    }
    if (!value || value->is_null())
      continue;
    auto name = "Mcp-Param-" + param.header;
    auto given = header_of(req, name.c_str());
    if (!given)
      return header_mismatch("Missing " + name + " header");
    if (!plain_header_chars(*given))
      return header_mismatch(name + " header holds invalid characters");
    auto decoded = mcp_header_value(*given);
    if (!decoded)
      return header_mismatch(name + " header holds malformed base64");
    bool same = false;
    if (value->is_string()) {
      same = *decoded == value->get_ref<const std::string&>();
    } else if (value->is_boolean()) {
      same = *decoded == (value->get<bool>() ? "true" : "false");
    } else if (value->is_number()) {
      char* end = nullptr;
      double number = std::strtod(decoded->c_str(), &end);
      same = !decoded->empty() && end == decoded->c_str() + decoded->size()
             && number == value->get<double>();
    } else {
      continue; // the wrong type: the schema check reports it
    }
    if (!same)
      return header_mismatch(name + " header does not match the argument");
  }
  return std::nullopt;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json>
tool_call(mcp_server_state& state, const mcp_request_info& info, const nlohmann::json& params) {
  if (!params.contains("name") || !params["name"].is_string())
    return bad_params("name must be a string");
  auto name = params["name"].get<std::string>();
  auto entry = state.registry.tool(name);
  if (!entry
      || (state.options.tool_visible && info.caller
          && !state.options.tool_visible(*info.caller, name)))
    return bad_params("unknown tool");
  if (!is_object_or_absent(params, "arguments"))
    return bad_params("arguments must be an object");
  auto arguments = params.contains("arguments") ? params["arguments"] : nlohmann::json::object();
  if (info.wire == mcp_wire::stateless && info.http)
    if (auto refused = check_header_params(*entry, arguments, *info.http))
      return *refused;
  auto missing = missing_capabilities(entry->tool, info.capabilities);
  if (!missing.empty()) {
    if (info.wire == mcp_wire::stateless)
      return refused_call{400, mcp_error{mcp_code::missing_client_capability,
                                         "Missing required client capability",
                                         nlohmann::json{{"requiredCapabilities", missing}}}};
    return nlohmann::json(mcp_tool_error("This tool needs client capabilities the client did "
                                         "not declare: "
                                         + missing.dump()));
  }
  // A task needs the extension served (2026-07-28) and declared by the request.
  const bool tasks_served = info.wire == mcp_wire::stateless && state.options.max_tasks > 0;
  const bool may_be_task = tasks_served && entry->tool.task_support != mcp_task_support::none
                           && mcp_declares_tasks(info.capabilities);
  if (entry->tool.task_support == mcp_task_support::required && !may_be_task) {
    if (tasks_served)
      return refused_call{400, tasks_not_declared()};
    return nlohmann::json(mcp_tool_error("This tool runs only as a task (the tasks extension, "
                                         "at 2026-07-28), which this server does not serve "
                                         "here"));
  }
  auto checked = validate(entry->arguments, arguments);
  if (!checked.is_valid())
    return nlohmann::json(mcp_tool_error(argument_errors(checked)));
  mcp_call_spec spec;
  spec.method = "tools/call";
  spec.target = name;
  spec.input = true;
  spec.task = may_be_task;
  spec.run = [entry, arguments = std::move(arguments)](mcp_call_context& ctx) {
    return entry->tool.handler(arguments, ctx);
  };
  return spec;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json> prompt_get(mcp_server_state& state,
                                                                     const nlohmann::json& params) {
  if (!params.contains("name") || !params["name"].is_string())
    return bad_params("name must be a string");
  auto name = params["name"].get<std::string>();
  auto prompt = state.registry.prompt(name);
  if (!prompt)
    return bad_params("unknown prompt");
  if (!is_object_or_absent(params, "arguments"))
    return bad_params("arguments must be an object");
  std::map<std::string, std::string> arguments;
  if (params.contains("arguments"))
    for (const auto& [key, value] : params["arguments"].items()) {
      if (!value.is_string())
        return bad_params("arguments." + key + " must be a string");
      arguments[key] = value.get<std::string>();
    }
  for (const auto& argument : prompt->arguments)
    if (argument.required && arguments.count(argument.name) == 0)
      return bad_params("missing required argument " + argument.name);
  mcp_call_spec spec;
  spec.method = "prompts/get";
  spec.target = name;
  spec.input = true;
  spec.run = [prompt, arguments = std::move(arguments)](mcp_call_context& ctx) {
    return prompt->get(arguments, ctx);
  };
  return spec;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json>
resource_read(mcp_server_state& state, const mcp_request_info& info, const nlohmann::json& params) {
  if (!params.contains("uri") || !params["uri"].is_string())
    return bad_params("uri must be a string");
  auto uri = params["uri"].get<std::string>();
  auto match = state.registry.resource(uri);
  if (!match) {
    nlohmann::json data = {{"uri", uri}};
    if (info.wire == mcp_wire::stateless)
      return refused_call{200, mcp_error{mcp_code::invalid_params, "Resource not found", data}};
    return refused_call{200, mcp_error{code_resource_not_found, "Resource not found", data}};
  }
  mcp_call_spec spec;
  spec.method = "resources/read";
  spec.target = uri;
  spec.input = true;
  spec.cache = match->cache ? *match->cache : state.options.read_cache;
  spec.run = [read = std::move(match->read), uri, variables = std::move(match->variables)](
               mcp_call_context& ctx) { return read(uri, variables, ctx); };
  return spec;
}

std::variant<mcp_call_spec, refused_call, nlohmann::json>
completion_complete(mcp_server_state& state, const nlohmann::json& params) {
  auto handler = state.registry.completion();
  if (!handler)
    return refused_call{0, {}}; // not offered: method not found
  if (!params.contains("ref") || !params["ref"].is_object() || !params["ref"].contains("type")
      || (params["ref"]["type"] != "ref/prompt" && params["ref"]["type"] != "ref/resource"))
    return bad_params("ref must be a ref/prompt or ref/resource reference");
  const auto& argument = params.contains("argument") ? params["argument"] : nlohmann::json{};
  if (!argument.is_object() || !argument.contains("name") || !argument["name"].is_string()
      || !argument.contains("value") || !argument["value"].is_string())
    return bad_params("argument must have a string name and value");
  mcp_completion_request request{
    params["ref"], argument["name"].get<std::string>(), argument["value"].get<std::string>(), {}};
  if (params.contains("context") && params["context"].is_object()
      && params["context"].contains("arguments") && params["context"]["arguments"].is_object())
    for (const auto& [key, value] : params["context"]["arguments"].items())
      if (value.is_string())
        request.context_arguments[key] = value.get<std::string>();
  mcp_call_spec spec;
  spec.method = "completion/complete";
  spec.run = [handler, request = std::move(request)](mcp_call_context& ctx) -> mcp_outcome {
    auto completion = (*handler)(request, ctx);
    constexpr std::size_t max_values = 100;
    bool cut = completion.values.size() > max_values;
    if (cut)
      completion.values.resize(max_values);
    nlohmann::json body = {{"values", completion.values}, {"hasMore", completion.has_more || cut}};
    if (completion.total)
      body["total"] = *completion.total;
    return nlohmann::json{{"completion", std::move(body)}};
  };
  return spec;
}

/// Verifies a stateless retry's inputResponses and requestState.
std::optional<refused_call> read_retry(mcp_server_state& state, const mcp_request_info& info,
                                       const mcp_call_spec& spec, const nlohmann::json& params,
                                       nlohmann::json& responses,
                                       std::optional<nlohmann::json>& request_state) {
  if (params.contains("inputResponses")) {
    const auto& given = params["inputResponses"];
    if (!given.is_object())
      return bad_params("inputResponses must be an object");
    for (const auto& [key, value] : given.items())
      if (!value.is_object())
        return bad_params("inputResponses." + key + " must be an object");
    responses = given;
  }
  if (params.contains("requestState")) {
    if (!params["requestState"].is_string())
      return bad_params("requestState must be a string");
    auto opened = state.sealer.open(params["requestState"].get<std::string>(),
                                    {info.caller->principal, spec.method, spec.target},
                                    std::chrono::system_clock::now());
    if (!opened)
      return bad_params(opened.error().message());
    request_state = std::move(*opened);
  }
  return std::nullopt;
}

} // namespace

namespace mcp_detail {

void dispatch(const std::shared_ptr<mcp_server_state>& state_ptr, mcp_request_info info,
              const jsonrpc_id& id, const std::string& method, const nlohmann::json& params,
              httplib::Response& res) {
  auto& state = *state_ptr;
  const bool stateless = info.wire == mcp_wire::stateless;
  const int not_found_status = stateless ? 404 : 200;
  auto not_found = [&] {
    answer_error(res, not_found_status, id, mcp_code::method_not_found,
                 "Method not found: " + method);
  };

  if (auto plain = plain_method(state, info, method, params)) {
    if (auto* result = std::get_if<nlohmann::json>(&*plain))
      answer(res, 200, response_text(id, *result));
    else {
      const auto& error = std::get<mcp_error>(*plain);
      answer_error(res, 200, id, error.code, error.message, error.data);
    }
    return;
  }
  if (stateless && method == "subscriptions/listen") {
    listen(state_ptr, info, id, params, res);
    return;
  }
  if (stateless && state.options.max_tasks > 0 && is_task_method(method)) {
    serve_task_method(state_ptr, info, id, method, params, res);
    return;
  }

  std::variant<mcp_call_spec, refused_call, nlohmann::json> call = refused_call{0, {}};
  if (method == "tools/call") {
    if (state.registry.capabilities(false).contains("tools"))
      call = tool_call(state, info, params);
  } else if (method == "prompts/get") {
    if (state.registry.capabilities(false).contains("prompts"))
      call = prompt_get(state, params);
  } else if (method == "resources/read") {
    if (state.registry.capabilities(false).contains("resources"))
      call = resource_read(state, info, params);
  } else if (method == "completion/complete")
    call = completion_complete(state, params);
  else if (auto extension = state.registry.extension_method(method)) {
    mcp_call_spec spec;
    spec.method = method;
    spec.input = extension->input;
    if (extension->cacheable)
      spec.cache = extension->cache ? *extension->cache : state.options.list_cache;
    spec.run = [extension, params](mcp_call_context& ctx) {
      return extension->handler(params, ctx);
    };
    call = std::move(spec);
  }

  if (auto* refused = std::get_if<refused_call>(&call)) {
    if (refused->http_status == 0)
      not_found();
    else
      answer_error(res, refused->http_status, id, refused->error.code, refused->error.message,
                   refused->error.data);
    return;
  }
  if (auto* immediate = std::get_if<nlohmann::json>(&call)) {
    if (stateless)
      (*immediate)["resultType"] = "complete";
    answer(res, 200, response_text(id, *immediate));
    return;
  }
  auto& spec = std::get<mcp_call_spec>(call);
  nlohmann::json responses = nlohmann::json::object();
  std::optional<nlohmann::json> request_state;
  if (stateless && spec.input)
    if (auto refused = read_retry(state, info, spec, params, responses, request_state)) {
      answer_error(res, refused->http_status, id, refused->error.code, refused->error.message,
                   refused->error.data);
      return;
    }
  answer_call(state_ptr, std::move(info), std::move(spec), id, std::move(responses),
              std::move(request_state), res);
}

} // namespace mcp_detail

} // namespace voxos
