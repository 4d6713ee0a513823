#include "transport/url_policy.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using voxos::address_class;
using voxos::checked_url;
using voxos::errc;
using voxos::ip_address;
using voxos::node_config;
using voxos::parse_url;
using voxos::url_policy;

namespace {

/// `text`, which must be a strict address literal.
ip_address addr(const std::string& text) {
  auto parsed = ip_address::parse(text);
  REQUIRE_MESSAGE(parsed.has_value(), text);
  return *parsed;
}

std::vector<ip_address> addrs(const std::vector<std::string>& texts) {
  std::vector<ip_address> out;
  for (const auto& text : texts)
    out.push_back(addr(text));
  return out;
}

/// A policy with the Local Compose registrations of the product document and
/// a few literal-address ones.
url_policy compose_policy() {
  return url_policy{{
    {"http://flightradar24-mcp:8000/mcp", "mcp"},
    {"http://monzo-mcp:8000/mcp", "mcp"},
    {"http://127.0.0.1:3001/mcp?x=1", "mcp"},
    {"https://10.0.0.5/mcp", "mcp"},
    {"http://localhost:3002/mcp", "mcp"},
    {"http://issuer.internal:9000/", "oauth_issuer"},
  }};
}

/// The whole connect-time decision: check, then check_resolved against the
/// literal address or, for a name, against `resolved_to`.
voxos::status verdict(const url_policy& policy, const std::string& url, const std::string& purpose,
                      const std::vector<ip_address>& resolved_to) {
  auto checked = policy.check(url, purpose);
  if (!checked)
    return checked.error();
  if (checked->url.literal)
    return policy.check_resolved(*checked, {*checked->url.literal});
  return policy.check_resolved(*checked, resolved_to);
}

} // namespace

// -- parse_url ----------------------------------------------------------------

TEST_CASE("odd spellings of a URL normalise to one canonical form") {
  struct row {
    const char* input;
    const char* expected;
  };
  const row rows[] = {
    {"HTTPS://Example.COM./mcp", "https://example.com/mcp"},
    {"https://example.com:443/mcp", "https://example.com/mcp"},
    {"https://example.com:0443/mcp", "https://example.com/mcp"},
    {"http://example.com:80", "http://example.com/"},
    {"http://example.com:443", "http://example.com:443/"},
    {"https://example.com:80/", "https://example.com:80/"},
    {"https://example.com?x=1", "https://example.com/?x=1"},
    {"https://example.com/a%2fb?q=%7e", "https://example.com/a%2Fb?q=%7E"},
    {"http://flightradar24-mcp:8000/mcp", "http://flightradar24-mcp:8000/mcp"},
    {"https://a_b.example/", "https://a_b.example/"},
    {"http://2130706433/", "http://127.0.0.1/"},
    {"http://0x7f.1/", "http://127.0.0.1/"},
    {"http://0X7F.1/", "http://127.0.0.1/"},
    {"http://0x7f000001/", "http://127.0.0.1/"},
    {"http://0177.0.0.1/", "http://127.0.0.1/"},
    {"http://0177.0.0.01/", "http://127.0.0.1/"},
    {"http://127.1", "http://127.0.0.1/"},
    {"http://127.0.1", "http://127.0.0.1/"},
    {"http://127.0.0.1./", "http://127.0.0.1/"},
    {"https://0/", "https://0.0.0.0/"},
    {"https://0x/", "https://0.0.0.0/"},
    {"https://3232235521", "https://192.168.0.1/"},
    {"https://0300.0250.0.1", "https://192.168.0.1/"},
    {"https://0xc0.0xa8.0x0.0x1", "https://192.168.0.1/"},
    {"https://192.168.1", "https://192.168.0.1/"},
    {"https://4294967295", "https://255.255.255.255/"},
    {"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"},
    {"http://[::FFFF:7F00:1]", "http://[::ffff:7f00:1]/"},
    {"https://[0:0:0:0:0:0:0:1]:443", "https://[::1]/"},
    {"https://[2001:DB8:0:0:0:0:0:1]:8080/a", "https://[2001:db8::1]:8080/a"},
    {"https://[2001:db8:0:0:1:0:0:1]", "https://[2001:db8::1:0:0:1]/"},
    {"https://[2001:db8:0:1:1:1:1:1]", "https://[2001:db8:0:1:1:1:1:1]/"},
    {"https://[2001:0db8:0000:0000:0001:0000:0000:0000]", "https://[2001:db8:0:0:1::]/"},
    {"https://[::]", "https://[::]/"},
  };
  for (const auto& item : rows) {
    const std::string shown{item.input};
    CAPTURE(shown);
    auto parsed = parse_url(item.input);
    REQUIRE_MESSAGE(parsed.is_ok(), parsed.error().message());
    CHECK(voxos::normalised(*parsed) == item.expected);
  }
}

