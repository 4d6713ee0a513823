#include "actors/http_api/http_api.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>

#include <nlohmann/json.hpp>

#include "actors/http_api/ask.hpp"
#include "actors/http_api/console_routes.hpp"
#include "actors/http_api/held_requests.hpp"
#include "actors/http_api/node_mcp.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/tenant/tenant_events.hpp"
#include "actors/tenant/tenant_queries.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "storage/digest.hpp"
#include "transport/http_server.hpp"
#include "transport/json_body.hpp"

namespace voxos {

namespace {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

/// A sign-in's steps wait on the authorization server (each request at most
/// 10 s) and, at the callback, on the connection test.
constexpr auto sign_in_timeout = std::chrono::seconds(90);

// -- asking actors -----------------------------------------------------------

// -- rendering ---------------------------------------------------------------

void send_json(httplib::Response& res, int status_code, const json& body) {
  res.status = status_code;
  res.set_content(body.dump(), "application/json");
}

/// Renders an actor's error. Internal detail (storage, corruption, CAF
/// runtime errors) goes to the log; clients get the code and a generic text.
void send_error(httplib::Response& res, const caf::error& err) {
  if (err.category() != error_category()) {
    if (err == caf::sec::request_timeout) {
      write_error(res, errc::unavailable, "the node did not answer in time");
      return;
    }
    log::error("http_api", "actor error: " + message_of(err));
    write_error(res, errc::internal, "internal error");
    return;
  }
  auto code = code_of(err);
  switch (code) {
  case errc::storage_failure:
  case errc::corrupt_data:
  case errc::vault_open_failed:
  case errc::config_invalid:
  case errc::internal:
    log::error("http_api", message_of(err));
    write_error(res, code,
                code == errc::storage_failure ? "the event store is unavailable"
                                              : "internal error");
    return;
  default:
    write_error(res, code, message_of(err));
  }
}

json to_json(const tenant_record& x) {
  return {{"tenant_id", x.tenant_id}, {"name", x.name}, {"created_us", x.created_us}};
}

json to_json(const token_record& x) {
  return {{"token_id", x.token_id},
          {"tenant_id", x.tenant_id},
          {"label", x.label},
          {"created_us", x.created_us},
          {"revoked", x.revoked}};
}

template <class T>
json to_json_array(const std::vector<T>& xs) {
  auto out = json::array();
  for (const auto& x : xs)
    out.push_back(to_json(x));
  return out;
}

// -- request helpers -----------------------------------------------------------

/// Whether a body, if any, is declared JSON; else answers 415.
bool json_media(const httplib::Request& req, httplib::Response& res) {
  if (req.body.empty()
      || (req.get_header_value_count("Content-Type") == 1
          && is_json_media_type(req.get_header_value("Content-Type"))))
    return true;
  write_error(res, errc::unsupported_media_type,
              "the body must be application/json (optionally with charset=utf-8)");
  return false;
}

/// Parses a JSON body after checking its media type.
std::optional<json> read_body(const httplib::Request& req, httplib::Response& res,
                              std::initializer_list<field_spec> fields) {
  if (!json_media(req, res))
    return std::nullopt;
  auto parsed = parse_json_object(req.body, fields);
  if (!parsed) {
    write_error(res, parsed.error().code(), parsed.error().message());
    return std::nullopt;
  }
  return std::move(*parsed);
}

/// A query parameter's value, or nullopt when the request has none.
std::optional<std::string> query_param(const httplib::Request& req, std::string_view name) {
  std::string key{name};
  if (!req.has_param(key.c_str()))
    return std::nullopt;
  return req.get_param_value(key.c_str());
}

/// A path segment that must be an id (1..64 of [a-z0-9_-]); else answers
/// 400 naming the segment.
bool path_id(const std::string& value, const char* segment, httplib::Response& res) {
  if (tenant_events::is_id(value))
    return true;
  write_error(res, errc::out_of_range,
              std::string{segment} + ": 1 to 64 characters of [a-z0-9_-] in the path");
  return false;
}

/// The knowledge candidates a listing asks for: `status` (pending, decided
/// or all; default pending) and `limit` (1 .. 1,000; default 100); nullopt
/// when either is malformed.
std::optional<json> candidate_query(const httplib::Request& req) {
  auto status = req.has_param("status") ? req.get_param_value("status") : "pending";
  if (status != "pending" && status != "decided" && status != "all")
    return std::nullopt;
  int limit = 100;
  if (req.has_param("limit")) {
    const auto& text = req.get_param_value("limit");
    if (text.empty() || text.size() > 4
        || text.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    limit = std::stoi(text);
    if (limit < 1 || limit > 1000)
      return std::nullopt;
  }
  return json{{"status", status}, {"limit", limit}};
}

std::string string_field(const json& body, const char* name) {
  auto found = body.find(name);
  return found != body.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

/// The calls of a POST /v1/runs/{id}/tool-calls body: each an object with
/// exactly call_id (string), name (string) and arguments (object, optional).
result<std::vector<tool_call>> tool_calls_of(const json& calls) {
  std::vector<tool_call> out;
  out.reserve(calls.size());
  for (std::size_t idx = 0; idx < calls.size(); ++idx) {
    const auto& call = calls[idx];
    auto where = "calls[" + std::to_string(idx) + "]";
    if (!call.is_object())
      return status::error(errc::wrong_type, where + ": expected an object");
    for (const auto& [key, value] : call.items())
      if (key != "call_id" && key != "name" && key != "arguments")
        return status::error(errc::unknown_field,
                             where + ": unknown field (call_id, name, arguments allowed)");
    auto id = call.find("call_id");
    auto name = call.find("name");
    if (id == call.end() || !id->is_string())
      return status::error(errc::missing_field, where + ".call_id: a string is required");
    if (name == call.end() || !name->is_string())
      return status::error(errc::missing_field, where + ".name: a string is required");
    auto args = call.find("arguments");
    if (args != call.end() && !args->is_object())
      return status::error(errc::wrong_type, where + ".arguments: expected an object");
    out.push_back({id->get<std::string>(), name->get<std::string>(),
                   args != call.end() ? args->dump() : std::string{"{}"}});
  }
  return out;
}

json to_json(const std::vector<tool_output>& outputs) {
  json out = json::array();
  for (const auto& x : outputs)
    out.push_back({{"call_id", x.call_id},
                   {"status", x.status},
                   {"output", json::parse(x.output, nullptr, false)}});
  return out;
}

} // namespace

class http_api::routes {
public:
  explicit routes(http_api_context ctx)
      : ctx_(std::move(ctx)), node_mcp_(*ctx_.sys, ctx_.directory) {
    if (!ctx_.tokens)
      ctx_.tokens = std::make_shared<node_token_cache>(0);
    if (ctx_.sign_in)
      broker_ = std::make_unique<auth::broker_verifier>(ctx_.sign_in->broker_secret);
  }

  /// The node's own MCP servers (/mcp/<name>).
  node_mcp_servers& node_mcp() { return node_mcp_; }

  /// Admin routes: checks the operator token, then runs `fn`.
  template <class F>
  httplib::Server::Handler admin(F fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      auto token = bearer_token(req);
      if (!token
          || !digest::constant_time_equal(digest::sha256_hex(*token), ctx_.admin_token_hash)) {
        write_error(res, errc::unauthorized, "an admin token is required");
        return;
      }
      fn(req, res);
    };
  }

  /// Tenant routes: authenticates the tenant token, then runs `fn` with the
  /// identity it selects.
  template <class F>
  httplib::Server::Handler tenant(F fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      if (auto who = authenticate(req, res, false))
        fn(req, res, who->identity);
    };
  }

