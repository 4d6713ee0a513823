// The MCP HTTP wire layer against a scripted peer. The in-process server is a
// stand-in used only for wire-level edge cases the real peers (the MCP SDK
// servers of the integration tests) cannot be made to produce on demand:
// early closes, resumption, garbage, odd statuses and content types,
// endless keepalives.
#include "transport/mcp_http.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <httplib.h>

#include "support/loopback_http.hpp"

using std::chrono::milliseconds;
using voxos::errc;
using voxos::http_client;
using voxos::is_argument_rejection;
using voxos::jsonrpc_error_status;
using voxos::jsonrpc_id;
using voxos::jsonrpc_message;
using voxos::mcp_exchange_limits;
using voxos::mcp_http_headers;
using voxos::mcp_http_status_error;
using voxos::status;
using voxos::test::loopback_client;
using voxos::test::loopback_server;
using voxos::test::reply_events;
using steady = std::chrono::steady_clock;

namespace {

const std::string request_1 = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})";
const std::string answer_1 = R"({"jsonrpc":"2.0","id":1,"result":{"ok":true}})";
const std::string answer_7 = R"({"jsonrpc":"2.0","id":7,"result":{}})";
const std::string progress =
  R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})";
const std::string sampling =
  R"({"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}})";
const jsonrpc_id id_1{int64_t{1}};

/// One SSE event carrying `data` (and an `id` field when `id` is given).
std::string event(const std::string& data, const std::string& id = {}) {
  return (id.empty() ? "" : "id: " + id + "\n") + "data: " + data + "\n\n";
}

std::string text_of(const jsonrpc_id& id) {
  if (const auto* number = std::get_if<int64_t>(&id)) {
    return std::to_string(*number);
  }
  return '"' + std::get<std::string>(id) + '"';
}

/// "response 7", "error 1", "request sampling/createMessage", "notification ...".
std::string describe(const jsonrpc_message& message) {
  if (const auto* response = std::get_if<voxos::jsonrpc_response>(&message)) {
    return "response " + text_of(response->id);
  }
  if (const auto* failure = std::get_if<voxos::jsonrpc_error_response>(&message)) {
    return "error " + (failure->id ? text_of(*failure->id) : "null");
  }
  if (const auto* request = std::get_if<voxos::jsonrpc_request>(&message)) {
    return "request " + request->method;
  }
  return "notification " + std::get<voxos::jsonrpc_notification>(message).method;
}

/// The messages a sink received, described, in order.
struct recorded {
  std::vector<std::string> seen;
  voxos::mcp_message_sink sink() {
    return [this](jsonrpc_message&& message) { seen.push_back(describe(message)); };
  }
};

/// Request headers a route saw, for the test thread to read afterwards.
struct seen_headers {
  std::mutex mutex;
  std::vector<httplib::Headers> requests;

  void record(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mutex);
    requests.push_back(req.headers);
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return requests.size();
  }
  /// The value of `name` in request `index`, "" when absent; "<n values>"
  /// when it was sent more than once.
  std::string value(std::size_t index, const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex);
    REQUIRE(index < requests.size());
    const auto& headers = requests[index];
    const auto found = headers.count(name);
    if (found > 1) {
      return "<" + std::to_string(found) + " values>";
    }
    auto hit = headers.find(name);
    return hit == headers.end() ? std::string{} : hit->second;
  }
};

/// An endless stream of keepalive comments, one every 20 ms, after `first`
/// (if any); `streaming` is set once the first chunk is written.
void reply_keepalives(loopback_server& server, httplib::Response& res,
                      std::shared_ptr<std::promise<void>> streaming, std::string first = {}) {
  auto signalled = std::make_shared<std::atomic<bool>>(false);
  res.set_chunked_content_provider(
    "text/event-stream", [&server, streaming = std::move(streaming), signalled,
                          first = std::move(first)](size_t, httplib::DataSink& sink) {
      if (server.stopping.load()) {
        return false;
      }
      if (!signalled->exchange(true)) {
        if (!first.empty() && !sink.write(first.data(), first.size())) {
          return false;
        }
        streaming->set_value();
      } else {
        std::this_thread::sleep_for(milliseconds(20));
      }
      return sink.write(": keepalive\n\n", 13);
    });
}

mcp_http_headers session(const std::string& session_id) {
  mcp_http_headers headers;
  headers.session_id = session_id;
  return headers;
}