TEST_CASE("parse_url reports the host kind and literal address") {
  auto name = parse_url("https://Mcp.Example.com.:8443/v1?a=b");
  REQUIRE(name.is_ok());
  CHECK(name->scheme == "https");
  CHECK(name->host == "mcp.example.com");
  CHECK(name->kind == voxos::parsed_url::host_kind::name);
  CHECK_FALSE(name->literal.has_value());
  CHECK(name->port == 8443);
  CHECK(name->path_and_query == "/v1?a=b");

  auto v4 = parse_url("http://0x7f.1");
  REQUIRE(v4.is_ok());
  CHECK(v4->kind == voxos::parsed_url::host_kind::ipv4);
  REQUIRE(v4->literal.has_value());
  CHECK(*v4->literal == addr("127.0.0.1"));
  CHECK(v4->port == 80);
  CHECK(v4->path_and_query == "/");

  auto v6 = parse_url("https://[::ffff:7f00:1]");
  REQUIRE(v6.is_ok());
  CHECK(v6->kind == voxos::parsed_url::host_kind::ipv6);
  CHECK(v6->host == "::ffff:7f00:1");
  CHECK(*v6->literal == addr("::ffff:127.0.0.1"));
}

TEST_CASE("malformed or unsafe URL text is refused as out of range") {
  const std::string long_label(64, 'a');
  const std::string long_host = std::string(63, 'a') + "." + std::string(63, 'b') + "."
                                + std::string(63, 'c') + "." + std::string(63, 'd');
  const std::string rows[] = {
    "",
    "https://example.com/" + std::string(2048, 'a'),
    "https://user:pass@example.com",
    "https://user@example.com/mcp",
    "https://:@example.com",
    "https://example.com@10.0.0.1/",
    "https://example.com#frag",
    "https://example.com/mcp#",
    "https://",
    "https:///mcp",
    "https://:443/mcp",
    "https:example.com",
    "https:/example.com",
    "https://exa mple.com",
    " https://example.com",
    "https://example.com/\t",
    "https://example.com\\@127.0.0.1/",
    "https://example.com/a|b",
    "https://example.com/<x>",
    "https://example.com/{x}",
    "https://ex%61mple.com",
    "https://%31%32%37.0.0.1",
    "https://example.com%2f@10.0.0.1",
    "https://example.com/%zz",
    "https://example.com/%2",
    "https://ex!ample.com",
    "https://ex$ample.com",
    "https://example.com/\xc3\xbc",
    "https://\xc3\xa9xample.com",
    "https://example..com",
    "https://example.com..",
    "https://.example.com",
    "https://.",
    "https://" + long_label + ".example.com",
    "https://" + long_host + ".example",
    "https://[fe80::1%25eth0]",
    "https://[fe80::1%eth0]",
    "https://[v1.abc]",
    "https://[::1",
    "https://[::1]x",
    "https://[127.0.0.1]",
    "https://[::ffff:0177.0.0.1]",
    "https://[12345::1]",
    "https://::1/",
    "https://example.com]",
    "https://example.com/[x]",
    "https://example.com:0",
    "https://example.com:65536",
    "https://example.com:99999999999999999999",
    "https://example.com:abc",
    "https://example.com:",
    "https://example.com:-1",
    "https://example.com:+443",
    "https://example.com:443:80",
    "https://[::1]:",
    "https://256.0.0.1",
    "https://1.2.3.4.5",
    "https://1.2.3.0x100",
    "https://1.16777216",
    "https://0x100000000",
    "https://4294967296",
    "https://08.0.0.1",
    "https://0x1g.2.3.4.5",
    "https://example.com/a/../mcp",
    "https://example.com/./mcp",
    "https://example.com/mcp/..",
    "https://example.com/%2e%2E/mcp",
    "https://example.com/.%2e/mcp",
    "ftp://example.com/",
    "file:///etc/passwd",
    "stdio:",
    "ws://example.com/mcp",
    "npx some-server",
  };
  for (const auto& input : rows) {
    CAPTURE(input);
    auto parsed = parse_url(input);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.error().code() == errc::out_of_range);
    CHECK_FALSE(parsed.error().message().empty());
  }
}