  /// Tenant configuration routes: like tenant(), and also hands `fn` the
  /// tenant actor of the tenant the token selected.
  template <class F>
  httplib::Server::Handler tenant_config(F fn) {
    return [this, fn](const httplib::Request& req, httplib::Response& res) {
      if (auto who = authenticate(req, res, true))
        fn(req, res, who->tenant);
    };
  }

  /// Admin routes about one tenant (its id the path's first group): checks
  /// the operator token, then runs `fn` with that tenant's actor.
  template <class F>
  httplib::Server::Handler admin_tenant(F fn) {
    return admin([this, fn](const httplib::Request& req, httplib::Response& res) {
      auto [hdl, err] = ask<tenant_actor>(*ctx_.sys, ctx_.directory, config_atom::value,
                                          std::string{req.matches[1]});
      if (!hdl) {
        send_error(res, err);
        return;
      }
      fn(req, res, *hdl);
    });
  }

  /// Sends a request whose answer is JSON text and relays it.
  template <class Handle, class... Ts>
  void relay(httplib::Response& res, int status_code, const Handle& dest, Ts&&... xs) {
    auto [text, err] = ask<std::string>(*ctx_.sys, dest, std::forward<Ts>(xs)...);
    if (!text) {
      send_error(res, err);
      return;
    }
    res.status = status_code;
    res.set_content(*text, "application/json");
  }

  template <class T, class Handle, class... Ts>
  void answer(httplib::Response& res, int status_code, const Handle& dest, Ts&&... xs) {
    auto [value, err] = ask<T>(*ctx_.sys, dest, std::forward<Ts>(xs)...);
    if (!value) {
      send_error(res, err);
      return;
    }
    if constexpr (std::is_same_v<T, issued_token>) {
      auto body = to_json(value->record);
      body["token"] = value->secret;
      send_json(res, status_code, body);
    } else if constexpr (std::is_same_v<
                           T, std::vector<
                                tenant_record>> || std::is_same_v<T, std::vector<token_record>>) {
      send_json(res, status_code, to_json_array(*value));
    } else {
      send_json(res, status_code, to_json(*value));
    }
  }

  void install(httplib::Server& srv);
  void sign_in_callback(const httplib::Request& req, httplib::Response& res);

  /// For routes a signed value authenticates (no tenant token): asks the
  /// actor of `tenant_id` (allowing for a sign-in's waits) and relays its
  /// JSON answer, 200.
  template <class... Ts>
  void ask_tenant(httplib::Response& res, const std::string& tenant_id, Ts&&... xs) {
    auto [hdl, err] = ask<tenant_actor>(*ctx_.sys, ctx_.directory, config_atom::value, tenant_id);
    if (!hdl) {
      send_error(res, err);
      return;
    }
    auto [text, failed] = ask_within<std::string>(*ctx_.sys, caf::duration{sign_in_timeout}, *hdl,
                                                  std::forward<Ts>(xs)...);
    if (!text) {
      send_error(res, failed);
      return;
    }
    res.status = 200;
    res.set_content(*text, "application/json");
  }
  void broker_token(const httplib::Request& req, httplib::Response& res);
  void install_tenant_config(httplib::Server& srv);
  void install_tenant_reads(httplib::Server& srv);
  void install_knowledge(httplib::Server& srv);
  void install_work(httplib::Server& srv);
  void stream_activity(httplib::Response& res, const tenant_actor& tenant,
                       const std::string& run_id, bool hold);

  node_metrics* metrics() const noexcept { return ctx_.metrics; }
  std::shared_ptr<const static_site> console() const { return ctx_.console; }

  /// A hold on a worker for a request of `tenant` that waits (a stream, a
  /// round); when refused, the refusal is written and the hold is empty.
  held_requests::hold hold_worker(httplib::Response& res, const tenant_actor& tenant) {
    auto taken = held_->take(tenant.id());
    if (taken)
      return std::move(*taken);
    res.set_header("Retry-After", "1");
    write_error(res, taken.error().code(), taken.error().message());
    return nullptr;
  }

private:
  /// What a tenant token selects: its identity, and its tenant actor when
  /// asked for.
  struct authenticated {
    tenant_identity identity;
    tenant_actor tenant;
  };
  /// The request's tenant token: its identity (and, `with_tenant`, its
  /// tenant actor), remembered or asked of the directory. On failure the
  /// error is written and nothing answered.
  std::optional<authenticated> authenticate(const httplib::Request& req, httplib::Response& res,
                                            bool with_tenant);

