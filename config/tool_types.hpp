// Words shared by the tool registry, the preset catalog, policy and runs.
// CAF-free plain types, and the immutable shared cache of one server's tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace voxos {

enum class risk_level : uint8_t { low, medium, high };

/// MCP transports the node accepts; stdio is refused everywhere.
enum class transport_kind : uint8_t { streamable_http, sse };

/// How a remote MCP server authenticates the node.
enum class auth_mode : uint8_t {
  none,
  static_bearer,
  api_key_header,
  oauth_authorization_code,
  oauth_client_credentials,
  private_key_jwt,
  /// Fixed request headers the user supplied (sealed in the vault).
  static_headers,
  /// A brokered server (the Monzo container): the node sends it an endpoint
  /// bearer (a static header) and, with every request, a fresh broker
  /// assertion; the user's provider tokens stay in the node, which hands
  /// the server only its current access token, at the private broker route.
  brokered_oauth,
};

/// One tool as discovered from an MCP server (or curated by a preset).
struct tool_definition {
  std::string name;
  std::string title;
  std::string description;
  std::string input_schema;     ///< JSON Schema document as text
  std::string output_schema;    ///< JSON Schema document as text, or empty
  bool read_only_hint = false;  ///< the server's readOnlyHint annotation
  bool destructive_hint = true; ///< the server's destructiveHint annotation (MCP default true)
  /// The server's idempotentHint annotation (MCP default false): calling it
  /// twice with the same arguments does nothing more than calling it once.
  bool idempotent_hint = false;
};

/// The tools one MCP server advertised (its discovery cache, or a preset's
/// curated list), immutable once built.
///
/// Copies share one block: copying a server record, or pointing a run's
/// snapshot and tool view at a definition, copies no definition text. A
/// change of the cache (rediscovery, an upserted record) builds a new
/// tool_cache; runs composed earlier keep the block they point into alive.
///
/// Reading: definitions() in the server's order, repeats included (as
/// discovered); by_name() and find() see the first definition of each name
/// only. Building costs O(n log n) name comparisons; find() O(log n).
/// Threading: every member is const; copies may be used from any thread.
class tool_cache {
public:
  /// One distinct name and its first definition, with what a run's view
  /// asks of it computed once here, so composing a view reads this array
  /// and never the definitions themselves.
  struct named {
    /// The name, in one block with the cache's other names (dense: walking
    /// the names touches little memory).
    std::string_view name;
    const tool_definition* def = nullptr;
    /// bytes(name) + bytes(description) + bytes(input_schema), at most 2^32 - 1.
    uint32_t text_bytes = 0;
    bool name_is_model_facing = false;   ///< see is_model_facing_name
    bool input_schema_is_object = false; ///< see looks_like_json_object
  };

  tool_cache() = default; ///< no tools
  explicit tool_cache(std::vector<tool_definition> definitions);

  const std::vector<tool_definition>& definitions() const noexcept;
  std::vector<tool_definition>::const_iterator begin() const noexcept {
    return definitions().begin();
  }
  std::vector<tool_definition>::const_iterator end() const noexcept { return definitions().end(); }
  std::size_t size() const noexcept { return definitions().size(); }
  bool empty() const noexcept { return definitions().empty(); }

  /// Distinct names in ascending byte order, each with its first definition.
  const std::vector<named>& by_name() const noexcept;

  /// The first definition named `name`, or nullptr.
  const tool_definition* find(std::string_view name) const noexcept;

  /// Shares ownership of the definitions, for text that points into them;
  /// nullptr for an empty cache.
  std::shared_ptr<const void> owner() const noexcept { return data_; }

private:
  struct data {
    std::vector<tool_definition> definitions;
    std::vector<named> by_name;
    std::string names; ///< every distinct name, back to back
  };
  std::shared_ptr<const data> data_;
};

/// True if `name` may be shown to a model as it is: ^[A-Za-z0-9_-]{1,64}$.
bool is_model_facing_name(std::string_view name) noexcept;

/// True if a server record, an allowlist or a grant may keep `name`:
/// ^[A-Za-z0-9_.-]{1,128}$ (MCP's tool-name characters; discovery skips others).
bool is_storable_tool_name(std::string_view name) noexcept;

/// True if `text`, without surrounding whitespace, is braced like a JSON
/// object: the cheap check a view makes of a schema that discovery parsed.
bool looks_like_json_object(std::string_view text) noexcept;

std::string_view to_string(risk_level x) noexcept;
std::string_view to_string(transport_kind x) noexcept;
std::string_view to_string(auth_mode x) noexcept;

} // namespace voxos
