// Tests for config/node_config.cpp: the JSON format, its bounds and messages,
// and secret resolution from the generated file, the environment and a named file.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "config/node_config.hpp"
#include "support/temp_dir.hpp"

namespace {

using voxos::errc;
using voxos::node_config;
using voxos::node_secrets;
using voxos::parse_config;
using voxos::resolve_secrets;
namespace fs = std::filesystem;

// Test secrets: base64 of bytes 0..31 and of bytes 100..131.
constexpr const char* key_a_b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
constexpr const char* key_b_b64 = "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=";
constexpr const char* oauth_secret = "oauth-state-secret-0123456789abcdefghij";
constexpr const char* admin_token = "vxa_admin-token-0123456789abcdefghijklmnop";

std::string key_a_raw() {
  std::string out;
  for (int idx = 0; idx < 32; ++idx)
    out += static_cast<char>(idx);
  return out;
}

std::string key_b_raw() {
  std::string out;
  for (int idx = 100; idx < 132; ++idx)
    out += static_cast<char>(idx);
  return out;
}

voxos::env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto pos = vars.find(name);
    if (pos == vars.end())
      return std::nullopt;
    return pos->second;
  };
}

voxos::env_lookup no_env() {
  return env_of({});
}

std::map<std::string, std::string> full_env() {
  return {{voxos::env_vault_key, key_a_b64},
          {voxos::env_oauth_state_secret, oauth_secret},
          {voxos::env_admin_token, admin_token}};
}

/// The message of a parse that must fail with config_invalid.
std::string parse_failure(const std::string& text) {
  auto cfg = parse_config(text);
  REQUIRE_FALSE(cfg.is_ok());
  CHECK(cfg.error().code() == errc::config_invalid);
  return cfg.error().message();
}

void write_file(const fs::path& path, const std::string& text, fs::perms mode) {
  {
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out << text;
  }
  fs::permissions(path, mode, fs::perm_options::replace);
}

unsigned mode_of(const fs::path& path) {
  struct ::stat info {};
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

std::string secrets_json(const std::string& vault_key) {
  return nlohmann::json{{"vault_key_id", "k7"},
                        {"vault_key", vault_key},
                        {"oauth_state_signing_secret", oauth_secret},
                        {"admin_token", admin_token}}
    .dump();
}

node_config generate_config(const voxos::test::temp_dir& dir) {
  node_config cfg;
  cfg.data_dir = (dir.path() / "data" / "node").string();
  return cfg;
}

node_config file_config(const fs::path& path) {
  node_config cfg;
  cfg.mode = voxos::profile::production;
  cfg.secrets.source = voxos::secret_source::file;
  cfg.secrets.file = path.string();
  return cfg;
}

void check_defaults(const node_config& cfg) {
  node_config def;
  CHECK(cfg.mode == voxos::profile::embedded);
  CHECK(cfg.data_dir == def.data_dir);
  CHECK(cfg.log_level == def.log_level);
  CHECK(cfg.http.bind == def.http.bind);
  CHECK(cfg.http.port == def.http.port);
  CHECK(cfg.http.public_base_url == def.http.public_base_url);
  CHECK(cfg.http.max_body_bytes == def.http.max_body_bytes);
  CHECK(cfg.http.threads == def.http.threads);
  CHECK(voxos::held_limits_of(cfg.http).total == 30);
  CHECK(voxos::held_limits_of(cfg.http).per_tenant == 15);
  CHECK(cfg.caf.bind == def.caf.bind);
  CHECK(cfg.caf.port == def.caf.port);
  CHECK(cfg.caf.scheduler_threads == def.caf.scheduler_threads);
  CHECK(cfg.event_store.sync == def.event_store.sync);
  CHECK(cfg.event_store.max_batch_events == def.event_store.max_batch_events);
  CHECK(cfg.event_store.max_event_bytes == def.event_store.max_event_bytes);
  CHECK(cfg.event_store.deferred_sync_ms == def.event_store.deferred_sync_ms);
  CHECK(cfg.secrets.source == voxos::secret_source::generate);
  CHECK(cfg.secrets.file.empty());
  CHECK(cfg.mcp.request_timeout_ms == def.mcp.request_timeout_ms);
  CHECK(cfg.mcp.max_in_flight == def.mcp.max_in_flight);
  CHECK(cfg.mcp.max_cached_tools == def.mcp.max_cached_tools);
  CHECK(cfg.run.wave_width == def.run.wave_width);
  CHECK(cfg.run.host_keepalive_ms == def.run.host_keepalive_ms);
  CHECK(cfg.registered_urls.empty());
}

} // namespace

// -- the format ---------------------------------------------------------------

TEST_CASE("an empty document yields every default") {
  auto cfg = parse_config("{}");
  REQUIRE(cfg.is_ok());
  check_defaults(*cfg);
}

TEST_CASE("the default document names every key and parses back to the defaults") {
  auto text = voxos::default_config_json();
  auto doc = nlohmann::json::parse(text);
  for (const char* key : {"profile", "data_dir", "log_level", "http", "caf", "event_store",
                          "secrets", "mcp", "run", "registered_urls"})
    CHECK_MESSAGE(doc.contains(key), key);
  CHECK(doc["http"].size() == 12);
  CHECK(doc["http"]["console_dir"] == ""); // beside the binary
  CHECK(doc["http"]["max_header_lines"] == 100);
  CHECK(doc["http"]["max_header_bytes"] == 65536);
  CHECK(doc["http"]["threads"] == 32);
  CHECK(doc["http"]["max_held_requests"] == 0); // derived, also when threads change
  CHECK(doc["http"]["max_held_per_tenant"] == 0);
  CHECK(doc["caf"].size() == 5); // bind, port, scheduler_threads, transport, tls
  CHECK(doc["event_store"].size() == 4);
  CHECK(doc["secrets"].size() == 2);
  CHECK(doc["mcp"].size() == 12);
  CHECK(doc["run"].size() == 10);
  CHECK(doc["http"]["port"] == 7100);
  auto cfg = parse_config(text);
  REQUIRE(cfg.is_ok());
  check_defaults(*cfg);
}

