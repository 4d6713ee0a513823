// libFuzzer target for the HTTP/1.1 answer reader of transport/http_client,
// built with clang by tests/fuzz/CMakeLists.txt.
//
// Each input is what a server answers: a loopback listener (started once, a
// thread of this process: the hostile server is the input itself) reads the
// client's request, writes the input (whole, or in two pieces split at a
// byte the input picks) and closes. The first byte also picks small or
// default limits. Besides "no crash, no sanitizer report", it aborts when:
// - an answer is accepted with a 1xx or 3xx status, or a body over the limit;
// - a failure is not one of the client's own fixed messages (an error must
//   never carry the server's bytes).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "transport/http_client.hpp"

namespace {

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "http_wire_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

/// The answer the listener gives the next connection.
struct answer_script {
  std::mutex mtx;
  std::string bytes;
  std::size_t split = 0;
};

answer_script script;

/// Reads the request head and its Content-Length body, then answers.
void serve(int conn) {
  std::string in;
  char buf[4096];
  for (;;) {
    auto head_end = in.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      auto at = in.find("Content-Length: ");
      std::size_t length =
        at == std::string::npos ? 0 : std::strtoul(in.c_str() + at + 16, nullptr, 10);
      if (in.size() >= head_end + 4 + length)
        break;
    }
    const ssize_t got = ::recv(conn, buf, sizeof buf, 0);
    if (got <= 0)
      return;
    in.append(buf, static_cast<std::size_t>(got));
  }
  std::string bytes;
  std::size_t split = 0;
  {
    std::lock_guard<std::mutex> guard{script.mtx};
    bytes = script.bytes;
    split = script.split;
  }
  (void)::send(conn, bytes.data(), split, MSG_NOSIGNAL);
  (void)::send(conn, bytes.data() + split, bytes.size() - split, MSG_NOSIGNAL);
  ::shutdown(conn, SHUT_WR);
  while (::recv(conn, buf, sizeof buf, 0) > 0) {
  }
}

uint16_t start_listener() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  check(fd >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0, "bind");
  check(::listen(fd, 16) == 0, "listen");
  socklen_t len = sizeof(addr);
  check(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
  std::thread([fd] {
    for (;;) {
      const int conn = ::accept(fd, nullptr, nullptr);
      if (conn < 0)
        continue;
      int one = 1;
      ::setsockopt(conn, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      serve(conn);
      ::close(conn);
    }
  }).detach();
  return ntohs(addr.sin_port);
}

bool is_own_message(const std::string& message) {
  static constexpr std::string_view fixed[] = {
    "deadline exceeded", "cancelled", "redirects are refused", "response body exceeds the limit"};
  for (auto text : fixed)
    if (message == text)
      return true;
  static constexpr std::string_view failures[] = {
    "malformed status line",
    "response head exceeds 64 KiB",
    "response head has more than 256 fields",
    "malformed response header",
    "malformed content length",
    "response in a content coding other than identity",
    "unsupported transfer coding",
    "malformed chunk",
    "connection closed in the response body",
    "connection closed in the response head",
    "connection closed before an answer",
    "the server switched protocols",
    "more than 8 interim answers",
    "read failed: Connection reset by peer",
    "read timed out"};
  for (auto text : failures)
    if (message == "http request failed: " + std::string{text})
      return true;
  return false;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const uint16_t port = start_listener();
  static const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  static const voxos::url_policy policy{{{url, "mcp"}}};
  static const auto checked = policy.check(url, "mcp");
  check(checked.is_ok(), "the listener's URL is registered");

  voxos::http_client::options opts;
  opts.total_deadline = std::chrono::milliseconds{2'000};
  opts.read_timeout = std::chrono::milliseconds{1'000};
  if (size > 0 && (data[0] & 1))
    opts.max_body_bytes = 64;
  {
    std::lock_guard<std::mutex> guard{script.mtx};
    script.bytes.assign(reinterpret_cast<const char*>(data), size);
    script.split = size > 1 ? data[1] % size : 0;
  }
  auto client =
    voxos::http_client::create(policy, *checked, {*voxos::ip_address::parse("127.0.0.1")}, opts);
  check(client.is_ok(), "a client for the listener");
  std::size_t body = 0;
  auto answer = (*client)->post("/mcp", {{"Accept", "application/json"}}, "{}", "application/json",
                                [&body](std::string_view piece) {
                                  body += piece.size();
                                  return true;
                                });
  if (answer) {
    check(answer->status >= 200 && (answer->status < 300 || answer->status >= 400),
          "only final, non-redirect answers are accepted");
    check(body <= opts.max_body_bytes, "the body stays within the limit");
  } else {
    check(is_own_message(answer.error().message()), "a failure names only the client's own text");
  }
  return 0;
}
