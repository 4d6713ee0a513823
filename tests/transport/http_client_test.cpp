#include "transport/http_client.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

#include <httplib.h>

#include "support/loopback_http.hpp"

using std::chrono::milliseconds;
using voxos::errc;
using voxos::http_client;
using voxos::ip_address;
using voxos::url_policy;
using steady = std::chrono::steady_clock;

namespace {

/// A cpp-httplib server on 127.0.0.1, port 0, listening in its own thread.
/// Routes are added before start(). Streaming routes must watch `stopping`.
struct test_server {
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
  ~test_server() {
    stopping.store(true);
    svr.stop();
    if (listener.joinable()) {
      listener.join();
    }
  }
};

/// Adds GET and POST `path` answering an endless stream of SSE keepalive
/// comments, one every 50 ms, until the client goes away or the server stops.
void add_keepalive_stream(test_server& server, const std::string& path) {
  auto handler = [&server](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream",
                                     [&server](size_t, httplib::DataSink& sink) {
                                       if (server.stopping.load()) {
                                         return false;
                                       }
                                       std::this_thread::sleep_for(milliseconds(50));
                                       return sink.write(": keepalive\n\n", 13);
                                     });
  };
  server.svr.Get(path, handler);
  server.svr.Post(path, handler);
}

std::string url_of(const std::string& host, uint16_t port) {
  return "http://" + host + ":" + std::to_string(port) + "/mcp";
}

/// A client for `host`:`port` (registered, so loopback is allowed), pinned
/// to `addrs` (127.0.0.1 by default).
std::unique_ptr<http_client> client_for(uint16_t port, http_client::options opts = {},
                                        const std::string& host = "127.0.0.1",
                                        std::vector<std::string> addrs = {"127.0.0.1"}) {
  const url_policy policy{{{url_of(host, port), "mcp"}}};
  auto checked = policy.check(url_of(host, port), "mcp");
  REQUIRE_MESSAGE(checked.is_ok(), checked.error().message());
  std::vector<ip_address> pinned;
  for (const auto& text : addrs) {
    pinned.push_back(*ip_address::parse(text));
  }
  auto client = http_client::create(policy, *checked, std::move(pinned), opts);
  REQUIRE_MESSAGE(client.is_ok(), client.error().message());
  return std::move(client).value();
}

/// Collects the body into `out`.
http_client::chunk_handler collect(std::string& out) {
  return [&out](std::string_view chunk) {
    out.append(chunk);
    return true;
  };
}

milliseconds since(steady::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady::now() - start);
}

} // namespace

TEST_CASE("post streams a json answer with its status and headers") {
  test_server server;
  std::string seen_body;
  std::string seen_type;
  server.svr.Post("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    seen_body = req.body;
    seen_type = req.get_header_value("Content-Type");
    res.set_header("Mcp-Session-Id", "abc");
    res.set_content(R"({"jsonrpc":"2.0","id":1,"result":{}})", "application/json");
  });
  server.start();

  auto client = client_for(server.port);
  std::string body;
  auto answer =
    client->post("/mcp", {{"Accept", "application/json, text/event-stream"}},
                 R"({"jsonrpc":"2.0","id":1,"method":"ping"})", "application/json", collect(body));
  REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
  CHECK(answer->status == 200);
  CHECK(answer->header("mcp-session-id") == "abc");
  CHECK(answer->header("Content-Type") == "application/json");
  CHECK(body == R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(seen_body == R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  CHECK(seen_type == "application/json");

  // The kept-alive connection serves a second request.
  body.clear();
  auto again = client->post("/mcp", {}, "{}", "application/json", collect(body));
  REQUIRE(again.is_ok());
  CHECK(again->status == 200);
}

TEST_CASE("a redirect is refused and its target never requested") {
  test_server server;
  std::atomic<int> target_hits{0};
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 302;
    res.set_header("Location", "http://127.0.0.1:" + std::to_string(server.port) + "/target");
  });
  server.svr.Post("/target", [&](const httplib::Request&, httplib::Response& res) {
    ++target_hits;
    res.set_content("{}", "application/json");
  });
  server.svr.Get("/target", [&](const httplib::Request&, httplib::Response& res) {
    ++target_hits;
    res.set_content("{}", "application/json");
  });
  server.start();

  auto client = client_for(server.port);
  std::string body;
  auto answer = client->post("/mcp", {}, "{}", "application/json", collect(body));
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::forbidden);
  CHECK(answer.error().message().find("redirects are refused") != std::string::npos);
  CHECK(body.empty());
  CHECK(target_hits.load() == 0);
}