TEST_CASE("a URL of exactly 2048 bytes is accepted and one byte more is not") {
  const std::string prefix = "https://example.com/";
  const std::string at_limit = prefix + std::string(voxos::max_url_bytes - prefix.size(), 'a');
  CHECK(parse_url(at_limit).is_ok());
  auto over = parse_url(at_limit + "a");
  REQUIRE_FALSE(over.is_ok());
  CHECK(over.error().code() == errc::out_of_range);
}

TEST_CASE("dots inside path segments and numeric labels inside names stay as they are") {
  auto dotted = parse_url("https://example.com/v1.2/..hidden/a..b");
  REQUIRE(dotted.is_ok());
  CHECK(dotted->path_and_query == "/v1.2/..hidden/a..b");

  // Only a numeric last label makes an IPv4 host.
  auto name = parse_url("https://127.0.0.1.nip.io/");
  REQUIRE(name.is_ok());
  CHECK(name->kind == voxos::parsed_url::host_kind::name);
  auto hexish = parse_url("https://1.2.3.0x1g/");
  REQUIRE(hexish.is_ok());
  CHECK(hexish->kind == voxos::parsed_url::host_kind::name);
}

// -- ip_address and classify --------------------------------------------------

TEST_CASE("ip_address parse accepts only strict literals") {
  CHECK(ip_address::parse("10.0.0.1").has_value());
  CHECK(ip_address::parse("fe80::1").has_value());
  CHECK(ip_address::parse("::ffff:10.0.0.1").has_value());
  for (const std::string text : {"127.1", "0x7f.0.0.1", "0177.0.0.1", "2130706433", "fe80::1%eth0",
                                 "[::1]", "", " 1.2.3.4", "1.2.3.4 ", "localhost", "1.2.3.256"}) {
    CAPTURE(text);
    CHECK_FALSE(ip_address::parse(text).has_value());
  }
}

