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
#include "transport/auth/auth_fetch.hpp"
#include "transport/auth/server_auth.hpp"
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

/// Where the authorization answer is sent. Nothing listens there: the
/// conformance client plays the browser and reads the answer from the
/// authorization server's redirect (it never follows it).
constexpr const char* redirect_uri = "http://localhost:3000/callback";

/// The conformance client's credentials: the node's own OAuth session,
/// granted by client credentials when the scenario hands over a client
/// (MCP_CONFORMANCE_CONTEXT), else by the authorization code flow with this
/// process as the user agent.
std::shared_ptr<auth::server_auth> conformance_auth(std::shared_ptr<const url_policy> policy,
                                                    const std::string& url, const json& context) {
  auto fetch = std::make_shared<const auth::auth_fetcher>(std::move(policy));
  auth::oauth_settings settings;
  settings.server_url = url;
  settings.profile.client_name = "voxosctl conformance";
  settings.profile.redirect_uri = redirect_uri;
  // The client ID metadata document URL the suite expects (it never fetches
  // it); used only where an authorization server advertises support.
  settings.profile.metadata_document_url = "https://conformance-test.local/client-metadata.json";
  if (context.is_object() && context.contains("client_id")) {
    auth::client_registration client;
    client.client_id = context.value("client_id", std::string{});
    client.client_secret = context.value("client_secret", std::string{});
    if (context.contains("private_key_pem")) {
      client.method = auth::client_auth_method::private_key_jwt;
      client.private_key_pem = context.value("private_key_pem", std::string{});
      client.signing_alg = context.value("signing_algorithm", std::string{"ES256"});
    }
    settings.profile.pre_registered = client;
    std::string scenario = context.value("name", std::string{});
    if (scenario.find("client-credentials") != std::string::npos)
      settings.kind = auth::oauth_settings::grant::client_credentials;
  }
  if (context.is_object() && context.contains("idp_token_endpoint")) {
    // Enterprise-managed authorization: the identity provider's ID token is
    // exchanged for an ID-JAG, which the authorization server takes as a
    // JWT-bearer grant.
    settings.kind = auth::oauth_settings::grant::jwt_bearer;
    auto idp_token_endpoint = context.value("idp_token_endpoint", std::string{});
    auto id_token = context.value("idp_id_token", std::string{});
    auto idp_client_id = context.value("idp_client_id", std::string{});
    settings.assertion = [fetch, idp_token_endpoint, id_token,
                          idp_client_id](const auth::discovery& found) {
      return auth::oauth_client{*fetch}.exchange_for_id_jag(idp_token_endpoint, id_token,
                                                            idp_client_id, found);
    };
  } else if (context.is_object() && context.contains("valid_jwt")) {
    // Workload identity: the workload's own token is the assertion.
    settings.kind = auth::oauth_settings::grant::jwt_bearer;
    auto token = context.value("valid_jwt", std::string{});
    settings.assertion = [token](const auth::discovery&) -> result<std::string> { return token; };
  }
  settings.user_agent = [fetch](const std::string& authorize_url) -> result<auth::form_fields> {
    auto answered = fetch->get_redirect(authorize_url);
    if (!answered)
      return answered.error();
    if (answered->status < 300 || answered->status >= 400
        || answered->location.rfind(redirect_uri, 0) != 0)
      return status::error(errc::unauthorized,
                           "the authorization endpoint did not send the browser back (HTTP "
                             + std::to_string(answered->status) + ")");
    auto query = answered->location.find('?');
    return auth::form_decode(query == std::string::npos
                               ? std::string_view{}
                               : std::string_view{answered->location}.substr(query + 1));
  };
  return std::make_shared<auth::oauth_session>(std::move(fetch), std::move(settings));
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
  // The suite's scenario and authorization servers listen on loopback, on
  // ports learnt as the scenario goes.
  auto policy = std::make_shared<const url_policy>(
    url_policy::trusting_loopback(std::vector<node_config::registered_url>{{url, "mcp"}}));
  json context = json::object();
  if (const char* text = std::getenv("MCP_CONFORMANCE_CONTEXT"); text != nullptr)
    context = json::parse(text, nullptr, false);
  // Only string members are read from it (json::value throws on others).
  if (context.is_object())
    for (const char* name :
         {"name", "client_id", "client_secret", "private_key_pem", "signing_algorithm",
          "idp_token_endpoint", "idp_id_token", "idp_client_id", "valid_jwt"})
      if (context.contains(name) && !context[name].is_string())
        context.erase(name);
  mcp_config mcp;
  mcp.request_timeout_ms = 20'000;
  // The runner may name the revision a scenario runs at (newer runners do):
  // that one is spoken from the first request, 2026-07-28 statelessly.
  // Unnamed, or with VOXOS_CONFORMANCE_NEGOTIATE set, the connection learns
  // the server's era as the node's own connections do (the server/discover
  // probe, then the handshake if the server has no stateless revision).
  mcp_endpoint endpoint{"conformance", transport_kind::streamable_http, url, {}};
  endpoint.auth = conformance_auth(policy, url, context);
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
  if (context.is_object() && context.contains("toolCalls") && context["toolCalls"].is_array())
    calls = context["toolCalls"];
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
