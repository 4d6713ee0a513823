// JSON Schema validation of tool arguments: our validator
// (transport/json_schema.hpp: compile_schema once, then validate in a loop)
// beside Ajv 8 (tests/peers/ajv_bench.mjs: Ajv2020 compiles once, then
// validates in a loop), in the same run, on the same files under
// bench/data/validation/ (cases.json lists them): a small flat schema and a
// nested draft 2020-12 schema ($defs/$ref, anyOf/oneOf, prefixItems,
// unevaluatedProperties, dependentRequired, patterns), each with a valid and
// an invalid document.
//
// Figures per document and side, in ns per validation:
//   validate        the document already parsed (ours: a simdjson DOM
//                   document, validate(compiled, document); Ajv: a JS object);
//                   parsing not included;
//   parse+validate  from the JSON text (ours: validate_json_text with a
//                   reused simdjson parser; Ajv: JSON.parse), as the runtime
//                   does for every call's argument text.
// Each twice, like for like: stopping at the first error (ours max_errors 1,
// Ajv's default) and listing every error (ours by default, Ajv allErrors).
// On a valid document both are the same work (our boolean pass alone); on an
// invalid one ours runs the boolean pass, then the collecting pass.
// Each figure is the fastest of several batches of about --batch-ms (the
// least disturbed by other processes on a shared machine), over --rounds
// rounds of ours then Ajv.
// Target (the issue's): ours at least as fast as Ajv (ratio <= 1).
//
// Then the floor of "validate" on the flat case: a validator hand-written for
// that one schema over the same tape (bench/flat_floor.hpp), beside Ajv and
// ours: how fast validate-only can be on this representation at all.
//
// Then the work bound of patterns std::regex matches (max_regex_steps): for
// patterns that are costly to match, the longest text checked (read from the
// "bounded matching" error of a longer one) and the time of one validation
// of a text of exactly that length, which the bound keeps near a second at
// most.
//
//   validation_bench [--batch-ms N] [--batches N] [--rounds N]   (default 40 ms, 7, 2)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "flat_floor.hpp"
#include "support/child_process.hpp"
#include "support/node_peer.hpp"
#include "support/temp_dir.hpp"
#include "transport/json_schema.hpp"

using namespace voxos;
using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

struct bench_options {
  double batch_ms = 40;
  int batches = 7;
  int rounds = 2;
};

std::filesystem::path data_dir() {
  return std::filesystem::path{VOXOS_SOURCE_DIR} / "bench" / "data" / "validation";
}

bool read_text(const std::filesystem::path& path, std::string& out) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return false;
  std::stringstream buf;
  buf << in.rdbuf();
  out = buf.str();
  return true;
}

/// Ns per call of `fn`: the batch size is calibrated first (warming caches
/// up), then the fastest of `opts.batches` batches of about `batch_ms`.
template <class F>
double ns_per_call(const bench_options& opts, F fn) {
  std::size_t sink = 0;
  std::size_t iterations = 1;
  for (;;) {
    auto t0 = clock_type::now();
    for (std::size_t idx = 0; idx < iterations; ++idx)
      sink += fn();
    double ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    if (ms >= opts.batch_ms / 4) {
      iterations = std::max<std::size_t>(
        1, static_cast<std::size_t>(static_cast<double>(iterations) * opts.batch_ms / ms));
      break;
    }
    iterations *= 2;
  }
  double best = 0;
  for (int batch = 0; batch < opts.batches; ++batch) {
    auto t0 = clock_type::now();
    for (std::size_t idx = 0; idx < iterations; ++idx)
      sink += fn();
    double ns = std::chrono::duration<double, std::nano>(clock_type::now() - t0).count()
                / static_cast<double>(iterations);
    best = batch == 0 ? ns : std::min(best, ns);
  }
  if (sink == static_cast<std::size_t>(-1)) // keeps every call observable
    std::puts("");
  return best;
}

struct document_figures {
  std::string case_name;
  std::string name;
  bool expected_valid = false;
  bool agrees = false;
  std::size_t errors = 0;
  double validate_ns = 0; ///< first error
  double validate_all_ns = 0;
  double parse_validate_ns = 0; ///< first error
  double parse_validate_all_ns = 0;
};