TEST_CASE("a full document sets every entry") {
  auto cfg = parse_config(R"({
    "profile": "production", "data_dir": "/srv/voxos", "log_level": "debug",
    "http": {"bind": "::1", "port": 0, "public_base_url": "https://voxos.example.com/base",
             "max_body_bytes": 2048, "threads": 256},
    "caf": {"bind": "localhost", "port": 65535, "scheduler_threads": 64},
    "event_store": {"sync": false, "max_batch_events": 1, "max_event_bytes": 16777216,
                    "deferred_sync_ms": 10000},
    "secrets": {"source": "file", "file": "/etc/voxos/secrets.json"},
    "registered_urls": [{"url": "http://127.0.0.1:3001/mcp?x=1", "purpose": "mcp"},
                        {"url": "https://[::1]:8443/", "purpose": "oauth_issuer"}]
  })");
  REQUIRE_MESSAGE(cfg.is_ok(), cfg.error().message());
  CHECK(cfg->mode == voxos::profile::production);
  CHECK(cfg->data_dir == "/srv/voxos");
  CHECK(cfg->log_level == "debug");
  CHECK(cfg->http.bind == "::1");
  CHECK(cfg->http.port == 0);
  CHECK(cfg->http.public_base_url == "https://voxos.example.com/base");
  CHECK(cfg->http.max_body_bytes == 2048);
  CHECK(cfg->http.threads == 256);
  CHECK(cfg->caf.bind == "localhost");
  CHECK(cfg->caf.port == 65535);
  CHECK(cfg->caf.scheduler_threads == 64);
  CHECK_FALSE(cfg->event_store.sync);
  CHECK(cfg->event_store.max_batch_events == 1);
  CHECK(cfg->event_store.deferred_sync_ms == 10000);
  CHECK(cfg->event_store.max_event_bytes == 16777216);
  CHECK(cfg->secrets.source == voxos::secret_source::file);
  CHECK(cfg->secrets.file == "/etc/voxos/secrets.json");
  REQUIRE(cfg->registered_urls.size() == 2);
  CHECK(cfg->registered_urls[0].url == "http://127.0.0.1:3001/mcp?x=1");
  CHECK(cfg->registered_urls[0].purpose == "mcp");
  CHECK(cfg->registered_urls[1].purpose == "oauth_issuer");
}

TEST_CASE("requests held waiting are bounded below the HTTP workers, and per tenant") {
  // Derived from the workers: two kept for short requests, half for one tenant.
  const std::tuple<unsigned, unsigned, unsigned> derived[] = {
    {2, 1, 1}, {3, 1, 1}, {4, 2, 1}, {8, 6, 3}, {256, 254, 127}};
  for (auto [threads, total, per_tenant] : derived) {
    auto cfg = parse_config(R"({"http": {"threads": )" + std::to_string(threads) + "}}");
    REQUIRE(cfg.is_ok());
    CAPTURE(threads);
    CHECK(voxos::held_limits_of(cfg->http).total == total);
    CHECK(voxos::held_limits_of(cfg->http).per_tenant == per_tenant);
  }
  auto set = parse_config(
    R"({"http": {"threads": 16, "max_held_requests": 15, "max_held_per_tenant": 15}})");
  REQUIRE(set.is_ok());
  CHECK(voxos::held_limits_of(set->http).total == 15);
  CHECK(voxos::held_limits_of(set->http).per_tenant == 15);
  // Every worker held, or a tenant's share past the node's: refused.
  CHECK(parse_failure(R"({"http": {"threads": 16, "max_held_requests": 16}})")
        == "http.max_held_requests: expected an integer from 0 to 15");
  CHECK(parse_failure(R"({"http": {"max_held_requests": -1}})")
        == "http.max_held_requests: expected an integer from 0 to 31");
  auto derived_again =
    parse_config(R"({"http": {"threads": 4, "max_held_requests": 0, "max_held_per_tenant": 0}})");
  REQUIRE(derived_again.is_ok());
  CHECK(voxos::held_limits_of(derived_again->http).total == 2);
  CHECK(voxos::held_limits_of(derived_again->http).per_tenant == 1);
  CHECK(parse_failure(R"({"http": {"max_held_requests": 4, "max_held_per_tenant": 5}})")
        == "http.max_held_per_tenant: expected an integer from 0 to 4");
  CHECK(parse_failure(R"({"http": {"threads": 4, "max_held_per_tenant": 3}})")
        == "http.max_held_per_tenant: expected an integer from 0 to 2");
  CHECK(parse_failure(R"({"http": {"threads": 1}})")
        == "http.threads: expected an integer from 2 to 256");
  // A configuration built in code is kept within the same bounds.
  voxos::http_config built;
  built.threads = 4;
  built.max_held_requests = 9;
  built.max_held_per_tenant = 9;
  CHECK(voxos::held_limits_of(built).total == 3);
  CHECK(voxos::held_limits_of(built).per_tenant == 3);
}

