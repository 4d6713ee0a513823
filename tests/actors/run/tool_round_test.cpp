// The failure rules and wave grouping of one tool round (tool_round.hpp).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "actors/run/tool_fixtures.hpp"
#include "actors/run/tool_round.hpp"
#include "transport/mcp_http.hpp"

namespace voxos {

namespace {

using nlohmann::json;
using test::definition;
using test::tool_world;

constexpr const char* forecast_schema = R"({
  "type": "object",
  "properties": {
    "location": {"type": "object", "properties": {"address": {"type": "string"}},
                 "required": ["address"], "additionalProperties": false},
    "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}
  },
  "required": ["location", "date"]
})";

/// A world with one server: read-only get_forecast and echo, mutating
/// record_note, and set_status, not read-only but idempotent.
struct round_world {
  tool_world world;
  tool_view view;
  run_memory memory;
  round_limits limits;
  adapter_map adapters;

  round_world() {
    world.server("s_1", "Weather");
    world.allow_mcp("s_1", definition("get_forecast", "Forecast.", forecast_schema), {}, true);
    world.allow_mcp("s_1", definition("echo"), {}, true);
    world.allow_mcp("s_1", definition("record_note"));
    auto idempotent = definition("set_status");
    idempotent.idempotent_hint = true;
    world.allow_mcp("s_1", idempotent);
    view = world.view();
  }

  tool_round decide(std::vector<tool_call> calls) {
    auto made = make_round(std::move(calls), limits);
    REQUIRE(made.is_ok());
    auto round = std::move(*made);
    decide_round(round, view, nullptr, world.snapshot, adapters, memory, limits);
    return round;
  }

  /// Every wave of the round, each call settled with `answer` as it is planned.
  std::vector<std::vector<std::size_t>> drain(tool_round& round,
                                              const result<std::string>& answer) {
    std::vector<std::vector<std::size_t>> waves;
    for (auto wave = next_wave(round, limits); !wave.empty(); wave = next_wave(round, limits)) {
      for (auto call_idx : wave)
        settle_call(round.calls[call_idx], round, memory, limits, answer);
      waves.push_back(wave);
    }
    return waves;
  }
};

tool_call forecast(std::string id, std::string date, std::string address = "Main St 1") {
  return {std::move(id), "get_forecast",
          json{{"location", {{"address", address}}}, {"date", date}}.dump()};
}

const result<std::string> ok_result{std::string{R"({"content":[{"type":"text","text":"ok"}]})"}};

} // namespace

TEST_CASE("a seven-day forecast is one wave, answered in call order") {
  round_world w;
  std::vector<tool_call> calls;
  for (int day = 1; day <= 7; ++day)
    calls.push_back(forecast("c" + std::to_string(day), "2026-12-0" + std::to_string(day)));
  auto round = w.decide(calls);
  auto waves = w.drain(round, ok_result);
  REQUIRE(waves.size() == 1);
  CHECK(waves[0] == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6});
  auto outputs = round_outputs(round);
  REQUIRE(outputs.size() == 7);
  for (std::size_t idx = 0; idx < outputs.size(); ++idx) {
    CHECK(outputs[idx].call_id == "c" + std::to_string(idx + 1));
    CHECK(outputs[idx].status == "ok");
  }
}

TEST_CASE("read-only calls go in waves of at most eight") {
  round_world w;
  std::vector<tool_call> calls;
  for (int n = 0; n < 17; ++n)
    calls.push_back({"c" + std::to_string(n), "echo", R"({"q":"x"})"});
  auto round = w.decide(calls);
  auto waves = w.drain(round, ok_result);
  REQUIRE(waves.size() == 3);
  CHECK(waves[0].size() == 8);
  CHECK(waves[1].size() == 8);
  CHECK(waves[2].size() == 1);
}

TEST_CASE("a call that is not read-only runs alone, in call order") {
  round_world w;
  auto round = w.decide({{"a", "echo", R"({"q":"1"})"},
                         {"b", "echo", R"({"q":"2"})"},
                         {"c", "record_note", R"({"q":"n"})"},
                         {"d", "record_note", R"({"q":"m"})"},
                         {"e", "echo", R"({"q":"3"})"}});
  auto waves = w.drain(round, ok_result);
  REQUIRE(waves.size() == 4);
  CHECK(waves[0] == std::vector<std::size_t>{0, 1});
  CHECK(waves[1] == std::vector<std::size_t>{2});
  CHECK(waves[2] == std::vector<std::size_t>{3});
  CHECK(waves[3] == std::vector<std::size_t>{4});
}

