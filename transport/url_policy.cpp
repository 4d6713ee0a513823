#include "transport/url_policy.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "transport/ascii.hpp"

namespace voxos {

namespace {

constexpr std::size_t max_host_bytes = 253;
constexpr std::size_t max_label_bytes = 63;
constexpr std::size_t max_port_digits = 5;

status invalid(std::string message) {
  return status::error(errc::out_of_range, std::move(message));
}

status refused(std::string message) {
  return status::error(errc::forbidden, std::move(message));
}

// -- characters ---------------------------------------------------------------

bool is_alpha(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

bool is_digit(char ch) {
  return ch >= '0' && ch <= '9';
}

bool is_hex_digit(char ch) {
  return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

char to_upper(char ch) {
  return (ch >= 'a' && ch <= 'z') ? static_cast<char>(ch - 'a' + 'A') : ch;
}

/// RFC 3986 unreserved, reserved and '%'.
bool is_uri_char(char ch) {
  if (is_alpha(ch) || is_digit(ch))
    return true;
  static constexpr std::string_view others = "-._~:/?#[]@!$&'()*+,;=%";
  return others.find(ch) != std::string_view::npos;
}

/// The lowercased scheme if `text` starts with RFC 3986 `scheme ":"`.
std::optional<std::string> scheme_of(std::string_view text) {
  if (text.empty() || !is_alpha(text.front()))
    return std::nullopt;
  for (std::size_t pos = 1; pos < text.size(); ++pos) {
    char ch = text[pos];
    if (ch == ':')
      return ascii_lowered(text.substr(0, pos));
    if (!is_alpha(ch) && !is_digit(ch) && ch != '+' && ch != '-' && ch != '.')
      return std::nullopt;
  }
  return std::nullopt;
}

bool is_http_scheme(const std::optional<std::string>& scheme) {
  return scheme && (*scheme == "http" || *scheme == "https");
}

constexpr const char* not_http_message =
  "not an http or https URL: local stdio commands and other transports are not accepted";

// -- IPv4 in WHATWG spellings -------------------------------------------------

/// One part of an IPv4 host: decimal, 0-prefixed octal or 0x-hex ("0x" alone
/// is 0, as in the WHATWG URL standard). Values above 2^32 fail.
std::optional<uint64_t> parse_ipv4_part(std::string_view part) {
  if (part.empty())
    return std::nullopt;
  unsigned base = 10;
  if (part.size() >= 2 && part[0] == '0' && part[1] == 'x') {
    base = 16;
    part.remove_prefix(2);
  } else if (part.size() >= 2 && part[0] == '0') {
    base = 8;
    part.remove_prefix(1);
  }
  uint64_t value = 0;
  for (char ch : part) {
    unsigned digit = 0;
    if (is_digit(ch))
      digit = static_cast<unsigned>(ch - '0');
    else if (ch >= 'a' && ch <= 'f')
      digit = static_cast<unsigned>(ch - 'a' + 10);
    else
      return std::nullopt;
    if (digit >= base)
      return std::nullopt;
    value = value * base + digit;
    if (value > 0xffffffffULL)
      return std::nullopt;
  }
  return value;
}

/// True if the last label makes the host an IPv4 address (WHATWG "ends in a
/// number"): all digits, or 0x followed by hex digits only.
bool ends_in_number(std::string_view last_label) {
  if (last_label.empty())
    return false;
  if (std::all_of(last_label.begin(), last_label.end(), is_digit))
    return true;
  return last_label.size() >= 2 && last_label[0] == '0' && last_label[1] == 'x'
         && std::all_of(last_label.begin() + 2, last_label.end(), is_hex_digit);
}

/// `labels` (lowercase, none empty) as an IPv4 address, or nullopt.
std::optional<ip_address> parse_ipv4_labels(const std::vector<std::string_view>& labels) {
  if (labels.empty() || labels.size() > 4)
    return std::nullopt;
  std::vector<uint64_t> numbers;
  for (auto label : labels) {
    auto number = parse_ipv4_part(label);
    if (!number)
      return std::nullopt;
    numbers.push_back(*number);
  }
  // Every part but the last is one byte; the last fills the remaining bytes.
  uint64_t value = 0;
  for (std::size_t idx = 0; idx + 1 < numbers.size(); ++idx) {
    if (numbers[idx] > 255)
      return std::nullopt;
    value |= numbers[idx] << (8 * (3 - idx));
  }
  uint64_t last_limit = 1ULL << (8 * (5 - numbers.size()));
  if (numbers.back() >= last_limit)
    return std::nullopt;
  value |= numbers.back();
  return ip_address::v4(static_cast<uint32_t>(value));
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto end = text.find(separator, start);
    if (end == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
}

// -- host, port, path ---------------------------------------------------------

/// Parses the bracketed part of "[...]" (without brackets).
status parse_ipv6_host(std::string_view inside, parsed_url& out) {
  if (inside.find('%') != std::string_view::npos)
    return invalid("IPv6 zone ids are not accepted in URLs");
  if (!inside.empty() && (inside.front() == 'v' || inside.front() == 'V'))
    return invalid("IPvFuture host literals are not accepted");
  auto addr = ip_address::parse(inside);
  if (!addr || addr->kind != ip_address::family::v6)
    return invalid("host is not a valid IPv6 address");
  out.kind = parsed_url::host_kind::ipv6;
  out.literal = addr;
  out.host = addr->to_string();
  return status::ok();
}

/// Parses a registered name or IPv4 host (no brackets).
status parse_name_host(std::string_view raw, parsed_url& out) {
  if (raw.empty())
    return invalid("host is missing");
  if (raw.find('%') != std::string_view::npos)
    return invalid("percent-encoded hosts are not accepted");
  std::string host = ascii_lowered(raw);
  for (char ch : host)
    if (!is_alpha(ch) && !is_digit(ch) && ch != '-' && ch != '_' && ch != '.')
      return invalid("host contains a character other than letters, digits, '-', '_' and '.'");
  // One trailing dot names the same host (the DNS root).
  if (host.back() == '.')
    host.pop_back();
  if (host.empty())
    return invalid("host is missing");
  if (host.size() > max_host_bytes)
    return invalid("host name is longer than 253 bytes");
  auto labels = split(host, '.');
  for (auto label : labels) {
    if (label.empty())
      return invalid("host has an empty label");
    if (label.size() > max_label_bytes)
      return invalid("host has a label longer than 63 bytes");
  }
  // A numeric last label makes the host an IPv4 address in any spelling.
  if (ends_in_number(labels.back())) {
    auto addr = parse_ipv4_labels(labels);
    if (!addr)
      return invalid("host looks like an IPv4 address but is not a valid one");
    out.kind = parsed_url::host_kind::ipv4;
    out.literal = addr;
    out.host = addr->to_string();
    return status::ok();
  }
  out.kind = parsed_url::host_kind::name;
  out.literal.reset();
  out.host = std::move(host);
  return status::ok();
}

status parse_port(std::string_view digits, parsed_url& out) {
  if (digits.empty())
    return invalid("port is empty");
  if (!std::all_of(digits.begin(), digits.end(), is_digit))
    return invalid("port is not a decimal number");
  if (digits.size() > max_port_digits)
    return invalid("port must be from 1 to 65535");
  unsigned value = 0;
  for (char ch : digits)
    value = value * 10 + static_cast<unsigned>(ch - '0');
  if (value == 0 || value > 65535)
    return invalid("port must be from 1 to 65535");
  out.port = static_cast<uint16_t>(value);
  return status::ok();
}

/// True for "." and ".." also when spelled with %2e.
bool is_dot_segment(std::string_view segment) {
  std::string decoded;
  for (std::size_t pos = 0; pos < segment.size(); ++pos) {
    if (segment[pos] == '%' && pos + 2 < segment.size() && segment[pos + 1] == '2'
        && ascii_lower(segment[pos + 2]) == 'e') {
      decoded.push_back('.');
      pos += 2;
    } else {
      decoded.push_back(segment[pos]);
    }
    if (decoded.size() > 2)
      return false;
  }
  return decoded == "." || decoded == "..";
}

/// Path and query (the text after the authority, no fragment).
status parse_path_and_query(std::string_view tail, parsed_url& out) {
  if (tail.find_first_of("[]") != std::string_view::npos)
    return invalid("'[' and ']' are accepted only around an IPv6 host");
  auto query_start = tail.find('?');
  auto path = tail.substr(0, query_start);
  for (auto segment : split(path, '/'))
    if (is_dot_segment(segment))
      return invalid("path contains a '.' or '..' segment");
  std::string text = path.empty() ? std::string{"/"} : std::string{path};
  if (query_start != std::string_view::npos)
    text.append(tail.substr(query_start));
  // Percent escapes in one case: %2f and %2F are the same octet.
  for (std::size_t pos = 0; pos < text.size(); ++pos)
    if (text[pos] == '%') {
      text[pos + 1] = to_upper(text[pos + 1]);
      text[pos + 2] = to_upper(text[pos + 2]);
      pos += 2;
    }
  out.path_and_query = std::move(text);
  return status::ok();
}

uint16_t default_port(const std::string& scheme) {
  return scheme == "https" ? 443 : 80;
}

/// "localhost" and "*.localhost" (RFC 6761): loopback without asking DNS.
bool is_localhost_name(const std::string& host) {
  static constexpr std::string_view suffix = ".localhost";
  return host == "localhost"
         || (host.size() > suffix.size()
             && host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0);
}

// -- address classes ----------------------------------------------------------

bool in_v4(uint32_t addr, uint32_t net, unsigned prefix) {
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (addr & mask) == (net & mask);
}

constexpr uint32_t v4_of(unsigned a, unsigned b, unsigned c, unsigned d) {
  return (uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | uint32_t{d};
}

address_class classify_v4(uint32_t addr) {
  // Cloud metadata endpoints first: they sit inside the ranges below.
  if (addr == v4_of(169, 254, 169, 254) || addr == v4_of(100, 100, 100, 200)
      || addr == v4_of(192, 0, 0, 192))
    return address_class::metadata;
  if (in_v4(addr, v4_of(0, 0, 0, 0), 8))
    return address_class::unspecified;
  if (in_v4(addr, v4_of(127, 0, 0, 0), 8))
    return address_class::loopback;
  if (in_v4(addr, v4_of(10, 0, 0, 0), 8) || in_v4(addr, v4_of(172, 16, 0, 0), 12)
      || in_v4(addr, v4_of(192, 168, 0, 0), 16))
    return address_class::private_network;
  if (in_v4(addr, v4_of(100, 64, 0, 0), 10))
    return address_class::carrier_grade_nat;
  if (in_v4(addr, v4_of(169, 254, 0, 0), 16))
    return address_class::link_local;
  if (addr == v4_of(255, 255, 255, 255))
    return address_class::broadcast;
  if (in_v4(addr, v4_of(224, 0, 0, 0), 4))
    return address_class::multicast;
  if (in_v4(addr, v4_of(192, 0, 2, 0), 24) || in_v4(addr, v4_of(198, 51, 100, 0), 24)
      || in_v4(addr, v4_of(203, 0, 113, 0), 24))
    return address_class::documentation;
  // 240/4 future use, 192.0.0/24 protocol assignments, 198.18/15
  // benchmarking, 192.88.99/24 the retired 6to4 relay anycast.
  if (in_v4(addr, v4_of(240, 0, 0, 0), 4) || in_v4(addr, v4_of(192, 0, 0, 0), 24)
      || in_v4(addr, v4_of(198, 18, 0, 0), 15) || in_v4(addr, v4_of(192, 88, 99, 0), 24))
    return address_class::reserved;
  return address_class::public_address;
}

uint32_t v4_at(const std::array<uint8_t, 16>& bytes, std::size_t offset) {
  return (uint32_t{bytes[offset]} << 24) | (uint32_t{bytes[offset + 1]} << 16)
         | (uint32_t{bytes[offset + 2]} << 8) | uint32_t{bytes[offset + 3]};
}

bool zero_bytes(const std::array<uint8_t, 16>& bytes, std::size_t from, std::size_t to) {
  return std::all_of(bytes.begin() + from, bytes.begin() + to, [](uint8_t b) { return b == 0; });
}

address_class classify_v6(const std::array<uint8_t, 16>& b) {
  static constexpr std::array<uint8_t, 16> ec2_metadata{0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
                                                        0,    0,    0,    0,    0, 0, 0x02, 0x54};
  if (b == ec2_metadata)
    return address_class::metadata;
  if (zero_bytes(b, 0, 16))
    return address_class::unspecified;
  if (zero_bytes(b, 0, 15) && b[15] == 1)
    return address_class::loopback;
  // IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96: the embedded class,
  // and ipv4_mapped when that is public.
  if (zero_bytes(b, 0, 10) && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0))) {
    auto embedded = classify_v4(v4_at(b, 12));
    return is_public(embedded) ? address_class::ipv4_mapped : embedded;
  }
  // NAT64 well-known prefix 64:ff9b::/96: the embedded class.
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero_bytes(b, 4, 12))
    return classify_v4(v4_at(b, 12));
  // NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215): an operator's own network.
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0x00 && b[5] == 0x01)
    return address_class::private_network;
  // 6to4 2002::/16: the embedded class.
  if (b[0] == 0x20 && b[1] == 0x02)
    return classify_v4(v4_at(b, 2));
  if (b[0] == 0xff)
    return address_class::multicast;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
    return address_class::link_local;
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
    return address_class::private_network; // deprecated site-local fec0::/10
  if ((b[0] & 0xfe) == 0xfc)
    return address_class::unique_local;
  if ((b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
      || (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0))
    return address_class::documentation;
  // 2001::/23 protocol assignments (Teredo, benchmarking, ORCHID...).
  if (b[0] == 0x20 && b[1] == 0x01 && (b[2] & 0xfe) == 0)
    return address_class::reserved;
  // Only 2000::/3 is global unicast.
  if ((b[0] & 0xe0) != 0x20)
    return address_class::reserved;
  return address_class::public_address;
}

} // namespace

// -- ip_address ---------------------------------------------------------------

ip_address ip_address::v4(uint32_t host_order) {
  ip_address addr;
  addr.kind = family::v4;
  addr.bytes[0] = static_cast<uint8_t>(host_order >> 24);
  addr.bytes[1] = static_cast<uint8_t>(host_order >> 16);
  addr.bytes[2] = static_cast<uint8_t>(host_order >> 8);
  addr.bytes[3] = static_cast<uint8_t>(host_order);
  return addr;
}

ip_address ip_address::v6(const std::array<uint8_t, 16>& network_order) {
  ip_address addr;
  addr.kind = family::v6;
  addr.bytes = network_order;
  return addr;
}

std::optional<ip_address> ip_address::parse(std::string_view text) {
  // inet_pton: IPv4 dotted decimal only (no octal, hex or short forms).
  if (text.empty() || text.size() > INET6_ADDRSTRLEN || text.find('\0') != std::string_view::npos)
    return std::nullopt;
  std::string buffer{text};
  std::array<uint8_t, 16> raw{};
  if (::inet_pton(AF_INET, buffer.c_str(), raw.data()) == 1)
    return v4(v4_at(raw, 0));
  if (::inet_pton(AF_INET6, buffer.c_str(), raw.data()) == 1)
    return v6(raw);
  return std::nullopt;
}

std::string ip_address::to_string() const {
  if (kind == family::v4)
    return std::to_string(bytes[0]) + "." + std::to_string(bytes[1]) + "."
           + std::to_string(bytes[2]) + "." + std::to_string(bytes[3]);
  // RFC 5952: the longest run (first on ties) of two or more zero groups is "::".
  std::array<unsigned, 8> groups{};
  for (std::size_t idx = 0; idx < 8; ++idx)
    groups[idx] = (unsigned{bytes[2 * idx]} << 8) | bytes[2 * idx + 1];
  std::size_t best_start = 8;
  std::size_t best_len = 0;
  for (std::size_t start = 0; start < 8;) {
    if (groups[start] != 0) {
      ++start;
      continue;
    }
    std::size_t end = start;
    while (end < 8 && groups[end] == 0)
      ++end;
    if (end - start > best_len) {
      best_start = start;
      best_len = end - start;
    }
    start = end;
  }
  if (best_len < 2)
    best_start = 8;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t idx = 0; idx < 8; ++idx) {
    if (idx == best_start) {
      out += "::";
      idx += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':')
      out.push_back(':');
    bool started = false;
    for (int shift = 12; shift >= 0; shift -= 4) {
      unsigned nibble = (groups[idx] >> shift) & 0xf;
      if (nibble != 0 || started || shift == 0) {
        out.push_back(hex[nibble]);
        started = true;
      }
    }
  }
  return out;
}

std::string_view to_string(address_class cls) noexcept {
  switch (cls) {
  case address_class::public_address:
    return "public_address";
  case address_class::loopback:
    return "loopback";
  case address_class::private_network:
    return "private_network";
  case address_class::carrier_grade_nat:
    return "carrier_grade_nat";
  case address_class::link_local:
    return "link_local";
  case address_class::unique_local:
    return "unique_local";
  case address_class::metadata:
    return "metadata";
  case address_class::unspecified:
    return "unspecified";
  case address_class::multicast:
    return "multicast";
  case address_class::broadcast:
    return "broadcast";
  case address_class::documentation:
    return "documentation";
  case address_class::ipv4_mapped:
    return "ipv4_mapped";
  case address_class::reserved:
    return "reserved";
  }
  return "reserved";
}

address_class classify(const ip_address& addr) noexcept {
  if (addr.kind == ip_address::family::v4)
    return classify_v4(v4_at(addr.bytes, 0));
  return classify_v6(addr.bytes);
}

// -- parse_url ----------------------------------------------------------------

result<parsed_url> parse_url(std::string_view url) {
  // Bounds and characters.
  if (url.empty())
    return invalid("URL is empty");
  if (url.size() > max_url_bytes)
    return invalid("URL is longer than 2048 bytes");
  for (unsigned char ch : url)
    if (ch <= 0x20 || ch >= 0x7f)
      return invalid("URL contains a space, control or non-ASCII character");
  for (char ch : url)
    if (!is_uri_char(ch))
      return invalid("URL contains a character RFC 3986 does not allow (such as '\\', '<' or '|')");
  for (std::size_t pos = 0; pos < url.size(); ++pos)
    if (url[pos] == '%'
        && (pos + 2 >= url.size() || !is_hex_digit(url[pos + 1]) || !is_hex_digit(url[pos + 2])))
      return invalid("URL contains a '%' not followed by two hex digits");

  // Scheme.
  parsed_url out;
  auto scheme = scheme_of(url);
  if (!is_http_scheme(scheme))
    return invalid(not_http_message);
  out.scheme = *scheme;
  auto rest = url.substr(out.scheme.size() + 1);
  if (rest.substr(0, 2) != "//")
    return invalid("expected \"//\" after the scheme");
  rest.remove_prefix(2);
  if (rest.find('#') != std::string_view::npos)
    return invalid("fragments ('#') are not accepted");

  // Authority: no user info, then host and optional port.
  auto authority_end = rest.find_first_of("/?");
  auto authority = rest.substr(0, authority_end);
  auto tail =
    authority_end == std::string_view::npos ? std::string_view{} : rest.substr(authority_end);
  if (authority.find('@') != std::string_view::npos)
    return invalid("user info (user:password@) is not accepted in URLs");
  std::optional<std::string_view> port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      return invalid("IPv6 host is missing its ']'");
    if (auto st = parse_ipv6_host(authority.substr(1, close - 1), out); !st)
      return st;
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':')
        return invalid("unexpected text after the IPv6 host");
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.find(':');
    auto host = authority.substr(0, colon);
    if (host.find_first_of("[]") != std::string_view::npos)
      return invalid("'[' and ']' are accepted only around an IPv6 host");
    if (auto st = parse_name_host(host, out); !st)
      return st;
    if (colon != std::string_view::npos)
      port_text = authority.substr(colon + 1);
  }
  out.port = default_port(out.scheme);
  if (port_text)
    if (auto st = parse_port(*port_text, out); !st)
      return st;

  // Path and query.
  if (auto st = parse_path_and_query(tail, out); !st)
    return st;
  return out;
}