TEST_CASE("the request head bounds default to 100 lines and 64 KiB and are kept in range") {
  auto cfg = parse_config(R"({"http": {"max_header_lines": 8, "max_header_bytes": 1048576}})");
  REQUIRE(cfg.is_ok());
  CHECK(cfg->http.max_header_lines == 8);
  CHECK(cfg->http.max_header_bytes == 1048576);
  CHECK(parse_failure(R"({"http": {"max_header_lines": 7}})")
        == "http.max_header_lines: expected an integer from 8 to 10000");
  CHECK(parse_failure(R"({"http": {"max_header_bytes": 4095}})")
        == "http.max_header_bytes: expected an integer from 4096 to 1048576");
  CHECK(parse_failure(R"({"http": {"max_header_bytes": 1048577}})")
        == "http.max_header_bytes: expected an integer from 4096 to 1048576");
}

TEST_CASE("the mcp section bounds every deadline and size") {
  auto cfg = parse_config(R"({"mcp": {"connect_timeout_ms": 100, "read_timeout_ms": 600000,
    "request_timeout_ms": 2000, "max_request_timeout_ms": 3600000, "max_body_bytes": 65536,
    "max_message_bytes": 67108864, "max_in_flight": 1, "max_queued": 65536,
    "max_resumptions": 0, "max_tool_pages": 1000, "max_cached_tools": 1, "max_input_rounds": 16}})");
  REQUIRE_MESSAGE(cfg.is_ok(), cfg.error().message());
  CHECK(cfg->mcp.connect_timeout_ms == 100);
  CHECK(cfg->mcp.request_timeout_ms == 2000);
  CHECK(cfg->mcp.max_request_timeout_ms == 3600000);
  CHECK(cfg->mcp.max_in_flight == 1);
  CHECK(cfg->mcp.max_resumptions == 0);
  CHECK(cfg->mcp.max_cached_tools == 1);
  CHECK(cfg->mcp.max_input_rounds == 16);
  CHECK(parse_failure(R"({"mcp": {"max_input_rounds": 17}})").find("mcp.max_input_rounds") == 0);
  CHECK(parse_failure(R"({"mcp": {"request_timeout_ms": 0}})").find("mcp.request_timeout_ms") == 0);
  CHECK(parse_failure(R"({"mcp": {"max_in_flight": 257}})").find("mcp.max_in_flight") == 0);
  CHECK(parse_failure(R"({"mcp": {"request_timeout_ms": 5000, "max_request_timeout_ms": 1000}})")
        == "mcp.request_timeout_ms: must not exceed mcp.max_request_timeout_ms");
  CHECK(parse_failure(R"({"mcp": {"deadline": 1}})") == "unknown key 'mcp.deadline'");
}

TEST_CASE("the run section bounds waves, calls and the host keepalive") {
  auto cfg = parse_config(R"({"run": {"wave_width": 1, "max_calls": 4096,
    "max_argument_bytes": 1024, "max_corrections": 100, "call_timeout_ms": 100,
    "max_live_runs": 1, "trace_dir": "traces", "trace_max_bytes": 1048576,
    "location_max_age_s": 86400,
    "host_keepalive_ms": 100}})");
  REQUIRE_MESSAGE(cfg.is_ok(), cfg.error().message());
  CHECK(cfg->run.wave_width == 1);
  CHECK(cfg->run.max_calls == 4096);
  CHECK(cfg->run.host_keepalive_ms == 100);
  CHECK(voxos::node_config{}.run.host_keepalive_ms == 1000);
  CHECK(parse_failure(R"({"run": {"host_keepalive_ms": 99}})").find("run.host_keepalive_ms") == 0);
  CHECK(parse_failure(R"({"run": {"host_keepalive_ms": 60001}})").find("run.host_keepalive_ms")
        == 0);
  CHECK(parse_failure(R"({"run": {"wave_width": 9}})").find("run.wave_width") == 0);
  CHECK(cfg->run.trace_max_bytes == 1048576);
  CHECK(voxos::node_config{}.run.trace_max_bytes == uint64_t{64} << 20);
  CHECK(parse_failure(R"({"run": {"trace_max_bytes": 1048575}})").find("run.trace_max_bytes") == 0);
}

TEST_CASE("an unknown key is named with its full path") {
  CHECK(parse_failure(R"({"http": {"prot": 7100}})") == "unknown key 'http.prot'");
  CHECK(parse_failure(R"({"colour": "blue"})") == "unknown key 'colour'");
  CHECK(parse_failure(R"({"event_store": {"fsync": true}})") == "unknown key 'event_store.fsync'");
  CHECK(parse_failure(R"({"registered_urls": [{"url": "http://a/", "purpose": "mcp"},
                                              {"url": "http://b/", "purpose": "mcp", "x": 1}]})")
        == "unknown key 'registered_urls[1].x'");
}

TEST_CASE("a value of the wrong type names its key and what was expected") {
  CHECK(parse_failure(R"({"http": {"port": "7100"}})")
        == "http.port: expected an integer from 0 to 65535");
  CHECK(parse_failure(R"({"http": {"port": 7100.5}})")
        == "http.port: expected an integer from 0 to 65535");
  CHECK(parse_failure(R"({"http": {"threads": true}})")
        == "http.threads: expected an integer from 2 to 256");
  CHECK(parse_failure(R"({"event_store": {"sync": "yes"}})")
        == "event_store.sync: expected true or false");
  CHECK(parse_failure(R"({"http": 7100})") == "http: expected an object");
  CHECK(parse_failure(R"({"data_dir": 5})") == "data_dir: expected a non-empty path");
  CHECK(parse_failure(R"({"registered_urls": {}})") == "registered_urls: expected an array");
  CHECK(parse_failure(R"([1, 2])") == "config: expected a JSON object at the top level");
}

