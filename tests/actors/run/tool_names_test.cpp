// The tenant's tool name order: a view composed with it names and orders
// every entry exactly as one composed without it, whether the order is
// current, stale or missing some of the view's names.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "actors/run/tool_names.hpp"
#include "tool_fixtures.hpp"

using namespace voxos;
using test::definition;
using test::find_entry;
using test::tool_world;

namespace {

/// What a view shows, in its order: (model name, server id, tool) of every
/// direct entry, then of every catalog entry.
using shown = std::vector<std::tuple<std::string, std::string, std::string>>;

shown shown_by(const tool_view& view) {
  shown out;
  for (const auto* list : {&view.direct, &view.catalog})
    for (const auto& e : *list)
      out.emplace_back(e.model_name(), e.server_id(), e.tool());
  return out;
}

/// A composed view, and its entries' names by (server id, tool), direct or
/// behind the catalog.
struct composed {
  tool_view view;

  std::string name_of(std::string_view server_id, std::string_view tool) const {
    const auto* e = find_entry(view.direct, server_id, tool);
    if (e == nullptr)
      e = find_entry(view.catalog, server_id, tool);
    REQUIRE(e != nullptr);
    return std::string{e->model_name()};
  }
};

/// Composes `w`'s view with `names` and without an order, checks both show
/// the same, and answers the one composed with `names`.
composed same_with_and_without(const tool_world& w, const tool_name_order& names,
                               view_kind kind = view_kind::text) {
  auto with = w.view(kind, {}, &names);
  auto without = w.view(kind);
  CHECK(shown_by(with) == shown_by(without));
  CHECK(with.catalog_mode == without.catalog_mode);
  return {std::move(with)};
}

} // namespace

TEST_CASE("name ranks order as the names' bytes do and equal names share one") {
  tool_world w;
  w.server("s_a", "Alpha");
  w.allow_mcp("s_a", definition("b_tool"));
  w.allow_mcp("s_a", definition("d_tool"));
  w.server("s_b", "Beta");
  w.allow_mcp("s_b", definition("d_tool"));
  tool_name_order names{w.tenant};
  // Held: base names, level-1 names, internal and catalog tool names.
  CHECK(names.rank_of("d_tool") % 2 == 1);
  CHECK(names.rank_of("d_tool__alpha") % 2 == 1);
  CHECK(names.rank_of("d_tool__beta") % 2 == 1);
  CHECK(names.rank_of(internal_tools()[0].name) % 2 == 1);
  CHECK(names.rank_of("tool_call") % 2 == 1);
  // Not held: an even rank between its neighbours.
  CHECK(names.rank_of("c_tool") % 2 == 0);
  CHECK(names.rank_of("b_tool") < names.rank_of("c_tool"));
  CHECK(names.rank_of("c_tool") < names.rank_of("d_tool"));
  CHECK(names.rank_of("d_tool_0") == names.rank_of("d_tool_1")); // both between two held names
  CHECK(names.rank_of("d_tool_0") % 2 == 0);
  const auto* a = names.server("s_a", w.tenant.servers.at("s_a").cached_tools, "alpha");
  const auto* b = names.server("s_b", w.tenant.servers.at("s_b").cached_tools, "beta");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  CHECK(a->base_rank(1) == b->base_rank(0)); // "d_tool" on both
  CHECK(a->suffixed_rank(1) == names.rank_of("d_tool__alpha"));
  // An order built from no tenant holds nothing: every rank is 0.
  tool_name_order none;
  CHECK(none.rank_of("d_tool") == 0);
  CHECK(none.size() == 0);
}

TEST_CASE("a server's ranks are used only with the very cache and slug they came from") {
  tool_world w;
  w.server("s_a", "Alpha");
  w.allow_mcp("s_a", definition("search"));
  tool_name_order names{w.tenant};
  auto& s = w.tenant.servers.at("s_a");
  CHECK(names.server("s_a", s.cached_tools, "alpha") != nullptr);
  CHECK(names.server("s_a", s.cached_tools, "beta") == nullptr);  // relabelled
  CHECK(names.server("s_b", s.cached_tools, "alpha") == nullptr); // another server
  // An equal cache built anew (rediscovery, a restart) is another block.
  auto rebuilt = tool_cache{s.cached_tools.definitions()};
  CHECK(names.server("s_a", rebuilt, "alpha") == nullptr);
  // A copy of the state shares the block.
  auto copy = w.tenant;
  CHECK(names.server("s_a", copy.servers.at("s_a").cached_tools, "alpha") != nullptr);
}

