// Node configuration: parsing and validation of the JSON format, the default
// document, and secret resolution (generated file, env, named file).
//
// nlohmann::json throws on malformed input; every exception is caught in this
// file and becomes a config_invalid status. Messages name keys, paths and
// bounds, never a configured secret or a rejected value.
#include "config/node_config.hpp"

#include "config/base64.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

// Returns the status of `expr` from the enclosing function unless it is ok.
#define VOXOS_RETURN_IF_ERROR(expr)                                                                \
  do {                                                                                             \
    if (::voxos::status st_ = (expr); !st_.is_ok())                                                \
      return st_;                                                                                  \
  } while (false)

namespace voxos {

held_limits held_limits_of(const http_config& http) {
  unsigned workers = std::max(http.threads, 2u);
  held_limits out;
  out.total = http.max_held_requests != 0 ? std::min(http.max_held_requests, workers - 1)
                                          : std::max(workers - 2, 1u);
  out.per_tenant = http.max_held_per_tenant != 0 ? std::min(http.max_held_per_tenant, out.total)
                                                 : std::max(out.total / 2, 1u);
  return out;
}

namespace {

using json = nlohmann::json;

constexpr std::size_t max_config_file_bytes = 1024 * 1024;
constexpr std::size_t max_secrets_file_bytes = 64 * 1024;
constexpr std::size_t max_url_chars = 2048;
constexpr std::size_t max_purpose_chars = 64;
constexpr std::size_t max_key_id_chars = 64;
constexpr std::size_t vault_key_bytes = 32;
constexpr std::size_t min_secret_chars = 32;
constexpr std::size_t generated_secret_bytes = 32;
constexpr const char* secrets_file_name = "secrets.json";
constexpr const char* admin_token_prefix = "vxa_";

status invalid(std::string message) {
  return status::error(errc::config_invalid, std::move(message));
}

/// Overwrites a string's bytes before it is released.
void wipe(std::string& text) {
  if (!text.empty())
    OPENSSL_cleanse(text.data(), text.size());
}

/// Overwrites every string inside a parsed document (secrets files).
void wipe_strings(json& doc) {
  if (doc.is_string()) {
    wipe(doc.get_ref<std::string&>());
  } else if (doc.is_structured()) {
    for (auto& child : doc)
      wipe_strings(child);
  }
}

/// A user-supplied key made safe to quote: printable ASCII, at most 64 chars.
std::string printable(std::string_view text) {
  std::string out;
  for (char ch : text.substr(0, 64))
    out += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  if (text.size() > 64)
    out += "...";
  return out;
}

std::string join_path(const std::string& prefix, std::string_view key) {
  return prefix.empty() ? std::string{key} : prefix + "." + std::string{key};
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// -- value checks -------------------------------------------------------------

bool is_bind_address(const std::string& text) {
  if (text == "localhost")
    return true;
  unsigned char buf[16];
  return ::inet_pton(AF_INET, text.c_str(), buf) == 1
         || ::inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size())
    return false;
  for (std::size_t idx = 0; idx < prefix.size(); ++idx) {
    char ch = text[idx];
    if (ch >= 'A' && ch <= 'Z')
      ch = static_cast<char>(ch - 'A' + 'a');
    if (ch != prefix[idx])
      return false;
  }
  return true;
}

/// An absolute http or https URL: a host name, IPv4 or [IPv6] literal, an
/// optional port 1..65535, no user info, no fragment, no whitespace, control
/// or non-ASCII characters; a query only if `allow_query`.
bool is_http_url(std::string_view url, bool allow_query) {
  if (url.empty() || url.size() > max_url_chars)
    return false;
  for (unsigned char ch : url)
    if (ch <= 0x20 || ch >= 0x7f)
      return false;
  std::string_view rest;
  if (iequals_prefix(url, "http://"))
    rest = url.substr(7);
  else if (iequals_prefix(url, "https://"))
    rest = url.substr(8);
  else
    return false;
  // Split authority from path/query/fragment.
  auto authority_end = rest.find_first_of("/?#");
  auto authority = rest.substr(0, authority_end);
  auto tail =
    authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (tail.find('#') != std::string_view::npos)
    return false;
  if (!allow_query && tail.find('?') != std::string_view::npos)
    return false;
  if (authority.find('@') != std::string_view::npos)
    return false;
  // Host and optional port.
  std::string_view host = authority;
  std::optional<std::string_view> port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return false;
    host = authority.substr(1, close - 1);
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        return false;
      port = after.substr(1);
    }
    unsigned char buf[16];
    if (::inet_pton(AF_INET6, std::string{host}.c_str(), buf) != 1)
      return false;
  } else {
    auto colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    if (host.empty())
      return false;
    for (char ch : host) {
      bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
                || ch == '.' || ch == '-';
      if (!ok)
        return false;
    }
  }
  if (port) {
    if (port->empty() || port->size() > 5)
      return false;
    unsigned value = 0;
    for (char ch : *port) {
      if (ch < '0' || ch > '9')
        return false;
      value = value * 10 + static_cast<unsigned>(ch - '0');
    }
    if (value == 0 || value > 65535)
      return false;
  }
  return true;
}

bool is_purpose(const std::string& text) {
  if (text.empty() || text.size() > max_purpose_chars)
    return false;
  for (char ch : text)
    if (!((ch >= 'a' && ch <= 'z') || ch == '_'))
      return false;
  return true;
}

bool is_key_id(const std::string& text) {
  if (text.empty() || text.size() > max_key_id_chars)
    return false;
  for (char ch : text) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
              || ch == '.' || ch == '_' || ch == '-';
    if (!ok)
      return false;
  }
  return true;
}

bool is_visible_ascii(const std::string& text) {
  for (char ch : text)
    if (ch <= 0x20 || ch >= 0x7f)
      return false;
  return true;
}

// -- JSON text ----------------------------------------------------------------

/// Finds the first key repeated inside one object (nlohmann silently keeps
/// the last one) and records its path, e.g. "http.port".
class duplicate_key_finder {
public:
  bool on_event(json::parse_event_t event, const json& parsed) {
    using ev = json::parse_event_t;
    switch (event) {
    case ev::object_start:
    case ev::array_start:
      frames_.push_back(frame{event == ev::object_start, {}, {}, 0});
      break;
    case ev::key:
      if (!frames_.empty() && parsed.is_string()) {
        auto& top = frames_.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second && !first_)
          first_ = current_path();
      }
      break;
    case ev::object_end:
    case ev::array_end:
      if (!frames_.empty())
        frames_.pop_back();
      next_element();
      break;
    case ev::value:
      next_element();
      break;
    }
    return true;
  }

  const std::optional<std::string>& first() const noexcept { return first_; }

private:
  struct frame {
    bool is_object;
    std::set<std::string> keys;
    std::string key;
    std::size_t index;
  };

  void next_element() {
    if (!frames_.empty() && !frames_.back().is_object)
      ++frames_.back().index;
  }

  std::string current_path() const {
    std::string out;
    for (const auto& entry : frames_) {
      if (entry.is_object)
        out = join_path(out, printable(entry.key));
      else
        out += "[" + std::to_string(entry.index) + "]";
    }
    return out;
  }

  std::vector<frame> frames_;
  std::optional<std::string> first_;
};

