// Cancelling a run through the CAF API, as an agent host over the network
// does (run_host's cancel message): every call in flight is cancelled at the
// SDK-built peer, the round answers each call id as cancelled, in call order,
// and the summary counts them; the run is gone afterwards.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/run_host/run_host.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct host_config : caf::actor_system_config {
  host_config() {
    register_types(*this);
    load<caf::io::middleman>();
  }
};

} // namespace

TEST_CASE("cancelling a run over the CAF network cancels every call in flight at the peer") {
  test::run_fixture f;
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  host_config cfg;
  caf::actor_system sys{cfg};
  auto host = sys.middleman().remote_actor<run_host_actor>("127.0.0.1", f.node->get().caf_port());
  REQUIRE(host);
  caf::scoped_actor self{sys};

  run_ticket ticket;
  self
    ->request(*host, std::chrono::seconds(10), create_atom::value, run_atom::value, f.token,
              run_start{f.agent_id, "owner_text_chat", "", "", ""})
    .receive([&](const run_ticket& started) { ticket = started; },
             [&](caf::error& err) { FAIL("the run did not start: " << sys.render(err)); });
  REQUIRE_FALSE(ticket.run_id.empty());

  std::vector<tool_call> calls;
  for (int n = 0; n < 8; ++n)
    calls.push_back({"s" + std::to_string(n), "sleep", R"({"ms":20000})"});
  std::vector<tool_output> outputs;
  std::string round_error;
  std::thread submitter{[&] {
    caf::scoped_actor submitting{sys};
    submitting
      ->request(*host, std::chrono::seconds(60), tool_atom::value, f.token, ticket.run_id, calls)
      .receive([&](std::vector<tool_output>& answered) { outputs = std::move(answered); },
               [&](caf::error& err) { round_error = sys.render(err); });
  }};
  bool all_in_flight =
    test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 8; });

  std::string summary;
  self->request(*host, std::chrono::seconds(10), cancel_atom::value, f.token, ticket.run_id)
    .receive([&](const std::string& answered) { summary = answered; },
             [&](caf::error& err) { FAIL("cancel failed: " << sys.render(err)); });
  submitter.join();
  REQUIRE(all_in_flight);
  REQUIRE_MESSAGE(round_error.empty(), round_error);
  CHECK(json::parse(summary)["cancelled_calls"] == 8);
  REQUIRE(outputs.size() == calls.size());
  for (std::size_t idx = 0; idx < calls.size(); ++idx) {
    CHECK(outputs[idx].call_id == calls[idx].call_id);
    CHECK(outputs[idx].status == "cancelled");
  }
  // The peer saw every call cancelled and holds none.
  CHECK(test::wait_for_stats(
    f.peer->port(), [](const json& s) { return s["cancelled"] == 8 && s["in_flight"] == 0; }));
  // The run is gone: a second cancel of it is not found.
  self->request(*host, std::chrono::seconds(10), cancel_atom::value, f.token, ticket.run_id)
    .receive([&](const std::string&) { FAIL("a cancelled run was cancelled again"); },
             [&](caf::error& err) { CHECK(code_of(err) == errc::not_found); });
}
