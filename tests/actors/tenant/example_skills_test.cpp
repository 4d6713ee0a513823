// Curated MCP example skills: the catalog's format, each bad input refused
// with its own error, and the catalog shipped in examples/skills/.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "actors/tenant/example_skills.hpp"
#include "tests/support/temp_dir.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

const std::string shipped_dir = std::string{VOXOS_SOURCE_DIR} + "/examples/skills";

/// A valid two-skill catalog; a test changes one thing.
json valid_catalog() {
  return json{
    {"version", 1},
    {"skills",
     json::array({{{"slug", "github-issue-triage"},
                   {"name", "Issue triage"},
                   {"description", "Proposes a triage for open issues."},
                   {"mcp", "github"},
                   {"body", "github-issue-triage.md"},
                   {"dependencies", json::array({{{"preset_id", "github"},
                                                  {"tools", {"list_issues", "search_code"}}}})}},
                  {{"slug", "google-calendar-week-agenda"},
                   {"name", "Week agenda"},
                   {"description", "Lays out the coming week."},
                   {"mcp", "google-workspace"},
                   {"body", "google-calendar-week-agenda.md"},
                   {"dependencies", json::array({{{"preset_id", "google_workspace"},
                                                  {"variant", "calendar"},
                                                  {"tools", {"list_events"}}}})}}})}};
}

std::map<std::string, std::string> valid_bodies() {
  return {{"github-issue-triage.md", "# Issue triage\n\nList, classify, propose.\n"},
          {"google-calendar-week-agenda.md", "# Week agenda\n\n\tList events.\r\n"}};
}

/// Bodies served from `files`: not_found for any other name.
example_body_reader reader_of(std::map<std::string, std::string> files) {
  return [files = std::move(files)](const std::string& name) -> result<std::string> {
    auto found = files.find(name);
    if (found == files.end())
      return status::error(errc::not_found, "not a readable regular file");
    return found->second;
  };
}

result<std::vector<example_skill>> parse(const std::string& text,
                                         std::map<std::string, std::string> bodies = valid_bodies(),
                                         const example_skill_limits& limits = {}) {
  return parse_example_catalog(text, reader_of(std::move(bodies)), limits);
}

} // namespace

TEST_CASE("a valid example catalog parses into its skills with their bodies") {
  auto catalog = parse(valid_catalog().dump());
  REQUIRE_MESSAGE(catalog.is_ok(), catalog.error().message());
  REQUIRE(catalog->size() == 2);
  const auto& triage = (*catalog)[0];
  CHECK(triage.slug == "github-issue-triage");
  CHECK(triage.mcp == "github");
  CHECK(triage.body_file == "github-issue-triage.md");
  CHECK(triage.body == valid_bodies()["github-issue-triage.md"]);
  REQUIRE(triage.dependencies.size() == 1);
  CHECK(triage.dependencies[0].preset_id == "github");
  CHECK(triage.dependencies[0].variant.empty());
  CHECK(triage.dependencies[0].tools == std::vector<std::string>{"list_issues", "search_code"});
  CHECK((*catalog)[1].dependencies[0].variant == "calendar");
}

