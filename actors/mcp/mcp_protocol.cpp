#include "actors/mcp/mcp_protocol.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "config/base64.hpp"
#include "transport/ascii.hpp"

namespace voxos {

using json = nlohmann::json;

bool is_supported_protocol_version(std::string_view version) noexcept {
  return std::find(mcp_protocol_versions.begin(), mcp_protocol_versions.end(), version)
         != mcp_protocol_versions.end();
}

json initialize_params(std::string_view client_version) {
  return json{
    {"protocolVersion", std::string{mcp_protocol_versions.front()}},
    {"capabilities", json{{"elicitation", json{{"form", json::object()}}}}},
    {"clientInfo", json{{"name", "voxos"}, {"version", std::string{client_version}}}},
  };
}

result<std::string> with_stateless_meta(std::string_view params_text,
                                        std::string_view client_version) {
  json meta{{"io.modelcontextprotocol/protocolVersion", std::string{stateless_protocol_version}},
            {"io.modelcontextprotocol/clientCapabilities",
             json{{"elicitation", json{{"form", json::object()}}}}},
            {"io.modelcontextprotocol/clientInfo",
             json{{"name", "voxos"}, {"version", std::string{client_version}}}}};
  auto first = params_text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos)
    return json{{"_meta", std::move(meta)}}.dump();
  if (params_text[first] != '{')
    return status::error(errc::bad_json, "params must be a JSON object");
  auto rest = params_text.substr(first + 1);
  auto next = rest.find_first_not_of(" \t\r\n");
  std::string out = R"({"_meta":)" + meta.dump();
  if (next != std::string_view::npos && rest[next] != '}')
    out += ',';
  out.append(rest.data(), rest.size());
  return out;
}

std::string stateless_name(std::string_view method, std::string_view params_text) {
  const char* field = method == "tools/call" || method == "prompts/get" ? "name"
                      : method == "resources/read"                      ? "uri"
                                                                        : nullptr;
  if (field == nullptr)
    return {};
  // The top level only (simdjson On-Demand): a call's arguments may be large.
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string padded{params_text};
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS
      || doc.get_object().get(object) != simdjson::SUCCESS)
    return {};
  for (auto member : object) {
    std::string_view key;
    if (member.unescaped_key().get(key) != simdjson::SUCCESS)
      return {};
    if (key != field)
      continue;
    std::string_view value;
    if (member.value().get_string().get(value) != simdjson::SUCCESS)
      return {};
    return std::string{value};
  }
  return {};
}

