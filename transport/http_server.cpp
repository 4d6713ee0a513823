#include "transport/http_server.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/log.hpp"
#include "transport/request_head.hpp"

namespace voxos {

namespace {

constexpr std::string_view log_component = "http";
constexpr std::size_t keep_alive_max_requests = 1000;
constexpr time_t io_timeout_seconds = 30;

/// `{"error":{"code":...,"message":...}}`; invalid UTF-8 in `message` is
/// replaced rather than thrown on.
std::string error_body(std::string_view code, const std::string& message) {
  nlohmann::json body = {{"error", {{"code", code}, {"message", message}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string error_body(errc code, const std::string& message) {
  return error_body(to_string(code), message);
}

/// Fills the body of an error answer without touching its status.
void set_error_body(httplib::Response& res, errc code, const std::string& message) {
  if (code == errc::unauthorized && !res.has_header("WWW-Authenticate"))
    res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(error_body(code, message), "application/json");
}

/// Answers with a JSON error and makes httplib close the connection after
/// writing it. Used when the request body was left unread, so the bytes on
/// the connection can no longer be trusted as the next request. httplib 0.11
/// has no "close after this response" switch; a content provider that writes
/// the whole body and then reports failure is the one path that ends its
/// keep-alive loop (the client still receives a complete response).
void refuse_and_close(httplib::Response& res, int http_status, errc code,
                      const std::string& message) {
  auto body = std::make_shared<const std::string>(error_body(code, message));
  res.status = http_status;
  res.set_header("Connection", "close");
  res.set_content_provider(body->size(), "application/json",
                           [body](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                             sink.write(body->data() + offset, length);
                             return false; // ends the keep-alive loop; the body is already out
                           });
}

/// The parsed Content-Length, or nullopt if it is absent, repeated or not a
/// plain decimal number.
std::optional<uint64_t> content_length_of(const httplib::Request& req) {
  if (req.get_header_value_count("Content-Length") != 1)
    return std::nullopt;
  auto text = req.get_header_value("Content-Length");
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

/// Methods whose body httplib always reads before routing (DELETE's only
/// with a Content-Length; other methods' never).
bool requires_body_framing(const httplib::Request& req) {
  return req.method == "POST" || req.method == "PUT" || req.method == "PATCH"
         || req.method == "PRI";
}

/// Refuses request framings httplib 0.11 mishandles, answering and closing
/// the connection. Unbounded reads: chunked transfer encoding
/// (payload_max_length is not applied to it) and a POST/PUT/PATCH without
/// Content-Length (read until the peer closes). Desynchronised connections:
/// a repeated or malformed Content-Length (read as 0), and a body on a method
/// whose body httplib never reads; either way the body bytes would be parsed
/// as the next request. Returns true if it answered.
bool refuse_unsafe_framing(const httplib::Request& req, httplib::Response& res) {
  if (req.has_header("Transfer-Encoding")) {
    refuse_and_close(res, 411, errc::body_too_large,
                     "request bodies need a Content-Length header; "
                     "chunked transfer encoding is not accepted");
    return true;
  }
  if (!req.has_header("Content-Length")) {
    if (!requires_body_framing(req))
      return false;
    refuse_and_close(res, 411, errc::body_too_large, "request bodies need a Content-Length header");
    return true;
  }
  auto length = content_length_of(req);
  if (!length) {
    refuse_and_close(res, 400, errc::bad_json, "malformed Content-Length header");
    return true;
  }
  if (*length > 0 && !requires_body_framing(req) && req.method != "DELETE") {
    refuse_and_close(res, 400, errc::bad_json, "this method takes no request body");
    return true;
  }
  return false;
}

std::string too_large_message(std::size_t max_body_bytes) {
  return "request body exceeds " + std::to_string(max_body_bytes) + " bytes";
}

/// The JSON error for a status httplib (or a handler) set without a body.
std::pair<errc, std::string> error_for_status(int http_status, std::size_t max_body_bytes) {
  switch (http_status) {
  case 400:
    return {errc::bad_json, "malformed request"};
  case 401:
    return {errc::unauthorized, "authentication required"};
  case 403:
    return {errc::forbidden, "forbidden"};
  case 404:
    return {errc::not_found, "no such route"};
  case 405:
    return {errc::method_not_allowed, "method not allowed"};
  case 409:
    return {errc::conflict, "conflict"};
  case 413:
    return {errc::body_too_large, too_large_message(max_body_bytes)};
  case 414:
    return {errc::out_of_range, "request target too long"};
  case 415:
    return {errc::unsupported_media_type, "unsupported media type"};
  case 416:
    return {errc::out_of_range, "requested range not satisfiable"};
  case 429:
    return {errc::too_many_requests, "too many requests"};
  case 503:
    return {errc::unavailable, "service unavailable"};
  default:
    return {errc::internal, "internal error"};
  }
}

/// `text` made safe for one log line: control bytes replaced, length capped.
std::string loggable(std::string_view text) {
  constexpr std::size_t max_bytes = 200;
  std::string out{text.substr(0, max_bytes)};
  for (auto& ch : out) {
    auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7f)
      ch = '?';
  }
  if (text.size() > max_bytes)
    out += "...";
  return out;
}

/// The demangled dynamic type of the exception in `ep`, never its what():
/// exception texts may carry request values or secrets.
std::string exception_type_of(std::exception_ptr ep) {
  if (!ep)
    return "unknown exception";
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    int demangle_status = 0;
    char* name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &demangle_status);
    std::string result = demangle_status == 0 && name ? name : typeid(e).name();
    std::free(name);
    return result;
  } catch (...) {
    return "non-standard exception";
  }
}

// -- request heads within bounds -------------------------------------------------

/// Waits up to `timeout` for `events` on `sock`; false on timeout or error.
bool wait_socket(socket_t sock, short events, std::chrono::milliseconds timeout) {
  pollfd entry{sock, events, 0};
  for (;;) {
    int ready = ::poll(&entry, 1, static_cast<int>(timeout.count()));
    if (ready >= 0)
      return ready > 0;
    if (errno != EINTR)
      return false;
  }
}

std::chrono::milliseconds to_millis(time_t sec, time_t usec) {
  return std::chrono::milliseconds(sec * 1000 + usec / 1000);
}

/// The stream httplib reads each request from and writes its answer to, in
/// place of its own socket stream (which 0.11 does not export): buffered
/// reads and writes with httplib's read and write timeouts, and every byte
/// of a request head passed through a request_head_scanner. A head past its
/// bounds ends the reading there (read answers -1, so httplib stops parsing
/// with what it has: at most the bounds) and what httplib then writes is
/// dropped: the server answers the refusal itself (bounded_server).
class bounded_stream final : public httplib::Stream {
public:
  bounded_stream(socket_t sock, request_head_limits limits, std::chrono::milliseconds read_timeout,
                 std::chrono::milliseconds write_timeout)
      : sock_(sock), head_(limits), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  bool is_readable() const override {
    return buffered() > 0 || wait_socket(sock_, POLLIN, read_timeout_);
  }

  bool is_writable() const override {
    if (head_.refused())
      return true;
    if (!wait_socket(sock_, POLLOUT, write_timeout_))
      return false;
    // A peer that closed its end is not worth writing to (as httplib's own
    // stream judges it): readable with nothing to peek means it left.
    if (!wait_socket(sock_, POLLIN, std::chrono::milliseconds(0)))
      return true;
    char byte = 0;
    return ::recv(sock_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (head_.refused())
      return -1;
    if (buffered() == 0) {
      if (!wait_socket(sock_, POLLIN, read_timeout_))
        return -1;
      ssize_t got = 0;
      do
        got = ::recv(sock_, buffer_.data(), buffer_.size(), 0);
      while (got < 0 && errno == EINTR);
      if (got <= 0)
        return got;
      begin_ = 0;
      end_ = static_cast<std::size_t>(got);
    }
    std::size_t count = std::min(size, buffered());
    if (head_.reading()) {
      // Byte by byte through the head (httplib reads it one byte at a time).
      std::size_t taken = 0;
      while (taken < count && head_.reading()) {
        head_.feed(buffer_[begin_ + taken]);
        ++taken;
      }
      if (head_.refused())
        return -1;
      count = taken;
    }
    std::copy_n(buffer_.data() + begin_, count, ptr);
    begin_ += count;
    return static_cast<ssize_t>(count);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (head_.refused())
      return static_cast<ssize_t>(size); // httplib's own answer to a cut head
    return send_some(ptr, size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(::getpeername, ip, port);
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(::getsockname, ip, port);
  }

  socket_t socket() const override { return sock_; }

  /// Waits for the next request, up to `keep_alive`, while the server runs
  /// (checked every 100 ms, so a stopping server is not held up by an idle
  /// connection for the whole keep-alive time).
  bool next_request(const std::atomic<socket_t>& listener, std::chrono::milliseconds keep_alive) {
    head_.reset();
    if (buffered() > 0)
      return true;
    const auto deadline = std::chrono::steady_clock::now() + keep_alive;
    constexpr std::chrono::milliseconds slice{100};
    while (listener != INVALID_SOCKET) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return false;
      if (wait_socket(sock_, POLLIN, std::min(left, slice)))
        return true;
    }
    return false;
  }

  head_verdict verdict() const noexcept { return head_.verdict(); }

  bool refused() const noexcept { return head_.refused(); }

  /// Writes all of `text`, bypassing the drop of a refused head's answer.
  bool send_all(std::string_view text) {
    while (!text.empty()) {
      auto sent = send_some(text.data(), text.size());
      if (sent <= 0)
        return false;
      text.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
  }

private:
  std::size_t buffered() const noexcept { return end_ - begin_; }

  ssize_t send_some(const char* ptr, size_t size) {
    if (!wait_socket(sock_, POLLOUT, write_timeout_))
      return -1;
    ssize_t sent = 0;
    do
      sent = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent;
  }

  template <class Query>
  void address_of(Query query, std::string& ip, int& port) const {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (query(sock_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    std::array<char, NI_MAXHOST> host{};
    std::array<char, NI_MAXSERV> serv{};
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host.data(), host.size(),
                      serv.data(), serv.size(), NI_NUMERICHOST | NI_NUMERICSERV)
        != 0)
      return;
    ip = host.data();
    port = std::atoi(serv.data());
  }

  socket_t sock_;
  request_head_scanner head_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  std::array<char, 4096> buffer_{};
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

/// The answer to a head past its bounds, written by the server itself.
std::string refusal_answer(head_verdict verdict, const request_head_limits& limits) {
  int http_status = 431;
  const char* reason = "Request Header Fields Too Large";
  // Only this layer answers 431, so its code is not one of errc's.
  std::string_view code = "headers_too_large";
  std::string message;
  switch (verdict) {
  case head_verdict::too_many_lines:
    message = "request head exceeds " + std::to_string(limits.max_lines) + " header lines";
    break;
  case head_verdict::request_line_long:
    http_status = 414;
    reason = "URI Too Long";
    code = to_string(errc::out_of_range);
    message = "request line exceeds " + std::to_string(limits.max_bytes) + " bytes";
    break;
  case head_verdict::nul_byte:
    http_status = 400;
    reason = "Bad Request";
    code = to_string(errc::bad_json);
    message = "malformed request: a NUL byte in the request head";
    break;
  default:
    message = "request head exceeds " + std::to_string(limits.max_bytes) + " bytes";
    break;
  }
  auto body = error_body(code, message);
  return "HTTP/1.1 " + std::to_string(http_status) + " " + reason
         + "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size())
         + "\r\nConnection: close\r\n\r\n" + body;
}

/// Drops `br` from a request's Accept-Encoding, so that httplib answers a
/// browser (which offers br) with gzip. httplib's brotli runs at quality 11,
/// which costs milliseconds per answer (3.2 ms more than gzip for a 2.5 KiB
/// grants list here): an API answer is never worth that. Clients that offer
/// only br get an uncompressed answer.
void without_brotli(httplib::Request& req) {
  auto offered = req.get_header_value("Accept-Encoding");
  if (offered.find("br") == std::string::npos)
    return;
  std::string kept;
  std::size_t start = 0;
  while (start <= offered.size()) {
    auto end = offered.find(',', start);
    if (end == std::string::npos)
      end = offered.size();
    auto item = offered.substr(start, end - start);
    auto name = item.substr(0, item.find(';'));
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty() && name.find("br") == std::string::npos)
      kept += (kept.empty() ? "" : ", ") + item.substr(item.find_first_not_of(" \t"));
    start = end + 1;
  }
  req.headers.erase("Accept-Encoding");
  if (!kept.empty())
    req.headers.emplace("Accept-Encoding", kept);
}

/// httplib's server with its per-connection loop replaced (a private
/// virtual of 0.11, the one place that sees the socket before httplib reads
/// it), so that each request is read through a bounded_stream.
class bounded_server final : public httplib::Server {
public:
  explicit bounded_server(request_head_limits limits) : limits_(limits) {}

private:
  bool process_and_close_socket(socket_t sock) override {
    bounded_stream stream{sock, limits_, to_millis(read_timeout_sec_, read_timeout_usec_),
                          to_millis(write_timeout_sec_, write_timeout_usec_)};
    bool served = false;
    const std::chrono::milliseconds keep_alive{keep_alive_timeout_sec_ * 1000};
    for (std::size_t left = keep_alive_max_count_;
         left > 0 && stream.next_request(svr_sock_, keep_alive); --left) {
      bool closed = false;
      served = process_request(stream, left == 1, closed, without_brotli);
      if (stream.refused()) {
        // The client may still be sending the rest of its head: the answer
        // goes out, then a bounded drain (discarded, nothing kept) so that a
        // close with unread bytes does not reset the connection before the
        // client reads the answer.
        if (stream.send_all(refusal_answer(stream.verdict(), limits_)))
          drain(sock);
        served = false;
        break;
      }
      if (!served || closed)
        break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return served;
  }

  /// After our side is shut for writing: reads and drops what the client
  /// still sends, up to 1 MiB or 1 s, or until it closes.
  static void drain(socket_t sock) {
    ::shutdown(sock, SHUT_WR);
    constexpr std::size_t max_bytes = 1024 * 1024;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    std::array<char, 16 * 1024> sink{};
    for (std::size_t dropped = 0; dropped < max_bytes;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !wait_socket(sock, POLLIN, left))
        return;
      auto got = ::recv(sock, sink.data(), sink.size(), 0);
      if (got <= 0)
        return;
      dropped += static_cast<std::size_t>(got);
    }
  }

  request_head_limits limits_;
};

} // namespace

int http_status_of(errc code) noexcept {
  switch (code) {
  case errc::bad_json:
  case errc::unknown_field:
  case errc::wrong_type:
  case errc::missing_field:
  case errc::out_of_range:
    return 400;
  case errc::unauthorized:
    return 401;
  case errc::forbidden:
    return 403;
  case errc::not_found:
    return 404;
  case errc::method_not_allowed:
    return 405;
  case errc::conflict:
  case errc::sequence_conflict:
  case errc::needs_auth: // the server must be signed in to (again) first
    return 409;
  case errc::body_too_large:
    return 413;
  case errc::unsupported_media_type:
    return 415;
  case errc::too_many_requests:
    return 429;
  case errc::rejected:
    return 502; // an MCP server refused what we sent it
  case errc::server_error:
    return 502; // an MCP server answered a JSON-RPC error
  case errc::data_dir_locked:
  case errc::storage_failure:
  case errc::unavailable:
    return 503;
  case errc::corrupt_data:
  case errc::vault_open_failed:
  case errc::config_invalid:
  case errc::internal:
    return 500;
  }
  return 500;
}

void write_error(httplib::Response& res, errc code, const std::string& message) {
  res.status = http_status_of(code);
  set_error_body(res, code, message);
}

http_server::http_server(options opts)
    : opts_(std::move(opts)), server_(std::make_unique<bounded_server>(request_head_limits{
                                opts_.max_header_lines, opts_.max_header_bytes})) {
  auto& srv = *server_;
  const auto max_body_bytes = opts_.max_body_bytes;

  // Connection handling: see TOOLCHAIN.md for why each of these is set.
  srv.set_tcp_nodelay(true);
  srv.set_payload_max_length(max_body_bytes);
  srv.set_keep_alive_max_count(keep_alive_max_requests);
  srv.set_read_timeout(io_timeout_seconds, 0);
  srv.set_write_timeout(io_timeout_seconds, 0);
  const std::size_t threads = std::max(1u, opts_.threads);
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  // httplib's default sets SO_REUSEPORT, which lets a second process bind the
  // same port and silently take half the traffic. SO_REUSEADDR alone still
  // allows a restart while old connections sit in TIME_WAIT.
  srv.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  // Body limit before the body is read. A Content-Length over the limit is
  // left to httplib, which discards the body unbuffered and answers 413: an
  // early answer would make a client still writing a large body fail with a
  // write error instead of reading the 413. Clients that ask first
  // (Expect: 100-continue) are answered before they send anything.
  srv.set_expect_100_continue_handler(
    [max_body_bytes](const httplib::Request& req, httplib::Response& res) {
      if (refuse_unsafe_framing(req, res))
        return res.status;
      if (auto length = content_length_of(req); length && *length > max_body_bytes) {
        refuse_and_close(res, 413, errc::body_too_large, too_large_message(max_body_bytes));
        return 413;
      }
      return 100;
    });
  srv.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    return refuse_unsafe_framing(req, res) ? httplib::Server::HandlerResponse::Handled
                                           : httplib::Server::HandlerResponse::Unhandled;
  });

  // Uniform JSON errors: httplib calls this for every status >= 400. A body
  // a handler wrote (write_error or otherwise) is kept as it is.
  srv.set_error_handler(httplib::Server::HandlerWithResponse{
    [max_body_bytes](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty() || res.has_header("Content-Type"))
        return httplib::Server::HandlerResponse::Unhandled;
      auto [code, message] = error_for_status(res.status, max_body_bytes);
      set_error_body(res, code, message);
      return httplib::Server::HandlerResponse::Handled;
    }});

  // A throwing handler is a bug: log where, answer 500, leak nothing (no
  // what(), no partial response the handler had built).
  srv.set_exception_handler(
    [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      log::error(log_component, "handler for " + loggable(req.method) + " " + loggable(req.path)
                                  + " threw " + exception_type_of(ep) + " (text withheld)");
      httplib::Response fresh;
      fresh.version = res.version;
      res = std::move(fresh);
      write_error(res, errc::internal, "internal error");
    });
}

http_server::~http_server() {
  stop();
}

result<uint16_t> http_server::start() {
  if (listener_.joinable())
    return status::error(errc::internal, "http server already started");

  // Bind (and listen) on the caller's thread, so failures are reported here.
  int port = -1;
  if (opts_.port == 0)
    port = server_->bind_to_any_port(opts_.bind);
  else if (server_->bind_to_port(opts_.bind, opts_.port))
    port = opts_.port;
  if (port <= 0)
    return status::error(errc::unavailable,
                         "cannot bind " + opts_.bind + ":" + std::to_string(opts_.port));

  // Accept on the listener thread; return once its accept loop runs.
  auto finished = std::make_shared<std::atomic<bool>>(false);
  listener_ = std::thread([this, finished] {
    if (!server_->listen_after_bind())
      log::error(log_component, "accept loop ended with an error");
    finished->store(true);
  });
  while (!server_->is_running() && !finished->load())
    std::this_thread::yield();
  if (finished->load()) {
    listener_.join();
    return status::error(errc::unavailable,
                         "cannot accept on " + opts_.bind + ":" + std::to_string(port));
  }
  return static_cast<uint16_t>(port);
}

void http_server::stop() {
  if (!listener_.joinable())
    return;
  server_->stop();
  listener_.join();
}

} // namespace voxos
