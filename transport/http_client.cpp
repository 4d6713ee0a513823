#include "transport/http_client.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <optional>
#include <system_error>

#include <httplib.h>

namespace voxos {

namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

constexpr milliseconds max_connect_timeout{60'000};
constexpr milliseconds max_read_timeout{10 * 60'000};
constexpr milliseconds max_total_deadline{24 * 3600'000};
constexpr std::size_t max_body_limit = std::size_t{1} << 30;

/// The Host header for the origin: IPv6 literals in brackets, the port
/// unless it is the scheme's default.
std::string host_header(const parsed_url& url) {
  std::string host = url.kind == parsed_url::host_kind::ipv6 ? "[" + url.host + "]" : url.host;
  const uint16_t default_port = url.scheme == "https" ? 443 : 80;
  if (url.port != default_port) {
    host += ":" + std::to_string(url.port);
  }
  return host;
}

/// Splits a positive duration into httplib's (seconds, microseconds).
std::pair<time_t, time_t> split(milliseconds duration) {
  const auto ms = std::max<int64_t>(duration.count(), 1);
  return {static_cast<time_t>(ms / 1000), static_cast<time_t>((ms % 1000) * 1000)};
}

/// Why the request was stopped from our side (receiver or response handler).
enum class stop_reason : uint8_t { none, redirect, too_large, deadline, cancelled };

} // namespace

std::string header_name_key(std::string_view name) {
  std::string out(name);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return out;
}

bool is_http_token(std::string_view text) {
  static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || extra.find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string http_response::header(std::string_view name) const {
  auto found = headers.find(header_name_key(name));
  return found == headers.end() ? std::string{} : found->second;
}

result<std::unique_ptr<http_client>> http_client::create(const url_policy& policy,
                                                         const checked_url& url,
                                                         std::vector<ip_address> addrs,
                                                         options opts) {
  // Options within bounds.
  if (opts.connect_timeout.count() <= 0 || opts.connect_timeout > max_connect_timeout) {
    return status::error(errc::out_of_range, "connect_timeout: expected 1 ms to 60 s");
  }
  if (opts.read_timeout.count() <= 0 || opts.read_timeout > max_read_timeout) {
    return status::error(errc::out_of_range, "read_timeout: expected 1 ms to 10 min");
  }
  if (opts.total_deadline.count() <= 0 || opts.total_deadline > max_total_deadline) {
    return status::error(errc::out_of_range, "total_deadline: expected 1 ms to 24 h");
  }
  if (opts.max_body_bytes == 0 || opts.max_body_bytes > max_body_limit) {
    return status::error(errc::out_of_range, "max_body_bytes: expected 1 byte to 1 GiB");
  }
  // The addresses connected to are the addresses checked.
  if (auto verdict = policy.check_resolved(url, addrs); !verdict.is_ok()) {
    return verdict;
  }
  try {
    return std::unique_ptr<http_client>(new http_client(url, std::move(addrs), opts));
  } catch (const std::exception&) {
    return status::error(errc::internal, "http client could not be created");
  }
}

http_client::http_client(const checked_url& url, std::vector<ip_address> addrs, options opts)
    : opts_(opts), host_(url.url.host) {
  for (const auto& addr : addrs) {
    addrs_.push_back(addr.to_string());
  }
  if (url.url.scheme == "https") {
    auto tls = std::make_unique<httplib::SSLClient>(host_, url.url.port);
    tls->enable_server_certificate_verification(true);
    client_ = std::move(tls);
  } else {
    client_ = std::make_unique<httplib::ClientImpl>(host_, url.url.port);
  }
  client_->set_tcp_nodelay(opts_.tcp_nodelay);
  client_->set_keep_alive(opts_.keep_alive);
  client_->set_follow_location(false);
  client_->set_default_headers({{"Host", host_header(url.url)}});
}

http_client::~http_client() = default;

void http_client::set_read_timeout(milliseconds limit) {
  opts_.read_timeout = std::clamp(limit, milliseconds{1}, max_read_timeout);
}

void http_client::cancel() {
  cancelled_.store(true);
  // Shuts the socket of a request in flight down, so a blocked read returns.
  client_->stop();
}

result<http_response> http_client::post(const std::string& path, const http_header_list& headers,
                                        const std::string& body, const std::string& content_type,
                                        const chunk_handler& on_chunk) {
  return send("POST", path, headers, &body, content_type, on_chunk);
}

result<http_response> http_client::get(const std::string& path, const http_header_list& headers,
                                       const chunk_handler& on_chunk) {
  return send("GET", path, headers, nullptr, {}, on_chunk);
}

result<http_response> http_client::del(const std::string& path, const http_header_list& headers,
                                       const chunk_handler& on_chunk) {
  return send("DELETE", path, headers, nullptr, {}, on_chunk);
}

result<http_response> http_client::send(const std::string& method, const std::string& path,
                                        const http_header_list& headers, const std::string* body,
                                        const std::string& content_type,
                                        const chunk_handler& on_chunk) {
  const auto deadline = clock_type::now() + opts_.total_deadline;
  if (cancelled_.load()) {
    return status::error(errc::unavailable, "cancelled");
  }
  if (path.empty() || path.front() != '/') {
    return status::error(errc::out_of_range, "request path must start with '/'");
  }
  try {
    // Timeouts: none may outlast the total deadline.
    const auto remaining = [&] {
      return std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
    };
    const auto within = [&](milliseconds limit) { return std::min(limit, remaining()); };
    std::size_t attempts = 0;
    for (;;) {
      // One attempt on one pinned address.
      const std::size_t addr_idx = next_addr_ % addrs_.size();
      client_->set_hostname_addr_map({{host_, addrs_[addr_idx]}});
      auto [connect_sec, connect_usec] = split(within(opts_.connect_timeout));
      client_->set_connection_timeout(connect_sec, connect_usec);
      const auto read_timeout = within(opts_.read_timeout);
      auto [read_sec, read_usec] = split(read_timeout);
      client_->set_read_timeout(read_sec, read_usec);
      client_->set_write_timeout(read_sec, read_usec);

      httplib::Request req;
      req.method = method;
      req.path = path;
      for (const auto& [name, value] : headers) {
        req.headers.emplace(name, value);
      }
      if (body != nullptr) {
        req.body = *body;
        req.headers.emplace("Content-Type", content_type);
      }

      // Headers: refuse redirects and announced oversize bodies.
      stop_reason reason = stop_reason::none;
      req.response_handler = [&](const httplib::Response& res) {
        if (res.status >= 300 && res.status < 400) {
          reason = stop_reason::redirect;
          return false;
        }
        if (res.has_header("Content-Length")) {
          const std::string text = res.get_header_value("Content-Length");
          uint64_t length = 0;
          const auto parsed = std::from_chars(text.data(), text.data() + text.size(), length);
          if (parsed.ec == std::errc::result_out_of_range
              || (parsed.ec == std::errc{} && length > opts_.max_body_bytes)) {
            reason = stop_reason::too_large;
            return false;
          }
        }
        return true;
      };
      // Body: cancel, deadline and limit checked at every chunk.
      std::size_t received = 0;
      req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
        if (cancelled_.load()) {
          reason = stop_reason::cancelled;
          return false;
        }
        if (clock_type::now() >= deadline) {
          reason = stop_reason::deadline;
          return false;
        }
        received += size;
        if (received > opts_.max_body_bytes) {
          reason = stop_reason::too_large;
          return false;
        }
        if (on_chunk && !on_chunk(std::string_view(data, size))) {
          reason = stop_reason::cancelled;
          return false;
        }
        return true;
      };

      httplib::Response res;
      httplib::Error error = httplib::Error::Success;
      const bool sent = client_->send(req, res, error);
      if (sent) {
        next_addr_ = addr_idx;
        http_response out;
        out.status = res.status;
        for (const auto& [name, value] : res.headers) {
          out.headers.emplace(header_name_key(name), value);
        }
        return out;
      }

      // Failure: ours first, then the client's state, then httplib's error.
      switch (reason) {
      case stop_reason::redirect:
        return status::error(errc::forbidden, "redirects are refused");
      case stop_reason::too_large:
        return status::error(errc::body_too_large, "response body exceeds the limit");
      case stop_reason::deadline:
        return status::error(errc::unavailable, "deadline exceeded");
      case stop_reason::cancelled:
        return status::error(errc::unavailable, "cancelled");
      case stop_reason::none:
        break;
      }
      if (cancelled_.load()) {
        return status::error(errc::unavailable, "cancelled");
      }
      // A read timeout cut to the deadline is the deadline (poll rounds to
      // milliseconds, so it may wake a hair early).
      const bool read_capped = read_timeout < opts_.read_timeout;
      const auto slack = milliseconds(20);
      if (clock_type::now() >= deadline
          || (read_capped && error == httplib::Error::Read
              && clock_type::now() + slack >= deadline)) {
        return status::error(errc::unavailable, "deadline exceeded");
      }
      // A failed connect sent nothing: the next pinned address may be tried.
      const bool connect_failed =
        error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout;
      if (connect_failed && ++attempts < addrs_.size()) {
        next_addr_ = addr_idx + 1;
        continue;
      }
      return status::error(errc::unavailable, "http request failed: " + httplib::to_string(error));
    }
  } catch (const std::exception&) {
    return status::error(errc::internal, "http request failed unexpectedly");
  }
}

} // namespace voxos
