// voxosctl: the operator's command line for a running voxosd.
//
//   voxosctl [options] status                   node, actors, event store, HTTP figures
//   voxosctl [options] metrics                  the Prometheus text of /metrics
//   voxosctl [options] ping                     round trip to the run host over the CAF network
//   voxosctl [options] verify                   re-read every event and projection
//   voxosctl [options] tenants list
//   voxosctl [options] tenants create NAME
//   voxosctl [options] tokens list TENANT_ID
//   voxosctl [options] tokens issue TENANT_ID [LABEL]
//   voxosctl [options] tokens revoke TENANT_ID TOKEN_ID
//   voxosctl [options] audit TENANT_ID [LIMIT]  the tenant's newest policy decisions
//   voxosctl [options] schedules list TENANT_ID the tenant's agent schedules
//   voxosctl [options] schedules pause|resume|delete TENANT_ID SCHEDULE_ID
//   voxosctl [options] vault keys [--wait]      vault keys in use, and which can be dropped
//   voxosctl [options] whoami                   (with VOXOS_TOKEN: a tenant token, over CAF)
//   voxosctl [options] skills list [--catalog DIR]
//   voxosctl [options] skills load --user-id ID --mcp KEY [--dry-run] [--catalog DIR]
//                                               curated MCP example skills (skills.hpp)
//   voxosctl conformance URL                    the MCP conformance suite's client under test
//   voxosctl replay TRACE                       replays a run's trace against a fresh node
//
// Options: --data-dir DIR (default ./var: finds runtime.json and, on the
// embedded profile, secrets.json), --url URL, --caf HOST:PORT, and for a node
// whose CAF endpoint is TLS (ping, whoami): --tls-cert FILE --tls-key FILE
// --tls-ca FILE, the operator's certificate (of the node's caf.tls.ca_file),
// its key, and the CA the node's certificate must chain to.
// The admin token comes from VOXOS_ADMIN_TOKEN, else DIR/secrets.json.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/remote_actor.hpp>
#include <caf/scoped_actor.hpp>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "actors/run_host/run_host.hpp"
#include "apps/voxosctl/conformance.hpp"
#include "apps/voxosctl/replay.hpp"
#include "apps/voxosctl/skills.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"

namespace {

using nlohmann::json;

struct options {
  std::string data_dir = "var";
  std::string url;
  std::string caf_host;
  uint16_t caf_port = 0;
  bool caf_tls = false; ///< from runtime.json, or implied by the --tls-* options
  std::string tls_cert, tls_key, tls_ca;
  bool wait = false; ///< vault keys: after the node's reseal pass has ended
  voxos::skills_options skills;
  std::vector<std::string> args;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "voxosctl: %s\n", message.c_str());
  return 1;
}

