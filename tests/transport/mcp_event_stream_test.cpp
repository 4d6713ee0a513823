// transport/mcp_event_stream: the numbered, bounded, resumable streams of a
// 2025-11-25 session, without HTTP.
#include "transport/mcp_event_stream.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "transport/sse_parser.hpp"

using namespace voxos;

namespace {

constexpr std::chrono::milliseconds no_wait{0};

std::vector<std::string> messages_of(const mcp_event_stream::batch& batch) {
  std::vector<std::string> out;
  for (const auto& event : batch.events)
    out.push_back(event.message);
  return out;
}

} // namespace

TEST_CASE("event ids are <stream>-<seq> and nothing else parses back as one") {
  mcp_event_stream stream{7, 4};
  CHECK(stream.event_id(0) == "7-0");
  auto position = mcp_parse_event_id("7-12");
  REQUIRE(position);
  CHECK(position->stream == 7);
  CHECK(position->seq == 12);
  CHECK(mcp_parse_event_id("0-0"));
  for (const char* bogus :
       {"", "7", "7-", "-7", "a-1", "1-b", "07-1", "1-01", "1-2-3", "+1-2", "1-+2", " 1-2", "1-2 ",
        "18446744073709551616-1", "1-99999999999999999999"})
    CHECK_MESSAGE(!mcp_parse_event_id(bogus), bogus);
}

TEST_CASE("a priming event carries the id and the retry and dispatches empty data") {
  std::vector<sse_event> seen;
  sse_parser parser{[&seen](sse_event&& event) { seen.push_back(std::move(event)); }};
  REQUIRE(parser.feed(mcp_priming_event_text("3-0", std::chrono::milliseconds(1500))).is_ok());
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].data.empty());
  CHECK(seen[0].id == "3-0");
  CHECK(seen[0].retry_ms == 1500u);
}

TEST_CASE("a reader gets the events after its cursor, and the last event ends the stream") {
  mcp_event_stream stream{1, 8};
  auto reader = stream.attach();
  REQUIRE(stream.send("a"));
  REQUIRE(stream.send("b"));
  auto first = stream.read(reader, 0, no_wait);
  CHECK(messages_of(first) == std::vector<std::string>{"a", "b"});
  CHECK(first.events.back().seq == 2);
  CHECK_FALSE(first.ended);
  CHECK_FALSE(first.cut);
  REQUIRE(stream.finish("response"));
  CHECK_FALSE(stream.send("late")); // nothing follows the response
  auto rest = stream.read(reader, 2, no_wait);
  CHECK(messages_of(rest) == std::vector<std::string>{"response"});
  CHECK(rest.ended);
  // Read to its end already: nothing more, and still ended.
  auto after = stream.read(reader, 3, no_wait);
  CHECK(after.events.empty());
  CHECK(after.ended);
}

TEST_CASE("only the last `replay` events are kept: resuming before them is refused and a "
          "reader behind them is cut off") {
  mcp_event_stream stream{1, 2};
  auto reader = stream.attach();
  for (const char* message : {"a", "b", "c", "d"})
    REQUIRE(stream.send(message));
  CHECK(stream.can_resume(0) == mcp_event_stream::resume_refusal::no_longer_kept);
  CHECK(stream.can_resume(1) == mcp_event_stream::resume_refusal::no_longer_kept);
  CHECK(stream.can_resume(2) == mcp_event_stream::resume_refusal::none);
  CHECK(stream.can_resume(4) == mcp_event_stream::resume_refusal::none);
  CHECK(stream.read(reader, 0, no_wait).cut);
  CHECK(messages_of(stream.read(reader, 2, no_wait)) == std::vector<std::string>{"c", "d"});
}

TEST_CASE("a resume after an event not yet sent is refused as unknown") {
  mcp_event_stream stream{1, 4};
  CHECK(stream.can_resume(0) == mcp_event_stream::resume_refusal::none);
  CHECK(stream.can_resume(1) == mcp_event_stream::resume_refusal::unknown_event);
  REQUIRE(stream.send("a"));
  CHECK(stream.can_resume(1) == mcp_event_stream::resume_refusal::none);
  CHECK(stream.can_resume(2) == mcp_event_stream::resume_refusal::unknown_event);
}

TEST_CASE("a finished stream keeps its response however many events came before it") {
  mcp_event_stream stream{1, 1};
  REQUIRE(stream.send("a"));
  REQUIRE(stream.finish("response"));
  CHECK(stream.can_resume(1) == mcp_event_stream::resume_refusal::none);
  auto reader = stream.attach();
  auto batch = stream.read(reader, 1, no_wait);
  CHECK(messages_of(batch) == std::vector<std::string>{"response"});
  CHECK(batch.ended);
}

TEST_CASE("a reader that resumes takes the stream over and the reader before is cut off") {
  mcp_event_stream stream{1, 8};
  auto first = stream.attach();
  REQUIRE(stream.send("a"));
  auto second = stream.attach();
  CHECK(stream.read(first, 0, no_wait).cut);
  CHECK(messages_of(stream.read(second, 0, no_wait)) == std::vector<std::string>{"a"});
  stream.detach(first); // the one before leaving does not unseat the one reading
  CHECK(stream.has_reader());
  stream.detach(second);
  CHECK_FALSE(stream.has_reader());
}

TEST_CASE("a closed stream takes nothing more and cuts its reader off") {
  mcp_event_stream stream{1, 8};
  auto reader = stream.attach();
  stream.close();
  CHECK(stream.closed());
  CHECK_FALSE(stream.send("a"));
  CHECK_FALSE(stream.finish("response"));
  CHECK(stream.read(reader, 0, no_wait).cut);
}
