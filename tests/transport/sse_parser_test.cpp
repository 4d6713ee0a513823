#include "transport/sse_parser.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using voxos::errc;
using voxos::sse_event;
using voxos::sse_limits;
using voxos::sse_parser;

namespace {

/// A parser wired to vectors that record what it reports.
struct recorder {
  std::vector<sse_event> events;
  std::vector<std::string> comments;
  sse_parser parser;

  explicit recorder(sse_limits limits = {})
      : parser([this](sse_event&& event) { events.push_back(std::move(event)); },
               [this](std::string_view text) { comments.emplace_back(text); }, limits) {}

  /// Feeds `chunk`, requiring success.
  void feed(std::string_view chunk) { REQUIRE(parser.feed(chunk).is_ok()); }
};

/// Everything observable after parsing, to compare runs.
struct outcome {
  std::vector<sse_event> events;
  std::vector<std::string> comments;
  std::string last_event_id;
  std::optional<uint32_t> retry_ms;
  bool ok = true;
};

bool same_event(const sse_event& left, const sse_event& right) {
  return left.event == right.event && left.data == right.data && left.id == right.id
         && left.has_id == right.has_id && left.retry_ms == right.retry_ms;
}

bool same_outcome(const outcome& left, const outcome& right) {
  if (left.events.size() != right.events.size() || left.comments != right.comments
      || left.last_event_id != right.last_event_id || left.retry_ms != right.retry_ms
      || left.ok != right.ok)
    return false;
  for (std::size_t event_idx = 0; event_idx < left.events.size(); ++event_idx)
    if (!same_event(left.events[event_idx], right.events[event_idx]))
      return false;
  return true;
}

/// Parses `stream` cut at the given offsets (ascending, each <= size).
outcome parse_split(std::string_view stream, const std::vector<std::size_t>& cuts) {
  recorder rec;
  outcome out;
  std::size_t from = 0;
  for (std::size_t cut : cuts) {
    out.ok = out.ok && rec.parser.feed(stream.substr(from, cut - from)).is_ok();
    from = cut;
  }
  out.ok = out.ok && rec.parser.feed(stream.substr(from)).is_ok();
  out.events = std::move(rec.events);
  out.comments = std::move(rec.comments);
  out.last_event_id = rec.parser.last_event_id();
  out.retry_ms = rec.parser.reconnection_time_ms();
  return out;
}

/// A stream that uses every rule: BOM, all three line ends, comments, retry,
/// ids (one with a NUL), multi-line data, a data-less block, an empty data
/// event, an unknown field and an unfinished event at the end.
const std::string mixed_stream =
  std::string{"\xEF\xBB\xBF"} + ": welcome\r\n" + "retry: 1500\r\n" + "id: 1\r\n" + "data:\r\n"
  + "\r\n" + "event: message\n"
  + "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n" + "\n" + "id: 2\r"
  + "data:first\r" + "data:  second\r\n" + "data\r" + ": keepalive inside an event\n"
  + "unknown: field\n" + "\r" + "id: 3" + std::string(1, '\0') + "x\n" + "retry: 2x\n"
  + "data: after a NUL id\n" + "\n" + "event: ping\r\n" + "\r\n" + "id\n" + "retry: 700\n"
  + "data: id reset\r\n" + "\r\r\n" + "data: never dispatched\n";

} // namespace

