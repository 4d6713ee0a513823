// voxosctl skills: the curated MCP example skills of examples/skills/.
//
//   voxosctl skills list [--catalog DIR]
//   voxosctl skills load --user-id ID --mcp KEY [--dry-run] [--catalog DIR]
//
// `list` reads the catalog only. `load` sends one request to the node,
// POST /v1/admin/tenants/{ID}/skills/examples (actors/tenant/example_skills.hpp),
// and prints one line per skill and a summary. In this node a tenant is one
// owner's account: the user id is the tenant id. Exit 0 when the node
// answered, whatever it did with each skill (a blocked skill is an answer);
// 1 on a catalog, transport or request error; 2 on bad usage.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace voxos {

struct skills_options {
  std::string catalog_dir = "examples/skills"; ///< relative to the working directory
  std::string user_id;
  std::string mcp;
  bool dry_run = false;
};

/// POSTs a JSON body to a path of the node with the admin token: the body
/// of a 2xx answer, or nullopt when the node cannot be reached or answered
/// an error (reported already).
using node_post =
  std::function<std::optional<std::string>(const std::string& path, const std::string& body)>;

int skills_list(const skills_options& opts);

int skills_load(const skills_options& opts, const node_post& post);

} // namespace voxos
