// A hand-written OAuth authorization server and MCP protected resource on
// 127.0.0.1 (a loopback_server, port bound to 0), for unit tests of the
// client's protocol code (transport/auth): each test scripts the documents
// and answers it needs, bad ones included, and reads back the requests that
// reached it. A fake on purpose: it checks nothing by itself, so a test can
// make it answer what no real server would. The end-to-end test against a
// real authorization server (oidc-provider) lives elsewhere.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "config/clock.hpp"
#include "messages/status.hpp"
#include "support/loopback_http.hpp"
#include "transport/auth/auth_fetch.hpp"
#include "transport/url_policy.hpp"

namespace voxos::test {

/// The clock token expiries are read against.
using voxos::wall_clock_ms;

/// One request as the fake received it.
struct seen_request {
  std::string method;
  std::string path; ///< without the query
  std::string query;
  std::string body;
  std::string authorization; ///< the Authorization header, or ""
  std::string content_type;

  /// The first value of form field `name` of the body, or nullopt.
  std::optional<std::string> field(std::string_view name) const {
    for (auto& [key, value] : auth::form_decode(body))
      if (key == name)
        return value;
    return std::nullopt;
  }
  /// The body as JSON (a registration request).
  nlohmann::json json() const { return nlohmann::json::parse(body); }
};

/// A scripted answer.
struct canned_reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  httplib::Headers headers;
};

inline canned_reply json_reply(const nlohmann::json& doc, int status = 200) {
  return {status, doc.dump(), "application/json", {}};
}

/// A 302 to `location`.
inline canned_reply redirect_reply(const std::string& location) {
  return {302, "", "text/plain", {{"Location", location}}};
}

/// A token endpoint's success answer for `access_token` (Bearer, an hour),
/// with `extra` members merged in.
inline nlohmann::json token_answer(const std::string& access_token,
                                   const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json doc{
    {"access_token", access_token}, {"token_type", "Bearer"}, {"expires_in", 3600}};
  doc.update(extra);
  return doc;
}

class fake_oauth_server {
public:
  using handler = std::function<canned_reply(const seen_request&)>;

  /// Started at once; every GET and POST is recorded, then answered by the
  /// route set for its method and path, else 404.
  fake_oauth_server() {
    auto serve = [this](const httplib::Request& req, httplib::Response& res) {
      seen_request seen{req.method,
                        req.path,
                        {},
                        req.body,
                        req.get_header_value("Authorization"),
                        req.get_header_value("Content-Type")};
      if (auto mark = req.target.find('?'); mark != std::string::npos)
        seen.query = req.target.substr(mark + 1);
      handler answer;
      {
        std::lock_guard<std::mutex> guard{mtx_};
        seen_.push_back(seen);
        auto it = routes_.find(req.method + " " + req.path);
        if (it != routes_.end())
          answer = it->second;
      }
      canned_reply reply = answer ? answer(seen) : canned_reply{404, "{}", "application/json", {}};
      res.status = reply.status;
      for (const auto& [name, value] : reply.headers)
        res.set_header(name, value);
      res.set_content(reply.body, reply.content_type);
    };
    http_.svr.Get(".*", serve);
    http_.svr.Post(".*", serve);
    http_.start();
  }

  /// "http://127.0.0.1:<port>": the issuer of its authorization server.
  std::string origin() const { return http_.url(""); }
  std::string url(const std::string& path) const { return http_.url(path); }
  /// The MCP server's URL, origin + "/mcp".
  std::string mcp_url() const { return url("/mcp"); }

  /// Answers `method` `path` with what `answer` returns (on the server's
  /// threads).
  void on(const std::string& method, const std::string& path, handler answer) {
    std::lock_guard<std::mutex> guard{mtx_};
    routes_[method + " " + path] = std::move(answer);
  }
  void answer(const std::string& method, const std::string& path, canned_reply reply) {
    on(method, path, [reply = std::move(reply)](const seen_request&) { return reply; });
  }

  /// Protected-resource metadata for mcp_url() naming this server as its
  /// authorization server, `extra` merged in.
  nlohmann::json resource_document(const nlohmann::json& extra = nlohmann::json::object()) const {
    nlohmann::json doc{{"resource", mcp_url()}, {"authorization_servers", {origin()}}};
    doc.update(extra);
    return doc;
  }
  /// Authorization-server metadata for issuer origin() with /authorize,
  /// /token and /register and PKCE S256, `extra` merged in.
  nlohmann::json server_document(const nlohmann::json& extra = nlohmann::json::object()) const {
    nlohmann::json doc{{"issuer", origin()},
                       {"authorization_endpoint", url("/authorize")},
                       {"token_endpoint", url("/token")},
                       {"registration_endpoint", url("/register")},
                       {"response_types_supported", {"code"}},
                       {"code_challenge_methods_supported", {"S256"}}};
    doc.update(extra);
    return doc;
  }
  static constexpr const char* resource_path = "/.well-known/oauth-protected-resource/mcp";
  static constexpr const char* server_path = "/.well-known/oauth-authorization-server";
  /// Serves both documents where discovery looks first.
  void serve_discovery(const nlohmann::json& resource_extra = nlohmann::json::object(),
                       const nlohmann::json& server_extra = nlohmann::json::object()) {
    answer("GET", resource_path, json_reply(resource_document(resource_extra)));
    answer("GET", server_path, json_reply(server_document(server_extra)));
  }

  /// The requests that reached `path` (any method), in order.
  std::vector<seen_request> requests(const std::string& path) const {
    std::lock_guard<std::mutex> guard{mtx_};
    std::vector<seen_request> out;
    for (const auto& item : seen_)
      if (item.path == path)
        out.push_back(item);
    return out;
  }
  std::size_t hits(const std::string& path) const { return requests(path).size(); }
  std::size_t total_hits() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return seen_.size();
  }

private:
  mutable std::mutex mtx_;
  std::map<std::string, handler> routes_; ///< "METHOD path"
  std::vector<seen_request> seen_;
  loopback_server http_; ///< last: stopped before the state its handlers use goes
};

/// An auth_fetcher for a test client: its policy trusts loopback addresses
/// and localhost names, and checks every other address as usual.
inline std::shared_ptr<const auth::auth_fetcher>
loopback_fetcher(auth::auth_fetch_options opts = {}) {
  return std::make_shared<const auth::auth_fetcher>(
    std::make_shared<const url_policy>(url_policy::trusting_loopback({})), std::move(opts));
}

/// Checks that the message of `failure` holds none of `secrets` (URLs,
/// tokens, secrets, hosts).
inline void check_names_none(const status& failure, std::initializer_list<std::string> secrets) {
  REQUIRE_FALSE(failure.is_ok());
  for (const auto& secret : secrets) {
    REQUIRE_FALSE(secret.empty());
    CHECK_MESSAGE(failure.message().find(secret) == std::string::npos,
                  "\"" << failure.message() << "\" names \"" << secret << "\"");
  }
}

} // namespace voxos::test