result<mcp_server_hello> read_initialize_result(std::string_view result_json) {
  auto doc = json::parse(result_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return status::error(errc::bad_json, "initialize answer is not a JSON object");
  auto version = doc.find("protocolVersion");
  if (version == doc.end() || !version->is_string())
    return status::error(errc::bad_json, "initialize answer has no protocolVersion string");
  mcp_server_hello hello;
  hello.protocol_version = version->get<std::string>();
  if (!is_supported_protocol_version(hello.protocol_version))
    return status::error(errc::out_of_range, "server speaks an unsupported protocol revision");
  if (auto info = doc.find("serverInfo"); info != doc.end() && info->is_object()) {
    hello.server_name =
      info->value("name", json{}).is_string() ? (*info)["name"].get<std::string>() : std::string{};
    hello.server_version = info->value("version", json{}).is_string()
                             ? (*info)["version"].get<std::string>()
                             : std::string{};
  }
  auto caps = doc.find("capabilities");
  if (caps != doc.end() && caps->is_object()) {
    hello.capabilities = caps->dump();
    auto tools = caps->find("tools");
    if (tools != caps->end() && tools->is_object())
      hello.tools_list_changed = tools->value("listChanged", false) == true;
  } else {
    hello.capabilities = "{}";
  }
  if (auto text = doc.find("instructions"); text != doc.end() && text->is_string())
    hello.instructions = text->get<std::string>();
  return hello;
}

result<mcp_server_hello> read_discover_result(std::string_view result_json) {
  auto doc = json::parse(result_json, nullptr, false);
  auto offers = [](const json& versions) {
    return versions.is_array()
           && std::find(versions.begin(), versions.end(), json(stateless_protocol_version))
                != versions.end();
  };
  if (!doc.is_object() || !offers(doc.value("supportedVersions", json{})))
    return status::error(errc::out_of_range, "server does not offer the stateless revision");
  mcp_server_hello hello;
  hello.protocol_version = std::string{stateless_protocol_version};
  const json* info = nullptr;
  if (auto found = doc.find("serverInfo"); found != doc.end() && found->is_object())
    info = &*found;
  else if (auto meta = doc.find("_meta"); meta != doc.end() && meta->is_object())
    if (auto inner = meta->find("io.modelcontextprotocol/serverInfo");
        inner != meta->end() && inner->is_object())
      info = &*inner;
  if (info != nullptr) {
    if (auto name = info->find("name"); name != info->end() && name->is_string())
      hello.server_name = name->get<std::string>();
    if (auto version = info->find("version"); version != info->end() && version->is_string())
      hello.server_version = version->get<std::string>();
  }
  auto caps = doc.find("capabilities");
  hello.capabilities = caps != doc.end() && caps->is_object() ? caps->dump() : "{}";
  if (auto text = doc.find("instructions"); text != doc.end() && text->is_string())
    hello.instructions = text->get<std::string>();
  return hello;
}

namespace {

std::string error_answer(const jsonrpc_id& id, int64_t code, std::string_view message) {
  auto text = make_jsonrpc_error_response(id, code, message);
  return text ? std::move(*text) : std::string{};
}

std::string result_answer(const jsonrpc_id& id, const json& value) {
  auto text = make_jsonrpc_response(id, value);
  return text ? std::move(*text) : error_answer(id, -32603, "Internal error");
}

/// A property default we may send back: a scalar (or an array of strings,
/// for multi-select enums).
bool is_sendable_default(const json& value) {
  if (value.is_string() || value.is_number() || value.is_boolean())
    return true;
  if (value.is_array())
    return std::all_of(value.begin(), value.end(), [](const json& x) { return x.is_string(); });
  return false;
}

json answer_elicitation(const json& params) {
  if (params.value("mode", std::string{"form"}) != "form")
    return json{{"action", "decline"}};
  auto schema = params.find("requestedSchema");
  if (schema == params.end() || !schema->is_object())
    return json{{"action", "decline"}};
  auto props = schema->find("properties");
  if (props == schema->end() || !props->is_object())
    return json{{"action", "decline"}};
  json content = json::object();
  for (const auto& [name, prop] : props->items()) {
    if (!prop.is_object())
      continue;
    auto value = prop.find("default");
    if (value != prop.end() && is_sendable_default(*value))
      content[name] = *value;
  }
  if (content.empty())
    return json{{"action", "decline"}};
  return json{{"action", "accept"}, {"content", std::move(content)}};
}

} // namespace

std::string answer_server_request(const jsonrpc_request& req) {
  if (req.method == "ping")
    return result_answer(req.id, json::object());
  if (req.method == "elicitation/create") {
    auto params = json::parse(req.params.value_or("{}"), nullptr, false);
    if (params.is_discarded() || !params.is_object())
      return error_answer(req.id, -32602, "Invalid params");
    return result_answer(req.id, answer_elicitation(params));
  }
  return error_answer(req.id, -32601, "Method not found");
}

result<std::vector<param_header>> param_headers_of(const json& input_schema) {
  std::vector<param_header> out;
  if (!input_schema.is_object())
    return out;
  auto props = input_schema.find("properties");
  if (props == input_schema.end() || !props->is_object())
    return out;
  std::vector<std::string> seen;
  for (const auto& [property, schema] : props->items()) {
    if (!schema.is_object())
      continue;
    auto mark = schema.find("x-mcp-header");
    if (mark == schema.end())
      continue;
    if (!mark->is_string() || !is_http_token(mark->get_ref<const std::string&>()))
      return status::error(errc::bad_json,
                           "x-mcp-header must be a non-empty HTTP token (RFC 9110)");
    auto type = schema.find("type");
    if (type == schema.end() || (*type != "string" && *type != "integer" && *type != "boolean"))
      return status::error(errc::bad_json,
                           "x-mcp-header may only mark a string, integer or boolean property");
    auto folded = ascii_lowered(mark->get_ref<const std::string&>());
    if (std::find(seen.begin(), seen.end(), folded) != seen.end())
      return status::error(errc::bad_json, "x-mcp-header names must be unique in a tool");
    seen.push_back(std::move(folded));
    out.push_back({property, "Mcp-Param-" + mark->get<std::string>()});
  }
  return out;
}

result<http_header_list> param_header_values(const std::vector<param_header>& headers,
                                             const json& arguments) {
  http_header_list out;
  if (!arguments.is_object())
    return out;
  for (const auto& header : headers) {
    auto value = arguments.find(header.property);
    if (value == arguments.end() || value->is_null())
      continue;
    if (value->is_boolean()) {
      out.emplace_back(header.header, value->get<bool>() ? "true" : "false");
    } else if (value->is_number_integer()) {
      out.emplace_back(header.header, value->dump());
    } else if (value->is_string()) {
      const auto& text = value->get_ref<const std::string&>();
      bool plain =
        std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; })
        && (text.empty() || (text.front() != ' ' && text.back() != ' '));
      out.emplace_back(header.header,
                       plain
                         ? text
                         : "=?base64?"
                             + base64::encode(reinterpret_cast<const unsigned char*>(text.data()),
                                              text.size(), base64::alphabet::standard, true)
                             + "?=");
    }
    if (!out.empty() && out.back().first == header.header
        && out.back().second.size() > max_param_header_bytes)
      return status::error(errc::out_of_range,
                           "argument '" + header.property + "' is too long for its " + header.header
                             + " header (" + std::to_string(max_param_header_bytes)
                             + " bytes at most)");
  }
  return out;
}

