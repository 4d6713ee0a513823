#include "actors/node/node.hpp"

#include <filesystem>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/send.hpp>

#include <openssl/crypto.h>

#include <nlohmann/json.hpp>

#include "actors/directory/directory.hpp"
#include "actors/directory/directory_index.hpp"
#include "actors/event_store/event_store.hpp"
#include "actors/http_api/http_api.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/run_host/run_host.hpp"
#include "actors/tenant/server_credentials.hpp"
#include "actors/tenant/server_sign_in.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "actors/vault_keeper/vault_keeper.hpp"
#include "actors/work/work_item.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/register.hpp"
#include "storage/digest.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "storage/vault_upkeep.hpp"
#include "transport/http_server.hpp"
#include "transport/static_site.hpp"
#include "transport/url_policy.hpp"

namespace voxos {

std::vector<projector> node_projectors() {
  return {&directory::project, &tenant_events::project, &work::project};
}

namespace {

// The console's folder: http.console_dir, or `console` beside the binary.
std::shared_ptr<const static_site> load_console(const std::string& configured) {
  std::string dir = configured;
  if (dir.empty()) {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
      return nullptr;
    dir = (exe.parent_path() / "console").string();
  }
  auto site = static_site::load(dir);
  if (!site) {
    log::info("node", "web console off: " + site.error().message() + " (http.console_dir)");
    return nullptr;
  }
  log::info("node", "web console: " + std::to_string(site->file_count()) + " files, "
                      + std::to_string(site->compressed_bytes()) + " bytes compressed");
  return std::make_shared<const static_site>(std::move(*site));
}

class system_config : public caf::actor_system_config {
public:
  /// `tls_secret` is what check_caf_tls answered for `cfg.caf`.
  system_config(const node_config& cfg, const caf_tls_secret& tls_secret) {
    register_types(*this);
    load<caf::io::middleman>();
    if (cfg.caf.transport == caf_transport::tls) {
      // With any openssl.* entry set, CAF's sessions load the certificate and
      // key, trust only `cafile`, and set SSL_VERIFY_PEER |
      // SSL_VERIFY_FAIL_IF_NO_PEER_CERT: a peer without a certificate that
      // chains to the CA fails the handshake (docs/config.md).
      load<caf::openssl::manager>();
      set("openssl.certificate", tls_secret.certificate_path);
      set("openssl.key", tls_secret.key_path);
      set("openssl.cafile", tls_secret.ca_path);
      // Assigned, not set(): set() would keep a second copy in the config
      // dictionary, which the destructor cannot wipe.
      openssl_passphrase = tls_secret.key_passphrase;
    }
    set("scheduler.max-threads", static_cast<size_t>(cfg.caf.scheduler_threads));
    set_io_bound_scheduler(*this);
    // Cross-node connections are made explicitly by agent hosts.
    set("middleman.enable-automatic-connections", false);
  }

  ~system_config() override {
    if (!openssl_passphrase.empty())
      OPENSSL_cleanse(openssl_passphrase.data(), openssl_passphrase.size());
  }
};

/// The node's vault: the active key seals, the retired keys only open.
result<vault> node_vault(const node_secrets& secrets) {
  auto keys = vault::create(secrets.vault_key_id, secrets.vault_key);
  if (!keys)
    return keys.error();
  for (const auto& retired : secrets.retired_vault_keys)
    if (auto added = keys->add_key(retired.key_id, retired.key); !added)
      return added;
  return keys;
}

} // namespace

// Members are declared in construction order; destruction runs in reverse,
// so the HTTP server stops before the actors it calls, and the actor system
// (which waits for its actors) goes before the metrics they write.
struct node::impl {
  node_config cfg;
  std::string node_id;
  node_metrics metrics;
  /// The pinned copies of the TLS files CAF reads (outlives the system).
  caf_tls_secret tls_pin;
  std::unique_ptr<system_config> sys_cfg;
  std::unique_ptr<caf::actor_system> sys;
  event_store_actor store;
  directory_actor directory;
  run_host_actor run_host;
  std::unique_ptr<http_api> api;
  std::unique_ptr<http_server> server;
  std::unique_ptr<http_server> broker_server; ///< the private broker route alone
  vault_keeper_actor keeper;
  uint16_t http_port = 0;
  uint16_t broker_port = 0;
  uint16_t caf_port = 0;
  bool stopped = false;

