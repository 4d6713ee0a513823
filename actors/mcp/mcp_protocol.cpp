#include "actors/mcp/mcp_protocol.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

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
  auto doc = json::parse(params_text, nullptr, false);
  if (!doc.is_object())
    return {};
  auto found = doc.find(field);
  return found != doc.end() && found->is_string() ? found->get<std::string>() : std::string{};
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

} // namespace voxos
