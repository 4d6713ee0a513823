// Curated MCP example skills: the catalog under examples/skills/
// (catalog.json and one Markdown body per skill), its strict validation and
// the selection of one MCP's skills. CAF-free.
//
// The catalog's format (examples/skills/README.md):
//
//   {"version": 1,
//    "skills": [{"slug": "github-issue-triage", "name": "...", "description": "...",
//                "mcp": "github", "body": "github-issue-triage.md",
//                "dependencies": [{"preset_id": "github", "variant": "...",
//                                  "tools": ["list_issues", ...]}]}]}
//
// Every field is required except a dependency's `variant`; no other field is
// accepted. A dependency names a preset of the MCP preset catalog
// (config/presets.hpp), one of its variants (required when the preset has
// variants: each variant is its own server), and tools the preset lists.
// Errors name the path (`skills[2].dependencies[0].tools[1]`) and the
// constraint, never the rejected value.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/skill_dependencies.hpp"
#include "messages/status.hpp"

namespace voxos {

/// Bounds on a catalog and on one install request. The product leaves them
/// open; with these defaults the largest request (max_skills bodies at
/// their bound) stays under the node's default body limit
/// (http.max_body_bytes, 1 MiB). A caller may pass other bounds.
struct example_skill_limits {
  std::size_t max_catalog_bytes = 64 * 1024; ///< catalog.json itself
  std::size_t max_skills = 32;               ///< in a catalog, and in one request
  std::size_t max_body_bytes = 16 * 1024;    ///< one Markdown body
  std::size_t max_name_bytes = 80;
  std::size_t max_description_bytes = 300;
  std::size_t max_dependencies = 8; ///< per skill
  std::size_t max_tools = 16;       ///< per dependency
};

/// One curated example skill.
struct example_skill {
  /// Its identity among the user's skills: ^[a-z0-9][a-z0-9-]{0,63}$.
  std::string slug;
  std::string name;
  std::string description;
  std::string body; ///< Markdown: UTF-8, no control characters but tab, LF and CR
  std::vector<skill_dependency> dependencies;
  /// Catalog only, never sent to the node: the MCP the skill belongs to (a
  /// key of the slug grammar, e.g. "github", "google-workspace") and the
  /// body's file name in the catalog directory (^[a-z0-9][a-z0-9-]{0,63}\.md$).
  std::string mcp;
  std::string body_file;
};

/// ^[a-z0-9][a-z0-9-]{0,63}$: a skill's slug, and an MCP key.
bool is_example_slug(std::string_view text);

/// Checks what a skill carries to the node: slug grammar; name, description
/// and body non-empty, within bounds, UTF-8 without control characters (the
/// body may hold tab, LF and CR); one to max_dependencies dependencies, each
/// a preset of the catalog with a variant of it where it has variants, and
/// one to max_tools distinct tools the preset lists. `path` prefixes every
/// error (e.g. "skills[2]").
status check_example_skill(const example_skill& skill, const std::string& path,
                           const example_skill_limits& limits);

/// Reads one body by its file name; errors as values.
using example_body_reader = std::function<result<std::string>(const std::string& file_name)>;

/// Parses and validates a catalog, reading each body through `read_body`.
/// Errors: bad_json, unknown_field, missing_field, wrong_type; out_of_range
/// (a version other than 1, a bound, a slug, key or file name outside its
/// grammar, an unknown preset, variant or tool); conflict (a slug twice);
/// not_found (a body that cannot be read).
result<std::vector<example_skill>> parse_example_catalog(std::string_view catalog_json,
                                                         const example_body_reader& read_body,
                                                         const example_skill_limits& limits = {});

/// `dir`/catalog.json and the bodies beside it (regular files only).
result<std::vector<example_skill>> load_example_catalog(const std::string& dir,
                                                        const example_skill_limits& limits = {});

/// The catalog's MCP keys, each once, in catalog order.
std::vector<std::string> example_mcp_keys(const std::vector<example_skill>& catalog);

/// The skills of one MCP key, in catalog order. not_found (naming the keys
/// the catalog has) when no skill belongs to `mcp`.
result<std::vector<example_skill>> select_examples(const std::vector<example_skill>& catalog,
                                                   std::string_view mcp);

// -- The install request ----------------------------------------------------------------
//
// POST /v1/admin/tenants/{tenant_id}/skills/examples, from `voxosctl skills
// load` to the node (see example_install.hpp for the answer):
//
//   {"dry_run": false,
//    "skills": [{"slug": "...", "name": "...", "description": "...", "body": "# ...",
//                "dependencies": [{"preset_id": "...", "variant": "...", "tools": ["..."]}]}]}
//
// Both fields are required (a request never writes by omission); a
// dependency's `variant` is left out when empty. `mcp` and the body's file
// name stay in the catalog.

struct example_install_request {
  bool dry_run = true;
  std::vector<example_skill> skills; ///< mcp and body_file empty
};

/// The request body for `skills`.
std::string install_request_json(const std::vector<example_skill>& skills, bool dry_run);

/// Parses a request body strictly: the fields above only; one to max_skills
/// skills, each as check_example_skill accepts it; no slug twice (conflict).
/// Errors as parse_example_catalog's, paths from "skills[i]".
result<example_install_request> parse_install_request(std::string_view body,
                                                      const example_skill_limits& limits = {});

} // namespace voxos