std::optional<json> read_json_file(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  auto doc = json::parse(buf.str(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return std::nullopt;
  return doc;
}

// The node's addresses: flags first, then the runtime file it wrote, then defaults.
void locate_node(options& opts) {
  auto runtime = read_json_file(opts.data_dir + "/runtime.json");
  if (opts.url.empty())
    opts.url = runtime ? runtime->value("http_url", "") : "";
  if (opts.url.empty())
    opts.url = "http://127.0.0.1:7100";
  if (opts.caf_host.empty() && runtime) {
    opts.caf_host = runtime->value("caf_host", "");
    opts.caf_port = runtime->value("caf_port", uint16_t{0});
    opts.caf_tls = runtime->value("caf_transport", "plain") == "tls";
  }
  if (!opts.tls_cert.empty())
    opts.caf_tls = true;
  if (opts.caf_host.empty()) {
    opts.caf_host = "127.0.0.1";
    opts.caf_port = 7101;
  }
}

std::optional<std::string> admin_token(const options& opts) {
  if (const char* env = std::getenv("VOXOS_ADMIN_TOKEN"); env != nullptr && *env != '\0')
    return std::string{env};
  if (auto secrets = read_json_file(opts.data_dir + "/secrets.json"))
    if (auto found = secrets->find("admin_token"); found != secrets->end() && found->is_string())
      return found->get<std::string>();
  return std::nullopt;
}

struct http_answer {
  int status = 0;
  std::string body;
};

std::optional<http_answer> call(const options& opts, const std::string& method,
                                const std::string& path, const std::string& body = {}) {
  auto token = admin_token(opts);
  if (!token) {
    fail("no admin token: set VOXOS_ADMIN_TOKEN or pass --data-dir of an embedded node");
    return std::nullopt;
  }
  httplib::Client cli{opts.url};
  cli.set_tcp_nodelay(true);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(60);
  httplib::Headers headers{{"Authorization", "Bearer " + *token}};
  httplib::Result res{nullptr, httplib::Error::Unknown};
  if (method == "GET")
    res = cli.Get(path.c_str(), headers);
  else if (method == "POST")
    res = cli.Post(path.c_str(), headers, body, "application/json");
  else
    res = cli.Delete(path.c_str(), headers);
  if (!res) {
    fail("cannot reach " + opts.url + ": " + httplib::to_string(res.error()));
    return std::nullopt;
  }
  return http_answer{res->status, res->body};
}

// Prints a JSON answer, or the API's error, and returns the exit code.
int print_answer(const std::optional<http_answer>& answer) {
  if (!answer)
    return 1;
  auto doc = json::parse(answer->body, nullptr, false);
  if (answer->status >= 400) {
    if (!doc.is_discarded() && doc.contains("error"))
      return fail(doc["error"].value("code", "error") + ": " + doc["error"].value("message", ""));
    return fail("HTTP " + std::to_string(answer->status));
  }
  std::printf("%s\n", doc.is_discarded() ? answer->body.c_str() : doc.dump(2).c_str());
  return 0;
}

int cmd_status(const options& opts) {
  auto answer = call(opts, "GET", "/v1/admin/status");
  if (!answer || answer->status != 200)
    return print_answer(answer);
  auto doc = json::parse(answer->body, nullptr, false);
  if (doc.is_discarded())
    return fail("the node answered something that is not JSON");
  auto& m = doc["metrics"];
  std::printf("node %s  version %s  up %llds\n", doc.value("node_id", "?").c_str(),
              doc.value("version", "?").c_str(),
              static_cast<long long>(m.value("uptime_s", int64_t{0})));
  std::printf("  HTTP port %d   CAF port %d   data %s\n", doc.value("http_port", 0),
              doc.value("caf_port", 0), doc.value("data_dir", "?").c_str());
  std::printf("\nactors running: %lld\n",
              static_cast<long long>(m.value("actors_running", int64_t{0})));
  std::printf("  %-14s %8s %12s %10s %10s\n", "kind", "running", "messages", "mailbox", "max");
  for (auto& [kind, c] : m["actors"].items())
    std::printf("  %-14s %8lld %12llu %10llu %10llu\n", kind.c_str(),
                static_cast<long long>(c.value("running", int64_t{0})),
                static_cast<unsigned long long>(c.value("messages", uint64_t{0})),
                static_cast<unsigned long long>(c.value("mailbox_depth", uint64_t{0})),
                static_cast<unsigned long long>(c.value("mailbox_depth_max", uint64_t{0})));
  auto& es = m["event_store"];
  std::printf("\nevent store: %llu events appended in %llu batches, %llu requests (%llu failed)\n",
              static_cast<unsigned long long>(es.value("appended_events", uint64_t{0})),
              static_cast<unsigned long long>(es.value("write_batches", uint64_t{0})),
              static_cast<unsigned long long>(es.value("append_requests", uint64_t{0})),
              static_cast<unsigned long long>(es.value("append_failures", uint64_t{0})));
  std::printf("  mean sync %.0f us, mean append %.0f us\n", es.value("sync_mean_us", 0.0),
              es.value("append_mean_us", 0.0));
  auto& http = m["http"];
  std::printf("http: %llu requests, %llu errors; %llu held waiting now, %llu refused a hold\n",
              static_cast<unsigned long long>(http.value("requests", uint64_t{0})),
              static_cast<unsigned long long>(http.value("errors", uint64_t{0})),
              static_cast<unsigned long long>(http.value("held_requests", uint64_t{0})),
              static_cast<unsigned long long>(http.value("held_refused", uint64_t{0})));
  std::printf("run host: %llu runs remembered for the agent hosts that started them\n",
              static_cast<unsigned long long>(m["run_host"].value("hosted_runs", uint64_t{0})));
  return 0;
}

int cmd_metrics(const options& opts) {
  auto answer = call(opts, "GET", "/metrics");
  if (!answer)
    return 1;
  if (answer->status != 200)
    return print_answer(answer);
  std::fwrite(answer->body.data(), 1, answer->body.size(), stdout);
  return 0;
}

// Runs `fn(self, run_host)` against the node's published run host.
template <class F>
int with_run_host(const options& opts, F fn) {
  if (opts.caf_tls && (opts.tls_cert.empty() || opts.tls_key.empty() || opts.tls_ca.empty()))
    return fail("the node's CAF endpoint is TLS: pass --tls-cert, --tls-key and --tls-ca");
  caf::actor_system_config cfg;
  voxos::register_types(cfg);
  cfg.load<caf::io::middleman>();
  if (opts.caf_tls) {
    cfg.load<caf::openssl::manager>();
    cfg.set("openssl.certificate", opts.tls_cert);
    cfg.set("openssl.key", opts.tls_key);
    cfg.set("openssl.cafile", opts.tls_ca);
  }
  cfg.set("scheduler.max-threads", size_t{1});
  caf::actor_system sys{cfg};
  auto host =
    opts.caf_tls
      ? caf::openssl::remote_actor<voxos::run_host_actor>(sys, opts.caf_host, opts.caf_port)
      : sys.middleman().remote_actor<voxos::run_host_actor>(opts.caf_host, opts.caf_port);
  if (!host)
    return fail("cannot reach the run host at " + opts.caf_host + ":"
                + std::to_string(opts.caf_port) + ": " + sys.render(host.error()));
  caf::scoped_actor self{sys};
  return fn(self, *host);
}

int cmd_ping(const options& opts) {
  return with_run_host(opts, [](caf::scoped_actor& self, const voxos::run_host_actor& host) {
    int code = 0;
    auto start = std::chrono::steady_clock::now();
    self->request(host, std::chrono::seconds(10), voxos::ping_atom::value)
      .receive(
        [&](const voxos::pong_reply& pong) {
          auto rtt = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
          std::printf("pong from node %s (voxosd %s) in %lld us\n", pong.node_id.c_str(),
                      pong.version.c_str(), static_cast<long long>(rtt));
        },
        [&](caf::error& err) { code = fail("ping failed: " + voxos::message_of(err)); });
    return code;
  });
}

int cmd_whoami(const options& opts) {
  const char* token = std::getenv("VOXOS_TOKEN");
  if (token == nullptr || *token == '\0')
    return fail("set VOXOS_TOKEN to a tenant token");
  return with_run_host(opts, [token](caf::scoped_actor& self, const voxos::run_host_actor& host) {
    int code = 0;
    self->request(host, std::chrono::seconds(10), voxos::whoami_atom::value, std::string{token})
      .receive(
        [&](const voxos::tenant_identity& who) {
          std::printf("tenant %s (%s), token %s\n", who.tenant_id.c_str(), who.tenant_name.c_str(),
                      who.token_id.c_str());
        },
        [&](caf::error& err) {
          code = fail(std::string{voxos::to_string(voxos::code_of(err))} + ": "
                      + voxos::message_of(err));
        });
    return code;
  });
}

// One line per audited decision: time, phase, run, agent, channel, tool, reason.
int cmd_audit(const options& opts, const std::string& tenant_id, const std::string& limit) {
  auto answer = call(opts, "GET", "/v1/admin/tenants/" + tenant_id + "/audit?limit=" + limit);
  if (!answer || answer->status != 200)
    return print_answer(answer);
  auto rows = json::parse(answer->body, nullptr, false);
  if (!rows.is_array())
    return fail("the node answered something that is not a JSON array");
  std::printf("%-8s %-20s %-20s %-16s %-32s %s\n", "phase", "run", "agent", "channel", "tool",
              "reason");
  for (auto& row : rows) {
    auto text = [&](const char* key) {
      auto found = row.find(key);
      return found != row.end() && found->is_string() ? found->get<std::string>()
                                                      : std::string{"-"};
    };
    auto tool = text("tool");
    if (auto server = text("server_id"); server != "-" && !server.empty())
      tool += "@" + server;
    auto why = row.contains("reason") ? text("reason") : text("code");
    std::printf("%-8s %-20s %-20s %-16s %-32s %s\n", text("phase").c_str(), text("run_id").c_str(),
                text("agent_id").c_str(), text("channel").c_str(), tool.c_str(), why.c_str());
  }
  return 0;
}

// One line per vault key: its id, state, the values still sealed under it,
// and whether a retired key can be dropped from the node's secrets.
int cmd_vault_keys(const options& opts) {
  auto answer =
    call(opts, "GET", std::string{"/v1/admin/vault/keys"} + (opts.wait ? "?wait=1" : ""));
  if (!answer || answer->status != 200)
    return print_answer(answer);
  auto doc = json::parse(answer->body, nullptr, false);
  if (!doc.is_object() || !doc["keys"].is_array() || !doc["reseal"].is_object())
    return fail("the node answered something that is not a keys report");
  std::printf("%-24s %-8s %8s  %s\n", "key", "state", "values", "");
  for (auto& row : doc["keys"]) {
    auto state = row.value("state", "?");
    const char* note = row.value("droppable", false) ? "unused: can be dropped"
                       : state == "retired"          ? "in use: keep it until resealed"
                       : state == "missing"          ? "NOT CONFIGURED"
                                                     : "";
    std::printf("%-24s %-8s %8llu  %s\n", row.value("key_id", "?").c_str(), state.c_str(),
                static_cast<unsigned long long>(row.value("values", uint64_t{0})), note);
  }
  auto& reseal = doc["reseal"];
  std::printf("reseal under '%s': %s, %llu resealed, %llu did not open\n",
              doc.value("active", "?").c_str(),
              reseal.value("failed", false) ? "stopped on an error (see the node's log)"
              : reseal.value("done", false) ? "done"
                                            : "running",
              static_cast<unsigned long long>(reseal.value("resealed", uint64_t{0})),
              static_cast<unsigned long long>(reseal.value("unopened", uint64_t{0})));
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: voxosctl [--data-dir DIR] [--url URL] [--caf HOST:PORT]\n"
               "                [--tls-cert FILE --tls-key FILE --tls-ca FILE] COMMAND\n"
               "commands: status | metrics | ping | verify | whoami | audit TENANT_ID [LIMIT]\n"
               "          vault keys [--wait] (keys in use; --wait: after the reseal pass)\n"
               "          tenants list | tenants create NAME\n"
               "          tokens list TENANT_ID | tokens issue TENANT_ID [LABEL]\n"
               "          tokens revoke TENANT_ID TOKEN_ID\n"
               "          servers TENANT_ID (MCP servers: auth mode, needs_auth, signed_in)\n"
               "          knowledge candidates TENANT_ID [pending|decided|all]\n"
               "          knowledge confirm|reject TENANT_ID CANDIDATE_ID (owner review)\n"
               "          schedules list TENANT_ID (agent schedules)\n"
               "          schedules pause|resume|delete TENANT_ID SCHEDULE_ID\n"
               "          conformance URL (MCP conformance suite client; scenario from\n"
               "          MCP_CONFORMANCE_SCENARIO)\n"
               "          replay TRACE (a run's trace against a fresh node)\n"
               "          skills list [--catalog DIR] (curated MCP example skills)\n"
               "          skills load --user-id ID --mcp KEY [--dry-run] [--catalog DIR]\n"
               "          (ID: the owner's user id, which is the tenant id)\n");
  return 2;
}

} // namespace

