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
#include "transport/http_client.hpp"
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

/// Reads a `server/discover` result (raw JSON text), the probe that tells a
/// server of the stateless revision from one that wants the handshake: a
/// DiscoverResult whose supportedVersions names 2026-07-28 gives its
/// serverInfo (or _meta io.modelcontextprotocol/serverInfo), capabilities
/// and instructions, with protocol_version 2026-07-28. Errors: out_of_range
/// for any other result (an older server may answer an unknown method with
/// an empty result), which means: speak the handshake.
result<mcp_server_hello> read_discover_result(std::string_view result_json);

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

/// The 2026-07-28 revision's multi-round-trip requests (SEP-2322): a server
/// that needs input before it can finish a request answers with a result
///   {"resultType":"input_required","inputRequests":{KEY:{method,params}},
///    "requestState":"..."(optional)}
/// and the client sends the request again (a new JSON-RPC id), with the same
/// params plus "inputResponses" {KEY: answer} and, only when the server sent
/// one, the same "requestState". Each input request is answered as a server
/// request would be (answer_server_request): elicitation/create by the
/// defaults the server offered, else a decline.
///
/// For a request sent with `params_text` (a JSON object's text, or "") that
/// got `result_text`: the params of the retry, or std::nullopt when the
/// result is complete (no resultType, or any other). Errors: bad_json when
/// an input_required result is malformed (inputRequests not a non-empty
/// object of {method, params}, requestState not a string); rejected
/// ("the server asked for input this client does not give") for any input
/// request other than elicitation/create (this client declares neither
/// sampling nor roots).
result<std::optional<std::string>> input_retry_params(std::string_view params_text,
                                                      std::string_view result_text);

/// SEP-2243 (2026-07-28): a tool's inputSchema may mark a top-level
/// property {"x-mcp-header": NAME}; every call of that tool then mirrors that
/// argument into the HTTP header `Mcp-Param-NAME`, for servers and proxies
/// that route by header.
struct param_header {
  std::string property; ///< the argument
  std::string header;   ///< the full header name, "Mcp-Param-" + NAME
};

/// The param headers a tool's inputSchema declares (none: empty). Errors
/// (bad_json, naming the rule only): a NAME that is empty or not an RFC 9110
/// token, or on a property whose type is not "string", "integer" or
/// "boolean", or NAMEs not unique case-insensitively. A client must drop
/// such a tool: it is never listed or called.
result<std::vector<param_header>> param_headers_of(const nlohmann::json& input_schema);

/// The header values of one call (`arguments` its argument object): for each
/// param header whose argument is present and not null, an integer in
/// decimal, a boolean as true/false, a string as it is when every character
/// is printable ASCII (0x20..0x7E) and it neither starts nor ends with a
/// space, else `=?base64?<base64 of its UTF-8>?=`. Other values are left out.
/// Error (out_of_range, naming the argument, never its value): a value
/// longer than max_param_header_bytes once encoded, which servers and
/// proxies would refuse as a header (common limits are 8 KiB per line).
inline constexpr std::size_t max_param_header_bytes = 4096;
result<http_header_list> param_header_values(const std::vector<param_header>& headers,
                                             const nlohmann::json& arguments);

/// Cheap test before input_retry_params: false when `result_text` cannot
/// be an input_required result (it does not mention it at all).
inline bool may_require_input(std::string_view result_text) noexcept {
  return result_text.find("input_required") != std::string_view::npos;
}

} // namespace voxos
