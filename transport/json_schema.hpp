// JSON Schema validation for MCP tool arguments (drafts 7 and 2020-12).
//
// A schema is compiled once (`compile_schema`) into a tree of keyword nodes;
// `$ref` edges may form cycles, which compilation resolves without looping.
// `validate` then checks instances against the compiled tree; it is
// re-entrant and a `compiled_schema` may be shared between threads.
//
// Errors name the instance location, the schema location and the violated
// constraint. They never contain instance values: property names that come
// from the schema may appear, rejected data never does.
//
// Bounds: validation stops with an error past `max_validation_depth` nested
// schema evaluations (a `$ref` cycle that does not consume the instance).
// `$dynamicRef` follows the dynamic scope of entered schema resources.
// Unknown keywords and `format` are ignored; `$schema` and `$vocabulary` select
// no metaschema (a `$ref` to a metaschema needs the loader). Remote `$ref`s are fetched only
// through the optional `schema_loader`; without one they are compile errors.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace voxos {

enum class schema_draft : uint8_t { draft7, draft2020_12 };

/// Maximum nesting of schema evaluations during one `validate` call.
inline constexpr int max_validation_depth = 256;

/// Returns the schema document at an absolute URI (no fragment), or nullopt.
using schema_loader = std::function<std::optional<nlohmann::json>(const std::string& uri)>;

namespace detail {
struct schema_store;
struct schema_node;
} // namespace detail

/// An immutable, shareable compiled schema.
class compiled_schema {
public:
  compiled_schema(std::shared_ptr<const detail::schema_store> store,
                  const detail::schema_node* root)
      : store_(std::move(store)), root_(root) {}

  const detail::schema_node& root() const noexcept { return *root_; }

private:
  std::shared_ptr<const detail::schema_store> store_;
  const detail::schema_node* root_;
};

struct schema_error {
  std::string instance_path; ///< JSON pointer into the instance, "" for the root
  std::string schema_path;   ///< JSON pointer to the failing keyword in its schema document
  std::string constraint;    ///< e.g. "required property 'x' is missing"
};

struct validation_result {
  std::vector<schema_error> errors;
  bool is_valid() const noexcept { return errors.empty(); }
};

/// Compiles `schema`; `$schema` in the root overrides `default_draft`.
/// Fails with `errc::config_invalid` on a malformed schema (a keyword of the
/// wrong type, an invalid regular expression, an unresolvable `$ref`).
result<compiled_schema> compile_schema(const nlohmann::json& schema, schema_draft default_draft,
                                       const schema_loader& loader = {});

/// Validates `instance`; lists every violated constraint it finds.
validation_result validate(const compiled_schema& schema, const nlohmann::json& instance);

} // namespace voxos
