// The MCP server's state between requests: 2025-11-25 sessions and their
// resumable streams, the open 2026-07-28 listen streams notifications go to,
// and the client's answers a 2025-11-25 call waits for. Part of mcp_server;
// CAF-free.
//
// Threading: every member may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "messages/status.hpp"
#include "transport/mcp_event_stream.hpp"

namespace voxos {

/// How often a wait on behalf of a client (an open stream, a call waiting
/// for input) looks whether the client is still there.
inline constexpr std::chrono::milliseconds mcp_liveness_slice{250};

/// The messages waiting for one open 2026-07-28 listen stream, each a
/// JSON-RPC text. Bounded:
/// a push past `backlog` closes the stream instead (the client reconnects
/// and re-reads what changed), so a slow reader cannot grow the server.
///
///   open --close() / push past backlog--> closed
class mcp_stream {
public:
  explicit mcp_stream(std::size_t backlog) : backlog_(backlog) {}

  /// Queues `message`; false if the stream is closed (or just closed).
  bool push(std::string message);
  /// Waits up to `wait` for messages, or until closed; takes all queued.
  std::vector<std::string> take(std::chrono::milliseconds wait);
  void close();
  bool closed() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::string> queue_;
  std::size_t backlog_;
  bool closed_ = false;
};

/// What a 2026-07-28 subscriptions/listen stream asked for.
struct mcp_listen_filter {
  bool tools = false;
  bool prompts = false;
  bool resources = false;
  std::set<std::string> resource_uris;
  std::set<std::string> task_ids; ///< notifications/tasks of these (the listener's own)
};

/// A 2025-11-25 session: the caller who opened it, what its client
/// declared, what it listens to, and its resumable streams (its calls' POST
/// streams and its GET stream, numbered from 1). Created by initialize,
/// ended by DELETE, by `session_idle` without a request, or by stop().
class mcp_session {
public:
  mcp_session(std::string id, std::string principal, std::string version,
              nlohmann::json capabilities, nlohmann::json client_info)
      : id_(std::move(id)), principal_(std::move(principal)), version_(std::move(version)),
        capabilities_(std::move(capabilities)), client_info_(std::move(client_info)) {}

  const std::string& id() const noexcept { return id_; }
  const std::string& principal() const noexcept { return principal_; }
  const std::string& version() const noexcept { return version_; }
  const nlohmann::json& capabilities() const noexcept { return capabilities_; }
  const nlohmann::json& client_info() const noexcept { return client_info_; }

  /// logging/setLevel's level (0 debug ... 7 emergency); nullopt: none set.
  std::optional<int> log_level() const;
  void set_log_level(int level);
  void subscribe(const std::string& uri);
  void unsubscribe(const std::string& uri);
  bool subscribed(const std::string& uri) const;

  /// A new stream of this session (a call's), keeping `replay` events.
  std::shared_ptr<mcp_event_stream> open_stream(std::size_t replay);
  /// A new GET stream, the one before dropped; null while the one before
  /// has a reader (a second GET stream is refused), or once ended.
  std::shared_ptr<mcp_event_stream> open_get_stream(std::size_t replay);
  /// The session's stream `number`, or null (never opened, read to its end,
  /// dropped, or the session ended).
  std::shared_ptr<mcp_event_stream> stream(uint64_t number) const;
  /// Forgets stream `number`: its last event was read.
  void forget_stream(uint64_t number);
  /// Keeps at most `max` streams that nobody reads: the oldest beyond are
  /// closed and forgotten.
  void trim_detached(std::size_t max);
  /// Sends a notification on the GET stream, if there is one (kept for a
  /// resuming reader while none reads).
  void notify(const std::string& message);
  /// Ends the session: closes its streams.
  void end();
  bool ended() const;

private:
  std::string id_;
  std::string principal_;
  std::string version_;
  nlohmann::json capabilities_;
  nlohmann::json client_info_;
  mutable std::mutex mutex_;
  std::optional<int> log_level_;
  std::set<std::string> subscriptions_;
  std::map<uint64_t, std::shared_ptr<mcp_event_stream>> streams_;
  uint64_t get_stream_ = 0; ///< the GET stream's number; 0: none
  uint64_t last_stream_ = 0;
  bool ended_ = false;
};

/// The live sessions, by id.
class mcp_session_table {
public:
  mcp_session_table(std::size_t max_sessions, std::size_t max_per_principal,
                    std::chrono::milliseconds idle)
      : max_sessions_(max_sessions), max_per_principal_(max_per_principal), idle_(idle) {}

  /// A new session with a fresh id (128 random bits, base64url: visible
  /// ASCII). Errors: unavailable when max_sessions are live, or
  /// max_per_principal of this principal's.
  result<std::shared_ptr<mcp_session>> open(std::string principal, std::string version,
                                            nlohmann::json capabilities,
                                            nlohmann::json client_info);
  /// The live session `id` of `principal`, its idle clock restarted; null if
  /// unknown, expired, ended, or another principal's.
  std::shared_ptr<mcp_session> find(std::string_view id, std::string_view principal);
  /// Ends the session (false if find() would not return it).
  bool end(std::string_view id, std::string_view principal);
  void end_all();
  std::vector<std::shared_ptr<mcp_session>> live();
  std::size_t size() const;

private:
  struct slot {
    std::shared_ptr<mcp_session> session;
    std::chrono::steady_clock::time_point last_used;
  };
  /// Ends sessions idle past `idle_`; mutex_ held.
  void sweep(std::chrono::steady_clock::time_point now);

  mutable std::mutex mutex_;
  std::map<std::string, slot, std::less<>> sessions_;
  std::size_t max_sessions_;
  std::size_t max_per_principal_;
  std::chrono::milliseconds idle_;
};

/// The client's answers to the requests 2025-11-25 calls sent it, by the
/// request id the server chose.
class mcp_pending_inputs {
public:
  /// The client's answer: a result, or an error message.
  struct answer {
    bool ok = false;
    nlohmann::json result;
    std::string error;
  };

  /// A fresh request id for `session_id`, awaited from now on.
  std::string expect(const std::string& session_id);
  /// Delivers the answer to `id` if it is awaited in `session_id`; false otherwise.
  bool deliver(const std::string& session_id, const std::string& id, answer value);
  /// Waits up to `wait` for the answers to all `ids` (fewer on timeout,
  /// stop, or `gone()`), each taken once; the ids are then forgotten.
  std::map<std::string, answer> await(const std::vector<std::string>& ids,
                                      std::chrono::milliseconds wait,
                                      const std::function<bool()>& gone);
  /// Wakes every wait, which then returns what it has.
  void stop();

private:
  struct slot {
    std::string session_id;
    std::optional<answer> value;
  };
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<std::string, slot> slots_;
  uint64_t next_ = 0;
  bool stopped_ = false;
};

} // namespace voxos
