// Node configuration: one JSON file format with a default for every entry,
// validated at start. The format is documented in docs/config.md; every bound
// the product document leaves open is a named entry there with its default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "messages/status.hpp"

namespace voxos {

/// `embedded`: the defaults `scripts/run` boots on; missing secrets are
/// generated once into the data directory. `production`: secrets must come
/// from a named source, or the node refuses to start.
enum class profile { embedded, production };

struct http_config {
  std::string bind = "127.0.0.1";
  uint16_t port = 7100; ///< 0 picks a free port
  std::string public_base_url = "http://localhost:7100";
  /// The private broker route's own listener (brokered MCP servers exchange
  /// assertions there for their provider tokens). Loopback by default: never
  /// expose it through untrusted ingress. Port 0 picks a free one.
  std::string broker_bind = "127.0.0.1";
  uint16_t broker_port = 7102;
  std::size_t max_body_bytes = 1024 * 1024; ///< 1 MiB; 1 KiB .. 64 MiB
  /// 2 .. 256. Mostly blocked, so cheap: a run its host drives over HTTP
  /// holds up to two while it waits (its activity stream, a round).
  unsigned threads = 32;
  /// Requests that may hold a worker thread while they wait (activity
  /// streams, tool-call rounds), so that the other workers stay free for
  /// short requests (health, admin, configuration). 0: threads - 2, at least
  /// 1 (30 on the defaults); else 1 .. threads - 1. Past it: unavailable (503).
  unsigned max_held_requests = 0;
  /// Of those, at most this many for one tenant, so that no tenant holds them
  /// all. 0: half of max_held_requests, at least 1 (15 on the defaults); else
  /// 1 .. max_held_requests. Past it: too_many_requests (429).
  unsigned max_held_per_tenant = 0;
  /// A request head's bounds: header lines (8 .. 10,000) and bytes of the
  /// whole head (4 KiB .. 1 MiB). Past them 431 and the connection closed
  /// before the rest is read.
  std::size_t max_header_lines = 100;
  std::size_t max_header_bytes = 64 * 1024; ///< 64 KiB
  /// The web console's built files, served at `/` and `/console/`. Empty: the
  /// `console` folder beside the voxosd binary (where the build puts it); a
  /// missing folder leaves the console off (logged) and the API unchanged.
  std::string console_dir;
};

/// The bounds on held requests a node runs with.
struct held_limits {
  unsigned total = 0;
  unsigned per_tenant = 0;
};

/// `http`'s held-request bounds: derived where 0, and kept within their
/// ranges (a configuration built in code is not parsed).
held_limits held_limits_of(const http_config& http);

/// How the run host is published on the CAF network. `plain`: caf::io, no
/// encryption, no peer authentication (loopback and trusted networks).
/// `tls`: caf::openssl with certificates on both sides; a peer without a
/// certificate that chains to `caf.tls.ca_file` is refused in the handshake.
enum class caf_transport { plain, tls };

/// The CAF endpoint's TLS files (PEM), all required with caf_transport::tls
/// and all empty otherwise. Paths are relative to the working directory.
/// CAF reads the three PEM files again for every accepted connection.
struct caf_tls_config {
  std::string certificate; ///< the node's certificate, optionally followed by its chain
  std::string key;         ///< its private key; private to its owner (mode 0600 or stricter)
  std::string ca_file;     ///< the CA certificate(s) a peer's certificate must chain to
  /// Optional: a file holding the key's passphrase (an encrypted key needs
  /// one); private to its owner; one trailing newline is ignored.
  std::string key_passphrase_file;
};

struct caf_config {
  std::string bind = "127.0.0.1";
  uint16_t port = 7101;           ///< 0 picks a free port
  unsigned scheduler_threads = 2; ///< 1 .. 64; the machine has 2 cores
  caf_transport transport = caf_transport::plain;
  caf_tls_config tls;
};

struct event_store_config {
  bool sync = true;                    ///< fsync the WAL before acknowledging
  std::size_t max_batch_events = 4096; ///< appends per group commit; 1 .. 65536
  /// One event's data; 1 KiB .. 16 MiB. 4 MiB holds a run snapshot of
  /// several thousand tools (2,000 tools persist as about 430 KB).
  std::size_t max_event_bytes = 4 * 1024 * 1024;
  /// The longest a record of what already happened (a tool round's
  /// activity) stays written but not yet synced, when no synced write comes
  /// first; 1 .. 10,000 ms.
  uint32_t deferred_sync_ms = 100;
};

/// The MCP client: bounds of every connection to a remote MCP server. Times
/// in milliseconds. The transport enforces connect, read and a hard total
/// deadline per HTTP exchange; the session enforces the request deadline
/// (and cancels the request on the server when it passes). Keepalive
/// comments and progress notifications never extend either.
struct mcp_config {
  uint32_t connect_timeout_ms = 5'000;       ///< per TCP/TLS connect; 100 .. 60,000
  uint32_t read_timeout_ms = 30'000;         ///< longest silence on a socket; 100 .. 600,000
  uint32_t request_timeout_ms = 60'000;      ///< default per request; 100 .. 600,000
  uint32_t max_request_timeout_ms = 600'000; ///< cap on any caller's deadline; 100 .. 3,600,000
  std::size_t max_body_bytes = std::size_t{16} << 20;   ///< one answer; 64 KiB .. 256 MiB
  std::size_t max_message_bytes = std::size_t{8} << 20; ///< one SSE event; 64 KiB .. 64 MiB
  unsigned max_in_flight = 16;     ///< concurrent requests per connection; 1 .. 256
  unsigned max_queued = 1024;      ///< requests waiting for a slot; 1 .. 65,536
  unsigned max_resumptions = 5;    ///< Last-Event-ID reconnects per request; 0 .. 100
  unsigned max_tool_pages = 50;    ///< tools/list pages per discovery; 1 .. 1,000
  unsigned max_cached_tools = 512; ///< discovery cache per server; 1 .. 100,000
  /// 2026-07-28: times one request is sent again with the input its server
  /// asked for (resultType "input_required"); 0 .. 16
  unsigned max_input_rounds = 4;
};

/// Runs: the bounds of tool rounds (actors/run/tool_round.hpp) and of the
/// runs a tenant keeps live.
struct run_config {
  unsigned wave_width = 8;  ///< read-only calls in flight together; 1 .. 8 (waves of at most eight)
  unsigned max_calls = 128; ///< tool calls in one model response; 1 .. 4,096
  std::size_t max_argument_bytes = std::size_t{1} << 20; ///< one call's arguments; 1 KiB .. 16 MiB
  unsigned max_corrections = 3;      ///< invalid-argument rounds per tool per run; 1 .. 100
  uint32_t call_timeout_ms = 60'000; ///< one tool call's deadline; 100 .. 600,000
  unsigned max_live_runs = 10'000;   ///< runs one tenant keeps live; 1 .. 1,000,000
  /// Where runs record their traces (actors/run/trace.hpp); "" records none.
  std::string trace_dir;
  /// Bytes one run's trace may hold; a line past it ends the trace with a
  /// "truncated" line. 1 MiB .. 4 GiB (a 50 MB argument is not written
  /// whole into a trace by default).
  uint64_t trace_max_bytes = uint64_t{64} << 20;
  /// A shared location older than this is not fresh and not used; 1 .. 86,400.
  unsigned location_max_age_s = 600;
  /// A host holding a run's activity stream (`?hold=1`) gets a keepalive at
  /// least this often; a failed write means it went away and the run is
  /// cancelled, so that takes at most about twice this. 100 .. 60,000.
  uint32_t host_keepalive_ms = 1'000;
};

/// Bounds of the internal tools (actors/tools/).
struct tools_config {
  std::size_t pending_candidates =
    1'000; ///< knowledge candidates awaiting review, per tenant; 1 .. 100,000
  std::size_t memories_per_agent = 5'000; ///< active memories of one agent; 1 .. 1,000,000
  std::size_t skills = 1'000;             ///< skills of one tenant, archived included; 1 .. 100,000
  std::size_t open_plans_per_agent = 200; ///< open task plans of one agent; 1 .. 100,000
  /// Bytes of context read_agent_history returns around one citation; 1 KiB .. 1 MiB.
  std::size_t history_context_bytes = 8 * 1024;
  /// Child runs one run may queue with delegate_agent_task; 1 .. 1,000.
  std::size_t delegations_per_run = 16;
  /// Bytes of the parent chat's recent transcript a `summary` child run
  /// begins with; 1 KiB .. 64 KiB.
  std::size_t delegation_summary_bytes = 8 * 1024;
};

/// Durable work (actors/work/, actors/schedule/): the queue agent hosts lease
/// scheduled turns and child runs from, and the schedules that fill it.
struct work_config {
  /// How long a lease lasts without a heartbeat, in ms; 1,000 .. 3,600,000.
  uint32_t lease_ms = 30'000;
  /// Leases one item gets before it is recorded failed; 1 .. 100.
  uint32_t max_attempts = 5;
  /// An item whose lease expired, or that failed with a retry, waits this
  /// long before it is offered again, in ms; 0 .. 3,600,000.
  uint32_t retry_delay_ms = 1'000;
  /// Items one tenant may have queued and not settled; 1 .. 1,000,000.
  std::size_t max_pending = 100'000;
  /// The longest an HTTP lease request waits for work, in ms; 0 .. 120,000.
  uint32_t max_lease_wait_ms = 30'000;
  /// The shortest interval of a repeating schedule, in seconds; 1 .. 86,400.
  uint32_t min_schedule_interval_s = 60;
  /// Schedules one tenant may hold; 1 .. 1,000,000.
  std::size_t max_schedules = 10'000;
};

/// Where secrets come from. `generate` (embedded profile only): read from, or
/// created once in, `<data_dir>/secrets.json` (mode 0600). `env`: the
/// environment variables below, all required. `file`: a JSON file of the same
/// shape as the generated one, which must not be readable by group or others.
enum class secret_source { generate, env, file };

struct secrets_config {
  secret_source source = secret_source::generate;
  std::string file; ///< with source == file
};

struct node_config {
  profile mode = profile::embedded;
  std::string data_dir = "var";   ///< relative to the working directory
  std::string log_level = "info"; ///< error | warn | info | debug
  http_config http;
  caf_config caf;
  event_store_config event_store;
  secrets_config secrets;
  mcp_config mcp;
  run_config run;
  tools_config tools;
  work_config work;
  /// Exact URLs allowed despite the loopback/private address policy, with the
  /// purpose they are registered for (e.g. "mcp").
  struct registered_url {
    std::string url;
    std::string purpose;
  };
  std::vector<registered_url> registered_urls;
};

/// Parses and validates a configuration document (JSON text). Unknown keys,
/// keys repeated within one object, wrong types and out-of-range values fail
/// with errc::config_invalid and a message naming the key path
/// ("unknown key 'http.prot'", "http.port: expected an integer from 0 to
/// 65535"), never a value. Malformed JSON gives "config is not valid JSON
/// (line N)" without quoting the text.
result<node_config> parse_config(const std::string& json_text);

/// Reads `path` and parses it; a missing or unreadable file is config_invalid.
result<node_config> load_config_file(const std::string& path);

/// The default configuration as a JSON document (what `voxosd --print-config`
/// shows): every key, 2-space indented, no trailing newline; parse_config
/// accepts it and yields the defaults.
std::string default_config_json();

/// What check_caf_tls hands the node: the key's passphrase (empty without
/// caf.tls.key_passphrase_file; wiped on destruction; never logged), and the
/// paths CAF is to read the certificate, key and CA file from. CAF opens them
/// again for every connection, so they are pinned: sealed in-memory copies
/// (memfd, "/proc/self/fd/N", closed on destruction) of exactly the bytes
/// that were checked. A file changed or removed after start then changes
/// nothing (without the pin, CAF aborts the process when the key cannot be
/// read). Where memfd is unavailable the configured paths are used.
struct caf_tls_secret {
  std::string key_passphrase;
  std::string certificate_path;
  std::string key_path;
  std::string ca_path;
  std::vector<int> pinned_fds;
  caf_tls_secret() = default;
  caf_tls_secret(caf_tls_secret&& other) noexcept;
  caf_tls_secret& operator=(caf_tls_secret&& other) noexcept;
  caf_tls_secret(const caf_tls_secret&) = delete;
  caf_tls_secret& operator=(const caf_tls_secret&) = delete;
  ~caf_tls_secret();
};

/// Checks the CAF endpoint's TLS files before the node starts anything (a
/// no-op answering an empty secret for caf_transport::plain). Each of
/// caf.tls.certificate, caf.tls.key and caf.tls.ca_file must be a readable
/// regular file of at most 1 MiB holding what its name says in PEM; the key
/// and the passphrase file must give group and others no access; the key must
/// open (with the passphrase if one is configured, never prompting) and match
/// the certificate, which must not have expired. Failures are config_invalid
/// naming the key and its path, never the files' contents. Reads the file
/// system; call it at start.
result<caf_tls_secret> check_caf_tls(const caf_config& cfg);

/// Environment variables that override or supply secrets.
inline constexpr const char* env_vault_key = "VOXOS_VAULT_KEY";       ///< base64 of 32 bytes
inline constexpr const char* env_vault_key_id = "VOXOS_VAULT_KEY_ID"; ///< default "k1"
/// Optional: "id:base64,id:base64", the keys that sealed before a rotation.
inline constexpr const char* env_vault_retired_keys = "VOXOS_VAULT_RETIRED_KEYS";
inline constexpr const char* env_oauth_state_secret = "MCP_OAUTH_STATE_SIGNING_SECRET";
inline constexpr const char* env_admin_token = "VOXOS_ADMIN_TOKEN";

/// A vault key that no longer seals: it opens the values sealed under its id
/// until the node has resealed them under the active key (storage/vault_upkeep.hpp).
struct retired_vault_key {
  std::string key_id;
  std::string key; ///< 32 raw bytes
};

/// Retired vault keys one node may hold.
inline constexpr std::size_t max_retired_vault_keys = 16;

/// The node's secrets, resolved at start. Never logged, never stored in RocksDB.
struct node_secrets {
  std::string vault_key_id;
  std::string vault_key; ///< 32 raw bytes; the active key: seals everything new
  /// Keys that only open: ids distinct from each other and from vault_key_id.
  std::vector<retired_vault_key> retired_vault_keys;
  std::string oauth_state_secret; ///< at least 32 bytes
  std::string admin_token;        ///< at least 32 characters
  bool generated = false;         ///< true if this start created the secrets file
};

using env_lookup = std::function<std::optional<std::string>(const std::string&)>;

/// The process environment as an env_lookup.
env_lookup process_env();

/// Resolves secrets per `cfg.secrets`, with environment variables overriding
/// the generated or file source entry by entry. `generate` in the production
/// profile, a missing env variable, a malformed key, or a secrets file readable
/// by others fail with config_invalid naming the variable or key, never a
/// value. Retired vault keys (VOXOS_VAULT_RETIRED_KEYS, file entry
/// vault_retired_keys; optional, empty for none) are "id:base64" entries
/// joined by ',' with no spaces; a malformed entry (named by its position), a
/// key that is not base64 of 32 bytes, an id listed twice or the active key's
/// id, or more than max_retired_vault_keys entries fail with config_invalid. `generate` creates `cfg.data_dir` (mode 0700) and the file if
/// absent; a file-system failure there is config_invalid, a failing random
/// generator internal. The generated file is never replaced once written.
result<node_secrets> resolve_secrets(const node_config& cfg, const env_lookup& env);

} // namespace voxos
