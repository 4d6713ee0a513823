// A running node: opens the event store, spawns the actors, publishes the
// run_host on the CAF network and serves the HTTP API. voxosd and in-process
// tests start one the same way. CAF-free header.
//
// Lifecycle:  start() --ok--> running --stop()/destructor--> stopped
//             start() fails (locked or corrupt data, a vault key missing or
//             wrong for the values stored, unbindable port, unusable caf.tls
//             files) with nothing left running; the TLS files are checked
//             before anything else, the vault keys before anything is written.
//
// Before it spawns any actor, a start checks the vault keys
// (storage/vault_upkeep.hpp), moves server headers that earlier nodes sealed
// under a node key to their server's data key and erases data keys of servers
// that are gone (actors/tenant/server_credentials.hpp); the vault keeper
// (actors/vault_keeper) then reseals retired keys' values in the background.
//
// The run host is published plainly (caf::io) or, with caf.transport "tls",
// with caf::openssl: peers must present a certificate of caf.tls.ca_file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/node_config.hpp"
#include "messages/status.hpp"
#include "storage/event_db.hpp"

namespace voxos {

/// Every projection the node's store keeps: the directory's, the tenants'
/// configuration, queued work and schedules.
std::vector<projector> node_projectors();

class node {
public:
  static result<std::unique_ptr<node>> start(const node_config& cfg, const node_secrets& secrets);
  ~node();
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  /// The bound ports (meaningful when the configuration asked for port 0).
  uint16_t http_port() const noexcept;
  /// The private broker route's port (http.broker_bind).
  uint16_t broker_port() const noexcept;
  uint16_t caf_port() const noexcept;
  const std::string& node_id() const noexcept;

  /// Stops serving HTTP, stops every actor and closes the store. Idempotent.
  void stop();

private:
  struct impl;
  explicit node(std::unique_ptr<impl> state);
  std::unique_ptr<impl> impl_;
};

} // namespace voxos
