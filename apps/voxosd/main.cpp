// voxosd: one node of the Voxos tool runtime.
//
//   voxosd [--config FILE]     start in the foreground (embedded defaults without a file)
//   voxosd --print-config      print the default configuration
//   voxosd --version
//
// Exit codes: 0 after a clean stop (SIGINT/SIGTERM), 1 when the node cannot
// start (locked or corrupt data, unbindable port), 2 for a bad command line
// or configuration.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "actors/node/node.hpp"
#include "config/log.hpp"
#include "config/node_config.hpp"
#include "messages/errc.hpp"

namespace {

int usage(const char* self, int code) {
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: %s [--config FILE] | --print-config | --version\n", self);
  return code;
}

// Where operators and tests find the bound ports of this process.
bool write_runtime_file(const voxos::node_config& cfg, const voxos::node& n) {
  auto path = std::filesystem::path{cfg.data_dir} / "runtime.json";
  auto tmp = path;
  tmp += ".tmp";
  nlohmann::json doc{
    {"pid", static_cast<int64_t>(::getpid())},
    {"node_id", n.node_id()},
    {"http_url", "http://" + cfg.http.bind + ":" + std::to_string(n.http_port())},
    {"http_port", n.http_port()},
    {"broker_port", n.broker_port()},
    {"caf_host", cfg.caf.bind},
    {"caf_port", n.caf_port()},
    {"caf_transport", cfg.caf.transport == voxos::caf_transport::tls ? "tls" : "plain"}};
  {
    std::ofstream out{tmp, std::ios::trunc};
    out << doc.dump(2) << '\n';
    if (!out)
      return false;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

} // namespace

int main(int argc, char** argv) {
  std::string config_path;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    if (arg == "--config" && arg_idx + 1 < argc) {
      config_path = argv[++arg_idx];
    } else if (arg == "--print-config") {
      std::printf("%s\n", voxos::default_config_json().c_str());
      return 0;
    } else if (arg == "--version") {
      std::printf("voxosd %s\n", VOXOS_VERSION);
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      return usage(argv[0], 0);
    } else {
      std::fprintf(stderr, "voxosd: unknown argument '%s'\n", arg.c_str());
      return usage(argv[0], 2);
    }
  }

  // Configuration: a file, or the embedded defaults.
  auto cfg = config_path.empty() ? voxos::result<voxos::node_config>{voxos::node_config{}}
                                 : voxos::load_config_file(config_path);
  if (!cfg) {
    std::fprintf(stderr, "voxosd: configuration refused: %s\n", cfg.error().message().c_str());
    return 2;
  }
  voxos::log::set_level(cfg->log_level);
  auto secrets = voxos::resolve_secrets(*cfg, voxos::process_env());
  if (!secrets) {
    std::fprintf(stderr, "voxosd: secrets refused: %s\n", secrets.error().message().c_str());
    return 2;
  }
  if (secrets->generated)
    voxos::log::warn("voxosd",
                     "generated node secrets into " + cfg->data_dir
                       + "/secrets.json (mode 0600): embedded profile only, keep it private");

  // Block the stop signals before any thread starts, so sigwait below gets them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto started = voxos::node::start(*cfg, *secrets);
  if (!started) {
    std::fprintf(stderr, "voxosd: cannot start: %s: %s\n",
                 std::string{voxos::to_string(started.error().code())}.c_str(),
                 started.error().message().c_str());
    return 1;
  }
  auto& n = **started;
  if (!write_runtime_file(*cfg, n))
    voxos::log::warn("voxosd", "cannot write " + cfg->data_dir + "/runtime.json");

  auto http = "http://" + cfg->http.bind + ":" + std::to_string(n.http_port());
  std::printf("voxosd %s: node %s is up\n"
              "  HTTP API      %s  (public base URL %s)\n"
              "  health        curl %s/healthz\n"
              "  CAF run host  %s:%u\n"
              "  data          %s/  (event store in store/, runtime.json, secrets.json)\n"
              "  operators     voxosctl status | voxosctl metrics | voxosctl ping\n"
              "  stop          Ctrl-C\n",
              VOXOS_VERSION, n.node_id().c_str(), http.c_str(), cfg->http.public_base_url.c_str(),
              http.c_str(), cfg->caf.bind.c_str(), static_cast<unsigned>(n.caf_port()),
              cfg->data_dir.c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  voxos::log::info("voxosd", std::string{"stopping on "} + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
  n.stop();
  std::error_code ec;
  std::filesystem::remove(std::filesystem::path{cfg->data_dir} / "runtime.json", ec);
  voxos::log::info("voxosd", "stopped");
  return 0;
}
