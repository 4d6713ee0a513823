// A run driven over the CAF network, as agent hosts drive it (run_host's
// messages): cancelling cancels every call in flight at the SDK-built peer,
// answers each call id as cancelled, in call order, and the summary counts
// them; hostile rounds (10,000 calls, a 50 MB argument, repeated call ids,
// another run's id, text that is not UTF-8) get their specific errors and the
// run goes on; the run
// host forgets a host's runs that ended another way (its list stays bounded).
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <variant>

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/run_host/run_host.hpp"
#include "config/node_config.hpp"
#include "messages/error.hpp"
#include "support/caf_host.hpp"
#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

/// An agent host connected to the fixture's node over the CAF network.
struct network_host {
  test::caf_host_config cfg;
  caf::actor_system sys{cfg};
  run_host_actor host;
  std::unique_ptr<caf::scoped_actor> self;

  explicit network_host(test::run_fixture& f) {
    auto found =
      sys.middleman().remote_actor<run_host_actor>("127.0.0.1", f.node->get().caf_port());
    REQUIRE(found);
    host = *found;
    self = std::make_unique<caf::scoped_actor>(sys);
  }

  run_ticket start(test::run_fixture& f) {
    run_ticket ticket;
    (*self)
      ->request(host, std::chrono::seconds(10), create_atom::value, run_atom::value, f.token,
                run_start{f.agent_id, "owner_text_chat", "", "", ""})
      .receive([&](const run_ticket& started) { ticket = started; },
               [&](caf::error& err) { FAIL("the run did not start: " << sys.render(err)); });
    REQUIRE_FALSE(ticket.run_id.empty());
    return ticket;
  }

  /// The round's outputs, or its error (code and message).
  std::variant<std::vector<tool_output>, std::pair<errc, std::string>>
  round(test::run_fixture& f, const std::string& run_id, const std::vector<tool_call>& calls) {
    std::variant<std::vector<tool_output>, std::pair<errc, std::string>> out;
    (*self)
      ->request(host, std::chrono::seconds(60), tool_atom::value, f.token, run_id, calls)
      .receive([&](std::vector<tool_output>& outputs) { out = std::move(outputs); },
               [&](caf::error& err) { out = std::make_pair(code_of(err), message_of(err)); });
    return out;
  }
};

/// The error a request was answered with, or {internal, "answered"} when it
/// was answered with a `T`.
template <class T, class Request>
std::pair<errc, std::string> error_of(Request&& request) {
  std::pair<errc, std::string> out{errc::internal, "answered"};
  std::forward<Request>(request).receive([&](const T&) {},
                                         [&](caf::error& err) {
                                           out = {code_of(err), message_of(err)};
                                         });
  return out;
}

} // namespace

