#include "transport/http_server.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
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

namespace voxos {

namespace {

constexpr std::string_view log_component = "http";
constexpr std::size_t keep_alive_max_requests = 1000;
constexpr time_t io_timeout_seconds = 30;

/// `{"error":{"code":...,"message":...}}`; invalid UTF-8 in `message` is
/// replaced rather than thrown on.
std::string error_body(errc code, const std::string& message) {
  nlohmann::json body = {{"error", {{"code", std::string{to_string(code)}}, {"message", message}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
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
    : opts_(std::move(opts)), server_(std::make_unique<httplib::Server>()) {
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
