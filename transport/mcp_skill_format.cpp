// The skill format of mcp_skills.hpp: the rules a served skill keeps, and
// its SKILL.md with the YAML frontmatter written so that no value can escape
// its string.
#include <algorithm>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "transport/json_text.hpp"
#include "transport/mcp_skills.hpp"

namespace voxos {

namespace {

constexpr std::size_t max_name_bytes = 64;
constexpr std::size_t max_description_chars = 1024;
constexpr std::size_t max_path_bytes = 256;
constexpr std::string_view reserved_metadata_prefix = "io.modelcontextprotocol/";
constexpr std::string_view skill_md = "SKILL.md";

status reject(std::string what) {
  return status::error(errc::rejected, std::move(what));
}

/// The Agent Skills naming rules: 1 to 64 of [a-z0-9-], no leading,
/// trailing or double hyphen.
bool name_valid(std::string_view name) {
  if (name.empty() || name.size() > max_name_bytes || name.front() == '-' || name.back() == '-'
      || name.find("--") != std::string_view::npos)
    return false;
  return std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
  });
}

/// Code points of valid UTF-8 (continuation bytes not counted).
std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char ch) {
    return (static_cast<unsigned char>(ch) & 0xc0) != 0x80;
  }));
}

bool segment_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
         || ch == '.' || ch == '_' || ch == '~' || ch == '-';
}

/// Why a file path breaks its rules; empty when it keeps them.
std::string path_problem(std::string_view path) {
  if (path.empty() || path.size() > max_path_bytes)
    return "must be 1 to 256 bytes";
  std::size_t start = 0;
  while (true) {
    auto end = path.find('/', start);
    auto segment = path.substr(start, end == std::string_view::npos ? end : end - start);
    if (segment.empty())
      return "a segment is empty";
    if (!std::all_of(segment.begin(), segment.end(), segment_char))
      return "a segment holds a character other than A-Z a-z 0-9 . _ ~ -";
    if (segment == "." || segment == "..")
      return "a segment is . or ..";
    if (end == std::string_view::npos)
      return segment == skill_md ? "ends in SKILL.md, which only the skill's root holds" : "";
    start = end + 1;
  }
}

/// A media type as far as serving it needs: printable ASCII with a '/'.
bool media_type_valid(std::string_view type) {
  return type.find('/') != std::string_view::npos
         && std::all_of(type.begin(), type.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; });
}

status check_metadata(const std::map<std::string, std::string>& metadata) {
  for (const auto& [key, value] : metadata) {
    if (key.empty())
      return reject("metadata: a key is empty");
    if (key.compare(0, reserved_metadata_prefix.size(), reserved_metadata_prefix) == 0)
      return reject("metadata: a key lies under the reserved io.modelcontextprotocol/ prefix");
    if (!is_utf8(key) || !is_utf8(value))
      return reject("metadata: keys and values must be UTF-8");
  }
  return status::ok();
}

status check_files(const mcp_skill& skill, const mcp_skills_options& options) {
  if (skill.files.size() + 1 > options.max_files)
    return reject("files: more than max_files (" + std::to_string(options.max_files)
                  + ", SKILL.md included)");
  std::set<std::string_view> paths;
  for (std::size_t idx = 0; idx < skill.files.size(); ++idx) {
    const auto& file = skill.files[idx];
    auto field = "files[" + std::to_string(idx) + "]";
    if (auto problem = path_problem(file.path); !problem.empty())
      return reject(field + ".path: " + problem);
    if (!media_type_valid(file.mime_type))
      return reject(field + ".mime_type: must be a media type (type/subtype)");
    if (!file.binary && !is_utf8(file.content))
      return reject(field + ".content: must be UTF-8 unless the file is binary");
    if (!paths.insert(file.path).second)
      return reject(field + ".path: another file has the same path");
  }
  // A path may not also be the directory of another.
  for (auto path : paths)
    for (auto slash = path.find('/'); slash != std::string_view::npos;
         slash = path.find('/', slash + 1))
      if (paths.count(path.substr(0, slash)) != 0)
        return reject("files: a file's path is the directory of another file");
  return status::ok();
}

