#include "transport/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <exception>
#include <iterator>
#include <map>
#include <optional>
#include <system_error>

#include "transport/ascii.hpp"

namespace voxos {

namespace {

using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

constexpr milliseconds max_connect_timeout{60'000};
constexpr milliseconds max_read_timeout{10 * 60'000};
constexpr milliseconds max_total_deadline{24 * 3600'000};
constexpr std::size_t max_body_limit = std::size_t{1} << 30;
/// A response head (status line and fields) and its field count.
constexpr std::size_t max_head_bytes = 64 * 1024;
constexpr std::size_t max_head_fields = 256;
/// A chunk-size line, extensions included.
constexpr std::size_t max_chunk_line = 1024;
/// Bytes asked of the socket per read.
constexpr std::size_t read_block = 16 * 1024;

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

/// Whether `text` may be a field value: no control character but HTAB.
bool is_field_value(std::string_view text) {
  return std::none_of(text.begin(), text.end(),
                      [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; });
}

/// Fields this client writes or that would change how the request is
/// framed or the connection used: a caller may not send them.
bool is_framing_field(std::string_view name) {
  static constexpr std::string_view reserved[] = {
    "host",         "content-length",  "transfer-encoding",
    "connection",   "keep-alive",      "te",
    "trailer",      "upgrade",         "expect",
    "content-type", "proxy-connection"};
  return std::any_of(std::begin(reserved), std::end(reserved),
                     [name](std::string_view field) { return equals_ignoring_case(name, field); });
}

/// Interim (1xx) answers passed over before one is refused.
constexpr int max_interim_answers = 8;

/// One line of `buf` from `pos`: its text without CR LF (or a bare LF), and
/// where the next one starts; nullopt while the line is incomplete.
std::optional<std::pair<std::string_view, std::size_t>> next_line(std::string_view buf,
                                                                  std::size_t pos) {
  auto end = buf.find('\n', pos);
  if (end == std::string_view::npos)
    return std::nullopt;
  auto line = buf.substr(pos, end - pos);
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return std::pair{line, end + 1};
}

/// The status line "HTTP/1.x NNN reason": the status and the minor version.
std::optional<std::pair<int, int>> parse_status_line(std::string_view line) {
  if (line.size() < 12 || line.substr(0, 7) != "HTTP/1." || line[8] != ' ')
    return std::nullopt;
  if (line[7] != '0' && line[7] != '1')
    return std::nullopt;
  int code = 0;
  auto digits = line.substr(9, 3);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + 3, code);
  if (ec != std::errc{} || end != digits.data() + 3 || code < 100 || code > 599)
    return std::nullopt;
  if (line.size() > 12 && line[12] != ' ')
    return std::nullopt;
  return std::pair{code, line[7] - '0'};
}

/// How the body is delimited.
enum class framing : uint8_t { none, length, chunked, until_close };

/// Ignores SIGPIPE once per process: OpenSSL writes to its socket with
/// write(2), which would raise it when a server has gone (plain sockets use
/// MSG_NOSIGNAL). The daemon ignores it too.
void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGPIPE, SIG_IGN); });
}

} // namespace

struct http_client::tls_context {
  SSL_CTX* ctx = nullptr;
  ~tls_context() {
    if (ctx != nullptr)
      SSL_CTX_free(ctx);
  }

  /// The context trusting `ca_file` (empty: the system's store), made on
  /// first use and shared while a client holds it. An SSL_CTX serves
  /// SSL_new from any thread once set up.
  static result<std::shared_ptr<const tls_context>> for_ca_file(const std::string& ca_file) {
    static std::mutex mtx;
    static std::map<std::string, std::weak_ptr<const tls_context>> made;
    std::lock_guard<std::mutex> guard{mtx};
    if (auto live = made[ca_file].lock())
      return live;
    auto tls = std::make_shared<tls_context>();
    tls->ctx = SSL_CTX_new(TLS_client_method());
    if (tls->ctx == nullptr)
      return status::error(errc::internal, "tls context could not be created");
    SSL_CTX_set_min_proto_version(tls->ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(tls->ctx, SSL_VERIFY_PEER, nullptr);
    const bool loaded = ca_file.empty()
                          ? SSL_CTX_set_default_verify_paths(tls->ctx) == 1
                          : SSL_CTX_load_verify_locations(tls->ctx, ca_file.c_str(), nullptr) == 1;
    ERR_clear_error();
    if (!loaded)
      return status::error(errc::out_of_range, "ca_file: not a readable PEM file of certificates");
    // Entries of contexts no client holds any more go as new ones come.
    for (auto it = made.begin(); it != made.end();)
      it = it->second.expired() && it->first != ca_file ? made.erase(it) : std::next(it);
    made[ca_file] = tls;
    return std::shared_ptr<const tls_context>{std::move(tls)};
  }
};

struct http_client::wire {
  http_client* owner = nullptr;
  int fd = -1;
  SSL* ssl = nullptr;
  bool peer_gone = false; ///< the server closed or reset the connection
  /// Bytes read: [pos, end) not yet used, of `capacity` (not zeroed: a
  /// read fills what it returns).
  std::unique_ptr<char[]> buf;
  std::size_t capacity = 0;
  std::size_t pos = 0;
  std::size_t end = 0;