TEST_CASE("an out-of-range value names its key and its bounds") {
  CHECK(parse_failure(R"({"http": {"port": 65536}})")
        == "http.port: expected an integer from 0 to 65535");
  CHECK(parse_failure(R"({"http": {"port": -1}})")
        == "http.port: expected an integer from 0 to 65535");
  CHECK(parse_failure(R"({"http": {"max_body_bytes": 1023}})")
        == "http.max_body_bytes: expected an integer from 1024 to 67108864");
  CHECK(parse_failure(R"({"http": {"max_body_bytes": 67108865}})")
        == "http.max_body_bytes: expected an integer from 1024 to 67108864");
  CHECK(parse_failure(R"({"http": {"threads": 0}})")
        == "http.threads: expected an integer from 2 to 256");
  CHECK(parse_failure(R"({"caf": {"scheduler_threads": 65}})")
        == "caf.scheduler_threads: expected an integer from 1 to 64");
  CHECK(parse_failure(R"({"event_store": {"max_batch_events": 0}})")
        == "event_store.max_batch_events: expected an integer from 1 to 65536");
  CHECK(parse_failure(R"({"event_store": {"deferred_sync_ms": 0}})")
        == "event_store.deferred_sync_ms: expected an integer from 1 to 10000");
  CHECK(parse_failure(R"({"event_store": {"deferred_sync_ms": 10001}})")
        == "event_store.deferred_sync_ms: expected an integer from 1 to 10000");
  CHECK(parse_failure(R"({"event_store": {"max_event_bytes": 16777217}})")
        == "event_store.max_event_bytes: expected an integer from 1024 to 16777216");
  CHECK(parse_failure(R"({"caf": {"port": 18446744073709551615}})")
        == "caf.port: expected an integer from 0 to 65535");
}

TEST_CASE("a value outside its allowed set is refused with the choices") {
  CHECK(parse_failure(R"({"log_level": "verbose"})")
        == R"(log_level: expected one of "error", "warn", "info", "debug")");
  CHECK(parse_failure(R"({"profile": "dev"})")
        == R"(profile: expected one of "embedded", "production")");
  CHECK(parse_failure(R"({"secrets": {"source": "vault"}})")
        == R"(secrets.source: expected one of "generate", "env", "file")");
}

TEST_CASE("a bind address must be an IP literal or localhost") {
  for (const char* good : {"127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1", "localhost"})
    CHECK_MESSAGE(parse_config(std::string{R"({"http": {"bind": ")"} + good + "\"}}").is_ok(),
                  good);
  for (const char* bad : {"", "example.com", "1.2.3", "1.2.3.256", "[::1]", "127.0.0.1:80"}) {
    auto message = parse_failure(std::string{R"({"caf": {"bind": ")"} + bad + "\"}}");
    CHECK(message == R"(caf.bind: expected an IPv4 or IPv6 address literal or "localhost")");
  }
}

TEST_CASE("the console folder is a path, and a NUL in it is refused naming the key") {
  auto cfg = parse_config(R"({"http": {"console_dir": "/srv/voxos/console"}})");
  REQUIRE(cfg.is_ok());
  CHECK(cfg->http.console_dir == "/srv/voxos/console");
  CHECK(parse_failure(R"({"http": {"console_dir": "a\u0000b"}})")
        == "http.console_dir: expected a path (no NUL characters)");
  CHECK(parse_failure(R"({"http": {"console_dir": 7}})").rfind("http.console_dir: ", 0) == 0);
}

TEST_CASE("the public base URL is an http(s) URL without user info, query or fragment") {
  for (const char* good :
       {"http://localhost:7100", "https://voxos.example.com", "HTTPS://Voxos.Example.com:8443/api/",
        "http://[::1]:7100", "http://10.0.0.5"}) {
    auto cfg = parse_config(std::string{R"({"http": {"public_base_url": ")"} + good + "\"}}");
    CHECK_MESSAGE(cfg.is_ok(), good);
  }
  for (const char* bad :
       {"", "localhost:7100", "ftp://example.com", "http://", "http://user:pw@example.com",
        "http://example.com/#top", "http://example.com/?q=1", "http://exa mple.com",
        "http://example.com:0", "http://example.com:65536", "http://[::1", "http://[nothex]/",
        "http://ex_ample.com/"}) {
    auto message = parse_failure(std::string{R"({"http": {"public_base_url": ")"} + bad + "\"}}");
    CHECK_MESSAGE(
      message.rfind("http.public_base_url: expected an absolute http or https URL", 0) == 0, bad);
    if (std::string{bad}.size() > 8)
      CHECK(message.find(bad) == std::string::npos);
  }
}

