// An in-process cpp-httplib server on 127.0.0.1 (port bound to 0, its own
// listener thread) and an http_client for it, registered in the URL policy
// so loopback is allowed. For transport tests that script a peer's answers.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <httplib.h>

#include "transport/http_client.hpp"
#include "transport/url_policy.hpp"

namespace voxos::test {

/// A TCP socket connected to 127.0.0.1:`port`; reads give up after 5 s.
struct raw_connection {
  int fd = -1;

  explicit raw_connection(uint16_t port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    timeval bound{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  }
  ~raw_connection() { ::close(fd); }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;

  void send_all(const std::string& data) {
    std::size_t sent = 0;
    while (sent < data.size()) {
      auto n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      REQUIRE(n > 0);
      sent += static_cast<std::size_t>(n);
    }
  }

  /// Everything the server sends until it closes the connection; fails the
  /// test if it keeps the connection open.
  std::string read_until_closed() {
    std::string out;
    char buf[4096];
    for (;;) {
      auto n = ::recv(fd, buf, sizeof(buf), 0);
      REQUIRE_MESSAGE(n >= 0, "the server did not close the connection");
      if (n == 0)
        return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
};

/// Sends one GET /healthz with `lines` header lines of 8 bytes ("X-a: b")
/// to 127.0.0.1:`port`, from a thread that writes until the server closes
/// (four million lines are 30 MiB); returns what the server answered,
/// read until it closed or reset the connection.
inline std::string header_flood(uint16_t port, long lines) {
  raw_connection conn{port};
  const int fd = conn.fd;
  std::thread writer{[fd, lines] {
    std::string chunk = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    constexpr long per_chunk = 8192;
    std::string block;
    for (long line_idx = 0; line_idx < per_chunk; ++line_idx)
      block += "X-a: b\r\n";
    for (long written = 0; written < lines; written += per_chunk) {
      chunk += block;
      std::size_t sent = 0;
      while (sent < chunk.size()) {
        auto n = ::send(fd, chunk.data() + sent, chunk.size() - sent, MSG_NOSIGNAL);
        if (n <= 0)
          return; // the server closed
        sent += static_cast<std::size_t>(n);
      }
      chunk.clear();
    }
    chunk = "\r\n";
    ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
  }};
  std::string answer;
  char buf[4096];
  for (;;) {
    auto n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
      break;
    answer.append(buf, static_cast<std::size_t>(n));
  }
  writer.join();
  return answer;
}

/// Routes are added to `svr` before start(). Streaming routes must watch
/// `stopping`, which is set when the server is destroyed.
struct loopback_server {
  httplib::Server svr;
  std::thread listener;
  std::atomic<bool> stopping{false};
  uint16_t port = 0;

  void start() {
    svr.set_tcp_nodelay(true);
    const int bound = svr.bind_to_any_port("127.0.0.1");
    REQUIRE(bound > 0);
    port = static_cast<uint16_t>(bound);
    listener = std::thread([this] { svr.listen_after_bind(); });
    // stop() before the listen loop runs would be lost.
    while (!svr.is_running()) {
      std::this_thread::yield();
    }
  }

  /// "http://127.0.0.1:<port>" followed by `path`.
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }

  ~loopback_server() {
    stopping.store(true);
    svr.stop();
    if (listener.joinable()) {
      listener.join();
    }
  }
};

/// A plain listening TCP socket on 127.0.0.1 at a port the kernel picks:
/// its descriptor (the caller closes it) and that port. Connections to it
/// complete in the kernel whether or not anyone accepts them.
inline std::pair<int, uint16_t> loopback_listener() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return {fd, ntohs(addr.sin_port)};
}

/// A client for `scheme`://`host`:`port` (the origin; any path), pinned to
/// 127.0.0.1 whatever the host is called.
inline std::unique_ptr<http_client> loopback_client(uint16_t port, http_client::options opts = {},
                                                    const std::string& scheme = "http",
                                                    const std::string& host = "127.0.0.1") {
  const std::string url = scheme + "://" + host + ":" + std::to_string(port) + "/mcp";
  const url_policy policy{{{url, "mcp"}}};
  auto checked = policy.check(url, "mcp");
  REQUIRE_MESSAGE(checked.is_ok(), checked.error().message());
  auto client = http_client::create(policy, *checked, {*ip_address::parse("127.0.0.1")}, opts);
  REQUIRE_MESSAGE(client.is_ok(), client.error().message());
  return std::move(client).value();
}

/// Answers with `pieces` as a chunked text/event-stream body, one chunk per
/// piece, then ends the body properly (`abort` false) or drops the
/// connection without ending it (`abort` true: a broken stream).
inline void reply_events(httplib::Response& res, std::vector<std::string> pieces,
                         bool abort = false) {
  auto next = std::make_shared<std::size_t>(0);
  res.set_chunked_content_provider("text/event-stream", [pieces = std::move(pieces), next,
                                                         abort](size_t, httplib::DataSink& sink) {
    if (*next == pieces.size()) {
      if (abort) {
        return false;
      }
      sink.done();
      return true;
    }
    const std::string& piece = pieces[(*next)++];
    return sink.write(piece.data(), piece.size());
  });
}

} // namespace voxos::test
