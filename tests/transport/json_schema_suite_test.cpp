// Runs the official JSON-Schema-Test-Suite (required tests of draft 7 and
// draft 2020-12) against transport/json_schema and ratchets the known
// failures listed in tests/data/json-schema/expected-failures.txt. On every
// invalid instance it also checks that the first error alone is the first of
// every error.
//
// The suite's files are kept in the project, pinned to the upstream commit
// named in tests/data/json-schema-test-suite/SOURCE (with its LICENSE). Remote
// references (http://localhost:1234/...) are served from its remotes/ folder.
// Set VOXOS_WRITE_EXPECTED_FAILURES=1 to rewrite the expected-failures file.
#include "transport/json_schema.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path suite_dir = fs::path(VOXOS_SOURCE_DIR) / "tests" / "data" / "json-schema-test-suite";
const fs::path expected_failures_file =
  fs::path(VOXOS_SOURCE_DIR) / "tests" / "data" / "json-schema" / "expected-failures.txt";

std::optional<json> read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in)
    return std::nullopt;
  return json::parse(in, nullptr, false);
}

/// Serves http://localhost:1234/<path> from the suite's remotes/ folder.
std::optional<json> load_remote(const std::string& uri) {
  const std::string prefix = "http://localhost:1234/";
  if (uri.rfind(prefix, 0) != 0)
    return std::nullopt;
  auto doc = read_json(suite_dir / "remotes" / uri.substr(prefix.size()));
  if (!doc || doc->is_discarded())
    return std::nullopt;
  return doc;
}

struct draft_outcome {
  size_t passed = 0;
  size_t total = 0;
  /// Invalid results the collecting pass could not explain: it disagrees
  /// with the boolean pass that found them invalid (validate then lists only
  /// its fallback error).
  std::vector<std::string> unexplained;
  /// Invalid results whose first error alone (max_errors 1, which the
  /// boolean pass may write from its note of the failure) is not the first
  /// of every error the collecting pass lists.
  std::vector<std::string> first_differs;
};

/// Runs every required file of one draft folder; failing tests go to `failures`.
draft_outcome run_draft(const std::string& draft_name, voxos::schema_draft draft,
                        std::vector<std::string>& failures) {
  draft_outcome outcome;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(suite_dir / "tests" / draft_name))
    if (entry.is_regular_file() && entry.path().extension() == ".json")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    auto groups = read_json(file);
    REQUIRE_MESSAGE((groups && groups->is_array()), "unreadable suite file " << file);
    for (const auto& group : *groups) {
      auto compiled = voxos::compile_schema(group.at("schema"), draft, load_remote);
      for (const auto& test : group.at("tests")) {
        ++outcome.total;
        auto name = draft_name + "/" + file.filename().string() + ": "
                    + group.at("description").get<std::string>() + ": "
                    + test.at("description").get<std::string>();
        std::optional<voxos::validation_result> result;
        if (compiled)
          result = voxos::validate(*compiled, test.at("data"));
        bool passed = result && result->is_valid() == test.at("valid").get<bool>();
        if (passed)
          ++outcome.passed;
        else
          failures.push_back(name);
        if (result && result->errors.size() == 1
            && result->errors[0].constraint == "value does not match the schema")
          outcome.unexplained.push_back(name);
        if (result && !result->is_valid()) {
          auto first = voxos::validate_json_text(
            *compiled, test.at("data").dump(-1, ' ', false, json::error_handler_t::replace), 1);
          const auto& all_first = result->errors.front();
          if (first.errors.size() != 1 || first.errors[0].instance_path != all_first.instance_path
              || first.errors[0].schema_path != all_first.schema_path
              || first.errors[0].constraint != all_first.constraint)
            outcome.first_differs.push_back(name);
        }
      }
    }
  }
  return outcome;
}

} // namespace

TEST_CASE("json schema suite: drafts 7 and 2020-12 fail only the listed tests") {
  REQUIRE_MESSAGE(fs::is_directory(suite_dir / "tests"),
                  "JSON-Schema-Test-Suite not found at "
                    << suite_dir.string()
                    << " (kept in the project: tests/data/json-schema-test-suite)");
  std::vector<std::string> failures;
  for (const auto& [name, draft] : {std::pair{"draft7", voxos::schema_draft::draft7},
                                    std::pair{"draft2020-12", voxos::schema_draft::draft2020_12}}) {
    auto outcome = run_draft(name, draft, failures);
    MESSAGE(std::string(name) << ": " << outcome.passed << "/" << outcome.total << " passed ("
                              << (outcome.total ? 100.0 * outcome.passed / outcome.total : 0.0)
                              << "%)");
    CHECK(outcome.total > 0);
    for (const auto& name_of_test : outcome.unexplained)
      CHECK_MESSAGE(false, "the two validation passes disagree on: " << name_of_test);
    for (const auto& name_of_test : outcome.first_differs)
      CHECK_MESSAGE(false,
                    "the first error alone is not the first of all errors on: " << name_of_test);
  }

  if (std::getenv("VOXOS_WRITE_EXPECTED_FAILURES")) {
    std::ofstream out(expected_failures_file);
    out << "# JSON-Schema-Test-Suite tests transport/json_schema is known to fail.\n"
        << "# One line per test: draft/file.json: group description: test description.\n"
        << "# Regenerate: VOXOS_WRITE_EXPECTED_FAILURES=1 ./build/tests/test_transport "
           "-tc='*suite*'\n";
    for (const auto& line : failures)
      out << line << "\n";
  }

  std::set<std::string> expected;
  std::ifstream in(expected_failures_file);
  REQUIRE_MESSAGE(in.good(), "cannot read " << expected_failures_file.string());
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#')
      expected.insert(line);

  std::set<std::string> actual(failures.begin(), failures.end());
  for (const auto& line : actual)
    CHECK_MESSAGE(expected.count(line), "regression (not in expected-failures.txt): " << line);
  size_t now_passing = 0;
  for (const auto& line : expected) {
    if (!actual.count(line)) {
      ++now_passing;
      MESSAGE("now passes, remove from expected-failures.txt: " << line);
    }
  }
  if (now_passing)
    MESSAGE(now_passing << " listed failures now pass; ratchet the list down");
}