/// Fast resumption for tests that are not about its timing.
mcp_exchange_limits quick_limits() {
  mcp_exchange_limits limits;
  limits.default_retry = milliseconds(1);
  return limits;
}

milliseconds since(steady::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady::now() - start);
}

bool mentions(const voxos::status& failure, const std::string& text) {
  return failure.message().find(text) != std::string::npos;
}

} // namespace

TEST_CASE("a json answer is returned with the status and session id") {
  loopback_server server;
  seen_headers seen;
  std::string seen_body;
  server.svr.Post("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    seen.record(req);
    seen_body = req.body;
    res.set_header("Mcp-Session-Id", "session-2");
    res.set_content(answer_1, "Application/JSON; charset=utf-8");
  });
  server.start();

  auto client = loopback_client(server.port);
  mcp_http_headers headers = session("session-1");
  headers.protocol_version = "2025-06-18";
  headers.extra = {{"X-Api-Key", "secret-value"}, {"accept", "text/html"}};
  recorded messages;
  auto out =
    voxos::streamable_request(*client, "/mcp", headers, request_1, id_1, messages.sink(), {});
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(out->http_status == 200);
  CHECK(out->session_id == "session-2");
  CHECK(out->response_complete);
  CHECK(out->resumptions == 0);
  REQUIRE(std::holds_alternative<voxos::jsonrpc_response>(out->answer));
  CHECK(std::get<voxos::jsonrpc_response>(out->answer).result == R"({"ok":true})");
  CHECK(messages.seen.empty());

  // The transport's headers, the session's, and the extra ones; an extra
  // header naming a transport header is not sent.
  CHECK(seen_body == request_1);
  CHECK(seen.value(0, "Accept") == "application/json, text/event-stream");
  CHECK(seen.value(0, "Content-Type") == "application/json");
  CHECK(seen.value(0, "Mcp-Session-Id") == "session-1");
  CHECK(seen.value(0, "MCP-Protocol-Version") == "2025-06-18");
  CHECK(seen.value(0, "X-Api-Key") == "secret-value");
}

TEST_CASE("an event stream delivers other messages to the sink in order, then the answer") {
  loopback_server server;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {event(progress), event(sampling), event(answer_7), event(answer_1)});
  });
  server.start();

  auto client = loopback_client(server.port);
  recorded messages;
  auto out =
    voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, messages.sink(), {});
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(describe(out->answer) == "response 1");
  // An answer carrying another id is just another message on a stream.
  CHECK(messages.seen
        == std::vector<std::string>{"notification notifications/progress",
                                    "request sampling/createMessage", "response 7"});
}

TEST_CASE("multi-line data, comments and a priming event are read as the server meant them") {
  loopback_server server;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {
                        ": keepalive\n\n",
                        "id: p0\ndata:\n\n", // priming: an id, empty data
                        "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\n: note\r\n",
                        "data: \"method\":\"notifications/message\"}\r\n\r\n",
                        "data: {\"jsonrpc\":\"2.0\",\"id\":1,",
                        "\"result\":{}}\n\n",
                      });
  });
  server.start();

  auto client = loopback_client(server.port);
  recorded messages;
  auto out =
    voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, messages.sink(), {});
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(describe(out->answer) == "response 1");
  CHECK(messages.seen == std::vector<std::string>{"notification notifications/message"});
}