std::string normalised(const parsed_url& url) {
  std::string out = url.scheme + "://";
  if (url.kind == parsed_url::host_kind::ipv6)
    out += "[" + url.host + "]";
  else
    out += url.host;
  if (url.port != default_port(url.scheme))
    out += ":" + std::to_string(url.port);
  out += url.path_and_query;
  return out;
}

// -- url_policy ---------------------------------------------------------------

namespace {

/// "scheme://authority/" with nothing after the slash.
bool is_origin_only(const std::string& normalised_url) {
  auto authority = normalised_url.find("://");
  return authority != std::string::npos
         && normalised_url.find('/', authority + 3) == normalised_url.size() - 1;
}

} // namespace

url_policy::url_policy(std::vector<node_config::registered_url> registered) {
  for (auto& item : registered) {
    auto parsed = parse_url(item.url);
    if (!parsed)
      continue; // can never match; config validation reports malformed entries
    registered_.push_back(entry{normalised(*parsed), std::move(item.purpose)});
  }
}

url_policy url_policy::trusting_loopback(std::vector<node_config::registered_url> registered) {
  url_policy out{std::move(registered)};
  out.loopback_trusted_ = true;
  return out;
}

result<checked_url> url_policy::check(std::string_view url, std::string_view purpose) const {
  // 1. Remote http(s) servers only: no command lines, no other schemes.
  if (!is_http_scheme(scheme_of(url)))
    return refused(not_http_message);

  // 2. Strict parse and normalisation.
  auto parsed = parse_url(url);
  if (!parsed)
    return parsed.error();
  checked_url out;
  out.normalised = normalised(*parsed);
  out.url = std::move(parsed).value();

  // 3. An exact registered URL for this purpose is allowed as it is. An
  //    authorization server registered by its origin alone (purpose "oauth",
  //    "http://host:port/") covers every URL of that origin: its metadata,
  //    endpoints and keys live at paths it names itself.
  for (const auto& item : registered_)
    if (item.purpose == purpose
        && (item.normalised == out.normalised
            || (purpose == "oauth" && is_origin_only(item.normalised)
                && out.normalised.compare(0, item.normalised.size(), item.normalised) == 0))) {
      out.registered = true;
      return out;
    }

  // A test client's loopback servers (trusting_loopback).
  if (loopback_trusted_
      && (out.url.literal ? classify(*out.url.literal) == address_class::loopback
                          : is_localhost_name(out.url.host))) {
    out.registered = true;
    return out;
  }

  // 4. Unregistered servers speak TLS.
  if (out.url.scheme != "https")
    return refused("plain http is allowed only for a URL registered for this purpose; use https");

  // 5. Addresses known now: literals and localhost names.
  if (out.url.literal) {
    auto cls = classify(*out.url.literal);
    if (!is_public(cls))
      return refused("host is a non-public address (" + std::string{to_string(cls)} + ")");
  } else if (is_localhost_name(out.url.host)) {
    return refused("host is a non-public address (loopback)");
  }
  return out;
}