  std::string_view unread() const { return {buf.get() + pos, end - pos}; }
  void consume(std::size_t count) {
    pos += count;
    if (pos == end)
      pos = end = 0;
  }

  ~wire() {
    if (ssl != nullptr)
      SSL_free(ssl);
    if (fd >= 0) {
      owner->forget_socket(fd);
      ::close(fd);
    }
  }
};

struct http_client::timing {
  clock_type::time_point deadline;
  milliseconds idle;     ///< the inactivity limit of one wait
  const char* idle_what; ///< what an idle timeout is called
};

bool is_http_token(std::string_view text) {
  static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || extra.find(static_cast<char>(c)) != std::string_view::npos;
  });
}

std::string http_response::header(std::string_view name) const {
  auto found = headers.find(ascii_lowered(name));
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
  if (addrs.empty()) {
    return status::error(errc::unavailable, "no address to connect to");
  }
  // The addresses connected to are the addresses checked.
  if (auto verdict = policy.check_resolved(url, addrs); !verdict.is_ok()) {
    return verdict;
  }
  ignore_sigpipe();
  std::unique_ptr<http_client> client;
  try {
    client.reset(new http_client(url, std::move(addrs), opts));
  } catch (const std::exception&) {
    return status::error(errc::internal, "http client could not be created");
  }
  if (url.url.scheme == "https") {
    auto tls = tls_context::for_ca_file(client->opts_.ca_file);
    if (!tls)
      return tls.error();
    client->tls_ = std::move(*tls);
  }
  return client;
}

http_client::http_client(const checked_url& url, std::vector<ip_address> addrs, options opts)
    : opts_(std::move(opts)), host_(url.url.host), host_header_(host_header(url.url)),
      host_is_ip_(url.url.kind != parsed_url::host_kind::name), port_(url.url.port),
      addrs_(std::move(addrs)) {}

http_client::~http_client() {
  idle_.reset();
}

void http_client::set_read_timeout(milliseconds limit) {
  opts_.read_timeout = std::clamp(limit, milliseconds{1}, max_read_timeout);
}

void http_client::cancel() {
  cancelled_.store(true);
  // Shuts the socket in use down, so a blocked wait returns at once.
  std::lock_guard<std::mutex> guard{socket_mtx_};
  if (socket_ >= 0)
    ::shutdown(socket_, SHUT_RDWR);
}

void http_client::forget_socket(int fd) {
  std::lock_guard<std::mutex> guard{socket_mtx_};
  if (socket_ == fd)
    socket_ = -1;
}

status http_client::io_failure(std::string what) const {
  if (cancelled_.load())
    return status::error(errc::unavailable, "cancelled");
  return status::error(errc::unavailable, "http request failed: " + what);
}

status http_client::wait_io(wire& conn, short events, const timing& limits) {
  for (;;) {
    if (cancelled_.load())
      return status::error(errc::unavailable, "cancelled");
    const auto now = clock_type::now();
    if (now >= limits.deadline)
      return status::error(errc::unavailable, "deadline exceeded");
    const auto left = std::chrono::ceil<milliseconds>(limits.deadline - now);
    const bool by_deadline = left <= limits.idle;
    pollfd polled{conn.fd, events, 0};
    const int ready =
      ::poll(&polled, 1, static_cast<int>((by_deadline ? left : limits.idle).count()));
    if (ready > 0)
      return status::ok(); // readiness, a hang-up or an error: the next call tells
    if (ready == 0) {
      if (by_deadline)
        continue; // the deadline check above ends it
      return io_failure(limits.idle_what);
    }
    if (errno != EINTR)
      return io_failure("poll failed");
  }
}