TEST_CASE("a stream that ends early is resumed with Last-Event-ID after the server's retry") {
  loopback_server server;
  seen_headers gets;
  std::atomic<uint32_t> retry_ms{50};
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.set_header("Mcp-Session-Id", "s");
    reply_events(res, {"id: e0\nretry: " + std::to_string(retry_ms.load()) + "\ndata:\n\n",
                       event(progress, "e1")});
  });
  server.svr.Get("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    gets.record(req);
    reply_events(res, {event(answer_1, "e2")});
  });
  server.start();

  auto client = loopback_client(server.port);
  mcp_exchange_limits limits;
  limits.default_retry = milliseconds(30'000);
  limits.max_retry = milliseconds(30'000);
  SUBCASE("the server's retry is waited") {}
  SUBCASE("a retry above max_retry is cut to it") {
    retry_ms = 600'000;
    limits.max_retry = milliseconds(50);
  }
  recorded messages;
  const auto start = steady::now();
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1,
                                       messages.sink(), limits);
  const auto elapsed = since(start);
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(describe(out->answer) == "response 1");
  CHECK(out->resumptions == 1);
  CHECK(out->http_status == 200); // of the POST, which completed
  CHECK(out->session_id == "s");
  CHECK(messages.seen == std::vector<std::string>{"notification notifications/progress"});
  REQUIRE(gets.count() == 1);
  CHECK(gets.value(0, "Last-Event-ID") == "e1");
  CHECK(gets.value(0, "Accept") == "text/event-stream");
  CHECK(gets.value(0, "Mcp-Session-Id") == "s");
  // Bounds, not timing goals: the wait happened, and it was not the default.
  CHECK(elapsed >= milliseconds(50));
  CHECK(elapsed < milliseconds(10'000));
}

TEST_CASE("a broken connection after an event id is resumed") {
  loopback_server server;
  seen_headers gets;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {event(progress, "e1")}, /*abort=*/true);
  });
  server.svr.Get("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    gets.record(req);
    reply_events(res, {event(answer_1)});
  });
  server.start();

  auto client = loopback_client(server.port);
  recorded messages;
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1,
                                       messages.sink(), quick_limits());
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(out->resumptions == 1);
  REQUIRE(gets.count() == 1);
  CHECK(gets.value(0, "Last-Event-ID") == "e1");
}

TEST_CASE("resumption stops after max_resumptions") {
  loopback_server server;
  std::atomic<int> gets{0};
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {"id: p\ndata:\n\n"});
  });
  server.svr.Get("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    ++gets;
    reply_events(res, {"id: g" + std::to_string(gets.load()) + "\ndata:\n\n"});
  });
  server.start();

  auto client = loopback_client(server.port);
  mcp_exchange_limits limits = quick_limits();
  limits.max_resumptions = 2;
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, {}, limits);
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().code() == errc::unavailable);
  CHECK(out.error().message() == "stream ended before the answer");
  CHECK(gets.load() == 2);
}

TEST_CASE("a stream that ends without an event id is not resumed") {
  loopback_server server;
  std::atomic<int> gets{0};
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {event(progress)});
  });
  server.svr.Get("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    ++gets;
    res.status = 405;
  });
  server.start();

  auto client = loopback_client(server.port);
  recorded messages;
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1,
                                       messages.sink(), quick_limits());
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().message() == "stream ended before the answer");
  CHECK(gets.load() == 0);
  CHECK(messages.seen.size() == 1);
}

TEST_CASE("a message that is not JSON-RPC fails the exchange with bad_json") {
  loopback_server server;
  server.svr.Post("/events", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {event("{garbage-text"), event(answer_1)});
  });
  server.svr.Post("/json", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{garbage-text", "application/json");
  });
  server.start();

  auto client = loopback_client(server.port);
  for (const std::string path : {"/events", "/json"}) {
    CAPTURE(path);
    recorded messages;
    auto out =
      voxos::streamable_request(*client, path, session("s"), request_1, id_1, messages.sink(), {});
    REQUIRE_FALSE(out.is_ok());
    CHECK(out.error().code() == errc::bad_json);
    CHECK_FALSE(mentions(out.error(), "garbage-text"));
    CHECK(messages.seen.empty());
  }
}

TEST_CASE("a json body that is not the answer is bad_json") {
  loopback_server server;
  std::string reply;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(reply, "application/json");
  });
  server.start();

  auto client = loopback_client(server.port);
  SUBCASE("another id") {
    reply = answer_7;
  }
  SUBCASE("the same number as a string") {
    reply = R"({"jsonrpc":"2.0","id":"1","result":{}})";
  }
  SUBCASE("a notification") {
    reply = progress;
  }
  recorded messages;
  auto out =
    voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, messages.sink(), {});
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().code() == errc::bad_json);
  CHECK(messages.seen.empty());
  if (reply != progress) {
    CHECK(out.error().message() == "answer carries an id that was not asked");
  }
}

TEST_CASE("an error response without an id in place of the answer is the server's error") {
  loopback_server server;
  const std::string unaddressed =
    R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"secret-detail"}})";
  server.svr.Post("/json", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(unaddressed, "application/json");
  });
  server.svr.Post("/events", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {event(unaddressed)});
  });
  server.start();

  auto client = loopback_client(server.port);
  for (const std::string path : {"/json", "/events"}) {
    CAPTURE(path);
    auto out = voxos::streamable_request(*client, path, session("s"), request_1, id_1, {}, {});
    REQUIRE_FALSE(out.is_ok());
    CHECK(out.error().code() == errc::server_error);
    CHECK(mentions(out.error(), "-32700"));
    CHECK_FALSE(mentions(out.error(), "secret-detail"));
  }
}