TEST_CASE("over the CAF network, hostile rounds get their own errors and the run goes on") {
  test::run_fixture f;
  network_host h{f};
  auto ticket = h.start(f);
  auto error_of = [](const auto& answer) {
    REQUIRE(std::holds_alternative<std::pair<errc, std::string>>(answer));
    return std::get<std::pair<errc, std::string>>(answer);
  };

  std::vector<tool_call> many(10'000, tool_call{"", "echo", R"({"text":"x"})"});
  for (std::size_t idx = 0; idx < many.size(); ++idx)
    many[idx].call_id = "c" + std::to_string(idx);
  auto too_many = error_of(h.round(f, ticket.run_id, many));
  CHECK(too_many.first == errc::out_of_range);
  CHECK(too_many.second.find("at most") != std::string::npos);

  auto repeated = error_of(h.round(
    f, ticket.run_id, {{"same", "echo", R"({"text":"a"})"}, {"same", "echo", R"({"text":"b"})"}}));
  CHECK(repeated.first == errc::conflict);

  auto elsewhere = error_of(h.round(f, "r_not-this-tenants", {{"a", "echo", R"({"text":"a"})"}}));
  CHECK(elsewhere.first == errc::not_found);

  // A 50 MB argument is one failed call, not sent; the call beside it is.
  std::string huge = R"({"text":")" + std::string(std::size_t{50} << 20, 'x') + R"("})";
  auto answered =
    h.round(f, ticket.run_id, {{"big", "echo", huge}, {"small", "record_note", R"({"note":"n"})"}});
  REQUIRE(std::holds_alternative<std::vector<tool_output>>(answered));
  const auto& outputs = std::get<std::vector<tool_output>>(answered);
  REQUIRE(outputs.size() == 2);
  CHECK(outputs[0].status == "invalid_arguments");
  CHECK(outputs[0].output.find("exceed") != std::string::npos);
  CHECK(outputs[0].output.size() < 1024);
  CHECK(outputs[1].status == "ok");

  // The run and the node go on.
  auto after = h.round(f, ticket.run_id, {{"next", "echo", R"({"text":"again"})"}});
  REQUIRE(std::holds_alternative<std::vector<tool_output>>(after));
  CHECK(std::get<std::vector<tool_output>>(after)[0].status == "ok");
}

TEST_CASE("over the CAF network, text that is not UTF-8 is refused by field and the node goes on") {
  test::run_fixture f;
  network_host h{f};
  auto ticket = h.start(f);
  const std::string bad = "bad \xff text";
  auto refused = [](const std::pair<errc, std::string>& answer, const std::string& field) {
    CHECK(answer.first == errc::bad_json);
    CHECK(answer.second == field + ": must be valid UTF-8");
  };
  auto turn = [&](const std::string& user, const std::string& assistant) {
    return error_of<std::string>((*h.self)->request(
      h.host, std::chrono::seconds(10), turn_atom::value, f.token, ticket.run_id, user, assistant));
  };
  refused(turn(bad, "ok"), "user");
  refused(turn("ok", bad), "assistant");
  refused(error_of<run_ticket>((*h.self)->request(
            h.host, std::chrono::seconds(10), create_atom::value, run_atom::value, f.token,
            run_start{f.agent_id, "owner_text_chat", "", bad, ""})),
          "chat_id");
  refused(error_of<std::string>((*h.self)->request(
            h.host, std::chrono::seconds(10), cancel_atom::value, f.token, ticket.run_id + bad)),
          "run_id");
  auto round_error = [&](const tool_call& call) {
    auto answer = h.round(f, ticket.run_id, {{"fine", "echo", R"({"text":"a"})"}, call});
    REQUIRE(std::holds_alternative<std::pair<errc, std::string>>(answer));
    return std::get<std::pair<errc, std::string>>(answer);
  };
  refused(round_error({"id" + bad, "echo", "{}"}), "call_id");
  refused(round_error({"b", "echo" + bad, "{}"}), "name");
  refused(round_error({"b", "echo", R"({"text":")" + bad + R"("})"}), "arguments");

  // Nothing was recorded or changed: the run, its tenant and another tenant
  // answer as before.
  auto after = h.round(f, ticket.run_id, {{"next", "echo", R"({"text":"again"})"}});
  REQUIRE(std::holds_alternative<std::vector<tool_output>>(after));
  CHECK(std::get<std::vector<tool_output>>(after)[0].status == "ok");
  CHECK(turn("ok", "fine").first == errc::internal); // (answered)
  auto other = f.node->make_tenant("Globex").second;
  CHECK(f.node->call("GET", "/v1/agents", other).status == 200);
  CHECK(f.node->call("GET", "/v1/agents", f.token).status == 200);
}

TEST_CASE("over the CAF network, a location with bytes after a NUL is refused and starts nothing") {
  test::run_fixture f;
  network_host h{f};
  using namespace std::string_literals;
  auto before = f.node->stored_events();
  const std::string location =
    R"({"latitude":48.86,"longitude":2.33,"accuracy_m":20,"captured_us":1})";
  for (const auto& hostile : {location + "\0garbage"s, location + "\0{\"latitude\":1}"s}) {
    auto answer = error_of<run_ticket>(
      (*h.self)->request(h.host, std::chrono::seconds(10), create_atom::value, run_atom::value,
                         f.token, run_start{f.agent_id, "owner_text_chat", "", "", hostile}));
    CHECK(answer.first == errc::bad_json);
    CHECK(answer.second == "location: expected one JSON object");
  }
  CHECK(f.node->stored_events() == before);
}

TEST_CASE("over the CAF network, starts arriving together stay within run.max_live_runs") {
  test::run_fixture f{[](node_config& cfg) { cfg.run.max_live_runs = 2; }};
  network_host h{f};
  // (sent without waiting: each start waits on the store, and each used to
  // pass the bound's check before any had spawned its run)
  constexpr int starts = 20;
  for (int n = 0; n < starts; ++n)
    (*h.self)->send(h.host, create_atom::value, run_atom::value, f.token,
                    run_start{f.agent_id, "owner_text_chat", "", "", ""});
  int started = 0;
  int refused = 0;
  for (int n = 0; n < starts; ++n)
    (*h.self)->receive([&](const run_ticket&) { ++started; },
                       [&](caf::error& err) {
                         CHECK(code_of(err) == errc::out_of_range);
                         CHECK(message_of(err).find("run.max_live_runs") != std::string::npos);
                         ++refused;
                       },
                       caf::after(std::chrono::seconds(60)) >>
                         [] { FAIL("a start was not answered"); });
  CHECK(started == 2);
  CHECK(refused == starts - 2);
}

TEST_CASE("cancelling a run over the CAF network cancels every call in flight at the peer") {
  test::run_fixture f;
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  network_host h{f};
  auto ticket = h.start(f);

  std::vector<tool_call> calls;
  for (int n = 0; n < 8; ++n)
    calls.push_back({"s" + std::to_string(n), "sleep", R"({"ms":20000})"});
  std::variant<std::vector<tool_output>, std::pair<errc, std::string>> answered;
  std::thread submitter{[&] {
    network_host submitting{f}; // its own actor: the round's answer waits there
    answered = submitting.round(f, ticket.run_id, calls);
  }};
  bool all_in_flight =
    test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 8; });

  std::string summary;
  (*h.self)
    ->request(h.host, std::chrono::seconds(10), cancel_atom::value, f.token, ticket.run_id)
    .receive([&](const std::string& cancelled) { summary = cancelled; },
             [&](caf::error& err) { FAIL("cancel failed: " << h.sys.render(err)); });
  submitter.join();
  REQUIRE(all_in_flight);
  CHECK(json::parse(summary)["cancelled_calls"] == 8);
  REQUIRE(std::holds_alternative<std::vector<tool_output>>(answered));
  const auto& outputs = std::get<std::vector<tool_output>>(answered);
  REQUIRE(outputs.size() == calls.size());
  for (std::size_t idx = 0; idx < calls.size(); ++idx) {
    CHECK(outputs[idx].call_id == calls[idx].call_id);
    CHECK(outputs[idx].status == "cancelled");
  }
  // The peer saw every call cancelled and holds none.
  CHECK(test::wait_for_stats(
    f.peer->port(), [](const json& s) { return s["cancelled"] == 8 && s["in_flight"] == 0; }));
  // The run is gone: a second cancel of it is not found.
  (*h.self)
    ->request(h.host, std::chrono::seconds(10), cancel_atom::value, f.token, ticket.run_id)
    .receive([&](const std::string&) { FAIL("a cancelled run was cancelled again"); },
             [&](caf::error& err) { CHECK(code_of(err) == errc::not_found); });
}

