#include "transport/mcp_wire.hpp"

#include <algorithm>
#include <array>

#include "config/base64.hpp"
#include "transport/ascii.hpp"
#include "transport/mcp_server.hpp"

namespace voxos {

namespace {

constexpr std::string_view base64_open = "=?base64?";
constexpr std::string_view base64_close = "?=";

constexpr std::array<std::string_view, 8> log_levels = {"debug", "info",     "notice", "warning",
                                                        "error", "critical", "alert",  "emergency"};

mcp_refusal mismatch(std::string message) {
  return mcp_refusal{400, mcp_code::header_mismatch, std::move(message), nullptr};
}

mcp_refusal bad_meta(std::string message) {
  return mcp_refusal{400, mcp_code::invalid_params, "Invalid params: " + std::move(message),
                     nullptr};
}

/// The body member `Mcp-Name` mirrors, if the method has one.
const char* name_member(std::string_view method) {
  if (method == "tools/call" || method == "prompts/get")
    return "name";
  if (method == "resources/read")
    return "uri";
  // The tasks extension (SEP-2663): the task's id, for routing.
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel")
    return "taskId";
  return nullptr;
}

/// "scheme://host[:port]" split; false if it is not that shape.
bool split_origin(std::string_view origin, std::string_view& scheme, std::string_view& host,
                  std::string_view& port) {
  auto colon_slashes = origin.find("://");
  if (colon_slashes == std::string_view::npos)
    return false;
  scheme = origin.substr(0, colon_slashes);
  auto rest = origin.substr(colon_slashes + 3);
  if (rest.empty() || rest.find_first_of("/?#@") != std::string_view::npos)
    return false;
  auto port_colon = rest.rfind(':');
  auto bracket = rest.rfind(']');
  if (port_colon != std::string_view::npos
      && (bracket == std::string_view::npos || port_colon > bracket)) {
    host = rest.substr(0, port_colon);
    port = rest.substr(port_colon + 1);
    if (port.empty()
        || !std::all_of(port.begin(), port.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return false;
  } else {
    host = rest;
    port = {};
  }
  return !host.empty();
}

bool is_loopback_host(std::string_view host) {
  return equals_ignoring_case(host, "localhost") || host == "127.0.0.1" || host == "[::1]";
}

} // namespace

const std::vector<std::string>& mcp_session_versions() {
  static const std::vector<std::string> versions = {std::string{mcp_session_revision}, "2025-06-18",
                                                    "2025-03-26"};
  return versions;
}

bool mcp_is_session_version(std::string_view version) {
  const auto& versions = mcp_session_versions();
  return std::find(versions.begin(), versions.end(), version) != versions.end();
}

const std::vector<std::string>& mcp_stateless_versions() {
  static const std::vector<std::string> versions = {std::string{mcp_stateless_revision}};
  return versions;
}

mcp_wire mcp_wire_of(const std::optional<std::string>& version_header, bool has_session_id,
                     std::string_view method, const nlohmann::json& params) {
  if (version_header)
    return mcp_is_session_version(*version_header) ? mcp_wire::session : mcp_wire::stateless;
  if (has_session_id || method == "initialize")
    return mcp_wire::session;
  bool modern_meta = params.is_object() && params.contains("_meta") && params["_meta"].is_object()
                     && params["_meta"].contains(mcp_meta::protocol_version);
  return modern_meta ? mcp_wire::stateless : mcp_wire::session;
}

std::optional<mcp_refusal> mcp_check_stateless(const mcp_request_headers& headers,
                                               std::string_view method,
                                               const nlohmann::json& params) {
  if (!headers.protocol_version)
    return mismatch("Missing MCP-Protocol-Version header");
  if (!headers.method)
    return mismatch("Missing Mcp-Method header");
  if (*headers.method != method)
    return mismatch("Mcp-Method header does not match the body's method");
  if (const char* member = name_member(method);
      member && params.is_object() && params.contains(member) && params[member].is_string()) {
    if (!headers.name)
      return mismatch("Missing Mcp-Name header");
    auto decoded = mcp_header_value(*headers.name);
    if (!decoded)
      return mismatch("Mcp-Name header holds malformed base64");
    if (*decoded != params[member].get<std::string>())
      return mismatch(std::string{"Mcp-Name header does not match params."} + member);
  }

  if (!params.is_object() || !params.contains("_meta") || !params["_meta"].is_object())
    return bad_meta("params._meta is required");
  const auto& meta = params["_meta"];
  if (!meta.contains(mcp_meta::protocol_version)
      || !meta[std::string{mcp_meta::protocol_version}].is_string())
    return bad_meta("_meta lacks io.modelcontextprotocol/protocolVersion");
  if (!meta.contains(mcp_meta::client_capabilities)
      || !meta[std::string{mcp_meta::client_capabilities}].is_object())
    return bad_meta("_meta lacks io.modelcontextprotocol/clientCapabilities");
  const auto& requested =
    meta[std::string{mcp_meta::protocol_version}].get_ref<const std::string&>();
  if (requested != *headers.protocol_version)
    return mismatch("MCP-Protocol-Version header does not match _meta's protocolVersion");
  const auto& supported = mcp_stateless_versions();
  if (std::find(supported.begin(), supported.end(), requested) == supported.end())
    return mcp_refusal{400, mcp_code::unsupported_protocol_version, "Unsupported protocol version",
                       nlohmann::json{{"supported", supported}, {"requested", requested}}};
  if (meta.contains(mcp_meta::log_level)) {
    const auto& level = meta[std::string{mcp_meta::log_level}];
    if (!level.is_string() || !mcp_log_level_index(level.get_ref<const std::string&>()))
      return bad_meta("_meta's io.modelcontextprotocol/logLevel is not a log level");
  }
  return std::nullopt;
}

std::optional<std::string> mcp_header_value(std::string_view value) {
  if (value.size() < base64_open.size() + base64_close.size()
      || value.substr(0, base64_open.size()) != base64_open
      || value.substr(value.size() - base64_close.size()) != base64_close)
    return std::string{value};
  return base64::decode(
    value.substr(base64_open.size(), value.size() - base64_open.size() - base64_close.size()));
}

bool mcp_origin_allowed(std::string_view origin, const std::vector<std::string>& allowed) {
  std::string_view scheme;
  std::string_view host;
  std::string_view port;
  if (!split_origin(trim_ows(origin), scheme, host, port))
    return false;
  if (allowed.empty())
    return (equals_ignoring_case(scheme, "http") || equals_ignoring_case(scheme, "https"))
           && is_loopback_host(host);
  for (const auto& entry : allowed) {
    std::string_view entry_scheme;
    std::string_view entry_host;
    std::string_view entry_port;
    if (split_origin(entry, entry_scheme, entry_host, entry_port)
        && equals_ignoring_case(scheme, entry_scheme) && equals_ignoring_case(host, entry_host)
        && port == entry_port)
      return true;
  }
  return false;
}

bool mcp_host_allowed(std::string_view host, const std::vector<std::string>& allowed) {
  if (allowed.empty())
    return true;
  host = trim_ows(host);
  // "host[:port]", the host possibly a bracketed IPv6 literal.
  auto bracket = host.rfind(']');
  auto colon = host.rfind(':');
  std::string_view name = host;
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket))
    name = host.substr(0, colon);
  for (const auto& entry : allowed)
    if (equals_ignoring_case(host, entry) || equals_ignoring_case(name, entry))
      return true;
  return false;
}

bool mcp_accepts(std::string_view accept, std::string_view media_type) {
  if (trim_ows(accept).empty())
    return true;
  auto slash = media_type.find('/');
  auto family = media_type.substr(0, slash);
  while (!accept.empty()) {
    auto comma = accept.find(',');
    auto item = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    auto range = trim_ows(item.substr(0, item.find(';')));
    if (range == "*/*" || equals_ignoring_case(range, media_type))
      return true;
    if (range.size() == family.size() + 2
        && equals_ignoring_case(range.substr(0, family.size()), family)
        && range.substr(family.size()) == "/*")
      return true;
  }
  return false;
}

std::optional<int> mcp_log_level_index(std::string_view name) {
  for (std::size_t idx = 0; idx < log_levels.size(); ++idx)
    if (log_levels[idx] == name)
      return static_cast<int>(idx);
  return std::nullopt;
}

} // namespace voxos
