// transport/mcp_skills over loopback HTTP: the Skills extension served from
// a provider per caller (entries, digests, reads, directory reads, bounds),
// and the frontmatter read back by a real YAML parser.
#include "transport/mcp_skills.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "config/base64.hpp"
#include "support/mcp_served.hpp"
#include "support/node_peer.hpp"
#include "transport/mcp_pagination.hpp"

using nlohmann::json;
using namespace voxos;
using namespace voxos::test;

namespace {

mcp_skill skill_named(std::string name, std::string description = "Does one thing well",
                      std::string body = "# Steps\n\nDo it.\n") {
  mcp_skill skill;
  skill.name = std::move(name);
  skill.description = std::move(description);
  skill.body = std::move(body);
  return skill;
}

/// A Markdown file of a skill.
mcp_skill_file md_file(std::string path, std::string content) {
  return {std::move(path), "text/markdown", std::move(content)};
}

/// A skill with a file in a subdirectory two levels down and a binary file.
mcp_skill skill_with_files(std::string name) {
  auto skill = skill_named(std::move(name));
  skill.files.push_back(md_file("references/GUIDE.md", "# Guide\n"));
  skill.files.push_back(md_file("references/deep/NOTE.md", "a note\n"));
  skill.files.push_back({"assets/data.bin", "application/octet-stream",
                         std::string("\x00\xff\x10 bytes\x80", 10), true});
  return skill;
}

/// A provider answering `skills` to every caller.
mcp_skill_provider fixed(std::vector<mcp_skill> skills) {
  return [skills](const mcp_caller&) -> result<std::vector<mcp_skill>> { return skills; };
}

http_header_list as(const std::string& principal) {
  return {{"X-Test-Principal", principal}};
}

json result_of(const mcp_answer& answer) {
  return answer.message()["result"];
}

int64_t error_code(const mcp_answer& answer) {
  auto message = answer.message();
  return message.contains("error") ? message["error"].value("code", int64_t{0}) : 0;
}

/// Every entry of skills/list, page after page.
std::vector<json> all_entries(uint16_t port, const http_header_list& extra = {}) {
  std::vector<json> entries;
  json params = json::object();
  for (int page = 0; page < 20; ++page) {
    auto result = result_of(modern(port, "skills/list", params, extra));
    REQUIRE(result.contains("skills"));
    for (const auto& entry : result["skills"])
      entries.push_back(entry);
    if (!result.contains("nextCursor"))
      return entries;
    params = {{"cursor", result["nextCursor"]}};
  }
  FAIL("skills/list did not end");
  return entries;
}

std::vector<std::string> names_of(const std::vector<json>& entries) {
  std::vector<std::string> names;
  for (const auto& entry : entries)
    names.push_back(entry["frontmatter"]["name"].get<std::string>());
  return names;
}

/// The bytes resources/read serves for `uri`: a text, or a blob decoded.
std::string served_bytes(uint16_t port, const std::string& uri,
                         const http_header_list& extra = {}) {
  auto contents = result_of(modern(port, "resources/read", {{"uri", uri}}, extra))["contents"];
  REQUIRE(contents.size() == 1);
  if (contents[0].contains("blob"))
    return *base64::decode(contents[0]["blob"].get<std::string>());
  return contents[0]["text"].get<std::string>();
}

} // namespace

