// transport/mcp_server's resumable streams at 2025-11-25 over loopback HTTP:
// priming events and event ids, a call that ends its connection mid-call,
// GET with Last-Event-ID (the node's own client resuming, and bogus ids),
// the replay bound and the bound on streams nobody reads.
#include "transport/mcp_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "support/mcp_served.hpp"
#include "transport/mcp_http.hpp"

using nlohmann::json;
using namespace voxos;
using namespace voxos::test;

namespace {

/// A tool that logs `before` messages, ends its connection, logs `after`
/// more and answers.
mcp_tool polled(int before = 0, int after = 1) {
  mcp_tool tool;
  tool.name = "polled";
  tool.handler = [before, after](const json&, mcp_call_context& ctx) -> mcp_outcome {
    for (int log_idx = 0; log_idx < before; ++log_idx)
      ctx.log(mcp_log_level::info, "before " + std::to_string(log_idx));
    ctx.close_stream();
    for (int log_idx = 0; log_idx < after; ++log_idx)
      ctx.log(mcp_log_level::info, "after " + std::to_string(log_idx));
    return mcp_text_result("polled to the end");
  };
  return tool;
}

mcp_server_options quick_retry() {
  mcp_server_options options;
  options.stream_retry = std::chrono::milliseconds(10);
  return options;
}

/// The id of the first event of an answer that carries one.
std::string first_event_id(const mcp_answer& answer) {
  for (const auto& event : answer.sse_events())
    if (event.has_id)
      return event.id;
  return {};
}

mcp_answer resume(uint16_t port, const std::string& session, const std::string& last_event_id) {
  return mcp_send(
    port, "GET", "",
    in_session(session, {{"Accept", "text/event-stream"}, {"Last-Event-ID", last_event_id}}));
}

} // namespace

