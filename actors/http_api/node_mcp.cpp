#include "actors/http_api/node_mcp.hpp"

#include <any>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/http_api/ask.hpp"
#include "actors/tenant/tenant.hpp"
#include "actors/tools/node_servers.hpp"
#include "config/internal_tools.hpp"
#include "messages/error.hpp"
#include "transport/http_server.hpp"
#include "transport/mcp_server.hpp"
#include "transport/mcp_skills.hpp"

namespace voxos {

namespace {

using json = nlohmann::json;

/// Who a request acts for: the tenant (and its actor), the agent, and the
/// internal tools the agent's grants allow now.
struct node_caller {
  tenant_actor tenant;
  std::string tenant_id;
  std::string agent_id;
  std::set<std::string> allowed;
};

const node_caller* caller_of(const mcp_caller& caller) {
  return std::any_cast<node_caller>(&caller.context);
}

/// The failure a tool call shows the model: the error's code and text.
json call_failure(const caf::error& err) {
  auto code = err.category() == error_category() ? static_cast<errc>(err.code()) : errc::internal;
  if (code == errc::storage_failure || code == errc::internal || code == errc::corrupt_data)
    return mcp_tool_error("the node could not run the tool (" + std::string{to_string(code)} + ")");
  return mcp_tool_error(std::string{to_string(code)} + ": " + message_of(err));
}

/// Authenticates a request: its tenant token, then its agent and grants.
std::optional<mcp_caller> authenticate(caf::actor_system& sys, const directory_actor& directory,
                                       const httplib::Request& req, httplib::Response& res) {
  auto refuse = [&](errc code, const std::string& why) {
    if (code == errc::unauthorized)
      res.set_header("WWW-Authenticate", "Bearer");
    write_error(res, code, why);
    return std::nullopt;
  };
  auto token = bearer_token(req);
  if (!token)
    return refuse(errc::unauthorized, "a tenant token is required");
  auto [who, err] = ask<tenant_identity>(sys, directory, auth_atom::value, *token);
  if (!who)
    return refuse(errc::unauthorized, "the token matches no tenant");
  auto [tenant, failed] = ask<tenant_actor>(sys, directory, config_atom::value, who->tenant_id);
  if (!tenant)
    return refuse(errc::unavailable, "the tenant is not available");
  auto [who_for, refused] = ask<std::string>(sys, *tenant, list_atom::value, tool_atom::value,
                                             req.get_param_value("agent_id"));
  if (!who_for) {
    bool unknown = refused.category() == error_category()
                   && static_cast<errc>(refused.code()) == errc::not_found;
    return unknown ? refuse(errc::not_found, "no agent with this id for this tenant")
                   : refuse(errc::unavailable, "the tenant is not available");
  }
  auto doc = json::parse(*who_for, nullptr, false);
  node_caller out{*tenant, who->tenant_id, doc.value("agent_id", std::string{}), {}};
  for (const auto& tool : doc.value("allowed", json::array()))
    out.allowed.insert(tool.get<std::string>());
  mcp_caller caller;
  caller.principal = who->tenant_id + "/" + out.agent_id + "/" + who->token_id;
  caller.context = std::move(out);
  return caller;
}

/// The Skills extension's view of the tenant's active skills (so hosts can
/// import them), each with its earlier versions under versions/, for an
/// agent granted both list_agent_skills and get_agent_skill (listing and
/// reading the bodies); none otherwise.
result<std::vector<mcp_skill>> skills_of(caf::actor_system& sys, const mcp_caller& caller) {
  std::vector<mcp_skill> out;
  const auto* who = caller_of(caller);
  if (who == nullptr || who->allowed.count("list_agent_skills") == 0
      || who->allowed.count("get_agent_skill") == 0)
    return out;
  auto [listed, err] =
    ask<std::string>(sys, who->tenant, knowledge_atom::value, std::string{"skills.list"},
                     std::string{R"({"versions":true})"});
  if (!listed)
    return status::error(errc::unavailable, "the tenant's skills are not available");
  auto doc = json::parse(*listed, nullptr, false);
  for (const auto& skill : doc.value("skills", json::array())) {
    mcp_skill item;
    item.name = skill.value("slug", std::string{});
    item.title = skill.value("name", std::string{});
    item.description = skill.value("description", std::string{});
    if (item.description.empty())
      item.description = item.title; // the extension requires one
    item.body = skill.value("instructions", std::string{});
    // Earlier versions (archived copies are kept) under versions/.
    for (const auto& version : skill.value("versions", json::array()))
      item.files.push_back({"versions/v" + std::to_string(version.value("version", 0)) + ".md",
                            "text/markdown", version.value("instructions", std::string{}), false});
    out.push_back(std::move(item));
  }
  return out;
}

std::unique_ptr<mcp_server> make_server(caf::actor_system& sys, const node_server& def) {
  mcp_server_options opts;
  opts.name = "voxos-" + std::string{def.name};
  opts.title = std::string{def.title};
  opts.instructions = std::string{def.instructions};
  // Each open stream (a 2025-11-25 GET stream, a 2026-07-28 listen) holds an
  // HTTP worker: one per server at a time, so the three never take more
  // than three of the node's workers.
  opts.max_streams = 1;
  opts.tool_visible = [](const mcp_caller& caller, std::string_view tool) {
    const auto* who = caller_of(caller);
    return who != nullptr && who->allowed.count(std::string{tool}) != 0;
  };
  auto server = std::make_unique<mcp_server>(opts);
  for (auto name : def.tools) {
    const auto* internal = find_internal_tool(name);
    if (internal == nullptr)
      continue;
    mcp_tool tool;
    tool.name = internal->name;
    tool.description = internal->description;
    tool.input_schema = json::parse(internal->input_schema);
    tool.annotations = {{"readOnlyHint", internal->read_only}};
    tool.handler = [&sys, server_name = std::string{def.name}, tool_name = internal->name](
                     const json& args, mcp_call_context& ctx) -> mcp_outcome {
      const auto* who = caller_of(ctx.caller());
      if (who == nullptr)
        return mcp_tool_error("the caller is not known");
      auto [result, err] = ask<std::string>(sys, who->tenant, tool_atom::value, server_atom::value,
                                            server_name, who->agent_id, tool_name, args.dump());
      if (!result)
        return call_failure(err);
      return json::parse(*result);
    };
    // (registration only fails on a malformed definition: the registry's are checked)
    (void)server->add_tool(std::move(tool));
  }
  if (def.name == "skills")
    (void)mcp_add_skills(*server,
                         [&sys](const mcp_caller& caller) { return skills_of(sys, caller); });
  return server;
}

} // namespace

node_mcp_servers::node_mcp_servers(caf::actor_system& sys, directory_actor directory)
    : sys_(sys), directory_(std::move(directory)) {
  for (const auto& def : node_servers())
    servers_.push_back(make_server(sys_, def));
}

node_mcp_servers::~node_mcp_servers() {
  stop();
}

void node_mcp_servers::mount(httplib::Server& routes) {
  const auto& defs = node_servers();
  for (std::size_t idx = 0; idx < defs.size(); ++idx)
    servers_[idx]->mount(routes, "/mcp/" + std::string{defs[idx].name},
                         [this](const httplib::Request& req, httplib::Response& res) {
                           return authenticate(sys_, directory_, req, res);
                         });
}

void node_mcp_servers::stop() {
  for (auto& server : servers_)
    server->stop();
}

} // namespace voxos