TEST_CASE("argument rejections are the 400 and 422 answers and JSON-RPC invalid params only") {
  for (int http_status : {400, 422})
    CHECK(is_argument_rejection(mcp_http_status_error(http_status, {}, "")));
  for (int http_status : {401, 403, 404, 405, 413, 500, 503})
    CHECK_FALSE(is_argument_rejection(mcp_http_status_error(http_status, {}, "")));
  CHECK(is_argument_rejection(
    mcp_http_status_error(400, {}, R"({"jsonrpc":"2.0","id":1,"error":{"code":-32600}})")));
  CHECK(is_argument_rejection(jsonrpc_error_status(-32602)));
  for (int64_t code : {-32601, -32603, -32000, 32602})
    CHECK_FALSE(is_argument_rejection(jsonrpc_error_status(code)));
  CHECK_FALSE(is_argument_rejection(status::error(errc::unavailable, "server error -32602")));
  // In a session, a 400 is a rejection only when it says invalid params.
  CHECK(is_argument_rejection(mcp_http_status_error(
    400, session("s"), R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}})")));
  CHECK_FALSE(is_argument_rejection(mcp_http_status_error(
    400, session("s"), R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"m"}})")));
}

TEST_CASE("a 400 to a request in a session is a lost session unless it says invalid params") {
  // What server-everything and the SDK's examples answer for a session they
  // do not know (after a restart), with the request's id or none.
  const std::string bodies[] = {
    R"({"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":7})",
    R"({"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null})",
    "", "Bad Request"};
  for (const auto& body : bodies) {
    CAPTURE(body);
    auto lost = mcp_http_status_error(400, session("session-secret"), body);
    CHECK(lost.code() == errc::not_found);
    CHECK(lost.message().rfind("session not recognised: server answered HTTP 400", 0) == 0);
    CHECK_FALSE(mentions(lost, "session-secret"));
    CHECK_FALSE(mentions(lost, "No valid session"));
  }
  auto refused = mcp_http_status_error(
    400, session("s"), R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}})");
  CHECK(refused.code() == errc::rejected);
  // Without a session, a 400 refuses the request (and, to initialize, is the
  // legacy fallback's signal).
  CHECK(mcp_http_status_error(400, {}, R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000}})").code()
        == errc::rejected);
}

TEST_CASE("a lost-session 400 to a request sent again in a new session is an argument rejection") {
  auto lost = mcp_http_status_error(400, session("s"), R"({"detail":"bad request"})");
  REQUIRE(lost.code() == errc::not_found);
  auto refused = voxos::refused_in_new_session(lost);
  CHECK(refused.code() == errc::rejected);
  CHECK(refused.message() == "server refused the request: server answered HTTP 400");
  CHECK(voxos::is_argument_rejection(refused));
  // Anything else is left as it is: an expired session (404), a timeout.
  auto expired = mcp_http_status_error(404, session("s"), "");
  CHECK(voxos::refused_in_new_session(expired).message() == expired.message());
  CHECK(voxos::refused_in_new_session(expired).code() == expired.code());
  auto late = voxos::status::error(errc::unavailable, "deadline exceeded");
  CHECK(voxos::refused_in_new_session(late).code() == errc::unavailable);
}

TEST_CASE("a JSON-RPC error is the server's error, named by JSON-RPC's name for its code") {
  auto internal = jsonrpc_error_status(-32603);
  CHECK(internal.code() == errc::server_error);
  CHECK(internal.message() == "server error -32603 (internal error)");
  CHECK(jsonrpc_error_status(-32601).message() == "server error -32601 (method not found)");
  CHECK(jsonrpc_error_status(-32000).message() == "server error -32000");
}