TEST_CASE("every address range is classified") {
  struct row {
    const char* address;
    address_class expected;
  };
  const row rows[] = {
    {"8.8.8.8", address_class::public_address},
    {"1.1.1.1", address_class::public_address},
    {"172.32.0.1", address_class::public_address},
    {"172.15.255.255", address_class::public_address},
    {"100.63.255.255", address_class::public_address},
    {"100.128.0.1", address_class::public_address},
    {"192.169.0.1", address_class::public_address},
    {"169.253.255.255", address_class::public_address},
    {"223.255.255.255", address_class::public_address},
    {"0.0.0.0", address_class::unspecified},
    {"0.255.255.255", address_class::unspecified},
    {"127.0.0.1", address_class::loopback},
    {"127.255.255.254", address_class::loopback},
    {"10.0.0.1", address_class::private_network},
    {"10.255.255.255", address_class::private_network},
    {"172.16.0.1", address_class::private_network},
    {"172.31.255.255", address_class::private_network},
    {"192.168.0.1", address_class::private_network},
    {"100.64.0.1", address_class::carrier_grade_nat},
    {"100.127.255.255", address_class::carrier_grade_nat},
    {"169.254.0.1", address_class::link_local},
    {"169.254.170.2", address_class::link_local},
    {"169.254.169.254", address_class::metadata},
    {"100.100.100.200", address_class::metadata},
    {"192.0.0.192", address_class::metadata},
    {"224.0.0.1", address_class::multicast},
    {"239.255.255.250", address_class::multicast},
    {"255.255.255.255", address_class::broadcast},
    {"240.0.0.1", address_class::reserved},
    {"192.0.0.8", address_class::reserved},
    {"198.18.0.1", address_class::reserved},
    {"198.19.255.255", address_class::reserved},
    {"192.88.99.1", address_class::reserved},
    {"192.0.2.1", address_class::documentation},
    {"198.51.100.7", address_class::documentation},
    {"203.0.113.9", address_class::documentation},
    {"2606:4700:4700::1111", address_class::public_address},
    {"2a00:1450:4001::200e", address_class::public_address},
    {"::", address_class::unspecified},
    {"::1", address_class::loopback},
    {"::ffff:127.0.0.1", address_class::loopback},
    {"::ffff:7f00:1", address_class::loopback},
    {"::ffff:10.0.0.1", address_class::private_network},
    {"::ffff:169.254.169.254", address_class::metadata},
    {"::ffff:8.8.8.8", address_class::ipv4_mapped},
    {"::127.0.0.1", address_class::loopback},
    {"::8.8.8.8", address_class::ipv4_mapped},
    {"::ffff:0.0.0.0", address_class::unspecified},
    {"64:ff9b::7f00:1", address_class::loopback},
    {"64:ff9b::10.0.0.1", address_class::private_network},
    {"64:ff9b::a9fe:a9fe", address_class::metadata},
    {"64:ff9b::808:808", address_class::public_address},
    {"64:ff9b:1::8.8.8.8", address_class::private_network},
    {"2002:7f00:1::", address_class::loopback},
    {"2002:c0a8:1::1", address_class::private_network},
    {"2002:a9fe:a9fe::1", address_class::metadata},
    {"2002:808:808::1", address_class::public_address},
    {"fe80::1", address_class::link_local},
    {"febf:ffff::1", address_class::link_local},
    {"fec0::1", address_class::private_network},
    {"fc00::1", address_class::unique_local},
    {"fd00::1", address_class::unique_local},
    {"fdff:ffff::1", address_class::unique_local},
    {"fd00:ec2::254", address_class::metadata},
    {"ff02::1", address_class::multicast},
    {"ff0e::1", address_class::multicast},
    {"2001:db8::1", address_class::documentation},
    {"3fff::1", address_class::documentation},
    {"3fff:fff::1", address_class::documentation},
    {"2001::1", address_class::reserved},
    {"2001:2::1", address_class::reserved},
    {"100::1", address_class::reserved},
    {"4000::1", address_class::reserved},
    {"1::1", address_class::reserved},
  };
  for (const auto& item : rows) {
    const std::string shown{item.address};
    CAPTURE(shown);
    CHECK(voxos::to_string(voxos::classify(addr(item.address))) == voxos::to_string(item.expected));
  }
}

TEST_CASE("ip_address prints dotted quads and RFC 5952 IPv6") {
  CHECK(addr("10.0.0.1").to_string() == "10.0.0.1");
  CHECK(addr("0:0:0:0:0:0:0:1").to_string() == "::1");
  CHECK(addr("::").to_string() == "::");
  CHECK(addr("2001:db8:0:0:1:0:0:1").to_string() == "2001:db8::1:0:0:1");
  CHECK(addr("2001:db8:0:1:1:1:1:1").to_string() == "2001:db8:0:1:1:1:1:1");
  CHECK(addr("1:0:0:0:0:0:0:0").to_string() == "1::");
  CHECK(addr("::FFFF:127.0.0.1").to_string() == "::ffff:7f00:1");
}

// -- url_policy::check ----------------------------------------------------------

