// `voxosctl conformance URL`: the client under test for the official MCP
// conformance suite (`@modelcontextprotocol/conformance client --command
// "voxosctl conformance"`), which appends the scenario server's URL and names
// the scenario in MCP_CONFORMANCE_SCENARIO.
//
// It drives the node's own mcp_connection actor (there is no second client):
// connect, list the tools, and call each listed tool once with arguments made
// from its input schema (the scenarios expect a client to do that unasked:
// `add_numbers` in tools_call, the elicitation tool, the reconnection tool),
// or, when MCP_CONFORMANCE_CONTEXT names tool calls (http-custom-headers),
// exactly those.
// The URL it is handed is registered for the `mcp` purpose in this process
// only, which is what lets it reach the suite's loopback servers; the node
// itself never accepts an unregistered loopback URL.
//
// Exit code: 0 when every step answered, 1 otherwise (the suite judges by its
// own checks; the code helps a person running one scenario by hand).
#include "apps/voxosctl/conformance.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "actors/mcp/mcp_protocol.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "transport/url_policy.hpp"

namespace voxos {

namespace {

using nlohmann::json;

/// A value of the property's type: numbers 1, strings "conformance", booleans
/// true, an enum's first member, objects filled the same way.
json sample_value(const json& schema) {
  if (!schema.is_object())
    return nullptr;
  if (auto choices = schema.find("enum");
      choices != schema.end() && choices->is_array() && !choices->empty())
    return choices->front();
  if (auto def = schema.find("default"); def != schema.end())
    return *def;
  auto type = schema.value("type", json{});
  if (type.is_array() && !type.empty())
    type = type.front();
  if (type == "number" || type == "integer")
    return 1;
  if (type == "boolean")
    return true;
  if (type == "array")
    return json::array();
  if (type == "object") {
    json out = json::object();
    auto props = schema.find("properties");
    auto required = schema.find("required");
    if (props != schema.end() && props->is_object() && required != schema.end()
        && required->is_array())
      for (const auto& name : *required)
        if (name.is_string() && props->contains(name.get<std::string>()))
          out[name.get<std::string>()] = sample_value((*props)[name.get<std::string>()]);
    return out;
  }
  return "conformance";
}

int fail(const std::string& step, const caf::error& err) {
  std::fprintf(stderr, "voxosctl conformance: %s failed: %s: %s\n", step.c_str(),
               std::string{to_string(code_of(err))}.c_str(), message_of(err).c_str());
  return 1;
}

} // namespace

int run_conformance_client(const std::string& url) {
  const char* scenario = std::getenv("MCP_CONFORMANCE_SCENARIO");
  std::fprintf(stderr, "voxosctl conformance: scenario %s\n", scenario ? scenario : "(none)");
  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});
  mcp_config mcp;
  mcp.request_timeout_ms = 20'000;
  // The runner may name the revision a scenario runs at (newer runners do):
  // that one is spoken from the first request, 2026-07-28 statelessly.
  // Unnamed, or with VOXOS_CONFORMANCE_NEGOTIATE set, the connection learns
  // the server's era as the node's own connections do (the server/discover
  // probe, then the handshake if the server has no stateless revision).
  mcp_endpoint endpoint{"conformance", transport_kind::streamable_http, url, {}};
  if (const char* version = std::getenv("MCP_CONFORMANCE_PROTOCOL_VERSION");
      version != nullptr && std::getenv("VOXOS_CONFORMANCE_NEGOTIATE") == nullptr
      && (std::string_view{version} == stateless_protocol_version
          || is_supported_protocol_version(version)))
    endpoint.protocol_version = version;
  auto conn = spawn_mcp_connection(sys, std::move(endpoint), policy, mcp);
  caf::scoped_actor self{sys};
  const auto wait = std::chrono::seconds{25};
  int code = 0;
  self->request(conn, wait, connect_atom::value)
    .receive([](const std::string& hello) { std::printf("connected: %s\n", hello.c_str()); },
             [&](caf::error& err) { code = fail("connect", err); });
  if (code != 0) {
    // Nothing to close: the connection goes at once (the actor system waits
    // for it on the way out).
    self->send_exit(conn, caf::exit_reason::kill);
    return code;
  }
  // The standalone GET stream opens right after the session does; servers
  // that send requests on it (elicitation-sep1034-client-defaults) drop them
  // while it is not yet open, and nothing tells a client when it is.
  std::this_thread::sleep_for(std::chrono::milliseconds{300});
  // The calls to make: those the scenario names in MCP_CONFORMANCE_CONTEXT
  // ({"toolCalls":[{"name","arguments"}]}), else each listed tool once.
  json calls = json::array();
  if (const char* context = std::getenv("MCP_CONFORMANCE_CONTEXT"); context != nullptr) {
    auto doc = json::parse(context, nullptr, false);
    if (doc.is_object() && doc.contains("toolCalls") && doc["toolCalls"].is_array())
      calls = doc["toolCalls"];
  }
  // With VOXOS_CONFORMANCE_CALL_UNLISTED set, named calls go out without a
  // listing of ours first, as a node's runs call from the tenant's cache.
  json tools = json::array();
  if (calls.empty() || std::getenv("VOXOS_CONFORMANCE_CALL_UNLISTED") == nullptr) {
    self->request(conn, wait, list_atom::value, tool_atom::value)
      .receive(
        [&](const std::string& listed) {
          auto doc = json::parse(listed, nullptr, false);
          if (doc.is_object() && doc["tools"].is_array())
            tools = doc["tools"];
        },
        [&](caf::error& err) { code = fail("tools/list", err); });
    std::printf("tools: %zu\n", tools.size());
  }
  if (calls.empty())
    for (const auto& tool : tools) {
      auto args = sample_value(tool.value("inputSchema", json{{"type", "object"}}));
      calls.push_back({{"name", tool.value("name", std::string{})},
                       {"arguments", args.is_object() ? args : json::object()}});
    }
  uint64_t key = 1;
  for (const auto& call : calls) {
    if (code != 0)
      break;
    auto name = call.value("name", std::string{});
    json params{{"name", name}, {"arguments", call.value("arguments", json::object())}};
    self
      ->request(conn, wait, request_atom::value, key++, std::string{"tools/call"}, params.dump(),
                uint32_t{0})
      .receive(
        [&](const std::string& answer) { std::printf("%s: %s\n", name.c_str(), answer.c_str()); },
        [&](caf::error& err) { code = fail("tools/call " + name, err); });
  }
  self->request(conn, wait, close_atom::value).receive([](bool) {}, [](caf::error&) {});
  return code;
}

} // namespace voxos
