// The outbound URL policy: which remote MCP server URLs the node may connect to.
// "Loopback and private addresses are blocked unless registered. No redirect is
// followed." CAF-free and stateless after construction; every function is safe
// to call from any thread (`resolve` blocks on DNS).
//
// How a caller connects to a user-supplied URL:
//
//   policy.check(url, "mcp")          parse, normalise, registered match, https,
//        |                            literal addresses and "localhost" names
//        v
//   resolve(checked.url.host, port)   getaddrinfo, once
//        |
//        v
//   policy.check_resolved(checked, addrs)   every address public (or registered)
//        |
//        v
//   connect to those addresses only (e.g. httplib's set_hostname_addr_map),
//   sending the normalised host as Host/SNI; never follow a redirect.
//
// Connecting by name after the check would resolve again, and a hostile DNS
// server can answer the second query with 127.0.0.1 (DNS rebinding): the
// addresses checked must be the addresses used.
//
// Errors never contain the URL or any part of it (a URL may carry a token in
// its path or query): messages name the problem only.
//   out_of_range  the text is not an acceptable http(s) URL (syntax, bounds)
//   forbidden     a well-formed URL this policy refuses (stdio or another
//                 transport, plain http, a non-public address)
//   unavailable   the host name does not resolve to any address
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/node_config.hpp"
#include "messages/status.hpp"

namespace voxos {

/// The longest URL accepted, in bytes.
inline constexpr std::size_t max_url_bytes = 2048;

/// An IPv4 or IPv6 address in network byte order. IPv4 uses bytes[0..3].
/// No zone (scope) id: zone ids only name link-local addresses, which are
/// never public.
struct ip_address {
  enum class family : uint8_t { v4, v6 };
  family kind = family::v4;
  std::array<uint8_t, 16> bytes{};

  static ip_address v4(uint32_t host_order);
  static ip_address v6(const std::array<uint8_t, 16>& network_order);
  /// A strict literal: dotted-decimal IPv4 ("10.0.0.1") or IPv6 without
  /// brackets or zone ("fe80::1"). Nothing else (no "127.1", no "0x7f.1").
  static std::optional<ip_address> parse(std::string_view text);

  /// Dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run as "::",
  /// all hexadecimal: "::ffff:7f00:1").
  std::string to_string() const;

  friend bool operator==(const ip_address& lhs, const ip_address& rhs) {
    return lhs.kind == rhs.kind && lhs.bytes == rhs.bytes;
  }
  friend bool operator!=(const ip_address& lhs, const ip_address& rhs) { return !(lhs == rhs); }
};

/// What an address is, for the policy. Only `public_address` may be reached
/// without registration; every other class is refused.
enum class address_class : uint8_t {
  public_address,    ///< globally routable unicast
  loopback,          ///< 127/8, ::1
  private_network,   ///< 10/8, 172.16/12, 192.168/16, fec0::/10, 64:ff9b:1::/48
  carrier_grade_nat, ///< 100.64/10 (shared address space, RFC 6598)
  link_local,        ///< 169.254/16, fe80::/10
  unique_local,      ///< fc00::/7
  metadata,          ///< 169.254.169.254, 100.100.100.200, 192.0.0.192, fd00:ec2::254
  unspecified,       ///< 0/8, ::
  multicast,         ///< 224/4, ff00::/8
  broadcast,         ///< 255.255.255.255
  documentation,     ///< 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
  ipv4_mapped,       ///< ::ffff:0:0/96 and ::/96 around a public IPv4 address
  reserved,          ///< everything else that is not global unicast (240/4,
                     ///< 198.18/15, 192.0.0/24, 100::/64, 2001::/23, outside 2000::/3)
};

/// The stable snake_case name of `cls`, e.g. "link_local".
std::string_view to_string(address_class cls) noexcept;

/// Classifies `addr`. Metadata addresses win over the ranges holding them.
/// IPv6 forms that embed an IPv4 address take the class of the embedded
/// address when that is not public: IPv4-mapped and -compatible (::/96),
/// NAT64 (64:ff9b::/96), 6to4 (2002::/16). A public address embedded in
/// NAT64 or 6to4 is public (DNS64 networks answer with such addresses); in
/// the mapped or compatible forms it is `ipv4_mapped` — no server needs them.
address_class classify(const ip_address& addr) noexcept;

/// True for `address_class::public_address` only.
inline bool is_public(address_class cls) noexcept {
  return cls == address_class::public_address;
}

/// An absolute http or https URL, normalised.
struct parsed_url {
  enum class host_kind : uint8_t { name, ipv4, ipv6 };
  std::string scheme; ///< "http" or "https"
  /// Lowercase, no trailing dot; IPv4 as a dotted quad; IPv6 in RFC 5952
  /// form without brackets.
  std::string host;
  host_kind kind = host_kind::name;
  std::optional<ip_address> literal; ///< set exactly when kind != name
  uint16_t port = 0;                 ///< explicit or the scheme's default; never 0
  /// Starts with '/'; "/" when the URL has no path. The query (with its '?')
  /// is kept as written, percent escapes upper-cased.
  std::string path_and_query;
};

/// Parses an absolute http/https URL strictly. Refused, with out_of_range:
///  - more than `max_url_bytes`, or a byte that is a space, a control or
///    non-ASCII character, or outside RFC 3986's character set ('\\', '"',
///    '<', '>', '^', '`', '{', '|', '}'); a '%' not followed by two hex digits;
///  - a scheme other than http/https (case-insensitive), or no "//";
///  - user info ("user:pass@"): credentials in URLs are never accepted;
///  - a fragment ('#');
///  - an empty host; a host holding anything but a-z, 0-9, '-', '_' and '.';
///    a percent-encoded host (decoding would invite parser disagreements, and
///    international names come as punycode "xn--"); an empty label or a name
///    over 253 bytes / a label over 63;
///  - a host whose last label is a number but that is not a valid IPv4 address
///    in the WHATWG spelling rules (1 to 4 parts, decimal, 0-prefixed octal or
///    0x-hex, the last part filling the remaining bytes). Valid ones
///    ("2130706433", "0x7f.1", "0177.0.0.1", "127.1") become a dotted quad, so
///    no later resolver can read the name differently;
///  - an IPv6 literal that inet_pton refuses, with a zone id ("%25eth0"), or
///    an IPvFuture literal;
///  - a port that is empty, not decimal, 0 or above 65535;
///  - a path with a "." or ".." segment (also as %2e), which servers and
///    proxies resolve differently.
/// A trailing dot of the host is removed; default ports are dropped.
result<parsed_url> parse_url(std::string_view url);

/// The canonical text of `url`: scheme "://" host (IPv6 in brackets) [":" port
/// unless the default] path_and_query. Equal texts mean the same endpoint.
std::string normalised(const parsed_url& url);

/// A URL that passed `url_policy::check`.
struct checked_url {
  parsed_url url;
  std::string normalised;  ///< normalised(url)
  bool registered = false; ///< matched a registered URL for the purpose
};

/// Decides which URLs may be connected to. Immutable after construction.
class url_policy {
public:
  /// `registered`: exact URLs allowed despite the address policy, each for one
  /// purpose (node_config::registered_urls). Each is normalised by parse_url;
  /// an entry parse_url refuses can never match and is ignored.
  explicit url_policy(std::vector<node_config::registered_url> registered);