TEST_CASE("a digest is sha256: and the hash's 64 lowercase hex digits") {
  // FIPS 180-2's vector for "abc".
  CHECK(mcp_skill_digest("abc")
        == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("every digest and size of a skill entry covers exactly the bytes resources/read serves") {
  mcp_served served;
  REQUIRE(mcp_add_skills(served.server, fixed({skill_with_files("data-export")})).is_ok());
  served.start();
  auto entries = all_entries(served.port);
  REQUIRE(entries.size() == 1);
  const auto& entry = entries[0];
  CHECK(entry["uri"] == "skill://data-export/SKILL.md");
  std::vector<std::string> uris;
  for (const auto& item : entry["resources"]) {
    auto uri = item["uri"].get<std::string>();
    uris.push_back(uri);
    auto bytes = served_bytes(served.port, uri);
    CHECK_MESSAGE(item["digest"] == mcp_skill_digest(bytes), uri);
    CHECK_MESSAGE(item["size"] == bytes.size(), uri);
  }
  // SKILL.md first, then the files in path order, the binary one included.
  CHECK(uris
        == std::vector<std::string>{"skill://data-export/SKILL.md",
                                    "skill://data-export/assets/data.bin",
                                    "skill://data-export/references/GUIDE.md",
                                    "skill://data-export/references/deep/NOTE.md"});
  CHECK(served_bytes(served.port, "skill://data-export/assets/data.bin")
        == std::string("\x00\xff\x10 bytes\x80", 10));
  CHECK(served_bytes(served.port, "skill://data-export/SKILL.md")
        == mcp_skill_md(skill_with_files("data-export")));
}

TEST_CASE("SKILL.md is text/markdown, named and described as its frontmatter, and listed") {
  mcp_served served;
  auto skill = skill_named("weekly-report", "Summarises the week");
  skill.title = "Weekly report";
  skill.metadata = {{"version", "1.2"}};
  REQUIRE(mcp_add_skills(served.server, fixed({skill})).is_ok());
  served.start();
  auto listed = result_of(modern(served.port, "resources/list"))["resources"];
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]
        == json{{"uri", "skill://weekly-report/SKILL.md"},
                {"name", "weekly-report"},
                {"title", "Weekly report"},
                {"description", "Summarises the week"},
                {"mimeType", "text/markdown"}});
  auto read = result_of(modern(served.port, "resources/read",
                               {{"uri", "skill://weekly-report/SKILL.md"}}))["contents"][0];
  CHECK(read["mimeType"] == "text/markdown");
  CHECK(read["text"]
        == "---\nname: \"weekly-report\"\ndescription: \"Summarises the week\"\n"
           "metadata:\n  \"version\": \"1.2\"\n---\n\n# Steps\n\nDo it.\n");
  auto entry = all_entries(served.port)[0];
  CHECK(entry["frontmatter"]
        == json{{"name", "weekly-report"},
                {"description", "Summarises the week"},
                {"metadata", {{"version", "1.2"}}}});
}

TEST_CASE("a caller sees, gets and reads only the skills its provider answers for it") {
  mcp_served served;
  auto provider = [](const mcp_caller& caller) -> result<std::vector<mcp_skill>> {
    if (caller.principal == "ann")
      return std::vector<mcp_skill>{skill_named("ann-only"),
                                    skill_named("shared", "Ann's", "ann's body")};
    if (caller.principal == "bob")
      return std::vector<mcp_skill>{skill_named("shared", "Bob's", "bob's body")};
    return std::vector<mcp_skill>{};
  };
  REQUIRE(mcp_add_skills(served.server, provider).is_ok());
  served.start();

  CHECK(names_of(all_entries(served.port, as("ann")))
        == std::vector<std::string>{"ann-only", "shared"});
  CHECK(names_of(all_entries(served.port, as("bob"))) == std::vector<std::string>{"shared"});
  CHECK(all_entries(served.port, as("eve")).empty());

  // The same URI is each caller's own skill.
  auto shared = "skill://shared/SKILL.md";
  CHECK(served_bytes(served.port, shared, as("ann")).find("ann's body") != std::string::npos);
  CHECK(served_bytes(served.port, shared, as("bob")).find("bob's body") != std::string::npos);
  CHECK(result_of(modern(served.port, "skills/get", {{"uri", shared}},
                         as("bob")))["skill"]["frontmatter"]["description"]
        == "Bob's");

  // Another caller's skill is unknown everywhere.
  auto ann_only = "skill://ann-only/SKILL.md";
  CHECK(error_code(modern(served.port, "skills/get", {{"uri", ann_only}}, as("bob")))
        == mcp_code::invalid_params);
  CHECK(error_code(modern(served.port, "resources/read", {{"uri", ann_only}}, as("bob")))
        == mcp_code::invalid_params);
  CHECK(error_code(
          modern(served.port, "resources/directory/read", {{"uri", "skill://ann-only"}}, as("bob")))
        == mcp_code::invalid_params);
  auto bob_resources = result_of(modern(served.port, "resources/list", {}, as("bob")));
  CHECK(bob_resources["resources"].size() == 1);
  // Per caller: never a shared cache.
  CHECK(bob_resources["cacheScope"] == "private");
  CHECK(result_of(modern(served.port, "skills/list", {}, as("bob")))["cacheScope"] == "private");
}