/// Parses JSON text; `what` names the document in messages ("config").
/// Never quotes the text: a config may carry secrets nearby.
result<json> parse_json(const std::string& text, const std::string& what) {
  duplicate_key_finder duplicates;
  json doc;
  try {
    doc = json::parse(text, [&duplicates](int, json::parse_event_t event, json& parsed) {
      return duplicates.on_event(event, parsed);
    });
  } catch (const json::parse_error& err) {
    auto end = std::min<std::size_t>(err.byte > 0 ? err.byte - 1 : 0, text.size());
    auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
    return invalid(what + " is not valid JSON (line " + std::to_string(line) + ")");
  } catch (const std::exception&) {
    return invalid(what + " is not valid JSON");
  }
  if (duplicates.first())
    return invalid(what + ": duplicate key '" + *duplicates.first() + "'");
  return result<json>{std::move(doc)};
}

/// Reads a whole file that must be regular and at most `max_bytes` long.
/// Returns nullopt if it does not exist. With `private_only`, a file that
/// group or others may access is refused; without `follow_symlinks`, a
/// symbolic link is refused as not regular.
result<std::optional<std::string>> read_file(const std::string& path, const std::string& what,
                                             std::size_t max_bytes, bool private_only,
                                             bool follow_symlinks) {
  int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  if (!follow_symlinks)
    flags |= O_NOFOLLOW;
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT)
      return std::optional<std::string>{};
    if (err == ELOOP)
      return invalid(what + " '" + path + "' is not a regular file");
    return invalid(what + " '" + path + "' cannot be opened: " + errno_text(err));
  }
  // Check type, permissions and size before reading.
  struct ::stat info {};
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return invalid(what + " '" + path + "' cannot be inspected: " + errno_text(err));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return invalid(what + " '" + path + "' is not a regular file");
  }
  if (private_only && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return invalid(what + " '" + path + "' is accessible by group or others (mode " + mode
                   + "); it must be mode 0600 or stricter");
  }
  if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return invalid(what + " '" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
  }
  // Read it all.
  std::string text;
  text.resize(max_bytes + 1);
  std::size_t filled = 0;
  while (filled < text.size()) {
    auto got = ::read(fd, text.data() + filled, text.size() - filled);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      int err = errno;
      ::close(fd);
      wipe(text);
      return invalid(what + " '" + path + "' cannot be read: " + errno_text(err));
    }
    if (got == 0)
      break;
    filled += static_cast<std::size_t>(got);
  }
  ::close(fd);
  if (filled > max_bytes) {
    wipe(text);
    return invalid(what + " '" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
  }
  text.resize(filled);
  return std::optional<std::string>{std::move(text)};
}

// -- configuration document ---------------------------------------------------

/// One JSON object of the configuration and its key path ("" for the root).
class object_reader {
public:
  object_reader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  std::string path_of(std::string_view key) const { return join_path(path_, key); }

  /// Refuses any key not in `allowed`, naming its full path.
  status allow_only(std::initializer_list<std::string_view> allowed) const {
    for (const auto& item : object_.items()) {
      bool known = false;
      for (auto name : allowed)
        known = known || item.key() == name;
      if (!known)
        return invalid("unknown key '" + path_of(printable(item.key())) + "'");
    }
    return status::ok();
  }

  const json* find(const char* key) const {
    auto pos = object_.find(key);
    return pos == object_.end() ? nullptr : &*pos;
  }

  /// An integer in [min, max]; floats, strings and booleans are refused.
  template <class Integer>
  status integer(const char* key, uint64_t min, uint64_t max, Integer& out) const {
    const json* value = find(key);
    if (value == nullptr)
      return status::ok();
    std::optional<uint64_t> number;
    if (value->is_number_unsigned())
      number = value->get<uint64_t>();
    else if (value->is_number_integer() && value->get<int64_t>() >= 0)
      number = static_cast<uint64_t>(value->get<int64_t>());
    if (number && *number >= min && *number <= max) {
      out = static_cast<Integer>(*number);
      return status::ok();
    }
    return invalid(path_of(key) + ": expected an integer from " + std::to_string(min) + " to "
                   + std::to_string(max));
  }

  status boolean(const char* key, bool& out) const {
    const json* value = find(key);
    if (value == nullptr)
      return status::ok();
    if (!value->is_boolean())
      return invalid(path_of(key) + ": expected true or false");
    out = value->get<bool>();
    return status::ok();
  }

  /// A string accepted by `check` (if given); `expected` describes it.
  status string(const char* key, std::string& out, bool (*check)(const std::string&),
                const char* expected) const {
    const json* value = find(key);
    if (value == nullptr)
      return status::ok();
    if (!value->is_string())
      return invalid(path_of(key) + ": expected " + expected);
    const auto& text = value->get_ref<const std::string&>();
    if (check != nullptr && !check(text))
      return invalid(path_of(key) + ": expected " + expected);
    out = text;
    return status::ok();
  }

  /// One of `names`; stores the index of the match.
  status choice(const char* key, std::initializer_list<const char*> names, std::size_t& out) const {
    const json* value = find(key);
    if (value == nullptr)
      return status::ok();
    std::size_t idx = 0;
    if (value->is_string()) {
      for (const char* name : names) {
        if (value->get_ref<const std::string&>() == name) {
          out = idx;
          return status::ok();
        }
        ++idx;
      }
    }
    std::string expected;
    for (const char* name : names)
      expected += (expected.empty() ? "\"" : ", \"") + std::string{name} + "\"";
    return invalid(path_of(key) + ": expected one of " + expected);
  }

  /// Runs `parse` on a nested object, if present.
  template <class Parse>
  status section(const char* key, Parse&& parse) const {
    const json* value = find(key);
    if (value == nullptr)
      return status::ok();
    if (!value->is_object())
      return invalid(path_of(key) + ": expected an object");
    return parse(object_reader{*value, path_of(key)});
  }

private:
  const json& object_;
  std::string path_;
};

bool is_non_empty_path(const std::string& text) {
  return !text.empty() && text.find('\0') == std::string::npos;
}

bool is_base_url(const std::string& text) {
  return is_http_url(text, false);
}

bool is_registered_url(const std::string& text) {
  return is_http_url(text, true);
}

bool is_log_level(const std::string& text) {
  return text == "error" || text == "warn" || text == "info" || text == "debug";
}

constexpr const char* bind_expectation = "an IPv4 or IPv6 address literal or \"localhost\"";

constexpr const char* path_expectation = "a path (no NUL characters)";

bool is_path(const std::string& text) {
  return text.find('\0') == std::string::npos;
}