TEST_CASE("invalid arguments are not sent and skip later calls to that tool in the response") {
  round_world w;
  auto round = w.decide({forecast("a", "tomorrow"),
                         forecast("b", "2026-12-03"),
                         {"c", "echo", R"({"q":"still sent"})"}});
  CHECK(round.calls[0].status == call_status::invalid_arguments);
  CHECK(round.calls[1].status == call_status::skipped);
  CHECK(round.calls[1].reason == "earlier_invalid_call");
  CHECK(round.calls[2].status == call_status::pending);
  auto waves = w.drain(round, ok_result);
  REQUIRE(waves.size() == 1);
  CHECK(waves[0] == std::vector<std::size_t>{2});
  auto out = json::parse(round.calls[0].output);
  CHECK(out["usable_result"] == false);
  CHECK(out["message"].get<std::string>().find("Correct one request") != std::string::npos);
  REQUIRE(out["problems"].size() == 1);
  CHECK(out["problems"][0]["path"] == "/date");
}

TEST_CASE("validation errors name paths and constraints, never the rejected values") {
  round_world w;
  auto round = w.decide(
    {{"a", "get_forecast",
      R"({"location":{"address":"Secret Lane 99","extra":"hunter2"},"date":"not-a-date-xyzzy"})"}});
  REQUIRE(round.calls[0].status == call_status::invalid_arguments);
  const auto& text = round.calls[0].output;
  CHECK(text.find("Secret Lane") == std::string::npos);
  CHECK(text.find("hunter2") == std::string::npos);
  CHECK(text.find("xyzzy") == std::string::npos);
  CHECK(text.find("/date") != std::string::npos);
}

TEST_CASE("an instance path stops before a member name the schema does not declare") {
  round_world w;
  w.world.allow_mcp("s_1", definition("label", "Labels.", R"({
    "type": "object",
    "properties": {
      "labels": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
      "items": {"type": "array", "items": {"type": "object",
                "properties": {"size": {"type": "integer"}}, "additionalProperties": false}},
      "4111": {"type": "string"}
    }})"),
                    {}, true);
  w.view = w.world.view();
  auto round = w.decide({{"a", "label",
                          R"({"labels": {"sk-live-SECRET123": "v"},
          "items": [{"size": 1}, {"size": "x", "jane@example.com": 1, "4111111111111111": 2}],
          "4111": 5})"}});
  REQUIRE(round.calls[0].status == call_status::invalid_arguments);
  const auto& text = round.calls[0].output;
  CHECK(text.find("SECRET123") == std::string::npos);
  CHECK(text.find("jane@") == std::string::npos);
  CHECK(text.find("4111111111111111") == std::string::npos);
  auto output = json::parse(text);
  std::vector<std::string> paths;
  for (const auto& problem : output["problems"])
    paths.push_back(problem["path"].get<std::string>());
  // declared names and indices stay; a name the model chose is cut, with
  // what follows it
  CHECK(paths
        == std::vector<std::string>{"/labels", "/items/1/size", "/items/1", "/items/1", "/4111"});
}

TEST_CASE("the correction is bounded: after three invalid rounds the tool is not called") {
  round_world w;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto round = w.decide({forecast("a", "bad")});
    CHECK(round.calls[0].status == call_status::invalid_arguments);
  }
  auto round = w.decide({forecast("a", "2026-12-03")});
  CHECK(round.calls[0].status == call_status::skipped);
  CHECK(round.calls[0].reason == "correction_budget_spent");
  // Other tools are unaffected.
  auto other = w.decide({{"b", "echo", R"({"q":"x"})"}});
  CHECK(other.calls[0].status == call_status::pending);
}

