// Requests that hold an HTTP worker while they wait (activity streams,
// tool-call rounds) are bounded in all and per tenant, so that health
// checks, operators and other tenants keep their workers. A refused request
// changes nothing. The node runs with 4 workers: 2 may be held, 1 per tenant.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <httplib.h>

#include "support/run_fixture.hpp"
#include "support/stream_reader.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// A run of the tenant holding `token` with its default agent.
std::string start_run_of(test::running_node& node, const std::string& token) {
  auto agent = node.call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
  auto started = node.call("POST", "/v1/runs", token,
                           json{{"agent_id", agent}, {"channel", "owner_text_chat"}}.dump());
  REQUIRE_MESSAGE(started.status == 201, started.raw);
  return started.body["run_id"].get<std::string>();
}

json held_status(test::running_node& node) {
  return node.call("GET", "/v1/admin/status", test::admin_token).body["metrics"]["http"];
}

/// Whether the node's held requests come to `count` within 10 s.
bool held_comes_to(test::running_node& node, uint64_t count) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (held_status(node)["held_requests"] == count)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

json one_echo() {
  return json::array({{{"call_id", "a"}, {"name", "echo"}, {"arguments", {{"text", "hi"}}}}});
}

} // namespace

TEST_CASE("waiting requests are bounded per tenant and in all, and the rest of the node answers") {
  test::run_fixture f{[](node_config& cfg) { cfg.http.threads = 4; }};
  auto never = [](const std::string&) { return false; };
  auto run_a = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));

  // Tenant A's stream takes A's one hold.
  test::stream_reader a_stream{*f.node, f.token, "/v1/runs/" + run_a + "/events", never};
  REQUIRE(a_stream.status == 200);

  // A's second stream and A's round are refused with 429 and Retry-After;
  // the round's call never reaches the peer.
  httplib::Client cli{"127.0.0.1", f.node->get().http_port()};
  cli.set_read_timeout(5); // (a stream wrongly let through would never end)
  auto second =
    cli.Get(("/v1/runs/" + run_a + "/events").c_str(), {{"Authorization", "Bearer " + f.token}});
  REQUIRE(second);
  CHECK(second->status == 429);
  CHECK(second->get_header_value("Retry-After") == "1");
  CHECK(json::parse(second->body)["error"]["code"] == "too_many_requests");
  auto round = f.submit(run_a, one_echo());
  CHECK(round.status == 429);
  CHECK(round.body["error"]["message"].get<std::string>().find("http.max_held_per_tenant")
        != std::string::npos);
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 0);

  // Tenant B still gets its share, which fills the node.
  auto b_token = f.node->make_tenant("Beta").second;
  auto run_b = start_run_of(*f.node, b_token);
  test::stream_reader b_stream{*f.node, b_token, "/v1/runs/" + run_b + "/events", never};
  REQUIRE(b_stream.status == 200);

  // Tenant C finds the node full: 503.
  auto c_token = f.node->make_tenant("Gamma").second;
  auto run_c = start_run_of(*f.node, c_token);
  auto full = f.node->call("GET", "/v1/runs/" + run_c + "/events", c_token);
  CHECK(full.status == 503);
  CHECK(full.body["error"]["code"] == "unavailable");
  CHECK(full.body["error"]["message"].get<std::string>().find("http.max_held_requests")
        != std::string::npos);

  // Short requests keep their workers: health, operators, configuration.
  CHECK(f.node->call("GET", "/healthz").status == 200);
  auto status = held_status(*f.node);
  CHECK(status["held_requests"] == 2);
  CHECK(status["held_refused"] == 3);
  CHECK(f.node->call("GET", "/v1/agents", c_token).status == 200);

  // Ending A's run ends its stream and gives its hold back: A's round runs.
  REQUIRE(f.node->call("DELETE", "/v1/runs/" + run_a, f.token).status == 200);
  REQUIRE(held_comes_to(*f.node, 1));
  auto run_a2 = f.start_run();
  auto again = f.submit(run_a2, one_echo());
  REQUIRE_MESSAGE(again.status == 200, again.raw);
  CHECK(again.body["outputs"][0]["status"] == "ok");
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 1);
  // The round's hold was given back when it answered.
  CHECK(held_comes_to(*f.node, 1));

  REQUIRE(f.node->call("DELETE", "/v1/runs/" + run_b, b_token).status == 200);
  CHECK(held_comes_to(*f.node, 0));
}

TEST_CASE("a HEAD of the activity stream is refused and neither holds nor cancels the run") {
  test::run_fixture f{[](node_config& cfg) { cfg.http.threads = 4; }};
  auto run_id = f.start_run();
  httplib::Client cli{"127.0.0.1", f.node->get().http_port()};
  auto head = cli.Head(("/v1/runs/" + run_id + "/events?hold=1").c_str(),
                       {{"Authorization", "Bearer " + f.token}});
  REQUIRE(head);
  CHECK(head->status == 405);
  CHECK(held_status(*f.node)["held_requests"] == 0);
  // The run goes on (a hold=1 stream that ended unread would have cancelled it).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto answered = f.submit(run_id, one_echo());
  REQUIRE_MESSAGE(answered.status == 200, answered.raw);
  CHECK(answered.body["outputs"][0]["status"] == "ok");
}

TEST_CASE("a stream refused for a run that is not the tenant's holds nothing") {
  test::run_fixture f{[](node_config& cfg) { cfg.http.threads = 4; }};
  for (int attempt = 0; attempt < 3; ++attempt)
    CHECK(f.node->call("GET", "/v1/runs/run_missing/events", f.token).status == 404);
  CHECK(held_status(*f.node)["held_requests"] == 0);
  CHECK(held_status(*f.node)["held_refused"] == 0);
}