TEST_CASE("HTTP statuses map to error codes that name the status only") {
  loopback_server server;
  std::atomic<int> status_to_send{500};
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.status = status_to_send.load();
    res.set_content(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"body-secret"}})",
                    "application/json");
  });
  server.start();

  struct expectation {
    int http_status;
    bool with_session;
    errc code;
  };
  const expectation table[] = {
    {404, true, errc::not_found},
    {404, false, errc::not_found},
    {405, false, errc::method_not_allowed},
    {400, true, errc::rejected},
    {422, true, errc::rejected},
    {401, true, errc::unauthorized},
    {403, true, errc::forbidden},
    {413, true, errc::body_too_large},
    {500, true, errc::unavailable},
    {503, true, errc::unavailable},
  };
  auto client = loopback_client(server.port);
  for (const auto& row : table) {
    CAPTURE(row.http_status);
    CAPTURE(row.with_session);
    status_to_send = row.http_status;
    mcp_http_headers headers = session(row.with_session ? "session-secret" : "");
    headers.extra = {{"Authorization", "Bearer header-secret"}};
    auto out = voxos::streamable_request(*client, "/mcp", headers, request_1, id_1, {}, {});
    REQUIRE_FALSE(out.is_ok());
    CHECK(out.error().code() == row.code);
    CHECK(mentions(out.error(), "HTTP " + std::to_string(row.http_status)));
    CHECK(mentions(out.error(), "JSON-RPC error -32602"));
    for (const std::string secret : {"body-secret", "session-secret", "header-secret", "/mcp"}) {
      CHECK_FALSE(mentions(out.error(), secret));
    }
  }
  status_to_send = 500;
  auto out = voxos::streamable_request(*client, "/mcp", {}, request_1, id_1, {}, {});
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().message() == "server answered HTTP 500 with JSON-RPC error -32602");
}

TEST_CASE("a request answered 202 or with another content type is an error") {
  loopback_server server;
  server.svr.Post("/accepted",
                  [&](const httplib::Request&, httplib::Response& res) { res.status = 202; });
  server.svr.Post("/text", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello", "text/plain");
  });
  server.start();

  auto client = loopback_client(server.port);
  auto accepted = voxos::streamable_request(*client, "/accepted", {}, request_1, id_1, {}, {});
  REQUIRE_FALSE(accepted.is_ok());
  CHECK(accepted.error().code() == errc::unavailable);
  CHECK(accepted.error().message() == "server accepted a request without answering it");

  auto text = voxos::streamable_request(*client, "/text", {}, request_1, id_1, {}, {});
  REQUIRE_FALSE(text.is_ok());
  CHECK(text.error().code() == errc::unavailable);
  CHECK(text.error().message() == "unexpected content type");
}

TEST_CASE("a redirect stays refused") {
  loopback_server server;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.status = 307;
    res.set_header("Location", "/elsewhere");
  });
  server.start();

  auto client = loopback_client(server.port);
  auto out = voxos::streamable_request(*client, "/mcp", {}, request_1, id_1, {}, {});
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().code() == errc::forbidden);
  CHECK(out.error().message() == "redirects are refused");
}

TEST_CASE("without a session the stream is read to its end for the session id") {
  loopback_server server;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.set_header("Mcp-Session-Id", "new-session");
    reply_events(res, {event(answer_1), event(progress)});
  });
  server.start();

  auto client = loopback_client(server.port);
  recorded messages;
  auto out = voxos::streamable_request(*client, "/mcp", {}, request_1, id_1, messages.sink(), {});
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(out->response_complete);
  CHECK(out->session_id == "new-session");
  CHECK(describe(out->answer) == "response 1");
  CHECK(messages.seen == std::vector<std::string>{"notification notifications/progress"});
}

TEST_CASE("with a session the answer ends the exchange while the stream stays open") {
  loopback_server server;
  auto streaming = std::make_shared<std::promise<void>>();
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_keepalives(server, res, streaming, event(answer_1));
  });
  server.start();

  http_client::options opts;
  opts.total_deadline = milliseconds(30'000);
  auto client = loopback_client(server.port, opts);
  const auto start = steady::now();
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, {}, {});
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(describe(out->answer) == "response 1");
  CHECK_FALSE(out->response_complete);
  CHECK(out->http_status == 200);
  CHECK(since(start) < milliseconds(10'000));
  CHECK_FALSE(client->cancelled()); // the stop was ours, the client is still usable
}

TEST_CASE("a server's session id outside visible ASCII is refused") {
  loopback_server server;
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    res.set_header("Mcp-Session-Id", "bad id");
    res.set_content(answer_1, "application/json");
  });
  server.start();

  auto client = loopback_client(server.port);
  auto out = voxos::streamable_request(*client, "/mcp", {}, request_1, id_1, {}, {});
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().code() == errc::out_of_range);
}