TEST_CASE("registered URLs need an absolute http(s) URL and a snake_case purpose") {
  auto doc = [](const std::string& url, const std::string& purpose) {
    return nlohmann::json{{"registered_urls", {{{"url", url}, {"purpose", purpose}}}}}.dump();
  };
  CHECK(parse_config(doc("http://127.0.0.1:3001/mcp", "mcp")).is_ok());
  CHECK(parse_config(doc("https://10.1.2.3/sse?session=1", "legacy_sse")).is_ok());
  CHECK(parse_failure(doc("/mcp", "mcp")).rfind("registered_urls[0].url: expected", 0) == 0);
  CHECK(parse_failure(doc("http://a@host/mcp", "mcp")).rfind("registered_urls[0].url:", 0) == 0);
  CHECK(parse_failure(doc("http://host/mcp#x", "mcp")).rfind("registered_urls[0].url:", 0) == 0);
  CHECK(parse_failure(doc("http://host/", ""))
        == "registered_urls[0].purpose: expected 1 to 64 "
           "characters of a-z and _");
  CHECK(parse_failure(doc("http://host/", "MCP")).rfind("registered_urls[0].purpose:", 0) == 0);
  CHECK(parse_failure(doc("http://host/", "mcp-1")).rfind("registered_urls[0].purpose:", 0) == 0);
  CHECK(parse_failure(R"({"registered_urls": [{"url": "http://host/"}]})")
        == "registered_urls[0].purpose: required");
  CHECK(parse_failure(R"({"registered_urls": ["http://host/"]})")
        == R"(registered_urls[0]: expected an object with "url" and "purpose")");
}

TEST_CASE("secrets.file is required exactly when the source is file") {
  CHECK(parse_failure(R"({"secrets": {"source": "file"}})")
        == R"(secrets.file: required (a non-empty path) when secrets.source is "file")");
  CHECK(parse_failure(R"({"secrets": {"source": "env", "file": "/etc/s.json"}})")
        == R"(secrets.file: allowed only when secrets.source is "file")");
  CHECK(parse_config(R"({"secrets": {"source": "file", "file": "s.json"}})").is_ok());
  CHECK(parse_config(R"({"secrets": {"source": "env"}})").is_ok());
}

TEST_CASE("invalid JSON is refused with its line number and without its contents") {
  auto message = parse_failure("{\n  \"http\": {\n    \"port\": 7100,,\n  }\n}\n");
  CHECK(message == "config is not valid JSON (line 3)");
  message = parse_failure("{\"secrets\": {\"source\": \"env\"}, \"token\": \"hunter2-secret");
  CHECK(message == "config is not valid JSON (line 1)");
  CHECK(message.find("hunter2") == std::string::npos);
  CHECK(parse_failure("") == "config is not valid JSON (line 1)");
  CHECK(parse_failure("{} {}") == "config is not valid JSON (line 1)");
}

TEST_CASE("a key given twice in one object is refused with its path") {
  CHECK(parse_failure(R"({"http": {"port": 1, "port": 2}})")
        == "config: duplicate key 'http.port'");
  CHECK(parse_failure(R"({"registered_urls": [{"url": "http://a/", "purpose": "x"},
                                              {"url": "http://b/", "url": "http://c/"}]})")
        == "config: duplicate key 'registered_urls[1].url'");
  // The same key in different objects is fine.
  CHECK(parse_config(R"({"http": {"port": 1}, "caf": {"port": 2}})").is_ok());
}

TEST_CASE("a config file is read and parsed, a missing one is refused by path") {
  voxos::test::temp_dir dir;
  auto path = dir.path() / "voxosd.json";
  write_file(path, R"({"http": {"port": 0}})", fs::perms::owner_read | fs::perms::owner_write);
  auto cfg = voxos::load_config_file(path.string());
  REQUIRE(cfg.is_ok());
  CHECK(cfg->http.port == 0);

  auto missing = voxos::load_config_file((dir.path() / "absent.json").string());
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.error().code() == errc::config_invalid);
  CHECK(missing.error().message().find("absent.json") != std::string::npos);

  write_file(path, R"({"http": {"prot": 0}})", fs::perms::owner_read | fs::perms::owner_write);
  auto bad = voxos::load_config_file(path.string());
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.error().message().rfind("unknown key 'http.prot'", 0) == 0);

  auto directory = voxos::load_config_file(dir.str());
  REQUIRE_FALSE(directory.is_ok());
  CHECK(directory.error().message().find("not a regular file") != std::string::npos);
}

// -- secrets ------------------------------------------------------------------

TEST_CASE("the production profile refuses generated secrets") {
  voxos::test::temp_dir dir;
  auto cfg = generate_config(dir);
  cfg.mode = voxos::profile::production;
  auto secrets = resolve_secrets(cfg, env_of(full_env()));
  REQUIRE_FALSE(secrets.is_ok());
  CHECK(secrets.error().code() == errc::config_invalid);
  CHECK(secrets.error().message().find("secrets.source") != std::string::npos);
  CHECK_FALSE(fs::exists(cfg.data_dir));
}

TEST_CASE("the env source supplies every secret") {
  node_config cfg;
  cfg.secrets.source = voxos::secret_source::env;
  auto secrets = resolve_secrets(cfg, env_of(full_env()));
  REQUIRE_MESSAGE(secrets.is_ok(), secrets.error().message());
  CHECK(secrets->vault_key_id == "k1");
  CHECK(secrets->vault_key == key_a_raw());
  CHECK(secrets->oauth_state_secret == oauth_secret);
  CHECK(secrets->admin_token == admin_token);
  CHECK_FALSE(secrets->generated);

  auto env = full_env();
  env[voxos::env_vault_key_id] = "2025-06.a";
  auto relabelled = resolve_secrets(cfg, env_of(env));
  REQUIRE(relabelled.is_ok());
  CHECK(relabelled->vault_key_id == "2025-06.a");
}

