// The HTTP API's routes: an adapter that authenticates each request, turns it
// into a message to an actor, and renders the answer as JSON. Handlers run on
// the HTTP server's worker threads and wait for actors with a scoped actor.
//
// Authentication: `Authorization: Bearer <token>`. The admin token (operators)
// reaches /metrics and /v1/admin/*; a tenant token reaches /v1/* for the
// tenant it selects; no body or path ever names the caller's tenant. A tenant
// token's tenant and tenant actor are remembered for `auth_cache_ms` in the
// node's token cache (actors/directory/token_cache.hpp), so a request asks
// the directory once per token in that time, not twice per request; the
// directory forgets a token there the moment it revokes it.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "actors/directory/directory.hpp"
#include "actors/event_store/event_store.hpp"
#include "actors/tenant/server_sign_in.hpp"
#include "actors/vault_keeper/vault_keeper.hpp"
#include "config/node_config.hpp"

namespace voxos {

class http_server;
class node_metrics;
class static_site;

/// The longest a tool round can take under `run`: every call one at a time,
/// each to its deadline (run.max_calls × run.call_timeout_ms), plus a minute
/// for recording it. A tool-calls request waits that long, so its answer is
/// never cut off before the round ends.
std::chrono::milliseconds round_wait_of(const run_config& run);

struct http_api_context {
  caf::actor_system* sys = nullptr;
  directory_actor directory;
  event_store_actor store;
  vault_keeper_actor keeper; ///< GET /v1/admin/vault/keys
  node_metrics* metrics = nullptr;
  std::string admin_token_hash;              ///< SHA-256 hex of the admin token
  std::function<nlohmann::json()> node_info; ///< node id, version, ports, data dir
  uint32_t host_keepalive_ms = 1'000;        ///< run.host_keepalive_ms
  /// The node's token cache, shared with the run host; the directory
  /// forgets a token there when it revokes it (null: the directory is asked
  /// on every request).
  std::shared_ptr<node_token_cache> tokens;
  /// How long a tool-calls request waits for its round (round_wait_of).
  std::chrono::milliseconds round_wait{round_wait_of(run_config{})};
  /// Bounds on requests that hold a worker while they wait (held_requests).
  held_limits held = held_limits_of(http_config{});
  /// Signing in to servers (the callback checks its state with it), or
  /// null: the node has no OAuth state secret.
  std::shared_ptr<const server_sign_in::context> sign_in;
  /// The web console's files (console_routes.hpp), or null: not installed.
  std::shared_ptr<const static_site> console;
};

/// The route table. Owned by the node; must outlive the server's handlers
/// (stop the server before destroying it).
class http_api {
public:
  explicit http_api(http_api_context ctx);
  ~http_api();
  http_api(const http_api&) = delete;
  http_api& operator=(const http_api&) = delete;

  /// Adds every route to `server` (before it starts).
  void install(http_server& server);
  /// Adds the private broker route, alone, to `server` (the broker's own
  /// listener; the public one never serves it): POST /v1/broker/token with
  /// `Authorization: Bearer <broker assertion>` and {"server_id"}; the
  /// assertion is checked (signature, audience, expiry, the server, replay)
  /// and exchanged for that server's current access token only.
  void install_broker(http_server& server);
  /// Ends the node's MCP servers' open streams (node_mcp.hpp); call before
  /// the HTTP server stops.
  void stop_streams();

private:
  class routes;
  std::unique_ptr<routes> routes_;
};

} // namespace voxos