TEST_CASE("with the name order an external tool still never takes an internal or catalog name") {
  tool_world w;
  w.allow_internal(2);
  const auto& internal_name = internal_tools()[0].name;
  std::string not_in_view; // an internal tool this run lacks
  for (std::size_t idx = 2; idx < internal_tools().size() && not_in_view.empty(); ++idx)
    if (internal_tools()[idx].name.rfind("tool_", 0) != 0)
      not_in_view = internal_tools()[idx].name;
  REQUIRE_FALSE(not_in_view.empty());
  w.server("s_x", "Gateway");
  w.allow_mcp("s_x", definition(internal_name, "Impostor."));
  w.allow_mcp("s_x", definition("tool_search", "Impostor."));
  w.allow_mcp("s_x", definition(not_in_view, "Free here."));
  w.allow_many("s_x", "x_tool", 10);
  tool_name_order names{w.tenant};
  auto v = same_with_and_without(w, names);
  REQUIRE(v.view.catalog_mode);
  CHECK(v.name_of("s_x", internal_name) == internal_name + "__gateway");
  CHECK(v.name_of("s_x", "tool_search") == "tool_search__gateway");
  CHECK(v.name_of("s_x", not_in_view) == not_in_view);
}

TEST_CASE("with the name order servers sharing tool names are told apart as without it") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.server("s_no", "Notion");
  w.server("s_w1", "Work");
  w.server("s_w2", "Work");
  for (const auto* id : {"s_gh", "s_no", "s_w1", "s_w2"}) {
    w.allow_mcp(id, definition("search"));
    w.allow_mcp(id, definition("list_items"));
  }
  w.allow_mcp("s_gh", definition("search__notion")); // what a clash composes
  w.allow_many("s_gh", "gh", 10);
  tool_name_order names{w.tenant};
  for (auto kind : {view_kind::text, view_kind::voice}) {
    auto v = same_with_and_without(w, names, kind);
    CHECK(v.name_of("s_gh", "search") == "search__github");
    // Level 1 met a base name: both move on (a hashed suffix).
    CHECK(v.name_of("s_no", "search").rfind("search__notion_", 0) == 0);
    CHECK(v.name_of("s_gh", "search__notion").rfind("search__notion__github", 0) == 0);
    // Same slug: the server id's hash tells them apart.
    CHECK(v.name_of("s_w1", "search").rfind("search__work_", 0) == 0);
    CHECK(v.name_of("s_w1", "search") != v.name_of("s_w2", "search"));
  }
}

TEST_CASE("with the name order sanitised names and place-call tools are named as without it") {
  tool_world w;
  w.allow_internal(3);
  w.server("s_a", "Files (work)");
  w.server("s_b", "Files (home)");
  // Two names of one server that sanitise alike, and the sanitised form of
  // another server's name, beside that server's own.
  for (const auto* tool : {"a.b", "a_b", "files.read/v2", "files_read_v2"})
    w.allow_mcp("s_a", definition(tool));
  w.allow_mcp("s_b", definition("files.read/v2"));
  w.allow_mcp("s_b", definition("place_call")); // an MCP tool beside the integration's
  w.allow_place_call("ph_1", phone_provider::twilio);
  w.allow_many("s_a", "more", 10);
  tool_name_order names{w.tenant};
  for (auto kind : {view_kind::text, view_kind::voice}) {
    auto v = same_with_and_without(w, names, kind);
    CHECK(v.name_of("ph_1", "place_call") == "place_call__twilio");
    CHECK(v.name_of("s_b", "place_call") == "place_call__files_home");
    CHECK(v.name_of("s_a", "files.read/v2").rfind("files_read_v2__files_work", 0) == 0);
    CHECK(v.name_of("s_a", "a.b") != v.name_of("s_a", "a_b"));
  }
}

