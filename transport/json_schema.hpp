// JSON Schema validation for MCP tool arguments (drafts 7 and 2020-12).
//
// A schema is compiled once (`compile_schema`) into a tree of keyword nodes;
// `$ref` edges may form cycles, which compilation resolves without looping.
// `validate` then checks instances against the compiled tree; it is
// re-entrant and a `compiled_schema` may be shared between threads.
//
// The hot path is JSON text -> simdjson DOM -> validate (`validate_json_text`);
// validation reads the document's tape directly (transport/json_tape.hpp).
// Validation runs in two passes: a boolean pass that allocates nothing (for
// schemas without `propertyNames` or `unevaluated*` over more than 128
// members) and stops at the first failure; only when it fails, a second pass
// lists every violated constraint with its paths (with max_errors 1, the
// boolean pass notes a failure whose error it knows, outside anyOf, oneOf,
// not, if, contains, propertyNames and unevaluated*, and that error is the
// answer: no second pass). Both passes take a short
// way through plain object and array nodes (no in-place applicator), and the
// texts an error names (schema location, constraint) are written when the
// schema is compiled: an error copies only its instance path. Compilation
// does the rest:
// property names in a lookup table (a few names: compared by their first 8
// bytes and size), `required` as a bitmask, common leaves (`type` alone, an
// `enum` of strings, a type with `minimum`/`maximum`) checked by one short
// test each, evaluated properties and items tracked only under `unevaluated*`, simple regular
// expressions (anchored sequences of characters, classes and quantifiers)
// matched without std::regex; other patterns fall back to std::regex
// (ECMAScript grammar, matched on bytes).
//
// Errors name the instance location, the schema location and the violated
// constraint. Schema locations and constraints never contain instance
// values. The instance location is a JSON pointer through the instance's
// own member names, which may be rejected data themselves (a name
// additionalProperties or propertyNames refuses): a caller that shows it
// filters it (tool rounds show only names the schema declares:
// actors/run/tool_round.hpp).
//
// Bounds: validation stops with an error past `max_validation_depth` nested
// schema evaluations (a `$ref` cycle that does not consume the instance) or
// past its work bound (`validation_steps_base`);
// JSON text nested deeper than simdjson's limit (1024) is refused as invalid
// JSON, so no instance recurses deeper than that.
//
// simdjson types are only declared here. A file that includes <simdjson.h> to
// call the document or parser overloads must link simdjson::simdjson (its usage
// requirements define SIMDJSON_THREADS_ENABLED, which changes dom::parser's
// layout); `validate_json_text(schema, text)` needs neither.
// `$dynamicRef` follows the dynamic scope of entered schema resources.
// Unknown keywords and `format` are ignored. `$schema` selects the draft; a
// meta-schema of the loader's whose `$vocabulary` leaves out the validation
// vocabulary turns the document's validation keywords off. The draft 7 and
// 2020-12 meta-schemas are built in (transport/metaschemas.hpp); other remote
// `$ref`s are fetched only through the optional `schema_loader`; without one
// they are compile errors. Patterns are ECMA-262 in unicode mode as far as
// recognised: `\p{...}` with a General_Category value (other property
// escapes are compile errors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"

namespace simdjson::dom {
class document;
class parser;
} // namespace simdjson::dom

namespace voxos {

enum class schema_draft : uint8_t { draft7, draft2020_12 };

/// Maximum nesting of schema evaluations during one `validate` call. Past
/// it, the pass stops: the document is invalid with one error saying so
/// (a `$ref` cycle that does not consume the instance).
inline constexpr int max_validation_depth = 256;
/// Work bound of one validation pass: subschema evaluations plus the
/// members and items walked, at most validation_steps_base +
/// validation_steps_per_word x (the instance's simdjson tape words, about
/// one per value). A schema whose applicators multiply (anyOf or oneOf over
/// $refs to shared subschemas: 2 branches per level take 2^levels steps,
/// cycle or not) stops there, with one error saying so, instead of running
/// for ever. An evaluation takes 20-100 ns: the base is tens of
/// milliseconds at most; ordinary schemas take a few steps per value.
inline constexpr uint64_t validation_steps_base = uint64_t{1} << 20;
inline constexpr uint64_t validation_steps_per_word = 16;

/// Largest counted repetition (`{n}`, `{n,m}`) in a pattern that is matched
/// with std::regex (patterns outside the simple subset, which has 63
/// positions): std::regex expands a repetition into that many copies, up to
/// libstdc++'s own cap of 100,000 automaton states (a pattern past it is a
/// compile error), and its parser overflows on numbers past 64 bits. Larger
/// numbers are refused before it reads them.
inline constexpr uint64_t max_regex_repeat = 100'000;

/// Work bound of one std::regex match (patterns outside the simple subset,
/// which has its own linear matcher, as do length limits `^X{m,n}$`):
/// (twice the automaton states estimated when the pattern is compiled) x
/// (the text's bytes), since any state may be active at each step; squared
/// text for a pattern with a lookahead, which scans on from each position it
/// is tried at. libstdc++'s breadth-first matcher takes 10-50 ns a step:
/// 2^24 steps took 0.8-1.3 s on the worst patterns measured (validation_bench
/// prints them). A longer text is refused with its own error ("bounded
/// matching") instead of being matched. A pattern of 40 states is checked
/// over texts up to about 200,000 bytes.
inline constexpr uint64_t max_regex_steps = uint64_t{1} << 24;

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
  /// Owner of the texts errors view (see validation_result).
  std::shared_ptr<const void> texts() const noexcept { return store_; }

private:
  std::shared_ptr<const detail::schema_store> store_;
  const detail::schema_node* root_;
};

