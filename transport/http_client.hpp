// HTTP/1.1 client for one origin (scheme, host, port), as the MCP Streamable
// HTTP client needs it: POST with a streamed response body, the GET SSE
// stream, the session DELETE. Our own, over POSIX sockets and OpenSSL (the
// request goes out in one write; cpp-httplib wrote the head and the body
// apart, which costs the server a second wake-up per call). CAF-free; errors
// are status values.
//
// Addresses are pinned: the client connects only to the addresses given to
// create(), which must pass url_policy::check_resolved for the URL (create()
// checks again), and never resolves the host name itself. The URL's host is
// still sent as Host, and for https as SNI and the name the certificate must
// match (the system's trust store, or options::ca_file). See url_policy.hpp.
//
// Per request, in order:
//   connect      bounded by min(connect_timeout, remaining deadline), TLS
//                handshake included; on a TCP connect failure the next
//                pinned address is tried. A kept-alive connection is reused
//                unless the server has closed it (or sent anything) since.
//                If the server closes a reused one before the request is
//                written whole, the request is sent once more on a fresh
//                connection (the server cannot have read it all). If it
//                closes one after the request went out whole, before a byte
//                of the answer (its idle timeout racing the request, or a
//                crash while handling it), the request is sent again only
//                when it is idempotent: GET and DELETE, and a POST its caller
//                marks so (`idempotent`). A POST is never sent twice
//                otherwise: the server may have received it and acted on it.
//   headers      a 3xx is refused (never followed) before its body is read;
//                heads (at most 8 interim 1xx ones) and trailers share a
//                64 KiB budget, at most 256 fields a head
//   body         framed by Content-Length, chunked, or the connection's end;
//                streamed to on_chunk; checked against max_body_bytes, the
//                total deadline and cancel() at every piece. The connection is
//                not reused after a close-delimited body or doubtful framing
//                (a length beside chunks). Over TLS a close without
//                close_notify is a failure (a cut answer), not an end.
// Bounds on time: every wait (connect, write, read) ends at the earlier of
// its inactivity limit and the total deadline, so a request ends by its
// deadline (to the millisecond) however the server trickles or stalls.
//
// Content codings: the client asks for `identity` and refuses a response
// in any other coding (no decompression, so no decompression bombs).
//
// Errors (messages never contain the URL, path or header values):
//   out_of_range    create(): an option outside its bounds, a ca_file that
//                   does not load; a request header whose name is not a
//                   token or is one the client owns (Host, Content-Length,
//                   Content-Type, Transfer-Encoding, Connection, Keep-Alive,
//                   TE, Trailer, Upgrade, Expect), or whose value holds a
//                   control character other than HTAB
//   forbidden       create(): addresses the policy refuses; a 3xx answer
//                   ("redirects are refused")
//   body_too_large  the body exceeds max_body_bytes
//   unavailable     "deadline exceeded"; "cancelled" (cancel() or on_chunk
//                   returned false); "http request failed: ..." naming a
//                   connect, read, write or TLS failure or a malformed
//                   response
//
// Threading: one request at a time per client (post/get/del from one thread,
// or serialised by the caller). cancel() may be called from any thread at
// any time and never blocks on I/O.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "messages/status.hpp"
#include "transport/url_policy.hpp"

namespace voxos {

/// Request headers, in order. Names as sent.
using http_header_list = std::vector<std::pair<std::string, std::string>>;

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
    /// TCP_NODELAY: a request goes out at once, not behind the previous
    /// write's acknowledgement (Nagle's algorithm).
    bool tcp_nodelay = true;
    /// Reuse the connection between requests.
    bool keep_alive = true;
    /// A 3xx answer is refused (forbidden "redirects are refused") before its
    /// body is read. False: it is returned as it is, with its Location, and
    /// still never followed (a test client playing a browser reads it).
    bool refuse_redirects = true;
    /// For https: a PEM file of the certificate authorities to trust instead
    /// of the system's store (a private deployment's CA). Empty: the system's.
    std::string ca_file;
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
  /// `idempotent`: sending it twice does what sending it once does, so it
  /// may be sent again when a reused connection closes before a byte of the
  /// answer (see the header comment); false (the default) never sends a
  /// request the server may have received a second time.
  result<http_response> post(const std::string& path, const http_header_list& headers,
                             const std::string& body, const std::string& content_type,
                             const chunk_handler& on_chunk, bool idempotent = false);
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
  struct wire;        ///< one open connection: socket, TLS session, unread bytes
  struct tls_context; ///< the OpenSSL context of an https client
  struct timing;      ///< a request's deadline and inactivity limit

  http_client(const checked_url& url, std::vector<ip_address> addrs, options opts);

  result<http_response> send(const std::string& method, const std::string& path,
                             const http_header_list& headers, const std::string* body,
                             const std::string& content_type, const chunk_handler& on_chunk,
                             bool idempotent);
  result<std::unique_ptr<wire>> connect_any(const timing& limits);
  /// `tcp_failed`: the TCP connect itself failed (nothing was sent; another
  /// address may be tried).
  result<std::unique_ptr<wire>> connect_one(const ip_address& addr, const timing& limits,
                                            bool& tcp_failed);
  status write_all(wire& conn, std::string_view data, const timing& limits);
  result<std::size_t> read_some(wire& conn, char* out, std::size_t capacity, const timing& limits);
  result<bool> fill(wire& conn, const timing& limits);
  /// `answered`: a byte of the answer came (a request is never sent twice
  /// once one has).
  result<http_response> read_response(std::unique_ptr<wire>& conn, const timing& limits,
                                      const chunk_handler& on_chunk, bool& answered);
  status wait_io(wire& conn, short events, const timing& limits);
  /// Whether an idle kept-alive connection may carry the next request.
  static bool still_open(const wire& conn);
  status io_failure(std::string what) const;
  void forget_socket(int fd);

  options opts_;
  std::string host_;        ///< normalised host (SNI and certificate name for https)
  std::string host_header_; ///< the Host header
  bool host_is_ip_ = false; ///< an IP literal: the certificate names the address
  uint16_t port_ = 0;
  std::vector<ip_address> addrs_;
  std::size_t next_addr_ = 0; ///< the address that last connected
  /// Shared by every https client trusting the same CA file (or the
  /// system's store) while any of them lives: loaded once, CA lookups cached.
  std::shared_ptr<const tls_context> tls_;
  std::unique_ptr<wire> idle_; ///< the kept-alive connection between requests
  std::mutex socket_mtx_;      ///< guards socket_ against cancel()
  int socket_ = -1;            ///< the socket in use, shut down by cancel()
  std::atomic<bool> cancelled_{false};
};

} // namespace voxos
