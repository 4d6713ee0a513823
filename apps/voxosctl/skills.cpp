#include "apps/voxosctl/skills.hpp"

#include <cstdio>
#include <string_view>
#include <vector>

#include "actors/tenant/example_install.hpp"
#include "actors/tenant/example_skills.hpp"

namespace voxos {

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "voxosctl: %s\n", message.c_str());
  return 1;
}

/// A tenant id as the node's admin routes take it: [a-z0-9_-]{1,64}.
bool is_tenant_id(std::string_view text) {
  if (text.empty() || text.size() > 64)
    return false;
  for (char ch : text)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
      return false;
  return true;
}

/// "openbnb: airbnb_search, airbnb_listing"; a variant as preset/variant.
std::string describe(const skill_dependency& dep) {
  std::string out = dep.preset_id + (dep.variant.empty() ? "" : "/" + dep.variant) + ":";
  for (std::size_t tool_idx = 0; tool_idx < dep.tools.size(); ++tool_idx)
    out += (tool_idx == 0 ? " " : ", ") + dep.tools[tool_idx];
  return out;
}

/// What the operator can do about a reason the node gave.
const char* hint(std::string_view reason) {
  if (reason == "untested")
    return "the server was never tested: test it before running the workflow";
  if (reason == "needs_auth")
    return "the server needs signing in: reconnect it before running the workflow";
  if (reason == "missing")
    return "no server of the required preset (and variant) in this account";
  if (reason == "disabled")
    return "the server is disabled";
  if (reason == "untrusted")
    return "the server is not trusted";
  if (reason == "failed")
    return "the server's last connection test failed";
  if (reason == "undiscovered")
    return "the server does not advertise a required tool";
  if (reason == "not_allowed")
    return "a required tool is not in the server's allowed tools";
  return "";
}

const char* outcome_label(example_outcome x) {
  switch (x) {
  case example_outcome::installed:
    return "installed";
  case example_outcome::would_install:
    return "would install";
  case example_outcome::exists:
    return "exists";
  case example_outcome::blocked:
    return "blocked";
  }
  return "?";
}

void print_verdict(const example_verdict& v) {
  std::string note;
  if (v.outcome == example_outcome::exists)
    note = "kept as it is: an existing skill is never overwritten";
  else if (v.check.readiness != skill_readiness::ready) {
    note = v.check.reason;
    if (!v.check.server_id.empty())
      note += " (server " + v.check.server_id + ")";
    if (auto text = hint(v.check.reason); *text != '\0')
      note += std::string{": "} + text;
  }
  std::printf("%-14s %-36s %-8s %s\n", outcome_label(v.outcome), v.slug.c_str(),
              std::string{to_string(v.check.readiness)}.c_str(), note.c_str());
}

void print_summary(const std::vector<example_verdict>& verdicts, bool dry_run) {
  std::size_t written = 0, warned = 0, existing = 0, blocked = 0;
  for (const auto& v : verdicts) {
    switch (v.outcome) {
    case example_outcome::installed:
    case example_outcome::would_install:
      ++written;
      warned += v.check.readiness == skill_readiness::warning ? 1 : 0;
      break;
    case example_outcome::exists:
      ++existing;
      break;
    case example_outcome::blocked:
      ++blocked;
      break;
    }
  }
  std::printf(
    "summary: %zu %s (%zu with a readiness warning), %zu already present, %zu blocked%s\n", written,
    dry_run ? "would be installed" : "installed", warned, existing, blocked,
    dry_run ? "; dry run: nothing was written" : "");
  if (warned > 0 || blocked > 0)
    std::printf("installing changes no server, allowlist or grant: connect, test and allow the "
                "servers named above, then load again (existing skills are kept)\n");
}

} // namespace

int skills_list(const skills_options& opts) {
  auto catalog = load_example_catalog(opts.catalog_dir);
  if (!catalog)
    return fail("example skills in " + opts.catalog_dir + ": " + catalog.error().message());
  std::printf("%-18s %-36s %s\n", "MCP", "SLUG", "NAME");
  for (const auto& skill : *catalog) {
    std::printf("%-18s %-36s %s\n", skill.mcp.c_str(), skill.slug.c_str(), skill.name.c_str());
    for (const auto& dep : skill.dependencies)
      std::printf("%-18s   needs %s\n", "", describe(dep).c_str());
  }
  auto keys = example_mcp_keys(*catalog);
  std::string joined;
  for (const auto& key : keys)
    joined += (joined.empty() ? "" : ", ") + key;
  std::printf("%zu example skills for %zu MCPs (%s)\n", catalog->size(), keys.size(),
              joined.c_str());
  return 0;
}

int skills_load(const skills_options& opts, const node_post& post) {
  // What to send: the catalog's skills of one MCP.
  if (!is_tenant_id(opts.user_id))
    return fail("--user-id: must be a tenant id ([a-z0-9_-], 1 to 64 characters)");
  auto catalog = load_example_catalog(opts.catalog_dir);
  if (!catalog)
    return fail("example skills in " + opts.catalog_dir + ": " + catalog.error().message());
  auto selected = select_examples(*catalog, opts.mcp);
  if (!selected)
    return fail(selected.error().message());
  example_install_request request{opts.dry_run, std::move(selected).value()};
  std::printf("loading %zu example skills of '%s' into the account of user %s%s\n",
              request.skills.size(), opts.mcp.c_str(), opts.user_id.c_str(),
              opts.dry_run ? " (dry run)" : "");

  // One request; the node checks every dependency before any write.
  auto body = post("/v1/admin/tenants/" + opts.user_id + "/skills/examples",
                   install_request_json(request.skills, request.dry_run));
  if (!body)
    return 1;
  auto verdicts = parse_install_response(*body, request);
  if (!verdicts)
    return fail("the node's answer: " + verdicts.error().message());
  for (const auto& v : *verdicts)
    print_verdict(v);
  print_summary(*verdicts, request.dry_run);
  return 0;
}

} // namespace voxos
