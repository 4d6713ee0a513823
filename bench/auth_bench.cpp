// The cost of a server's credentials, beside the same work without them, in
// one run:
//  1. a tools/call carrying a bearer token opened once from the vault and
//     held by the connection's credentials (transport/auth/server_auth.hpp),
//     against the same call with no auth, and against the same call with
//     the same header sent as a static one (static bearer mode: the same
//     bytes on the wire, so the difference is the credential path alone):
//     two paired phases (bearer vs no auth, bearer vs the static header),
//     each alternating call by call against one in-process echo peer (drift
//     and the peer's jitter fall on both arms), the added time per call as
//     a distribution (p50, p99). Target: at most 5 µs more at
//     p50. The peer reads the header too, in this process: what a longer
//     header costs the wire and the server is in the "no auth" line;
//
//  2. minting one broker assertion (an HS256 JWT with a fresh jti), against
//     its floor, one HMAC-SHA256 of the same length. Target: p99 at most
//     100 µs.
//
//   auth_bench [PAIRS] [TOKEN_BYTES]   (default 10,000 and 800)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/mcp/mcp_connection.hpp"
#include "bench/echo_peer.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "storage/vault.hpp"
#include "transport/auth/auth_fetch.hpp"
#include "transport/auth/server_auth.hpp"
#include "transport/auth/signed_claims.hpp"
#include "transport/url_policy.hpp"

using namespace voxos;
using clock_type = std::chrono::steady_clock;

namespace {

double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

const char* verdict(bool met) {
  return met ? "met" : "MISSED";
}

double micros_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
  const int pairs = argc > 1 ? std::max(100, std::atoi(argv[1])) : 10'000;
  // About the size of a JWT access token (oidc-provider's are 750-850 bytes).
  const std::size_t token_bytes = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 800;

  // -- 1. a bearer from the vault vs no auth ---------------------------------
  httplib::Server svr;
  bench::serve_echo(svr);
  int port = svr.bind_to_any_port("127.0.0.1");
  std::thread serving{[&svr] { svr.listen_after_bind(); }};
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";

  caf::actor_system_config cfg;
  register_types(cfg);
  set_io_bound_scheduler(cfg);
  caf::actor_system sys{cfg};
  auto policy =
    std::make_shared<const url_policy>(std::vector<node_config::registered_url>{{url, "mcp"}});

  // The token as the node holds it: sealed in the vault, opened once when
  // the connection is made.
  auto sealer = vault::create("bench", std::string(32, 'k'));
  if (!sealer) {
    std::fprintf(stderr, "auth_bench: %s\n", sealer.error().message().c_str());
    return 1;
  }
  auto sealed = sealer->seal("tenant", "oauth-tokens/bench", std::string(token_bytes, 't'));
  auto opened = sealer->open("tenant", "oauth-tokens/bench", *sealed);
  auth::token_set tokens;
  tokens.access_token = *opened;
  tokens.expires_at_ms = 0; // never refreshed during the run
  auth::oauth_settings settings;
  settings.server_url = url;
  auto credentials = std::make_shared<auth::oauth_session>(
    std::make_shared<const auth::auth_fetcher>(policy), settings, std::nullopt, tokens);