result<std::optional<std::string>> input_retry_params(std::string_view params_text,
                                                      std::string_view result_text) {
  if (!may_require_input(result_text))
    return std::optional<std::string>{};
  auto result = json::parse(result_text, nullptr, false);
  if (!result.is_object())
    return std::optional<std::string>{};
  auto kind = result.find("resultType");
  if (kind == result.end() || *kind != "input_required")
    return std::optional<std::string>{};
  auto asked = result.find("inputRequests");
  if (asked == result.end() || !asked->is_object() || asked->empty())
    return status::error(errc::bad_json, "an input_required result names no input requests");
  auto state = result.find("requestState");
  if (state != result.end() && !state->is_string())
    return status::error(errc::bad_json, "an input_required result's requestState is no string");
  json answers = json::object();
  for (const auto& [key, request] : asked->items()) {
    if (!request.is_object() || !request.contains("method") || !request["method"].is_string())
      return status::error(errc::bad_json, "an input request names no method");
    if (request["method"] != "elicitation/create")
      return status::error(errc::rejected, "the server asked for input this client does not give");
    auto params = request.value("params", json::object());
    if (!params.is_object())
      return status::error(errc::bad_json, "an input request's params are not an object");
    answers[key] = answer_elicitation(params);
  }
  auto params = params_text.find_first_not_of(" \t\r\n") == std::string_view::npos
                  ? json::object()
                  : json::parse(params_text, nullptr, false);
  if (!params.is_object())
    return status::error(errc::bad_json, "params must be a JSON object");
  params["inputResponses"] = std::move(answers);
  if (state != result.end())
    params["requestState"] = *state;
  else
    params.erase("requestState");
  return std::optional<std::string>{params.dump()};
}

} // namespace voxos