TEST_CASE("each bad example catalog input is refused with its own error naming the path") {
  struct row {
    const char* name;
    std::function<void(json&, std::map<std::string, std::string>&)> change;
    errc code;
    const char* message;
  };
  auto skill0 = [](json& c) -> json& { return c["skills"][0]; };
  auto dep0 = [&](json& c) -> json& { return skill0(c)["dependencies"][0]; };
  std::vector<row> rows{
    {"unknown top-level field", [](json& c, auto&) { c["extra"] = 1; }, errc::unknown_field,
     "catalog: unknown field 'extra'"},
    {"missing version", [](json& c, auto&) { c.erase("version"); }, errc::missing_field,
     "catalog: missing field 'version'"},
    {"another version", [](json& c, auto&) { c["version"] = 2; }, errc::out_of_range,
     "catalog.version: must be 1"},
    {"a skill that is not an object", [](json& c, auto&) { c["skills"][0] = "x"; },
     errc::wrong_type, "skills[0]: expected an object"},
    {"unknown skill field", [&](json& c, auto&) { skill0(c)["label"] = "x"; }, errc::unknown_field,
     "skills[0]: unknown field 'label'"},
    {"missing name", [&](json& c, auto&) { skill0(c).erase("name"); }, errc::missing_field,
     "skills[0]: missing field 'name'"},
    {"slug of the wrong type", [&](json& c, auto&) { skill0(c)["slug"] = 7; }, errc::wrong_type,
     "skills[0]: field 'slug': expected a string"},
    {"slug with capitals and underscore", [&](json& c, auto&) { skill0(c)["slug"] = "Bad_Slug"; },
     errc::out_of_range, "skills[0].slug: must match ^[a-z0-9][a-z0-9-]{0,63}$"},
    {"slug starting with a hyphen", [&](json& c, auto&) { skill0(c)["slug"] = "-triage"; },
     errc::out_of_range, "skills[0].slug: must match"},
    {"slug longer than 64", [&](json& c, auto&) { skill0(c)["slug"] = std::string(65, 'a'); },
     errc::out_of_range, "skills[0]: field 'slug': longer than 64 bytes"},
    {"MCP key outside the grammar", [&](json& c, auto&) { skill0(c)["mcp"] = "Git Hub"; },
     errc::out_of_range, "skills[0].mcp: must match"},
    {"body outside the catalog directory",
     [&](json& c, auto&) { skill0(c)["body"] = "../secrets.md"; }, errc::out_of_range,
     "skills[0].body: must be a file name"},
    {"body file that is not Markdown", [&](json& c, auto&) { skill0(c)["body"] = "triage.txt"; },
     errc::out_of_range, "skills[0].body: must be a file name"},
    {"missing body file",
     [](json&, std::map<std::string, std::string>& b) { b.erase("github-issue-triage.md"); },
     errc::not_found, "skills[0].body: not a readable regular file"},
    {"empty body",
     [](json&, std::map<std::string, std::string>& b) { b["github-issue-triage.md"] = ""; },
     errc::out_of_range, "skills[0].body: must not be empty"},
    {"body over its bound",
     [](json&, std::map<std::string, std::string>& b) {
       b["github-issue-triage.md"] = std::string(16 * 1024 + 1, 'x');
     },
     errc::out_of_range, "skills[0].body: longer than 16384 bytes"},
    {"body with a control character",
     [](json&, std::map<std::string, std::string>& b) { b["github-issue-triage.md"] = "# a\x01"; },
     errc::out_of_range, "skills[0].body: holds a control character other than tab, LF and CR"},
    {"body that is not UTF-8",
     [](json&, std::map<std::string, std::string>& b) {
       b["github-issue-triage.md"] = "# caf\xe9";
     },
     errc::out_of_range, "skills[0].body: not UTF-8"},
    {"name with a line break", [&](json& c, auto&) { skill0(c)["name"] = "Issue\ntriage"; },
     errc::out_of_range, "skills[0].name: holds a control character, tab or line break"},
    {"empty description", [&](json& c, auto&) { skill0(c)["description"] = ""; },
     errc::out_of_range, "skills[0].description: must not be empty"},
    {"the same slug twice", [](json& c, auto&) { c["skills"][1]["slug"] = "github-issue-triage"; },
     errc::conflict, "skills[1].slug: the same slug as skills[0]"},
    {"no dependencies", [&](json& c, auto&) { skill0(c)["dependencies"] = json::array(); },
     errc::out_of_range, "skills[0].dependencies: must list 1 to 8 dependencies"},
    {"unknown dependency field", [&](json& c, auto&) { dep0(c)["label"] = "GitHub"; },
     errc::unknown_field, "skills[0].dependencies[0]: unknown field 'label'"},
    {"unknown preset", [&](json& c, auto&) { dep0(c)["preset_id"] = "gitlab"; }, errc::out_of_range,
     "skills[0].dependencies[0].preset_id: not a preset of the MCP preset"},
    {"variant of a preset without variants", [&](json& c, auto&) { dep0(c)["variant"] = "x"; },
     errc::out_of_range, "skills[0].dependencies[0].variant: the preset has no variants"},
    {"no variant where the preset has variants",
     [](json& c, auto&) { c["skills"][1]["dependencies"][0].erase("variant"); },
     errc::missing_field, "skills[1].dependencies[0].variant: required"},
    {"unknown variant",
     [](json& c, auto&) { c["skills"][1]["dependencies"][0]["variant"] = "sheets"; },
     errc::out_of_range, "skills[1].dependencies[0].variant: not a variant of the preset"},
    {"no tools", [&](json& c, auto&) { dep0(c)["tools"] = json::array(); }, errc::out_of_range,
     "skills[0].dependencies[0].tools: must list 1 to 16 tools"},
    {"a tool that is not a string", [&](json& c, auto&) { dep0(c)["tools"][1] = 3; },
     errc::wrong_type, "skills[0].dependencies[0].tools[1]: expected a string"},
    {"a tool the preset does not list",
     [&](json& c, auto&) { dep0(c)["tools"][1] = "delete_repository"; }, errc::out_of_range,
     "skills[0].dependencies[0].tools[1]: not a tool the preset lists"},
    {"a tool twice", [&](json& c, auto&) { dep0(c)["tools"][1] = "list_issues"; },
     errc::out_of_range, "skills[0].dependencies[0].tools[1]: listed twice"},
  };
  for (const auto& r : rows) {
    CAPTURE(r.name);
    auto catalog = valid_catalog();
    auto bodies = valid_bodies();
    r.change(catalog, bodies);
    auto parsed = parse(catalog.dump(-1, ' ', false, json::error_handler_t::replace), bodies);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.error().code() == r.code);
    CHECK_MESSAGE(parsed.error().message().find(r.message) != std::string::npos,
                  parsed.error().message());
  }
}

TEST_CASE("an example catalog error never echoes the rejected value") {
  auto catalog = valid_catalog();
  catalog["skills"][0]["dependencies"][0]["preset_id"] = "preset-with-a-secret-token";
  auto parsed = parse(catalog.dump());
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.error().message().find("secret") == std::string::npos);

  catalog = valid_catalog();
  catalog["skills"][0]["slug"] = "Slug-With-A-Secret";
  parsed = parse(catalog.dump());
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.error().message().find("Secret") == std::string::npos);
}

