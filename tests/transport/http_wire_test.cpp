// The HTTP/1.1 wire of transport/http_client.cpp: framing (lengths, chunks,
// the connection's end, interim answers), connection reuse, malformed
// answers, request headers that would split the request, the connect and
// write timeouts, and https with certificate and name checks and an answer
// cut without close_notify.
//
// Most answers come from a scripted socket server written here: a hand-made
// peer by necessity, since no real server sends a malformed head, a byte at
// a time or a gzip body on demand. https uses cpp-httplib's TLS server with
// certificates made at test time.
#include "transport/http_client.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <httplib.h>
#include <openssl/ssl.h>

#include "support/loopback_http.hpp"
#include "support/temp_dir.hpp"
#include "support/test_certs.hpp"

using voxos::errc;
using voxos::http_client;
using voxos::ip_address;
using voxos::url_policy;
using voxos::test::loopback_client;

namespace {

/// One scripted answer: its bytes, sent whole or a byte at a time, and
/// whether the server closes the connection after it (`drop`: closes it on
/// reading the request, answering nothing).
struct scripted_reply {
  std::string bytes;
  bool close_after = false;
  bool trickle = false;
  bool drop = false;
};

/// Accepts connections on 127.0.0.1 and answers each request (a head and its
/// Content-Length body) with the next scripted reply, in order.
class scripted_server {
public:
  explicit scripted_server(std::vector<scripted_reply> replies) : replies_(std::move(replies)) {
    std::tie(listen_fd_, port) = voxos::test::loopback_listener();
    thread_ = std::thread([this] { serve(); });
  }
  ~scripted_server() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    if (int conn = conn_fd_.load(); conn >= 0)
      ::shutdown(conn, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
  }

  uint16_t port = 0;
  std::atomic<int> accepted{0};
  std::atomic<int> requests{0};
  std::atomic<int> closed{0};

private:
  void serve() {
    std::size_t next = 0;
    while (!stopping_ && next < replies_.size()) {
      const int conn = ::accept(listen_fd_, nullptr, nullptr);
      if (conn < 0)
        return;
      conn_fd_ = conn;
      ++accepted;
      std::string in;
      while (next < replies_.size() && read_request(conn, in)) {
        ++requests;
        const auto& reply = replies_[next++];
        if (reply.drop)
          break;
        if (reply.trickle) {
          for (char byte : reply.bytes)
            if (::send(conn, &byte, 1, MSG_NOSIGNAL) != 1)
              break;
        } else {
          (void)::send(conn, reply.bytes.data(), reply.bytes.size(), MSG_NOSIGNAL);
        }
        if (reply.close_after)
          break;
      }
      conn_fd_ = -1;
      ::close(conn);
      ++closed;
    }
  }

  /// Reads one request (head and Content-Length body) off `conn`.
  static bool read_request(int conn, std::string& in) {
    for (;;) {
      auto head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::size_t length = 0;
        auto lower = in.substr(0, head_end);
        for (auto& ch : lower)
          ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (auto at = lower.find("content-length:"); at != std::string::npos)
          length = std::stoul(lower.substr(at + 15));
        if (in.size() >= head_end + 4 + length) {
          in.erase(0, head_end + 4 + length);
          return true;
        }
      }
      char buf[4096];
      const ssize_t got = ::recv(conn, buf, sizeof buf, 0);
      if (got <= 0)
        return false;
      in.append(buf, static_cast<std::size_t>(got));
    }
  }

  std::vector<scripted_reply> replies_;
  int listen_fd_ = -1;
  std::atomic<int> conn_fd_{-1};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

/// POSTs `{}` and returns the answer, collecting the body into `body`.
/// `idempotent` as http_client::post takes it.
voxos::result<voxos::http_response> post(http_client& client, std::string& body,
                                         bool idempotent = false) {
  body.clear();
  return client.post(
    "/mcp", {}, "{}", "application/json",
    [&body](std::string_view chunk) {
      body.append(chunk);
      return true;
    },
    idempotent);
}

std::string ok_json(const std::string& json) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
         + std::to_string(json.size()) + "\r\n\r\n" + json;
}

