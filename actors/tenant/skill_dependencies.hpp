// Readiness of a curated example skill's MCP dependencies for one tenant,
// checked before any skill write. CAF-free.
//
// A dependency names a canonical preset (and optionally a variant) and the
// upstream tools the workflow needs. Servers are matched by preset identity
// and variant metadata only, never by a user-editable label or a database id.
// Installing never authenticates, tests, allowlists or grants anything.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/tenant_model.hpp"

namespace voxos {

struct skill_dependency {
  std::string preset_id;
  std::string variant; ///< empty: any variant
  std::vector<std::string> tools;
};

enum class skill_readiness : uint8_t {
  ready,   ///< enabled, trusted, connected, advertising and allowing every tool
  warning, ///< installable with a visible readiness warning: needs authentication or a test
  blocked, ///< this skill is not installed (others still are)
};

/// "ready", "warning" or "blocked".
std::string_view to_string(skill_readiness x) noexcept;

struct skill_check {
  skill_readiness readiness = skill_readiness::blocked;
  /// ready; warnings: untested | needs_auth; blocks: missing | disabled |
  /// untrusted | failed | undiscovered | not_allowed
  std::string reason;
  std::string server_id; ///< the server the verdict is about, if any matched
};

/// The best verdict over the tenant's own servers (tenant_id the tenant's)
/// that match the dependency. Per server, in order: disabled, untrusted
/// (blocked); nothing discovered yet: needs_auth or untested (warning); a
/// failed last test of a server that does not need signing in (blocked);
/// a tool its last discovery lacks (undiscovered) or its allowlist lacks
/// (not_allowed) (blocked); needs signing in (warning); else ready.
skill_check check_skill_dependency(const tenant_state& tenant, const skill_dependency& dep);

/// A skill is installable when no dependency blocks it; the result is the
/// worst verdict among its dependencies.
skill_check check_skill(const tenant_state& tenant, const std::vector<skill_dependency>& deps);

} // namespace voxos
