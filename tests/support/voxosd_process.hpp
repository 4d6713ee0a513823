// voxosd as a child process on a temporary directory, with helpers to read
// its runtime file and call its HTTP API.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace voxos::test {

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in{path};
  std::stringstream buf;
  buf << in.rdbuf();
  return nlohmann::json::parse(buf.str(), nullptr, false);
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out{path, std::ios::trunc};
  out << text;
}

/// A config for tests: data under `dir`/var, both ports picked by the kernel.
inline std::string test_config(const temp_dir& dir, const std::string& extra = {}) {
  auto path = dir.path() / "voxosd.json";
  nlohmann::json cfg{{"data_dir", (dir.path() / "var").string()},
                     {"log_level", "info"},
                     {"http", {{"port", 0}, {"broker_port", 0}}},
                     {"caf", {{"port", 0}}}};
  if (!extra.empty())
    cfg.merge_patch(nlohmann::json::parse(extra));
  write_file(path, cfg.dump(2));
  return path.string();
}

class voxosd_process {
public:
  /// Starts voxosd with `config_path` (or no arguments) in `dir`.
  voxosd_process(const temp_dir& dir, const std::string& config_path,
                 const std::string& log_name = "voxosd.log")
      : dir_(dir) {
    std::vector<std::string> argv{VOXOSD_PATH};
    if (!config_path.empty()) {
      argv.push_back("--config");
      argv.push_back(config_path);
    }
    proc_ = std::make_unique<child_process>(argv, dir.str(), (dir.path() / log_name).string());
  }

  child_process& proc() { return *proc_; }

  /// Waits for the banner and reads the runtime file it wrote before.
  bool wait_up() {
    if (!proc_->wait_for_line("is up"))
      return false;
    runtime_ = read_json(dir_.path() / "var" / "runtime.json");
    return !runtime_.is_discarded();
  }

  uint16_t http_port() const { return runtime_["http_port"].get<uint16_t>(); }
  uint16_t caf_port() const { return runtime_["caf_port"].get<uint16_t>(); }
  std::string node_id() const { return runtime_["node_id"].get<std::string>(); }

  std::string admin_token() const {
    return read_json(dir_.path() / "var" / "secrets.json")["admin_token"].get<std::string>();
  }

  /// Creates a tenant and issues it a token through the operator API;
  /// returns {tenant_id, token}.
  std::pair<std::string, std::string> make_tenant(const std::string& name) const {
    httplib::Headers admin{{"Authorization", "Bearer " + admin_token()}};
    auto cli = client();
    auto created = cli.Post("/v1/admin/tenants", admin, nlohmann::json{{"name", name}}.dump(),
                            "application/json");
    REQUIRE(created);
    REQUIRE(created->status == 201);
    auto tenant_id = nlohmann::json::parse(created->body)["tenant_id"].get<std::string>();
    auto issued = cli.Post(("/v1/admin/tenants/" + tenant_id + "/tokens").c_str(), admin, "{}",
                           "application/json");
    REQUIRE(issued);
    REQUIRE(issued->status == 201);
    return {tenant_id, nlohmann::json::parse(issued->body)["token"].get<std::string>()};
  }

  httplib::Client client() const {
    httplib::Client cli{"127.0.0.1", http_port()};
    cli.set_tcp_nodelay(true);
    cli.set_connection_timeout(5);
    cli.set_read_timeout(30);
    return cli;
  }

private:
  const temp_dir& dir_;
  std::unique_ptr<child_process> proc_;
  nlohmann::json runtime_;
};

} // namespace voxos::test