TEST_CASE("a close refused during a round leaves the run among its host's watched runs") {
  test::run_fixture f;
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  network_host h{f};
  auto hosted = [&] {
    auto status = f.node->call("GET", "/v1/admin/status", test::admin_token);
    REQUIRE(status.status == 200);
    return status.body["metrics"]["run_host"]["hosted_runs"].get<uint64_t>();
  };
  auto ticket = h.start(f);
  CHECK(hosted() == 1);
  std::variant<std::vector<tool_output>, std::pair<errc, std::string>> answered;
  std::thread submitter{[&] {
    network_host submitting{f}; // its own actor: the round's answer waits there
    answered = submitting.round(f, ticket.run_id, {{"s", "sleep", R"({"ms":20000})"}});
  }};
  bool in_flight =
    test::wait_for_stats(f.peer->port(), [](const json& s) { return s["in_flight"] == 1; });
  errc refused = errc::internal;
  (*h.self)
    ->request(h.host, std::chrono::seconds(10), close_atom::value, f.token, ticket.run_id)
    .receive([&](bool) { FAIL("a run closed during its round"); },
             [&](caf::error& err) { refused = code_of(err); });
  CHECK(refused == errc::conflict);
  // Still watched: were the host's connection to drop now, the run would be
  // cancelled (it was forgotten before the run answered, and left running).
  CHECK(hosted() == 1);

  (*h.self)
    ->request(h.host, std::chrono::seconds(10), cancel_atom::value, f.token, ticket.run_id)
    .receive([&](const std::string&) {},
             [&](caf::error& err) { FAIL("cancel failed: " << h.sys.render(err)); });
  submitter.join();
  REQUIRE(in_flight);
  CHECK(hosted() == 0);
}

