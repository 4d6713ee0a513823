// The run-scoped tool catalog: ranked search over the long tail only, opaque
// ids bound to one run, bounded input with errors that never echo it.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tool_fixtures.hpp"

using namespace voxos;
using test::catalog_of;
using test::definition;
using test::find_entry;
using test::tool_world;

namespace {

/// A catalog-mode world: a route-selected search tool direct, and a long tail
/// of GitHub, Notion and billing tools.
tool_world long_tail_world() {
  tool_world w;
  w.allow_internal(2);
  w.server("s_exa", "Exa", "exa");
  w.allow_mcp("s_exa", definition("web_search_exa", "Search the web for pages."), "web.search");
  w.server("s_gh", "GitHub");
  w.allow_mcp("s_gh", definition("create_issue", "Open a new issue in a repository.",
                                 R"({"type":"object","properties":{"title":{"type":"string"}}})",
                                 "Create issue"));
  w.allow_mcp("s_gh", definition("list_pull_requests", "List pull requests of a repository."));
  w.allow_mcp("s_gh", definition("search", "Search code across repositories."));
  w.allow_mcp("s_gh", definition("get_file_contents", "Read a file from a repository."));
  w.server("s_no", "Notion");
  w.allow_mcp("s_no", definition("search", "Search pages and databases in the workspace."));
  w.allow_mcp("s_no", definition("create_page", "Create a page in a workspace."));
  w.server("s_bill", "Billing");
  w.allow_mcp("s_bill", definition("create_invoice", "Make a billing record for a customer."));
  w.allow_mcp("s_bill",
              definition("list_records", "List stored records, e.g. to create an invoice later "
                                         "or review an invoice."));
  w.allow_mcp("s_bill", definition("refund_payment", "Refund one payment."));
  return w;
}

std::vector<std::string> names_of(const std::vector<catalog_hit>& hits) {
  std::vector<std::string> out;
  for (const auto& h : hits)
    out.push_back(h.name);
  return out;
}

} // namespace

TEST_CASE("search ranks a name match above a description match") {
  auto w = long_tail_world();
  auto view = w.view();
  REQUIRE(view.catalog_mode);
  auto catalog = catalog_of(view, 1);
  auto hits = catalog.search("create invoice", 5);
  REQUIRE(hits.is_ok());
  REQUIRE(hits->size() >= 2);
  CHECK((*hits)[0].name == "create_invoice");
  auto names = names_of(*hits);
  CHECK(std::find(names.begin(), names.end(), "list_records") != names.end());
  CHECK((*hits)[0].score > (*hits)[1].score);
}

TEST_CASE("search covers the server label and title") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  auto hits = catalog.search("notion search", 3);
  REQUIRE(hits.is_ok());
  REQUIRE_FALSE(hits->empty());
  CHECK((*hits)[0].name == "search__notion");
  CHECK((*hits)[0].server == "notion");
  auto pulls = catalog.search("pull requests", 3);
  REQUIRE(pulls.is_ok());
  REQUIRE_FALSE(pulls->empty());
  CHECK((*pulls)[0].name == "list_pull_requests");
}

TEST_CASE("search never reaches a tool outside its catalog") {
  auto w = long_tail_world();
  auto view = w.view();
  auto catalog = catalog_of(view, 1);
  CHECK(catalog.size() == view.catalog.size());
  // Direct tools (the route-selected search, internal tools) are not in it.
  auto hits = catalog.search("web_search_exa search web pages", 20);
  REQUIRE(hits.is_ok());
  for (const auto& h : *hits) {
    CHECK(h.name != "web_search_exa");
    auto target = catalog.resolve(h.id);
    REQUIRE(target.is_ok());
    CHECK(find_entry(view.catalog, target->server_id, target->tool) != nullptr);
  }
  auto internal = catalog.search(internal_tools()[0].name, 20);
  REQUIRE(internal.is_ok());
  for (const auto& h : *internal)
    CHECK(h.name != internal_tools()[0].name);
  // Every id resolves into the view's catalog and to nothing else.
  std::set<std::pair<std::string, std::string>> targets;
  for (std::size_t idx = 0; idx < catalog.size(); ++idx) {
    auto target = catalog.resolve(catalog.id_at(idx));
    REQUIRE(target.is_ok());
    CHECK(find_entry(view.catalog, target->server_id, target->tool) != nullptr);
    targets.insert({target->server_id, target->tool});
  }
  CHECK(targets.size() == view.catalog.size());
}