  /// A policy for a test client that talks to servers on this machine (the
  /// conformance suite's scenario and authorization servers, whose ports it
  /// learns as it goes): as `registered` allows, and besides, any http(s)
  /// URL whose host is a loopback address or a localhost name, for any
  /// purpose. Every other address is checked as usual. The node never uses it.
  static url_policy trusting_loopback(std::vector<node_config::registered_url> registered);

  /// Checks `url` for `purpose` (e.g. "mcp"), in this order:
  ///  1. Not an http(s) URL (a stdio command line such as "npx server", or
  ///     file:, ws:, stdio: ...): forbidden. Remote servers only.
  ///  2. parse_url; its errors are returned as they are.
  ///  3. The normalised URL equals a registered URL for the same purpose:
  ///     allowed as it is, http or https, any address (Local Compose services
  ///     such as http://flightradar24-mcp:8000/mcp). Another port, path,
  ///     query, trailing slash or purpose is no match. One exception: for
  ///     purpose "oauth", a registered origin ("http://auth:9000/", no path)
  ///     covers every URL on it (an authorization server's metadata,
  ///     endpoints and keys).
  ///  4. Otherwise the scheme must be https: plain http is forbidden (a
  ///     network attacker could redirect it).
  ///  5. A literal address host must be public; "localhost" and names under
  ///     ".localhost" are loopback by definition (RFC 6761) and forbidden.
  ///     Other names pass here and are checked by check_resolved.
  result<checked_url> check(std::string_view url, std::string_view purpose) const;

  /// Checks the addresses `checked.url.host` resolved to, just before
  /// connecting. An empty list is unavailable. Unless `checked` is registered,
  /// every address must be public (one private address among public ones
  /// is enough to refuse: the client might pick it); otherwise forbidden.
  status check_resolved(const checked_url& checked, const std::vector<ip_address>& addrs) const;

private:
  struct entry {
    std::string normalised;
    std::string purpose;
  };
  std::vector<entry> registered_;
  bool loopback_trusted_ = false;
};

/// Resolves `host` (parsed_url::host: a name, a dotted quad or an unbracketed
/// IPv6 literal) with getaddrinfo, both families, AI_ADDRCONFIG off. Returns
/// the distinct addresses in resolver order. Blocks: call it from a thread
/// that may wait on DNS. A name that does not resolve is unavailable.
result<std::vector<ip_address>> resolve(const std::string& host, uint16_t port);

} // namespace voxos