TEST_CASE("the run host forgets a host's runs that ended another way, so its list stays bounded") {
  test::run_fixture f;
  network_host h{f};
  auto hosted = [&] {
    auto status = f.node->call("GET", "/v1/admin/status", test::admin_token);
    REQUIRE(status.status == 200);
    return status.body["metrics"]["run_host"]["hosted_runs"].get<uint64_t>();
  };
  // Runs the host starts and nobody ends through it: each is cancelled over
  // HTTP, which the run host does not see.
  auto start_ended = [&](int count) {
    for (int run_idx = 0; run_idx < count; ++run_idx) {
      auto ticket = h.start(f);
      REQUIRE(f.node->call("DELETE", "/v1/runs/" + ticket.run_id, f.token).status == 200);
    }
  };
  auto hosted_becomes = [&](uint64_t expected) {
    for (int wait_idx = 0; wait_idx < 200; ++wait_idx) {
      if (hosted() == expected)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  };
  start_ended(63);
  CHECK(hosted() == 63);
  // The 64th reaches the prune mark: the ended 63 are asked about and
  // forgotten; the live one stays.
  auto live = h.start(f);
  CHECK(hosted_becomes(1));
  // And again: the mark follows what the check left (one run), it does not
  // keep doubling: 62 more ended runs and a live one reach it.
  start_ended(62);
  auto second = h.start(f);
  CHECK(hosted_becomes(2));
  auto after = h.round(f, live.run_id, {{"a", "echo", R"({"text":"still here"})"}});
  REQUIRE(std::holds_alternative<std::vector<tool_output>>(after));
  CHECK(std::get<std::vector<tool_output>>(after)[0].status == "ok");

  // Closed through the run host: forgotten at once.
  for (const auto* ticket : {&live, &second}) {
    bool closed = false;
    (*h.self)
      ->request(h.host, std::chrono::seconds(10), close_atom::value, f.token, ticket->run_id)
      .receive([&](bool done) { closed = done; },
               [&](caf::error& err) { FAIL("close failed: " << h.sys.render(err)); });
    CHECK(closed);
  }
  CHECK(hosted() == 0);
}

TEST_CASE("a token revoked over HTTP is refused by the run host from the next request, though "
          "its tenant was remembered for it") {
  test::run_fixture f;
  network_host h{f};
  auto issued = f.node->call("POST", "/v1/tokens", f.token, R"({"label":"host"})");
  REQUIRE(issued.status == 201);
  auto token = issued.body["token"].get<std::string>();
  auto token_id = issued.body["token_id"].get<std::string>();
  // A turn for a run that does not exist: the token's tenant is resolved
  // (and remembered), then the tenant answers not_found.
  auto turn = [&](const std::string& secret) {
    return error_of<std::string>((*h.self)->request(h.host, std::chrono::seconds(10),
                                                    turn_atom::value, secret, std::string{"r_none"},
                                                    std::string{"hello"}, std::string{"hi"}))
      .first;
  };
  CHECK(turn(token) == errc::not_found);
  CHECK(turn(token) == errc::not_found);
  REQUIRE(f.node->call("DELETE", "/v1/tokens/" + token_id, f.token).status == 200);
  CHECK(turn(token) == errc::unauthorized);
  // The tenant's other token goes on.
  CHECK(turn(f.token) == errc::not_found);
}