  http_api_context ctx_;
  node_mcp_servers node_mcp_;
  std::unique_ptr<auth::broker_verifier> broker_; ///< null without a state secret
  std::shared_ptr<held_requests> held_ = std::make_shared<held_requests>(ctx_.held, ctx_.metrics);
};

/// GET /v1/runs/{run}/events: the run's tool activity as server-sent events
/// ("event: activity", data one JSON event of run.hpp), a ": keepalive"
/// comment after 15 s without one, and "event: end" when the run ends.
/// Each open stream holds one HTTP worker thread (see held_requests).
///
/// `hold`: the stream is the run's host's hold on it. Keepalives come every
/// run.host_keepalive_ms, and a stream that breaks before the run ended (a
/// write fails: the host went away) cancels the run, as DELETE would. A
/// peer's close is seen at the second write after it (the first only draws
/// its reset), so within about twice the keepalive.
void http_api::routes::stream_activity(httplib::Response& res, const tenant_actor& tenant,
                                       const std::string& run_id, bool hold) {
  auto keepalive = hold ? std::chrono::milliseconds{ctx_.host_keepalive_ms}
                        : std::chrono::milliseconds{std::chrono::seconds(15)};
  auto worker = hold_worker(res, tenant);
  if (!worker)
    return;
  auto listener = std::make_shared<caf::scoped_actor>(*ctx_.sys);
  caf::error failure;
  bool listening = false;
  (*listener)
    ->request(tenant, ask_timeout, listen_atom::value, run_atom::value, run_id,
              caf::actor_cast<caf::actor>(*listener))
    .receive([&](bool) { listening = true; }, [&](caf::error& err) { failure = std::move(err); });
  if (!listening) {
    send_error(res, failure);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  auto ended = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
    "text/event-stream",
    [listener, ended, keepalive](std::size_t, httplib::DataSink& sink) {
      if (*ended) {
        sink.done();
        return true;
      }
      std::string chunk;
      (*listener)->receive(
        [&](tool_atom, const std::string& event) {
          chunk = "event: activity\ndata: " + event + "\n\n";
        },
        [&](close_atom, const std::string& reason) {
          chunk = "event: end\ndata: " + json{{"reason", reason}}.dump() + "\n\n";
          *ended = true;
        },
        caf::after(keepalive) >> [&] { chunk = ": keepalive\n\n"; });
      return sink.write(chunk.data(), chunk.size());
    },
    [worker, hold, ended, tenant, run_id](bool) {
      if (hold && !*ended)
        caf::anon_send(tenant, cancel_atom::value, run_atom::value, run_id);
    });
}

std::optional<http_api::routes::authenticated>
http_api::routes::authenticate(const httplib::Request& req, httplib::Response& res,
                               bool with_tenant) {
  auto token = bearer_token(req);
  if (!token) {
    write_error(res, errc::unauthorized, "a tenant token is required");
    return std::nullopt;
  }
  auto key = digest::sha256_hex(*token);
  auto asked_us = steady_clock_us();
  auto known = ctx_.tokens->find(key, asked_us);
  authenticated out;
  if (known.value) {
    out.identity = std::move(known.value->identity);
    out.tenant = caf::actor_cast<tenant_actor>(known.value->tenant.lock());
  } else {
    auto [identity, err] =
      ask<tenant_identity>(*ctx_.sys, ctx_.directory, auth_atom::value, *token);
    if (!identity) {
      send_error(res, err);
      return std::nullopt;
    }
    out.identity = std::move(*identity);
    // (not remembered when a token was revoked meanwhile: this answer may
    // be that token's, given just before)
    ctx_.tokens->put(key, remembered_token{out.identity, {}}, asked_us, known.generation);
  }
  if (with_tenant && !out.tenant) {
    auto [tenant, err] =
      ask<tenant_actor>(*ctx_.sys, ctx_.directory, config_atom::value, out.identity.tenant_id);
    if (!tenant) {
      send_error(res, err);
      return std::nullopt;
    }
    out.tenant = std::move(*tenant);
    // (remembered until the identity's entry expires, never longer)
    ctx_.tokens->update(key, steady_clock_us(), [&](remembered_token& entry) {
      entry.tenant = caf::actor_cast<caf::weak_actor_ptr>(out.tenant);
    });
  }
  return out;
}

void http_api::routes::broker_token(const httplib::Request& req, httplib::Response& res) {
  if (!broker_) {
    write_error(res, errc::conflict, "this node cannot broker: it has no OAuth state secret");
    return;
  }
  auto assertion = bearer_token(req);
  if (!assertion) {
    write_error(res, errc::unauthorized, "a broker assertion is required");
    return;
  }
  auto body = read_body(req, res, {{"server_id", json_kind::string, true, 64}});
  if (!body)
    return;
  auto server_id = (*body)["server_id"].get<std::string>();
  auto claims = broker_->verify(*assertion, server_id, wall_clock_ms());
  if (!claims) {
    write_error(res, claims.error().code(), claims.error().message());
    return;
  }
  res.set_header("Cache-Control", "no-store");
  ask_tenant(res, claims->tenant, broker_atom::value, server_id);
}

void http_api::routes::sign_in_callback(const httplib::Request& req, httplib::Response& res) {
  if (!ctx_.sign_in) {
    write_error(res, errc::conflict,
                "this node cannot sign in to servers: it has no OAuth state secret");
    return;
  }
  // Each query field once, bounded (the provider's answer is small).
  json fields = json::object();
  for (const auto& [name, value] : req.params) {
    if (fields.size() >= 16 || name.size() > 64 || value.size() > 8192 || fields.contains(name)) {
      write_error(res, errc::out_of_range, "callback: at most 16 distinct, bounded query fields");
      return;
    }
    fields[name] = value;
  }
  auto state = fields.value("state", std::string{});
  auto claims = auth::verify_oauth_state(state, ctx_.sign_in->state_secret, wall_clock_ms());
  if (!claims) {
    write_error(res, claims.error().code(), claims.error().message());
    return;
  }
  ask_tenant(res, claims->tenant, callback_atom::value, claims->server, claims->flow,
             fields.dump());
}

void http_api::routes::install(httplib::Server& srv) {
  install_tenant_config(srv);
  install_knowledge(srv);
  install_work(srv);
  auto& ctx = ctx_;
  // -- open ------------------------------------------------------------------
  // The sign-in callback: the provider sends the owner's browser here. No
  // token: the signed state names tenant, server and pending sign-in, and
  // the tenant refuses a state whose sign-in it does not hold.
  srv.Get(
    std::string{server_sign_in::sign_in_callback_path},
    [this](const httplib::Request& req, httplib::Response& res) { sign_in_callback(req, res); });
  // The node's client ID metadata document (used only when it is https).
  srv.Get(std::string{server_sign_in::client_metadata_path},
          [this](const httplib::Request&, httplib::Response& res) {
            if (!ctx_.sign_in || ctx_.sign_in->metadata_document_url.empty()) {
              write_error(res, errc::not_found, "this node has no client metadata document");
              return;
            }
            send_json(res, 200, server_sign_in::client_metadata_document(*ctx_.sign_in));
          });
  srv.Get("/healthz", [&ctx](const httplib::Request&, httplib::Response& res) {
    auto [healthy, err] = ask<bool>(*ctx.sys, ctx.store, health_atom::value);
    if (healthy && *healthy)
      send_json(res, 200, {{"status", "ok"}});
    else
      write_error(res, errc::unavailable, "the event store is unavailable");
  });

  // -- operators -----------------------------------------------------------
  srv.Get("/metrics", admin([&ctx](const httplib::Request&, httplib::Response& res) {
            res.set_content(
              ctx.metrics->prometheus(static_cast<int64_t>(ctx.sys->registry().running())),
              "text/plain; version=0.0.4");
          }));
  srv.Get("/v1/admin/status", admin([&ctx](const httplib::Request&, httplib::Response& res) {
            auto body = ctx.node_info();
            body["metrics"] =
              ctx.metrics->snapshot(static_cast<int64_t>(ctx.sys->registry().running()));
            send_json(res, 200, body);
          }));
  srv.Get("/v1/admin/store/verify", admin([&ctx](const httplib::Request&, httplib::Response& res) {
            auto [report, err] = ask<store_report>(*ctx.sys, ctx.store, verify_atom::value);
            if (!report) {
              send_error(res, err);
              return;
            }
            send_json(res, 200,
                      {{"events", report->events},
                       {"streams", report->streams},
                       {"state_entries", report->state_entries}});
          }));
  // Which vault keys sealed values still need (vault_keeper.hpp); with
  // ?wait=1, answered once the background reseal pass has ended.
  srv.Get(
    "/v1/admin/vault/keys", admin([&ctx](const httplib::Request& req, httplib::Response& res) {
      auto wait = req.get_param_value("wait");
      if (!wait.empty() && wait != "0" && wait != "1") {
        write_error(res, errc::out_of_range, "wait must be 0 or 1");
        return;
      }
      auto [report, err] =
        ask<std::string>(*ctx.sys, ctx.keeper, list_atom::value, vault_atom::value, wait == "1");
      if (!report) {
        send_error(res, err);
        return;
      }
      res.status = 200;
      res.set_content(*report, "application/json");
    }));
  srv.Get("/v1/admin/tenants", admin([this](const httplib::Request&, httplib::Response& res) {
            answer<std::vector<tenant_record>>(res, 200, ctx_.directory, list_atom::value,
                                               tenant_atom::value);
          }));
  srv.Post("/v1/admin/tenants", admin([this](const httplib::Request& req, httplib::Response& res) {
             auto body = read_body(req, res, {{"name", json_kind::string, true, 200}});
             if (!body)
               return;
             answer<tenant_record>(res, 201, ctx_.directory, create_atom::value, tenant_atom::value,
                                   string_field(*body, "name"));
           }));
  srv.Get(R"(/v1/admin/tenants/([a-z0-9_-]{1,64}))",
          admin([this](const httplib::Request& req, httplib::Response& res) {
            answer<tenant_record>(res, 200, ctx_.directory, tenant_atom::value,
                                  std::string{req.matches[1]});
          }));
  // A tenant's MCP servers, for operators: auth mode, needs_auth, signed_in
  // (never a sealed value).
  srv.Get(R"(/v1/admin/tenants/([a-z0-9_-]{1,64})/servers)",
          admin_tenant(
            [this](const httplib::Request&, httplib::Response& res, const tenant_actor& tenant) {
              relay(res, 200, tenant, list_atom::value, server_atom::value);
            }));
  srv.Get(R"(/v1/admin/tenants/([a-z0-9_-]{1,64})/tokens)",
          admin([this](const httplib::Request& req, httplib::Response& res) {
            answer<std::vector<token_record>>(res, 200, ctx_.directory, list_atom::value,
                                              token_atom::value, std::string{req.matches[1]});
          }));
  srv.Post(R"(/v1/admin/tenants/([a-z0-9_-]{1,64})/tokens)",
           admin([this](const httplib::Request& req, httplib::Response& res) {
             auto body = read_body(req, res, {{"label", json_kind::string, false, 200}});
             if (!body)
               return;
             answer<issued_token>(res, 201, ctx_.directory, create_atom::value, token_atom::value,
                                  std::string{req.matches[1]}, string_field(*body, "label"));
           }));
  srv.Delete(R"(/v1/admin/tenants/([a-z0-9_-]{1,64})/tokens/([a-z0-9_-]{1,64}))",
             admin([this](const httplib::Request& req, httplib::Response& res) {
               answer<token_record>(res, 200, ctx_.directory, revoke_atom::value, token_atom::value,
                                    std::string{req.matches[1]}, std::string{req.matches[2]});
             }));

  // -- tenants ----------------------------------------------------------------
  srv.Get("/v1/whoami",
          tenant([](const httplib::Request&, httplib::Response& res, const tenant_identity& who) {
            send_json(res, 200,
                      {{"tenant_id", who.tenant_id},
                       {"tenant_name", who.tenant_name},
                       {"token_id", who.token_id}});
          }));
  srv.Get("/v1/tokens", tenant([this](const httplib::Request&, httplib::Response& res,
                                      const tenant_identity& who) {
            answer<std::vector<token_record>>(res, 200, ctx_.directory, list_atom::value,
                                              token_atom::value, who.tenant_id);
          }));
  srv.Post("/v1/tokens", tenant([this](const httplib::Request& req, httplib::Response& res,
                                       const tenant_identity& who) {
             auto body = read_body(req, res, {{"label", json_kind::string, false, 200}});
             if (!body)
               return;
             answer<issued_token>(res, 201, ctx_.directory, create_atom::value, token_atom::value,
                                  who.tenant_id, string_field(*body, "label"));
           }));
  srv.Delete(
    R"(/v1/tokens/([a-z0-9_-]{1,64}))",
    tenant([this](const httplib::Request& req, httplib::Response& res, const tenant_identity& who) {
      answer<token_record>(res, 200, ctx_.directory, revoke_atom::value, token_atom::value,
                           who.tenant_id, std::string{req.matches[1]});
    }));
}

// Agents, grants, routes, servers, phones, contacts, runs and audit of the
// tenant the token selects.
void http_api::routes::install_tenant_config(httplib::Server& srv) {
  constexpr const char* id = "([a-z0-9_-]{1,64})";
  auto path = [](std::string pattern, const char* part) {
    auto pos = pattern.find("{}");
    return pattern.replace(pos, 2, part);
  };
  using handle = const tenant_actor&;
  srv.Get("/v1/agents",
          tenant_config([this](const httplib::Request&, httplib::Response& res, handle t) {
            relay(res, 200, t, list_atom::value, agent_atom::value);
          }));
  srv.Post("/v1/agents",
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res, {{"name", json_kind::string, true, 200}});
             if (body)
               relay(res, 201, t, create_atom::value, agent_atom::value,
                     string_field(*body, "name"));
           }));
  srv.Get(path("/v1/agents/{}/grants", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            relay(res, 200, t, list_atom::value, grant_atom::value, std::string{req.matches[1]});
          }));
  srv.Put(path("/v1/agents/{}/grants", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res,
                                  {{"server_id", json_kind::string, false, 64},
                                   {"tool", json_kind::string, true, 128},
                                   {"decision", json_kind::string, true, 16}});
            if (body)
              relay(res, 200, t, grant_atom::value, std::string{req.matches[1]},
                    string_field(*body, "server_id"), string_field(*body, "tool"),
                    string_field(*body, "decision"));
          }));
  srv.Put(path("/v1/agents/{}/routes/([a-z0-9_.]{1,64})", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res,
                                  {{"mode", json_kind::string, true, 16},
                                   {"server_id", json_kind::string, false, 64},
                                   {"tool", json_kind::string, false, 128}});
            if (body)
              relay(res, 200, t, route_atom::value, std::string{req.matches[1]},
                    std::string{req.matches[2]}, string_field(*body, "mode"),
                    string_field(*body, "server_id"), string_field(*body, "tool"));
          }));
  srv.Get("/v1/servers",
          tenant_config([this](const httplib::Request&, httplib::Response& res, handle t) {
            relay(res, 200, t, list_atom::value, server_atom::value);
          }));
  srv.Patch(path("/v1/servers/{}", id),
            tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
              auto body = read_body(req, res,
                                    {{"enabled", json_kind::boolean, false},
                                     {"trusted", json_kind::boolean, false},
                                     {"allowed_tools", json_kind::array, false, 1000}});
              if (body)
                relay(res, 200, t, server_atom::value, std::string{req.matches[1]}, body->dump());
            }));
  srv.Post("/v1/servers",
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res,
                                   {{"preset_id", json_kind::string, false, 64},
                                    {"variant", json_kind::string, false, 64},
                                    {"url", json_kind::string, false, 2048},
                                    {"transport", json_kind::string, false, 32},
                                    {"label", json_kind::string, false, 200},
                                    {"headers", json_kind::object, false, 16},
                                    {"auth", json_kind::string, false, 32}});
             if (body)
               relay(res, 201, t, create_atom::value, server_atom::value, body->dump());
           }));
  // Signing in to an OAuth server (server_sign_in.hpp): start (answers the
  // provider URL), and a machine client for the client-credentials modes.
  srv.Post(path("/v1/servers/{}/sign-in", id),
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res,
                                   {{"client_id", json_kind::string, false, 512},
                                    {"client_secret", json_kind::string, false, 4096}});
             if (!body)
               return;
             auto [text, err] = ask_within<std::string>(*ctx_.sys, caf::duration{sign_in_timeout},
                                                        t, sign_in_atom::value, server_atom::value,
                                                        std::string{req.matches[1]}, body->dump());
             if (!text) {
               send_error(res, err);
               return;
             }
             res.status = 200;
             res.set_content(*text, "application/json");
           }));
  srv.Put(path("/v1/servers/{}/client", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res,
                                  {{"client_id", json_kind::string, true, 512},
                                   {"client_secret", json_kind::string, false, 4096},
                                   {"private_key_pem", json_kind::string, false, 16384},
                                   {"signing_alg", json_kind::string, false, 16},
                                   {"token_endpoint_auth_method", json_kind::string, false, 32}});
            if (body)
              relay(res, 200, t, client_atom::value, server_atom::value,
                    std::string{req.matches[1]}, body->dump());
          }));
  // The connection test; after a sign-in, "finalize" is the same step again.
  for (const char* step : {"/v1/servers/{}/test", "/v1/servers/{}/finalize"})
    srv.Post(path(step, id),
             tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
               relay(res, 200, t, connect_atom::value, server_atom::value,
                     std::string{req.matches[1]});
             }));
  srv.Delete(path("/v1/servers/{}", id),
             tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
               relay(res, 200, t, revoke_atom::value, server_atom::value,
                     std::string{req.matches[1]});
             }));
  srv.Put("/v1/phones",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res,
                                  {{"integration_id", json_kind::string, true, 64},
                                   {"provider", json_kind::string, true, 16},
                                   {"call_capable", json_kind::boolean, true},
                                   {"connected", json_kind::boolean, true},
                                   {"place_call_tool", json_kind::string, true, 128}});
            if (body)
              relay(res, 200, t, phone_atom::value, body->dump());
          }));
  srv.Put("/v1/contacts",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res,
                                  {{"contact_id", json_kind::string, true, 64},
                                   {"display_name", json_kind::string, true, 200},
                                   {"phone", json_kind::string, true, 16},
                                   {"is_admin", json_kind::boolean, true},
                                   {"notes", json_kind::string, false, 2000},
                                   {"email", json_kind::string, false, 254}});
            if (body)
              relay(res, 200, t, contact_atom::value, body->dump());
          }));
  // The owner's own lists (notes and emails included: the owner's, never a
  // model's) and their deletions; a malformed id is a 400 naming the segment.
  srv.Get("/v1/phones",
          tenant_config([this](const httplib::Request&, httplib::Response& res, handle t) {
            relay(res, 200, t, list_atom::value, phone_atom::value);
          }));
  srv.Get("/v1/contacts",
          tenant_config([this](const httplib::Request&, httplib::Response& res, handle t) {
            relay(res, 200, t, list_atom::value, contact_atom::value);
          }));
  srv.Delete(R"(/v1/phones/([^/]{1,256}))",
             tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
               std::string integration_id{req.matches[1]};
               if (path_id(integration_id, "phone", res))
                 relay(res, 200, t, revoke_atom::value, phone_atom::value, integration_id);
             }));
  srv.Delete(R"(/v1/contacts/([^/]{1,256}))",
             tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
               std::string contact_id{req.matches[1]};
               if (path_id(contact_id, "contact", res))
                 relay(res, 200, t, revoke_atom::value, contact_atom::value, contact_id);
             }));
  srv.Put("/v1/profiles",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res,
                                  {{"handle", json_kind::string, true, 64},
                                   {"label", json_kind::string, true, 200},
                                   {"primary_origin", json_kind::string, true, 512},
                                   {"agent_ids", json_kind::array, true, 100},
                                   {"server_id", json_kind::string, true, 64},
                                   {"tool", json_kind::string, true, 128}});
            if (body)
              relay(res, 200, t, profile_atom::value, body->dump());
          }));
  srv.Post("/v1/runs",
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res,
                                   {{"agent_id", json_kind::string, true, 64},
                                    {"channel", json_kind::string, true, 32},
                                    {"caller_number", json_kind::string, false, 16},
                                    {"chat_id", json_kind::string, false, 64},
                                    {"location", json_kind::object, false}});
             if (body)
               relay(res, 201, t, create_atom::value, run_atom::value,
                     string_field(*body, "agent_id"), string_field(*body, "channel"),
                     string_field(*body, "caller_number"), string_field(*body, "chat_id"),
                     body->contains("location") ? (*body)["location"].dump() : std::string{});
           }));
  srv.Post(path("/v1/runs/{}/tool-calls", id),
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res, {{"calls", json_kind::array, true, 4096}});
             if (!body)
               return;
             auto calls = tool_calls_of((*body)["calls"]);
             if (!calls) {
               write_error(res, calls.error().code(), calls.error().message());
               return;
             }
             // (a round may take up to round_wait: its worker is held till then)
             auto worker = hold_worker(res, t);
             if (!worker)
               return;
             auto [outputs, err] = ask_within<std::vector<tool_output>>(
               *ctx_.sys, caf::duration{ctx_.round_wait}, t, tool_atom::value,
               std::string{req.matches[1]}, std::move(*calls));
             if (!outputs) {
               send_error(res, err);
               return;
             }
             send_json(res, 200, {{"outputs", to_json(*outputs)}});
           }));
  srv.Post(path("/v1/runs/{}/turns", id),
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res,
                                   {{"user", json_kind::string, false, 64 * 1024},
                                    {"assistant", json_kind::string, false, 64 * 1024}});
             if (body)
               relay(res, 201, t, turn_atom::value, std::string{req.matches[1]},
                     string_field(*body, "user"), string_field(*body, "assistant"));
           }));
  srv.Post(path("/v1/runs/{}/finish", id),
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto [done, err] = ask<bool>(*ctx_.sys, t, close_atom::value, run_atom::value,
                                          std::string{req.matches[1]});
             if (!done) {
               send_error(res, err);
               return;
             }
             send_json(res, 200, {{"finished", *done}});
           }));
  srv.Delete(path("/v1/runs/{}", id),
             tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
               relay(res, 200, t, cancel_atom::value, run_atom::value, std::string{req.matches[1]});
             }));
  srv.Get(path("/v1/runs/{}/events", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            // (httplib hands HEAD to GET routes: a HEAD would open a stream
            // that is never read, and with hold=1 cancel the run as it ends)
            if (req.method == "HEAD") {
              write_error(res, errc::method_not_allowed, "read the activity stream with GET");
              return;
            }
            auto hold = req.get_param_value("hold");
            if (!hold.empty() && hold != "0" && hold != "1") {
              write_error(res, errc::out_of_range, "hold must be 0 or 1");
              return;
            }
            stream_activity(res, t, std::string{req.matches[1]}, hold == "1");
          }));
  srv.Get(path("/v1/runs/{}/health", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            relay(res, 200, t, health_atom::value, run_atom::value, std::string{req.matches[1]});
          }));
  srv.Get(path("/v1/runs/{}", id),
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            relay(res, 200, t, run_atom::value, std::string{req.matches[1]});
          }));
  srv.Post(path("/v1/runs/{}/checks", id),
           tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
             auto body = read_body(req, res,
                                   {{"server_id", json_kind::string, false, 64},
                                    {"tool", json_kind::string, true, 128}});
             if (body)
               relay(res, 200, t, check_atom::value, std::string{req.matches[1]},
                     string_field(*body, "server_id"), string_field(*body, "tool"));
           }));
  // The audit, filtered (agent_id, tool, phase) before the limit counts.
  auto list_audit = [this](const httplib::Request& req, httplib::Response& res, handle t) {
    auto query = tenant_queries::audit_query_of(
      [&req](std::string_view name) { return query_param(req, name); });
    if (!query) {
      write_error(res, query.error().code(), query.error().message());
      return;
    }
    relay(res, 200, t, list_atom::value, audit_atom::value, query->limit,
          tenant_queries::to_text(query->filter));
  };
  srv.Get("/v1/audit", tenant_config(list_audit));
  srv.Get(path("/v1/admin/tenants/{}/audit", id), admin_tenant(list_audit));
  install_tenant_reads(srv);
}

