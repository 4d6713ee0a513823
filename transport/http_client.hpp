// HTTP client for one origin (scheme, host, port) over cpp-httplib, as the MCP
// Streamable HTTP client needs it: POST with a streamed response body, the GET
// SSE stream, the session DELETE. CAF-free; errors are status values and no
// httplib exception leaves this file.
//
// Addresses are pinned: the client connects only to the addresses given to
// create(), which must pass url_policy::check_resolved for the URL (create()
// checks again), and never resolves the host name itself. The URL's host is
// still sent as Host (and as SNI for https). See url_policy.hpp.
//
// Per request, in order:
//   connect      bounded by min(connect_timeout, remaining deadline); on a
//                connection failure the next pinned address is tried
//   headers      a 3xx is refused (never followed) before its body is read
//   body         streamed to on_chunk; checked against max_body_bytes, the
//                total deadline and cancel() at every chunk
// Bounds on time: the total deadline is checked each time bytes arrive, so a
// server trickling bytes (SSE keepalive comments) is cut off at the deadline
// (plus at most one read). A server sending nothing at all is bounded by the
// read timeout, which is set to min(read_timeout, remaining deadline) when a
// request starts: in the worst case (bytes until just before the deadline,
// then silence) a request ends by deadline + that read timeout.
//
// Errors (messages never contain the URL, path or header values):
//   out_of_range    create(): an option outside its bounds
//   forbidden       create(): addresses the policy refuses; a 3xx answer
//                   ("redirects are refused")
//   body_too_large  the body (after decompression) exceeds max_body_bytes
//   unavailable     "deadline exceeded"; "cancelled" (cancel() or on_chunk
//                   returned false); a connection, read or TLS failure,
//                   named by httplib ("http request failed: ...")
//
// Threading: one request at a time per client (post/get/del from one thread,
// or serialised by the caller). cancel() may be called from any thread at
// any time; it may block until a connect in progress finishes (at most the
// connect timeout), because httplib holds its socket lock while connecting.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/status.hpp"
#include "transport/url_policy.hpp"

namespace httplib {
class ClientImpl;
} // namespace httplib

namespace voxos {

/// Request headers, in order. Names as sent.
using http_header_list = std::vector<std::pair<std::string, std::string>>;

/// `name` lower-cased: header names compare case-insensitively (RFC 9110),
/// so they are compared, stored and looked up in this form.
std::string header_name_key(std::string_view name);

/// Whether `text` is an HTTP token (RFC 9110, what a header name is): one or
/// more of ALPHA, DIGIT and !#$%&'*+-.^_`|~.
bool is_http_token(std::string_view text);

/// What a request answered, besides the streamed body.
struct http_response {
  int status = 0;
  /// Response headers, names lowercased.
  std::multimap<std::string, std::string> headers;

  /// The first value of header `name` (any case), or "" if absent.
  std::string header(std::string_view name) const;
};

class http_client {
public:
  struct options {
    /// TCP (and TLS) connect, per attempt. Default 5 s, at most 60 s.
    std::chrono::milliseconds connect_timeout{5'000};
    /// Longest wait for any one read or write (inactivity). Default 30 s,
    /// at most 10 min.
    std::chrono::milliseconds read_timeout{30'000};
    /// Whole request, from the call to the last body byte. Default 60 s, at
    /// most 24 h (a long-lived GET SSE stream uses its own client with a
    /// longer deadline).
    std::chrono::milliseconds total_deadline{60'000};
    /// Largest response body, counted after decompression. Default 16 MiB,
    /// at most 1 GiB.
    std::size_t max_body_bytes = std::size_t{16} << 20;
    /// TCP_NODELAY: without it httplib waits out delayed ACKs (TOOLCHAIN.md).
    bool tcp_nodelay = true;
    /// Reuse the connection between requests.
    bool keep_alive = true;
  };

  /// Receives each piece of the response body, in order, on the calling
  /// thread. Return false to cancel the request (it then fails "cancelled").
  using chunk_handler = std::function<bool(std::string_view)>;

  /// A client for the origin of `url` connecting only to `addrs` (tried in
  /// order). Fails with forbidden if policy.check_resolved refuses them,
  /// unavailable if `addrs` is empty, out_of_range for an option that is zero
  /// or above its bound.
  static result<std::unique_ptr<http_client>> create(const url_policy& policy,
                                                     const checked_url& url,
                                                     std::vector<ip_address> addrs, options opts);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// POSTs `body` to `path` (origin-relative, starting with '/').
  result<http_response> post(const std::string& path, const http_header_list& headers,
                             const std::string& body, const std::string& content_type,
                             const chunk_handler& on_chunk);
  /// GETs `path` (the SSE stream of a session).
  result<http_response> get(const std::string& path, const http_header_list& headers,
                            const chunk_handler& on_chunk);
  /// DELETEs `path` (ending a session).
  result<http_response> del(const std::string& path, const http_header_list& headers,
                            const chunk_handler& on_chunk);

  /// Sets the inactivity limit of the requests that follow (the options'
  /// read_timeout; bounded to 1 ms .. 10 min). Call it between requests, on
  /// the thread that sends them.
  void set_read_timeout(std::chrono::milliseconds limit);

  /// Aborts the request in flight, and every later one: a cancelled client
  /// stays cancelled (no cancel is lost to a race with a request starting);
  /// make a new client to go on. Thread-safe; see the header comment.
  void cancel();
  bool cancelled() const noexcept { return cancelled_.load(); }

private:
  http_client(const checked_url& url, std::vector<ip_address> addrs, options opts);

  result<http_response> send(const std::string& method, const std::string& path,
                             const http_header_list& headers, const std::string* body,
                             const std::string& content_type, const chunk_handler& on_chunk);

  options opts_;
  std::string host_; ///< normalised host, the key of the pinned address map
  std::vector<std::string> addrs_;
  std::size_t next_addr_ = 0; ///< the address that last connected
  std::unique_ptr<httplib::ClientImpl> client_;
  std::atomic<bool> cancelled_{false};
};

} // namespace voxos