status parse_http(const object_reader& in, http_config& out) {
  VOXOS_RETURN_IF_ERROR(
    in.allow_only({"bind", "port", "public_base_url", "max_body_bytes", "threads",
                   "max_held_requests", "max_held_per_tenant", "max_header_lines",
                   "max_header_bytes", "broker_bind", "broker_port", "console_dir"}));
  VOXOS_RETURN_IF_ERROR(in.string("bind", out.bind, is_bind_address, bind_expectation));
  VOXOS_RETURN_IF_ERROR(in.integer("port", 0, 65535, out.port));
  VOXOS_RETURN_IF_ERROR(
    in.string("broker_bind", out.broker_bind, is_bind_address, bind_expectation));
  VOXOS_RETURN_IF_ERROR(in.integer("broker_port", 0, 65535, out.broker_port));
  VOXOS_RETURN_IF_ERROR(
    in.string("public_base_url", out.public_base_url, is_base_url,
              "an absolute http or https URL without user info, query or fragment"));
  VOXOS_RETURN_IF_ERROR(in.integer("max_body_bytes", 1024, 64 * 1024 * 1024, out.max_body_bytes));
  VOXOS_RETURN_IF_ERROR(in.integer("threads", 2, 256, out.threads));
  // (the bounds of each depend on the one before it; 0 derives it from them,
  // so that a printed default document keeps deriving when threads change)
  VOXOS_RETURN_IF_ERROR(in.integer("max_held_requests", 0, out.threads - 1, out.max_held_requests));
  VOXOS_RETURN_IF_ERROR(
    in.integer("max_held_per_tenant", 0, held_limits_of(out).total, out.max_held_per_tenant));
  VOXOS_RETURN_IF_ERROR(in.integer("max_header_lines", 8, 10000, out.max_header_lines));
  VOXOS_RETURN_IF_ERROR(in.integer("max_header_bytes", 4096, 1024 * 1024, out.max_header_bytes));
  VOXOS_RETURN_IF_ERROR(in.string("console_dir", out.console_dir, is_path, path_expectation));
  return status::ok();
}

status parse_caf_tls(const object_reader& in, caf_tls_config& out) {
  VOXOS_RETURN_IF_ERROR(in.allow_only({"certificate", "key", "ca_file", "key_passphrase_file"}));
  VOXOS_RETURN_IF_ERROR(in.string("certificate", out.certificate, is_path, path_expectation));
  VOXOS_RETURN_IF_ERROR(in.string("key", out.key, is_path, path_expectation));
  VOXOS_RETURN_IF_ERROR(in.string("ca_file", out.ca_file, is_path, path_expectation));
  VOXOS_RETURN_IF_ERROR(
    in.string("key_passphrase_file", out.key_passphrase_file, is_path, path_expectation));
  return status::ok();
}

status parse_caf(const object_reader& in, caf_config& out) {
  VOXOS_RETURN_IF_ERROR(in.allow_only({"bind", "port", "scheduler_threads", "transport", "tls"}));
  VOXOS_RETURN_IF_ERROR(in.string("bind", out.bind, is_bind_address, bind_expectation));
  VOXOS_RETURN_IF_ERROR(in.integer("port", 0, 65535, out.port));
  VOXOS_RETURN_IF_ERROR(in.integer("scheduler_threads", 1, 64, out.scheduler_threads));
  std::size_t transport = static_cast<std::size_t>(out.transport);
  VOXOS_RETURN_IF_ERROR(in.choice("transport", {"plain", "tls"}, transport));
  out.transport = static_cast<caf_transport>(transport);
  VOXOS_RETURN_IF_ERROR(
    in.section("tls", [&](const object_reader& sub) { return parse_caf_tls(sub, out.tls); }));
  // The three files are required exactly when the transport is "tls"; the
  // passphrase file is optional then and refused otherwise.
  const auto tls_path = in.path_of("tls");
  const auto transport_is = in.path_of("transport") + " is \"tls\"";
  std::pair<const char*, const std::string*> files[] = {
    {"certificate", &out.tls.certificate},
    {"key", &out.tls.key},
    {"ca_file", &out.tls.ca_file},
    {"key_passphrase_file", &out.tls.key_passphrase_file}};
  for (const auto& [key, path] : files) {
    bool optional = std::string_view{key} == "key_passphrase_file";
    if (out.transport == caf_transport::tls && !optional && path->empty())
      return invalid(join_path(tls_path, key) + ": required (a non-empty path) when "
                     + transport_is);
    if (out.transport != caf_transport::tls && !path->empty())
      return invalid(join_path(tls_path, key) + ": allowed only when " + transport_is);
  }
  return status::ok();
}

status parse_event_store(const object_reader& in, event_store_config& out) {
  VOXOS_RETURN_IF_ERROR(
    in.allow_only({"sync", "max_batch_events", "max_event_bytes", "deferred_sync_ms"}));
  VOXOS_RETURN_IF_ERROR(in.boolean("sync", out.sync));
  VOXOS_RETURN_IF_ERROR(in.integer("deferred_sync_ms", 1, 10000, out.deferred_sync_ms));
  VOXOS_RETURN_IF_ERROR(in.integer("max_batch_events", 1, 65536, out.max_batch_events));
  VOXOS_RETURN_IF_ERROR(in.integer("max_event_bytes", 1024, 16 * 1024 * 1024, out.max_event_bytes));
  return status::ok();
}

