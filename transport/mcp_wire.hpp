// The envelope rules of the MCP server's two wires (mcp_server.hpp): which
// wire a POST takes, the 2026-07-28 header and `_meta` checks, and the HTTP
// checks of either (Origin, Host, Accept). Pure functions of their inputs;
// CAF-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace voxos {

/// The `_meta` keys of 2026-07-28 requests and results.
namespace mcp_meta {
inline constexpr std::string_view protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view client_capabilities =
  "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view log_level = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view server_info = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view subscription_id = "io.modelcontextprotocol/subscriptionId";
} // namespace mcp_meta

/// The versions a 2025-11-25 session may negotiate, newest first.
const std::vector<std::string>& mcp_session_versions();
bool mcp_is_session_version(std::string_view version);
/// The versions the stateless wire serves.
const std::vector<std::string>& mcp_stateless_versions();

enum class mcp_wire { session, stateless };

/// The wire of a POST: a session-era `MCP-Protocol-Version` selects the
/// session wire; any other version header the stateless one; without the
/// header, a session id or `initialize` selects the session wire, a
/// `_meta` protocol version the stateless one, and anything else the session
/// wire (which refuses it for want of a session).
mcp_wire mcp_wire_of(const std::optional<std::string>& version_header, bool has_session_id,
                     std::string_view method, const nlohmann::json& params);

/// A request refused before its method runs.
struct mcp_refusal {
  int http_status = 400;
  int64_t code = 0;
  std::string message;
  nlohmann::json data; ///< null: none
};

/// The headers the 2026-07-28 checks read (trimmed; nullopt when absent).
struct mcp_request_headers {
  std::optional<std::string> protocol_version;
  std::optional<std::string> method;
  std::optional<std::string> name;
};

/// The 2026-07-28 envelope of one request, checked in this order: the
/// `MCP-Protocol-Version` header (-32020 when missing), `Mcp-Method` (present,
/// equal to the body's method, -32020), `Mcp-Name` for tools/call,
/// prompts/get (params.name), resources/read (params.uri) and tasks/get,
/// tasks/update, tasks/cancel (params.taskId) (present, equal after
/// `=?base64?...?=` decoding, -32020), `params._meta` with a string
/// protocolVersion and an object clientCapabilities (-32602), the header
/// equal to `_meta`'s version (-32020), a supported version (-32022, data
/// supported and requested), a known `logLevel` if any (-32602). All HTTP
/// 400. Messages name headers and members, never their values.
std::optional<mcp_refusal> mcp_check_stateless(const mcp_request_headers& headers,
                                               std::string_view method,
                                               const nlohmann::json& params);

/// A header value in the `=?base64?<standard base64>?=` form decoded; other
/// values as they are; nullopt for that form with bad base64.
std::optional<std::string> mcp_header_value(std::string_view value);

/// True if `origin` may call: one of `allowed` exactly (scheme and host
/// compared case-insensitively), or, with nothing allowed, a loopback
/// origin (http or https, host localhost, 127.0.0.1 or [::1], any port).
bool mcp_origin_allowed(std::string_view origin, const std::vector<std::string>& allowed);

/// True if the `Host` header names an allowed host: any when `allowed` is
/// empty; else an entry "host" (any port) or "host:port", case-insensitive.
bool mcp_host_allowed(std::string_view host, const std::vector<std::string>& allowed);

/// True if an `Accept` header admits `media_type` (exactly, by `type/*` or
/// `*/*`; parameters ignored). A missing header (empty) admits anything.
bool mcp_accepts(std::string_view accept, std::string_view media_type);

/// The log level named `name` ("debug" ... "emergency"), as an index 0-7.
std::optional<int> mcp_log_level_index(std::string_view name);

} // namespace voxos
