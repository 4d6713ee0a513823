// The full-text index: ranked search with snippets, stemming and case
// folding, query text that is never syntax, the query bounds, replacement,
// lookup and deletion by key, refused input storing nothing, and the on-disk
// database's directory.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/fulltext_index.hpp"
#include "support/temp_dir.hpp"

using namespace voxos;

namespace {

std::unique_ptr<fulltext_index> open_index(fulltext_options opts = {}) {
  auto index = fulltext_index::open(std::move(opts));
  REQUIRE_MESSAGE(index, (index ? "" : index.error().message()));
  return std::move(*index);
}

void put(fulltext_index& index, std::string key, std::string text, std::string data = "") {
  fulltext_document doc{std::move(key), {{"body", std::move(text), 1}}, std::move(data)};
  REQUIRE(index.put(doc));
}

std::vector<std::string> keys_found(const fulltext_index& index, const std::string& query,
                                    std::size_t limit = 10) {
  auto hits = index.search(query, limit);
  REQUIRE_MESSAGE(hits, (hits ? "" : hits.error().message()));
  std::vector<std::string> keys;
  for (const auto& hit : *hits)
    keys.push_back(hit.key);
  return keys;
}

using keys = std::vector<std::string>;

} // namespace

TEST_CASE("a document is found by its words, the best match first, with its data and a snippet") {
  auto index = open_index();
  put(*index, "k1", "The garlic bread needs more butter.", "one");
  put(*index, "k2", "Garlic and onion soup with garlic croutons and onion rings.", "two");
  put(*index, "k3", "The train to Lisbon leaves at nine.", "three");
  auto hits = index->search("garlic onion", 10);
  REQUIRE(hits);
  REQUIRE(hits->size() == 2);
  CHECK((*hits)[0].key == "k2");
  CHECK((*hits)[0].data == "two");
  CHECK((*hits)[0].field == "body");
  CHECK((*hits)[0].snippet == "Garlic and onion soup with garlic croutons and onion rings.");
  CHECK((*hits)[0].score > (*hits)[1].score);
  CHECK((*hits)[1].key == "k1");
  CHECK(keys_found(*index, "Lisbon") == keys{"k3"});
  CHECK(keys_found(*index, "helicopter").empty());
}

TEST_CASE("words are lowercased and stemmed for English, letters beyond ASCII included") {
  auto index = open_index();
  put(*index, "k1", "She was RUNNING late for the meetings in Zürich.");
  put(*index, "k2", "Café Élysée serves crêpes.");
  CHECK(keys_found(*index, "run") == keys{"k1"});
  CHECK(keys_found(*index, "meeting") == keys{"k1"});
  CHECK(keys_found(*index, "ZÜRICH") == keys{"k1"});
  CHECK(keys_found(*index, "café élysée") == keys{"k2"});
  CHECK(keys_found(*index, "CRÊPES") == keys{"k2"});
}

TEST_CASE("query text is never syntax: operators, quotes, parentheses, wildcards and minus are "
          "plain text") {
  auto index = open_index();
  put(*index, "garlic", "garlic bread");
  put(*index, "both", "garlic and onion");
  put(*index, "onion", "onion rings");
  // AND does not require both, OR is no operator, NOT and '-' exclude nothing.
  CHECK(keys_found(*index, "garlic AND onion").size() == 3);
  CHECK(keys_found(*index, "garlic NOT onion").size() == 3);
  CHECK(keys_found(*index, "garlic -onion").size() == 3);
  CHECK(keys_found(*index, "-onion").size() == 2);
  // Quotes, parentheses, '+', ':' and '~' separate words like spaces.
  CHECK(keys_found(*index, "\"onion garlic\"").size() == 3);
  CHECK(keys_found(*index, "(bread)") == keys{"garlic"});
  CHECK(keys_found(*index, "+rings body:rings ~rings") == keys{"onion"});
  // '*' is no wildcard: "gar*" is the word "gar".
  CHECK(keys_found(*index, "gar*").empty());
  // Words that are only operators are stop words: they match nothing.
  CHECK(keys_found(*index, "AND OR NOT").empty());
}