TEST_CASE("cancel from another thread ends an endless keepalive stream promptly") {
  loopback_server server;
  auto streaming = std::make_shared<std::promise<void>>();
  auto started = streaming->get_future();
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_keepalives(server, res, streaming);
  });
  server.start();

  http_client::options opts;
  opts.total_deadline = milliseconds(30'000);
  auto client = loopback_client(server.port, opts);
  steady::time_point cancelled_at;
  std::thread canceller([&] {
    started.wait();
    cancelled_at = steady::now();
    client->cancel();
  });
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, {}, {});
  const auto returned_at = steady::now();
  canceller.join();
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().code() == errc::unavailable);
  CHECK(out.error().message() == "cancelled");
  CHECK(returned_at - cancelled_at < milliseconds(2'000));
}

TEST_CASE("cancel during the wait before resuming ends it promptly") {
  loopback_server server;
  std::promise<void> posted;
  auto done = posted.get_future();
  server.svr.Post("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {"id: e1\nretry: 60000\ndata:\n\n"});
    posted.set_value();
  });
  server.start();

  auto client = loopback_client(server.port);
  std::thread canceller([&] {
    done.wait();
    client->cancel();
  });
  const auto start = steady::now();
  auto out = voxos::streamable_request(*client, "/mcp", session("s"), request_1, id_1, {}, {});
  canceller.join();
  REQUIRE_FALSE(out.is_ok());
  CHECK(out.error().message() == "cancelled");
  CHECK(since(start) < milliseconds(10'000));
}

TEST_CASE("a send is accepted with 202, or an empty 200 or 204, and refused otherwise") {
  loopback_server server;
  seen_headers seen;
  server.svr.Post("/accepted", [&](const httplib::Request& req, httplib::Response& res) {
    seen.record(req);
    res.status = 202;
    res.set_content("Accepted", "text/plain");
  });
  server.svr.Post("/ok-empty",
                  [&](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  server.svr.Post("/no-content",
                  [&](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  server.svr.Post("/ok-object", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("{}", "application/json");
  });
  server.svr.Post("/ok-message", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(sampling, "application/json");
  });
  server.svr.Post("/ok-events", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {event(sampling)});
  });
  server.svr.Post("/bad",
                  [&](const httplib::Request&, httplib::Response& res) { res.status = 400; });
  server.start();

  auto client = loopback_client(server.port);
  const mcp_http_headers headers = session("s");
  const std::string notification = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
  for (const std::string path : {"/accepted", "/ok-empty", "/no-content", "/ok-object"}) {
    CAPTURE(path);
    auto sent = voxos::streamable_send(*client, path, headers, notification);
    CHECK_MESSAGE(sent.is_ok(), sent.message());
  }
  CHECK(seen.value(0, "Mcp-Session-Id") == "s");
  CHECK(seen.value(0, "Accept") == "application/json, text/event-stream");
  for (const std::string path : {"/ok-message", "/ok-events"}) {
    CAPTURE(path);
    auto sent = voxos::streamable_send(*client, path, headers, notification);
    REQUIRE_FALSE(sent.is_ok());
    CHECK(sent.code() == errc::unavailable);
  }
  auto bad = voxos::streamable_send(*client, "/bad", headers, notification);
  REQUIRE_FALSE(bad.is_ok());
  CHECK(bad.code() == errc::not_found); // a 400 in a session: the session is lost
}

TEST_CASE("closing a session sends DELETE and counts 404 and 405 as done") {
  loopback_server server;
  seen_headers seen;
  std::atomic<int> status_to_send{204};
  server.svr.Delete("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    seen.record(req);
    res.status = status_to_send.load();
  });
  server.start();

  auto client = loopback_client(server.port);
  for (const int http_status : {200, 204, 404, 405}) {
    CAPTURE(http_status);
    status_to_send = http_status;
    auto closed = voxos::streamable_close_session(*client, "/mcp", session("s"));
    CHECK_MESSAGE(closed.is_ok(), closed.message());
  }
  CHECK(seen.value(0, "Mcp-Session-Id") == "s");
  status_to_send = 500;
  auto failed = voxos::streamable_close_session(*client, "/mcp", session("s"));
  REQUIRE_FALSE(failed.is_ok());
  CHECK(failed.code() == errc::unavailable);

  // Without a session there is nothing to end, and no request.
  const auto before = seen.count();
  CHECK(voxos::streamable_close_session(*client, "/mcp", {}).is_ok());
  CHECK(seen.count() == before);
}

TEST_CASE("listen reports a server without the GET stream") {
  loopback_server server;
  server.svr.Get("/mcp",
                 [&](const httplib::Request&, httplib::Response& res) { res.status = 405; });
  server.start();

  auto client = loopback_client(server.port);
  auto out = voxos::streamable_listen(*client, "/mcp", session("s"), {}, quick_limits());
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK_FALSE(out->supported);
  CHECK(out->resumptions == 0);
}

TEST_CASE("listen delivers every message and resumes with Last-Event-ID") {
  loopback_server server;
  seen_headers gets;
  server.svr.Get("/mcp", [&](const httplib::Request& req, httplib::Response& res) {
    gets.record(req);
    if (gets.count() == 1) {
      reply_events(res, {event(progress, "g1")});
    } else {
      // An empty id field clears the last event id: the stream then ends.
      reply_events(res, {"id:\ndata: " + sampling + "\n\n"});
    }
  });
  server.start();

  auto client = loopback_client(server.port);
  recorded messages;
  auto out =
    voxos::streamable_listen(*client, "/mcp", session("s"), messages.sink(), quick_limits());
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(out->supported);
  CHECK(out->resumptions == 1);
  CHECK(messages.seen
        == std::vector<std::string>{"notification notifications/progress",
                                    "request sampling/createMessage"});
  REQUIRE(gets.count() == 2);
  CHECK(gets.value(0, "Last-Event-ID").empty());
  CHECK(gets.value(0, "Accept") == "text/event-stream");
  CHECK(gets.value(0, "Mcp-Session-Id") == "s");
  CHECK(gets.value(1, "Last-Event-ID") == "g1");
}

TEST_CASE("listen stops after max_resumptions quiet reconnects in a row") {
  loopback_server server;
  std::atomic<int> gets{0};
  server.svr.Get("/mcp", [&](const httplib::Request&, httplib::Response& res) {
    ++gets;
    reply_events(res, {"id: quiet\n\n"});
  });
  server.start();

  auto client = loopback_client(server.port);
  mcp_exchange_limits limits = quick_limits();
  limits.max_resumptions = 3;
  auto out = voxos::streamable_listen(*client, "/mcp", session("s"), {}, limits);
  REQUIRE_MESSAGE(out.is_ok(), out.error().message());
  CHECK(out->resumptions == 3);
  CHECK(gets.load() == 4);
}

TEST_CASE("a legacy endpoint reference resolves against the server URL, same origin only") {
  auto base = voxos::parse_url("http://127.0.0.1:8000/mcp/sse?key=1");
  REQUIRE(base.is_ok());
  const auto resolve = [&](std::string_view reference) {
    return voxos::resolve_legacy_endpoint(*base, reference);
  };
  // The path, or the error's name.
  const auto path_of = [&](std::string_view reference) {
    auto resolved = resolve(reference);
    return resolved.is_ok() ? resolved.value()
                            : std::string(voxos::to_string(resolved.error().code()));
  };
  CHECK(path_of("/message?sessionId=abc") == "/message?sessionId=abc");
  CHECK(path_of("http://127.0.0.1:8000/messages/?session_id=1") == "/messages/?session_id=1");
  CHECK(path_of("HTTP://127.0.0.1:8000/m") == "/m");
  CHECK(path_of("//127.0.0.1:8000/m") == "/m");
  CHECK(path_of("?sessionId=2") == "/mcp/sse?sessionId=2");
  CHECK(path_of("messages?sessionId=3") == "/mcp/messages?sessionId=3");

  for (const std::string_view other :
       {"http://127.0.0.1:8001/m", "https://127.0.0.1:8000/m", "http://127.0.0.2:8000/m",
        "//evil.example/m", "http://evil.example:8000/m"}) {
    CAPTURE(other);
    auto refused = resolve(other);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().code() == errc::forbidden);
    CHECK(refused.error().message() == "endpoint on another origin");
  }
  for (const std::string_view bad : {"", "/a/../m", "javascript:alert(1)", "/m#frag", "/has space",
                                     "http://u:p@127.0.0.1:8000/m"}) {
    CAPTURE(bad);
    auto refused = resolve(bad);
    REQUIRE_FALSE(refused.is_ok());
    CHECK(refused.error().code() == errc::out_of_range);
  }
}

