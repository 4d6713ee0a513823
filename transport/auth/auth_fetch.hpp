// HTTP for the authorization work: every URL it fetches (protected-resource
// metadata, authorization-server metadata, registration, token, JWKS,
// client ID metadata documents) passes the same URL policy as server URLs,
// purpose "oauth" (a registered URL for "mcp" counts too: the metadata of a
// registered Local Compose server lives beside it), with addresses pinned and
// no redirect followed. CAF-free, blocking; call it from a thread that may
// wait.
//
// Bounds (auth_fetch_options): a whole request 10 s, a body 1 MiB, one
// connection per request (no keep-alive: these requests are rare).
//
// Errors (messages name the step, never the URL, a header value or a body):
//   forbidden     the URL policy refused the URL or its addresses; a 3xx
//                 ("redirects are refused") unless the call allows them
//   out_of_range  not an acceptable URL
//   body_too_large the answer is over the body bound
//   unavailable   DNS, connect, TLS, read failures, the deadline
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "messages/status.hpp"
#include "transport/http_client.hpp"

namespace voxos {
class url_policy;
}

namespace voxos::auth {

struct auth_fetch_options {
  std::chrono::milliseconds timeout{10'000}; ///< one request, connect to last byte
  std::size_t max_body_bytes = std::size_t{1} << 20;
  std::string ca_file; ///< https trust: a PEM bundle, or "" for the system's
};

/// What a server answered.
struct auth_reply {
  int status = 0;
  std::string content_type;     ///< media type, lowercased, without parameters
  std::string location;         ///< Location (a 3xx, when allowed)
  std::string www_authenticate; ///< WWW-Authenticate
  std::string body;
  bool is_json() const { return content_type == "application/json"; }
};

/// Form fields, in order, sent as application/x-www-form-urlencoded.
using form_fields = std::vector<std::pair<std::string, std::string>>;

/// application/x-www-form-urlencoded text of `fields` (RFC 6749 appendix B:
/// every byte outside ALPHA / DIGIT / "-" / "." / "_" / "~" percent-encoded,
/// space as "+").
std::string form_encode(const form_fields& fields);

/// Percent-encoding of one value (space as %20), for URL query components.
std::string percent_encode(std::string_view text);

/// The fields of a query or form text ("a=1&b=2"), decoded; duplicates kept
/// in order. Malformed percent escapes are kept as they are.
form_fields form_decode(std::string_view text);

class auth_fetcher {
public:
  auth_fetcher(std::shared_ptr<const url_policy> policy, auth_fetch_options opts = {});

  result<auth_reply> get(const std::string& url, const http_header_list& headers = {}) const;
  result<auth_reply> post_form(const std::string& url, const form_fields& fields,
                               const http_header_list& headers = {}) const;
  result<auth_reply> post_json(const std::string& url, const std::string& json,
                               const http_header_list& headers = {}) const;
  /// A GET whose 3xx answer is returned with its Location, not refused: the
  /// user agent's step of an authorization request, played by a test client
  /// (`voxosctl conformance`). The node never calls it.
  result<auth_reply> get_redirect(const std::string& url) const;

  const url_policy& policy() const { return *policy_; }

private:
  result<auth_reply> send(const std::string& method, const std::string& url,
                          const http_header_list& headers, const std::string* body,
                          const std::string& content_type, bool allow_redirect) const;

  std::shared_ptr<const url_policy> policy_;
  auth_fetch_options opts_;
};

} // namespace voxos::auth