status parse_mcp(const object_reader& in, mcp_config& out) {
  VOXOS_RETURN_IF_ERROR(in.allow_only(
    {"connect_timeout_ms", "read_timeout_ms", "request_timeout_ms", "max_request_timeout_ms",
     "max_body_bytes", "max_message_bytes", "max_in_flight", "max_queued", "max_resumptions",
     "max_tool_pages", "max_cached_tools", "max_input_rounds"}));
  VOXOS_RETURN_IF_ERROR(in.integer("connect_timeout_ms", 100, 60'000, out.connect_timeout_ms));
  VOXOS_RETURN_IF_ERROR(in.integer("read_timeout_ms", 100, 600'000, out.read_timeout_ms));
  VOXOS_RETURN_IF_ERROR(in.integer("request_timeout_ms", 100, 600'000, out.request_timeout_ms));
  VOXOS_RETURN_IF_ERROR(
    in.integer("max_request_timeout_ms", 100, 3'600'000, out.max_request_timeout_ms));
  VOXOS_RETURN_IF_ERROR(
    in.integer("max_body_bytes", 64 * 1024, 256 * 1024 * 1024, out.max_body_bytes));
  VOXOS_RETURN_IF_ERROR(
    in.integer("max_message_bytes", 64 * 1024, 64 * 1024 * 1024, out.max_message_bytes));
  VOXOS_RETURN_IF_ERROR(in.integer("max_in_flight", 1, 256, out.max_in_flight));
  VOXOS_RETURN_IF_ERROR(in.integer("max_queued", 1, 65'536, out.max_queued));
  VOXOS_RETURN_IF_ERROR(in.integer("max_resumptions", 0, 100, out.max_resumptions));
  VOXOS_RETURN_IF_ERROR(in.integer("max_tool_pages", 1, 1'000, out.max_tool_pages));
  VOXOS_RETURN_IF_ERROR(in.integer("max_cached_tools", 1, 100'000, out.max_cached_tools));
  VOXOS_RETURN_IF_ERROR(in.integer("max_input_rounds", 0, 16, out.max_input_rounds));
  if (out.request_timeout_ms > out.max_request_timeout_ms)
    return invalid(in.path_of("request_timeout_ms") + ": must not exceed "
                   + in.path_of("max_request_timeout_ms"));
  return status::ok();
}

status parse_run(const object_reader& in, run_config& out) {
  VOXOS_RETURN_IF_ERROR(in.allow_only(
    {"wave_width", "max_calls", "max_argument_bytes", "max_corrections", "call_timeout_ms",
     "max_live_runs", "trace_dir", "trace_max_bytes", "location_max_age_s", "host_keepalive_ms"}));
  VOXOS_RETURN_IF_ERROR(in.integer("wave_width", 1, 8, out.wave_width));
  VOXOS_RETURN_IF_ERROR(in.integer("max_calls", 1, 4'096, out.max_calls));
  VOXOS_RETURN_IF_ERROR(
    in.integer("max_argument_bytes", 1024, 16 * 1024 * 1024, out.max_argument_bytes));
  VOXOS_RETURN_IF_ERROR(in.integer("max_corrections", 1, 100, out.max_corrections));
  VOXOS_RETURN_IF_ERROR(in.integer("call_timeout_ms", 100, 600'000, out.call_timeout_ms));
  VOXOS_RETURN_IF_ERROR(in.integer("max_live_runs", 1, 1'000'000, out.max_live_runs));
  VOXOS_RETURN_IF_ERROR(in.string("trace_dir", out.trace_dir, nullptr, "a path"));
  VOXOS_RETURN_IF_ERROR(
    in.integer("trace_max_bytes", uint64_t{1} << 20, uint64_t{4} << 30, out.trace_max_bytes));
  VOXOS_RETURN_IF_ERROR(in.integer("location_max_age_s", 1, 86'400, out.location_max_age_s));
  VOXOS_RETURN_IF_ERROR(in.integer("host_keepalive_ms", 100, 60'000, out.host_keepalive_ms));
  return status::ok();
}

status parse_tools(const object_reader& in, tools_config& out) {
  VOXOS_RETURN_IF_ERROR(
    in.allow_only({"pending_candidates", "memories_per_agent", "skills", "open_plans_per_agent",
                   "history_context_bytes", "delegations_per_run", "delegation_summary_bytes"}));
  VOXOS_RETURN_IF_ERROR(in.integer("pending_candidates", 1, 100'000, out.pending_candidates));
  VOXOS_RETURN_IF_ERROR(in.integer("memories_per_agent", 1, 1'000'000, out.memories_per_agent));
  VOXOS_RETURN_IF_ERROR(in.integer("skills", 1, 100'000, out.skills));
  VOXOS_RETURN_IF_ERROR(in.integer("open_plans_per_agent", 1, 100'000, out.open_plans_per_agent));
  VOXOS_RETURN_IF_ERROR(
    in.integer("history_context_bytes", 1024, 1024 * 1024, out.history_context_bytes));
  VOXOS_RETURN_IF_ERROR(in.integer("delegations_per_run", 1, 1'000, out.delegations_per_run));
  VOXOS_RETURN_IF_ERROR(
    in.integer("delegation_summary_bytes", 1024, 64 * 1024, out.delegation_summary_bytes));
  return status::ok();
}

status parse_work(const object_reader& in, work_config& out) {
  VOXOS_RETURN_IF_ERROR(
    in.allow_only({"lease_ms", "max_attempts", "retry_delay_ms", "max_pending", "max_lease_wait_ms",
                   "min_schedule_interval_s", "max_schedules"}));
  VOXOS_RETURN_IF_ERROR(in.integer("lease_ms", 1'000, 3'600'000, out.lease_ms));
  VOXOS_RETURN_IF_ERROR(in.integer("max_attempts", 1, 100, out.max_attempts));
  VOXOS_RETURN_IF_ERROR(in.integer("retry_delay_ms", 0, 3'600'000, out.retry_delay_ms));
  VOXOS_RETURN_IF_ERROR(in.integer("max_pending", 1, 1'000'000, out.max_pending));
  VOXOS_RETURN_IF_ERROR(in.integer("max_lease_wait_ms", 0, 120'000, out.max_lease_wait_ms));
  VOXOS_RETURN_IF_ERROR(
    in.integer("min_schedule_interval_s", 1, 86'400, out.min_schedule_interval_s));
  VOXOS_RETURN_IF_ERROR(in.integer("max_schedules", 1, 1'000'000, out.max_schedules));
  return status::ok();
}

status parse_secrets(const object_reader& in, secrets_config& out) {
  VOXOS_RETURN_IF_ERROR(in.allow_only({"source", "file"}));
  std::size_t source = static_cast<std::size_t>(out.source);
  VOXOS_RETURN_IF_ERROR(in.choice("source", {"generate", "env", "file"}, source));
  out.source = static_cast<secret_source>(source);
  VOXOS_RETURN_IF_ERROR(in.string("file", out.file, nullptr, "a path"));
  // `file` names the secrets file exactly when the source is "file".
  if (out.source == secret_source::file && !is_non_empty_path(out.file))
    return invalid(in.path_of("file") + ": required (a non-empty path) when " + in.path_of("source")
                   + " is \"file\"");
  if (out.source != secret_source::file && !out.file.empty())
    return invalid(in.path_of("file") + ": allowed only when " + in.path_of("source")
                   + " is \"file\"");
  return status::ok();
}

status parse_registered_urls(const json& list, const std::string& path,
                             std::vector<node_config::registered_url>& out) {
  if (!list.is_array())
    return invalid(path + ": expected an array");
  out.clear();
  std::size_t idx = 0;
  for (const auto& item : list) {
    auto item_path = path + "[" + std::to_string(idx++) + "]";
    if (!item.is_object())
      return invalid(item_path + ": expected an object with \"url\" and \"purpose\"");
    object_reader in{item, item_path};
    VOXOS_RETURN_IF_ERROR(in.allow_only({"url", "purpose"}));
    for (const char* required : {"url", "purpose"})
      if (in.find(required) == nullptr)
        return invalid(in.path_of(required) + ": required");
    node_config::registered_url entry;
    VOXOS_RETURN_IF_ERROR(in.string(
      "url", entry.url, is_registered_url,
      "an absolute http or https URL without user info or fragment (at most 2048 characters)"));
    VOXOS_RETURN_IF_ERROR(
      in.string("purpose", entry.purpose, is_purpose, "1 to 64 characters of a-z and _"));
    out.push_back(std::move(entry));
  }
  return status::ok();
}

result<node_config> parse_document(const json& doc) {
  if (!doc.is_object())
    return invalid("config: expected a JSON object at the top level");
  node_config cfg;
  object_reader in{doc, ""};
  VOXOS_RETURN_IF_ERROR(
    in.allow_only({"profile", "data_dir", "log_level", "http", "caf", "event_store", "secrets",
                   "mcp", "run", "tools", "work", "registered_urls"}));
  std::size_t mode = static_cast<std::size_t>(cfg.mode);
  VOXOS_RETURN_IF_ERROR(in.choice("profile", {"embedded", "production"}, mode));
  cfg.mode = static_cast<profile>(mode);
  VOXOS_RETURN_IF_ERROR(in.string("data_dir", cfg.data_dir, is_non_empty_path, "a non-empty path"));
  VOXOS_RETURN_IF_ERROR(in.string("log_level", cfg.log_level, is_log_level,
                                  "one of \"error\", \"warn\", \"info\", \"debug\""));
  VOXOS_RETURN_IF_ERROR(
    in.section("http", [&](const object_reader& sub) { return parse_http(sub, cfg.http); }));
  VOXOS_RETURN_IF_ERROR(
    in.section("caf", [&](const object_reader& sub) { return parse_caf(sub, cfg.caf); }));
  VOXOS_RETURN_IF_ERROR(in.section("event_store", [&](const object_reader& sub) {
    return parse_event_store(sub, cfg.event_store);
  }));
  VOXOS_RETURN_IF_ERROR(in.section(
    "secrets", [&](const object_reader& sub) { return parse_secrets(sub, cfg.secrets); }));
  VOXOS_RETURN_IF_ERROR(
    in.section("mcp", [&](const object_reader& sub) { return parse_mcp(sub, cfg.mcp); }));
  VOXOS_RETURN_IF_ERROR(
    in.section("run", [&](const object_reader& sub) { return parse_run(sub, cfg.run); }));
  VOXOS_RETURN_IF_ERROR(
    in.section("tools", [&](const object_reader& sub) { return parse_tools(sub, cfg.tools); }));
  VOXOS_RETURN_IF_ERROR(
    in.section("work", [&](const object_reader& sub) { return parse_work(sub, cfg.work); }));
  if (const json* urls = in.find("registered_urls"))
    VOXOS_RETURN_IF_ERROR(parse_registered_urls(*urls, "registered_urls", cfg.registered_urls));
  return result<node_config>{std::move(cfg)};
}

json to_json(const node_config& cfg) {
  static constexpr const char* source_names[] = {"generate", "env", "file"};
  json doc = json::object();
  doc["profile"] = cfg.mode == profile::production ? "production" : "embedded";
  doc["data_dir"] = cfg.data_dir;
  doc["log_level"] = cfg.log_level;
  doc["http"] = json{{"bind", cfg.http.bind},
                     {"port", cfg.http.port},
                     {"public_base_url", cfg.http.public_base_url},
                     {"max_body_bytes", cfg.http.max_body_bytes},
                     {"threads", cfg.http.threads},
                     {"max_held_requests", cfg.http.max_held_requests},
                     {"max_held_per_tenant", cfg.http.max_held_per_tenant},
                     {"max_header_lines", cfg.http.max_header_lines},
                     {"max_header_bytes", cfg.http.max_header_bytes},
                     {"broker_bind", cfg.http.broker_bind},
                     {"broker_port", cfg.http.broker_port},
                     {"console_dir", cfg.http.console_dir}};
  doc["caf"] = json{{"bind", cfg.caf.bind},
                    {"port", cfg.caf.port},
                    {"scheduler_threads", cfg.caf.scheduler_threads},
                    {"transport", cfg.caf.transport == caf_transport::tls ? "tls" : "plain"},
                    {"tls",
                     {{"certificate", cfg.caf.tls.certificate},
                      {"key", cfg.caf.tls.key},
                      {"ca_file", cfg.caf.tls.ca_file},
                      {"key_passphrase_file", cfg.caf.tls.key_passphrase_file}}}};
  doc["event_store"] = json{{"sync", cfg.event_store.sync},
                            {"max_batch_events", cfg.event_store.max_batch_events},
                            {"max_event_bytes", cfg.event_store.max_event_bytes},
                            {"deferred_sync_ms", cfg.event_store.deferred_sync_ms}};
  doc["secrets"] = json{{"source", source_names[static_cast<std::size_t>(cfg.secrets.source)]},
                        {"file", cfg.secrets.file}};
  doc["mcp"] = json{{"connect_timeout_ms", cfg.mcp.connect_timeout_ms},
                    {"read_timeout_ms", cfg.mcp.read_timeout_ms},
                    {"request_timeout_ms", cfg.mcp.request_timeout_ms},
                    {"max_request_timeout_ms", cfg.mcp.max_request_timeout_ms},
                    {"max_body_bytes", cfg.mcp.max_body_bytes},
                    {"max_message_bytes", cfg.mcp.max_message_bytes},
                    {"max_in_flight", cfg.mcp.max_in_flight},
                    {"max_queued", cfg.mcp.max_queued},
                    {"max_resumptions", cfg.mcp.max_resumptions},
                    {"max_tool_pages", cfg.mcp.max_tool_pages},
                    {"max_cached_tools", cfg.mcp.max_cached_tools},
                    {"max_input_rounds", cfg.mcp.max_input_rounds}};
  doc["run"] = json{{"wave_width", cfg.run.wave_width},
                    {"max_calls", cfg.run.max_calls},
                    {"max_argument_bytes", cfg.run.max_argument_bytes},
                    {"max_corrections", cfg.run.max_corrections},
                    {"call_timeout_ms", cfg.run.call_timeout_ms},
                    {"max_live_runs", cfg.run.max_live_runs},
                    {"trace_dir", cfg.run.trace_dir},
                    {"trace_max_bytes", cfg.run.trace_max_bytes},
                    {"location_max_age_s", cfg.run.location_max_age_s},
                    {"host_keepalive_ms", cfg.run.host_keepalive_ms}};
  doc["tools"] = json{{"pending_candidates", cfg.tools.pending_candidates},
                      {"memories_per_agent", cfg.tools.memories_per_agent},
                      {"skills", cfg.tools.skills},
                      {"open_plans_per_agent", cfg.tools.open_plans_per_agent},
                      {"history_context_bytes", cfg.tools.history_context_bytes},
                      {"delegations_per_run", cfg.tools.delegations_per_run},
                      {"delegation_summary_bytes", cfg.tools.delegation_summary_bytes}};
  doc["work"] = json{{"lease_ms", cfg.work.lease_ms},
                     {"max_attempts", cfg.work.max_attempts},
                     {"retry_delay_ms", cfg.work.retry_delay_ms},
                     {"max_pending", cfg.work.max_pending},
                     {"max_lease_wait_ms", cfg.work.max_lease_wait_ms},
                     {"min_schedule_interval_s", cfg.work.min_schedule_interval_s},
                     {"max_schedules", cfg.work.max_schedules}};
  doc["registered_urls"] = json::array();
  for (const auto& entry : cfg.registered_urls)
    doc["registered_urls"].push_back(json{{"url", entry.url}, {"purpose", entry.purpose}});
  return doc;
}

// -- the CAF endpoint's TLS files ----------------------------------------------

constexpr std::size_t max_pem_file_bytes = 1024 * 1024;
constexpr std::size_t max_passphrase_file_bytes = 4096;
/// CAF copies the passphrase into OpenSSL's 1 KiB PEM buffer (PEM_BUFSIZE),
/// NUL-terminated: a longer one would be cut silently.
constexpr std::size_t max_passphrase_bytes = 1023;

struct bio_free {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct x509_free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct pkey_free {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using bio_ptr = std::unique_ptr<BIO, bio_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;

/// Reads one TLS file named by config key `key` (e.g. "caf.tls.key").
result<std::string> read_tls_file(const std::string& key, const std::string& path,
                                  std::size_t max_bytes, bool private_only) {
  auto text = read_file(path, key + " file", max_bytes, private_only, true);
  if (!text)
    return text.error();
  if (!text->has_value())
    return invalid(key + " file '" + path + "' does not exist");
  return result<std::string>{std::move(**text)};
}

bio_ptr memory_bio(const std::string& text) {
  return bio_ptr{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
}

/// The passphrase source OpenSSL asks while decoding a key; never a prompt.
struct passphrase_source {
  const std::string* passphrase = nullptr;
  bool asked = false;
};

int passphrase_callback(char* buf, int size, int, void* user) {
  auto* source = static_cast<passphrase_source*>(user);
  source->asked = true;
  if (source->passphrase == nullptr || size <= 0
      || source->passphrase->size() >= static_cast<std::size_t>(size))
    return -1;
  std::memcpy(buf, source->passphrase->data(), source->passphrase->size());
  return static_cast<int>(source->passphrase->size());
}

/// Every certificate of a PEM text in order, as OpenSSL's chain loader reads
/// it; empty if there is none or a block is malformed.
std::vector<x509_ptr> pem_certificates(const std::string& text) {
  std::vector<x509_ptr> out;
  auto bio = memory_bio(text);
  if (!bio)
    return out;
  passphrase_source none;
  ERR_clear_error();
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, passphrase_callback, &none))
    out.emplace_back(cert);
  // Reading stops with "no start line" at the end of the text; any other
  // error is a malformed block.
  auto err = ERR_peek_last_error();
  bool clean_end = ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE;
  ERR_clear_error();
  if (!clean_end)
    out.clear();
  return out;
}

/// The key passphrase from `path`: private to its owner, one trailing
/// newline ignored, 1 .. 1023 bytes without NUL.
result<caf_tls_secret> read_passphrase_file(const std::string& path) {
  const std::string key = "caf.tls.key_passphrase_file";
  auto text = read_tls_file(key, path, max_passphrase_file_bytes, true);
  if (!text)
    return text.error();
  caf_tls_secret out;
  out.key_passphrase.swap(*text);
  auto& phrase = out.key_passphrase;
  if (!phrase.empty() && phrase.back() == '\n')
    phrase.pop_back();
  if (!phrase.empty() && phrase.back() == '\r')
    phrase.pop_back();
  if (phrase.empty() || phrase.size() > max_passphrase_bytes
      || phrase.find('\0') != std::string::npos)
    return invalid(key + " file '" + path + "': expected a passphrase of 1 to "
                   + std::to_string(max_passphrase_bytes)
                   + " bytes without NUL characters (one trailing newline is ignored)");
  return result<caf_tls_secret>{std::move(out)};
}

/// Writes all of `data` to `fd`.
bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    auto put = ::write(fd, data.data() + done, data.size() - done);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      return false;
    done += static_cast<std::size_t>(put);
  }
  return true;
}

/// A sealed in-memory copy of `bytes` (memfd, close-on-exec, no further
/// writes), its descriptor added to `fds`; answers the path that opens it,
/// or nullopt when the kernel offers no memfd.
std::optional<std::string> pin_copy(const std::string& bytes, const char* name,
                                    std::vector<int>& fds) {
  int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return std::nullopt;
  if (!write_all(fd, bytes)) {
    ::close(fd);
    return std::nullopt;
  }
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  fds.push_back(fd);
  return "/proc/self/fd/" + std::to_string(fd);
}

/// The checks of check_caf_tls, for caf_transport::tls.
result<caf_tls_secret> check_tls_files(const caf_tls_config& tls) {
  const std::string cert_key = "caf.tls.certificate";
  const std::string key_key = "caf.tls.key";
  const std::string ca_key = "caf.tls.ca_file";
  // The certificate (chain): the first one is the node's.
  auto cert_text = read_tls_file(cert_key, tls.certificate, max_pem_file_bytes, false);
  if (!cert_text)
    return cert_text.error();
  auto chain = pem_certificates(*cert_text);
  if (chain.empty())
    return invalid(cert_key + " file '" + tls.certificate + "' holds no PEM certificate");
  if (X509_cmp_current_time(X509_get0_notAfter(chain.front().get())) <= 0)
    return invalid(cert_key + " file '" + tls.certificate + "': the certificate has expired");
  // The private key, opened as CAF will open it (with the passphrase if any).
  auto key_text = read_tls_file(key_key, tls.key, max_pem_file_bytes, true);
  if (!key_text)
    return key_text.error();
  struct wipe_on_exit {
    std::string& text;
    ~wipe_on_exit() { wipe(text); }
  } key_wiper{*key_text};
  caf_tls_secret secret;
  if (!tls.key_passphrase_file.empty()) {
    auto read = read_passphrase_file(tls.key_passphrase_file);
    if (!read)
      return read.error();
    secret = std::move(*read);
  }
  passphrase_source source;
  if (!tls.key_passphrase_file.empty())
    source.passphrase = &secret.key_passphrase;
  pkey_ptr private_key;
  if (auto bio = memory_bio(*key_text))
    private_key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, passphrase_callback, &source));
  ERR_clear_error();
  if (!private_key && source.asked && tls.key_passphrase_file.empty())
    return invalid(key_key + " file '" + tls.key
                   + "' is encrypted; set caf.tls.key_passphrase_file");
  if (!private_key && source.asked)
    return invalid(key_key + " file '" + tls.key
                   + "' does not open with the passphrase of caf.tls.key_passphrase_file");
  if (!private_key)
    return invalid(key_key + " file '" + tls.key + "' holds no PEM private key");
  if (X509_check_private_key(chain.front().get(), private_key.get()) != 1) {
    ERR_clear_error();
    return invalid(key_key + " file '" + tls.key + "' is not the key of " + cert_key);
  }
  // The CA certificates peers must chain to.
  auto ca_text = read_tls_file(ca_key, tls.ca_file, max_pem_file_bytes, false);
  if (!ca_text)
    return ca_text.error();
  if (pem_certificates(*ca_text).empty())
    return invalid(ca_key + " file '" + tls.ca_file + "' holds no PEM certificate");
  secret.certificate_path =
    pin_copy(*cert_text, "caf-certificate", secret.pinned_fds).value_or(tls.certificate);
  secret.key_path = pin_copy(*key_text, "caf-key", secret.pinned_fds).value_or(tls.key);
  secret.ca_path = pin_copy(*ca_text, "caf-ca", secret.pinned_fds).value_or(tls.ca_file);
  return result<caf_tls_secret>{std::move(secret)};
}

// -- secrets ------------------------------------------------------------------

/// One secret entry before validation. `origin` names where the value came
/// from ("VOXOS_ADMIN_TOKEN" or "secrets file 'var/secrets.json': admin_token")
/// for messages; `env_name` is the variable that may supply or override it.
struct secret_entry {
  const char* env_name;
  std::string origin;
  std::optional<std::string> value;

  explicit secret_entry(const char* name) : env_name(name), origin(name) {}
  secret_entry(const secret_entry&) = delete;
  secret_entry& operator=(const secret_entry&) = delete;
  ~secret_entry() {
    if (value)
      wipe(*value);
  }
};

struct raw_secrets {
  secret_entry key_id{env_vault_key_id};
  secret_entry vault_key{env_vault_key};             // base64, decoded by validate_secrets
  secret_entry retired_keys{env_vault_retired_keys}; // "id:base64,..."
  secret_entry oauth_state{env_oauth_state_secret};
  secret_entry admin_token{env_admin_token};
};

constexpr const char* file_key_id = "vault_key_id";
constexpr const char* file_vault_key = "vault_key";
constexpr const char* file_retired_keys = "vault_retired_keys";
constexpr const char* file_oauth_state = "oauth_state_signing_secret";
constexpr const char* file_admin_token = "admin_token";

/// Reads a secrets file (generated or named) into `out`: a JSON object of
/// string entries, private to its owner. `follow_symlinks` is false for the
/// generated file, which the node itself creates.
status read_secrets_file(const std::string& path, bool follow_symlinks, raw_secrets& out) {
  const std::string label = "secrets file '" + path + "'";
  std::pair<const char*, secret_entry*> entries[] = {{file_key_id, &out.key_id},
                                                     {file_vault_key, &out.vault_key},
                                                     {file_retired_keys, &out.retired_keys},
                                                     {file_oauth_state, &out.oauth_state},
                                                     {file_admin_token, &out.admin_token}};
  for (auto& [key, entry] : entries)
    entry->origin = label + ": " + key;
  // Read and parse; the text is wiped as soon as it is parsed.
  auto text = read_file(path, "secrets file", max_secrets_file_bytes, true, follow_symlinks);
  if (!text)
    return text.error();
  if (!text->has_value())
    return invalid(label + " does not exist");
  auto doc = parse_json(**text, label);
  wipe(**text);
  if (!doc)
    return doc.error();
  // Shape: an object of (up to) the four string entries.
  status outcome = status::ok();
  if (!doc->is_object()) {
    outcome = invalid(label + ": expected a JSON object");
  } else {
    object_reader in{*doc, ""};
    outcome = in.allow_only(
      {file_key_id, file_vault_key, file_retired_keys, file_oauth_state, file_admin_token});
    if (!outcome.is_ok())
      outcome = invalid(label + ": " + outcome.message());
    for (auto& [key, entry] : entries) {
      if (!outcome.is_ok())
        break;
      const json* value = in.find(key);
      if (value == nullptr)
        continue;
      if (!value->is_string()) {
        outcome = invalid(entry->origin + ": expected a string");
        break;
      }
      entry->value = value->get<std::string>();
    }
  }
  wipe_strings(*doc);
  return outcome;
}

/// Environment variables that are set replace entries one by one.
void apply_env(const env_lookup& env, raw_secrets& out) {
  for (auto* entry :
       {&out.key_id, &out.vault_key, &out.retired_keys, &out.oauth_state, &out.admin_token}) {
    auto value = env(entry->env_name);
    if (!value)
      continue;
    if (entry->value)
      wipe(*entry->value);
    entry->value = std::move(*value);
    entry->origin = entry->env_name;
    wipe(*value);
  }
}

/// A vault key from standard base64 of 32 bytes; nullopt otherwise.
std::optional<std::string> decode_vault_key(const std::string& text) {
  auto key = base64::decode(text);
  if (key && key->size() == vault_key_bytes)
    return key;
  if (key)
    wipe(*key);
  return std::nullopt;
}

const char* const vault_key_expectation =
  ": expected standard base64 (with padding) of exactly 32 bytes";

/// The retired keys of `entry` ("id:base64,id:base64"; absent or empty:
/// none). Messages name the origin and an entry's position or key id, never
/// a key or a malformed entry's text (it may be a key without its id).
result<std::vector<retired_vault_key>> parse_retired_keys(const secret_entry& entry,
                                                          const std::string& active_id) {
  std::vector<retired_vault_key> out;
  auto fail = [&out](status why) -> result<std::vector<retired_vault_key>> {
    for (auto& retired : out)
      wipe(retired.key);
    return why;
  };
  if (!entry.value || entry.value->empty())
    return out;
  const std::string& text = *entry.value;
  std::size_t entry_idx = 0;
  for (std::size_t start = 0; start <= text.size(); ++entry_idx) {
    auto comma = std::min(text.find(',', start), text.size());
    std::string_view item{text.data() + start, comma - start};
    start = comma + 1;
    auto where = entry.origin + ": entry " + std::to_string(entry_idx + 1);
    if (entry_idx == max_retired_vault_keys)
      return fail(invalid(entry.origin + ": at most " + std::to_string(max_retired_vault_keys)
                          + " retired keys"));
    auto colon = item.find(':');
    std::string key_id{item.substr(0, colon == std::string_view::npos ? 0 : colon)};
    if (colon == std::string_view::npos || !is_key_id(key_id))
      return fail(invalid(where + ": expected KEY_ID:KEY, a key id of 1 to "
                          + std::to_string(max_key_id_chars)
                          + " characters of A-Z a-z 0-9 . _ - then the key in base64"));
    if (key_id == active_id)
      return fail(invalid(entry.origin + ": key id '" + key_id
                          + "' is the active key's id; a retired key keeps the id it had"));
    if (std::any_of(out.begin(), out.end(),
                    [&](const retired_vault_key& seen) { return seen.key_id == key_id; }))
      return fail(invalid(entry.origin + ": key id '" + key_id + "' is listed twice"));
    std::string encoded{item.substr(colon + 1)};
    auto key = decode_vault_key(encoded);
    wipe(encoded);
    if (!key)
      return fail(invalid(entry.origin + ": key '" + key_id + "'" + vault_key_expectation));
    out.push_back({std::move(key_id), std::move(*key)});
  }
  return out;
}

/// Checks every entry and builds the node's secrets. Messages name the
/// origin of a bad entry, never its value.
result<node_secrets> validate_secrets(const raw_secrets& raw, const std::string& missing_hint) {
  // Every entry but the key id is required.
  std::string missing;
  for (const auto* entry : {&raw.vault_key, &raw.oauth_state, &raw.admin_token}) {
    if (entry->value)
      continue;
    missing += missing.empty() ? "" : ", ";
    missing += entry->origin;
    if (entry->origin != entry->env_name)
      missing += std::string{" (or "} + entry->env_name + ")";
  }
  if (!missing.empty())
    return invalid("missing secrets: " + missing + missing_hint);
  // Shapes, checked before anything is copied.
  std::string key_id = raw.key_id.value.value_or("k1");
  if (!is_key_id(key_id))
    return invalid(raw.key_id.origin + ": expected 1 to " + std::to_string(max_key_id_chars)
                   + " characters of A-Z a-z 0-9 . _ -");
  if (raw.oauth_state.value->size() < min_secret_chars)
    return invalid(raw.oauth_state.origin + ": expected at least 32 characters");
  const auto& token = *raw.admin_token.value;
  if (token.size() < min_secret_chars || !is_visible_ascii(token))
    return invalid(raw.admin_token.origin
                   + ": expected at least 32 visible ASCII characters (no spaces)");
  auto key = decode_vault_key(*raw.vault_key.value);
  if (!key)
    return invalid(raw.vault_key.origin + vault_key_expectation);
  auto retired = parse_retired_keys(raw.retired_keys, key_id);
  if (!retired) {
    wipe(*key);
    return retired.error();
  }
  // All good: build the result.
  node_secrets out;
  out.vault_key_id = std::move(key_id);
  out.vault_key = std::move(*key);
  out.retired_vault_keys = std::move(*retired);
  out.oauth_state_secret = *raw.oauth_state.value;
  out.admin_token = token;
  return result<node_secrets>{std::move(out)};
}

/// mkdir -p with mode 0700 for every directory it creates; existing ones
/// (including symbolic links to directories) are left as they are.
status make_directories(const std::string& path) {
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "/" || prefix.back() == '/')
      continue;
    if (::mkdir(prefix.c_str(), 0700) == 0)
      continue;
    int err = errno;
    struct ::stat info {};
    if (err == EEXIST && ::stat(prefix.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
      continue;
    if (err == EEXIST)
      return invalid("data_dir: '" + prefix + "' exists and is not a directory");
    return invalid("data_dir: cannot create '" + prefix + "': " + errno_text(err));
  }
  return status::ok();
}

status random_bytes(unsigned char* out, std::size_t size) {
  if (RAND_bytes(out, static_cast<int>(size)) != 1)
    return status::error(errc::internal, "the random generator failed");
  return status::ok();
}

/// The text of a fresh secrets file, or an error if the random generator fails.
result<std::string> fresh_secrets_text() {
  std::array<unsigned char, generated_secret_bytes> key{}, oauth{}, token{};
  status drawn = random_bytes(key.data(), key.size());
  if (drawn.is_ok())
    drawn = random_bytes(oauth.data(), oauth.size());
  if (drawn.is_ok())
    drawn = random_bytes(token.data(), token.size());
  json doc = json::object();
  if (drawn.is_ok()) {
    doc[file_key_id] = "k1";
    doc[file_vault_key] = base64::encode(key.data(), key.size(), base64::alphabet::standard, true);
    doc[file_oauth_state] =
      base64::encode(oauth.data(), oauth.size(), base64::alphabet::url, false);
    doc[file_admin_token] =
      admin_token_prefix + base64::encode(token.data(), token.size(), base64::alphabet::url, false);
  }
  OPENSSL_cleanse(key.data(), key.size());
  OPENSSL_cleanse(oauth.data(), oauth.size());
  OPENSSL_cleanse(token.data(), token.size());
  if (!drawn.is_ok())
    return drawn;
  std::string text = doc.dump(2) + "\n";
  wipe_strings(doc);
  return result<std::string>{std::move(text)};
}

/// Creates `<dir>/secrets.json` with fresh secrets: a temporary file made with
/// O_CREAT|O_EXCL and mode 0600, written and fsynced, then hard-linked into
/// place so that a file another process created meanwhile is never replaced
/// (rename where the file system has no hard links), and the directory
/// fsynced. Answers true if this call created the file, false if it lost a race.
result<bool> create_secrets_file(const std::string& dir, const std::string& path) {
  VOXOS_RETURN_IF_ERROR(make_directories(dir));
  std::array<unsigned char, 8> suffix{};
  VOXOS_RETURN_IF_ERROR(random_bytes(suffix.data(), suffix.size()));
  auto text = fresh_secrets_text();
  if (!text)
    return text.error();
  // Write a private temporary file.
  std::string tmp_path = path + ".tmp-";
  for (unsigned char byte : suffix) {
    static constexpr char hex[] = "0123456789abcdef";
    tmp_path += hex[byte >> 4];
    tmp_path += hex[byte & 0x0f];
  }
  int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    int err = errno;
    wipe(*text);
    return invalid("data_dir: cannot create '" + tmp_path + "': " + errno_text(err));
  }
  bool written = write_all(fd, *text) && ::fsync(fd) == 0;
  int err = errno;
  wipe(*text);
  if (::close(fd) != 0 && written) {
    written = false;
    err = errno;
  }
  if (!written) {
    ::unlink(tmp_path.c_str());
    return invalid("data_dir: cannot write '" + tmp_path + "': " + errno_text(err));
  }
  // Put it in place without replacing a file created meanwhile.
  bool created = true;
  if (::link(tmp_path.c_str(), path.c_str()) != 0) {
    err = errno;
    if (err == EEXIST) {
      created = false;
    } else if (::rename(tmp_path.c_str(), path.c_str()) != 0) {
      err = errno;
      ::unlink(tmp_path.c_str());
      return invalid("data_dir: cannot create '" + path + "': " + errno_text(err));
    }
  }
  ::unlink(tmp_path.c_str());
  // Make the directory entry durable.
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
  return created;
}

} // namespace

result<node_config> parse_config(const std::string& json_text) {
  auto doc = parse_json(json_text, "config");
  if (!doc)
    return doc.error();
  try {
    return parse_document(*doc);
  } catch (const std::exception&) {
    // Unreachable by construction (types are checked before access).
    return status::error(errc::internal, "config: validation failed unexpectedly");
  }
}

result<node_config> load_config_file(const std::string& path) {
  auto text = read_file(path, "config file", max_config_file_bytes, false, true);
  if (!text)
    return text.error();
  if (!text->has_value())
    return invalid("config file '" + path + "' does not exist");
  auto cfg = parse_config(**text);
  if (!cfg)
    return status::error(cfg.error().code(),
                         cfg.error().message() + " (config file '" + path + "')");
  return cfg;
}

std::string default_config_json() {
  return to_json(node_config{}).dump(2);
}

// Moves swap, so no copy of the passphrase stays behind in a short-string buffer.
caf_tls_secret::caf_tls_secret(caf_tls_secret&& other) noexcept {
  *this = std::move(other);
}

caf_tls_secret& caf_tls_secret::operator=(caf_tls_secret&& other) noexcept {
  if (this != &other) {
    wipe(key_passphrase);
    key_passphrase.clear();
    key_passphrase.swap(other.key_passphrase);
    certificate_path = std::move(other.certificate_path);
    key_path = std::move(other.key_path);
    ca_path = std::move(other.ca_path);
    for (int fd : pinned_fds)
      ::close(fd);
    pinned_fds = std::move(other.pinned_fds);
    other.pinned_fds.clear();
  }
  return *this;
}

caf_tls_secret::~caf_tls_secret() {
  wipe(key_passphrase);
  for (int fd : pinned_fds)
    ::close(fd);
}

result<caf_tls_secret> check_caf_tls(const caf_config& cfg) {
  if (cfg.transport != caf_transport::tls)
    return result<caf_tls_secret>{caf_tls_secret{}};
  try {
    return check_tls_files(cfg.tls);
  } catch (const std::exception&) {
    // Memory exhaustion.
    return status::error(errc::internal, "caf.tls: checking the TLS files failed unexpectedly");
  }
}

env_lookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr)
      return std::nullopt;
    return std::string{value};
  };
}

result<node_secrets> resolve_secrets(const node_config& cfg, const env_lookup& env) {
  try {
    raw_secrets raw;
    switch (cfg.secrets.source) {
    case secret_source::env: {
      apply_env(env, raw);
      return validate_secrets(raw, " (required when secrets.source is \"env\")");
    }
    case secret_source::file: {
      VOXOS_RETURN_IF_ERROR(read_secrets_file(cfg.secrets.file, true, raw));
      apply_env(env, raw);
      return validate_secrets(raw, "");
    }
    case secret_source::generate: {
      if (cfg.mode == profile::production)
        return invalid("secrets.source: \"generate\" is not allowed in the production "
                       "profile; use \"env\" or \"file\"");
      // Create the file on first start, then read it like any secrets file.
      auto path = cfg.data_dir + "/" + secrets_file_name;
      bool generated = false;
      struct ::stat info {};
      if (::lstat(path.c_str(), &info) != 0 && errno == ENOENT) {
        auto created = create_secrets_file(cfg.data_dir, path);
        if (!created)
          return created.error();
        generated = *created;
      }
      VOXOS_RETURN_IF_ERROR(read_secrets_file(path, false, raw));
      apply_env(env, raw);
      auto out = validate_secrets(raw, "");
      if (out)
        out->generated = generated;
      return out;
    }
    }
  } catch (const std::exception&) {
    // An env_lookup that throws, or memory exhaustion.
    return status::error(errc::internal, "secrets: resolution failed unexpectedly");
  }
  return status::error(errc::internal, "secrets: unknown source");
}

} // namespace voxos

#undef VOXOS_RETURN_IF_ERROR
