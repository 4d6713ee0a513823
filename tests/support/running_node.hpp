// An in-process node on a fresh data directory with ports bound to 0, and
// small helpers to call its HTTP API.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/node/node.hpp"
#include "config/node_config.hpp"
#include "support/temp_dir.hpp"

namespace voxos::test {

inline const std::string admin_token = "vxa_test-admin-token-0123456789abcdefghij";

struct http_reply {
  int status = 0;
  nlohmann::json body;
  std::string raw;
};

class running_node {
public:
  explicit running_node(const temp_dir& dir) : dir_(dir) { start(); }
  /// A node with `registered` URLs (e.g. loopback MCP peers for "mcp").
  running_node(const temp_dir& dir, std::vector<node_config::registered_url> registered)
      : dir_(dir), registered_(std::move(registered)) {
    start();
  }
  /// The same, with `tweak` applied to the test configuration before start.
  running_node(const temp_dir& dir, std::vector<node_config::registered_url> registered,
               std::function<void(node_config&)> tweak)
      : dir_(dir), registered_(std::move(registered)), tweak_(std::move(tweak)) {
    start();
  }

  /// The secrets a test node starts with: vault key "k1" of 32 bytes 'k'.
  static node_secrets test_secrets() {
    node_secrets secrets;
    secrets.vault_key_id = "k1";
    secrets.vault_key = std::string(32, 'k');
    secrets.oauth_state_secret = std::string(32, 's');
    secrets.admin_token = admin_token;
    return secrets;
  }

  /// Starts with `secrets` from now on (after stop(); e.g. a rotated vault key).
  void use_secrets(node_secrets secrets) { secrets_ = std::move(secrets); }

  void start() {
    auto started = node::start(config(), secrets_);
    REQUIRE_MESSAGE(started, (started ? "" : started.error().message()));
    node_ = std::move(*started);
  }

  /// The configuration start() uses.
  node_config config() const {
    node_config cfg;
    cfg.data_dir = dir_.str();
    cfg.http.port = 0;
    cfg.http.broker_port = 0;
    cfg.caf.port = 0;
    cfg.http.threads = 8; // (six may wait on rounds and streams, three for one tenant)
    cfg.http.max_body_bytes = 64 * 1024;
    cfg.log_level = "error";
    cfg.registered_urls = registered_;
    if (tweak_)
      tweak_(cfg);
    return cfg;
  }

  void stop() {
    kept_alive_.reset();
    node_.reset();
  }

  voxos::node& get() { return *node_; }

  /// From now on, call() sends every request over one kept-alive
  /// connection: the node answers them in order, each one answered and
  /// counted in its metrics before the next is read. For calls from one
  /// thread at a time.
  void keep_alive() { keep_alive_ = true; }

  /// Requests call() has sent.
  uint64_t requests_sent() const noexcept { return requests_sent_.load(); }

  http_reply call(const std::string& method, const std::string& path, const std::string& token = {},
                  const std::string& body = {},
                  const std::string& content_type = "application/json") {
    ++requests_sent_;
    std::unique_ptr<httplib::Client> fresh;
    if (!kept_alive_) {
      fresh = std::make_unique<httplib::Client>("127.0.0.1", node_->http_port());
      fresh->set_tcp_nodelay(true);
      fresh->set_read_timeout(30);
      if (keep_alive_) {
        fresh->set_keep_alive(true);
        kept_alive_ = std::move(fresh);
      }
    }
    auto& cli = kept_alive_ ? *kept_alive_ : *fresh;
    httplib::Headers headers;
    if (!token.empty())
      headers.emplace("Authorization", "Bearer " + token);
    httplib::Result res{nullptr, httplib::Error::Unknown};
    if (method == "GET")
      res = cli.Get(path.c_str(), headers);
    else if (method == "POST")
      res = cli.Post(path.c_str(), headers, body, content_type.c_str());
    else if (method == "PUT")
      res = cli.Put(path.c_str(), headers, body, content_type.c_str());
    else if (method == "PATCH")
      res = cli.Patch(path.c_str(), headers, body, content_type.c_str());
    else if (method == "DELETE")
      res = cli.Delete(path.c_str(), headers);
    REQUIRE_MESSAGE(res, method << " " << path << " failed: " << httplib::to_string(res.error()));
    http_reply out;
    out.status = res->status;
    out.raw = res->body;
    out.body = nlohmann::json::parse(res->body, nullptr, false);
    return out;
  }

  /// Creates a tenant and issues it a token; returns {tenant_id, token}.
  std::pair<std::string, std::string> make_tenant(const std::string& name) {
    auto created =
      call("POST", "/v1/admin/tenants", admin_token, nlohmann::json{{"name", name}}.dump());
    REQUIRE(created.status == 201);
    auto tenant_id = created.body["tenant_id"].get<std::string>();
    auto issued = call("POST", "/v1/admin/tenants/" + tenant_id + "/tokens", admin_token,
                       R"({"label":"test"})");
    REQUIRE(issued.status == 201);
    return {tenant_id, issued.body["token"].get<std::string>()};
  }

  /// Events in the store, as the admin verify route counts them.
  uint64_t stored_events() {
    auto report = call("GET", "/v1/admin/store/verify", admin_token);
    REQUIRE(report.status == 200);
    return report.body["events"].get<uint64_t>();
  }

private:
  const temp_dir& dir_;
  std::vector<node_config::registered_url> registered_;
  std::function<void(node_config&)> tweak_;
  node_secrets secrets_ = test_secrets();
  std::unique_ptr<voxos::node> node_;
  bool keep_alive_ = false;
  std::unique_ptr<httplib::Client> kept_alive_; ///< with keep_alive(), while the node runs
  std::atomic<uint64_t> requests_sent_{0};
};

} // namespace voxos::test