TEST_CASE("a legacy stream gives the endpoint once and delivers message events") {
  loopback_server server;
  seen_headers seen;
  std::string endpoint_event;
  server.svr.Get("/sse", [&](const httplib::Request& req, httplib::Response& res) {
    seen.record(req);
    reply_events(res, {
                        "event: message\ndata: " + progress + "\n\n",
                        "event: endpoint\ndata: " + endpoint_event + "\n\n",
                        "event: message\ndata: " + sampling + "\n\n",
                        "event: ping\ndata: {not json}\n\n",
                        "event: endpoint\ndata: /other\n\n",
                        ": keepalive\n\n",
                        "event: message\ndata: " + answer_7 + "\n\n",
                      });
  });
  server.start();

  SUBCASE("absolute path") {
    endpoint_event = "/message?sessionId=abc";
  }
  SUBCASE("absolute URL") {
    endpoint_event = server.url("/message?sessionId=abc");
  }
  auto client = loopback_client(server.port);
  auto url = voxos::parse_url(server.url("/sse"));
  REQUIRE(url.is_ok());
  std::vector<std::string> endpoints;
  recorded messages;
  auto ended = voxos::legacy_sse_listen(
    *client, *url, {}, [&](std::string path) { endpoints.push_back(std::move(path)); },
    messages.sink(), {});
  REQUIRE_FALSE(ended.is_ok());
  CHECK(ended.code() == errc::unavailable);
  CHECK(ended.message() == "stream ended");
  CHECK(endpoints == std::vector<std::string>{"/message?sessionId=abc"});
  CHECK(messages.seen
        == std::vector<std::string>{"notification notifications/progress",
                                    "request sampling/createMessage", "response 7"});
  CHECK(seen.value(0, "Accept") == "text/event-stream");
}