int main(int argc, char** argv) {
  options opts;
  for (int arg_idx = 1; arg_idx < argc; ++arg_idx) {
    std::string arg = argv[arg_idx];
    bool has_value = arg_idx + 1 < argc;
    if (arg == "--data-dir" && has_value) {
      opts.data_dir = argv[++arg_idx];
    } else if (arg == "--url" && has_value) {
      opts.url = argv[++arg_idx];
    } else if (arg == "--caf" && has_value) {
      std::string hp = argv[++arg_idx];
      auto colon = hp.rfind(':');
      if (colon == std::string::npos)
        return usage();
      opts.caf_host = hp.substr(0, colon);
      opts.caf_port = static_cast<uint16_t>(std::stoi(hp.substr(colon + 1)));
    } else if (arg == "--tls-cert" && has_value) {
      opts.tls_cert = argv[++arg_idx];
    } else if (arg == "--tls-key" && has_value) {
      opts.tls_key = argv[++arg_idx];
    } else if (arg == "--tls-ca" && has_value) {
      opts.tls_ca = argv[++arg_idx];
    } else if (arg == "--wait") {
      opts.wait = true;
    } else if (arg == "--catalog" && has_value) {
      opts.skills.catalog_dir = argv[++arg_idx];
    } else if (arg == "--user-id" && has_value) {
      opts.skills.user_id = argv[++arg_idx];
    } else if (arg == "--mcp" && has_value) {
      opts.skills.mcp = argv[++arg_idx];
    } else if (arg == "--dry-run") {
      opts.skills.dry_run = true;
    } else if (arg.rfind("--", 0) == 0) {
      return usage();
    } else {
      opts.args.push_back(arg);
    }
  }
  if (opts.args.empty())
    return usage();
  if (opts.args.size() == 2 && opts.args[0] == "conformance")
    return voxos::run_conformance_client(opts.args[1]);
  if (opts.args.size() == 2 && opts.args[0] == "replay")
    return voxos::replay_trace(opts.args[1]);
  locate_node(opts);
  const auto& a = opts.args;
  auto is = [&](std::size_t n, const char* cmd, const char* sub = nullptr) {
    return a.size() >= n && a[0] == cmd && (sub == nullptr || (a.size() > 1 && a[1] == sub));
  };
  if (a.size() == 2 && is(2, "skills", "list"))
    return voxos::skills_list(opts.skills);
  if (a.size() == 2 && is(2, "skills", "load")) {
    if (opts.skills.user_id.empty() || opts.skills.mcp.empty())
      return usage();
    return voxos::skills_load(opts.skills, [&](const std::string& path, const std::string& body) {
      auto answer = call(opts, "POST", path, body);
      if (answer && answer->status >= 200 && answer->status < 300)
        return std::optional<std::string>{answer->body};
      if (answer && answer->status < 400)
        fail("HTTP " + std::to_string(answer->status));
      else
        print_answer(answer); // the API's error; nothing when unreachable (reported)
      return std::optional<std::string>{};
    });
  }
  if (is(1, "status"))
    return cmd_status(opts);
  if (is(1, "metrics"))
    return cmd_metrics(opts);
  if (is(1, "ping"))
    return cmd_ping(opts);
  if (is(1, "whoami"))
    return cmd_whoami(opts);
  if (is(1, "verify"))
    return print_answer(call(opts, "GET", "/v1/admin/store/verify"));
  if (is(2, "audit"))
    return cmd_audit(opts, a[1], a.size() > 2 ? a[2] : "100");
  if (a.size() == 2 && is(2, "vault", "keys"))
    return cmd_vault_keys(opts);
  if (a.size() == 2 && a[0] == "servers")
    return print_answer(call(opts, "GET", "/v1/admin/tenants/" + a[1] + "/servers"));
  if (is(3, "knowledge", "candidates") && a.size() <= 4)
    return print_answer(call(opts, "GET",
                             "/v1/admin/tenants/" + a[2] + "/knowledge/candidates?status="
                               + (a.size() > 3 ? a[3] : std::string{"pending"})));
  if (a.size() == 4 && (is(4, "knowledge", "confirm") || is(4, "knowledge", "reject")))
    return print_answer(call(
      opts, "POST", "/v1/admin/tenants/" + a[2] + "/knowledge/candidates/" + a[3] + "/" + a[1]));
  if (a.size() == 3 && is(3, "schedules", "list"))
    return print_answer(call(opts, "GET", "/v1/admin/tenants/" + a[2] + "/schedules"));
  if (a.size() == 4 && (is(4, "schedules", "pause") || is(4, "schedules", "resume")))
    return print_answer(
      call(opts, "POST", "/v1/admin/tenants/" + a[2] + "/schedules/" + a[3] + "/" + a[1]));
  if (a.size() == 4 && is(4, "schedules", "delete"))
    return print_answer(call(opts, "DELETE", "/v1/admin/tenants/" + a[2] + "/schedules/" + a[3]));
  if (is(2, "tenants", "list"))
    return print_answer(call(opts, "GET", "/v1/admin/tenants"));
  if (is(3, "tenants", "create"))
    return print_answer(call(opts, "POST", "/v1/admin/tenants", json{{"name", a[2]}}.dump()));
  if (is(3, "tokens", "list"))
    return print_answer(call(opts, "GET", "/v1/admin/tenants/" + a[2] + "/tokens"));
  if (is(3, "tokens", "issue"))
    return print_answer(call(opts, "POST", "/v1/admin/tenants/" + a[2] + "/tokens",
                             json{{"label", a.size() > 3 ? a[3] : ""}}.dump()));
  if (is(4, "tokens", "revoke"))
    return print_answer(call(opts, "DELETE", "/v1/admin/tenants/" + a[2] + "/tokens/" + a[3]));
  return usage();
}
