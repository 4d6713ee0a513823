#include "actors/tenant/skill_dependencies.hpp"

#include <algorithm>

namespace voxos {

namespace {

bool contains(const std::vector<std::string>& xs, const std::string& x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

bool advertises(const mcp_server_record& s, const std::string& tool) {
  return std::any_of(s.cached_tools.begin(), s.cached_tools.end(),
                     [&](const tool_definition& def) { return def.name == tool; });
}

skill_check verdict(const mcp_server_record& s, const skill_dependency& dep) {
  auto blocked = [&](const char* why) {
    return skill_check{skill_readiness::blocked, why, s.server_id};
  };
  if (!s.enabled)
    return blocked("disabled");
  if (!s.trusted)
    return blocked("untrusted");
  // Nothing discovered yet (never tested, or awaiting its first sign-in):
  // installable with a warning; there is nothing to check tools against.
  if (!s.connected && s.cached_tools.empty() && s.discovered_us == 0)
    return {skill_readiness::warning, s.needs_auth ? "needs_auth" : "untested", s.server_id};
  // Tested before and now failing: blocked, unless it only needs signing in
  // again (its credentials gave up), which is a warning below.
  if (!s.connected && !s.needs_auth)
    return blocked("failed");
  // The last discovery and the allowlist must still hold every tool.
  for (const auto& tool : dep.tools) {
    if (!advertises(s, tool))
      return blocked("undiscovered");
    if (!contains(s.allowed_tools, tool))
      return blocked("not_allowed");
  }
  if (s.needs_auth)
    return {skill_readiness::warning, "needs_auth", s.server_id};
  return {skill_readiness::ready, "ready", s.server_id};
}

} // namespace

std::string_view to_string(skill_readiness x) noexcept {
  switch (x) {
  case skill_readiness::ready:
    return "ready";
  case skill_readiness::warning:
    return "warning";
  case skill_readiness::blocked:
    return "blocked";
  }
  return "blocked";
}

skill_check check_skill_dependency(const tenant_state& tenant, const skill_dependency& dep) {
  skill_check best{skill_readiness::blocked, "missing", ""};
  for (const auto& [id, server] : tenant.servers) {
    // Only the tenant's own servers; then preset identity and variant, never
    // a label or an id.
    if (server.tenant_id != tenant.tenant_id || server.preset_id != dep.preset_id
        || (!dep.variant.empty() && server.variant != dep.variant))
      continue;
    auto v = verdict(server, dep);
    if (best.reason == "missing" || v.readiness < best.readiness)
      best = std::move(v);
  }
  return best;
}

skill_check check_skill(const tenant_state& tenant, const std::vector<skill_dependency>& deps) {
  skill_check worst{skill_readiness::ready, "ready", ""};
  for (const auto& dep : deps) {
    auto v = check_skill_dependency(tenant, dep);
    if (v.readiness > worst.readiness)
      worst = std::move(v);
  }
  return worst;
}

} // namespace voxos
