// Installing curated example skills into one tenant's skills: the plan
// (what each requested skill would become, before any write) and the answer
// to the install request (example_skills.hpp). CAF-free.
//
// The node's answer to POST /v1/admin/tenants/{tenant_id}/skills/examples,
// one entry per requested skill, in request order:
//
//   200 {"skills": [{"slug": "...",
//                    "outcome": "installed" | "would_install" | "exists" | "blocked",
//                    "readiness": "ready" | "warning" | "blocked",
//                    "reason": "ready" | "untested" | "needs_auth" | "missing" | ...,
//                    "server_id": "s_..."}]}
//
// `server_id` names the server a warning or block is about; it is left out
// for a ready skill and when no server of the dependency's preset matched.
// Installing never authenticates, tests, allowlists or grants anything: the
// plan reads the tenant's state and changes nothing.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/example_skills.hpp"
#include "actors/tenant/skill_dependencies.hpp"
#include "actors/tenant/tenant_model.hpp"
#include "messages/status.hpp"

namespace voxos {

enum class example_outcome : uint8_t {
  installed,     ///< written as an editable skill of the tenant's owner
  would_install, ///< a dry run: would be written
  exists,        ///< the slug is taken: the existing skill is kept as it is
  blocked,       ///< a dependency blocks it: nothing written for this skill
};

std::string_view to_string(example_outcome x) noexcept;

/// What happens, or would happen, to one requested skill.
struct example_verdict {
  std::string slug;
  example_outcome outcome = example_outcome::blocked;
  /// Readiness of its dependencies (check_skill): a warning stays visible
  /// on an installed skill; the reason and server of a block.
  skill_check check;
};

/// One verdict per skill of `skills`, in order. `existing_slugs` holds every
/// slug among the tenant's skills, archived ones included:
///   - a slug already there, or planned earlier in `skills`: exists (never
///     overwritten, whatever its dependencies say);
///   - a dependency that blocks (check_skill): blocked, with its reason;
///   - else installed, or would_install when `dry_run`, readiness ready or
///     warning (a server that needs signing in or was never tested).
/// A block affects only its own skill. Changes nothing: the caller writes
/// the installed skills.
std::vector<example_verdict> plan_example_install(const tenant_state& tenant,
                                                  const std::vector<example_skill>& skills,
                                                  const std::set<std::string>& existing_slugs,
                                                  bool dry_run);

/// The answer's body for `verdicts`.
std::string install_response_json(const std::vector<example_verdict>& verdicts);

/// Reads the node's answer to `request` strictly: only the fields above, of
/// their kinds; outcomes and readiness from their sets, and consistent with
/// each other (blocked if and only if readiness blocked, unless exists) and
/// with the request (one entry per requested slug, in order; installed only
/// when not a dry run, would_install only in one). Errors name the path and
/// the constraint: bad_json, unknown_field, missing_field, wrong_type,
/// out_of_range.
result<std::vector<example_verdict>> parse_install_response(std::string_view body,
                                                            const example_install_request& request);

} // namespace voxos
