// The example agent hosts (examples/) against a node and a real SDK-built MCP
// peer: the C++ host over the CAF network and the script host over HTTP each
// run a seven-day forecast; a host that dies mid-round has its run cancelled.
#include <doctest/doctest.h>

#include <csignal>
#include <fstream>

#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
    ++count;
  return count;
}

std::unique_ptr<test::child_process> cpp_host(test::run_fixture& f, std::vector<std::string> args) {
  std::vector<std::string> argv{VOXOS_EXAMPLE_HOST_PATH, "--port",
                                std::to_string(f.node->get().caf_port()), "--agent", f.agent_id};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<test::child_process>(argv, f.dir.str(), f.dir.str() + "/host.err",
                                               std::vector<std::string>{"VOXOS_TOKEN=" + f.token});
}

} // namespace

TEST_CASE("the C++ example host runs a seven-day forecast over the CAF network") {
  test::run_fixture f;
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto host = cpp_host(f, {"--forecast", "Unter den Linden 1", "--from", "2026-12-29"});
  const auto& out = host->read_all();
  CHECK_MESSAGE(host->wait() == 0, out << host->error_output());
  CHECK(out.find("round 1: 7 calls") != std::string::npos);
  CHECK(count_of(out, " ok: Forecast for Unter den Linden 1 on ") == 7);
  // Dates cross the year in call order.
  CHECK(out.find("call_7 ok: Forecast for Unter den Linden 1 on 2027-01-04") != std::string::npos);
  CHECK(test::peer_stats(f.peer->port())["tools"]["get_forecast"]["calls"] == 7);
}

TEST_CASE("a host that dies mid-round has its run cancelled at the peer") {
  test::run_fixture f;
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  json rounds = json::array();
  for (int n = 0; n < 8; ++n)
    rounds.push_back({{"name", "sleep"}, {"arguments", {{"ms", 20'000}}}});
  auto script = f.dir.str() + "/script.json";
  std::ofstream{script} << json{{"user", "wait"}, {"rounds", {rounds}}}.dump();
  auto host = cpp_host(f, {"--script", script});
  REQUIRE_MESSAGE(host->wait_for_line("round 1: 8 calls"), host->error_output());
  REQUIRE_MESSAGE(
    test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 8; }),
    test::peer_stats(f.peer->port()).dump() << host->error_output());
  host->signal(SIGKILL);
  host->wait();
  // The node sees the host's connection drop and cancels the run: every
  // request is cancelled at the peer and none stays in flight.
  CHECK(test::wait_for_stats(
    f.peer->port(), [](const json& s) { return s["cancelled"] == 8 && s["in_flight"] == 0; }));
  auto run_id = host->output().substr(4, host->output().find(' ', 4) - 4);
  CHECK(f.node->call("GET", "/v1/runs/" + run_id + "/health", f.token).status == 404);
}

TEST_CASE("the HTTP example host runs a seven-day forecast") {
  test::run_fixture f;
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  test::child_process host{
    {test::node_path(), std::string{VOXOS_SOURCE_DIR} + "/examples/http_host/host.mjs", "forecast",
     "--url", "http://127.0.0.1:" + std::to_string(f.node->get().http_port()), "--agent",
     f.agent_id, "--address", "Main St 1"},
    f.dir.str(),
    f.dir.str() + "/http_host.err",
    {"VOXOS_TOKEN=" + f.token}};
  const auto& out = host.read_all();
  CHECK_MESSAGE(host.wait() == 0, out << host.error_output());
  CHECK(out.find("round 1: 7 calls in 1 wave(s), at most 7 in flight together")
        != std::string::npos);
  CHECK(count_of(out, " ok: Forecast for Main St 1 on ") == 7);
  CHECK(out.find("audit: 7 execution decisions for this run") != std::string::npos);
  CHECK(test::peer_stats(f.peer->port())["tools"]["get_forecast"]["calls"] == 7);
}
