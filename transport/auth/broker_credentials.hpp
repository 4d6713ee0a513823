// A brokered connection's credentials (the Monzo container): the server
// gets its endpoint bearer (a static header of the connection) and, with
// every HTTP request, a broker assertion minted afresh (never cached, never
// reused) in `broker_assertion_header`, bound to the user (tenant) and the
// server, audience the node's broker, 60 s. The provider's tokens never go
// to the server: it exchanges the assertion at the node's private broker
// route for the current access token. CAF-free; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "transport/auth/server_auth.hpp"
#include "transport/auth/signed_claims.hpp"

namespace voxos::auth {

/// The request header that carries a broker assertion.
inline constexpr std::string_view broker_assertion_header = "X-Voxos-Broker-Assertion";

class broker_credentials : public server_auth {
public:
  broker_credentials(std::shared_ptr<const signing_key> key, std::string tenant,
                     std::string server_id);

  /// None: the endpoint bearer is the connection's static header.
  std::string authorization() override { return {}; }
  /// A 401 or 403 from a brokered server: the server or the broker refused;
  /// no credential here can cure it (needs_auth: sign in again, or fix the
  /// endpoint bearer).
  status refused(int http_status, std::string_view challenge, std::string_view sent) override;
  /// A fresh assertion.
  std::vector<std::pair<std::string, std::string>> exchange_headers() override;

private:
  std::shared_ptr<const signing_key> key_;
  std::string tenant_;
  std::string server_id_;
};

} // namespace voxos::auth