TEST_CASE("non-public hosts in any spelling are refused") {
  const url_policy policy{{}};
  const std::string rows[] = {
    "http://[::1]",
    "https://[::1]",
    "https://[0:0:0:0:0:0:0:1]/mcp",
    "https://127.0.0.1",
    "https://127.0.0.1.",
    "https://127.0.0.1:8443/mcp",
    "https://2130706433/",
    "https://0x7f.1/",
    "https://0x7F000001/",
    "https://0177.0.0.1/",
    "https://127.1",
    "https://127.0.1",
    "https://localhost",
    "https://LOCALHOST.",
    "https://localhost:443/mcp",
    "https://api.localhost/mcp",
    "https://0/",
    "https://0.0.0.0",
    "https://[::]",
    "https://10.0.0.1",
    "https://012.0.0.1",
    "https://167772161",
    "https://172.16.0.1",
    "https://172.31.255.255",
    "https://192.168.1.1",
    "https://100.64.0.1",
    "https://169.254.169.254/latest",
    "https://169.254.169.254./latest/meta-data/",
    "https://2852039166/latest",
    "https://0xa9.0xfe.0xa9.0xfe/",
    "https://100.100.100.200/latest/meta-data",
    "https://[fd00:ec2::254]/latest",
    "https://[fe80::1]",
    "https://[FE80::1]:8443",
    "https://[fd00::1]",
    "https://[fc00::1]",
    "https://[::ffff:10.0.0.1]",
    "https://[::ffff:127.0.0.1]",
    "https://[::ffff:7f00:1]",
    "https://[::ffff:169.254.169.254]",
    "https://[::ffff:8.8.8.8]",
    "https://[::127.0.0.1]",
    "https://[64:ff9b::7f00:1]",
    "https://[64:ff9b::10.0.0.1]",
    "https://[2002:7f00:1::]",
    "https://[2002:c0a8:101::1]",
    "https://224.0.0.1",
    "https://[ff02::1]",
    "https://255.255.255.255",
    "https://4294967295",
    "https://240.0.0.1",
    "https://192.0.2.10",
    "https://[2001:db8::1]",
    "https://198.18.0.1",
  };
  for (const auto& input : rows) {
    CAPTURE(input);
    auto checked = policy.check(input, "mcp");
    REQUIRE_FALSE(checked.is_ok());
    CHECK(checked.error().code() == errc::forbidden);
    const auto& message = checked.error().message();
    CHECK((message.find("non-public") != std::string::npos
           || message.find("plain http") != std::string::npos));
  }
}

TEST_CASE("public https hosts pass the check") {
  const url_policy policy{{}};
  struct row {
    const char* input;
    bool name; ///< a host name, to be checked after resolution
  };
  const row rows[] = {
    {"https://example.com/mcp", true},
    {"https://mcp.example.com:8443/v1/mcp?tenant=a", true},
    {"HTTPS://MCP.EXAMPLE.COM./mcp", true},
    {"https://127.0.0.1.nip.io/mcp", true},
    {"https://172.32.0.1", false},
    {"https://172.15.255.255/", false},
    {"https://100.128.0.1/", false},
    {"https://8.8.8.8/mcp", false},
    {"https://134744072/mcp", false},
    {"https://[2606:4700:4700::1111]/mcp", false},
    {"https://[64:ff9b::808:808]/mcp", false},
  };
  for (const auto& item : rows) {
    const std::string shown{item.input};
    CAPTURE(shown);
    auto checked = policy.check(item.input, "mcp");
    REQUIRE_MESSAGE(checked.is_ok(), checked.error().message());
    CHECK_FALSE(checked->registered);
    CHECK(checked->url.literal.has_value() != item.name);
    CHECK(checked->normalised == voxos::normalised(checked->url));
  }
}

TEST_CASE("plain http is refused unless registered") {
  const url_policy policy{{}};
  for (const std::string input :
       {"http://example.com/mcp", "HTTP://EXAMPLE.COM", "http://8.8.8.8/", "http://[::1]:8000/"}) {
    CAPTURE(input);
    auto checked = policy.check(input, "mcp");
    REQUIRE_FALSE(checked.is_ok());
    CHECK(checked.error().code() == errc::forbidden);
  }
}

TEST_CASE("stdio commands and other transports are refused with a clear error") {
  const url_policy policy{{}};
  const std::string rows[] = {
    "npx some-server",
    "npx -y @modelcontextprotocol/server-filesystem /",
    "uvx mcp-server-git --repository .",
    "python -m mcp_server",
    "/usr/local/bin/mcp-server",
    "./server",
    "C:\\mcp\\server.exe",
    "stdio:",
    "stdio://npx some-server",
    "file:///etc/passwd",
    "FILE:///etc/passwd",
    "ftp://example.com/",
    "ws://example.com/mcp",
    "wss://example.com/mcp",
    "javascript:alert(1)",
    "data:text/plain,hi",
    "unix:///var/run/mcp.sock",
    "example.com/mcp",
    "//example.com/mcp",
    " https://example.com",
    "",
  };
  for (const auto& input : rows) {
    CAPTURE(input);
    auto checked = policy.check(input, "mcp");
    REQUIRE_FALSE(checked.is_ok());
    CHECK(checked.error().code() == errc::forbidden);
    CHECK(checked.error().message().find("stdio") != std::string::npos);
  }
}