TEST_CASE("a legacy endpoint on another origin or a garbage message ends the stream") {
  loopback_server server;
  server.svr.Get("/other-origin", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res, {"event: endpoint\ndata: http://evil.example/message\n\n"});
  });
  server.svr.Get("/garbage", [&](const httplib::Request&, httplib::Response& res) {
    reply_events(res,
                 {"event: endpoint\ndata: /message\n\n", "event: message\ndata: {garbage\n\n"});
  });
  server.start();

  auto client = loopback_client(server.port);
  std::vector<std::string> endpoints;
  const auto listen = [&](const std::string& path) {
    auto url = voxos::parse_url(server.url(path));
    REQUIRE(url.is_ok());
    return voxos::legacy_sse_listen(
      *client, *url, {}, [&](std::string endpoint) { endpoints.push_back(std::move(endpoint)); },
      {}, {});
  };
  auto other = listen("/other-origin");
  REQUIRE_FALSE(other.is_ok());
  CHECK(other.code() == errc::forbidden);
  CHECK(endpoints.empty());

  auto garbage = listen("/garbage");
  REQUIRE_FALSE(garbage.is_ok());
  CHECK(garbage.code() == errc::bad_json);
  CHECK(endpoints == std::vector<std::string>{"/message"});
}

TEST_CASE("a legacy send posts the message to the endpoint and expects 202") {
  loopback_server server;
  std::string seen_body;
  std::string seen_session;
  std::string seen_type;
  server.svr.Post("/message", [&](const httplib::Request& req, httplib::Response& res) {
    seen_body = req.body;
    seen_session = req.get_param_value("sessionId");
    seen_type = req.get_header_value("Content-Type");
    res.status = 202;
    res.set_content("Accepted", "text/plain");
  });
  server.svr.Post("/gone",
                  [&](const httplib::Request&, httplib::Response& res) { res.status = 500; });
  server.start();

  auto client = loopback_client(server.port);
  auto sent = voxos::legacy_sse_send(*client, "/message?sessionId=abc", {}, request_1);
  CHECK_MESSAGE(sent.is_ok(), sent.message());
  CHECK(seen_body == request_1);
  CHECK(seen_session == "abc");
  CHECK(seen_type == "application/json");

  auto failed = voxos::legacy_sse_send(*client, "/gone", {}, request_1);
  REQUIRE_FALSE(failed.is_ok());
  CHECK(failed.code() == errc::unavailable);
  CHECK(failed.message() == "server answered HTTP 500");
}