TEST_CASE("skills/get answers a served skill's entry without a cursor, anything else -32602") {
  mcp_served served;
  REQUIRE(mcp_add_skills(served.server, fixed({skill_with_files("data-export")})).is_ok());
  served.start();
  auto got =
    result_of(modern(served.port, "skills/get", {{"uri", "skill://data-export/SKILL.md"}}));
  CHECK(got["skill"] == all_entries(served.port)[0]);
  CHECK_FALSE(got.contains("nextCursor"));
  CHECK(got["resultType"] == "complete");
  CHECK(got.contains("ttlMs"));

  for (const json& uri :
       {json("skill://nobody/SKILL.md"), json("skill://data-export"),
        json("skill://data-export/references/GUIDE.md"), json("skill://data-export/SKILL.md/"),
        json("file:///SKILL.md"), json(""), json(7)}) {
    auto answer = modern(served.port, "skills/get", {{"uri", uri}});
    CHECK_MESSAGE(error_code(answer) == mcp_code::invalid_params, uri.dump());
  }
  // At 2025-11-25 too.
  auto session = open_session(served.port);
  auto legacy =
    in_session_call(served.port, session, "skills/get", {{"uri", "skill://nobody/SKILL.md"}});
  CHECK(error_code(legacy) == mcp_code::invalid_params);
  auto legacy_got =
    in_session_call(served.port, session, "skills/get", {{"uri", "skill://data-export/SKILL.md"}});
  CHECK(result_of(legacy_got)["skill"]["uri"] == "skill://data-export/SKILL.md");
}

TEST_CASE("an unknown skill:// URI is not found to resources/read, with each wire's code") {
  mcp_served served;
  REQUIRE(mcp_add_skills(served.server, fixed({skill_with_files("data-export")})).is_ok());
  served.start();
  for (const char* uri : {"skill://nobody/SKILL.md", "skill://data-export",
                          "skill://data-export/references", "skill://data-export/MISSING.md"}) {
    auto answer = modern(served.port, "resources/read", {{"uri", uri}});
    CHECK_MESSAGE(error_code(answer) == mcp_code::invalid_params, uri);
    CHECK(answer.message()["error"]["data"]["uri"] == uri);
  }
  auto session = open_session(served.port);
  auto legacy =
    in_session_call(served.port, session, "resources/read", {{"uri", "skill://nobody/SKILL.md"}});
  CHECK(error_code(legacy) == -32002);
}

TEST_CASE("skills/list pages in name order with opaque cursors, and a bad cursor is -32602") {
  mcp_served served;
  mcp_skills_options options;
  options.page_size = 2;
  REQUIRE(mcp_add_skills(served.server,
                         fixed({skill_named("echo"), skill_named("alpha"), skill_named("delta"),
                                skill_named("charlie"), skill_named("bravo")}),
                         options)
            .is_ok());
  served.start();
  auto first = result_of(modern(served.port, "skills/list"));
  CHECK(first["skills"].size() == 2);
  CHECK(first["ttlMs"] == 0);
  REQUIRE(first.contains("nextCursor"));
  CHECK(names_of(all_entries(served.port))
        == std::vector<std::string>{"alpha", "bravo", "charlie", "delta", "echo"});
  CHECK(error_code(modern(served.port, "skills/list", {{"cursor", "not-a-cursor"}}))
        == mcp_code::invalid_params);
  CHECK(error_code(modern(served.port, "skills/list", {{"cursor", 3}}))
        == mcp_code::invalid_params);
  // A cursor of another list is no skills/list cursor.
  CHECK(error_code(modern(served.port, "skills/list", {{"cursor", mcp_cursor("tools", "alpha")}}))
        == mcp_code::invalid_params);
}