/// Our validator on every case of cases.json; false (after a message) if a
/// file is missing or a schema does not compile.
bool measure_ours(const json& manifest, const bench_options& opts,
                  std::vector<document_figures>& out) {
  for (const auto& test_case : manifest["cases"]) {
    if (!test_case.is_object() || !test_case.value("documents", json{}).is_array()) {
      std::fprintf(stderr, "cases.json: each case is {name, schema, documents: [...]}\n");
      return false;
    }
    std::string schema_text;
    auto schema_file = test_case.value("schema", "");
    if (!read_text(data_dir() / schema_file, schema_text)) {
      std::fprintf(stderr, "cannot read %s\n", schema_file.c_str());
      return false;
    }
    auto compiled =
      compile_schema(json::parse(schema_text, nullptr, false), schema_draft::draft2020_12);
    if (!compiled) {
      std::fprintf(stderr, "%s does not compile: %s\n", schema_file.c_str(),
                   compiled.error().message().c_str());
      return false;
    }
    for (const auto& doc : test_case["documents"]) {
      if (!doc.is_object()) {
        std::fprintf(stderr, "cases.json: each document is {name, file, valid}\n");
        return false;
      }
      document_figures fig;
      fig.case_name = test_case.value("name", "");
      fig.name = doc.value("name", "");
      fig.expected_valid = doc.value("valid", false);
      auto file = doc.value("file", "");
      std::string text;
      if (!read_text(data_dir() / file, text)) {
        std::fprintf(stderr, "cannot read %s\n", file.c_str());
        return false;
      }
      simdjson::dom::parser parser;
      simdjson::dom::document parsed;
      if (auto code = parser.parse_into_document(parsed, text).error()) {
        std::fprintf(stderr, "%s is not JSON: %s\n", file.c_str(), simdjson::error_message(code));
        return false;
      }
      auto checked = validate(*compiled, parsed);
      fig.agrees = checked.is_valid() == fig.expected_valid
                   && validate_json_text(*compiled, text).is_valid() == fig.expected_valid;
      fig.errors = checked.errors.size();
      fig.validate_ns =
        ns_per_call(opts, [&] { return validate(*compiled, parsed, 1).errors.size() + 1; });
      fig.validate_all_ns =
        ns_per_call(opts, [&] { return validate(*compiled, parsed).errors.size() + 1; });
      simdjson::dom::parser text_parser;
      fig.parse_validate_ns = ns_per_call(opts, [&] {
        return validate_json_text(*compiled, text, text_parser, 1).errors.size() + 1;
      });
      fig.parse_validate_all_ns = ns_per_call(
        opts, [&] { return validate_json_text(*compiled, text, text_parser).errors.size() + 1; });
      out.push_back(std::move(fig));
    }
  }
  return true;
}

/// Ajv's figure for one document from ajv_bench.mjs's answer (null if absent).
json ajv_document(const json& ajv, const std::string& case_name, const std::string& doc_name) {
  for (const auto& test_case : ajv.value("cases", json::array()))
    if (test_case.is_object() && test_case.value("name", "") == case_name)
      for (const auto& doc : test_case.value("documents", json::array()))
        if (doc.is_object() && doc.value("name", "") == doc_name)
          return doc;
  return nullptr;
}

} // namespace

/// The bound and the time at the bound of patterns costly to match.
void pattern_bounds() {
  std::string groups;
  for (int group_idx = 0; group_idx < 300; ++group_idx)
    groups += "(a?)";
  std::printf("\npatterns matched by std::regex: the longest text checked, and one validation "
              "of a text that long (a's)\n");
  for (const std::string& pattern :
       {std::string{"^.*\\w{1,1000}!"}, std::string{"a{1,5000}!"}, std::string{"\\w{1,1000}"},
        std::string{"(a|b){1000}c"}, groups, std::string{"(?=.*z)"}}) {
    auto compiled = compile_schema(json{{"pattern", pattern}}, schema_draft::draft2020_12);
    if (!compiled) {
      std::printf("  %-20.20s refused: %s\n", pattern.c_str(), compiled.error().message().c_str());
      continue;
    }
    // "string is longer than the N bytes this pattern is checked over ..."
    auto refused = validate(*compiled, json(std::string(size_t{1} << 24, 'a')));
    std::string constraint =
      refused.errors.empty() ? std::string{} : std::string{refused.errors[0].constraint};
    size_t bound = std::strtoull(
      constraint.c_str() + std::min(constraint.size(), std::strlen("string is longer than the ")),
      nullptr, 10);
    auto started = clock_type::now();
    auto at_bound = validate(*compiled, json(std::string(bound, 'a')));
    double seconds = std::chrono::duration<double>(clock_type::now() - started).count();
    bool checked =
      at_bound.errors.empty()
      || std::string_view{at_bound.errors[0].constraint}.find("bounded") == std::string_view::npos;
    std::printf("  %-20.20s %9zu bytes  %6.3f s%s\n", pattern.c_str(), bound, seconds,
                checked ? "" : "  (! refused at its own bound)");
  }
}