TEST_CASE("check passes parse errors through as out of range") {
  const url_policy policy{{}};
  for (const std::string input :
       {"https://user:pass@example.com", "https://example.com#frag", "https://example.com:0",
        "https://example.com:65536", "https://example.com:abc", "https://[fe80::1%25eth0]/",
        "https://ex%61mple.com/"}) {
    CAPTURE(input);
    auto checked = policy.check(input, "mcp");
    REQUIRE_FALSE(checked.is_ok());
    CHECK(checked.error().code() == errc::out_of_range);
  }
}

// -- registered URLs ------------------------------------------------------------

TEST_CASE("an exact registered URL is allowed for its purpose in any spelling") {
  const auto policy = compose_policy();
  struct row {
    const char* input;
    const char* purpose;
  };
  const row rows[] = {
    {"http://flightradar24-mcp:8000/mcp", "mcp"},
    {"HTTP://FlightRadar24-MCP.:8000/mcp", "mcp"},
    {"http://monzo-mcp:8000/mcp", "mcp"},
    {"http://127.0.0.1:3001/mcp?x=1", "mcp"},
    {"http://2130706433:3001/mcp?x=1", "mcp"},
    {"http://0x7f.1:3001/mcp?x=1", "mcp"},
    {"https://10.0.0.5/mcp", "mcp"},
    {"https://10.0.0.5:443/mcp", "mcp"},
    {"http://localhost:3002/mcp", "mcp"},
    {"http://issuer.internal:9000", "oauth_issuer"},
  };
  const auto docker_network = addrs({"172.18.0.5"});
  for (const auto& item : rows) {
    const std::string shown{item.input};
    CAPTURE(shown);
    auto checked = policy.check(item.input, item.purpose);
    REQUIRE_MESSAGE(checked.is_ok(), checked.error().message());
    CHECK(checked->registered);
    CHECK(verdict(policy, item.input, item.purpose, docker_network).is_ok());
  }
}

TEST_CASE("a near miss of a registered URL is refused") {
  const auto policy = compose_policy();
  struct row {
    const char* input;
    const char* purpose;
  };
  const row rows[] = {
    {"http://flightradar24-mcp:8001/mcp", "mcp"},
    {"http://flightradar24-mcp/mcp", "mcp"},
    {"http://flightradar24-mcp:8000/mcp/", "mcp"},
    {"http://flightradar24-mcp:8000/", "mcp"},
    {"http://flightradar24-mcp:8000/MCP", "mcp"},
    {"http://flightradar24-mcp:8000/mcp?x=1", "mcp"},
    {"http://flightradar24-mcp:8000/other", "mcp"},
    {"https://flightradar24-mcp:8000/mcp", "mcp"},
    {"http://flightradar24-mcp.evil.example:8000/mcp", "mcp"},
    {"http://flightradar24-mcp:8000/mcp", "oauth_issuer"},
    {"http://flightradar24-mcp:8000/mcp", "MCP"},
    {"http://flightradar24-mcp:8000/mcp", ""},
    {"http://127.0.0.1:3001/mcp", "mcp"},
    {"http://127.0.0.1:3001/mcp?x=2", "mcp"},
    {"http://127.0.0.1:3001/mcp?x=1&y=2", "mcp"},
    {"http://127.0.0.2:3001/mcp?x=1", "mcp"},
    {"http://[::ffff:127.0.0.1]:3001/mcp?x=1", "mcp"},
    {"https://127.0.0.1:3001/mcp?x=1", "mcp"},
    {"https://10.0.0.5/mcp/", "mcp"},
    {"https://10.0.0.5:8443/mcp", "mcp"},
    {"http://10.0.0.5/mcp", "mcp"},
    {"https://10.0.0.6/mcp", "mcp"},
    {"http://localhost:3003/mcp", "mcp"},
    {"https://localhost:3002/mcp", "mcp"},
    {"http://issuer.internal:9000/", "mcp"},
  };
  const auto docker_network = addrs({"172.18.0.5"});
  for (const auto& item : rows) {
    const std::string shown{item.input};
    CAPTURE(shown);
    const std::string purpose{item.purpose};
    CAPTURE(purpose);
    auto outcome = verdict(policy, item.input, item.purpose, docker_network);
    REQUIRE_FALSE(outcome.is_ok());
    CHECK(outcome.code() == errc::forbidden);
  }
}