TEST_CASE("resources/directory/read lists direct children, subdirectories as inode/directory, "
          "paginated, and a file or unknown URI is -32602") {
  mcp_served served;
  mcp_skills_options options;
  options.directory_page_size = 2;
  REQUIRE(mcp_add_skills(served.server, fixed({skill_with_files("data-export")}), options).is_ok());
  served.start();
  auto discover = result_of(modern(served.port, "server/discover"))["capabilities"];
  CHECK(discover["extensions"]["io.modelcontextprotocol/skills"] == json{{"directoryRead", true}});
  CHECK(discover.contains("resources"));

  auto children = [&](const std::string& uri) {
    std::vector<json> out;
    json params = {{"uri", uri}};
    for (int page = 0; page < 10; ++page) {
      auto result = result_of(modern(served.port, "resources/directory/read", params));
      for (const auto& item : result["resources"])
        out.push_back(item);
      if (!result.contains("nextCursor"))
        break;
      params["cursor"] = result["nextCursor"];
    }
    return out;
  };
  auto root = children("skill://data-export");
  REQUIRE(root.size() == 3);
  CHECK(root[0]
        == json{{"uri", "skill://data-export/SKILL.md"},
                {"name", "data-export"},
                {"description", "Does one thing well"},
                {"mimeType", "text/markdown"}});
  CHECK(root[1]
        == json{{"uri", "skill://data-export/assets"},
                {"name", "assets"},
                {"mimeType", "inode/directory"}});
  CHECK(root[2]["uri"] == "skill://data-export/references");
  auto references = children("skill://data-export/references");
  REQUIRE(references.size() == 2);
  CHECK(references[0]
        == json{{"uri", "skill://data-export/references/GUIDE.md"},
                {"name", "GUIDE.md"},
                {"mimeType", "text/markdown"}});
  CHECK(references[1]["mimeType"] == "inode/directory");
  CHECK(children("skill://data-export/references/deep").size() == 1);

  for (const char* uri :
       {"skill://data-export/SKILL.md", "skill://data-export/references/GUIDE.md",
        "skill://data-export/", "skill://data-export/references/", "skill://data-export/nothing",
        "skill://nobody", "skill://", "test://elsewhere"}) {
    auto answer = modern(served.port, "resources/directory/read", {{"uri", uri}});
    CHECK_MESSAGE(error_code(answer) == mcp_code::invalid_params, uri);
  }
}

TEST_CASE("without directory_read the extension declares no setting and serves no directory "
          "read") {
  mcp_served served;
  mcp_skills_options options;
  options.directory_read = false;
  REQUIRE(mcp_add_skills(served.server, fixed({skill_named("alpha")}), options).is_ok());
  served.start();
  auto discover = result_of(modern(served.port, "server/discover"))["capabilities"];
  CHECK(discover["extensions"]["io.modelcontextprotocol/skills"] == json::object());
  auto answer = modern(served.port, "resources/directory/read", {{"uri", "skill://alpha"}});
  CHECK(answer.status == 404);
  CHECK(error_code(answer) == mcp_code::method_not_found);
}