TEST_CASE("a server error is passed through as a status") {
  test_server server;
  server.svr.Post("/mcp", [](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content("boom", "text/plain");
  });
  server.start();

  auto client = client_for(server.port);
  std::string body;
  auto answer = client->post("/mcp", {}, "{}", "application/json", collect(body));
  REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
  CHECK(answer->status == 500);
  CHECK(body == "boom");
}

TEST_CASE("an endless keepalive stream ends with deadline exceeded") {
  test_server server;
  add_keepalive_stream(server, "/mcp");
  server.start();

  http_client::options opts;
  opts.total_deadline = milliseconds(300);
  auto client = client_for(server.port, opts);
  std::size_t chunks = 0;
  const auto start = steady::now();
  auto answer = client->post("/mcp", {}, "{}", "application/json", [&](std::string_view) {
    ++chunks;
    return true;
  });
  const auto elapsed = since(start);
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message() == "deadline exceeded");
  CHECK(chunks > 0);
  // A bound, not a timing goal: the deadline plus one keepalive and slack.
  CHECK(elapsed >= milliseconds(300));
  CHECK(elapsed < milliseconds(300 + 700));
}

TEST_CASE("a body over the limit is refused") {
  test_server server;
  server.svr.Post("/sized", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(2000, 'x'), "application/json");
  });
  server.svr.Post("/chunked", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream",
                                     [](size_t offset, httplib::DataSink& sink) {
                                       if (offset >= 4 * 600) {
                                         sink.done();
                                         return true;
                                       }
                                       const std::string piece(600, 'y');
                                       return sink.write(piece.data(), piece.size());
                                     });
  });
  server.start();

  http_client::options opts;
  opts.max_body_bytes = 1000;
  auto client = client_for(server.port, opts);

  SUBCASE("announced by content length") {
    std::string body;
    auto answer = client->post("/sized", {}, "{}", "application/json", collect(body));
    REQUIRE_FALSE(answer.is_ok());
    CHECK(answer.error().code() == errc::body_too_large);
    CHECK(body.empty());
  }
  SUBCASE("found while streaming chunks") {
    std::string body;
    auto answer = client->post("/chunked", {}, "{}", "application/json", collect(body));
    REQUIRE_FALSE(answer.is_ok());
    CHECK(answer.error().code() == errc::body_too_large);
    CHECK(body.size() <= 1000);
  }
}

TEST_CASE("cancel from another thread stops a streaming request promptly") {
  test_server server;
  add_keepalive_stream(server, "/mcp");
  server.start();

  http_client::options opts;
  opts.total_deadline = milliseconds(30'000);
  auto client = client_for(server.port, opts);

  std::promise<void> streaming;
  auto first_chunk = streaming.get_future();
  std::atomic<bool> signalled{false};
  steady::time_point cancelled_at;
  std::thread canceller([&] {
    first_chunk.wait();
    cancelled_at = steady::now();
    client->cancel();
  });
  auto answer = client->get("/mcp", {{"Accept", "text/event-stream"}}, [&](std::string_view) {
    if (!signalled.exchange(true)) {
      streaming.set_value();
    }
    return true;
  });
  const auto returned_at = steady::now();
  canceller.join();

  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message() == "cancelled");
  CHECK(returned_at - cancelled_at < milliseconds(1000));

  // A cancelled client stays cancelled.
  auto later = client->get("/mcp", {}, {});
  REQUIRE_FALSE(later.is_ok());
  CHECK(later.error().message() == "cancelled");
}

TEST_CASE("on_chunk returning false cancels the request") {
  test_server server;
  add_keepalive_stream(server, "/mcp");
  server.start();

  auto client = client_for(server.port);
  auto answer = client->get("/mcp", {}, [](std::string_view) { return false; });
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message() == "cancelled");
}

namespace {

/// A listening socket that is never accepted from: the kernel completes the
/// handshake and the request is written, but no byte ever comes back.
struct silent_listener {
  int fd = -1;
  uint16_t port = 0;

