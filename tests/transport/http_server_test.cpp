#include "transport/http_server.hpp"

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/loopback_http.hpp"

using voxos::errc;
using voxos::http_server;

namespace {

/// Starts `server`, which must succeed, and returns its port.
uint16_t started(http_server& server) {
  auto port = server.start();
  REQUIRE_MESSAGE(port.is_ok(), port.error().message());
  REQUIRE(*port != 0);
  return *port;
}

http_server::options with_limit(std::size_t max_body_bytes) {
  http_server::options opts;
  opts.max_body_bytes = max_body_bytes;
  opts.threads = 2;
  return opts;
}

http_server::options small() {
  return with_limit(64 * 1024);
}

/// A keep-alive client for 127.0.0.1:`port`, as the node's own clients are set up.
std::unique_ptr<httplib::Client> client_for(uint16_t port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_tcp_nodelay(true);
  client->set_keep_alive(true);
  client->set_connection_timeout(5, 0);
  client->set_read_timeout(5, 0);
  client->set_write_timeout(5, 0);
  return client;
}

/// The "error" member of a JSON error body.
nlohmann::json error_of(const std::string& body) {
  auto parsed = nlohmann::json::parse(body, nullptr, false);
  REQUIRE_FALSE(parsed.is_discarded());
  REQUIRE(parsed.contains("error"));
  return parsed["error"];
}

/// The body of a raw HTTP response (after the blank line).
std::string body_of(const std::string& response) {
  auto end_of_headers = response.find("\r\n\r\n");
  REQUIRE(end_of_headers != std::string::npos);
  return response.substr(end_of_headers + 4);
}

} // namespace

TEST_CASE("a registered route answers") {
  http_server server{small()};
  server.routes().Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"hello":"world"})", "application/json");
  });
  auto port = started(server);
  auto client = client_for(port);
  auto res = client->Get("/hello");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->body == R"({"hello":"world"})");
}

TEST_CASE("an unknown route answers 404 with a JSON not_found error") {
  http_server server{small()};
  auto port = started(server);
  auto client = client_for(port);
  auto res = client->Get("/nowhere");
  REQUIRE(res);
  CHECK(res->status == 404);
  CHECK(res->get_header_value("Content-Type") == "application/json");
  auto error = error_of(res->body);
  CHECK(error["code"] == "not_found");
  CHECK(error["message"] == "no such route");
}

TEST_CASE("a body over the limit is refused with 413 and a JSON error") {
  http_server server{small()};
  std::atomic<std::size_t> seen_bytes{0};
  server.routes().Post("/echo", [&](const httplib::Request& req, httplib::Response& res) {
    seen_bytes = req.body.size();
    res.set_content("{}", "application/json");
  });
  auto port = started(server);
  auto client = client_for(port);

  // A body 16 times the limit, larger than the socket buffers: the server
  // reads and discards it, so the client gets the answer, not a write error.
  auto res = client->Post("/echo", std::string(1024 * 1024, 'x'), "application/json");
  REQUIRE(res);
  CHECK(res->status == 413);
  auto error = error_of(res->body);
  CHECK(error["code"] == "body_too_large");
  CHECK(error["message"] == "request body exceeds 65536 bytes");
  CHECK(seen_bytes == 0);

  // A body of exactly the limit still reaches the handler on the same client.
  auto at_limit = client->Post("/echo", std::string(64 * 1024, 'x'), "application/json");
  REQUIRE(at_limit);
  CHECK(at_limit->status == 200);
  CHECK(seen_bytes == 64 * 1024);
}

