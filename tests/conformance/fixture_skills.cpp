#include "conformance/fixture_skills.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/base64.hpp"

namespace voxos::fixture {

namespace {

// A 1x1 red PNG, decoded: a binary file's bytes.
constexpr const char* png_base64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8D"
                                   "wHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

mcp_skill_file md(std::string path, std::string content) {
  return {std::move(path), "text/markdown", std::move(content)};
}

} // namespace

std::vector<mcp_skill> conformance_skills() {
  std::vector<mcp_skill> skills;

  // Every character a YAML writer must escape or keep: quotes, a backslash,
  // ": " and " #", a line that closes the frontmatter, CR, LF and tab, C0
  // and C1 controls, DEL, NEL, U+2028, U+FEFF, and plain UTF-8.
  mcp_skill hostile;
  hostile.name = "commit-message";
  hostile.title = "Commit message";
  hostile.description = "Writes commit messages: \"subject\" \\ body # not a comment\n---\n"
                        "name: injected\r\n\ttab \x01\x1f\x7f \xc2\x85 \xe2\x80\xa8 \xef\xbb\xbf "
                        "caf\xc3\xa9 \xf0\x9f\x98\x80 'single' {flow: [1, 2]} & *alias ! %";
  hostile.metadata = {{"version", "2.1.0"},
                      {"owner: team", "line one\nline two \"quoted\""},
                      {"- item", "true"},
                      {"empty", ""}};
  hostile.body = "# Commit messages\n\n---\nname: not-frontmatter\n---\n\nSee "
                 "[conventions](references/CONVENTIONS.md) and the examples under "
                 "`references/examples/`.\n";
  hostile.files.push_back(
    md("references/CONVENTIONS.md", "# Conventions\n\nImperative subject lines.\n"));
  hostile.files.push_back(
    md("references/examples/feature.md", "Add the export of reports as CSV\n"));
  hostile.files.push_back(
    {"scripts/check.sh", "text/x-shellscript", "#!/bin/sh\ntest -n \"$1\"\n"});
  hostile.files.push_back({"assets/logo.png", "image/png", *base64::decode(png_base64), true});
  skills.push_back(std::move(hostile));

  mcp_skill pdf;
  pdf.name = "pdf-processing";
  pdf.description = "Extract, fill, and assemble PDF documents";
  pdf.body = "# PDF processing\n\nFill forms per references/FORMS.md.\n";
  pdf.files.push_back(md("references/FORMS.md", "# Forms\n\nField names are case "
                                                "sensitive.\n"));
  pdf.files.push_back(md("templates/invoice.md", "# Invoice\n"));
  skills.push_back(std::move(pdf));

  mcp_skill notes;
  notes.name = "release-notes";
  notes.description = "Drafts release notes from merged pull requests";
  notes.body = "# Release notes\n\nGroup changes by kind.\n";
  skills.push_back(std::move(notes));
  return skills;
}

void serve_skills(mcp_server& server) {
  mcp_skills_options options;
  options.page_size = 2;
  options.directory_page_size = 2;
  auto added = mcp_add_skills(
    server,
    [](const mcp_caller&) -> result<std::vector<mcp_skill>> { return conformance_skills(); },
    options);
  if (!added) {
    std::fprintf(stderr, "fixture: %s\n", added.message().c_str());
    std::exit(2);
  }
}

} // namespace voxos::fixture