TEST_CASE("the env source names a missing variable and never echoes a secret") {
  node_config cfg;
  cfg.secrets.source = voxos::secret_source::env;
  for (const char* missing :
       {voxos::env_vault_key, voxos::env_oauth_state_secret, voxos::env_admin_token}) {
    auto env = full_env();
    env.erase(missing);
    auto secrets = resolve_secrets(cfg, env_of(env));
    REQUIRE_FALSE(secrets.is_ok());
    CHECK(secrets.error().code() == errc::config_invalid);
    const auto& message = secrets.error().message();
    CHECK(message.find(missing) != std::string::npos);
    CHECK(message.find(key_a_b64) == std::string::npos);
    CHECK(message.find(oauth_secret) == std::string::npos);
    CHECK(message.find(admin_token) == std::string::npos);
  }
  auto none = resolve_secrets(cfg, no_env());
  REQUIRE_FALSE(none.is_ok());
  for (const char* name :
       {voxos::env_vault_key, voxos::env_oauth_state_secret, voxos::env_admin_token})
    CHECK(none.error().message().find(name) != std::string::npos);
}

TEST_CASE("short or malformed env secrets are refused by name") {
  node_config cfg;
  cfg.secrets.source = voxos::secret_source::env;
  auto refused = [&](const char* name, const std::string& value) {
    auto env = full_env();
    env[name] = value;
    auto secrets = resolve_secrets(cfg, env_of(env));
    REQUIRE_FALSE(secrets.is_ok());
    CHECK(secrets.error().code() == errc::config_invalid);
    CHECK(secrets.error().message().rfind(name, 0) == 0);
    if (!value.empty())
      CHECK(secrets.error().message().find(value) == std::string::npos);
  };
  refused(voxos::env_oauth_state_secret, "too-short-oauth-secret");
  refused(voxos::env_admin_token, "vxa_short");
  refused(voxos::env_admin_token, "vxa_has a space 0123456789abcdefghijklmnop");
  refused(voxos::env_admin_token, "");
  refused(voxos::env_vault_key_id, "");
  refused(voxos::env_vault_key_id, "k/1");
  refused(voxos::env_vault_key_id, std::string(65, 'k'));
}

TEST_CASE("a malformed base64 vault key is refused") {
  node_config cfg;
  cfg.secrets.source = voxos::secret_source::env;
  const std::string bad_keys[] = {
    "not base64 at all!!",
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8",      // missing padding
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",     // non-canonical last char
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n",   // trailing newline
    "AAECAwQFBgcICQoLDA0O DxAREhMUFRYXGBkaGxwdHh8=",    // inner space
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8==",    // over-padded
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==",     // 31 bytes
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gIQ==", // 34 bytes
    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwd-h8=",     // base64url character
    "",
  };
  for (const auto& bad : bad_keys) {
    auto env = full_env();
    env[voxos::env_vault_key] = bad;
    auto secrets = resolve_secrets(cfg, env_of(env));
    REQUIRE_FALSE(secrets.is_ok());
    CHECK(secrets.error().code() == errc::config_invalid);
    CHECK(secrets.error().message()
          == "VOXOS_VAULT_KEY: expected standard base64 (with padding) of exactly 32 bytes");
  }
}

TEST_CASE("generation creates a private secrets.json once and reuses it") {
  voxos::test::temp_dir dir;
  auto cfg = generate_config(dir);
  auto first = resolve_secrets(cfg, no_env());
  REQUIRE_MESSAGE(first.is_ok(), first.error().message());
  CHECK(first->generated);
  CHECK(first->vault_key_id == "k1");
  CHECK(first->vault_key.size() == 32);
  CHECK(first->oauth_state_secret.size() == 43);
  CHECK(first->admin_token.rfind("vxa_", 0) == 0);
  CHECK(first->admin_token.size() == 4 + 43);
  CHECK(first->admin_token.find_first_of("+/=") == std::string::npos);

  // The file: mode 0600 in a 0700 directory, exactly the four entries.
  auto path = fs::path{cfg.data_dir} / "secrets.json";
  CHECK(mode_of(path) == 0600);
  CHECK(mode_of(cfg.data_dir) == 0700);
  CHECK(mode_of(fs::path{cfg.data_dir}.parent_path()) == 0700);
  std::ifstream in{path};
  auto doc = nlohmann::json::parse(in);
  CHECK(doc.size() == 4);
  CHECK(doc["vault_key_id"] == "k1");
  CHECK(doc["vault_key"].get<std::string>().size() == 44);
  CHECK(doc["oauth_state_signing_secret"] == first->oauth_state_secret);
  CHECK(doc["admin_token"] == first->admin_token);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator{cfg.data_dir})
    ++entries;
  CHECK(entries == 1); // no temporary file left behind

  // A second start reads the same secrets.
  auto second = resolve_secrets(cfg, no_env());
  REQUIRE(second.is_ok());
  CHECK_FALSE(second->generated);
  CHECK(second->vault_key_id == first->vault_key_id);
  CHECK(second->vault_key == first->vault_key);
  CHECK(second->oauth_state_secret == first->oauth_state_secret);
  CHECK(second->admin_token == first->admin_token);
}

TEST_CASE("two data directories get different generated secrets") {
  voxos::test::temp_dir dir_a;
  voxos::test::temp_dir dir_b;
  auto first = resolve_secrets(generate_config(dir_a), no_env());
  auto second = resolve_secrets(generate_config(dir_b), no_env());
  REQUIRE(first.is_ok());
  REQUIRE(second.is_ok());
  CHECK(first->vault_key != second->vault_key);
  CHECK(first->oauth_state_secret != second->oauth_state_secret);
  CHECK(first->admin_token != second->admin_token);
}