TEST_CASE("a query over its byte bound or its distinct-word bound is refused naming the bound") {
  fulltext_options opts;
  opts.max_query_bytes = 64;
  opts.max_query_terms = 3;
  auto index = open_index(opts);
  put(*index, "k1", "alpha beta gamma delta");

  auto long_query = std::string(65, 'x');
  auto too_long = index->search(long_query, 10);
  REQUIRE_FALSE(too_long);
  CHECK(too_long.error().code() == errc::out_of_range);
  CHECK(too_long.error().message() == "query: at most 64 bytes");
  CHECK(too_long.error().message().find(long_query) == std::string::npos);
  CHECK(index->search(std::string(64, 'x'), 10));

  auto too_many = index->search("alpha beta gamma delta", 10);
  REQUIRE_FALSE(too_many);
  CHECK(too_many.error().code() == errc::out_of_range);
  CHECK(too_many.error().message() == "query: at most 3 distinct words");
  // Repeated words and stop words do not count.
  CHECK(keys_found(*index, "alpha alpha beta the and gamma") == keys{"k1"});
}

TEST_CASE("the default query bounds hold a 500-character query of the tools' schema") {
  auto index = open_index();
  CHECK(index->options().max_query_bytes == 2048);
  CHECK(index->options().max_query_terms == 64);
  std::string query;
  while (query.size() < 1990)
    query += "\xC3\xA9"; // 995 two-byte characters: one word
  CHECK(index->search(query, 5));
}

TEST_CASE("a document put again under its key replaces the one before") {
  auto index = open_index();
  put(*index, "k1", "tomato seedlings in the greenhouse", "old");
  put(*index, "k1", "roof gutter repair", "new");
  CHECK(keys_found(*index, "tomato").empty());
  CHECK(keys_found(*index, "gutter") == keys{"k1"});
  auto size = index->size();
  REQUIRE(size);
  CHECK(*size == 1);
  auto doc = index->get("k1");
  REQUIRE(doc);
  REQUIRE(doc->has_value());
  CHECK((*doc)->data == "new");
}

TEST_CASE("a document is looked up by its key as it was put, fields and weights included") {
  auto index = open_index();
  fulltext_document doc{"t.c_1.7", {{"user", "hello there", 1}, {"assistant", "", 3}}, "meta"};
  REQUIRE(index->put(doc));
  auto found = index->get("t.c_1.7");
  REQUIRE(found);
  REQUIRE(found->has_value());
  CHECK((*found)->key == "t.c_1.7");
  CHECK((*found)->data == "meta");
  REQUIRE((*found)->fields.size() == 2);
  CHECK((*found)->fields[0].name == "user");
  CHECK((*found)->fields[0].text == "hello there");
  CHECK((*found)->fields[1].name == "assistant");
  CHECK((*found)->fields[1].text.empty());
  CHECK((*found)->fields[1].weight == 3);
  for (const auto& absent : std::vector<std::string>{"t.c_1.8", "", std::string(500, 'k')}) {
    auto none = index->get(absent);
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
  }
}

TEST_CASE("an erased document is neither found nor looked up, and erasing an absent key is ok") {
  auto index = open_index();
  put(*index, "k1", "bicycle repair");
  put(*index, "k2", "bicycle tour");
  REQUIRE(index->erase("k1"));
  CHECK(keys_found(*index, "bicycle") == keys{"k2"});
  auto gone = index->get("k1");
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
  CHECK(index->erase("k1"));
  CHECK(index->erase("never-there"));
}

TEST_CASE("a key or a weight out of bounds is refused and stores nothing") {
  auto index = open_index();
  for (auto doc : {fulltext_document{"", {{"body", "kettle", 1}}, ""},
                   fulltext_document{std::string(201, 'k'), {{"body", "kettle", 1}}, ""},
                   fulltext_document{"k1", {{"body", "kettle", 0}}, ""},
                   fulltext_document{"k1", {{"body", "kettle", 17}}, ""}}) {
    auto st = index->put(doc);
    REQUIRE_FALSE(st);
    CHECK(st.code() == errc::out_of_range);
  }
  CHECK(keys_found(*index, "kettle").empty());
  auto size = index->size();
  REQUIRE(size);
  CHECK(*size == 0);
  CHECK(index->put({std::string(200, 'k'), {{"body", "kettle", 16}}, ""}));
}

TEST_CASE("words of a heavier field count more than the same words in a lighter one") {
  auto index = open_index();
  REQUIRE(index->put({"light", {{"title", "notes", 1}, {"body", "passport renewal", 1}}, ""}));
  REQUIRE(index->put({"heavy", {{"title", "passport renewal", 4}, {"body", "notes", 1}}, ""}));
  CHECK(keys_found(*index, "passport") == keys{"heavy", "light"});
  auto hits = index->search("passport", 10);
  REQUIRE(hits);
  CHECK((*hits)[0].field == "title");
  CHECK((*hits)[1].field == "body");
}