TEST_CASE("describe returns the full schema of one result") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  auto hits = catalog.search("create issue", 1);
  REQUIRE(hits.is_ok());
  REQUIRE(hits->size() == 1);
  auto described = catalog.describe((*hits)[0].id);
  REQUIRE(described.is_ok());
  CHECK(described->id == (*hits)[0].id);
  CHECK(described->name == "create_issue");
  CHECK(described->title == "Create issue");
  CHECK(described->description == "Open a new issue in a repository.");
  CHECK(described->input_schema == R"({"type":"object","properties":{"title":{"type":"string"}}})");
}

TEST_CASE("resolve returns the origin server and tool an id stands for") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  auto hits = catalog.search("search", 20);
  REQUIRE(hits.is_ok());
  std::set<std::string> servers;
  for (const auto& h : *hits) {
    auto target = catalog.resolve(h.id);
    REQUIRE(target.is_ok());
    CHECK(target->model_name == h.name);
    if (target->tool == "search") {
      CHECK(target->origin == tool_origin::mcp);
      servers.insert(target->server_id);
    }
  }
  // Two tools named "search": two ids, two servers.
  CHECK(servers == std::set<std::string>{"s_gh", "s_no"});
}

TEST_CASE("an id from another run resolves to nothing") {
  auto w = long_tail_world();
  auto view = w.view();
  auto first = make_tool_catalog(view);
  auto second = make_tool_catalog(view);
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  REQUIRE(first->size() == second->size());
  for (std::size_t idx = 0; idx < first->size(); ++idx) {
    const auto& id = first->id_at(idx);
    CHECK(first->resolve(id).is_ok());
    auto foreign = second->resolve(id);
    REQUIRE_FALSE(foreign.is_ok());
    CHECK(foreign.error().code() == errc::not_found);
    auto described = second->describe(id);
    REQUIRE_FALSE(described.is_ok());
    CHECK(described.error().code() == errc::not_found);
  }
}

TEST_CASE("the same run key gives the same ids") {
  auto w = long_tail_world();
  auto view = w.view();
  auto a = catalog_of(view, 7);
  auto b = catalog_of(view, 7);
  auto c = catalog_of(view, 8);
  for (std::size_t idx = 0; idx < a.size(); ++idx) {
    CHECK(a.id_at(idx) == b.id_at(idx));
    CHECK(a.id_at(idx) != c.id_at(idx));
  }
}

TEST_CASE("a guessed id resolves to nothing") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  for (const auto& guess : {"ct_" + std::string(22, 'A'), "ct_" + std::string(22, '-'),
                            std::string{"ct_0123456789abcdefghijkl"}}) {
    auto r = catalog.resolve(guess);
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.error().code() == errc::not_found);
    CHECK(r.error().message().find(guess) == std::string::npos);
  }
}

TEST_CASE("ids have a fixed length and a url-safe prefix form") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 3);
  std::set<std::string> ids;
  for (std::size_t idx = 0; idx < catalog.size(); ++idx) {
    const auto& id = catalog.id_at(idx);
    CHECK(id.size() == catalog_limits::id_length);
    CHECK(id.rfind("ct_", 0) == 0);
    CHECK(
      id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 3)
      == std::string::npos);
    ids.insert(id);
  }
  CHECK(ids.size() == catalog.size());
}

TEST_CASE("malformed ids get a clear error that never echoes them") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  auto valid = catalog.id_at(0);
  const std::vector<std::string> malformed{
    "",
    "ct_",
    "ct_MARKER",
    "xx_" + valid.substr(3),                      // wrong prefix
    valid + "A",                                  // too long
    valid.substr(0, valid.size() - 1),            // too short
    valid.substr(0, valid.size() - 1) + "!",      // not base64url
    valid.substr(0, valid.size() - 1) + "=",      // padding
    std::string("ct_MARKER\0MARKERMARKERMA", 25), // an embedded NUL
    "ct_" + std::string(5000, 'M'),
  };
  for (const auto& id : malformed) {
    CAPTURE(id.size());
    auto resolved = catalog.resolve(id);
    auto described = catalog.describe(id);
    REQUIRE_FALSE(resolved.is_ok());
    REQUIRE_FALSE(described.is_ok());
    for (const auto* r : {&resolved.error(), &described.error()}) {
      CHECK(r->code() == errc::out_of_range);
      CHECK(r->message().find("malformed") != std::string::npos);
      CHECK(r->message().find("MARKER") == std::string::npos);
      if (id.size() > 3)
        CHECK(r->message().find(id) == std::string::npos);
    }
  }
}

