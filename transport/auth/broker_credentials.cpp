#include "transport/auth/broker_credentials.hpp"

#include "config/clock.hpp"

namespace voxos::auth {

broker_credentials::broker_credentials(std::shared_ptr<const signing_key> key, std::string tenant,
                                       std::string server_id)
    : key_(std::move(key)), tenant_(std::move(tenant)), server_id_(std::move(server_id)) {}

status broker_credentials::refused(int http_status, std::string_view, std::string_view) {
  return status::error(errc::needs_auth, "the brokered server refused its credentials (HTTP "
                                           + std::to_string(http_status) + ")");
}

std::vector<std::pair<std::string, std::string>> broker_credentials::exchange_headers() {
  auto assertion = mint_broker_assertion(*key_, tenant_, server_id_, wall_clock_ms());
  if (!assertion)
    return {};
  return {{std::string{broker_assertion_header}, std::move(*assertion)}};
}

} // namespace voxos::auth