/// The message a scripted reply ends with (it must fail).
std::string failure_of(const std::string& reply, errc expected) {
  scripted_server server{{{reply, true}}};
  auto client = loopback_client(server.port);
  std::string body;
  auto answer = post(*client, body);
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == expected);
  return answer.error().message();
}

} // namespace

TEST_CASE("a chunked answer trickled a byte at a time, with extensions and trailers, arrives "
          "whole") {
  scripted_server server{{{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                           "Content-Type: text/event-stream\r\n\r\n"
                           "5;name=value\r\nhello\r\n"
                           "7\r\n, world\r\n"
                           "0\r\nX-Trailer: yes\r\n\r\n",
                           false, true}}};
  auto client = loopback_client(server.port);
  std::string body;
  auto answer = post(*client, body);
  REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
  CHECK(answer->status == 200);
  CHECK(answer->header("Content-Type") == "text/event-stream");
  CHECK(body == "hello, world");
}

TEST_CASE("interim 1xx answers are passed over") {
  scripted_server server{
    {{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\n"
      + ok_json("{\"a\":1}")}}};
  auto client = loopback_client(server.port);
  std::string body;
  auto answer = post(*client, body);
  REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
  CHECK(answer->status == 200);
  CHECK(body == "{\"a\":1}");
}

TEST_CASE("answers share one kept-alive connection, and one closed by the server is replaced") {
  scripted_server server{{{ok_json("[1]")}, {ok_json("[2]"), true}, {ok_json("[3]")}}};
  auto client = loopback_client(server.port);
  std::string body;
  REQUIRE(post(*client, body).is_ok());
  CHECK(body == "[1]");
  REQUIRE(post(*client, body).is_ok());
  CHECK(body == "[2]");
  CHECK(server.accepted == 1);
  // The server has closed the idle connection: the next request connects
  // again rather than failing on the dead one.
  while (server.closed.load() < 1)
    std::this_thread::yield();
  auto third = post(*client, body);
  REQUIRE_MESSAGE(third.is_ok(), third.error().message());
  CHECK(body == "[3]");
  CHECK(server.accepted == 2);
}

TEST_CASE("an answer without a length ends with the connection, which is not reused") {
  scripted_server server{
    {{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"x\":1}", true},
     {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}"}}};
  auto client = loopback_client(server.port);
  std::string body;
  auto first = post(*client, body);
  REQUIRE_MESSAGE(first.is_ok(), first.error().message());
  CHECK(body == "{\"x\":1}");
  auto second = post(*client, body);
  REQUIRE_MESSAGE(second.is_ok(), second.error().message());
  CHECK(body == "{}");
  CHECK(server.accepted == 2);
}

TEST_CASE("a malformed answer fails naming what is wrong with it, never its content") {
  using namespace std::string_literals;
  CHECK(failure_of("HTTP/2 200 OK\r\n\r\n", errc::unavailable)
        == "http request failed: malformed status line");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nX-Big: " + std::string(70'000, 'a') + "\r\n\r\n",
                   errc::unavailable)
        == "http request failed: response head exceeds 64 KiB");
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 300; ++i)
    many += "X-" + std::to_string(i) + ": 1\r\n";
  CHECK(failure_of(many + "\r\n", errc::unavailable)
        == "http request failed: response head has more than 256 fields");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nBad Name: secret-value\r\n\r\n", errc::unavailable)
        == "http request failed: malformed response header");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
                   errc::unavailable)
        == "http request failed: malformed content length");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                   errc::body_too_large)
        == "response body exceeds the limit");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
                   errc::unavailable)
        == "http request failed: response in a content coding other than identity");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                   errc::unavailable)
        == "http request failed: unsupported transfer coding");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", errc::unavailable)
        == "http request failed: malformed chunk");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
                   errc::unavailable)
        == "http request failed: malformed chunk");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFF\r\n",
                   errc::body_too_large)
        == "response body exceeds the limit");
  CHECK(failure_of("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", errc::unavailable)
        == "http request failed: connection closed in the response body");
  CHECK(failure_of("", errc::unavailable)
        == "http request failed: connection closed before an answer");
  CHECK(failure_of("HTTP/1.1 101 Switching Protocols\r\n\r\n", errc::unavailable)
        == "http request failed: the server switched protocols");
}