  void shutdown() {
    if (stopped)
      return;
    stopped = true;
    // 1. No new requests; in-flight ones finish (the MCP servers' streams end first).
    if (api)
      api->stop_streams();
    if (server)
      server->stop();
    if (broker_server)
      broker_server->stop();
    // 2. Every actor exits; the event store closes RocksDB as it terminates.
    if (sys) {
      if (caf_port != 0)
        sys->middleman().unpublish(run_host, caf_port);
      for (auto hdl :
           {caf::actor_cast<caf::actor>(run_host), caf::actor_cast<caf::actor>(directory),
            caf::actor_cast<caf::actor>(keeper), caf::actor_cast<caf::actor>(store)})
        if (hdl)
          caf::anon_send_exit(hdl, caf::exit_reason::user_shutdown);
    }
    // 3. Drop every handle before the system that owns the actors goes.
    api.reset();
    run_host = nullptr;
    directory = nullptr;
    keeper = nullptr;
    store = nullptr;
    sys.reset();
    server.reset();
    broker_server.reset();
  }
};

node::node(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

node::~node() {
  stop();
}

void node::stop() {
  if (impl_)
    impl_->shutdown();
}

uint16_t node::http_port() const noexcept {
  return impl_->http_port;
}

uint16_t node::broker_port() const noexcept {
  return impl_->broker_port;
}

uint16_t node::caf_port() const noexcept {
  return impl_->caf_port;
}

const std::string& node::node_id() const noexcept {
  return impl_->node_id;
}

result<std::unique_ptr<node>> node::start(const node_config& cfg, const node_secrets& secrets) {
  // The TLS files first: an unusable one stops the start before anything
  // runs (CAF would only fail on the first connection, by throwing on its
  // network thread).
  auto tls_secret = check_caf_tls(cfg.caf);
  if (!tls_secret)
    return tls_secret.error();

  auto state = std::make_unique<impl>();
  state->cfg = cfg;
  state->node_id = "n_" + digest::random_hex(6);
  log::set_level(cfg.log_level);

  // Storage first: a locked or corrupt data directory stops the start before
  // anything else runs.
  event_db_options db_opts;
  db_opts.sync = cfg.event_store.sync;
  db_opts.max_event_bytes = cfg.event_store.max_event_bytes;
  db_opts.projectors = node_projectors();
  auto opened = event_db::open(cfg.data_dir + "/store", std::move(db_opts));
  if (!opened)
    return opened.error();
  std::shared_ptr<event_db> db{std::move(*opened)};
  // The vault: every sealed value the node needs must open with its keys
  // (a first start seals the canary), so a node never runs with a key
  // missing or wrong.
  auto keys = node_vault(secrets);
  if (!keys)
    return keys.error();
  auto node_keys = std::make_shared<const vault>(std::move(*keys));
  auto usage = vault_upkeep::check_at_start(*db, *node_keys);
  if (!usage)
    return usage.error();
  for (const auto& key : *usage)
    if (!key.active)
      log::info("node", "vault: retired key '" + key.key_id + "' "
                          + (key.values == 0 ? std::string{"is unused: it can be dropped"}
                                             : "seals " + std::to_string(key.values)
                                                 + " values, resealed in the background"));
  auto index = directory_index::load(*db);
  if (!index)
    return index.error();
  log::info("node", "event store open: " + std::to_string(index->tenant_count()) + " tenants");
  // Server credentials: headers sealed under a node key move to their
  // server's data key; data keys of servers that are gone are erased.
  auto data_keys = std::make_shared<server_keys>(node_keys, db);
  std::vector<std::string> tenant_ids;
  for (const auto& tenant : index->tenants())
    tenant_ids.push_back(tenant.tenant_id);
  auto upkeep =
    server_credentials::upkeep_at_start(*db, *data_keys, *node_keys, tenant_ids, wall_clock_us());
  if (!upkeep)
    return upkeep.error();
  if (upkeep->resealed != 0 || upkeep->swept != 0)
    log::info("node", "server credentials: " + std::to_string(upkeep->resealed)
                        + " resealed under their server's key, " + std::to_string(upkeep->swept)
                        + " keys of deleted servers erased");

  state->tls_pin = std::move(*tls_secret);
  state->sys_cfg = std::make_unique<system_config>(cfg, state->tls_pin);
  // The system's configuration holds the passphrase now; one copy is enough.
  OPENSSL_cleanse(state->tls_pin.key_passphrase.data(), state->tls_pin.key_passphrase.size());
  state->tls_pin.key_passphrase.clear();
  try {
    state->sys = std::make_unique<caf::actor_system>(*state->sys_cfg);
  } catch (const std::exception& ex) {
    // CAF raises std::runtime_error from module initialisation (e.g. the
    // OpenSSL manager without a certificate or key).
    return status::error(errc::internal,
                         std::string{"cannot start the actor system: "} + ex.what());
  }
  auto& sys = *state->sys;
  event_store_options store_opts;
  store_opts.max_batch_requests = cfg.event_store.max_batch_events;
  store_opts.deferred_sync = std::chrono::milliseconds{cfg.event_store.deferred_sync_ms};
  state->store = spawn_event_store(sys, db, state->metrics, store_opts);
  // Retired keys' values are resealed in the background; the node serves meanwhile.
  state->keeper = spawn_vault_keeper(sys, db, node_keys, data_keys, vault_keeper_options{});
  db.reset();
  tenant_services services;
  services.urls = std::make_shared<const url_policy>(cfg.registered_urls);
  services.keys = std::move(data_keys);
  services.keeper = state->keeper;
  services.mcp = cfg.mcp;
  services.run = cfg.run;
  services.tools = cfg.tools;
  services.work = cfg.work;
  services.index_dir = cfg.data_dir + "/index";
  if (auto sign_in = server_sign_in::make_context(services.urls, cfg.http.public_base_url,
                                                  secrets.oauth_state_secret))
    services.sign_in = std::move(*sign_in);
  else
    log::warn("node", "signing in to OAuth servers is off: " + sign_in.error().message());
  auto sign_in_context = services.sign_in;
  // What the entry points remember of tenant tokens; the directory forgets
  // a token there when it revokes it.
  auto tokens = std::make_shared<node_token_cache>();
  state->directory = spawn_directory(sys, state->store, std::move(*index), state->metrics,
                                     std::move(services), tokens);
  state->run_host = spawn_run_host(sys, state->directory, state->node_id, state->metrics, tokens);

  // The CAF endpoint agent hosts connect to: over TLS with certificates, or
  // plain. Both register with the same BASP broker, so middleman().unpublish
  // closes either.
  const bool tls = cfg.caf.transport == caf_transport::tls;
  auto published = tls ? caf::openssl::publish(state->run_host, cfg.caf.port, cfg.caf.bind.c_str(),
                                               /*reuse=*/false)
                       : sys.middleman().publish(state->run_host, cfg.caf.port,
                                                 cfg.caf.bind.c_str(), /*reuse_addr=*/false);
  if (!published) {
    auto message = "cannot publish the run host on " + cfg.caf.bind + ":"
                   + std::to_string(cfg.caf.port) + (tls ? " (TLS)" : "") + ": "
                   + sys.render(published.error());
    state->shutdown();
    return status::error(errc::unavailable, message);
  }
  state->caf_port = *published;
  if (tls)
    log::info("node", "run host published over TLS on " + cfg.caf.bind + ":"
                        + std::to_string(state->caf_port)
                        + "; peers need a certificate of caf.tls.ca_file");

  // The HTTP API.
  http_server::options http_opts;
  http_opts.bind = cfg.http.bind;
  http_opts.port = cfg.http.port;
  http_opts.max_body_bytes = cfg.http.max_body_bytes;
  http_opts.threads = cfg.http.threads;
  http_opts.max_header_lines = cfg.http.max_header_lines;
  http_opts.max_header_bytes = cfg.http.max_header_bytes;
  state->server = std::make_unique<http_server>(http_opts);
  http_api_context ctx;
  ctx.sys = &sys;
  ctx.directory = state->directory;
  ctx.tokens = tokens;
  ctx.store = state->store;
  ctx.keeper = state->keeper;
  ctx.metrics = &state->metrics;
  ctx.admin_token_hash = digest::sha256_hex(secrets.admin_token);
  ctx.host_keepalive_ms = cfg.run.host_keepalive_ms;
  ctx.round_wait = round_wait_of(cfg.run);
  ctx.held = held_limits_of(cfg.http);
  ctx.sign_in = sign_in_context;
  ctx.console = load_console(cfg.http.console_dir);
  auto* raw = state.get();
  ctx.node_info = [raw] {
    return nlohmann::json{
      {"node_id", raw->node_id},
      {"version", VOXOS_VERSION},
      {"http_port", raw->http_port},
      {"broker_port", raw->broker_port},
      {"caf_port", raw->caf_port},
      {"caf_transport", raw->cfg.caf.transport == caf_transport::tls ? "tls" : "plain"},
      {"public_base_url", raw->cfg.http.public_base_url},
      {"data_dir", raw->cfg.data_dir}};
  };
  state->api = std::make_unique<http_api>(std::move(ctx));
  state->api->install(*state->server);
  auto port = state->server->start();
  if (!port) {
    state->shutdown();
    return port.error();
  }
  state->http_port = *port;
  // The private broker route, on its own listener.
  http_server::options broker_opts;
  broker_opts.bind = cfg.http.broker_bind;
  broker_opts.port = cfg.http.broker_port;
  broker_opts.max_body_bytes = 4096;
  broker_opts.threads = 4;
  state->broker_server = std::make_unique<http_server>(broker_opts);
  state->api->install_broker(*state->broker_server);
  auto broker_port = state->broker_server->start();
  if (!broker_port) {
    state->shutdown();
    return broker_port.error();
  }
  state->broker_port = *broker_port;
  return std::unique_ptr<node>{new node(std::move(state))};
}

} // namespace voxos