/// SKILL.md up to its body: the frontmatter block and a blank line.
std::string frontmatter(const mcp_skill& skill);

/// Appends the YAML escape of one code point.
void append_escape(std::string& out, uint32_t code_point) {
  static constexpr char hex[] = "0123456789ABCDEF";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4)
    out += hex[(code_point >> shift) & 0xf];
}

} // namespace

std::string mcp_yaml_quoted(std::string_view text) {
  std::string sanitized;
  if (!is_utf8(text)) {
    // nlohmann writes bytes that are not UTF-8 as U+FFFD.
    sanitized =
      nlohmann::json::parse(nlohmann::json(std::string{text})
                              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .get<std::string>();
    text = sanitized;
  }
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (std::size_t idx = 0; idx < text.size();) {
    auto lead = static_cast<unsigned char>(text[idx]);
    std::size_t length = lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
    uint32_t code_point = length == 1   ? lead
                          : length == 2 ? lead & 0x1f
                          : length == 3 ? lead & 0x0f
                                        : lead & 0x07;
    for (std::size_t more = 1; more < length; ++more)
      code_point = (code_point << 6) | (static_cast<unsigned char>(text[idx + more]) & 0x3f);
    if (code_point == '"')
      out += "\\\"";
    else if (code_point == '\\')
      out += "\\\\";
    else if (code_point == '\n')
      out += "\\n";
    else if (code_point == '\r')
      out += "\\r";
    else if (code_point == '\t')
      out += "\\t";
    else if (code_point < 0x20 || (code_point >= 0x7f && code_point <= 0x9f) || code_point == 0x2028
             || code_point == 0x2029 || code_point == 0xfeff || code_point == 0xfffe
             || code_point == 0xffff)
      // Controls (C0, DEL, C1 with NEL), the YAML 1.1 line and paragraph
      // separators and the byte order mark: never written raw.
      append_escape(out, code_point);
    else
      out.append(text.data() + idx, length);
    idx += length;
  }
  out += '"';
  return out;
}

status mcp_check_skill(const mcp_skill& skill, const mcp_skills_options& options) {
  if (!name_valid(skill.name))
    return reject("name: must be 1 to 64 lowercase letters, digits or hyphens, without a "
                  "leading, trailing or double hyphen");
  if (skill.description.empty() || !is_utf8(skill.description)
      || code_points(skill.description) > max_description_chars)
    return reject("description: must be 1 to 1024 characters of UTF-8");
  if (!is_utf8(skill.body))
    return reject("body: must be UTF-8");
  if (!is_utf8(skill.title))
    return reject("title: must be UTF-8");
  if (auto checked = check_metadata(skill.metadata); !checked)
    return checked;
  if (auto checked = check_files(skill, options); !checked)
    return checked;
  if (mcp_skill_bytes(skill) > options.max_skill_bytes)
    return reject("the skill's SKILL.md and files exceed max_skill_bytes ("
                  + std::to_string(options.max_skill_bytes) + ")");
  return status::ok();
}

std::string mcp_skill_md(const mcp_skill& skill) {
  return frontmatter(skill) + skill.body;
}

std::size_t mcp_skill_bytes(const mcp_skill& skill) {
  std::size_t bytes = frontmatter(skill).size() + skill.body.size();
  for (const auto& file : skill.files)
    bytes += file.content.size();
  return bytes;
}

namespace {

std::string frontmatter(const mcp_skill& skill) {
  std::string out = "---\nname: ";
  out += mcp_yaml_quoted(skill.name);
  out += "\ndescription: ";
  out += mcp_yaml_quoted(skill.description);
  out += '\n';
  if (!skill.metadata.empty()) {
    out += "metadata:\n";
    for (const auto& [key, value] : skill.metadata) {
      out += "  ";
      out += mcp_yaml_quoted(key);
      out += ": ";
      out += mcp_yaml_quoted(value);
      out += '\n';
    }
  }
  out += "---\n\n";
  return out;
}

} // namespace

} // namespace voxos