TEST_CASE("a request header that would split the request is refused before anything is sent") {
  scripted_server server{{{ok_json("{}")}}};
  auto client = loopback_client(server.port);
  for (const auto& header :
       std::vector<std::pair<std::string, std::string>>{{"X-Evil", "a\r\nInjected: 1"},
                                                        {"X-Evil", "a\nb"},
                                                        {"X-Evil", "a\x01b"},
                                                        {"Bad Name", "v"},
                                                        {"", "v"},
                                                        {"Transfer-Encoding", "chunked"},
                                                        {"content-length", "0"},
                                                        {"Host", "elsewhere.example"},
                                                        {"Connection", "upgrade"},
                                                        {"Upgrade", "websocket"},
                                                        {"Expect", "100-continue"}}) {
    auto answer = client->post("/mcp", {header}, "{}", "application/json", {});
    REQUIRE_FALSE(answer.is_ok());
    CHECK(answer.error().code() == errc::out_of_range);
    CHECK(answer.error().message() == "request header is malformed");
  }
  auto path = client->post("/mcp HTTP/1.1\r\nX: y", {}, "{}", "application/json", {});
  REQUIRE_FALSE(path.is_ok());
  CHECK(path.error().code() == errc::out_of_range);
  CHECK(server.accepted == 0);
}

namespace {

/// cpp-httplib's TLS server on 127.0.0.1 with a certificate for 127.0.0.1
/// and localhost, issued by a CA made for the test.
struct tls_server {
  voxos::test::temp_dir dir;
  voxos::test::test_ca ca{"wire test CA", dir.path(), "ca"};
  voxos::test::cert_files files =
    ca.issue("localhost", voxos::test::cert_use::server, dir.path(), "server");
  httplib::SSLServer svr{files.certificate.c_str(), files.key.c_str()};
  std::thread listener;
  uint16_t port = 0;
  std::mutex mtx;
  std::vector<int> client_ports; ///< the client's port per request: one per connection

  std::vector<int> ports() {
    std::lock_guard<std::mutex> guard{mtx};
    return client_ports;
  }

  tls_server() {
    REQUIRE(svr.is_valid());
    svr.Post("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> guard{mtx};
        client_ports.push_back(req.remote_port);
      }
      res.set_content("{\"echo\":" + req.body + "}", "application/json");
    });
    const int bound = svr.bind_to_any_port("127.0.0.1");
    REQUIRE(bound > 0);
    port = static_cast<uint16_t>(bound);
    listener = std::thread([this] { svr.listen_after_bind(); });
    while (!svr.is_running())
      std::this_thread::yield();
  }
  ~tls_server() {
    svr.stop();
    listener.join();
  }
};

} // namespace

TEST_CASE("https: a certificate from a trusted authority naming the host is accepted, and the "
          "connection reused") {
  tls_server server;
  http_client::options opts;
  opts.ca_file = server.ca.certificate().string();
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    auto client = loopback_client(server.port, opts, "https", host);
    std::string body;
    for (int round = 0; round < 3; ++round) {
      auto answer = post(*client, body);
      REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
      CHECK(answer->status == 200);
      CHECK(body == "{\"echo\":{}}");
    }
  }
  // Each client's three requests shared one connection.
  auto ports = server.ports();
  REQUIRE(ports.size() == 6);
  CHECK(ports[0] == ports[1]);
  CHECK(ports[1] == ports[2]);
  CHECK(ports[3] == ports[4]);
  CHECK(ports[4] == ports[5]);
  CHECK(ports[0] != ports[3]);
}