int main(int argc, char** argv) {
  bench_options opts;
  for (int arg_idx = 1; arg_idx + 1 < argc; arg_idx += 2) {
    std::string arg = argv[arg_idx];
    if (arg == "--batch-ms")
      opts.batch_ms = std::max(1.0, std::atof(argv[arg_idx + 1]));
    else if (arg == "--batches")
      opts.batches = std::max(1, std::atoi(argv[arg_idx + 1]));
    else if (arg == "--rounds")
      opts.rounds = std::max(1, std::atoi(argv[arg_idx + 1]));
  }
  std::string manifest_text;
  if (!read_text(data_dir() / "cases.json", manifest_text)) {
    std::fprintf(stderr, "cannot read %s\n", (data_dir() / "cases.json").c_str());
    return 1;
  }
  auto manifest = json::parse(manifest_text, nullptr, false);
  if (!manifest.is_object() || !manifest["cases"].is_array()) {
    std::fprintf(stderr, "cases.json: expected {\"cases\": [...]}\n");
    return 1;
  }

  // The flat case's documents, for the hand-written floor.
  std::string flat_valid_text, flat_invalid_text;
  simdjson::dom::parser floor_parser, floor_invalid_parser;
  simdjson::dom::document flat_valid, flat_invalid;
  if (!read_text(data_dir() / "flat.valid.json", flat_valid_text)
      || !read_text(data_dir() / "flat.invalid.json", flat_invalid_text)
      || floor_parser.parse_into_document(flat_valid, flat_valid_text).error()
      || floor_invalid_parser.parse_into_document(flat_invalid, flat_invalid_text).error()) {
    std::fprintf(stderr, "cannot read the flat case's documents\n");
    return 1;
  }
  bool floor_agrees = bench::flat_floor_valid(flat_valid) && !bench::flat_floor_valid(flat_invalid);
  double floor_ns = 0;

  // Rounds of ours then Ajv, never both at once on two shared cores; each
  // figure is the fastest over the rounds, so a burst of load from other
  // processes during one side's turn does not decide the ratio.
  std::vector<document_figures> ours;
  std::vector<json> ajv_rounds;
  for (int round = 0; round < opts.rounds; ++round) {
    std::vector<document_figures> measured;
    if (!measure_ours(manifest, opts, measured))
      return 1;
    if (ours.empty()) {
      ours = std::move(measured);
    } else {
      for (size_t doc_idx = 0; doc_idx < ours.size(); ++doc_idx) {
        auto& best = ours[doc_idx];
        const auto& now = measured[doc_idx];
        best.agrees = best.agrees && now.agrees;
        best.validate_ns = std::min(best.validate_ns, now.validate_ns);
        best.validate_all_ns = std::min(best.validate_all_ns, now.validate_all_ns);
        best.parse_validate_ns = std::min(best.parse_validate_ns, now.parse_validate_ns);
        best.parse_validate_all_ns =
          std::min(best.parse_validate_all_ns, now.parse_validate_all_ns);
      }
    }
    // (the floor's body is in view here: the barrier keeps each call a call
    // of its own, as ours is, instead of code the compiler interleaves and
    // measured at a third of its speed)
    double floor_now = ns_per_call(opts, [&] {
      asm volatile("" : : "r"(&flat_valid) : "memory");
      return static_cast<size_t>(bench::flat_floor_valid(flat_valid)) + 1;
    });
    floor_ns = floor_ns == 0 ? floor_now : std::min(floor_ns, floor_now);
    test::temp_dir logs;
    test::child_process ajv_proc{{test::node_path(), "ajv_bench.mjs", data_dir().string(),
                                  "--batch-ms", std::to_string(opts.batch_ms), "--batches",
                                  std::to_string(opts.batches)},
                                 test::peers_dir().string(),
                                 (logs.path() / "ajv.log").string(),
                                 {}};
    auto ajv = json::parse(ajv_proc.read_all(std::chrono::seconds{300}), nullptr, false);
    ajv_proc.wait();
    if (!ajv.is_object()) {
      std::fprintf(stderr, "ajv_bench.mjs printed no figures: %s\n",
                   ajv_proc.error_output().c_str());
      return 1;
    }
    ajv_rounds.push_back(std::move(ajv));
  }
  const json& ajv = ajv_rounds.front();
  // Ajv's fastest figure over the rounds; its agreement in every round
  auto ajv_figure = [&](const document_figures& fig, const char* field) {
    double best = 0;
    for (const auto& round : ajv_rounds) {
      auto peer = ajv_document(round, fig.case_name, fig.name);
      double value = peer.is_object() ? peer.value(field, 0.0) : 0.0;
      best = best == 0 ? value : std::min(best, value);
    }
    return best;
  };
  auto ajv_agrees = [&](const document_figures& fig) {
    return std::all_of(ajv_rounds.begin(), ajv_rounds.end(), [&](const json& round) {
      auto peer = ajv_document(round, fig.case_name, fig.name);
      return peer.is_object() && peer.value("agrees", false);
    });
  };

  std::printf(
    "JSON Schema validation, ns per validation (fastest of %d batches of ~%.0f ms in each of %d "
    "rounds), "
    "same schema and document files (bench/data/validation/):\n"
    "  voxos: compile_schema once; a boolean pass, then on failure a collecting pass "
    "(max_errors 1 = first error, default = every error)\n"
    "  ajv %s on Node %s: Ajv2020 compile once; default options stop at the first error, "
    "allErrors lists every error\n"
    "  'validate' = document already parsed (voxos: simdjson element; ajv: object; parse time "
    "NOT included)\n"
    "  'parse+validate' = from the JSON text (voxos: validate_json_text with a reused simdjson "
    "parser; ajv: JSON.parse)\n"
    "  target, on parse+validate (the runtime's path: arguments arrive as text): voxos at least "
    "as fast as ajv (ratio <= 1.00); validate-only has no target (a printed figure)\n",
    opts.batches, opts.batch_ms, opts.rounds, ajv.value("ajv_version", "?").c_str(),
    ajv.value("node_version", "?").c_str());
  bool all_agree = true;
  auto row = [](const char* label, const char* what, double ours_ns, double ajv_ns,
                bool has_target) {
    std::printf("%-15s %-29s voxos %8.0f ns | ajv %8.0f ns | x%.2f (%s)\n", label, what, ours_ns,
                ajv_ns, ours_ns / ajv_ns,
                !has_target         ? "no target"
                : ours_ns <= ajv_ns ? "met"
                                    : "MISSED");
  };
  for (const auto& fig : ours) {
    if (!ajv_document(ajv, fig.case_name, fig.name).is_object()) {
      std::fprintf(stderr, "ajv_bench.mjs has no figures for %s/%s\n", fig.case_name.c_str(),
                   fig.name.c_str());
      return 1;
    }
    bool peer_agrees = ajv_agrees(fig);
    bool agrees = fig.agrees && peer_agrees;
    all_agree = all_agree && agrees;
    auto label = fig.case_name + " " + fig.name;
    row(label.c_str(), "validate, first error:", fig.validate_ns, ajv_figure(fig, "validate_ns"),
        false);
    row("", "validate, every error:", fig.validate_all_ns,
        ajv_figure(fig, "validate_all_errors_ns"), false);
    row("", "parse+validate, first error:", fig.parse_validate_ns,
        ajv_figure(fig, "parse_validate_ns"), true);
    row("", "parse+validate, every error:", fig.parse_validate_all_ns,
        ajv_figure(fig, "parse_validate_all_errors_ns"), true);
    if (!fig.expected_valid)
      std::printf("%-15s (voxos lists %zu errors)\n", "", fig.errors);
    if (!agrees)
      std::printf("%-15s ! a validator disagrees with the document's mark (%s): voxos %s, ajv "
                  "%s\n",
                  "", fig.expected_valid ? "valid" : "invalid", fig.agrees ? "agrees" : "DIFFERS",
                  peer_agrees ? "agrees" : "DIFFERS");
  }
  for (const auto& fig : ours)
    if (fig.case_name == "flat" && fig.name == "valid") {
      double ajv_ns = ajv_figure(fig, "validate_ns");
      std::printf("\nthe floor of 'validate' on flat valid: a validator hand-written for this one "
                  "schema over the same tape (bench/flat_floor.hpp)\n"
                  "  hand-written %5.0f ns | ajv %5.0f ns | voxos %5.0f ns | hand-written / ajv "
                  "x%.2f, voxos / hand-written x%.2f%s\n",
                  floor_ns, ajv_ns, fig.validate_ns, floor_ns / ajv_ns, fig.validate_ns / floor_ns,
                  floor_agrees ? "" : "  (! the hand-written validator disagrees)");
    }
  pattern_bounds();
  return all_agree && floor_agrees ? 0 : 1;
}