TEST_CASE("a snippet is cut at word boundaries around the matches and marks what was left out") {
  fulltext_options opts;
  opts.snippet_bytes = 60;
  auto index = open_index(opts);
  std::string filler;
  for (int idx = 0; idx < 20; ++idx)
    filler += "lorem ipsum dolor sit amet ";
  auto text = filler + "the boiler leaked near the radiator on Tuesday. " + filler;
  put(*index, "k1", text);
  auto hits = index->search("boiler radiator", 10);
  REQUIRE(hits);
  REQUIRE(hits->size() == 1);
  const auto& snippet = (*hits)[0].snippet;
  CHECK(snippet.find("boiler leaked near the radiator") != std::string::npos);
  CHECK(snippet.rfind("\xE2\x80\xA6", 0) == 0);                       // starts with "…"
  CHECK(snippet.compare(snippet.size() - 3, 3, "\xE2\x80\xA6") == 0); // ends with "…"
  CHECK(snippet.size() <= opts.snippet_bytes + 2 * 3 + 8);
  // Whole words only: what lies between the marks starts and ends a word.
  auto inner = snippet.substr(3, snippet.size() - 6);
  CHECK(text.find(" " + inner) != std::string::npos);
  CHECK(text.find(inner + " ") != std::string::npos);
}

TEST_CASE("the snippet comes from the field that matches best, the rest of the hit unchanged") {
  auto index = open_index();
  REQUIRE(index->put({"k1",
                      {{"user", "What about the weather?", 1},
                       {"assistant", "Expect rain on Friday, then a mild weekend.", 1}},
                      ""}));
  auto hits = index->search("rain friday", 10);
  REQUIRE(hits);
  REQUIRE(hits->size() == 1);
  CHECK((*hits)[0].field == "assistant");
  CHECK((*hits)[0].snippet == "Expect rain on Friday, then a mild weekend.");
}

TEST_CASE("a search answers at most its limit and at most max_results") {
  fulltext_options opts;
  opts.max_results = 4;
  auto index = open_index(opts);
  for (int idx = 0; idx < 10; ++idx)
    put(*index, "k" + std::to_string(idx), "umbrella number " + std::to_string(idx));
  CHECK(keys_found(*index, "umbrella", 2).size() == 2);
  CHECK(keys_found(*index, "umbrella", 50).size() == 4);
  CHECK(keys_found(*index, "umbrella", 0).empty());
}

TEST_CASE("an index on disk starts empty in its own directory, which one index holds at a time") {
  test::temp_dir dir;
  fulltext_options opts;
  opts.dir = dir.str() + "/history";
  opts.commit_every = 2;
  {
    auto index = open_index(opts);
    put(*index, "k1", "harbour ferry timetable");
    put(*index, "k2", "ferry tickets");
    put(*index, "k3", "ferry to the island"); // after a commit
    CHECK(keys_found(*index, "ferry").size() == 3);
    // A second index on the same directory is refused while this one lives.
    auto second = fulltext_index::open(opts);
    REQUIRE_FALSE(second);
    CHECK(second.error().code() == errc::storage_failure);
    CHECK(keys_found(*index, "timetable") == keys{"k1"});
  }
  // Derived data: opened again, the index is empty, ready for a rebuild.
  auto index = open_index(opts);
  CHECK(keys_found(*index, "ferry").empty());
  auto size = index->size();
  REQUIRE(size);
  CHECK(*size == 0);
  CHECK((std::filesystem::status(opts.dir).permissions() & std::filesystem::perms::all)
        == std::filesystem::perms::owner_all);
}

TEST_CASE("of a query with more distinct words than max_ranked_terms, the rarest rank") {
  fulltext_options opts;
  opts.max_ranked_terms = 2;
  auto index = open_index(opts);
  put(*index, "alpha", "alpha common");
  put(*index, "beta", "beta common");
  for (int idx = 0; idx < 6; ++idx)
    put(*index, "plain" + std::to_string(idx), "common words only");
  // "common" is the commonest of the three: it does not rank, so documents
  // holding only it are not found.
  auto found = keys_found(*index, "alpha beta common");
  std::sort(found.begin(), found.end());
  CHECK(found == keys{"alpha", "beta"});
  // With room for all three, they are.
  opts.max_ranked_terms = 3;
  auto wide = open_index(opts);
  put(*wide, "alpha", "alpha common");
  put(*wide, "plain", "common words only");
  CHECK(keys_found(*wide, "alpha common").size() == 2);
}
