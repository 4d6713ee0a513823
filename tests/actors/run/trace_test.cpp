// Run traces (trace.hpp): Google Maps Grounding Lite results are written
// redacted, in a form a replayed run answers alike.
#include <doctest/doctest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/run/tool_fixtures.hpp"
#include "actors/run/tool_round.hpp"
#include "actors/run/trace.hpp"
#include "support/temp_dir.hpp"

namespace voxos {

namespace {

using nlohmann::json;

const std::string place_title = "Trace Test Bakery";
const std::string place_id = "ChIJtraceTestBakery";

std::string places_result(bool is_error) {
  json place{{"place", "places/" + place_id},
             {"id", place_id},
             {"googleMapsLinks",
              {{"placeUrl", "https://maps.google.com/?cid=4242"},
               {"directionsUrl", "https://www.google.com/maps/dir/?api=1&destination=x"}}},
             {"attribution", {{"title", place_title}, {"url", "https://maps.google.com/"}}}};
  return json{{"content", {{{"type", "text"}, {"text", place_title}}}},
              {"structuredContent", {{"summary", place_title}, {"places", {place}}}},
              {"isError", is_error}}
    .dump();
}

/// One round of three calls: a Grounding Lite search answered, one whose
/// result says isError, and echo on another server.
struct traced_world {
  test::tool_world world;
  tool_view view;
  adapter_map adapters{{"s_maps", call_adapter::maps_grounding_lite}};
  round_limits limits;

  traced_world() {
    world.server("s_maps", "Maps", "google_maps_grounding_lite");
    world.allow_mcp("s_maps", test::definition("search_places"), {}, true);
    world.server("s_1", "Other");
    world.allow_mcp("s_1", test::definition("echo"), {}, true);
    view = world.view();
  }

  std::string name_of(const std::string& server_id, const std::string& tool) const {
    const auto* entry = test::find_entry(view.direct, server_id, tool);
    REQUIRE(entry != nullptr);
    return std::string{entry->model_name()};
  }

  /// The round settled with `answers` (one per call, in call order).
  tool_round settled(const std::vector<std::string>& answers) {
    auto search = name_of("s_maps", "search_places");
    auto made = make_round({{"a", search, R"({"q":"bakery"})"},
                            {"b", search, R"({"q":"bread"})"},
                            {"c", name_of("s_1", "echo"), R"({"q":"hi"})"}},
                           limits);
    REQUIRE(made.is_ok());
    auto round = std::move(*made);
    run_memory memory;
    decide_round(round, view, nullptr, world.snapshot, adapters, memory, limits);
    for (auto wave = next_wave(round, limits); !wave.empty(); wave = next_wave(round, limits))
      for (auto idx : wave)
        settle_call(round.calls[idx], round, memory, limits, result<std::string>{answers[idx]});
    return round;
  }
};

std::string read_all(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

} // namespace

TEST_CASE("a trace keeps no Grounding Lite result, and a replayed run answers its redacted form") {
  traced_world w;
  const std::string echo_answer = R"({"content":[{"type":"text","text":"hi"}]})";
  std::vector<std::string> answers{places_result(false), places_result(true), echo_answer};
  auto round = w.settled(answers);
  REQUIRE(round.calls[0].status == call_status::ok);
  REQUIRE(round.calls[1].status == call_status::tool_error);
  REQUIRE(round.calls[2].status == call_status::ok);
  auto outputs = round_outputs(round);

  test::temp_dir dir;
  auto path = dir.str() + "/r_1.jsonl";
  {
    auto trace = run_trace::create(path);
    REQUIRE(trace.is_ok());
    std::vector<const mcp_server_record*> servers{&w.world.tenant.servers.at("s_maps"),
                                                  &w.world.tenant.servers.at("s_1")};
    (*trace)->header("t_a", w.world.snapshot, servers, w.adapters, test::key_of(1), view_kind::text,
                     w.limits);
    std::vector<tool_call> calls;
    for (const auto& call : round.calls)
      calls.push_back({call.call_id, call.name, call.arguments});
    (*trace)->calls(1, calls);
    for (std::size_t idx = 0; idx < round.calls.size(); ++idx)
      (*trace)->mcp(1, std::string{round.calls[idx].entry->server_id()},
                    call_params(round.calls[idx]), 0, answers[idx]);
    (*trace)->outputs(1, round, outputs);
    (*trace)->turn(1, "Two bakeries.",
                   json::array({{{"title", place_title}}, {{"title", "x"}}}).dump(), false);
    (*trace)->turn(1, "Nothing found.", "[]", false);
  }

  auto text = read_all(path);
  CHECK(text.find(place_title) == std::string::npos);
  CHECK(text.find(place_id) == std::string::npos);
  CHECK(text.find("cid=4242") == std::string::npos);

  std::ifstream in{path};
  auto read = read_trace(in);
  REQUIRE_MESSAGE(read.is_ok(), read.error().message());
  REQUIRE(read->answers.size() == 3);
  CHECK(read->answers[2].text == echo_answer);
  REQUIRE(read->rounds.size() == 1);
  CHECK(read->rounds[0].redacted == 2);
  REQUIRE(read->between.size() == 2);
  CHECK(read->between[0].cards_redacted == 2);
  CHECK(read->between[0].assistant == "Two bakeries.");
  CHECK(read->between[1].cards == "[]");

  // A run answered with the recorded (redacted) answers gives the recorded
  // (redacted) outputs: what a replay compares.
  std::vector<std::string> replayed_answers;
  for (const auto& answer : read->answers)
    replayed_answers.push_back(answer.text);
  auto replayed = round_outputs(w.settled(replayed_answers));
  CHECK(compare_outputs(read->rounds[0].outputs, replayed) == "");
  CHECK(compare_outputs(outputs, replayed) != ""); // (the live outputs held the places)
}

} // namespace voxos
