// libFuzzer target for transport/json_schema, built with clang by
// tests/fuzz/CMakeLists.txt.
//
// Each input is a schema and an instance: the first line is the schema's
// JSON text, the rest the instance's. A schema that is not JSON, or that
// does not compile, ends the input. Besides "no crash, no sanitizer report",
// it aborts when:
// - the first error alone (max_errors 1, which the boolean pass may write
//   from its note of the failure) is not the first of every error, or the
//   two disagree on validity;
// - an invalid instance has no error, or a valid one has errors.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "transport/json_schema.hpp"

namespace {

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "json_schema_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

bool same(const voxos::schema_error& left, const voxos::schema_error& right) {
  return left.instance_path == right.instance_path && left.schema_path == right.schema_path
         && left.constraint == right.constraint;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view input{reinterpret_cast<const char*>(data), size};
  auto newline = input.find('\n');
  if (newline == std::string_view::npos)
    return 0;
  auto schema = nlohmann::json::parse(input.substr(0, newline), nullptr, false);
  if (schema.is_discarded())
    return 0;
  auto compiled = voxos::compile_schema(schema, voxos::schema_draft::draft2020_12);
  if (!compiled)
    return 0;
  std::string instance{input.substr(newline + 1)};
  auto every = voxos::validate_json_text(*compiled, instance);
  auto first = voxos::validate_json_text(*compiled, instance, 1);
  check(every.is_valid() == first.is_valid(), "max_errors 1 and all errors agree on validity");
  if (!every.is_valid()) {
    check(first.errors.size() == 1, "max_errors 1 lists one error");
    check(same(first.errors.front(), every.errors.front()),
          "the first error alone is the first of every error");
  }
  return 0;
}