status url_policy::check_resolved(const checked_url& checked,
                                  const std::vector<ip_address>& addrs) const {
  if (addrs.empty())
    return status::error(errc::unavailable, "host resolved to no address");
  if (checked.registered)
    return status::ok();
  for (const auto& addr : addrs) {
    auto cls = classify(addr);
    if (!is_public(cls))
      return refused("host resolves to a non-public address (" + std::string{to_string(cls)} + ")");
  }
  return status::ok();
}

// -- resolve ------------------------------------------------------------------

result<std::vector<ip_address>> resolve(const std::string& host, uint16_t port) {
  if (host.empty() || host.size() > max_host_bytes || host.find('\0') != std::string::npos)
    return invalid("host to resolve is empty, too long or contains a NUL");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC; // both families; no AI_ADDRCONFIG
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  auto service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &raw) != 0 || raw == nullptr)
    return status::error(errc::unavailable, "host name did not resolve");
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list{raw, &::freeaddrinfo};

  // Distinct addresses in resolver order.
  std::vector<ip_address> out;
  for (const addrinfo* item = list.get(); item != nullptr; item = item->ai_next) {
    std::optional<ip_address> addr;
    if (item->ai_family == AF_INET && item->ai_addrlen >= sizeof(sockaddr_in)) {
      const auto* sin = reinterpret_cast<const sockaddr_in*>(item->ai_addr);
      addr = ip_address::v4(ntohl(sin->sin_addr.s_addr));
    } else if (item->ai_family == AF_INET6 && item->ai_addrlen >= sizeof(sockaddr_in6)) {
      const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(item->ai_addr);
      std::array<uint8_t, 16> bytes{};
      std::copy(sin6->sin6_addr.s6_addr, sin6->sin6_addr.s6_addr + 16, bytes.begin());
      addr = ip_address::v6(bytes);
    }
    if (addr && std::find(out.begin(), out.end(), *addr) == out.end())
      out.push_back(*addr);
  }
  if (out.empty())
    return status::error(errc::unavailable, "host name did not resolve");
  return out;
}

} // namespace voxos
