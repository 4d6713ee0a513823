// Bounds on an HTTP/1.1 request head (request line and header fields), read
// byte by byte as the server reads it, so that a head past its bounds is
// refused before the rest of it is buffered. cpp-httplib 0.11 keeps every
// header line it reads (one GET with four million of them grew the node by
// 600 MiB) and buffers a request line whole before its 8 KiB check; it has
// no hook for either, so http_server feeds this scanner from the socket
// stream it hands httplib. CAF-free and socket-free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace voxos {

struct request_head_limits {
  /// Header field lines (the request line and the blank line not counted).
  std::size_t max_lines = 100;
  /// Bytes of the whole head, request line and line ends included.
  std::size_t max_bytes = 64 * 1024;
};

/// One head's verdict so far.
enum class head_verdict : uint8_t {
  reading,           ///< within bounds, the blank line not yet seen
  complete,          ///< the blank line ("\r\n" alone) seen; later bytes are the body's
  too_many_lines,    ///< more than max_lines header lines (431)
  too_many_bytes,    ///< more than max_bytes before the blank line (431)
  request_line_long, ///< the request line alone passed max_bytes (414)
  nul_byte,          ///< a NUL anywhere in the head (400)
};

/// Reads one request head. Ends it where httplib does: at a line that is
/// exactly CR LF (a line ended by LF alone is counted and skipped, as
/// httplib skips it). Once the verdict is not `reading` it stays as it is
/// until reset().
class request_head_scanner {
public:
  explicit request_head_scanner(request_head_limits limits) : limits_(limits) {}

  /// Takes the next byte of the head; answers the verdict after it.
  head_verdict feed(char byte) noexcept;

  head_verdict verdict() const noexcept { return verdict_; }

  /// True while bytes still belong to the head.
  bool reading() const noexcept { return verdict_ == head_verdict::reading; }

  /// True if the head broke a bound (any verdict other than reading and complete).
  bool refused() const noexcept {
    return verdict_ != head_verdict::reading && verdict_ != head_verdict::complete;
  }

  /// Starts the next request's head.
  void reset() noexcept;

private:
  request_head_limits limits_;
  head_verdict verdict_ = head_verdict::reading;
  std::size_t bytes_ = 0;
  std::size_t lines_ = 0;      ///< complete lines so far, the request line included
  std::size_t line_bytes_ = 0; ///< bytes of the current line so far
  bool after_cr_ = false;      ///< the current line's last byte was CR
};

} // namespace voxos
