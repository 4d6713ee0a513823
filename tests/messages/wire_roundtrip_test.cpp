// Every registered wire type crosses the CAF network between two actor
// systems and comes back intact. CAF only logs a forgotten registration and
// delivers an empty message, so this is the test that catches one.
#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"
#include "messages/register.hpp"
#include "messages/types.hpp"

namespace {

using namespace voxos;

struct node_config : caf::actor_system_config {
  node_config() {
    register_types(*this);
    load<caf::io::middleman>();
    set("scheduler.max-threads", size_t{1});
  }
};

// Sample values with every field set to something other than its default.
event_draft sample_draft() {
  return {"tool.decision", R"({"tool":"web_search_exa","ünïcode":"✓"})"};
}
event_record sample_record() {
  return {"t_abc", "audit", 42, 1796214870714170, "tool.decision", R"({"a":1})"};
}
append_request sample_append() {
  return {"t_abc", "audit", {sample_draft(), {"run.started", "{}"}}, 7};
}
tenant_record sample_tenant() {
  return {"t_0123456789abcdef", "Acme Ltd", 1796214870714170};
}
token_record sample_token() {
  return {"tok_0011223344556677", "t_0123456789abcdef", "laptop", 1796214870714171, true};
}

// Sends `value` to a remote echo actor and returns what comes back.
template <class T>
T round_trip(caf::scoped_actor& self, const caf::actor& echo, const T& value) {
  T out{};
  bool answered = false;
  self->request(echo, std::chrono::seconds(10), value)
    .receive(
      [&](const T& back) {
        out = back;
        answered = true;
      },
      [&](caf::error& err) { FAIL("round trip failed: " << caf::to_string(err)); });
  CHECK(answered);
  return out;
}

/// Two actor systems: `server` publishes the actor that `Behavior` makes on a
/// loopback port, `client` reaches it as `remote`.
struct two_systems {
  node_config server_cfg;
  caf::actor_system server{server_cfg};
  node_config client_cfg;
  caf::actor_system client{client_cfg};
  caf::actor published;
  caf::actor remote;

  template <class Behavior>
  explicit two_systems(Behavior behavior) {
    published = server.spawn(behavior);
    auto port = server.middleman().publish(published, 0, "127.0.0.1");
    REQUIRE(port);
    auto found = client.middleman().remote_actor("127.0.0.1", *port);
    REQUIRE(found);
    remote = *found;
  }

  ~two_systems() { caf::anon_send_exit(published, caf::exit_reason::user_shutdown); }
};

} // namespace

TEST_CASE("every wire type crosses two actor systems intact") {
  // Answers every message with itself (CAF's reflect default handler).
  two_systems net{[](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::reflect);
    return {[](int32_t) {}};
  }};
  caf::scoped_actor self{net.client};

  std::set<std::string> covered;
  auto check = [&](const std::string& name, const auto& value) {
    covered.insert(name);
    CHECK_MESSAGE(round_trip(self, net.remote, value) == value, name);
  };
  check("voxos::event_draft", sample_draft());
  check("voxos::event_record", sample_record());
  check("voxos::append_request", sample_append());
  check("voxos::append_result", append_result{3, 9});
  check("voxos::stream_query", stream_query{"t_abc", "audit", 5, 77});
  check("voxos::state_entry", state_entry{"t_a/cfg/agent/a_1", R"({"name":"x"})"});
  check("voxos::store_report", store_report{10, 2, 4});
  check("voxos::tenant_record", sample_tenant());
  check("voxos::token_record", sample_token());
  check("voxos::issued_token", issued_token{sample_token(), "vxt_secret"});
  check("voxos::tenant_identity", tenant_identity{"t_abc", "Acme", "tok_1"});
  check("voxos::pong_reply", pong_reply{"n_1", "0.1.0", 123456789});
  check("voxos::tool_call", tool_call{"call_1", "get_forecast", R"({"date":"2026-12-03"})"});
  check("voxos::tool_output", tool_output{"call_1", "ok", R"({"content":[]})"});
  check("voxos::run_start",
        run_start{"a_1", "owner_text_chat", "", "c_1", R"({"latitude":52.5,"longitude":13.4})"});
  check("voxos::run_ticket", run_ticket{"r_1", "c_1", R"({"direct":[]})", "The user shared..."});
  check("voxos::tool_calls", std::vector<tool_call>{{"a", "echo", "{}"}, {"b", "add", "{}"}});
  check("voxos::tool_outputs", std::vector<tool_output>{{"a", "ok", "{}"}});
  check("voxos::event_records", std::vector<event_record>{sample_record(), sample_record()});
  check("voxos::tenant_records", std::vector<tenant_record>{sample_tenant()});
  check("voxos::token_records", std::vector<token_record>{sample_token(), sample_token()});
  check("voxos::state_entries", std::vector<state_entry>{{"k1", "v1"}, {"k2", "v2"}});

  // The list above covers exactly what register_types registers.
  std::set<std::string> registered(wire_type_names().begin(), wire_type_names().end());
  CHECK(covered == registered);
}

TEST_CASE("a voxos error crosses the network with its code and message") {
  two_systems net{[](caf::event_based_actor*) -> caf::behavior {
    return {[](const std::string&) -> caf::result<std::string> {
      return make_error(errc::unauthorized, "the token is not valid");
    }};
  }};
  caf::scoped_actor self{net.client};
  bool failed = false;
  self->request(net.remote, std::chrono::seconds(10), std::string{"x"})
    .receive([](const std::string&) { FAIL("expected an error"); },
             [&](caf::error& err) {
               failed = true;
               CHECK(code_of(err) == errc::unauthorized);
               CHECK(message_of(err) == "the token is not valid");
             });
  CHECK(failed);
}