TEST_CASE("a data field followed by a blank line dispatches one message event") {
  recorder rec;
  rec.feed("data: hello\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].event == "message");
  CHECK(rec.events[0].data == "hello");
  CHECK(rec.events[0].id.empty());
  CHECK_FALSE(rec.events[0].has_id);
  CHECK_FALSE(rec.events[0].retry_ms.has_value());
}

TEST_CASE("data lines are joined with a line feed and a bare data line adds an empty line") {
  recorder rec;
  rec.feed("data: a\ndata: b\ndata\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "a\nb\n");
}

TEST_CASE("only one space after the colon is dropped") {
  recorder rec;
  rec.feed("data:  two spaces\n\ndata:none\n\ndata:\t tab\n\n");
  REQUIRE(rec.events.size() == 3);
  CHECK(rec.events[0].data == " two spaces");
  CHECK(rec.events[1].data == "none");
  CHECK(rec.events[2].data == "\t tab");
}

TEST_CASE("the event field sets the type of one event only") {
  recorder rec;
  rec.feed("event: endpoint\ndata: /messages?session=1\n\ndata: next\n\n");
  REQUIRE(rec.events.size() == 2);
  CHECK(rec.events[0].event == "endpoint");
  CHECK(rec.events[0].data == "/messages?session=1");
  CHECK(rec.events[1].event == "message");
}

TEST_CASE("a block without data dispatches nothing but still sets the last event id") {
  recorder rec;
  rec.feed("id: 7\n\nevent: ping\n\n");
  CHECK(rec.events.empty());
  CHECK(rec.parser.last_event_id() == "7");
  // The type of the data-less block does not leak into the next event.
  rec.feed("data: x\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].event == "message");
  CHECK(rec.events[0].id == "7");
  CHECK_FALSE(rec.events[0].has_id);
}

TEST_CASE("an empty data field dispatches a priming event with empty data and its id") {
  recorder rec;
  rec.feed("id: stream-1/0\ndata:\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data.empty());
  CHECK(rec.events[0].id == "stream-1/0");
  CHECK(rec.events[0].has_id);
}

TEST_CASE("the last event id carries over until an empty id field resets it") {
  recorder rec;
  rec.feed("id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\n");
  REQUIRE(rec.events.size() == 3);
  CHECK(rec.events[0].id == "5");
  CHECK(rec.events[0].has_id);
  CHECK(rec.events[1].id == "5");
  CHECK_FALSE(rec.events[1].has_id);
  CHECK(rec.events[2].id.empty());
  CHECK(rec.events[2].has_id);
  CHECK(rec.parser.last_event_id().empty());
}

TEST_CASE("an id field containing NUL is ignored") {
  recorder rec;
  rec.feed(std::string{"id: 3\ndata: a\n\nid: 4"} + '\0' + "x\ndata: b\n\n");
  REQUIRE(rec.events.size() == 2);
  CHECK(rec.events[1].id == "3");
  CHECK_FALSE(rec.events[1].has_id);
  CHECK(rec.parser.last_event_id() == "3");
}

TEST_CASE("the last event id moves only when a block is dispatched") {
  recorder rec;
  rec.feed("id: 1\ndata: a\n\nid: 2\ndata: b\n");
  CHECK(rec.parser.last_event_id() == "1");
  rec.feed("\n");
  CHECK(rec.parser.last_event_id() == "2");
}

TEST_CASE("retry is taken only when its value is all ASCII digits within 32 bits") {
  recorder rec;
  rec.feed("retry: 2500\n\n");
  CHECK(rec.events.empty());
  CHECK(rec.parser.reconnection_time_ms() == 2500u);
  for (const char* ignored :
       {"retry: 25x\n", "retry: -1\n", "retry: 1.5\n", "retry:  100\n", "retry:\n", "retry\n",
        "retry: 4294967296\n", "retry: 99999999999999999999999\n", "retry: \xD9\xA3\n"}) {
    CAPTURE(ignored);
    rec.feed(ignored);
    CHECK(rec.parser.reconnection_time_ms() == 2500u);
  }
  rec.feed("retry: 4294967295\n");
  CHECK(rec.parser.reconnection_time_ms() == 4294967295u);
  rec.feed("retry:0\n");
  CHECK(rec.parser.reconnection_time_ms() == 0u);
}

TEST_CASE("an event carries the retry of its own block only") {
  recorder rec;
  rec.feed("retry: 300\ndata: a\n\ndata: b\n\n");
  REQUIRE(rec.events.size() == 2);
  CHECK(rec.events[0].retry_ms == 300u);
  CHECK_FALSE(rec.events[1].retry_ms.has_value());
  CHECK(rec.parser.reconnection_time_ms() == 300u);
}

TEST_CASE("comments are reported and counted but never dispatch or break an event") {
  recorder rec;
  rec.feed(": ping\n\n:\ndata: a\n: keepalive\ndata: b\n\n");
  CHECK(rec.comments == std::vector<std::string>{" ping", "", " keepalive"});
  CHECK(rec.parser.comment_count() == 3u);
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "a\nb");
}

TEST_CASE("unknown and differently cased fields are ignored") {
  recorder rec;
  rec.feed("foo: bar\nData: y\nEVENT: x\ndata: kept\n\nDATA: z\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "kept");
  CHECK(rec.events[0].event == "message");
}

TEST_CASE("lines may end with CRLF or LF or CR in any mix") {
  recorder rec;
  rec.feed("data: a\r\ndata: b\rdata: c\n\r\nevent: e\rdata: d\r\rdata: f\r\r\ndata: g\n\n");
  REQUIRE(rec.events.size() == 4);
  CHECK(rec.events[0].data == "a\nb\nc");
  CHECK(rec.events[1].event == "e");
  CHECK(rec.events[1].data == "d");
  // CR ends the line, the next CR is a blank line, and the LF after it
  // belongs to that CR: one event, then "g".
  CHECK(rec.events[2].data == "f");
  CHECK(rec.events[3].data == "g");
}

TEST_CASE("a CRLF split across two feeds is one line end") {
  recorder rec;
  rec.feed("data: a\r");
  rec.feed("\n");
  CHECK(rec.events.empty());
  rec.feed("\r");
  rec.feed("\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "a");
  rec.feed("data: b\r");
  rec.feed("\r");
  CHECK(rec.events.size() == 2);
}

TEST_CASE("one leading BOM is dropped even when split across feeds") {
  recorder whole;
  whole.feed("\xEF\xBB\xBF"
             "data: a\n\n");
  REQUIRE(whole.events.size() == 1);
  CHECK(whole.events[0].data == "a");

  recorder split;
  split.feed("\xEF");
  split.feed("\xBB");
  split.feed("\xBF"
             "da");
  split.feed("ta: a\n\n");
  REQUIRE(split.events.size() == 1);
  CHECK(split.events[0].data == "a");
}

TEST_CASE("a second BOM or a BOM after the start is line content") {
  recorder rec;
  rec.feed("\xEF\xBB\xBF\xEF\xBB\xBF"
           "data: a\n\n");
  CHECK(rec.events.empty()); // the field is named "\xEF\xBB\xBFdata"
  rec.feed("\xEF\xBB\xBF"
           "data: b\n\n");
  CHECK(rec.events.empty());
}

TEST_CASE("a partial BOM at the start is line content and parsing goes on") {
  recorder rec;
  rec.feed("\xEF");
  rec.feed("\xBB"
           "\ndata: x\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "x");

  recorder colon;
  colon.feed("\xEF:x\ndata: y\n\n");
  CHECK(colon.comments.empty()); // "\xEF" names a field: this is no comment
  REQUIRE(colon.events.size() == 1);
  CHECK(colon.events[0].data == "y");
}

TEST_CASE("an unfinished event is never dispatched") {
  recorder rec;
  rec.feed("data: a\n");
  rec.feed("data: b");
  CHECK(rec.events.empty());
}

TEST_CASE("restarting the stream drops the partial event and keeps the last event id") {
  recorder rec;
  rec.feed("retry: 900\nid: 9\ndata: a\n\nid: 10\ndata: partial\n");
  rec.parser.restart_stream();
  rec.feed("\xEF\xBB\xBF"
           "data: b\n\n");
  REQUIRE(rec.events.size() == 2);
  CHECK(rec.events[1].data == "b");
  CHECK(rec.events[1].id == "9");
  CHECK_FALSE(rec.events[1].has_id);
  CHECK(rec.parser.last_event_id() == "9");
  CHECK(rec.parser.reconnection_time_ms() == 900u);
}

TEST_CASE("every split of a multi-event stream gives the same result as one feed") {
  auto whole = parse_split(mixed_stream, {});
  REQUIRE(whole.ok);
  REQUIRE(whole.events.size() == 5);
  CHECK(whole.events[0].data.empty());
  CHECK(whole.events[0].id == "1");
  CHECK(whole.events[0].retry_ms == 1500u);
  CHECK(whole.events[1].data == "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}");
  CHECK(whole.events[1].id == "1");
  CHECK(whole.events[2].data == "first\n second\n");
  CHECK(whole.events[2].id == "2");
  CHECK(whole.events[3].data == "after a NUL id");
  CHECK(whole.events[3].id == "2");
  CHECK(whole.events[4].data == "id reset");
  CHECK(whole.events[4].id.empty());
  CHECK(whole.events[4].retry_ms == 700u);
  CHECK(whole.comments == std::vector<std::string>{" welcome", " keepalive inside an event"});
  CHECK(whole.last_event_id.empty());
  CHECK(whole.retry_ms == 700u);

  std::size_t size = mixed_stream.size();
  std::vector<std::size_t> bytewise;
  for (std::size_t cut = 0; cut <= size; ++cut)
    bytewise.push_back(cut);
  CHECK(same_outcome(parse_split(mixed_stream, bytewise), whole));

  std::size_t mismatches = 0;
  for (std::size_t first = 0; first <= size; ++first)
    for (std::size_t second = first; second <= size; ++second)
      if (!same_outcome(parse_split(mixed_stream, {first, second}), whole))
        ++mismatches;
  CHECK(mismatches == 0);
}

TEST_CASE("a 100 MB data line fed in 4 KiB chunks fails at the event limit with memory bounded") {
  sse_limits limits;
  limits.max_line_bytes = 1024;
  limits.max_event_bytes = std::size_t{64} * 1024;
  recorder rec{limits};
  rec.feed("data: ");
  std::string chunk(4096, 'x');
  std::size_t fed = 0;
  std::size_t peak = 0;
  voxos::status last = voxos::status::ok();
  while (fed < std::size_t{100} * 1024 * 1024) {
    last = rec.parser.feed(chunk);
    peak = std::max(peak, rec.parser.buffered_bytes());
    if (!last.is_ok())
      break;
    fed += chunk.size();
  }
  REQUIRE_FALSE(last.is_ok());
  CHECK(last.code() == errc::body_too_large);
  CHECK(last.message() == "event stream event with more than 65536 bytes of data");
  CHECK(fed <= limits.max_event_bytes);
  CHECK(fed + chunk.size() > limits.max_event_bytes);
  CHECK(peak <= limits.max_event_bytes + 4 * limits.max_line_bytes);
  CHECK(rec.parser.stopped());
  CHECK(rec.events.empty());
}

TEST_CASE("with default limits a 9 MiB data line is refused and an 8 MiB message passes") {
  recorder rec;
  std::string chunk(4096, 'y');
  rec.feed("data: ");
  std::size_t data_bytes = std::size_t{8} * 1024 * 1024 - 1; // plus its LF: exactly the limit
  for (std::size_t fed = 0; fed < data_bytes; fed += chunk.size())
    rec.feed(std::string_view{chunk}.substr(0, std::min(chunk.size(), data_bytes - fed)));
  rec.feed("\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data.size() == data_bytes);

  recorder big;
  big.feed("data: ");
  voxos::status last = voxos::status::ok();
  std::size_t peak = 0;
  for (std::size_t fed = 0; fed < std::size_t{9} * 1024 * 1024 && last.is_ok();
       fed += chunk.size()) {
    last = big.parser.feed(chunk);
    peak = std::max(peak, big.parser.buffered_bytes());
  }
  REQUIRE_FALSE(last.is_ok());
  CHECK(last.code() == errc::body_too_large);
  CHECK(peak <= sse_limits{}.max_event_bytes + 1024);
}

TEST_CASE("a 100 MB comment or field line fed in 4 KiB chunks fails at the line limit") {
  std::string chunk(4096, 'z');
  for (const char* start : {": ", "event: ", "id: ", "retry: 1", "unknown: ", "nocolon"}) {
    CAPTURE(start);
    recorder rec;
    rec.feed(start);
    std::size_t fed = 0;
    std::size_t peak = 0;
    voxos::status last = voxos::status::ok();
    while (fed < std::size_t{100} * 1024 * 1024) {
      last = rec.parser.feed(chunk);
      peak = std::max(peak, rec.parser.buffered_bytes());
      if (!last.is_ok())
        break;
      fed += chunk.size();
    }
    REQUIRE_FALSE(last.is_ok());
    CHECK(last.code() == errc::body_too_large);
    CHECK(last.message() == "event stream line longer than 1048576 bytes");
    CHECK(fed <= sse_limits{}.max_line_bytes);
    CHECK(fed + chunk.size() + std::string_view{start}.size() > sse_limits{}.max_line_bytes);
    CHECK(peak <= sse_limits{}.max_line_bytes + 1024);
    CHECK(rec.comments.empty());
  }
}

TEST_CASE("lines and events exactly at the limits are accepted") {
  sse_limits limits;
  limits.max_line_bytes = 16;
  limits.max_event_bytes = 8;
  recorder rec{limits};
  rec.feed(":" + std::string(15, 'c') + "\n");      // 16 bytes
  rec.feed("event:" + std::string(10, 'e') + "\n"); // 16 bytes
  rec.feed("data: 123\ndata: 45\n\n");              // "123\n45\n": 7 bytes
  rec.feed("data: 1234567\n\n");                    // 8 bytes with its LF
  REQUIRE(rec.events.size() == 2);
  CHECK(rec.events[0].event == std::string(10, 'e'));
  CHECK(rec.events[1].data == "1234567");

  recorder line{limits};
  CHECK(line.parser.feed(":" + std::string(16, 'c') + "\n").code() == errc::body_too_large);
  recorder event{limits};
  CHECK(event.parser.feed("data: 12345678\n").code() == errc::body_too_large);
  recorder joined{limits};
  CHECK(joined.parser.feed("data: 1234\ndata: 567\n").code() == errc::body_too_large);
}

TEST_CASE("a stopped parser keeps failing and emits nothing until restarted") {
  sse_limits limits;
  limits.max_line_bytes = 8;
  recorder rec{limits};
  auto first = rec.parser.feed(": a long comment\n");
  REQUIRE_FALSE(first.is_ok());
  auto again = rec.parser.feed("data: x\n\n");
  REQUIRE_FALSE(again.is_ok());
  CHECK(again.code() == first.code());
  CHECK(again.message() == first.message());
  CHECK(rec.events.empty());
  rec.parser.restart_stream();
  CHECK_FALSE(rec.parser.stopped());
  rec.feed("data: x\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "x");
}