TEST_CASE("query and limit are bounded and errors never echo the query") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  auto check_error = [](const result<std::vector<catalog_hit>>& r) {
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.error().code() == errc::out_of_range);
    CHECK(r.error().message().find("MARKER") == std::string::npos);
    CHECK(r.error().message().find("tool_search") != std::string::npos);
  };
  check_error(catalog.search("", 5));
  check_error(catalog.search("MARKER " + std::string(506, 'x'), 5)); // 512 + 1 bytes
  check_error(catalog.search("  ,;  ", 5));                          // no words
  check_error(catalog.search("the of to", 5));                       // stop words only
  check_error(catalog.search("MARKER issue", 0));
  check_error(catalog.search("MARKER issue", 21));
  CHECK(catalog.search("issue " + std::string(506, 'x'), 5).is_ok()); // exactly 512 bytes
  CHECK(catalog.search("issue", 20).is_ok());
  CHECK(catalog.search("issue", 1).is_ok());
}

TEST_CASE("the limit caps the number of hits") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "repo_tool", 30);
  auto view = w.view();
  REQUIRE(view.catalog_mode);
  auto catalog = catalog_of(view, 1);
  auto five = catalog.search("repo tool", 5);
  REQUIRE(five.is_ok());
  CHECK(five->size() == 5);
  auto all = catalog.search("repo tool", 20);
  REQUIRE(all.is_ok());
  CHECK(all->size() == 20);
}

TEST_CASE("equal scores break ties by name and repeat exactly") {
  tool_world w;
  w.server("s_z", "Zeta");
  for (const auto* name : {"zulu", "alpha", "mike", "echo", "kilo", "bravo", "lima", "delta",
                           "golf", "hotel", "india"})
    w.allow_mcp("s_z", definition(name, "Send a message to a channel."));
  auto catalog = catalog_of(w.view(), 1);
  auto first = catalog.search("send message", 20);
  REQUIRE(first.is_ok());
  REQUIRE(first->size() == 11);
  auto names = names_of(*first);
  CHECK(std::is_sorted(names.begin(), names.end()));
  auto second = catalog.search("message send", 20);
  REQUIRE(second.is_ok());
  CHECK(names_of(*second) == names);
}

TEST_CASE("a query matching nothing returns no hits") {
  auto w = long_tail_world();
  auto catalog = catalog_of(w.view(), 1);
  auto hits = catalog.search("xylophone quaternion", 5);
  REQUIRE(hits.is_ok());
  CHECK(hits->empty());
}

TEST_CASE("a catalog of a view without a long tail is empty") {
  tool_world w;
  w.server("s_gh", "GitHub");
  w.allow_many("s_gh", "gh_tool", 3);
  auto catalog = catalog_of(w.view(), 1);
  CHECK(catalog.size() == 0);
  auto hits = catalog.search("gh tool", 5);
  REQUIRE(hits.is_ok());
  CHECK(hits->empty());
  auto r = catalog.resolve("ct_" + std::string(22, 'A'));
  REQUIRE_FALSE(r.is_ok());
  CHECK(r.error().code() == errc::not_found);
}

TEST_CASE("the tokeniser splits camel and snake case and folds plurals") {
  CHECK(catalog_terms("searchPlaces list_GitHub-issues")
        == std::vector<std::string>{"search", "place", "list", "git", "hub", "issue"});
  CHECK(catalog_terms("boxes entries branches addresses status analysis")
        == std::vector<std::string>{"box", "entry", "branch", "address", "status", "analysis"});
  CHECK(catalog_terms("Send the message to a channel")
        == std::vector<std::string>{"send", "message", "channel"});
  CHECK(catalog_terms("caf\xc3\xa9 tables") == std::vector<std::string>{"caf\xc3\xa9", "table"});
}

TEST_CASE("summaries are the first sentence and stay short") {
  tool_world w;
  w.server("s_a", "A");
  w.allow_mcp("s_a", definition("first_sentence", "Does one thing. Then says much more."));
  w.allow_mcp("s_a", definition("long_one", std::string(400, 'w') + " end."));
  std::string accented;
  for (int n = 0; n < 200; ++n)
    accented += "\xc3\xa9"; // two-byte UTF-8
  w.allow_mcp("s_a", definition("accented", accented));
  w.allow_many("s_a", "pad", 8);
  auto view = w.view();
  REQUIRE(view.catalog_mode);
  auto catalog = catalog_of(view, 1);
  auto first = catalog.search("first sentence", 1);
  REQUIRE(first.is_ok());
  CHECK((*first)[0].summary == "Does one thing.");
  auto long_one = catalog.search("long one", 1);
  REQUIRE(long_one.is_ok());
  CHECK((*long_one)[0].summary.size() <= catalog_limits::max_summary_bytes);
  auto acc = catalog.search("accented", 1);
  REQUIRE(acc.is_ok());
  const auto& summary = (*acc)[0].summary;
  CHECK(summary.size() <= catalog_limits::max_summary_bytes);
  // Cut between UTF-8 sequences: an even number of accent bytes before "...".
  CHECK((summary.size() - 3) % 2 == 0);
}