TEST_CASE("a server 400 is an argument rejection: later waves of the tool are skipped") {
  round_world w;
  std::vector<tool_call> calls;
  for (int n = 0; n < 10; ++n)
    calls.push_back(forecast("c" + std::to_string(n), "2026-12-0" + std::to_string(n % 9 + 1),
                             "Addr " + std::to_string(n)));
  auto round = w.decide(calls);
  auto first = next_wave(round, w.limits);
  REQUIRE(first.size() == 8);
  // The first call is refused by the server; the rest of the wave finishes.
  settle_call(round.calls[first[0]], round, w.memory, w.limits, mcp_http_status_error(400, {}, ""));
  for (std::size_t idx = 1; idx < first.size(); ++idx)
    settle_call(round.calls[first[idx]], round, w.memory, w.limits, ok_result);
  CHECK(round.calls[0].status == call_status::rejected);
  CHECK(round.calls[1].status == call_status::ok);
  // The second wave of the same tool is not sent.
  CHECK(next_wave(round, w.limits).empty());
  CHECK(round.calls[8].status == call_status::skipped);
  CHECK(round.calls[8].reason == "rejected_earlier_in_round");
  CHECK(round.calls[9].status == call_status::skipped);
  auto rejected = json::parse(round.calls[0].output);
  CHECK(rejected["error"] == "rejected");
}

TEST_CASE("JSON-RPC invalid params is an argument rejection, other server errors are failures") {
  round_world w;
  auto round = w.decide({{"a", "echo", R"({"q":"1"})"}, {"b", "record_note", R"({"q":"2"})"}});
  auto wave = next_wave(round, w.limits);
  settle_call(round.calls[0], round, w.memory, w.limits, jsonrpc_error_status(-32602));
  CHECK(round.calls[0].status == call_status::rejected);
  wave = next_wave(round, w.limits);
  settle_call(round.calls[1], round, w.memory, w.limits, jsonrpc_error_status(-32603));
  CHECK(round.calls[1].status == call_status::failed);
  auto internal = json::parse(round.calls[1].output);
  CHECK(internal["error"] == "failed");
  CHECK(round.calls[1].reason == "server_error");
  auto said = internal["message"].get<std::string>();
  CHECK(said.find("the server answered with an error: server error -32603 (internal error)")
        != std::string::npos);
  CHECK(said.find("reject") == std::string::npos);
  settle_call(round.calls[1], round, w.memory, w.limits,
              status::error(errc::unavailable, "request deadline exceeded"));
  CHECK(round.calls[1].status == call_status::failed);
  CHECK(json::parse(round.calls[1].output)["usable_result"] == false);
}

TEST_CASE("a mutating call that failed after it may have reached its server says its outcome is "
          "unknown") {
  round_world w;
  auto round = w.decide({{"n", "record_note", R"({"q":"1"})"}});
  REQUIRE(next_wave(round, w.limits) == std::vector<std::size_t>{0});
  CHECK_FALSE(round.calls[0].resend_safe);
  settle_call(
    round.calls[0], round, w.memory, w.limits,
    status::error(errc::unavailable, "http request failed: connection closed before an answer"));
  CHECK(round.calls[0].status == call_status::failed);
  auto out = json::parse(round.calls[0].output);
  CHECK(out["usable_result"] == false);
  CHECK(out["outcome"] == "unknown");
  auto said = out["message"].get<std::string>();
  CHECK(said.find("The request may have reached the server: the change it asks for may or may "
                  "not have happened.")
        != std::string::npos);
  CHECK(said.find("It was not sent again.") != std::string::npos);
  CHECK(said.find("Check whether the change happened") != std::string::npos);

  // Past its deadline, the server may still be running it.
  settle_call(round.calls[0], round, w.memory, w.limits,
              status::error(errc::unavailable, "request deadline exceeded"));
  out = json::parse(round.calls[0].output);
  CHECK(out["outcome"] == "unknown");
  said = out["message"].get<std::string>();
  CHECK(said.find("Its deadline passed while the server may still have been running it: the "
                  "change it asks for may or may not have happened, or may still happen.")
        != std::string::npos);

  // A JSON-RPC error raised while it ran leaves it unknown too.
  settle_call(round.calls[0], round, w.memory, w.limits, jsonrpc_error_status(-32603));
  CHECK(json::parse(round.calls[0].output)["outcome"] == "unknown");
}