result<std::unique_ptr<http_client::wire>>
http_client::connect_one(const ip_address& addr, const timing& limits, bool& tcp_failed) {
  tcp_failed = false;
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (addr.kind == ip_address::family::v4) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port_);
    std::memcpy(&sin->sin_addr, addr.bytes.data(), 4);
    length = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port_);
    std::memcpy(&sin6->sin6_addr, addr.bytes.data(), 16);
    length = sizeof(sockaddr_in6);
  }
  const int fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return io_failure("no socket: " + std::generic_category().message(errno));
  auto conn = std::make_unique<wire>();
  conn->owner = this;
  conn->fd = fd;
  {
    std::lock_guard<std::mutex> guard{socket_mtx_};
    socket_ = fd;
  }
  if (cancelled_.load()) // a cancel() that came before socket_ was set
    return status::error(errc::unavailable, "cancelled");
  if (opts_.tcp_nodelay) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  // Connect, within the connect timeout (and the deadline).
  timing connecting{std::min(limits.deadline, clock_type::now() + opts_.connect_timeout),
                    opts_.connect_timeout, "connect timed out"};
  auto connect_status = [&](status waited) -> status {
    // The connect timeout cut short is still a connect timeout, unless the
    // whole deadline is what ran out.
    if (waited.is_ok() || waited.message() != "deadline exceeded")
      return waited;
    if (clock_type::now() >= limits.deadline)
      return waited;
    return io_failure("connect timed out");
  };
  if (::connect(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    tcp_failed = true;
    if (errno != EINPROGRESS)
      return io_failure("could not connect: " + std::generic_category().message(errno));
    if (auto waited = connect_status(wait_io(*conn, POLLOUT, connecting)); !waited.is_ok())
      return waited;
    int error = 0;
    socklen_t error_length = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &error_length) != 0)
      error = errno;
    if (error != 0)
      return io_failure("could not connect: " + std::generic_category().message(error));
    tcp_failed = false;
  }
  if (!tls_)
    return conn;
  // TLS: SNI and the certificate's name are the URL's host.
  conn->ssl = SSL_new(tls_->ctx);
  if (conn->ssl == nullptr || SSL_set_fd(conn->ssl, fd) != 1)
    return status::error(errc::internal, "tls session could not be created");
  SSL_set_mode(conn->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE);
  const bool named =
    host_is_ip_ ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(conn->ssl), host_.c_str()) == 1
                : SSL_set_tlsext_host_name(conn->ssl, host_.c_str()) == 1
                    && SSL_set1_host(conn->ssl, host_.c_str()) == 1;
  if (!named) {
    ERR_clear_error();
    return status::error(errc::internal, "tls session could not name the host to verify");
  }
  for (;;) {
    ERR_clear_error();
    errno = 0;
    const int done = SSL_connect(conn->ssl);
    if (done == 1)
      return conn;
    const int why = SSL_get_error(conn->ssl, done);
    if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE) {
      auto waited =
        connect_status(wait_io(*conn, why == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, connecting));
      if (!waited.is_ok())
        return waited;
      continue;
    }
    const long verified = SSL_get_verify_result(conn->ssl);
    ERR_clear_error();
    if (verified != X509_V_OK)
      return io_failure(std::string{"tls certificate verification failed ("}
                        + X509_verify_cert_error_string(verified) + ")");
    return io_failure("tls handshake failed");
  }
}

result<std::unique_ptr<http_client::wire>> http_client::connect_any(const timing& limits) {
  status last = io_failure("could not connect");
  for (std::size_t attempt = 0; attempt < addrs_.size(); ++attempt) {
    const std::size_t index = (next_addr_ + attempt) % addrs_.size();
    bool tcp_failed = false;
    auto conn = connect_one(addrs_[index], limits, tcp_failed);
    if (conn) {
      next_addr_ = index;
      return conn;
    }
    last = conn.error();
    // Only a TCP connect that failed sent nothing and may try elsewhere.
    if (!tcp_failed || cancelled_.load() || clock_type::now() >= limits.deadline)
      return last;
  }
  return last;
}