// Read-only views of the tenant's configuration and activity: the preset
// catalog, one server with its tools, the run list, each action route's
// resolution. Path ids are matched loosely and checked here, so a malformed
// one is a 400 naming the segment rather than no route.
void http_api::routes::install_tenant_reads(httplib::Server& srv) {
  using handle = const tenant_actor&;
  srv.Get("/v1/catalog",
          tenant_config([this](const httplib::Request&, httplib::Response& res, handle t) {
            relay(res, 200, t, list_atom::value, create_atom::value, server_atom::value);
          }));
  srv.Get(R"(/v1/servers/([^/]{1,256}))",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            std::string server_id{req.matches[1]};
            if (path_id(server_id, "server", res))
              relay(res, 200, t, list_atom::value, server_atom::value, server_id);
          }));
  srv.Get(R"(/v1/agents/([^/]{1,256})/routes)",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            std::string agent_id{req.matches[1]};
            if (path_id(agent_id, "agent", res))
              relay(res, 200, t, list_atom::value, route_atom::value, agent_id);
          }));
  srv.Get("/v1/runs",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto limit = tenant_queries::run_limit_of(query_param(req, "limit"));
            if (!limit) {
              write_error(res, limit.error().code(), limit.error().message());
              return;
            }
            relay(res, 200, t, list_atom::value, run_atom::value, *limit);
          }));
}