TEST_CASE("a mutating call cancelled in flight says its outcome is unknown, a read-only one not") {
  round_world w;
  const auto cancelled = status::error(errc::unavailable, "request cancelled");
  auto round = w.decide({{"n", "record_note", R"({"q":"1"})"}});
  REQUIRE(next_wave(round, w.limits) == std::vector<std::size_t>{0});
  settle_call(round.calls[0], round, w.memory, w.limits, cancelled);
  CHECK(round.calls[0].status == call_status::cancelled);
  auto out = json::parse(round.calls[0].output);
  CHECK(out["outcome"] == "unknown");
  auto said = out["message"].get<std::string>();
  CHECK(said.find("the run was cancelled before it completed.") != std::string::npos);
  CHECK(said.find("may or may not have happened, or may still happen.") != std::string::npos);
  CHECK(said.find("It was not sent again.") != std::string::npos);

  auto reads = w.decide({{"e", "echo", R"({"q":"1"})"}});
  REQUIRE(next_wave(reads, w.limits) == std::vector<std::size_t>{0});
  settle_call(reads.calls[0], reads, w.memory, w.limits, cancelled);
  CHECK(reads.calls[0].status == call_status::cancelled);
  CHECK_FALSE(json::parse(reads.calls[0].output).contains("outcome"));
}

TEST_CASE("a mutating call refused before it ran, or never sent, is not said to be unknown") {
  round_world w;
  const status refusals[] = {
    mcp_http_status_error(401, {}, ""),
    mcp_http_status_error(404, {}, ""),
    status::error(errc::not_found, "session not recognised: server answered HTTP 400"),
    jsonrpc_error_status(-32601),
    status::error(errc::unavailable, "http request failed: could not connect: Connection refused"),
    status::error(errc::unavailable, "too many requests waiting"),
  };
  for (const auto& refusal : refusals) {
    CAPTURE(refusal.message());
    auto round = w.decide({{"n", "record_note", R"({"q":"1"})"}});
    REQUIRE(next_wave(round, w.limits) == std::vector<std::size_t>{0});
    settle_call(round.calls[0], round, w.memory, w.limits, refusal);
    CHECK(round.calls[0].status == call_status::failed);
    auto out = json::parse(round.calls[0].output);
    CHECK_FALSE(out.contains("outcome"));
    CHECK(out["message"].get<std::string>().find("may or may not") == std::string::npos);
  }
}

TEST_CASE("read-only and idempotent calls may be sent again, and their failures are plain") {
  round_world w;
  auto round = w.decide({{"e", "echo", R"({"q":"1"})"}, {"s", "set_status", R"({"q":"open"})"}});
  CHECK(round.calls[0].resend_safe);
  CHECK(round.calls[1].resend_safe);
  CHECK_FALSE(round.calls[1].read_only); // (so it runs alone)
  const auto lost =
    status::error(errc::unavailable, "http request failed: connection closed before an answer");
  for (auto& call : round.calls) {
    settle_call(call, round, w.memory, w.limits, lost);
    CHECK(call.status == call_status::failed);
    CHECK_FALSE(json::parse(call.output).contains("outcome"));
  }
}

TEST_CASE("an exact request a server rejected is skipped in a later round") {
  round_world w;
  auto round = w.decide({forecast("a", "2026-12-03")});
  auto wave = next_wave(round, w.limits);
  settle_call(round.calls[0], round, w.memory, w.limits, mcp_http_status_error(422, {}, ""));
  auto again = w.decide({forecast("b", "2026-12-03"), forecast("c", "2026-12-04")});
  CHECK(again.calls[0].status == call_status::skipped);
  CHECK(again.calls[0].reason == "repeated_rejected_request");
  CHECK(again.calls[1].status == call_status::pending);
}

TEST_CASE("a rejected request is recognised however its arguments are spelled") {
  round_world w;
  auto round = w.decide(
    {{"a", "get_forecast", R"({"location": {"address": "Main St 1"}, "date": "2026-12-03"})"}});
  next_wave(round, w.limits);
  settle_call(round.calls[0], round, w.memory, w.limits, mcp_http_status_error(400, {}, ""));
  // The same request, members in another order and without spaces.
  auto again = w.decide(
    {{"b", "get_forecast", R"({"date":"2026-12-03","location":{"address":"Main St 1"}})"}});
  CHECK(again.calls[0].status == call_status::skipped);
  CHECK(again.calls[0].reason == "repeated_rejected_request");
}