TEST_CASE("a stale name order never misnames: changed caches, labels and servers") {
  tool_world w;
  w.server("s_a", "Alpha");
  w.server("s_b", "Beta");
  for (const auto* tool : {"search", "fetch"})
    w.allow_mcp("s_a", definition(tool));
  w.allow_many("s_b", "b", 10);
  tool_name_order names{w.tenant};
  same_with_and_without(w, names);

  SUBCASE("a cache rediscovered with a tool that now clashes") {
    w.allow_mcp("s_b", definition("search"));
    auto v = same_with_and_without(w, names);
    CHECK(v.name_of("s_a", "search") == "search__alpha");
    CHECK(v.name_of("s_b", "search") == "search__beta");
  }
  SUBCASE("a relabelled server (its level-1 names change)") {
    w.allow_mcp("s_b", definition("search"));
    names = tool_name_order{w.tenant};
    // Now both servers suffix "__alpha": their level-1 names clash too.
    w.tenant.servers.at("s_b").label = "Alpha";
    auto v = same_with_and_without(w, names);
    auto a = v.name_of("s_a", "search");
    auto b = v.name_of("s_b", "search");
    CHECK(a.rfind("search__alpha_", 0) == 0);
    CHECK(b.rfind("search__alpha_", 0) == 0);
    CHECK(a != b);
  }
  SUBCASE("a server added after the order was built") {
    w.server("s_c", "Gamma");
    w.allow_mcp("s_c", definition("fetch"));
    w.allow_mcp("s_c", definition("zzz_own"));
    auto v = same_with_and_without(w, names);
    CHECK(v.name_of("s_c", "fetch") == "fetch__gamma");
    CHECK(v.name_of("s_c", "zzz_own") == "zzz_own");
  }
  SUBCASE("the state rebuilt from the store (equal caches, new blocks)") {
    for (auto& [id, s] : w.tenant.servers)
      s.cached_tools = tool_cache{s.cached_tools.definitions()};
    same_with_and_without(w, names);
  }
}

TEST_CASE("a few tools of a large tenant are named as without the order") {
  // Far fewer names than the order holds: sorted by comparison, not counted.
  tool_world w;
  w.server("s_big", "Big");
  for (int n = 0; n < 300; ++n)
    w.tenant.servers.at("s_big").allowed_tools.push_back("t_" + std::to_string(n));
  std::vector<tool_definition> defs;
  for (int n = 0; n < 300; ++n)
    defs.push_back(definition("t_" + std::to_string(n)));
  w.tenant.servers.at("s_big").cached_tools = tool_cache{defs};
  w.server("s_small", "Small");
  w.allow_mcp("s_small", definition("t_7"));
  w.snapshot.tools.emplace_back(tool_origin::mcp, "t_7", "s_big", risk_level::medium, false, false);
  w.snapshot.tools.emplace_back(tool_origin::mcp, "t_8", "s_big", risk_level::medium, false, false);
  tool_name_order names{w.tenant};
  auto v = same_with_and_without(w, names);
  CHECK(v.name_of("s_big", "t_7") == "t_7__big");
  CHECK(v.name_of("s_small", "t_7") == "t_7__small");
  CHECK(v.name_of("s_big", "t_8") == "t_8");
}

TEST_CASE("random tenants are named and ordered alike with a current, stale or no name order") {
  std::mt19937_64 rng{0x0eda'5eed};
  auto below = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const std::vector<std::string> labels{"alpha", "beta", "gamma", "alpha", "Files (x)"};
  std::vector<std::string> pool{"search",
                                "list",
                                "tool_call",
                                "tool_search",
                                "a.b",
                                "a_b",
                                "place_call",
                                "search__alpha",
                                "search__beta",
                                "x.y/z",
                                "list__gamma",
                                std::string(70, 'q'),
                                internal_tools()[0].name,
                                internal_tools()[1].name};
  for (int case_idx = 0; case_idx < 200; ++case_idx) {
    CAPTURE(case_idx);
    tool_world w;
    w.allow_internal(1 + below(3));
    auto servers = 1 + below(5);
    for (std::size_t server_idx = 0; server_idx < servers; ++server_idx) {
      auto id = "s_" + std::to_string(server_idx);
      w.server(id, labels[below(labels.size())]);
      std::vector<std::string> tools;
      for (auto count = 1 + below(6); tools.size() < count;) {
        const auto& tool = pool[below(pool.size())];
        if (std::find(tools.begin(), tools.end(), tool) == tools.end())
          tools.push_back(tool);
      }
      for (const auto& tool : tools)
        w.allow_mcp(id, definition(tool));
      if (below(2) == 0)
        w.allow_many(id, "own" + std::to_string(server_idx), static_cast<int>(below(12)));
    }
    if (below(3) == 0)
      w.allow_place_call("ph_1", phone_provider::twilio);
    tool_name_order names{w.tenant};
    if (below(4) == 0) { // stale: one server rediscovered with one more tool
      auto id = "s_" + std::to_string(below(servers));
      w.allow_mcp(id, definition(pool[below(pool.size())] + "_new"));
    }
    for (auto kind : {view_kind::text, view_kind::voice})
      same_with_and_without(w, names, kind);
  }
}