TEST_CASE("an example catalog that is not JSON or repeats a key is bad_json") {
  CHECK(parse("{\"version\": 1, \"skills\": [").error().code() == errc::bad_json);
  CHECK(parse(R"({"version": 1, "version": 1, "skills": []})").error().code() == errc::bad_json);
}

TEST_CASE("an example catalog past its bounds is refused before its skills are read") {
  example_skill_limits limits;
  limits.max_skills = 1;
  auto parsed = parse(valid_catalog().dump(), valid_bodies(), limits);
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.error().code() == errc::out_of_range);
  CHECK(parsed.error().message() == "catalog: field 'skills': more than 1 elements");

  limits = {};
  limits.max_catalog_bytes = 64;
  parsed = parse(valid_catalog().dump(), valid_bodies(), limits);
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.error().message() == "catalog: longer than 64 bytes");
}

TEST_CASE("an example catalog is read from its directory, bodies as regular files only") {
  test::temp_dir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream{dir.path() / name} << text;
  };
  write("catalog.json", valid_catalog().dump());
  for (const auto& [name, text] : valid_bodies())
    write(name, text);
  auto loaded = load_example_catalog(dir.str());
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.error().message());
  CHECK(loaded->at(1).body == valid_bodies()["google-calendar-week-agenda.md"]);

  // A body that is a directory is not a body.
  std::filesystem::remove(dir.path() / "github-issue-triage.md");
  std::filesystem::create_directory(dir.path() / "github-issue-triage.md");
  loaded = load_example_catalog(dir.str());
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.error().code() == errc::not_found);
  CHECK(loaded.error().message() == "skills[0].body: not a readable regular file");

  // No catalog at all.
  test::temp_dir empty;
  loaded = load_example_catalog(empty.str());
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.error().message() == "catalog.json: not a readable regular file");
}

TEST_CASE("selecting an MCP key gives its skills in order and an unknown key names the keys") {
  auto catalog = parse(valid_catalog().dump());
  REQUIRE(catalog.is_ok());
  auto github = select_examples(*catalog, "github");
  REQUIRE(github.is_ok());
  REQUIRE(github->size() == 1);
  CHECK(github->front().slug == "github-issue-triage");
  CHECK(example_mcp_keys(*catalog) == std::vector<std::string>{"github", "google-workspace"});

  auto none = select_examples(*catalog, "gitlab");
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.error().code() == errc::not_found);
  CHECK(none.error().message()
        == "mcp: no example skill belongs to this key; the catalog has: github, google-workspace");
}

TEST_CASE("the shipped example catalog parses and every body file exists and is used") {
  auto catalog = load_example_catalog(shipped_dir);
  REQUIRE_MESSAGE(catalog.is_ok(), catalog.error().message());

  // Every Markdown file beside the catalog is some skill's body, and only
  // README.md is not.
  std::set<std::string> bodies;
  for (const auto& skill : *catalog)
    bodies.insert(skill.body_file);
  for (const auto& entry : std::filesystem::directory_iterator{shipped_dir}) {
    auto name = entry.path().filename().string();
    if (entry.path().extension() == ".md" && name != "README.md")
      CHECK_MESSAGE(bodies.count(name) == 1, name);
  }

  // At least one skill for GitHub and one per Google Workspace product it uses.
  auto keys = example_mcp_keys(*catalog);
  for (const char* key : {"openbnb", "github", "google-workspace"})
    CHECK_MESSAGE(std::count(keys.begin(), keys.end(), key) == 1, key);
  for (const auto& skill : *catalog)
    for (const auto& dep : skill.dependencies)
      if (dep.preset_id == "google_workspace")
        CHECK_FALSE(dep.variant.empty());
}

TEST_CASE("the shipped OpenBnB shortlist needs exactly its five tools and never books") {
  auto catalog = load_example_catalog(shipped_dir);
  REQUIRE(catalog.is_ok());
  auto found = std::find_if(catalog->begin(), catalog->end(), [](const example_skill& s) {
    return s.slug == "openbnb-accommodation-shortlist";
  });
  REQUIRE(found != catalog->end());
  CHECK(found->mcp == "openbnb");
  REQUIRE(found->dependencies.size() == 1);
  CHECK(found->dependencies[0].preset_id == "openbnb");
  auto tools = found->dependencies[0].tools;
  std::sort(tools.begin(), tools.end());
  CHECK(tools
        == std::vector<std::string>{"airbnb_listing", "airbnb_search", "maps_distance_matrix",
                                    "maps_place_details", "maps_search_places"});
  // The rules the product states for it are in its body.
  CHECK(found->body.find("Never book") != std::string::npos);
  CHECK(found->body.find("verify them on the provider's site") != std::string::npos);
  for (const char* term : {"price", "availability", "rules", "cancellation"})
    CHECK_MESSAGE(found->body.find(term) != std::string::npos, term);
}
