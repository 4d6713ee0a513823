// libFuzzer target for the transport parsers (transport/sse_parser,
// transport/jsonrpc), built with clang by tests/fuzz/CMakeLists.txt.
//
// Each input is fed to an SSE parser whole and, to a second parser, in two
// chunks split at a byte derived from the input; the first byte also picks
// small or default limits. Besides "no crash, no sanitizer report", it
// aborts when:
// - the two parsers disagree (events, comments, last event ID, retry, status);
// - a parser holds more memory than its limits allow;
// - parse_jsonrpc (run on the whole input and on each event's data) accepts
//   a text nlohmann refuses, or returns raw member text that is not one
//   well-formed JSON value, or an id that does not survive a rebuilt message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "transport/jsonrpc.hpp"
#include "transport/sse_parser.hpp"

namespace {

void check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "transport_fuzz: property violated: %s\n", what);
    std::abort();
  }
}

struct sse_run {
  std::vector<voxos::sse_event> events;
  std::vector<std::string> comments;
  std::string last_event_id;
  std::optional<uint32_t> retry_ms;
  bool ok = true;
  std::string error;
};

bool same_events(const std::vector<voxos::sse_event>& left,
                 const std::vector<voxos::sse_event>& right) {
  if (left.size() != right.size())
    return false;
  for (std::size_t event_idx = 0; event_idx < left.size(); ++event_idx) {
    const auto& one = left[event_idx];
    const auto& other = right[event_idx];
    if (one.event != other.event || one.data != other.data || one.id != other.id
        || one.has_id != other.has_id || one.retry_ms != other.retry_ms)
      return false;
  }
  return true;
}

sse_run run_sse(const std::vector<std::string_view>& chunks, voxos::sse_limits limits) {
  sse_run run;
  voxos::sse_parser parser{
    [&](voxos::sse_event&& event) { run.events.push_back(std::move(event)); },
    [&](std::string_view text) { run.comments.emplace_back(text); }, limits};
  std::size_t bound = limits.max_event_bytes + 4 * limits.max_line_bytes + 256;
  for (auto chunk : chunks) {
    auto fed = parser.feed(chunk);
    check(parser.buffered_bytes() <= bound, "SSE parser memory within its limits");
    if (!fed.is_ok()) {
      check(fed.code() == voxos::errc::body_too_large, "SSE errors are body_too_large");
      run.ok = false;
      run.error = fed.message();
      break;
    }
  }
  run.last_event_id = parser.last_event_id();
  run.retry_ms = parser.reconnection_time_ms();
  return run;
}

bool well_formed(std::string_view text) {
  return nlohmann::json::accept(text.begin(), text.end());
}

void check_id_round_trip(const voxos::jsonrpc_id& id) {
  auto built = voxos::make_jsonrpc_response(id, nlohmann::json::object());
  if (!built.is_ok())
    return; // a string id that is not UTF-8 cannot be written back
  auto reparsed = voxos::parse_jsonrpc(*built);
  check(reparsed.is_ok(), "a rebuilt response parses");
  const auto* response = std::get_if<voxos::jsonrpc_response>(&*reparsed);
  check(response != nullptr && response->id == id, "an id survives a rebuilt response");
}

void fuzz_jsonrpc(std::string_view text) {
  auto parsed = voxos::parse_jsonrpc(text);
  if (!parsed.is_ok()) {
    check(parsed.error().code() == voxos::errc::bad_json, "JSON-RPC errors are bad_json");
    return;
  }
  check(well_formed(text), "an accepted message is well-formed JSON for nlohmann too");
  if (const auto* response = std::get_if<voxos::jsonrpc_response>(&*parsed)) {
    check(well_formed(response->result), "raw result is one JSON value");
    check_id_round_trip(response->id);
  } else if (const auto* error = std::get_if<voxos::jsonrpc_error_response>(&*parsed)) {
    check(!error->data || well_formed(*error->data), "raw error data is one JSON value");
    if (error->id)
      check_id_round_trip(*error->id);
  } else if (const auto* request = std::get_if<voxos::jsonrpc_request>(&*parsed)) {
    check(!request->params || well_formed(*request->params), "raw params are one JSON value");
    check(!request->params || request->params->front() == '{' || request->params->front() == '[',
          "request params are an object or an array");
    check_id_round_trip(request->id);
  } else if (const auto* notification = std::get_if<voxos::jsonrpc_notification>(&*parsed)) {
    check(!notification->params || well_formed(*notification->params),
          "raw params are one JSON value");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::string_view input{reinterpret_cast<const char*>(data), size};

  // The first byte picks the limits: odd means small ones, so that the
  // bounds are reached by short inputs.
  voxos::sse_limits limits;
  if (size > 0 && (data[0] & 1) != 0) {
    limits.max_line_bytes = 8 + data[0] % 64;
    limits.max_event_bytes = 16 + (size > 1 ? data[1] : 0);
  }
  // The split point comes from the last two bytes.
  std::size_t split = 0;
  if (size > 0)
    split = (data[size - 1] * 256u + (size > 1 ? data[size - 2] : 0u)) % (size + 1);

  auto whole = run_sse({input}, limits);
  auto halves = run_sse({input.substr(0, split), input.substr(split)}, limits);
  check(same_events(whole.events, halves.events), "split feeds give the same events");
  check(whole.comments == halves.comments, "split feeds give the same comments");
  check(whole.last_event_id == halves.last_event_id, "split feeds give the same last event ID");
  check(whole.retry_ms == halves.retry_ms, "split feeds give the same retry");
  check(whole.ok == halves.ok && whole.error == halves.error, "split feeds give the same status");

  fuzz_jsonrpc(input);
  for (const auto& event : whole.events)
    fuzz_jsonrpc(event.data);
  return 0;
}