TEST_CASE("a skill that breaks a rule, repeats a name or passes a bound is served nowhere") {
  mcp_served served;
  mcp_skills_options options;
  options.max_skills = 3;
  options.max_skill_bytes = 4096;
  std::vector<mcp_skill> skills = {skill_named("Bad_Name"),
                                   skill_named("alpha", "first alpha"),
                                   skill_named("alpha", "second alpha"),
                                   skill_named("bravo", std::string(1025, 'x')),
                                   skill_named("charlie", "fine", std::string(5000, 'b')),
                                   skill_named("delta"),
                                   skill_named("echo"),
                                   skill_named("foxtrot"),
                                   skill_named("golf")};
  REQUIRE(mcp_add_skills(served.server, fixed(skills), options).is_ok());
  served.start();
  auto entries = all_entries(served.port);
  // Bad_Name, the second alpha, bravo's description and charlie's bytes are
  // out; of the rest, the first three by name.
  CHECK(names_of(entries) == std::vector<std::string>{"alpha", "delta", "echo"});
  CHECK(entries[0]["frontmatter"]["description"] == "first alpha");
  for (const char* name : {"bravo", "charlie", "foxtrot", "golf"}) {
    auto uri = std::string{"skill://"} + name + "/SKILL.md";
    CHECK_MESSAGE(error_code(modern(served.port, "skills/get", {{"uri", uri}}))
                    == mcp_code::invalid_params,
                  name);
    CHECK_MESSAGE(error_code(modern(served.port, "resources/read", {{"uri", uri}}))
                    == mcp_code::invalid_params,
                  name);
  }
  CHECK(result_of(modern(served.port, "resources/list"))["resources"].size() == 3);
}

TEST_CASE("a caller's skills past max_total_bytes are left out in name order") {
  mcp_served served;
  mcp_skills_options options;
  auto one = mcp_skill_bytes(skill_named("aaaa", "d", std::string(1000, 'b')));
  options.max_total_bytes = 2 * one + 10;
  REQUIRE(mcp_add_skills(served.server,
                         fixed({skill_named("cccc", "d", std::string(1000, 'b')),
                                skill_named("aaaa", "d", std::string(1000, 'b')),
                                skill_named("bbbb", "d", std::string(1000, 'b'))}),
                         options)
            .is_ok());
  served.start();
  CHECK(names_of(all_entries(served.port)) == std::vector<std::string>{"aaaa", "bbbb"});
}

TEST_CASE("a provider that fails answers an internal error without its text") {
  mcp_served served;
  REQUIRE(mcp_add_skills(served.server, [](const mcp_caller&) -> result<std::vector<mcp_skill>> {
            return status::error(errc::unavailable, "tenant secret-tenant timed out");
          }).is_ok());
  served.start();
  for (const auto& [method, params] : std::vector<std::pair<std::string, json>>{
         {"skills/list", json::object()},
         {"skills/get", {{"uri", "skill://a/SKILL.md"}}},
         {"resources/read", {{"uri", "skill://a/SKILL.md"}}},
         {"resources/list", json::object()},
         {"resources/directory/read", {{"uri", "skill://a"}}}}) {
    auto answer = modern(served.port, method, params);
    CHECK_MESSAGE(error_code(answer) == mcp_code::internal_error, method);
    CHECK(answer.body.find("secret") == std::string::npos);
  }
}