TEST_CASE("a registered entry that does not parse never matches") {
  const url_policy policy{{{"https://user:pw@example.com/mcp", "mcp"}, {"stdio:", "mcp"}}};
  CHECK(policy.check("https://example.com/mcp", "mcp").is_ok());
  CHECK_FALSE(policy.check("https://example.com/mcp", "mcp")->registered);
  CHECK_FALSE(policy.check("stdio:", "mcp").is_ok());
}

// -- check_resolved -------------------------------------------------------------

TEST_CASE("every resolved address of an unregistered name must be public") {
  const url_policy policy{{}};
  auto checked = policy.check("https://mcp.example.com/mcp", "mcp");
  REQUIRE(checked.is_ok());
  struct row {
    std::vector<std::string> resolved;
    bool allowed;
  };
  const row rows[] = {
    {{"93.184.216.34"}, true},
    {{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"}, true},
    {{"64:ff9b::5db8:d822"}, true},
    {{"127.0.0.1"}, false},
    {{"::1"}, false},
    {{"93.184.216.34", "10.0.0.1"}, false},
    {{"10.0.0.1", "93.184.216.34"}, false},
    {{"2606:4700::1111", "fe80::1"}, false},
    {{"2606:4700::1111", "fd12:3456::1"}, false},
    {{"::ffff:127.0.0.1"}, false},
    {{"::ffff:8.8.8.8"}, false},
    {{"64:ff9b::a9fe:a9fe"}, false},
    {{"169.254.169.254"}, false},
    {{"100.100.100.200"}, false},
    {{"0.0.0.0"}, false},
    {{"100.64.1.1"}, false},
  };
  for (const auto& item : rows) {
    CAPTURE(item.resolved.front());
    CAPTURE(item.resolved.size());
    auto outcome = policy.check_resolved(*checked, addrs(item.resolved));
    CHECK(outcome.is_ok() == item.allowed);
    if (!outcome.is_ok())
      CHECK(outcome.code() == errc::forbidden);
  }
}

TEST_CASE("a name that resolves to no address is unavailable even when registered") {
  const auto policy = compose_policy();
  auto unregistered = policy.check("https://mcp.example.com/mcp", "mcp");
  REQUIRE(unregistered.is_ok());
  auto outcome = policy.check_resolved(*unregistered, {});
  REQUIRE_FALSE(outcome.is_ok());
  CHECK(outcome.code() == errc::unavailable);

  auto registered = policy.check("http://flightradar24-mcp:8000/mcp", "mcp");
  REQUIRE(registered.is_ok());
  auto registered_outcome = policy.check_resolved(*registered, {});
  REQUIRE_FALSE(registered_outcome.is_ok());
  CHECK(registered_outcome.code() == errc::unavailable);
}

TEST_CASE("a registered URL may resolve to private and loopback addresses") {
  const auto policy = compose_policy();
  auto checked = policy.check("http://flightradar24-mcp:8000/mcp", "mcp");
  REQUIRE(checked.is_ok());
  CHECK(policy.check_resolved(*checked, addrs({"172.18.0.5", "127.0.0.1", "fd00::5"})).is_ok());
}

// -- resolve --------------------------------------------------------------------

TEST_CASE("resolve returns literal addresses unchanged") {
  auto v4 = voxos::resolve("127.0.0.1", 443);
  REQUIRE_MESSAGE(v4.is_ok(), v4.error().message());
  REQUIRE(v4->size() == 1);
  CHECK(v4->front() == addr("127.0.0.1"));

  auto v6 = voxos::resolve("::1", 443);
  REQUIRE_MESSAGE(v6.is_ok(), v6.error().message());
  REQUIRE(v6->size() == 1);
  CHECK(v6->front() == addr("::1"));

  auto mapped_host = parse_url("https://[::ffff:7f00:1]/");
  REQUIRE(mapped_host.is_ok());
  auto mapped = voxos::resolve(mapped_host->host, mapped_host->port);
  REQUIRE_MESSAGE(mapped.is_ok(), mapped.error().message());
  REQUIRE(mapped->size() == 1);
  CHECK(mapped->front() == addr("::ffff:127.0.0.1"));
}

TEST_CASE("resolve refuses an empty host") {
  auto empty = voxos::resolve("", 443);
  REQUIRE_FALSE(empty.is_ok());
  CHECK(empty.error().code() == errc::out_of_range);
}

TEST_CASE("localhost resolves to loopback and is refused unless registered") {
  auto resolved = voxos::resolve("localhost", 443);
  REQUIRE_MESSAGE(resolved.is_ok(), resolved.error().message());
  REQUIRE_FALSE(resolved->empty());
  for (const auto& item : *resolved)
    CHECK(voxos::classify(item) == address_class::loopback);

  // A public-looking name answered with localhost's addresses (rebinding).
  const auto policy = compose_policy();
  auto unregistered = policy.check("https://mcp.example.com/mcp", "mcp");
  REQUIRE(unregistered.is_ok());
  auto refused = policy.check_resolved(*unregistered, *resolved);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.code() == errc::forbidden);

  // The name itself is refused before any lookup.
  auto by_name = policy.check("https://localhost:3002/mcp", "mcp");
  REQUIRE_FALSE(by_name.is_ok());
  CHECK(by_name.error().code() == errc::forbidden);

  // Registered exactly: allowed after resolution too.
  auto registered = policy.check("http://localhost:3002/mcp", "mcp");
  REQUIRE(registered.is_ok());
  auto resolved_registered = voxos::resolve(registered->url.host, registered->url.port);
  REQUIRE(resolved_registered.is_ok());
  CHECK(policy.check_resolved(*registered, *resolved_registered).is_ok());
}

// -- messages -------------------------------------------------------------------

TEST_CASE("error messages never contain the URL or its credentials") {
  const auto policy = compose_policy();
  const std::string secret = "s3cr3t-T0ken";
  const std::string rows[] = {
    "https://user:" + secret + "@example.com/mcp",
    "https://" + secret + "@10.0.0.1/mcp",
    "https://10.0.0.1/mcp?api_key=" + secret,
    "https://[fe80::1]/" + secret,
    "https://127.0.0.1/" + secret,
    "http://example.com/mcp?token=" + secret,
    "https://example.com/mcp#" + secret,
    "https://example.com/mcp?token=" + secret + "&bad=%zz",
    "https://example.com:" + secret + "/mcp",
    "https://" + secret + "%2e.example.com/mcp",
    "https://[fe80::1%25" + secret + "]/mcp",
    "https://example.com/" + secret + "/../mcp",
    "https://example.com/" + secret + " x",
    "https://example.com/" + secret + std::string(2048, 'a'),
    "npx server --token " + secret,
    "stdio://" + secret,
    "ws://example.com/?token=" + secret,
  };
  for (const auto& input : rows) {
    CAPTURE(input);
    auto checked = policy.check(input, "mcp");
    REQUIRE_FALSE(checked.is_ok());
    const auto& message = checked.error().message();
    CHECK_FALSE(message.empty());
    CHECK(message.find(secret) == std::string::npos);
    CHECK(message.find("s3cr3t") == std::string::npos);
    CHECK(message.find("example.com") == std::string::npos);
    CHECK(message.find("10.0.0.1") == std::string::npos);
  }

  // A name whose addresses are refused: the message names neither.
  auto checked = policy.check("https://" + secret + ".example.com/mcp?k=" + secret, "mcp");
  REQUIRE(checked.is_ok());
  auto outcome = policy.check_resolved(*checked, addrs({"10.0.0.1"}));
  REQUIRE_FALSE(outcome.is_ok());
  CHECK(outcome.message().find("s3cr3t") == std::string::npos);
  CHECK(outcome.message().find("10.0.0.1") == std::string::npos);
}