// The owner's review of knowledge candidates, the automatic-saving consent,
// memories and skills (answered by the tenant's tool desk); the operator's
// mirror for voxosctl.
void http_api::routes::install_knowledge(httplib::Server& srv) {
  constexpr const char* id = "([a-z0-9_-]{1,64})";
  auto path = [](std::string pattern, const char* part) {
    for (auto pos = pattern.find("{}"); pos != std::string::npos; pos = pattern.find("{}"))
      pattern.replace(pos, 2, part);
    return pattern;
  };
  auto list_candidates = [this](const httplib::Request& req, httplib::Response& res,
                                const tenant_actor& t) {
    auto query = candidate_query(req);
    if (!query) {
      write_error(res, errc::out_of_range,
                  "status must be pending, decided or all, and limit 1 .. 1000");
      return;
    }
    relay(res, 200, t, knowledge_atom::value, std::string{"candidates.list"}, query->dump());
  };
  auto decide = [this](const char* op, std::size_t group) {
    return [this, op, group](const httplib::Request& req, httplib::Response& res,
                             const tenant_actor& t) {
      relay(res, 200, t, knowledge_atom::value, std::string{op},
            json{{"id", std::string{req.matches[group]}}}.dump());
    };
  };
  srv.Get("/v1/knowledge/candidates", tenant_config(list_candidates));
  srv.Post(path("/v1/knowledge/candidates/{}/confirm", id),
           tenant_config(decide("candidates.confirm", 1)));
  srv.Post(path("/v1/knowledge/candidates/{}/reject", id),
           tenant_config(decide("candidates.reject", 1)));
  srv.Put("/v1/knowledge/consent",
          tenant_config(
            [this](const httplib::Request& req, httplib::Response& res, const tenant_actor& t) {
              auto body = read_body(req, res, {{"automatic_saving", json_kind::boolean, true}});
              if (body)
                relay(res, 200, t, knowledge_atom::value, std::string{"consent.set"}, body->dump());
            }));
  srv.Get(path("/v1/agents/{}/memories", id),
          tenant_config(
            [this](const httplib::Request& req, httplib::Response& res, const tenant_actor& t) {
              relay(res, 200, t, knowledge_atom::value, std::string{"memories.list"},
                    json{{"agent_id", std::string{req.matches[1]}},
                         {"archived", req.get_param_value("archived") == "1"}}
                      .dump());
            }));
  srv.Get("/v1/skills", tenant_config([this](const httplib::Request& req, httplib::Response& res,
                                             const tenant_actor& t) {
            relay(res, 200, t, knowledge_atom::value, std::string{"skills.list"},
                  json{{"archived", req.get_param_value("archived") == "1"}}.dump());
          }));
  srv.Get(path("/v1/admin/tenants/{}/knowledge/candidates", id), admin_tenant(list_candidates));
  // Curated example skills for the tenant's owner (voxosctl skills load):
  // the body is checked strictly by the tenant (example_skills.hpp).
  srv.Post(path("/v1/admin/tenants/{}/skills/examples", id),
           admin_tenant(
             [this](const httplib::Request& req, httplib::Response& res, const tenant_actor& t) {
               if (!json_media(req, res))
                 return;
               relay(res, 200, t, knowledge_atom::value, std::string{"skills.examples"}, req.body);
             }));
  srv.Post(path("/v1/admin/tenants/{}/knowledge/candidates/{}/confirm", id),
           admin_tenant(decide("candidates.confirm", 2)));
  srv.Post(path("/v1/admin/tenants/{}/knowledge/candidates/{}/reject", id),
           admin_tenant(decide("candidates.reject", 2)));
}