status http_client::write_all(wire& conn, std::string_view data, const timing& limits) {
  while (!data.empty()) {
    if (conn.ssl != nullptr) {
      ERR_clear_error();
      errno = 0;
      const int wrote = SSL_write(conn.ssl, data.data(),
                                  static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30)));
      if (wrote > 0) {
        data.remove_prefix(static_cast<std::size_t>(wrote));
        continue;
      }
      const int why = SSL_get_error(conn.ssl, wrote);
      const int saved_errno = errno;
      ERR_clear_error();
      if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE) {
        if (auto waited = wait_io(conn, why == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, limits);
            !waited.is_ok())
          return waited;
        continue;
      }
      conn.peer_gone =
        why == SSL_ERROR_SYSCALL && (saved_errno == EPIPE || saved_errno == ECONNRESET);
      return io_failure("tls write failed");
    }
    const ssize_t wrote = ::send(conn.fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (wrote > 0) {
      data.remove_prefix(static_cast<std::size_t>(wrote));
      continue;
    }
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto waited = wait_io(conn, POLLOUT, limits); !waited.is_ok())
        return waited;
      continue;
    }
    conn.peer_gone = errno == EPIPE || errno == ECONNRESET;
    return io_failure("write failed: " + std::generic_category().message(errno));
  }
  return status::ok();
}

result<std::size_t> http_client::read_some(wire& conn, char* out, std::size_t capacity,
                                           const timing& limits) {
  for (;;) {
    if (conn.ssl != nullptr) {
      ERR_clear_error();
      errno = 0;
      const int got =
        SSL_read(conn.ssl, out, static_cast<int>(std::min<std::size_t>(capacity, 1 << 30)));
      if (got > 0)
        return static_cast<std::size_t>(got);
      const int why = SSL_get_error(conn.ssl, got);
      const unsigned long reason = ERR_peek_error();
      const int saved_errno = errno;
      ERR_clear_error();
      if (why == SSL_ERROR_ZERO_RETURN) {
        conn.peer_gone = true;
        return std::size_t{0};
      }
      if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE) {
        if (auto waited = wait_io(conn, why == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, limits);
            !waited.is_ok())
          return waited;
        continue;
      }
      // A close without close_notify may be an attacker's cut: a failure,
      // whatever the framing.
      conn.peer_gone = why == SSL_ERROR_SYSCALL && (saved_errno == 0 || saved_errno == ECONNRESET);
      if ((why == SSL_ERROR_SSL && ERR_GET_REASON(reason) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
          || (why == SSL_ERROR_SYSCALL && saved_errno == 0)) {
        conn.peer_gone = true;
        return io_failure("connection closed without tls close_notify");
      }
      return io_failure("tls read failed");
    }
    const ssize_t got = ::recv(conn.fd, out, capacity, 0);
    if (got >= 0) {
      conn.peer_gone = got == 0;
      return static_cast<std::size_t>(got);
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (auto waited = wait_io(conn, POLLIN, limits); !waited.is_ok())
        return waited;
      continue;
    }
    conn.peer_gone = errno == ECONNRESET;
    return io_failure("read failed: " + std::generic_category().message(errno));
  }
}

/// Reads more bytes into the connection's buffer: false at the end of the
/// stream.
result<bool> http_client::fill(wire& conn, const timing& limits) {
  // Room for a block: used bytes dropped first, then the buffer grown (the
  // callers bound what stays unread: a head, a chunk-size line).
  if (conn.pos > 0 && conn.capacity - conn.end < read_block) {
    std::memmove(conn.buf.get(), conn.buf.get() + conn.pos, conn.end - conn.pos);
    conn.end -= conn.pos;
    conn.pos = 0;
  }
  if (conn.capacity - conn.end < read_block) {
    const std::size_t grown = std::max(conn.capacity * 2, conn.end + read_block);
    std::unique_ptr<char[]> bigger{new char[grown]};
    if (conn.end > 0)
      std::memcpy(bigger.get(), conn.buf.get(), conn.end);
    conn.buf = std::move(bigger);
    conn.capacity = grown;
  }
  auto got = read_some(conn, conn.buf.get() + conn.end, read_block, limits);
  if (!got)
    return got.error();
  conn.end += *got;
  return *got > 0;
}

