// Words shared by the tool registry, the preset catalog, policy and runs.
// CAF-free plain types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace voxos {

enum class risk_level : uint8_t { low, medium, high };

/// MCP transports the node accepts; stdio is refused everywhere.
enum class transport_kind : uint8_t { streamable_http, sse };

/// How a remote MCP server authenticates the node (the auth issue builds the
/// OAuth and JWT modes; records may name them already).
enum class auth_mode : uint8_t {
  none,
  static_bearer,
  api_key_header,
  oauth_authorization_code,
  oauth_client_credentials,
  private_key_jwt,
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
};

std::string_view to_string(risk_level x) noexcept;
std::string_view to_string(transport_kind x) noexcept;
std::string_view to_string(auth_mode x) noexcept;

} // namespace voxos