  silent_listener() { std::tie(fd, port) = voxos::test::loopback_listener(); }
  ~silent_listener() { ::close(fd); }
};

} // namespace

TEST_CASE("a server that accepts and never answers hits the read timeout") {
  silent_listener silent;
  const uint16_t port = silent.port;

  http_client::options opts;
  opts.read_timeout = milliseconds(200);
  opts.total_deadline = milliseconds(10'000);
  auto client = client_for(port, opts);
  const auto start = steady::now();
  auto answer = client->post("/mcp", {}, "{}", "application/json", {});
  const auto elapsed = since(start);

  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message().find("http request failed") != std::string::npos);
  CHECK(elapsed < milliseconds(5'000));
}

TEST_CASE("a silent server is bounded by the deadline when it is below the read timeout") {
  silent_listener silent;
  const uint16_t port = silent.port;

  http_client::options opts;
  opts.read_timeout = milliseconds(30'000);
  opts.total_deadline = milliseconds(300);
  auto client = client_for(port, opts);
  const auto start = steady::now();
  auto answer = client->post("/mcp", {}, "{}", "application/json", {});
  const auto elapsed = since(start);

  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message() == "deadline exceeded");
  CHECK(elapsed < milliseconds(300 + 700));
}

TEST_CASE("a refused connection is unavailable with the error named") {
  // A port that was just free: nothing listens there.
  test_server probe;
  probe.start();
  const uint16_t port = probe.port;
  probe.svr.stop();
  probe.listener.join();

  auto client = client_for(port);
  auto answer = client->post("/mcp", {}, "{}", "application/json", {});
  REQUIRE_FALSE(answer.is_ok());
  CHECK(answer.error().code() == errc::unavailable);
  CHECK(answer.error().message().find("http request failed") != std::string::npos);
}

TEST_CASE("the connection goes to the pinned address without resolving the host name") {
  test_server server;
  std::string seen_host;
  server.svr.Post("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    seen_host = req.get_header_value("Host");
    res.set_content("{}", "application/json");
  });
  server.start();

  auto client = client_for(server.port, {}, "mcp.invalid");
  std::string body;
  auto answer = client->post("/mcp", {}, "{}", "application/json", collect(body));
  REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
  CHECK(answer->status == 200);
  CHECK(seen_host == "mcp.invalid:" + std::to_string(server.port));
}

TEST_CASE("a refused pinned address falls through to the next one") {
  test_server server;
  server.svr.Delete("/mcp",
                    [&](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  server.start();

  // 127.0.0.2 is loopback too, but the server listens on 127.0.0.1 only.
  auto client = client_for(server.port, {}, "mcp.invalid", {"127.0.0.2", "127.0.0.1"});
  auto answer = client->del("/mcp", {{"Mcp-Session-Id", "abc"}}, {});
  REQUIRE_MESSAGE(answer.is_ok(), answer.error().message());
  CHECK(answer->status == 204);
}

TEST_CASE("create refuses addresses the policy refuses and options out of bounds") {
  const url_policy policy{{}};
  auto checked = policy.check("https://mcp.example.com/mcp", "mcp");
  REQUIRE(checked.is_ok());

  auto loopback = http_client::create(policy, *checked, {*ip_address::parse("127.0.0.1")}, {});
  REQUIRE_FALSE(loopback.is_ok());
  CHECK(loopback.error().code() == errc::forbidden);

  auto none = http_client::create(policy, *checked, {}, {});
  REQUIRE_FALSE(none.is_ok());
  CHECK(none.error().code() == errc::unavailable);

  http_client::options opts;
  opts.read_timeout = milliseconds(0);
  auto zero = http_client::create(policy, *checked, {*ip_address::parse("93.184.216.34")}, opts);
  REQUIRE_FALSE(zero.is_ok());
  CHECK(zero.error().code() == errc::out_of_range);

  opts = {};
  opts.total_deadline = std::chrono::hours(25);
  auto long_deadline =
    http_client::create(policy, *checked, {*ip_address::parse("93.184.216.34")}, opts);
  REQUIRE_FALSE(long_deadline.is_ok());
  CHECK(long_deadline.error().code() == errc::out_of_range);
}