TEST_CASE("mcp_check_skill names the rule a skill breaks, never the value") {
  auto refusal = [](const mcp_skill& skill, const mcp_skills_options& options = {}) {
    auto checked = mcp_check_skill(skill, options);
    REQUIRE_FALSE(checked.is_ok());
    CHECK(checked.code() == errc::rejected);
    return checked.message();
  };
  for (const char* name :
       {"", "Upper", "-lead", "trail-", "dou--ble", "sp ace", "dot.ted", "x\ny", "../up", "a\"b"}) {
    auto message = refusal(skill_named(name));
    CHECK_MESSAGE(message.rfind("name:", 0) == 0, name);
  }
  CHECK(refusal(skill_named(std::string(65, 'a'))).rfind("name:", 0) == 0);
  CHECK(mcp_check_skill(skill_named(std::string(64, 'a'))).is_ok());
  CHECK(refusal(skill_named("ok", "")).rfind("description:", 0) == 0);
  CHECK(refusal(skill_named("ok", "bad \xff utf8")).rfind("description:", 0) == 0);
  CHECK(refusal(skill_named("ok", std::string(1025, 'x'))).rfind("description:", 0) == 0);
  // 1024 characters of two bytes each are 1024 characters, not 2048.
  std::string accents;
  for (int idx = 0; idx < 1024; ++idx)
    accents += "\xc3\xa9";
  CHECK(mcp_check_skill(skill_named("ok", accents)).is_ok());
  CHECK(refusal(skill_named("ok", "d", "body \xc3")) == "body: must be UTF-8");

  auto with_metadata = [](std::string key, std::string value) {
    auto skill = skill_named("ok");
    skill.metadata[std::move(key)] = std::move(value);
    return skill;
  };
  CHECK(refusal(with_metadata("", "v")) == "metadata: a key is empty");
  CHECK(refusal(with_metadata("io.modelcontextprotocol/secret-key", "v")).find("reserved")
        != std::string::npos);
  CHECK(refusal(with_metadata("k", "\xfe")).rfind("metadata:", 0) == 0);

  auto with_file = [](std::string path, std::string content = "text", bool binary = false) {
    auto skill = skill_named("ok");
    auto file = md_file(std::move(path), std::move(content));
    file.binary = binary;
    skill.files.push_back(std::move(file));
    return skill;
  };
  for (const char* path : {"", "/abs", "a//b", "../x", "a/../b", "./a", "a/", "sp ace.md", "q?.md",
                           "SKILL.md", "sub/SKILL.md", "back\\slash"}) {
    auto message = refusal(with_file(path));
    CHECK_MESSAGE(message.rfind("files[0].path:", 0) == 0, path);
    // (SKILL.md is the rule's own word.)
    if (*path != '\0' && std::string_view{path} != "SKILL.md")
      CHECK_MESSAGE(message.find(path) == std::string::npos, path);
  }
  CHECK(refusal(with_file("a.md", "\xff")).rfind("files[0].content:", 0) == 0);
  CHECK(mcp_check_skill(with_file("a.bin", "\xff", true)).is_ok());
  auto clash = with_file("a");
  clash.files.push_back(md_file("a/b.md", "x"));
  CHECK(refusal(clash) == "files: a file's path is the directory of another file");
  auto twice = with_file("a.md");
  twice.files.push_back(md_file("a.md", "x"));
  CHECK(refusal(twice) == "files[1].path: another file has the same path");
  auto no_type = with_file("a.md");
  no_type.files[0].mime_type = "markdown";
  CHECK(refusal(no_type).rfind("files[0].mime_type:", 0) == 0);

  mcp_skills_options small;
  small.max_files = 2;
  auto three = with_file("a.md");
  three.files.push_back(md_file("b.md", "x"));
  CHECK(refusal(three, small).rfind("files:", 0) == 0);
  small.max_skill_bytes = 100;
  CHECK(refusal(skill_named("ok", "d", std::string(100, 'b')), small).find("max_skill_bytes")
        != std::string::npos);
}

