// The MCP session rules the connection actor follows, as plain functions:
// which protocol revisions the client speaks, what it declares in
// `initialize`, how it reads the server's answer, and how it answers the
// requests a server may send it. CAF-free and I/O-free.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "messages/status.hpp"
#include "transport/jsonrpc.hpp"

namespace voxos {

/// Protocol revisions this client speaks, newest first. The first is what
/// `initialize` asks for; the server may answer with any of them. The
/// 2026-07-28 stateless revision is not among them: no peer speaks it yet
/// (see actors/mcp/README.md).
inline constexpr std::array<std::string_view, 4> mcp_protocol_versions = {
  "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/// True if `version` is one of mcp_protocol_versions.
bool is_supported_protocol_version(std::string_view version) noexcept;

/// The params of our `initialize` request: the newest revision, the client's
/// capabilities (elicitation, form mode only; see answer_server_request) and
/// clientInfo {name "voxos", version}.
nlohmann::json initialize_params(std::string_view client_version);

/// The stateless revision: no initialize handshake; every request carries
/// its version in the MCP-Protocol-Version header and in params._meta, and
/// says its method (and name) in the Mcp-Method (Mcp-Name) header.
inline constexpr std::string_view stateless_protocol_version = "2026-07-28";

/// `params_text` (a JSON object's text, or "" for none) with the stateless
/// revision's `_meta` first: io.modelcontextprotocol/protocolVersion,
/// clientCapabilities (form-mode elicitation, as initialize_params declares)
/// and clientInfo. Fails with bad_json when params_text is not an object's
/// text.
result<std::string> with_stateless_meta(std::string_view params_text,
                                        std::string_view client_version);

/// The Mcp-Name header's value for a request: params.name for tools/call and
/// prompts/get, params.uri for resources/read; "" for other methods.
std::string stateless_name(std::string_view method, std::string_view params_text);

/// What a server said about itself in its `initialize` answer.
struct mcp_server_hello {
  std::string protocol_version;
  std::string server_name;    ///< serverInfo.name, or ""
  std::string server_version; ///< serverInfo.version, or ""
  bool tools_list_changed = false;
  std::string capabilities; ///< raw JSON text of "capabilities" ("{}" if absent)
  std::string instructions; ///< "instructions", or ""
};

/// Reads an `initialize` result (raw JSON text). Errors: bad_json when it is
/// not an object or protocolVersion is not a string; out_of_range when the
/// revision is not one this client speaks ("server speaks an unsupported
/// protocol revision"), in which case the session must be abandoned.
result<mcp_server_hello> read_initialize_result(std::string_view result_json);

/// The answer to one request a server sent us, as a JSON-RPC message text
/// ready to send back. Rules:
///   ping                 -> {} (required by the specification)
///   elicitation/create   -> form mode: {"action":"accept","content":{...}}
///                           holding the `default` of every property of the
///                           requested schema that declares one (strings,
///                           numbers, integers, booleans, enums); nothing
///                           else is invented. If no property has a default,
///                           or the request is for URL mode, the answer is
///                           {"action":"decline"}: a run has no person to
///                           ask, so the server gets the defaults it offered
///                           or a refusal, never made-up data.
///   anything else        -> error -32601 "Method not found" (we declare no
///                           sampling or roots capability).
/// Malformed params of a known method get -32602 "Invalid params".
std::string answer_server_request(const jsonrpc_request& req);

} // namespace voxos