/// One violated constraint. The schema location and constraint are written
/// when the schema is compiled and viewed here: they stay valid as long as
/// the validation_result they came in (which keeps them alive), so copy them
/// to keep them longer.
struct schema_error {
  std::string instance_path;    ///< JSON pointer into the instance, "" for the root
  std::string_view schema_path; ///< JSON pointer to the failing keyword in its schema document
  std::string_view constraint;  ///< e.g. "required property 'x' is missing"
};

/// The reference tokens of a JSON pointer, unescaped (RFC 6901: "~1" is
/// '/', "~0" is '~'); none for "", nullopt for a text that does not start
/// with '/'.
std::optional<std::vector<std::string>> pointer_tokens(std::string_view pointer);

struct validation_result {
  std::vector<schema_error> errors;
  std::shared_ptr<const void> texts; ///< keeps the errors' views valid
  bool is_valid() const noexcept { return errors.empty(); }
};

/// Compiles `schema`; `$schema` in the root overrides `default_draft`.
/// Fails with `errc::config_invalid` on a malformed schema (a keyword of the
/// wrong type, an invalid regular expression, an unresolvable `$ref`).
result<compiled_schema> compile_schema(const nlohmann::json& schema, schema_draft default_draft,
                                       const schema_loader& loader = {});

/// `max_errors` for listing every violated constraint.
inline constexpr std::size_t all_errors = static_cast<std::size_t>(-1);

/// Validates a parsed document (its root value); lists the violated
/// constraints it finds, at most `max_errors` (at least one; 1 stops at the
/// first, as Ajv does without allErrors). `instance` must stay unchanged
/// during the call. (A template only so that a nlohmann::json argument never
/// considers a conversion to the incomplete simdjson type; defined for
/// dom::document: `parser.parse_into_document`, or a parser's `doc` after
/// `parse`.)
template <class Document,
          class = std::enable_if_t<std::is_same_v<Document, simdjson::dom::document>>>
validation_result validate(const compiled_schema& schema, const Document& instance,
                           std::size_t max_errors = all_errors);

/// The boolean pass alone: true when `instance` (its root value) is valid.
bool is_valid(const compiled_schema& schema, const simdjson::dom::document& instance);

/// Parses `json_text` with `parser` and validates the document (errors as
/// `validate`, at most `max_errors`). The parser is
/// reused between calls (one per thread; it keeps the capacity of the largest
/// text it parsed). Text that is not JSON, or nested deeper than 1024, gives
/// one error naming the parse failure at instance path "" and schema path "",
/// never the text. simdjson refuses integers outside 64 bits and numbers
/// beyond double range (1e400) that way too. 1.0 is an integer; a double's
/// multipleOf is judged with a relative tolerance of 1e-9.
validation_result validate_json_text(const compiled_schema& schema, std::string_view json_text,
                                     simdjson::dom::parser& parser,
                                     std::size_t max_errors = all_errors);

/// The same with a parser owned by the calling thread (texts over 1 MiB get a
/// parser of their own, freed after the call).
validation_result validate_json_text(const compiled_schema& schema, std::string_view json_text,
                                     std::size_t max_errors = all_errors);

/// Convenience for callers holding nlohmann::json: serialises `instance` and
/// validates the text (slower than the entry points above).
validation_result validate(const compiled_schema& schema, const nlohmann::json& instance);

} // namespace voxos