TEST_CASE("a chunked request body is refused with 411 and the connection closed") {
  http_server server{small()};
  std::atomic<bool> reached{false};
  server.routes().Post("/echo",
                       [&](const httplib::Request&, httplib::Response&) { reached = true; });
  auto port = started(server);
  // Headers only: body bytes the server never reads could turn its close
  // into a reset that races the answer (see http_server.hpp).
  voxos::test::raw_connection conn{port};
  conn.send_all("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  auto response = conn.read_until_closed();
  CHECK(response.rfind("HTTP/1.1 411 ", 0) == 0);
  CHECK(response.find("Connection: close\r\n") != std::string::npos);
  auto error = error_of(body_of(response));
  CHECK(error["code"] == "body_too_large");
  CHECK(
    error["message"]
    == "request bodies need a Content-Length header; chunked transfer encoding is not accepted");
  CHECK_FALSE(reached);
}

TEST_CASE("a POST without Content-Length is refused with 411 and the connection closed") {
  http_server server{small()};
  auto port = started(server);
  voxos::test::raw_connection conn{port};
  conn.send_all("POST /echo HTTP/1.1\r\nHost: x\r\n\r\n");
  auto response = conn.read_until_closed();
  CHECK(response.rfind("HTTP/1.1 411 ", 0) == 0);
  CHECK(error_of(body_of(response))["code"] == "body_too_large");
}

TEST_CASE("a malformed Content-Length is refused with 400 and the connection closed") {
  http_server server{small()};
  auto port = started(server);
  voxos::test::raw_connection conn{port};
  conn.send_all("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2x\r\n\r\n");
  auto response = conn.read_until_closed();
  CHECK(response.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(error_of(body_of(response))["code"] == "bad_json");
}

TEST_CASE("a GET with a body is refused with 400 and the connection closed") {
  http_server server{small()};
  server.routes().Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  auto port = started(server);
  voxos::test::raw_connection conn{port};
  conn.send_all("GET /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n");
  auto response = conn.read_until_closed();
  CHECK(response.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(error_of(body_of(response))["message"] == "this method takes no request body");
}

TEST_CASE(
  "a body over the limit announced with Expect: 100-continue is refused before it is sent") {
  http_server server{small()};
  auto port = started(server);
  voxos::test::raw_connection conn{port};
  conn.send_all("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                "Content-Length: 1048576\r\nExpect: 100-continue\r\n\r\n");
  auto response = conn.read_until_closed();
  CHECK(response.rfind("HTTP/1.1 413 ", 0) == 0);
  CHECK(error_of(body_of(response))["code"] == "body_too_large");
}

TEST_CASE("a handler that throws answers 500 internal without the exception text") {
  http_server server{small()};
  server.routes().Get("/throws", [](const httplib::Request&, httplib::Response& res) {
    res.set_header("X-Partial", "half-built");
    res.set_content("partial secret-token-1234", "text/plain");
    throw std::runtime_error("secret-token-1234 leaked in what()");
  });
  server.routes().Get("/throws-int", [](const httplib::Request&, httplib::Response&) { throw 42; });
  auto port = started(server);
  auto client = client_for(port);

  auto res = client->Get("/throws");
  REQUIRE(res);
  CHECK(res->status == 500);
  CHECK(res->get_header_value("Content-Type") == "application/json");
  CHECK(res->body == R"({"error":{"code":"internal","message":"internal error"}})");
  CHECK_FALSE(res->has_header("X-Partial"));
  CHECK_FALSE(res->has_header("EXCEPTION_WHAT"));
  for (const auto& header : res->headers)
    CHECK(header.second.find("secret") == std::string::npos);

  auto odd = client->Get("/throws-int");
  REQUIRE(odd);
  CHECK(odd->status == 500);
  CHECK(error_of(odd->body)["code"] == "internal");
}

TEST_CASE("an error body a handler wrote is kept and an empty one is filled") {
  http_server server{small()};
  server.routes().Get("/run", [](const httplib::Request&, httplib::Response& res) {
    voxos::write_error(res, errc::not_found, "no such run");
  });
  server.routes().Get("/private",
                      [](const httplib::Request&, httplib::Response& res) { res.status = 401; });
  auto port = started(server);
  auto client = client_for(port);

  auto run = client->Get("/run");
  REQUIRE(run);
  CHECK(run->status == 404);
  CHECK(error_of(run->body)["message"] == "no such run");

  auto denied = client->Get("/private");
  REQUIRE(denied);
  CHECK(denied->status == 401);
  CHECK(error_of(denied->body)["code"] == "unauthorized");
  CHECK(denied->get_header_value("WWW-Authenticate") == "Bearer");
}

TEST_CASE("two servers on port 0 get different ports") {
  http_server first{small()};
  http_server second{small()};
  auto first_port = started(first);
  auto second_port = started(second);
  CHECK(first_port != second_port);
}

TEST_CASE("start on a port a plain socket holds fails with unavailable") {
  // A listening socket without SO_REUSEPORT on an ephemeral port.
  auto [holder, held_port] = voxos::test::loopback_listener();

  auto opts = small();
  opts.port = held_port;
  http_server server{opts};
  auto port = server.start();
  ::close(holder);
  REQUIRE_FALSE(port.is_ok());
  CHECK(port.error().code() == errc::unavailable);
  CHECK(port.error().message() == "cannot bind 127.0.0.1:" + std::to_string(held_port));
}

TEST_CASE("start on a port another server holds fails instead of sharing it") {
  http_server first{small()};
  auto first_port = started(first);
  auto opts = small();
  opts.port = first_port;
  http_server second{opts};
  auto port = second.start();
  REQUIRE_FALSE(port.is_ok());
  CHECK(port.error().code() == errc::unavailable);
}

TEST_CASE("start on an invalid address fails with unavailable") {
  auto opts = small();
  opts.bind = "256.1.1.1";
  http_server server{opts};
  auto port = server.start();
  REQUIRE_FALSE(port.is_ok());
  CHECK(port.error().code() == errc::unavailable);
  CHECK(port.error().message() == "cannot bind 256.1.1.1:0");
}

TEST_CASE("stop is idempotent") {
  http_server never_started{small()};
  never_started.stop();
  never_started.stop();

  http_server server{small()};
  auto port = started(server);
  server.stop();
  server.stop();
  // Nothing accepts on the port any more.
  httplib::Client client{"127.0.0.1", port};
  client.set_connection_timeout(1, 0);
  CHECK_FALSE(client.Get("/"));
}

TEST_CASE("twenty sequential requests on one client share one keep-alive connection") {
  http_server server{small()};
  std::mutex ports_mutex;
  std::set<int> client_ports;
  server.routes().Get("/ping", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> guard{ports_mutex};
    client_ports.insert(req.remote_port);
    res.set_content("{}", "application/json");
  });
  auto port = started(server);
  auto client = client_for(port);
  for (int request_idx = 0; request_idx < 20; ++request_idx) {
    auto res = client->Get("/ping");
    REQUIRE(res);
    CHECK(res->status == 200);
  }
  client.reset();
  CHECK(client_ports.size() == 1);
}

TEST_CASE("a request head of up to 100 header lines is read, the 101st refuses it with 431") {
  http_server server{small()};
  std::atomic<int> reached{0};
  server.routes().Get("/hello", [&](const httplib::Request& req, httplib::Response& res) {
    ++reached;
    res.set_content(std::to_string(req.headers.size()), "application/json");
  });
  auto port = started(server);
  auto head_with = [](int lines) {
    std::string head = "GET /hello HTTP/1.1\r\nHost: x\r\n";
    for (int line_idx = 1; line_idx < lines; ++line_idx)
      head += "X-Line-" + std::to_string(line_idx) + ": v\r\n";
    return head + "Connection: close\r\n\r\n";
  };
  {
    voxos::test::raw_connection conn{port};
    conn.send_all(head_with(99)); // + Connection: 100 lines
    CHECK(conn.read_until_closed().rfind("HTTP/1.1 200 ", 0) == 0);
  }
  voxos::test::raw_connection conn{port};
  conn.send_all(head_with(100));
  auto response = conn.read_until_closed();
  CHECK(response.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(response.find("Connection: close\r\n") != std::string::npos);
  auto error = error_of(body_of(response));
  CHECK(error["code"] == "headers_too_large");
  CHECK(error["message"] == "request head exceeds 100 header lines");
  CHECK(reached == 1);
}

TEST_CASE("a request head past its bytes is refused with 431, a request line past them with 414") {
  auto opts = small();
  opts.max_header_bytes = 16 * 1024;
  http_server server{opts};
  std::atomic<bool> reached{false};
  server.routes().Get("/hello",
                      [&](const httplib::Request&, httplib::Response&) { reached = true; });
  auto port = started(server);
  {
    // Three lines of 6,000 bytes: each within httplib's own 8 KiB per line.
    voxos::test::raw_connection conn{port};
    std::string head = "GET /hello HTTP/1.1\r\nHost: x\r\n";
    for (int line_idx = 0; line_idx < 3; ++line_idx)
      head += "X-Big-" + std::to_string(line_idx) + ": " + std::string(6000, 'v') + "\r\n";
    conn.send_all(head + "\r\n");
    auto response = conn.read_until_closed();
    CHECK(response.rfind("HTTP/1.1 431 ", 0) == 0);
    CHECK(error_of(body_of(response))["message"] == "request head exceeds 16384 bytes");
  }
  {
    voxos::test::raw_connection conn{port};
    conn.send_all("GET /hello?" + std::string(17 * 1024, 'q') + " HTTP/1.1\r\nHost: x\r\n\r\n");
    auto response = conn.read_until_closed();
    CHECK(response.rfind("HTTP/1.1 414 ", 0) == 0);
    CHECK(error_of(body_of(response))["code"] == "out_of_range");
  }
  CHECK_FALSE(reached);
}

TEST_CASE("a NUL byte in a request head is refused with 400 and the connection closed") {
  http_server server{small()};
  std::atomic<bool> reached{false};
  server.routes().Get("/hello",
                      [&](const httplib::Request&, httplib::Response&) { reached = true; });
  auto port = started(server);
  using namespace std::string_literals;
  for (const auto& head : {"GET /hello HTTP/1.1\r\nHost: x\r\nX-Note: a\0b\r\n\r\n"s,
                           "GET /hello HTTP/1.1\r\nHost: x\r\nX-Note\0: b\r\n\r\n"s,
                           "GET /hello\0 HTTP/1.1\r\nHost: x\r\n\r\n"s}) {
    voxos::test::raw_connection conn{port};
    conn.send_all(head);
    auto response = conn.read_until_closed();
    CHECK(response.rfind("HTTP/1.1 400 ", 0) == 0);
    auto error = error_of(body_of(response));
    CHECK(error["code"] == "bad_json");
    CHECK(error["message"] == "malformed request: a NUL byte in the request head");
  }
  CHECK_FALSE(reached);
}

TEST_CASE("a flood of header lines is answered 431 while it is still being sent") {
  http_server server{small()};
  server.routes().Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  auto port = started(server);
  // Four million header lines (30 MiB), written until the server closes.
  auto response = voxos::test::header_flood(port, 4L * 1024 * 1024);
  CHECK(response.rfind("HTTP/1.1 431 ", 0) == 0);
  // The server still serves.
  auto res = client_for(port)->Get("/healthz");
  REQUIRE(res);
  CHECK(res->status == 200);
}

TEST_CASE("http_status_of maps every error code") {
  const std::pair<errc, int> expected[] = {
    {errc::bad_json, 400},
    {errc::unknown_field, 400},
    {errc::wrong_type, 400},
    {errc::missing_field, 400},
    {errc::out_of_range, 400},
    {errc::body_too_large, 413},
    {errc::unsupported_media_type, 415},
    {errc::unauthorized, 401},
    {errc::forbidden, 403},
    {errc::not_found, 404},
    {errc::method_not_allowed, 405},
    {errc::conflict, 409},
    {errc::sequence_conflict, 409},
    {errc::storage_failure, 503},
    {errc::data_dir_locked, 503},
    {errc::corrupt_data, 500},
    {errc::vault_open_failed, 500},
    {errc::config_invalid, 500},
    {errc::unavailable, 503},
    {errc::internal, 500},
    {errc::rejected, 502},
    {errc::too_many_requests, 429},
    {errc::server_error, 502},
  };
  // The table covers the whole enum, which starts at 1 and has no gaps.
  CHECK(std::size(expected) == static_cast<std::size_t>(errc::server_error));
  for (const auto& [code, http_status] : expected) {
    CAPTURE(voxos::to_string(code));
    CHECK(voxos::http_status_of(code) == http_status);
  }
}

TEST_CASE("write_error writes an escaped JSON body with the code's status") {
  httplib::Response res;
  std::string message = "quote \" backslash \\ newline \n bad utf-8 \xC3";
  voxos::write_error(res, errc::conflict, message);
  CHECK(res.status == 409);
  CHECK(res.get_header_value("Content-Type") == "application/json");
  auto error = error_of(res.body);
  CHECK(error["code"] == "conflict");
  CHECK(error["message"].get<std::string>().rfind("quote \" backslash \\ newline \n bad utf-8 ", 0)
        == 0);

  httplib::Response unauthorized;
  voxos::write_error(unauthorized, errc::unauthorized, "no credential");
  CHECK(unauthorized.status == 401);
  CHECK(unauthorized.get_header_value("WWW-Authenticate") == "Bearer");

  httplib::Response with_challenge;
  with_challenge.set_header("WWW-Authenticate", R"(Bearer resource_metadata="x")");
  voxos::write_error(with_challenge, errc::unauthorized, "no credential");
  CHECK(with_challenge.get_header_value_count("WWW-Authenticate") == 1);
  CHECK(with_challenge.get_header_value("WWW-Authenticate") == R"(Bearer resource_metadata="x")");
}

TEST_CASE("a browser's answer is gzip, never brotli (httplib's quality 11 costs milliseconds)") {
  http_server server(with_limit(1024));
  std::string seen_encoding;
  server.routes().Get("/big", [&](const httplib::Request& req, httplib::Response& res) {
    seen_encoding = req.get_header_value("Accept-Encoding");
    res.set_content(std::string(4096, 'a'), "application/json");
  });
  auto port = started(server);
  httplib::Client client("127.0.0.1", port);
  client.set_decompress(false);
  auto browser = client.Get("/big", {{"Accept-Encoding", "gzip, deflate, br, zstd"}});
  REQUIRE(browser);
  CHECK(browser->get_header_value("Content-Encoding") == "gzip");
  CHECK(browser->body.size() < 4096);
  CHECK(seen_encoding == "gzip, deflate, zstd");
  auto brotli_only = client.Get("/big", {{"Accept-Encoding", "br;q=1.0"}});
  REQUIRE(brotli_only);
  CHECK_FALSE(brotli_only->has_header("Content-Encoding"));
  CHECK(brotli_only->body == std::string(4096, 'a'));
  CHECK(seen_encoding.empty());
  auto plain = client.Get("/big");
  REQUIRE(plain);
  CHECK(plain->body.size() == 4096);
}
