// HTTP server plumbing over cpp-httplib: binding (port 0 supported),
// TCP_NODELAY, body-size limit, keep-alive, a listener thread, and uniform
// JSON error bodies. Routes are added by the caller (actors/http_api), which
// turns requests into messages; this layer knows nothing of actors.
//
// Threading: handlers run on httplib's worker pool (`threads`); start() and
// stop() are called from one owner thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

#include "messages/errc.hpp"
#include "messages/status.hpp"

namespace voxos {

/// Writes `{"error":{"code":"<to_string(code)>","message":"<message>"}}`
/// (content type application/json) with the HTTP status that belongs to
/// `code` (see http_status_of). For unauthorized it also sets
/// `WWW-Authenticate: Bearer` unless the caller already set that header.
void write_error(httplib::Response& res, errc code, const std::string& message);

/// The HTTP status for an error code (bad_json → 400, unauthorized → 401,
/// body_too_large → 413, ...; internal → 500).
int http_status_of(errc code) noexcept;

class http_server {
public:
  struct options {
    std::string bind = "127.0.0.1";
    uint16_t port = 0;
    std::size_t max_body_bytes = 1024 * 1024;
    unsigned threads = 8;
    /// A request head's bounds (request_head.hpp): past them 431 (400 for
    /// a NUL byte in it, 414 for a request line alone past the bytes), the
    /// connection closed, the rest of the head never read.
    std::size_t max_header_lines = 100;
    std::size_t max_header_bytes = 64 * 1024;
  };

  explicit http_server(options opts);
  ~http_server(); // stops
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// The route table, to be filled before start(). Add routes only: the
  /// error, exception, pre-routing and Expect: 100-continue handlers belong
  /// to this class (they enforce the body limit and the JSON error bodies).
  ///
  /// Bodies: at most max_body_bytes, and only with a Content-Length header
  /// (httplib 0.11 does not bound chunked bodies), so a chunked or
  /// length-less POST/PUT/PATCH is refused with 411 and the connection closed
  /// without reading the body (a client still sending it may then see a
  /// connection reset instead of the 411). A malformed or repeated
  /// Content-Length, or a body on a method httplib never reads one for (GET,
  /// HEAD, OPTIONS...), is refused with 400 the same way: its bytes would
  /// otherwise be parsed as the next request. A Content-Length over the limit is
  /// answered 413 after the body is read and discarded, or at once for a
  /// client that sent `Expect: 100-continue`.
  /// Errors a handler leaves without a body (e.g. 404 for an unknown route,
  /// 413) get a JSON error body; a body a handler wrote is kept.
  httplib::Server& routes() noexcept { return *server_; }

  /// Binds and starts serving on a background thread; returns the bound port
  /// (the ephemeral one for port 0) once connections are being accepted.
  /// Fails with unavailable if the address cannot be bound, including a port
  /// another socket holds (SO_REUSEPORT is not set).
  result<uint16_t> start();

  /// Stops accepting, finishes in-flight requests, joins the thread. Idempotent.
  /// A connection waiting for its next request notices the stop within
  /// 100 ms; a request in progress is finished first.
  void stop();

private:
  options opts_;
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
};

} // namespace voxos
