// The node's own MCP servers (/mcp/docs, /mcp/memory, /mcp/skills) as the
// official TypeScript SDK's client sees them: tenant-token authentication,
// the agent's grants deciding what is listed and callable, audited calls,
// and writes that wait for the owner's review.
#include <doctest/doctest.h>

#include "support/child_process.hpp"
#include "support/node_peer.hpp"
#include "support/tool_session.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct mcp_fixture : test::tool_session {
  std::string url(const std::string& server) {
    return "http://127.0.0.1:" + std::to_string(node.get().http_port()) + "/mcp/" + server;
  }

  /// The SDK client against `server`: its JSON line.
  json client(const std::string& server, json calls = json::array(),
              const std::string& with_token = "") {
    test::temp_dir logs;
    test::child_process proc{{test::node_path(), "sdk_mcp_client.mjs", url(server),
                              with_token.empty() ? token : with_token, calls.dump()},
                             test::peers_dir().string(),
                             (logs.path() / "stderr").string()};
    REQUIRE(proc.started());
    auto out = proc.read_all();
    proc.wait();
    auto line = json::parse(out, nullptr, false);
    REQUIRE_MESSAGE(line.is_object(), out << proc.error_output());
    return line;
  }
};

} // namespace

TEST_CASE("the node's docs MCP serves the product documentation to a tenant token") {
  mcp_fixture f;
  auto out = f.client(
    "docs",
    json::array(
      {{{"name", "search_product_docs"}, {"arguments", {{"query", "automatic-saving consent"}}}},
       {{"name", "read_product_doc"}, {"arguments", {{"doc_id", "internal-tools"}}}}}));
  CHECK(out["server"]["name"] == "voxos-docs");
  CHECK(out["tools"] == json::array({"read_product_doc", "search_product_docs"}));
  auto hits = out["calls"][0]["result"]["structuredContent"]["results"];
  REQUIRE_FALSE(hits.empty());
  bool cited = false;
  for (const auto& hit : hits)
    cited = cited || (hit["doc_id"] == "internal-tools" && hit["excerpt"].is_string());
  CHECK(cited);
  auto doc = out["calls"][1]["result"]["structuredContent"];
  CHECK(doc["title"] == "Internal tools");
}

TEST_CASE("the node's MCP servers refuse a missing or unknown token") {
  mcp_fixture f;
  for (auto token : {"vxt_not-a-token-of-this-node"}) {
    auto out = f.client("memory", json::array(), token);
    CHECK(out.contains("connect_error"));
  }
  httplib::Client cli{"127.0.0.1", f.node.get().http_port()};
  auto res =
    cli.Post("/mcp/memory", R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "application/json");
  REQUIRE(res);
  CHECK(res->status == 401);
  CHECK(res->get_header_value("WWW-Authenticate") == "Bearer");
}

TEST_CASE("the node's MCP servers list and call only the tools the agent's grants allow") {
  mcp_fixture f;
  // Reads are granted by default; the write is not.
  auto before = f.client("memory", json::array({{{"name", "propose_agent_memory"},
                                                 {"arguments", {{"content", "Likes tea"}}}}}));
  CHECK(before["tools"] == json::array({"list_agent_memories"}));
  CHECK(before["calls"][0].contains("error"));
  CHECK(f.node.call("GET", "/v1/knowledge/candidates", f.token).body["candidates"].empty());
  f.grant("list_agent_memories", "deny");
  CHECK(f.client("memory")["tools"].empty());
}

TEST_CASE("the Memory MCP's writes are proposals that wait for review even under consent") {
  mcp_fixture f;
  f.grant("propose_agent_memory");
  REQUIRE(
    f.node.call("PUT", "/v1/knowledge/consent", f.token, R"({"automatic_saving":true})").status
    == 200);
  auto out =
    f.client("memory",
             json::array(
               {{{"name", "propose_agent_memory"}, {"arguments", {{"content", "Likes green tea"}}}},
                {{"name", "list_agent_memories"}, {"arguments", json::object()}}}));
  auto proposed = out["calls"][0]["result"]["structuredContent"];
  CHECK(proposed["status"] == "pending_review");
  CHECK(out["calls"][1]["result"]["structuredContent"]["memories"].empty());
  auto pending = f.node.call("GET", "/v1/knowledge/candidates", f.token).body["candidates"];
  REQUIRE(pending.size() == 1);
  CHECK(pending[0]["source"] == "memory_mcp");
  CHECK(pending[0]["agent_id"] == f.agent_id);
  // Each call was decided and audited.
  auto audit = f.node.call("GET", "/v1/audit", f.token).body;
  bool seen = false;
  for (const auto& row : audit)
    seen = seen || (row["tool"] == "propose_agent_memory" && row["channel"] == "mcp:memory");
  CHECK(seen);
}