  mcp_endpoint plain_endpoint{"plain", transport_kind::streamable_http, url, {}};
  mcp_endpoint bearer_endpoint{"bearer", transport_kind::streamable_http, url, {}};
  bearer_endpoint.auth = credentials;
  mcp_endpoint static_endpoint{
    "static", transport_kind::streamable_http, url, {{"Authorization", "Bearer " + *opened}}};
  mcp_config mcp;
  auto plain = spawn_mcp_connection(sys, plain_endpoint, policy, mcp);
  auto bearer = spawn_mcp_connection(sys, bearer_endpoint, policy, mcp);
  auto fixed = spawn_mcp_connection(sys, static_endpoint, policy, mcp);
  caf::scoped_actor self{sys};
  const std::string params = R"({"name":"echo","arguments":{"text":"hi"}})";
  uint64_t key = 1;
  bool failed = false;
  auto call = [&](const mcp_connection_actor& conn) {
    auto start = clock_type::now();
    self
      ->request(conn, std::chrono::seconds{10}, request_atom::value, key++,
                std::string{"tools/call"}, params, uint32_t{0})
      .receive([](const std::string&) {},
               [&](caf::error& err) {
                 if (!failed)
                   std::fprintf(stderr, "auth_bench: call failed: %s\n", message_of(err).c_str());
                 failed = true;
               });
    return micros_since(start);
  };
  for (int warm = 0; warm < 500; ++warm) {
    call(plain);
    call(bearer);
    call(fixed);
  }
  // Two paired phases, each alternating which arm goes first (a position
  // costs the same to both arms then, and drops out of the difference).
  auto paired = [&](const mcp_connection_actor& base, std::vector<double>& base_us,
                    std::vector<double>& bearer_out, std::vector<double>& diff) {
    for (int idx = 0; idx < pairs; ++idx) {
      double base_time = 0;
      double bearer_time = 0;
      if (idx % 2 == 0) {
        base_time = call(base);
        bearer_time = call(bearer);
      } else {
        bearer_time = call(bearer);
        base_time = call(base);
      }
      base_us.push_back(base_time);
      bearer_out.push_back(bearer_time);
      diff.push_back(bearer_time - base_time);
    }
  };
  std::vector<double> plain_us, bearer_us, fixed_us, bearer2_us, added_us, path_us;
  paired(plain, plain_us, bearer_us, added_us);
  paired(fixed, fixed_us, bearer2_us, path_us);
  for (auto* conn : {&plain, &bearer, &fixed})
    self->request(*conn, std::chrono::seconds{5}, close_atom::value)
      .receive([](bool) {}, [](caf::error&) {});
  svr.stop();
  serving.join();
  if (failed)
    return 1;
  double added_p50 = quantile(added_us, 0.5);
  double path_p50 = quantile(path_us, 0.5);
  std::printf("tools/call, %d pairs per phase against an in-process echo peer, a %zu-byte token:\n",
              pairs, token_bytes);
  std::printf("  no auth:                    p50 %7.1f µs  p99 %7.1f µs\n", quantile(plain_us, 0.5),
              quantile(plain_us, 0.99));
  std::printf("  static header, same bytes:  p50 %7.1f µs  p99 %7.1f µs\n", quantile(fixed_us, 0.5),
              quantile(fixed_us, 0.99));
  std::printf("  bearer from the vault:      p50 %7.1f µs  p99 %7.1f µs\n",
              quantile(bearer_us, 0.5), quantile(bearer_us, 0.99));
  std::printf(
    "  added vs no auth:           p50 %+7.1f µs  p99 %+7.1f µs   target p50 <= 5 µs: %s\n",
    added_p50, quantile(added_us, 0.99), verdict(added_p50 <= 5.0));
  std::printf("  added vs the same bytes:    p50 %+7.1f µs  p99 %+7.1f µs   (the credential path "
              "alone; target p50 <= 5 µs: %s)\n",
              path_p50, quantile(path_us, 0.99), verdict(path_p50 <= 5.0));

  // -- 2. minting a broker assertion vs one HMAC-SHA256 -----------------------
  auto key_or = auth::signing_key::hmac(std::string(32, 'b'));
  if (!key_or)
    return 1;
  const int mints = pairs * 10;
  std::vector<double> mint_us, hmac_us;
  mint_us.reserve(mints);
  hmac_us.reserve(mints);
  std::string sample;
  int64_t now_ms = 1'800'000'000'000;
  for (int idx = 0; idx < mints; ++idx) {
    auto start = clock_type::now();
    auto assertion = auth::mint_broker_assertion(*key_or, "tenant-0001", "server-0001", now_ms);
    mint_us.push_back(micros_since(start));
    if (!assertion)
      return 1;
    if (idx == 0)
      sample = *assertion;
    start = clock_type::now();
    auto mac = auth::hmac_sha256(std::string(32, 'b'), sample);
    hmac_us.push_back(micros_since(start));
    if (mac.size() != 32)
      return 1;
  }
  double mint_p99 = quantile(mint_us, 0.99);
  std::printf("broker assertion, %d mints (%zu bytes each):\n", mints, sample.size());
  std::printf("  mint:                    p50 %7.2f µs  p99 %7.2f µs   target p99 <= 100 µs: %s\n",
              quantile(mint_us, 0.5), mint_p99, verdict(mint_p99 <= 100.0));
  std::printf("  floor, one HMAC-SHA256:  p50 %7.2f µs  p99 %7.2f µs   (no target; mint p50 x%.1f "
              "of it)\n",
              quantile(hmac_us, 0.5), quantile(hmac_us, 0.99),
              quantile(mint_us, 0.5) / std::max(0.01, quantile(hmac_us, 0.5)));
  return 0;
}