TEST_CASE("https: an untrusted certificate or one naming another host is refused") {
  tls_server server;
  // The system's trust store does not know the test's authority.
  auto untrusted = loopback_client(server.port, {}, "https", "localhost");
  std::string body;
  auto answer = post(*untrusted, body);
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(
    answer.error().message().rfind("http request failed: tls certificate verification failed", 0)
    == 0);

  // Trusted, but the certificate does not name the URL's host.
  http_client::options opts;
  opts.ca_file = server.ca.certificate().string();
  auto other_name = loopback_client(server.port, opts, "https", "mcp.invalid");
  auto mismatch = post(*other_name, body);
  REQUIRE_FALSE(mismatch.is_ok());
  CHECK(
    mismatch.error().message().rfind("http request failed: tls certificate verification failed", 0)
    == 0);
  CHECK(body.empty());

  // A CA file that is not one is refused when the client is made.
  opts.ca_file = (server.dir.path() / "missing.pem").string();
  const std::string url = "https://localhost:" + std::to_string(server.port) + "/mcp";
  const url_policy policy{{{url, "mcp"}}};
  auto checked = policy.check(url, "mcp");
  REQUIRE(checked.is_ok());
  auto refused = http_client::create(policy, *checked, {*ip_address::parse("127.0.0.1")}, opts);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.error().code() == errc::out_of_range);
}

TEST_CASE("an idempotent request on a reused connection the server drops after reading it is "
          "sent once more, fresh") {
  scripted_server server{{{ok_json("[1]")}, {"", false, false, true}, {ok_json("[2]")}}};
  auto client = loopback_client(server.port);
  std::string body;
  REQUIRE(post(*client, body).is_ok());
  auto second = post(*client, body, true);
  REQUIRE_MESSAGE(second.is_ok(), second.error().message());
  CHECK(body == "[2]");
  CHECK(server.accepted == 2);
  CHECK(server.requests == 3);
}

TEST_CASE("a POST on a reused connection the server drops after reading it is not sent again") {
  // The server read the request whole and closed without a byte: it may have
  // acted on it, so the client fails rather than send it a second time.
  scripted_server server{{{ok_json("[1]")}, {"", false, false, true}, {ok_json("[2]")}}};
  auto client = loopback_client(server.port);
  std::string body;
  REQUIRE(post(*client, body).is_ok());
  auto second = post(*client, body);
  REQUIRE_FALSE(second.is_ok());
  CHECK(second.error().message() == "http request failed: connection closed before an answer");
  CHECK(server.requests == 2);
  CHECK(server.accepted == 1);
  // The client goes on, on a fresh connection.
  auto third = post(*client, body);
  REQUIRE_MESSAGE(third.is_ok(), third.error().message());
  CHECK(body == "[2]");
  CHECK(server.requests == 3);
}

TEST_CASE("a fresh connection dropped without an answer is not retried") {
  scripted_server server{{{"", false, false, true}, {ok_json("[2]")}}};
  auto client = loopback_client(server.port);
  std::string body;
  auto answer = post(*client, body);
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().message() == "http request failed: connection closed before an answer");
  CHECK(server.requests == 1);
}

TEST_CASE("interim answers are bounded") {
  std::string many;
  for (int i = 0; i < 9; ++i)
    many += "HTTP/1.1 100 Continue\r\n\r\n";
  CHECK(failure_of(many + ok_json("{}"), errc::unavailable)
        == "http request failed: more than 8 interim answers");
}

TEST_CASE("a cancelled answer delimited by the connection's end is cancelled, not whole") {
  scripted_server server{{{"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hi\n\n"}}};
  auto client = loopback_client(server.port);
  std::string body;
  auto answer = client->post("/mcp", {}, "{}", "application/json", [&](std::string_view chunk) {
    body.append(chunk);
    client->cancel(); // as another thread would: the socket is shut down
    return true;
  });
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().message() == "cancelled");
  CHECK(body == ": hi\n\n");
}