TEST_CASE("the Skill MCP's new skills are drafts for the owner to review") {
  mcp_fixture f;
  f.grant("create_user_skill");
  auto out = f.client(
    "skills",
    json::array({{{"name", "create_user_skill"},
                  {"arguments",
                   {{"name", "Weekly review"}, {"instructions", "List the week's open items."}}}},
                 {{"name", "list_agent_skills"}, {"arguments", json::object()}}}));
  CHECK(out["calls"][0]["result"]["structuredContent"]["status"] == "pending_review");
  CHECK(out["calls"][1]["result"]["structuredContent"]["skills"].empty());
  auto id = f.node.call("GET", "/v1/knowledge/candidates", f.token)
              .body["candidates"][0]["id"]
              .get<std::string>();
  REQUIRE(f.node.call("POST", "/v1/knowledge/candidates/" + id + "/confirm", f.token).status
          == 200);
  auto after = f.client("skills", json::array({{{"name", "get_agent_skill"},
                                                {"arguments", {{"slug", "weekly-review"}}}}}));
  CHECK(after["calls"][0]["result"]["structuredContent"]["instructions"]
        == "List the week's open items.");
}

TEST_CASE("the node's MCP servers act for the agent named, and never another tenant's") {
  mcp_fixture f;
  auto [other_id, other_token] = f.node.make_tenant("Other");
  auto other_agent =
    f.node.call("GET", "/v1/agents", other_token).body[0]["agent_id"].get<std::string>();
  auto foreign = f.client("memory?agent_id=" + other_agent);
  CHECK(foreign.contains("connect_error"));
  auto own = f.client("memory?agent_id=" + f.agent_id);
  CHECK(own["tools"] == json::array({"list_agent_memories"}));
}

TEST_CASE("the node's Skill MCP passes the Skills extension scenarios (sep-2640) at both wires") {
  mcp_fixture f;
  // Two active skills, installed by the owner's example-skill route (their
  // dependency, the tenant's default Exa server, is untested: a readiness
  // warning, not a block).
  json skills = json::array();
  for (auto [slug, name] :
       {std::pair{"weekly-review", "Weekly review"}, std::pair{"trip-checklist", "Trip checklist"}})
    skills.push_back(
      {{"slug", slug},
       {"name", name},
       {"description", std::string{name} + ": a workflow for the agent"},
       {"body", std::string{"# "} + name + "\n\n1. Gather the facts.\n2. Summarise them.\n"},
       {"dependencies", {{{"preset_id", "exa"}, {"tools", {"web_search_exa"}}}}}});
  auto installed =
    f.node.call("POST", "/v1/admin/tenants/" + f.tenant_id + "/skills/examples", test::admin_token,
                json{{"dry_run", false}, {"skills", skills}}.dump());
  REQUIRE_MESSAGE(installed.status == 200, installed.raw);
  REQUIRE(installed.body["skills"][0]["outcome"] == "installed");
  // Each revised once by a run and confirmed by the owner: the first version
  // is kept, served under versions/.
  f.grant("update_user_skill");
  auto run = f.node.call("POST", "/v1/runs", f.token,
                         json{{"agent_id", f.agent_id}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE(run.status == 201);
  for (auto slug : {"weekly-review", "trip-checklist"}) {
    json call{{"calls",
               {{{"call_id", "c1"},
                 {"name", "update_user_skill"},
                 {"arguments", {{"slug", slug}, {"instructions", "1. Gather.\n2. Decide.\n"}}}}}}};
    auto revised =
      f.node.call("POST", "/v1/runs/" + run.body["run_id"].get<std::string>() + "/tool-calls",
                  f.token, call.dump());
    REQUIRE(revised.status == 200);
    auto id = revised.body["outputs"][0]["output"]["structuredContent"]["candidate_id"];
    REQUIRE_MESSAGE(id.is_string(), revised.raw);
    REQUIRE(
      f.node.call("POST", "/v1/knowledge/candidates/" + id.get<std::string>() + "/confirm", f.token)
        .status
      == 200);
  }
  // The suite's runner sends no credentials: a proxy adds the tenant token.
  test::node_peer proxy{test::node_path(), {"bearer_proxy.mjs", f.url("skills"), f.token}};
  REQUIRE(proxy.up());
  for (std::string revision : {"2025-11-25", "2026-07-28"}) {
    CAPTURE(revision);
    test::temp_dir out;
    test::temp_dir logs;
    test::child_process run{
      {std::string{VOXOS_SOURCE_DIR} + "/tests/conformance/run_server_scenarios", proxy.url("/"),
       out.str(), revision, "sep-2640-skills-enumeration", "sep-2640-skills-manifest",
       "sep-2640-skills-directory"},
      std::string{VOXOS_SOURCE_DIR},
      (logs.path() / "stderr").string()};
    REQUIRE(run.started());
    auto said = run.read_all();
    CHECK_MESSAGE(run.wait() == 0, said << run.error_output());
  }
}