TEST_CASE("a session call's stream opens with a priming event carrying an id and the retry, and "
          "numbers its events on that stream") {
  mcp_served served{quick_retry()};
  mcp_tool chatty;
  chatty.name = "chatty";
  chatty.handler = [](const json&, mcp_call_context& ctx) -> mcp_outcome {
    ctx.log(mcp_log_level::info, "one");
    ctx.log(mcp_log_level::info, "two");
    return mcp_text_result("done");
  };
  REQUIRE(served.server.add_tool(chatty).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto answer = in_session_call(served.port, session, "tools/call", {{"name", "chatty"}});
  CHECK(answer.header("connection") == "close");
  auto events = answer.sse_events();
  REQUIRE(events.size() == 4);
  CHECK(events[0].data.empty());
  CHECK(events[0].retry_ms == 10u);
  auto stream = events[0].id.substr(0, events[0].id.find('-'));
  CHECK(events[0].id == stream + "-0");
  CHECK(events[1].id == stream + "-1");
  CHECK(events[2].id == stream + "-2");
  CHECK(events[3].id == stream + "-3");
  CHECK(json::parse(events[3].data)["result"]["content"][0]["text"] == "done");
  // Read to its end: nothing is left to resume.
  CHECK(resume(served.port, session, events[3].id).status == 400);
}

TEST_CASE("a call that ends its connection mid-call is resumed by the node's own client, which "
          "gets what followed and the answer") {
  mcp_served served{quick_retry()};
  REQUIRE(served.server.add_tool(polled(1, 2)).is_ok());
  served.start();
  auto session = open_session(served.port);
  http_client::options opts;
  opts.total_deadline = std::chrono::milliseconds(20'000);
  auto client = loopback_client(served.port, opts);
  mcp_http_headers headers;
  headers.session_id = session;
  headers.protocol_version = "2025-11-25";
  std::vector<std::string> logged;
  auto sink = [&logged](jsonrpc_message&& message) {
    auto* notification = std::get_if<jsonrpc_notification>(&message);
    REQUIRE(notification);
    logged.push_back(json::parse(*notification->params)["data"].get<std::string>());
  };
  auto exchange =
    streamable_request(*client, "/mcp", headers, rpc(3, "tools/call", {{"name", "polled"}}),
                       jsonrpc_id{int64_t{3}}, sink, {});
  REQUIRE_MESSAGE(exchange.is_ok(), exchange.error().message());
  CHECK(exchange->resumptions == 1);
  CHECK(logged == std::vector<std::string>{"before 0", "after 0", "after 1"});
  auto* response = std::get_if<jsonrpc_response>(&exchange->answer);
  REQUIRE(response);
  CHECK(json::parse(response->result)["content"][0]["text"] == "polled to the end");
}

TEST_CASE("GET with Last-Event-ID replays what followed that event on its stream, then the stream "
          "is read to its end and cannot be resumed again") {
  mcp_served served{quick_retry()};
  REQUIRE(served.server.add_tool(polled(1, 1)).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto cut = in_session_call(served.port, session, "tools/call", {{"name", "polled"}});
  auto events = cut.sse_events();
  REQUIRE(events.size() == 2); // the priming event and the log before the close
  CHECK(json::parse(events[1].data)["params"]["data"] == "before 0");

  auto resumed = resume(served.port, session, events[1].id);
  CHECK(resumed.status == 200);
  auto rest = resumed.events();
  REQUIRE(rest.size() == 2);
  CHECK(rest[0]["params"]["data"] == "after 0");
  CHECK(rest[1]["result"]["content"][0]["text"] == "polled to the end");
  CHECK(resume(served.port, session, events[1].id).status == 400);
}

TEST_CASE("a bogus Last-Event-ID is 400 and opens nothing: malformed, no such stream, another "
          "session's stream, an event not yet sent") {
  mcp_served served{quick_retry()};
  mcp_tool waits;
  waits.name = "waits";
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  waits.handler = [released](const json&, mcp_call_context& ctx) -> mcp_outcome {
    ctx.close_stream();
    released.wait_for(std::chrono::seconds(10));
    return mcp_text_result("released");
  };
  REQUIRE(served.server.add_tool(waits).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto other = open_session(served.port);
  auto parked =
    first_event_id(in_session_call(served.port, session, "tools/call", {{"name", "waits"}}));
  REQUIRE(parked.size() > 2);
  auto stream = parked.substr(0, parked.find('-'));
  for (const std::string& bogus : {std::string{"not-an-id"}, std::string{"-1"}, std::string{"1-"},
                                   std::string{"99-0"}, stream + "-5", stream + "-0x1"}) {
    auto refused = resume(served.port, session, bogus);
    CHECK_MESSAGE(refused.status == 400, bogus);
    CHECK_MESSAGE(refused.json()["error"]["code"] == mcp_code::invalid_request, bogus);
  }
  // The same id in another session names nothing there.
  CHECK(resume(served.port, other, parked).status == 400);
  CHECK(served.server.open_streams() == 0);
  release->set_value();
  auto rest = resume(served.port, session, parked).events();
  REQUIRE(rest.size() == 1);
  CHECK(rest[0]["result"]["content"][0]["text"] == "released");
}

TEST_CASE("only the last stream_replay events are kept: resuming before them is 400, after them "
          "replays the rest") {
  auto options = quick_retry();
  options.stream_replay = 2;
  mcp_served served{options};
  REQUIRE(served.server.add_tool(polled(4, 0)).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto priming =
    first_event_id(in_session_call(served.port, session, "tools/call", {{"name", "polled"}}));
  REQUIRE_FALSE(priming.empty());
  auto stream = priming.substr(0, priming.find('-'));
  // Four logs (1-4) went out before the close; only the last two events are kept.
  auto too_old = resume(served.port, session, stream + "-0");
  CHECK(too_old.status == 400);
  CHECK(too_old.json()["error"]["message"]
        == "Bad Request: the events after Last-Event-ID are no longer kept");
  auto rest = resume(served.port, session, stream + "-3").events();
  REQUIRE(rest.size() == 2);
  CHECK(rest[0]["params"]["data"] == "before 3");
  CHECK(rest[1]["result"]["content"][0]["text"] == "polled to the end");
}

TEST_CASE("a session call goes on when its client's connection drops, and its answer waits for "
          "a resume") {
  mcp_served served{quick_retry()};
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto saw_cancel = std::make_shared<std::atomic<bool>>(false);
  auto ended = std::make_shared<std::atomic<bool>>(false);
  mcp_tool steady;
  steady.name = "steady";
  steady.handler = [released, saw_cancel, ended](const json&,
                                                 mcp_call_context& ctx) -> mcp_outcome {
    released.wait_for(std::chrono::seconds(10));
    // Written to the connection the client left: the first write finds it
    // gone, the rest wait for the resume.
    ctx.log(mcp_log_level::info, "still here");
    ctx.log(mcp_log_level::info, "and here");
    *saw_cancel = ctx.cancelled();
    *ended = true;
    return mcp_text_result("finished");
  };
  REQUIRE(served.server.add_tool(steady).is_ok());
  served.start();
  auto session = open_session(served.port);
  // The client reads the priming event, then leaves.
  auto left =
    mcp_send(served.port, "POST", rpc(1, "tools/call", {{"name", "steady"}}), in_session(session),
             [](const std::string& body) { return body.find("\n\n") != std::string::npos; });
  auto priming = first_event_id(left);
  REQUIRE_FALSE(priming.empty());
  release->set_value();
  REQUIRE(eventually(*ended));
  CHECK_FALSE(*saw_cancel);
  auto rest = resume(served.port, session, priming).events();
  REQUIRE(rest.size() == 3);
  CHECK(rest[0]["params"]["data"] == "still here");
  CHECK(rest[1]["params"]["data"] == "and here");
  CHECK(rest[2]["result"]["content"][0]["text"] == "finished");
}

TEST_CASE("notifications the GET stream got while nobody read it are replayed after its "
          "Last-Event-ID") {
  mcp_served served{quick_retry()};
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto stream_headers = in_session(session, {{"Accept", "text/event-stream"}});
  auto first = mcp_send(served.port, "GET", "", stream_headers, [](const std::string& body) {
    return body.find("\n\n") != std::string::npos;
  });
  auto priming = first_event_id(first);
  REQUIRE_FALSE(priming.empty());
  served.server.notify_tools_changed();
  served.server.notify_prompts_changed();
  auto resumed = mcp_send(
    served.port, "GET", "", with_header(stream_headers, "Last-Event-ID", priming),
    [](const std::string& body) { return body.find("prompts/list_changed") != std::string::npos; });
  auto events = resumed.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0]["method"] == "notifications/tools/list_changed");
  CHECK(events[1]["method"] == "notifications/prompts/list_changed");
}

TEST_CASE("a session keeps at most max_detached_streams streams nobody reads: the oldest is "
          "dropped, its call cancelled, and it cannot be resumed") {
  auto options = quick_retry();
  options.max_detached_streams = 1;
  mcp_served served{options};
  auto first_cancelled = std::make_shared<std::atomic<bool>>(false);
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  mcp_tool parks;
  parks.name = "parks";
  parks.handler = [first_cancelled, released](const json& arguments,
                                              mcp_call_context& ctx) -> mcp_outcome {
    ctx.close_stream();
    bool first = arguments.value("first", false);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (first && ctx.cancelled()) {
        *first_cancelled = true;
        break;
      }
      if (!first && released.wait_for(std::chrono::milliseconds(5)) == std::future_status::ready)
        break;
      std::this_thread::yield();
    }
    return mcp_text_result(first ? "first" : "second");
  };
  REQUIRE(served.server.add_tool(parks).is_ok());
  served.start();
  auto session = open_session(served.port);
  auto oldest = first_event_id(in_session_call(
    served.port, session, "tools/call", {{"name", "parks"}, {"arguments", {{"first", true}}}}));
  auto newest = first_event_id(in_session_call(
    served.port, session, "tools/call", {{"name", "parks"}, {"arguments", {{"first", false}}}}));
  CHECK(eventually(*first_cancelled));
  CHECK(resume(served.port, session, oldest).status == 400);
  release->set_value();
  auto rest = resume(served.port, session, newest).events();
  REQUIRE(rest.size() == 1);
  CHECK(rest[0]["result"]["content"][0]["text"] == "second");
}

TEST_CASE("a 2026-07-28 stream carries neither a priming event nor event ids") {
  mcp_served served;
  mcp_tool chatty;
  chatty.name = "chatty";
  chatty.handler = [](const json&, mcp_call_context& ctx) -> mcp_outcome {
    ctx.progress(1, 2);
    ctx.close_stream(); // nothing to resume at 2026-07-28: no effect
    return mcp_text_result("done");
  };
  REQUIRE(served.server.add_tool(chatty).is_ok());
  served.start();
  json meta = modern_meta();
  meta["progressToken"] = "p";
  auto answer = modern(served.port, "tools/call", {{"name", "chatty"}, {"_meta", meta}});
  auto events = answer.sse_events();
  REQUIRE(events.size() == 2);
  for (const auto& event : events) {
    CHECK_FALSE(event.has_id);
    CHECK_FALSE(event.data.empty());
  }
  CHECK(json::parse(events[1].data)["result"]["content"][0]["text"] == "done");
}