// Queued work for agent hosts (lease, begin, heartbeat, complete, fail:
// actors/work/work_queue.hpp), the owner's schedules and subagent model
// allowlist; all answered by the tenant's `(work_atom, op, body)`.
void http_api::routes::install_work(httplib::Server& srv) {
  using handle = const tenant_actor&;
  auto path = [](std::string pattern) {
    for (auto pos = pattern.find("{}"); pos != std::string::npos; pos = pattern.find("{}"))
      pattern.replace(pos, 2, "([a-z0-9_-]{1,64})");
    return pattern;
  };
  // An item's operation: the checked body, with the item id of the path.
  auto relay_item = [this](const httplib::Request& req, httplib::Response& res, handle t,
                           const char* name, std::optional<json> body) {
    if (!body)
      return;
    (*body)["item_id"] = std::string{req.matches[1]};
    relay(res, 200, t, work_atom::value, std::string{name}, body->dump());
  };
  // A long poll: the request holds its worker while it waits.
  srv.Post(
    "/v1/work/lease",
    tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
      auto body = read_body(
        req, res, {{"wait_ms", json_kind::integer, false}, {"kinds", json_kind::array, false, 8}});
      if (!body)
        return;
      auto worker = hold_worker(res, t);
      if (!worker)
        return;
      auto wait = std::chrono::milliseconds{body->value("wait_ms", int64_t{0}) + 5'000};
      auto [text, err] = ask_within<std::string>(
        *ctx_.sys, caf::duration{wait}, t, work_atom::value, std::string{"lease"}, body->dump());
      if (!text) {
        send_error(res, err);
        return;
      }
      res.status = 200;
      res.set_content(*text, "application/json");
    }));
  srv.Post(
    path("/v1/work/items/{}/begin"),
    tenant_config([relay_item](const httplib::Request& req, httplib::Response& res, handle t) {
      relay_item(req, res, t, "begin",
                 read_body(req, res, {{"lease_id", json_kind::string, true, 64}}));
    }));
  srv.Post(
    path("/v1/work/items/{}/heartbeat"),
    tenant_config([relay_item](const httplib::Request& req, httplib::Response& res, handle t) {
      relay_item(req, res, t, "heartbeat",
                 read_body(req, res, {{"lease_id", json_kind::string, true, 64}}));
    }));
  srv.Post(
    path("/v1/work/items/{}/complete"),
    tenant_config([relay_item](const httplib::Request& req, httplib::Response& res, handle t) {
      relay_item(req, res, t, "complete",
                 read_body(req, res,
                           {{"lease_id", json_kind::string, true, 64},
                            {"answer", json_kind::string, true, 64 * 1024}}));
    }));
  srv.Post(
    path("/v1/work/items/{}/fail"),
    tenant_config([relay_item](const httplib::Request& req, httplib::Response& res, handle t) {
      relay_item(req, res, t, "fail",
                 read_body(req, res,
                           {{"lease_id", json_kind::string, true, 64},
                            {"reason", json_kind::string, true, 1024},
                            {"retry", json_kind::boolean, false}}));
    }));
  // An operation whose body is only the id in the path's group `group`
  // (none when 0).
  auto by_path = [this](const char* name, std::size_t group) {
    return [this, name, group](const httplib::Request& req, httplib::Response& res,
                               const tenant_actor& t) {
      json body = json::object();
      if (group != 0)
        body["schedule_id"] = std::string{req.matches[group]};
      relay(res, 200, t, work_atom::value, std::string{name}, body.dump());
    };
  };
  srv.Get("/v1/work/items", tenant_config(by_path("list", 0)));
  // The owner's schedules, and the operator's mirror for voxosctl.
  srv.Get("/v1/schedules", tenant_config(by_path("schedules.list", 0)));
  srv.Post(path("/v1/schedules/{}/pause"), tenant_config(by_path("schedules.pause", 1)));
  srv.Post(path("/v1/schedules/{}/resume"), tenant_config(by_path("schedules.resume", 1)));
  srv.Delete(path("/v1/schedules/{}"), tenant_config(by_path("schedules.delete", 1)));
  srv.Get(path("/v1/admin/tenants/{}/schedules"), admin_tenant(by_path("schedules.list", 0)));
  srv.Post(path("/v1/admin/tenants/{}/schedules/{}/pause"),
           admin_tenant(by_path("schedules.pause", 2)));
  srv.Post(path("/v1/admin/tenants/{}/schedules/{}/resume"),
           admin_tenant(by_path("schedules.resume", 2)));
  srv.Delete(path("/v1/admin/tenants/{}/schedules/{}"),
             admin_tenant(by_path("schedules.delete", 2)));
  // The owner's provider-specific subagent model allowlist.
  srv.Get("/v1/subagent-models", tenant_config(by_path("subagent_models.get", 0)));
  srv.Put("/v1/subagent-models",
          tenant_config([this](const httplib::Request& req, httplib::Response& res, handle t) {
            auto body = read_body(req, res, {{"providers", json_kind::object, true}});
            if (body)
              relay(res, 200, t, work_atom::value, std::string{"subagent_models.set"},
                    body->dump());
          }));
}

http_api::http_api(http_api_context ctx) : routes_(std::make_unique<routes>(std::move(ctx))) {}

http_api::~http_api() = default;

void http_api::install_broker(http_server& server) {
  auto* api = routes_.get();
  server.routes().Post(
    "/v1/broker/token",
    [api](const httplib::Request& req, httplib::Response& res) { api->broker_token(req, res); });
}

void http_api::stop_streams() {
  routes_->node_mcp().stop();
}

void http_api::install(http_server& server) {
  auto& srv = server.routes();
  routes_->install(srv);
  routes_->node_mcp().mount(srv);
  install_console(srv, routes_->console());
  srv.set_logger(
    [metrics = routes_->metrics()](const httplib::Request&, const httplib::Response& res) {
      metrics->http_requests.fetch_add(1, std::memory_order_relaxed);
      if (res.status >= 400)
        metrics->http_errors.fetch_add(1, std::memory_order_relaxed);
    });
}

std::chrono::milliseconds round_wait_of(const run_config& run) {
  return std::chrono::milliseconds{uint64_t{run.max_calls} * run.call_timeout_ms + 60'000};
}

} // namespace voxos