TEST_CASE("a generated secrets file readable by others is refused") {
  voxos::test::temp_dir dir;
  auto cfg = generate_config(dir);
  REQUIRE(resolve_secrets(cfg, no_env()).is_ok());
  auto path = fs::path{cfg.data_dir} / "secrets.json";
  fs::permissions(path,
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read
                    | fs::perms::others_read,
                  fs::perm_options::replace);
  auto secrets = resolve_secrets(cfg, no_env());
  REQUIRE_FALSE(secrets.is_ok());
  CHECK(secrets.error().code() == errc::config_invalid);
  CHECK(secrets.error().message().find("mode 0644") != std::string::npos);
  CHECK(secrets.error().message().find("secrets.json") != std::string::npos);
}

TEST_CASE("a generated secrets file that is a symbolic link is refused") {
  voxos::test::temp_dir dir;
  auto cfg = generate_config(dir);
  fs::create_directories(cfg.data_dir);
  auto target = dir.path() / "elsewhere.json";
  write_file(target, secrets_json(key_a_b64), fs::perms::owner_read | fs::perms::owner_write);
  fs::create_symlink(target, fs::path{cfg.data_dir} / "secrets.json");
  auto secrets = resolve_secrets(cfg, no_env());
  REQUIRE_FALSE(secrets.is_ok());
  CHECK(secrets.error().message().find("not a regular file") != std::string::npos);
}

TEST_CASE("an environment variable overrides one generated entry") {
  voxos::test::temp_dir dir;
  auto cfg = generate_config(dir);
  auto generated = resolve_secrets(cfg, no_env());
  REQUIRE(generated.is_ok());
  auto overridden = resolve_secrets(cfg, env_of({{voxos::env_vault_key, key_b_b64}}));
  REQUIRE(overridden.is_ok());
  CHECK(overridden->vault_key == key_b_raw());
  CHECK(overridden->vault_key_id == generated->vault_key_id);
  CHECK(overridden->oauth_state_secret == generated->oauth_state_secret);
  CHECK(overridden->admin_token == generated->admin_token);
  // A malformed override is refused, naming the variable.
  auto bad = resolve_secrets(cfg, env_of({{voxos::env_vault_key, "AAAA"}}));
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.error().message().rfind(voxos::env_vault_key, 0) == 0);
}

TEST_CASE("a file source reads a private secrets file") {
  voxos::test::temp_dir dir;
  auto path = dir.path() / "secrets.json";
  write_file(path, secrets_json(key_a_b64), fs::perms::owner_read);
  auto secrets = resolve_secrets(file_config(path), no_env());
  REQUIRE_MESSAGE(secrets.is_ok(), secrets.error().message());
  CHECK(secrets->vault_key_id == "k7");
  CHECK(secrets->vault_key == key_a_raw());
  CHECK(secrets->oauth_state_secret == oauth_secret);
  CHECK(secrets->admin_token == admin_token);
  CHECK_FALSE(secrets->generated);

  auto overridden = resolve_secrets(file_config(path), env_of({{voxos::env_vault_key_id, "k8"}}));
  REQUIRE(overridden.is_ok());
  CHECK(overridden->vault_key_id == "k8");
}

TEST_CASE("a file source refuses a file readable by others") {
  voxos::test::temp_dir dir;
  auto path = dir.path() / "secrets.json";
  write_file(path, secrets_json(key_a_b64),
             fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read
               | fs::perms::others_read);
  auto secrets = resolve_secrets(file_config(path), env_of(full_env()));
  REQUIRE_FALSE(secrets.is_ok());
  CHECK(secrets.error().code() == errc::config_invalid);
  CHECK(secrets.error().message().find("mode 0644") != std::string::npos);
}

TEST_CASE("a file source refuses malformed contents without quoting them") {
  voxos::test::temp_dir dir;
  auto path = dir.path() / "secrets.json";
  auto refused = [&](const std::string& text) {
    write_file(path, text, fs::perms::owner_read | fs::perms::owner_write);
    auto secrets = resolve_secrets(file_config(path), no_env());
    REQUIRE_FALSE(secrets.is_ok());
    CHECK(secrets.error().code() == errc::config_invalid);
    const auto& message = secrets.error().message();
    CHECK(message.find(path.string()) != std::string::npos);
    CHECK(message.find(oauth_secret) == std::string::npos);
    CHECK(message.find(admin_token) == std::string::npos);
    CHECK(message.find(key_a_b64) == std::string::npos);
    return message;
  };
  CHECK(refused(secrets_json("AAAA")).find("vault_key: expected standard base64")
        != std::string::npos);
  CHECK(refused(std::string{"{\"admin_token\": \""} + admin_token + "\",")
          .find("is not valid JSON (line 1)")
        != std::string::npos);
  auto doc = nlohmann::json::parse(secrets_json(key_a_b64));
  doc["extra"] = "x";
  CHECK(refused(doc.dump()).find("unknown key 'extra'") != std::string::npos);
  doc.erase("extra");
  doc.erase("admin_token");
  CHECK(refused(doc.dump()).find("admin_token (or VOXOS_ADMIN_TOKEN)") != std::string::npos);
  doc["admin_token"] = 42;
  CHECK(refused(doc.dump()).find("admin_token: expected a string") != std::string::npos);

  auto missing = resolve_secrets(file_config(dir.path() / "absent.json"), no_env());
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.error().message().find("does not exist") != std::string::npos);
}

// -- retired vault keys ----------------------------------------------------------