result<http_response> http_client::read_response(std::unique_ptr<wire>& conn, const timing& limits,
                                                 const chunk_handler& on_chunk, bool& answered) {
  answered = false;
  // The head, after any interim (1xx) answers. Heads and trailers share one
  // budget: a server cannot stream them without bound.
  http_response out;
  int minor_version = 1;
  std::size_t head_budget = max_head_bytes;
  for (int interim = 0;; ++interim) {
    if (interim > max_interim_answers)
      return io_failure("more than 8 interim answers");
    std::size_t head_end = 0;
    std::size_t scanned = 0; // the start of the first line not yet seen whole
    for (;;) {
      // A head ends at its first empty line.
      bool complete = false;
      while (auto line = next_line(conn->unread(), scanned)) {
        scanned = line->second;
        if (line->first.empty()) {
          complete = true;
          break;
        }
      }
      if (complete) {
        head_end = scanned;
        break;
      }
      if (conn->unread().size() > head_budget)
        return io_failure("response head exceeds 64 KiB");
      auto more = fill(*conn, limits);
      if (!more)
        return more.error();
      if (!*more)
        return io_failure(conn->unread().empty() && !answered
                            ? "connection closed before an answer"
                            : "connection closed in the response head");
      answered = true;
    }
    answered = true;
    if (head_end > head_budget)
      return io_failure("response head exceeds 64 KiB");
    head_budget -= head_end;
    const std::string_view head = conn->unread().substr(0, head_end);
    auto first = next_line(head, 0);
    auto status_line = parse_status_line(first->first);
    if (!status_line)
      return io_failure("malformed status line");
    out.status = status_line->first;
    minor_version = status_line->second;
    out.headers.clear();
    std::size_t at = first->second;
    while (auto line = next_line(head, at)) {
      at = line->second;
      if (line->first.empty())
        break;
      if (out.headers.size() == max_head_fields)
        return io_failure("response head has more than 256 fields");
      const auto field = line->first;
      const auto colon = field.find(':');
      if (colon == std::string_view::npos || !is_http_token(field.substr(0, colon)))
        return io_failure("malformed response header");
      const auto value = trim_ows(field.substr(colon + 1));
      if (!is_field_value(value))
        return io_failure("malformed response header");
      out.headers.emplace(ascii_lowered(field.substr(0, colon)), std::string{value});
    }
    conn->consume(head_end);
    if (out.status >= 200)
      break;
    if (out.status == 101)
      return io_failure("the server switched protocols");
  }
  if (out.status >= 300 && out.status < 400 && opts_.refuse_redirects)
    return status::error(errc::forbidden, "redirects are refused");
  if (auto coding = out.header("content-encoding");
      !coding.empty() && !equals_ignoring_case(trim_ows(coding), "identity"))
    return io_failure("response in a content coding other than identity");

  // Framing (RFC 9112 section 6.3).
  framing frame = framing::until_close;
  uint64_t length = 0;
  if (out.status == 204 || out.status == 304) {
    frame = framing::none;
  } else if (out.headers.count("transfer-encoding") > 0) {
    if (out.headers.count("transfer-encoding") != 1
        || !equals_ignoring_case(trim_ows(out.header("transfer-encoding")), "chunked"))
      return io_failure("unsupported transfer coding");
    frame = framing::chunked;
  } else if (out.headers.count("content-length") > 0) {
    auto range = out.headers.equal_range("content-length");
    std::optional<uint64_t> agreed;
    for (auto it = range.first; it != range.second; ++it) {
      const std::string& text = it->second;
      uint64_t value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec == std::errc::result_out_of_range)
        return status::error(errc::body_too_large, "response body exceeds the limit");
      if (ec != std::errc{} || end != text.data() + text.size() || (agreed && *agreed != value))
        return io_failure("malformed content length");
      agreed = value;
    }
    length = *agreed;
    if (length > opts_.max_body_bytes)
      return status::error(errc::body_too_large, "response body exceeds the limit");
    frame = length == 0 ? framing::none : framing::length;
  }
  // Reused only when nothing about the framing is in doubt: a length beside
  // chunks, or chunks from an HTTP/1.0 server, close the connection.
  std::string connection;
  for (auto [it, end] = out.headers.equal_range("connection"); it != end; ++it)
    connection.append(ascii_lowered(it->second)).append(",");
  const bool doubtful =
    frame == framing::chunked && (out.headers.count("content-length") > 0 || minor_version == 0);
  bool keep = opts_.keep_alive && frame != framing::until_close && !doubtful
              && connection.find("close") == std::string::npos
              && (minor_version == 1 || connection.find("keep-alive") != std::string::npos);

  // The body: cancel, deadline and limit checked at every piece. Chunk
  // size lines count toward the limit, trailers toward the head's budget.
  std::size_t received = 0;
  auto charge = [&](std::size_t framing_bytes) -> status {
    received += framing_bytes;
    if (received > opts_.max_body_bytes)
      return status::error(errc::body_too_large, "response body exceeds the limit");
    return status::ok();
  };
  auto deliver = [&](std::string_view piece) -> status {
    if (cancelled_.load())
      return status::error(errc::unavailable, "cancelled");
    if (clock_type::now() >= limits.deadline)
      return status::error(errc::unavailable, "deadline exceeded");
    if (auto charged = charge(piece.size()); !charged.is_ok())
      return charged;
    if (on_chunk && !on_chunk(piece))
      return status::error(errc::unavailable, "cancelled");
    return status::ok();
  };
  // Hands on up to `want` bytes (all there are when npos): false at the end
  // of the stream.
  auto pass_on = [&](uint64_t& want) -> result<bool> {
    if (conn->unread().empty()) {
      auto more = fill(*conn, limits);
      if (!more)
        return more.error();
      if (!*more)
        return false;
    }
    auto piece = conn->unread().substr(
      0, static_cast<std::size_t>(std::min<uint64_t>(want, conn->unread().size())));
    if (auto delivered = deliver(piece); !delivered.is_ok())
      return delivered;
    conn->consume(piece.size());
    want -= piece.size();
    return true;
  };
  // Hands on exactly `count` bytes.
  auto pass_exactly = [&](uint64_t count) -> status {
    while (count > 0) {
      auto going = pass_on(count);
      if (!going)
        return going.error();
      if (!*going)
        return io_failure("connection closed in the response body");
    }
    return status::ok();
  };
  // The next line of a chunked body (a size, a chunk's end, a trailer).
  auto chunk_line = [&]() -> result<std::pair<std::string_view, std::size_t>> {
    for (;;) {
      if (auto line = next_line(conn->unread(), 0))
        return *line;
      if (conn->unread().size() > max_chunk_line)
        return io_failure("malformed chunk");
      auto more = fill(*conn, limits);
      if (!more)
        return more.error();
      if (!*more)
        return io_failure("connection closed in the response body");
    }
  };
  switch (frame) {
  case framing::none:
    break;
  case framing::length:
    if (auto passed = pass_exactly(length); !passed.is_ok())
      return passed;
    break;
  case framing::until_close:
    for (;;) {
      uint64_t all = UINT64_MAX;
      auto going = pass_on(all);
      if (!going)
        return going.error();
      if (!*going)
        break;
    }
    break;
  case framing::chunked:
    for (bool last = false; !last;) {
      // The size line: hex digits, then optional extensions.
      auto line = chunk_line();
      if (!line)
        return line.error();
      auto size_text = trim_ows(line->first.substr(0, line->first.find(';')));
      uint64_t size = 0;
      auto [end, ec] =
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
      if (line->second > max_chunk_line + 2)
        return io_failure("malformed chunk");
      if (ec == std::errc::result_out_of_range
          || (ec == std::errc{} && size > opts_.max_body_bytes))
        return status::error(errc::body_too_large, "response body exceeds the limit");
      if (ec != std::errc{} || end != size_text.data() + size_text.size() || size_text.empty())
        return io_failure("malformed chunk");
      if (auto charged = charge(line->second); !charged.is_ok())
        return charged;
      conn->consume(line->second);
      last = size == 0;
      if (auto passed = pass_exactly(size); !passed.is_ok())
        return passed;
      // After a chunk its CRLF; after the last, trailer fields up to an
      // empty line (read and dropped).
      for (;;) {
        line = chunk_line();
        if (!line)
          return line.error();
        if (line->second > head_budget)
          return io_failure("response head exceeds 64 KiB");
        head_budget -= line->second;
        conn->consume(line->second);
        if (line->first.empty())
          break;
        if (!last)
          return io_failure("malformed chunk");
      }
    }
    break;
  }
  // A cancel shuts the socket down, which ends a body delimited by the
  // connection's end as if the server had: not a whole answer.
  if (cancelled_.load())
    return status::error(errc::unavailable, "cancelled");
  // Anything after the answer is not ours to read: a fresh connection next.
  if (!keep || !conn->unread().empty())
    conn.reset();
  return out;
}

