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
  if (!s.connected) {
    // Never tested (nothing discovered yet, e.g. awaiting authentication):
    // installable with a warning. Tested before and now failing: blocked.
    if (s.cached_tools.empty() && s.discovered_us == 0)
      return {skill_readiness::warning, "untested", s.server_id};
    return blocked("failed");
  }
  for (const auto& tool : dep.tools) {
    if (!advertises(s, tool))
      return blocked("undiscovered");
    if (!contains(s.allowed_tools, tool))
      return blocked("not_allowed");
  }
  return {skill_readiness::ready, "ready", s.server_id};
}

} // namespace

skill_check check_skill_dependency(const tenant_state& tenant, const skill_dependency& dep) {
  skill_check best{skill_readiness::blocked, "missing", ""};
  for (const auto& [id, server] : tenant.servers) {
    if (server.preset_id != dep.preset_id
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