TEST_CASE("retired vault keys come from the environment or the secrets file") {
  node_config cfg;
  cfg.secrets.source = voxos::secret_source::env;
  auto env = full_env();
  env[voxos::env_vault_key_id] = "k3";
  env[voxos::env_vault_retired_keys] = std::string{"k2:"} + key_b_b64 + ",k1:" + key_a_b64;
  auto secrets = resolve_secrets(cfg, env_of(env));
  REQUIRE_MESSAGE(secrets.is_ok(), secrets.error().message());
  REQUIRE(secrets->retired_vault_keys.size() == 2);
  CHECK(secrets->retired_vault_keys[0].key_id == "k2");
  CHECK(secrets->retired_vault_keys[0].key == key_b_raw());
  CHECK(secrets->retired_vault_keys[1].key_id == "k1");
  CHECK(secrets->retired_vault_keys[1].key == key_a_raw());
  // Unset or empty: none.
  env[voxos::env_vault_retired_keys] = "";
  auto none = resolve_secrets(cfg, env_of(env));
  REQUIRE(none.is_ok());
  CHECK(none->retired_vault_keys.empty());

  // The secrets file's entry, and the variable overriding it.
  voxos::test::temp_dir dir;
  auto path = dir.path() / "secrets.json";
  auto doc = nlohmann::json::parse(secrets_json(key_a_b64)); // active: k7
  doc["vault_retired_keys"] = std::string{"k6:"} + key_b_b64;
  write_file(path, doc.dump(), fs::perms::owner_read);
  auto from_file = resolve_secrets(file_config(path), no_env());
  REQUIRE_MESSAGE(from_file.is_ok(), from_file.error().message());
  REQUIRE(from_file->retired_vault_keys.size() == 1);
  CHECK(from_file->retired_vault_keys[0].key_id == "k6");
  CHECK(from_file->retired_vault_keys[0].key == key_b_raw());
  auto overridden = resolve_secrets(
    file_config(path), env_of({{voxos::env_vault_retired_keys, std::string{"k5:"} + key_b_b64}}));
  REQUIRE(overridden.is_ok());
  REQUIRE(overridden->retired_vault_keys.size() == 1);
  CHECK(overridden->retired_vault_keys[0].key_id == "k5");
}

TEST_CASE("malformed retired vault keys are refused by entry or key id and never quoted") {
  node_config cfg;
  cfg.secrets.source = voxos::secret_source::env;
  auto refused = [&](const std::string& value) {
    auto env = full_env();
    env[voxos::env_vault_key_id] = "k3";
    env[voxos::env_vault_retired_keys] = value;
    auto secrets = resolve_secrets(cfg, env_of(env));
    REQUIRE_FALSE(secrets.is_ok());
    CHECK(secrets.error().code() == errc::config_invalid);
    const auto& message = secrets.error().message();
    CHECK(message.rfind(voxos::env_vault_retired_keys, 0) == 0);
    CHECK(message.find(key_a_b64) == std::string::npos);
    CHECK(message.find(key_b_b64) == std::string::npos);
    CHECK(message.find("AAEC") == std::string::npos);
    return message;
  };
  const std::string a = key_a_b64, b = key_b_b64;
  // An entry without its id (a bare key), an empty entry, a bad id.
  CHECK(refused(a).find("entry 1: expected KEY_ID:KEY") != std::string::npos);
  CHECK(refused("k1:" + a + ",").find("entry 2: expected KEY_ID:KEY") != std::string::npos);
  CHECK(refused("k1:" + a + ",,k2:" + b).find("entry 2: expected") != std::string::npos);
  CHECK(refused("k 1:" + a).find("entry 1: expected") != std::string::npos);
  CHECK(refused(":" + a).find("entry 1: expected") != std::string::npos);
  // A short key, a key that is not base64, an empty key.
  CHECK(refused("k1:AAECAwQF")
          .find("key 'k1': expected standard base64 (with padding) of exactly "
                "32 bytes")
        != std::string::npos);
  CHECK(refused("k1:" + a + ",k2:not base64!").find("key 'k2': expected standard base64")
        != std::string::npos);
  CHECK(refused("k1:").find("key 'k1': expected") != std::string::npos);
  // Duplicate ids, the active key's id, too many keys.
  CHECK(refused("k1:" + a + ",k1:" + b).find("key id 'k1' is listed twice") != std::string::npos);
  CHECK(refused("k1:" + a + ",k1:" + a).find("listed twice") != std::string::npos);
  CHECK(refused("k3:" + b).find("key id 'k3' is the active key's id") != std::string::npos);
  std::string many;
  for (int idx = 0; idx < 17; ++idx)
    many += (idx == 0 ? "" : ",") + std::string{"r"} + std::to_string(idx) + ":" + a;
  CHECK(refused(many).find("at most 16 retired keys") != std::string::npos);

  // From the secrets file, the message names the file's entry.
  voxos::test::temp_dir dir;
  auto path = dir.path() / "secrets.json";
  auto doc = nlohmann::json::parse(secrets_json(key_a_b64));
  doc["vault_retired_keys"] = "k6:" + a.substr(0, 20);
  write_file(path, doc.dump(), fs::perms::owner_read);
  auto from_file = resolve_secrets(file_config(path), no_env());
  REQUIRE_FALSE(from_file.is_ok());
  CHECK(from_file.error().message().find("vault_retired_keys: key 'k6': expected")
        != std::string::npos);
  CHECK(from_file.error().message().find(a.substr(0, 20)) == std::string::npos);
}

TEST_CASE("the process environment is an env_lookup") {
  auto env = voxos::process_env();
  CHECK(env("PATH").has_value());
  CHECK_FALSE(env("VOXOS_TEST_SURELY_UNSET_VARIABLE_7f3a").has_value());
}