bool http_client::still_open(const wire& conn) {
  // Anything readable on an idle connection is the server's close or bytes
  // nobody asked for (a late TLS session ticket included): a fresh one then.
  pollfd polled{conn.fd, POLLIN, 0};
  return ::poll(&polled, 1, 0) == 0 && (conn.ssl == nullptr || SSL_pending(conn.ssl) == 0);
}

result<http_response> http_client::post(const std::string& path, const http_header_list& headers,
                                        const std::string& body, const std::string& content_type,
                                        const chunk_handler& on_chunk, bool idempotent) {
  return send("POST", path, headers, &body, content_type, on_chunk, idempotent);
}

result<http_response> http_client::get(const std::string& path, const http_header_list& headers,
                                       const chunk_handler& on_chunk) {
  return send("GET", path, headers, nullptr, {}, on_chunk, true);
}

result<http_response> http_client::del(const std::string& path, const http_header_list& headers,
                                       const chunk_handler& on_chunk) {
  return send("DELETE", path, headers, nullptr, {}, on_chunk, true);
}

result<http_response> http_client::send(const std::string& method, const std::string& path,
                                        const http_header_list& headers, const std::string* body,
                                        const std::string& content_type,
                                        const chunk_handler& on_chunk, bool idempotent) {
  const timing limits{clock_type::now() + opts_.total_deadline, opts_.read_timeout,
                      "read timed out"};
  if (cancelled_.load()) {
    return status::error(errc::unavailable, "cancelled");
  }
  if (path.empty() || path.front() != '/' || !is_field_value(path)
      || path.find(' ') != std::string::npos) {
    return status::error(errc::out_of_range, "request path must start with '/'");
  }
  try {
    // The request, in one piece.
    std::string request;
    request.reserve(256 + (body != nullptr ? body->size() : 0));
    request.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: ");
    request.append(host_header_).append("\r\n");
    bool has_encoding = false;
    for (const auto& [name, value] : headers) {
      if (!is_http_token(name) || !is_field_value(value) || is_framing_field(name))
        return status::error(errc::out_of_range, "request header is malformed");
      has_encoding = has_encoding || equals_ignoring_case(name, "accept-encoding");
      request.append(name).append(": ").append(value).append("\r\n");
    }
    if (!has_encoding)
      request.append("Accept-Encoding: identity\r\n");
    if (!opts_.keep_alive)
      request.append("Connection: close\r\n");
    if (body != nullptr) {
      if (!is_field_value(content_type))
        return status::error(errc::out_of_range, "request header is malformed");
      request.append("Content-Type: ").append(content_type).append("\r\nContent-Length: ");
      request.append(std::to_string(body->size())).append("\r\n\r\n").append(*body);
    } else {
      request.append("\r\n");
    }

    for (bool first_try = true;; first_try = false) {
      // A kept-alive connection, unless the server closed it (or sent
      // anything unasked) since: then a fresh one.
      std::unique_ptr<wire> conn = std::move(idle_);
      if (conn && !still_open(*conn))
        conn.reset();
      if (conn) {
        std::lock_guard<std::mutex> guard{socket_mtx_};
        socket_ = conn->fd;
      }
      const bool reused = conn != nullptr;
      if (!conn) {
        auto fresh = connect_any(limits);
        if (!fresh)
          return fresh.error();
        conn = std::move(*fresh);
      }
      if (cancelled_.load())
        return status::error(errc::unavailable, "cancelled");
      // A reused connection the server closed as the request went out (its
      // idle timeout racing ours) is tried once more on a fresh one when the
      // server cannot have taken the request: it was not written whole. Once
      // written whole, no byte back proves nothing: the server may have
      // read it and acted on it before closing (a crash, a reset while
      // handling it). Then only an idempotent request goes again.
      const auto again = [&](bool written_whole, bool answered) {
        return first_try && reused && !answered && conn->peer_gone && !cancelled_.load()
               && (!written_whole || idempotent) && clock_type::now() < limits.deadline;
      };
      const timing writing{limits.deadline, opts_.read_timeout, "write timed out"};
      if (auto wrote = write_all(*conn, request, writing); !wrote.is_ok()) {
        if (again(false, false))
          continue;
        return wrote;
      }
      bool answered = false;
      auto answer = read_response(conn, limits, on_chunk, answered);
      if (!answer && again(true, answered))
        continue;
      if (answer && conn)
        idle_ = std::move(conn);
      return answer;
    }
  } catch (const std::exception&) {
    return status::error(errc::internal, "http request failed unexpectedly");
  }
}

} // namespace voxos