TEST_CASE("no description or metadata can end its YAML string, its line or the frontmatter") {
  const std::vector<std::string> hostile = {
    "plain",
    "quote \" backslash \\ end\\",
    "colon: space # hash",
    "new\nline\n---\nname: injected",
    "\r\n\t\x01\x1f\x7f",
    "nel \xc2\x85 ls \xe2\x80\xa8 ps \xe2\x80\xa9 bom \xef\xbb\xbf",
    "\"\n---\n",
  };
  for (const auto& text : hostile) {
    auto skill = skill_named("ok", text);
    skill.metadata = {{text, text}};
    REQUIRE(mcp_check_skill(skill).is_ok());
    auto md = mcp_skill_md(skill);
    // Four lines of frontmatter and the fences: the value never breaks a line.
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (int idx = 0; idx < 6; ++idx) {
      auto end = md.find('\n', start);
      REQUIRE(end != std::string::npos);
      lines.push_back(md.substr(start, end - start));
      start = end + 1;
    }
    CHECK(lines[0] == "---");
    CHECK(lines[1] == "name: \"ok\"");
    CHECK(lines[2].rfind("description: \"", 0) == 0);
    CHECK(lines[3] == "metadata:");
    CHECK(lines[4].rfind("  \"", 0) == 0);
    CHECK(lines[5] == "---");
    // No raw control, line or paragraph separator, or byte order mark.
    for (std::size_t idx = 1; idx < 5; ++idx) {
      const auto& line = lines[idx];
      CHECK(std::none_of(line.begin(), line.end(), [](char ch) {
        return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
      }));
      for (const char* raw : {"\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xef\xbb\xbf"})
        CHECK(line.find(raw) == std::string::npos);
    }
  }
  CHECK(mcp_yaml_quoted("a\"b\\c\nd\x01") == "\"a\\\"b\\\\c\\nd\\u0001\"");
  CHECK(mcp_yaml_quoted("\xe2\x80\xa8") == "\"\\u2028\"");
  CHECK(mcp_yaml_quoted("caf\xc3\xa9 \xf0\x9f\x98\x80") == "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
  CHECK(mcp_yaml_quoted("bad \xff") == "\"bad \xef\xbf\xbd\"");
}

TEST_CASE("a real YAML parser reads each served SKILL.md's frontmatter as the entry's, at YAML "
          "1.2 and 1.1") {
  std::vector<mcp_skill> skills;
  const std::vector<std::string> hostile = {
    "Writes \"quoted\" text: with a colon, # a hash, and a \\ backslash",
    "line one\nline two\n---\nname: injected\ndescription: injected",
    "\r\n\t\x01\x08\x0b\x0c\x1b\x1f\x7f controls",
    "nel \xc2\x85 c1 \xc2\x9f ls \xe2\x80\xa8 ps \xe2\x80\xa9 bom \xef\xbb\xbf nbsp \xc2\xa0",
    "  leading and trailing spaces  ",
    "true",
    "123",
    "~",
    "- a list item",
    "{flow: map} [flow, seq] & *alias ! | > % @ `",
    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xef\xbf\xbd",
    "'single' \"double\" '' \"\"",
  };
  for (std::size_t idx = 0; idx < hostile.size(); ++idx) {
    auto skill = skill_named("skill-" + std::to_string(idx + 10), hostile[idx]);
    skill.metadata = {{hostile[idx], hostile[(idx + 1) % hostile.size()]}, {"null", "null"}};
    skills.push_back(std::move(skill));
  }
  // Names YAML would read as other types unquoted.
  for (const char* name : {"123", "true", "null", "no", "1e3", "0x1f"})
    skills.push_back(skill_named(name, "a name YAML could take for another type"));

  mcp_served served;
  REQUIRE(mcp_add_skills(served.server, fixed(skills)).is_ok());
  served.start();
  auto entries = all_entries(served.port);
  REQUIRE(entries.size() == skills.size());
  auto texts = json::array();
  for (const auto& entry : entries)
    texts.push_back(served_bytes(served.port, entry["uri"].get<std::string>()));

  temp_dir dir;
  auto input = dir.path() / "skill-md.json";
  std::ofstream{input} << texts.dump();
  child_process parser(
    {node22_path().string(), (peers_dir() / "yaml_frontmatter.mjs").string(), input.string()},
    peers_dir().string(), (dir.path() / "parser.err").string());
  REQUIRE(parser.started());
  auto parsed = json::parse(parser.read_all(), nullptr, false);
  REQUIRE_MESSAGE(parser.wait() == 0, "the YAML parser failed");
  REQUIRE(parsed.is_object());
  for (const char* version : {"yaml1.2", "yaml1.1"})
    for (std::size_t idx = 0; idx < entries.size(); ++idx)
      CHECK_MESSAGE(parsed[version][idx] == entries[idx]["frontmatter"],
                    version << " " << entries[idx]["uri"].get<std::string>());
}