TEST_CASE("what is sent is the model's own argument text, once it is checked") {
  round_world w;
  const std::string spelled = R"({ "date" : "2026-12-03", "location": {"address": "Main St 1"} })";
  auto round = w.decide({{"a", "get_forecast", spelled}, {"b", "echo", ""}});
  REQUIRE(round.calls[0].status == call_status::pending);
  CHECK(round.calls[0].arguments == spelled);
  CHECK(call_params(round.calls[0]) == R"({"name":"get_forecast","arguments":)" + spelled + "}");
  // No arguments: the empty object, which lacks echo's required "q".
  CHECK(round.calls[1].status == call_status::invalid_arguments);
  CHECK(round.calls[1].output.find("required") != std::string::npos);
}

TEST_CASE("arguments that name a member twice are invalid, at any depth") {
  round_world w;
  auto round = w.decide(
    {{"a", "get_forecast",
      R"({"location": {"address": "Main St 1", "address": "Elm St 2"}, "date": "2026-12-03"})"},
     {"b", "echo", R"({"q": "1", "q": "2"})"},
     {"c", "record_note", R"({"q": "x", "items": [{"k": 1}, {"k": 2}]})"}});
  CHECK(round.calls[0].status == call_status::invalid_arguments);
  CHECK(round.calls[0].output.find("twice") != std::string::npos);
  CHECK(round.calls[0].output.find("Elm St") == std::string::npos);
  CHECK(round.calls[1].status == call_status::invalid_arguments);
  // The same name in different objects is fine.
  CHECK(round.calls[2].status == call_status::pending);
}

TEST_CASE("a tool result with isError goes to the model as a tool error") {
  round_world w;
  auto round = w.decide({{"a", "echo", R"({"q":"1"})"}});
  w.drain(round, result<std::string>{std::string{
                   R"({"content":[{"type":"text","text":"no such city"}],"isError":true})"}});
  CHECK(round.calls[0].status == call_status::tool_error);
  CHECK(round.calls[0].reason == "tool_reported_error");
  // a failure like the others, with the server's own result beside it
  auto output = json::parse(round.calls[0].output);
  CHECK(output["error"] == "tool_error");
  CHECK(output["usable_result"] == false);
  auto message = output["message"].get<std::string>();
  CHECK(message.rfind("The call produced no usable result: ", 0) == 0);
  CHECK(message.find("Correct one request before batching more calls.") != std::string::npos);
  CHECK(message.find("no such city") == std::string::npos);
  CHECK(output["result"]["content"][0]["text"] == "no such city");
  CHECK(output["result"]["isError"] == true);
}

TEST_CASE("server rejections spend the tool's corrections: a model changing a rejected request "
          "stops") {
  round_world w;
  // Each round sends a new date, and the server rejects it: after
  // max_corrections rounds, the tool is no longer called in this run.
  for (uint32_t round_idx = 0; round_idx < w.limits.max_corrections; ++round_idx) {
    auto date = "2026-12-0" + std::to_string(round_idx + 1);
    auto round = w.decide({forecast("a", date), forecast("b", date, "Elsewhere")});
    REQUIRE(round.calls[0].status == call_status::pending);
    auto wave = next_wave(round, w.limits);
    REQUIRE(wave.size() == 2);
    // two rejections in one round spend one correction
    for (auto call_idx : wave)
      settle_call(round.calls[call_idx], round, w.memory, w.limits,
                  mcp_http_status_error(422, {}, ""));
    CHECK(round.calls[1].status == call_status::rejected);
  }
  auto spent = w.decide({forecast("a", "2026-12-09"), {"b", "echo", R"({"q":"1"})"}});
  CHECK(spent.calls[0].status == call_status::skipped);
  CHECK(spent.calls[0].reason == "correction_budget_spent");
  CHECK(spent.calls[1].status == call_status::pending); // (another tool keeps its budget)
}

