// The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`) on an
// mcp_server, serving the skills a provider answers for each caller.
// CAF-free.
//
// What it registers (mcp_add_skills):
//   - the extension, declared as `capabilities.extensions
//     ["io.modelcontextprotocol/skills"] = {"directoryRead": true}` (or `{}`),
//     with its methods:
//       `skills/list`  {cursor?}: the caller's skills in name order, `page_size`
//                      a page (opaque cursors, mcp_pagination.hpp; an invalid
//                      one is -32602); each entry `{uri, frontmatter,
//                      resources: [{uri, digest, size}]}`, SKILL.md first, then
//                      the files in path order;
//       `skills/get`   {uri}: the entry of the skill whose SKILL.md `uri` names
//                      (`{skill: entry}`, no cursor); any other URI -32602;
//       `resources/directory/read` {uri, cursor?} (with `directory_read`): the
//                      direct children of a skill directory (`skill://<name>`
//                      or `skill://<name>/<dir>`, no trailing slash): files as
//                      resources, subdirectories with mimeType
//                      `inode/directory`, in URI order, `directory_page_size`
//                      a page; a URI that is not such a directory -32602;
//     all three cacheable at 2026-07-28 (`ttlMs`, `cacheScope` from `cache`);
//   - a resource provider for `skill://` (mcp_resource_provider): each skill's
//     SKILL.md (`skill://<name>/SKILL.md`, mimeType `text/markdown`, name and
//     description those of the frontmatter, title the skill's) and its files
//     (`skill://<name>/<path>`) in resources/list and resources/read, which
//     answers an unknown URI with mcp_resource_not_found.
// Declaring the extension makes the server declare `resources` too.
//
// SKILL.md as served (mcp_skill_md): YAML frontmatter, a blank line, the body:
//     ---
//     name: "<name>"
//     description: "<description>"
//     metadata:                       (only when there is metadata)
//       "<key>": "<value>"
//     ---
//
//     <body>
// Every scalar is a YAML double-quoted string with `"`, `\`, every C0 and C1
// control, DEL, U+2028, U+2029 and U+FEFF escaped, so it parses (YAML 1.1 and
// 1.2) to exactly the entry's `frontmatter` strings and no value can end its
// line, the block, or the string. A digest (`sha256:<64 lowercase hex>`) and
// size cover exactly the bytes resources/read serves (SKILL.md as above; a
// file's content; a binary file's decoded bytes).
//
// Per caller: the provider runs on every request (list, get, read, directory
// read), so a caller sees its own skills only and a change shows at the next
// request; the embedder should call mcp_server::notify_resources_changed() when
// a caller's skills change. Its answer is checked (mcp_check_skill) and
// bounded before anything is served: a skill that breaks a rule is left out,
// as is a second skill of the same name; then, in name order, skills past
// `max_skills` or past `max_total_bytes` are left out. A skill left out is
// unknown everywhere (not listed, -32602 to skills/get, not found to
// resources/read). A provider error answers the request with an internal
// error (-32603), its text withheld.
//
// Threading: as mcp_server's handlers: the provider is called on the HTTP
// worker of the request, without any server lock, possibly from several
// workers at once.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "messages/status.hpp"
#include "transport/mcp_server.hpp"

namespace voxos {

inline constexpr std::string_view mcp_skills_extension_id = "io.modelcontextprotocol/skills";

/// A file of a skill beside its SKILL.md. `path`: relative, `/`-separated
/// segments of [A-Za-z0-9._~-] (not `.` or `..`), at most 256 bytes, not
/// ending in a segment `SKILL.md`, neither equal to another file's path nor a
/// directory of one. `content`: the raw bytes, UTF-8 text unless `binary`
/// (then served base64 as a blob).
struct mcp_skill_file {
  std::string path;
  std::string mime_type = "text/markdown";
  std::string content;
  bool binary = false;
};

/// A skill as the provider answers it. `name`: the slug, 1 to 64 of
/// lowercase letters, digits and hyphens, no leading, trailing or double
/// hyphen (the Agent Skills naming rules); `description`: 1 to 1024
/// characters of UTF-8; `body`: the Markdown instructions, without
/// frontmatter, UTF-8; `title`: the SKILL.md resource's title (optional, not
/// in the frontmatter); `metadata`: the frontmatter's `metadata` map (keys
/// non-empty, none under the reserved `io.modelcontextprotocol/` prefix;
/// keys and values UTF-8).
struct mcp_skill {
  std::string name;
  std::string description;
  std::string body;
  std::string title;
  std::map<std::string, std::string> metadata;
  std::vector<mcp_skill_file> files;
};

/// The skills `caller` may see, in any order. An error fails the request.
using mcp_skill_provider = std::function<result<std::vector<mcp_skill>>(const mcp_caller& caller)>;

/// Defaults beside each bound; all configurable.
struct mcp_skills_options {
  std::size_t page_size = 50;            ///< skills per skills/list page
  std::size_t directory_page_size = 100; ///< children per resources/directory/read page
  std::size_t max_skills = 256;          ///< served to one caller; past it left out
  /// Files of one skill, SKILL.md included (the extension's limit: 512).
  std::size_t max_files = 64;
  /// Bytes of one skill, SKILL.md and files (the extension's limit: 16 MiB).
  std::size_t max_skill_bytes = std::size_t{1} << 20;
  /// Bytes of all of one caller's skills; past it, skills are left out.
  std::size_t max_total_bytes = std::size_t{16} << 20;
  mcp_cache_hint cache{};     ///< skills/list, skills/get, directory and file reads: 0 ms, private
  bool directory_read = true; ///< serve resources/directory/read and declare it
};

/// Checks `skill` against the rules of mcp_skill and mcp_skill_file and the
/// per-skill bounds of `options` (files, bytes). Errors (rejected) name the
/// rule and the field (e.g. "files[2].path: a segment is . or .."), never a
/// value.
status mcp_check_skill(const mcp_skill& skill, const mcp_skills_options& options = {});

/// The SKILL.md of a checked skill, exactly as served.
std::string mcp_skill_md(const mcp_skill& skill);

/// The bytes a checked skill serves: its SKILL.md and its files.
std::size_t mcp_skill_bytes(const mcp_skill& skill);

/// The digest of `bytes` as the extension writes it: `sha256:` and 64
/// lowercase hex digits.
std::string mcp_skill_digest(std::string_view bytes);

/// `text` as a YAML double-quoted scalar (UTF-8; bytes that are not are
/// written as U+FFFD).
std::string mcp_yaml_quoted(std::string_view text);

/// Registers the extension and its `skill://` resources on `server`. Errors
/// (config_invalid): no provider, or what mcp_server refuses (an extension or
/// provider already registered there).
status mcp_add_skills(mcp_server& server, mcp_skill_provider provider,
                      mcp_skills_options options = {});

} // namespace voxos
