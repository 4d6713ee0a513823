#include "config/tool_types.hpp"

namespace voxos {

std::string_view to_string(risk_level x) noexcept {
  switch (x) {
  case risk_level::low:
    return "low";
  case risk_level::medium:
    return "medium";
  case risk_level::high:
    return "high";
  }
  return "unknown";
}

std::string_view to_string(transport_kind x) noexcept {
  switch (x) {
  case transport_kind::streamable_http:
    return "streamable_http";
  case transport_kind::sse:
    return "sse";
  }
  return "unknown";
}

std::string_view to_string(auth_mode x) noexcept {
  switch (x) {
  case auth_mode::none:
    return "none";
  case auth_mode::static_bearer:
    return "static_bearer";
  case auth_mode::api_key_header:
    return "api_key_header";
  case auth_mode::oauth_authorization_code:
    return "oauth_authorization_code";
  case auth_mode::oauth_client_credentials:
    return "oauth_client_credentials";
  case auth_mode::private_key_jwt:
    return "private_key_jwt";
  }
  return "unknown";
}

} // namespace voxos