TEST_CASE("a Grounding Lite server's weather calls go through its normaliser, others do not") {
  round_world w;
  constexpr const char* weather_schema = R"({"type": "object", "properties": {
    "location": {"type": "object"}, "date": {"type": "object"}}})";
  w.world.server("s_maps", "Maps");
  w.world.allow_mcp("s_maps", definition("lookup_weather", "Weather.", weather_schema), {}, true);
  w.world.allow_mcp("s_1", definition("lookup_weather", "Weather.", weather_schema), {}, true);
  w.view = w.world.view();
  w.adapters["s_maps"] = call_adapter::maps_grounding_lite;
  std::string maps_name, plain_name;
  for (const auto& entry : w.view.direct)
    if (entry.tool() == "lookup_weather")
      (entry.server_id() == "s_maps" ? maps_name : plain_name) = std::string{entry.model_name()};
  REQUIRE_FALSE(maps_name.empty());
  REQUIRE_FALSE(plain_name.empty());
  const std::string place = R"({"location": {"placeId": "places/ChIJabc"}})";
  const std::string both = R"({"location": {"placeId": "ChIJabc", "address": "Main St 1"}})";
  auto round = w.decide({{"a", maps_name, place},
                         {"b", plain_name, place},
                         {"c", plain_name, both},
                         {"d", maps_name, both}});
  REQUIRE(round.calls[0].status == call_status::pending);
  CHECK(json::parse(round.calls[0].arguments)["location"]["placeId"] == "ChIJabc");
  REQUIRE(round.calls[1].status == call_status::pending);
  CHECK(json::parse(round.calls[1].arguments) == json::parse(place)); // (as the model wrote it)
  CHECK(round.calls[2].status == call_status::pending);
  // the preset's contract: exactly one location form, refused locally
  CHECK(round.calls[3].status == call_status::invalid_arguments);
  CHECK(round.calls[3].output.find("Main St") == std::string::npos);
}

TEST_CASE("a tool outside the run's view is denied and nothing is sent") {
  round_world w;
  auto round = w.decide({{"a", "delete_everything", "{}"}, {"b", "echo", R"({"q":"1"})"}});
  CHECK(round.calls[0].status == call_status::denied);
  CHECK(round.calls[0].reason == "not_in_view");
  auto waves = w.drain(round, ok_result);
  REQUIRE(waves.size() == 1);
  CHECK(waves[0] == std::vector<std::size_t>{1});
}