namespace {

/// Connects to `port` without waiting (the descriptor is the caller's).
int connect_nonblocking(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  (void)::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  return fd;
}

} // namespace

TEST_CASE("a connect the listener never completes ends at the connect timeout") {
  // Nobody accepts: once the listener's accept queue is full, the kernel
  // drops further connection requests, so a connect waits. Filler
  // connections fill the queue until one no longer completes.
  auto [listen_fd, port] = voxos::test::loopback_listener();
  std::vector<int> fillers;
  for (bool completes = true; completes && fillers.size() < 64;) {
    fillers.push_back(connect_nonblocking(port));
    pollfd ready{fillers.back(), POLLOUT, 0};
    completes = ::poll(&ready, 1, 200) == 1;
  }
  REQUIRE(fillers.size() < 64);
  http_client::options opts;
  opts.connect_timeout = std::chrono::milliseconds{300};
  auto client = loopback_client(port, opts);
  std::string body;
  auto answer = post(*client, body);
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message() == "http request failed: connect timed out");
  for (int fd : fillers)
    ::close(fd);
  ::close(listen_fd);
}

TEST_CASE("a request the server never reads ends at the write timeout") {
  // The connection completes in the kernel, but nothing reads it: once the
  // socket buffers are full, the write waits.
  auto [listen_fd, port] = voxos::test::loopback_listener();
  http_client::options opts;
  opts.read_timeout = std::chrono::milliseconds{300}; // the inactivity limit, writes included
  auto client = loopback_client(port, opts);
  const std::string large(std::size_t{64} << 20, ' ');
  auto answer = client->post("/mcp", {}, large, "application/json", {});
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message() == "http request failed: write timed out");
  ::close(listen_fd);
}

TEST_CASE("https: an answer cut without tls close_notify is a failure, not its end") {
  // A TLS server written here on OpenSSL: cpp-httplib's always ends with
  // close_notify. It answers with a body delimited by the connection's end,
  // then closes the socket without close_notify (as a cut would).
  voxos::test::temp_dir dir;
  voxos::test::test_ca ca{"cut test CA", dir.path(), "ca"};
  auto files = ca.issue("localhost", voxos::test::cert_use::server, dir.path(), "server");
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{SSL_CTX_new(TLS_server_method()),
                                                        &SSL_CTX_free};
  REQUIRE(ctx);
  REQUIRE(SSL_CTX_use_certificate_chain_file(ctx.get(), files.certificate.c_str()) == 1);
  REQUIRE(SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM) == 1);
  auto [listen_fd, port] = voxos::test::loopback_listener();
  std::thread server{[&ctx, listen_fd = listen_fd] {
    const int conn = ::accept(listen_fd, nullptr, nullptr);
    if (conn < 0)
      return;
    SSL* ssl = SSL_new(ctx.get());
    SSL_set_fd(ssl, conn);
    if (SSL_accept(ssl) == 1) {
      std::string in;
      char buf[4096];
      // the request: its head and the two-byte body "{}"
      while (in.find("\r\n\r\n{}") == std::string::npos) {
        const int got = SSL_read(ssl, buf, sizeof buf);
        if (got <= 0)
          break;
        in.append(buf, static_cast<std::size_t>(got));
      }
      const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"cut\":";
      SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
    }
    ::close(conn); // no SSL_shutdown: no close_notify
    SSL_free(ssl);
  }};
  http_client::options opts;
  opts.ca_file = ca.certificate().string();
  auto client = loopback_client(port, opts, "https", "localhost");
  std::string body;
  auto answer = post(*client, body);
  server.join();
  ::close(listen_fd);
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message()
        == "http request failed: connection closed without tls close_notify");
}