TEST_CASE("malformed responses are refused whole") {
  round_world w;
  std::vector<tool_call> many(10'000, tool_call{"x", "echo", "{}"});
  for (std::size_t idx = 0; idx < many.size(); ++idx)
    many[idx].call_id = "c" + std::to_string(idx);
  auto too_many = make_round(many, w.limits);
  REQUIRE_FALSE(too_many.is_ok());
  CHECK(too_many.error().code() == errc::out_of_range);
  auto duplicate = make_round({{"a", "echo", "{}"}, {"a", "echo", "{}"}}, w.limits);
  REQUIRE_FALSE(duplicate.is_ok());
  CHECK(duplicate.error().code() == errc::conflict);
  auto no_id = make_round({{"", "echo", "{}"}}, w.limits);
  CHECK_FALSE(no_id.is_ok());
  auto control = make_round({{"a\n", "echo", "{}"}}, w.limits);
  CHECK_FALSE(control.is_ok());
  CHECK_FALSE(make_round({}, w.limits).is_ok());
}

TEST_CASE("a call whose name no tool can have is denied, and the calls beside it are answered") {
  round_world w;
  auto round = w.decide({{"a", "echo", R"({"q":"1"})"},
                         {"b", std::string(200, 'n'), "{}"},
                         {"c", "", "{}"},
                         {"d", "record_note", R"({"q":"2"})"}});
  for (std::size_t idx : {1, 2}) {
    CHECK(round.calls[idx].status == call_status::denied);
    CHECK(round.calls[idx].reason == "invalid_name");
    CHECK(round.calls[idx].name.empty()); // (not kept)
  }
  CHECK(round.calls[0].status == call_status::pending);
  CHECK(round.calls[3].status == call_status::pending);
  w.drain(round, ok_result);
  auto outputs = round_outputs(round);
  REQUIRE(outputs.size() == 4);
  CHECK(outputs[0].status == "ok");
  CHECK(outputs[1].status == "denied");
  CHECK(outputs[1].output.find("nnnn") == std::string::npos);
  CHECK(outputs[3].status == "ok");
}

TEST_CASE("arguments that are not an object, not JSON or too large are invalid") {
  round_world w;
  w.limits.max_argument_bytes = 64;
  auto round = w.decide({{"a", "echo", "[1,2]"},
                         {"b", "record_note", "{not json"},
                         {"c", "get_forecast", std::string(100, ' ')}});
  CHECK(round.calls[0].status == call_status::invalid_arguments);
  CHECK(round.calls[1].status == call_status::invalid_arguments);
  CHECK(round.calls[2].status == call_status::invalid_arguments);
  CHECK(round.calls[2].reason == "arguments_too_large");
}

TEST_CASE("arguments that are not one bounded JSON text skip later calls to the tool and count "
          "toward its correction budget") {
  round_world w;
  w.limits.max_argument_bytes = 64;
  const std::string deep = R"({"q":)" + std::string(100, '[') + std::string(100, ']') + "}";
  const std::vector<std::string> malformed = {"{not json", std::string(100, ' '), deep};
  for (const auto& arguments : malformed) {
    CAPTURE(arguments);
    auto round = w.decide({{"a", "echo", arguments},
                           {"b", "echo", R"({"q":"x"})"},
                           {"c", "record_note", R"({"q":"y"})"}});
    CHECK(round.calls[0].status == call_status::invalid_arguments);
    CHECK(round.calls[1].status == call_status::skipped);
    CHECK(round.calls[1].reason == "earlier_invalid_call");
    CHECK(round.calls[2].status == call_status::pending);
  }
  // Three invalid rounds of echo: its budget is spent.
  auto round = w.decide({{"a", "echo", R"({"q":"x"})"}});
  CHECK(round.calls[0].status == call_status::skipped);
  CHECK(round.calls[0].reason == "correction_budget_spent");
}

TEST_CASE("every failure says it produced no usable result and asks for one correction") {
  round_world w;
  w.limits.max_argument_bytes = 64;
  auto round = w.decide({{"a", "no_such_tool", "{}"},
                         {"b", "echo", "{not json"},
                         {"c", "echo", R"({"q":"x"})"},
                         {"d", "get_forecast", std::string(100, ' ')},
                         {"e", "record_note", R"({"q":"y"})"}});
  // (the last is sent, and the server answers a tool error)
  w.drain(round, result<std::string>{std::string{R"({"content":[],"isError":true})"}});
  REQUIRE(round.calls[4].status == call_status::tool_error);
  for (const auto& output : round_outputs(round)) {
    CAPTURE(output.output);
    auto message = json::parse(output.output).at("message").get<std::string>();
    CHECK(message.rfind("The call produced no usable result: ", 0) == 0);
    CHECK(message.find("Correct one request before batching more calls.") != std::string::npos);
  }
}

TEST_CASE("deeply nested arguments are refused before parsing") {
  round_world w;
  std::string deep = R"({"q":)" + std::string(100'000, '[') + std::string(100'000, ']') + "}";
  std::string shallow_in_string = R"({"q":")" + std::string(1000, '[') + R"("})";
  auto round = w.decide({{"a", "echo", deep}, {"b", "record_note", shallow_in_string}});
  CHECK(round.calls[0].status == call_status::invalid_arguments);
  CHECK(round.calls[0].reason == "arguments_too_deep");
  CHECK(round.calls[1].status == call_status::pending);
}

TEST_CASE("cancelling answers every call not yet settled") {
  round_world w;
  auto round = w.decide({{"a", "echo", R"({"q":"1"})"}, {"b", "record_note", R"({"q":"2"})"}});
  auto wave = next_wave(round, w.limits);
  settle_call(round.calls[0], round, w.memory, w.limits,
              status::error(errc::unavailable, "request cancelled"));
  cancel_round(round);
  auto outputs = round_outputs(round);
  REQUIRE(outputs.size() == 2);
  CHECK(outputs[0].status == "cancelled");
  CHECK(outputs[1].status == "cancelled");
  CHECK(next_wave(round, w.limits).empty());
}

TEST_CASE("tool_call reaches a catalog tool through its id, validated by its schema") {
  tool_world world;
  world.server("s_1", "Big");
  world.allow_many("s_1", "tool", 12);
  auto view = world.view();
  REQUIRE(view.catalog_mode);
  auto catalog = std::make_shared<tool_catalog>(test::catalog_of(view, 7));
  run_memory memory;
  round_limits limits;
  auto id = catalog->id_at(0);
  auto made =
    make_round({{"a", "tool_call", json{{"id", id}, {"arguments", {{"q", "x"}}}}.dump()},
                {"b", "tool_call", json{{"id", id}, {"arguments", {{"q", 5}}}}.dump()},
                {"c", "tool_call",
                 json{{"id", "ct_AAAAAAAAAAAAAAAAAAAAAA"}, {"arguments", json::object()}}.dump()},
                {"d", "tool_search", R"({"query":"tool"})"}},
               limits);
  REQUIRE(made.is_ok());
  auto round = std::move(*made);
  decide_round(round, view, catalog.get(), world.snapshot, {}, memory, limits);
  CHECK(round.calls[0].status == call_status::pending);
  REQUIRE(round.calls[0].entry != nullptr);
  CHECK(round.calls[0].entry->server_id() == "s_1");
  CHECK(round.calls[1].status == call_status::invalid_arguments);
  CHECK(round.calls[2].status == call_status::invalid_arguments);
  CHECK(round.calls[2].reason == "unknown_catalog_id");
  CHECK(round.calls[3].status == call_status::local);
  CHECK(json::parse(round.calls[3].output)["results"].size() > 0);
}

} // namespace voxos

namespace voxos {

namespace {

json maps_place(const std::string& id, const std::string& title) {
  return {{"place", "places/" + id},
          {"id", id},
          {"googleMapsLinks",
           {{"placeUrl", "https://maps.google.com/?cid=1&id=" + id},
            {"directionsUrl", "https://www.google.com/maps/dir/?api=1&destination=" + id}}},
          {"attribution", {{"title", title}, {"url", "https://maps.google.com/"}}},
          {"location", {{"latitude", 48.86}, {"longitude", 2.33}}}};
}

std::string maps_result(const json& places) {
  return json{{"content", {{{"type", "text"}, {"text", "summary"}}}},
              {"structuredContent", {{"summary", "s"}, {"places", places}}}}
    .dump();
}

} // namespace

TEST_CASE("a Grounding Lite search's place cards go to the turn's answer, named places first") {
  test::tool_world world;
  world.server("s_maps", "Maps", "google_maps_grounding_lite");
  world.allow_mcp("s_maps", test::definition("search_places"), {}, true);
  world.server("s_other", "Other");
  world.allow_mcp("s_other", test::definition("search_places"), {}, true);
  auto view = world.view();
  adapter_map adapters{{"s_maps", call_adapter::maps_grounding_lite}};
  run_memory memory;
  round_limits limits;
  const auto* maps = test::find_entry(view.direct, "s_maps", "search_places");
  const auto* other = test::find_entry(view.direct, "s_other", "search_places");
  REQUIRE((maps != nullptr && other != nullptr));
  auto made = make_round({{"a", std::string{maps->model_name()}, R"({"q":"museums"})"},
                          {"b", std::string{other->model_name()}, R"({"q":"museums"})"}},
                         limits);
  REQUIRE(made.is_ok());
  auto round = std::move(*made);
  decide_round(round, view, nullptr, world.snapshot, adapters, memory, limits);
  REQUIRE_MESSAGE(round.calls[0].status == call_status::pending, round.calls[0].output);
  auto answer_text = maps_result(json::array(
    {maps_place("ChIJlouvre", "Musée du Louvre"), maps_place("ChIJorsay", "Musée d'Orsay")}));
  for (auto wave = next_wave(round, limits); !wave.empty(); wave = next_wave(round, limits))
    for (auto call_idx : wave) {
      settle_call(round.calls[call_idx], round, memory, limits, result<std::string>{answer_text});
      remember_places(round.calls[call_idx], adapters, memory);
    }
  // Only the Grounding Lite server's search counts.
  REQUIRE(memory.place_searches.size() == 1);
  auto cards = json::parse(turn_place_cards("Start at the Musée d'Orsay, then walk on.", memory));
  REQUIRE(cards.size() == 2);
  CHECK(cards[0]["place_id"] == "ChIJorsay");
  CHECK(cards[0]["title"] == "Musée d'Orsay");
  CHECK(cards[1]["place_id"] == "ChIJlouvre");
  CHECK(cards[0]["latitude"] == 48.86);
  // The turn's searches are forgotten once its answer has its cards.
  CHECK(memory.place_searches.empty());
  CHECK(json::parse(turn_place_cards("anything", memory)).empty());
}

} // namespace voxos
