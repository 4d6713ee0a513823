// Google Maps place content is not retained: after a Grounding Lite
// search_places round and a turn, the tenant's stored events (every stream)
// hold the calls' completion markers and the assistant's text, and none of
// the places' titles, IDs, URLs or coordinates, though the model got the
// full result and the host the turn's place cards.
//
// The Grounding Lite server is the SDK peer with `--maps` (a search_places
// that answers as Grounding Lite does, fixed places), recorded under the
// preset's identity by run_fixture::as_grounding_lite: the preset fixes its
// public URL, so the HTTP API cannot register a loopback peer for it.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "support/run_fixture.hpp"

using namespace voxos;
using nlohmann::json;

TEST_CASE("maps place content from a Grounding Lite search is in no stored event of the tenant") {
  test::run_fixture f{test::maps_peer()};
  f.as_grounding_lite();
  auto run_id = f.start_run();
  REQUIRE(test::reset_peer_stats(f.peer->port()));
  auto searched = f.search_places(run_id);
  CHECK(test::peer_stats(f.peer->port())["tools_call_received"] == 1);
  // The model got the full result, places and all.
  for (const auto& content : test::peer_maps_content)
    CHECK_MESSAGE(searched.raw.find(content) != std::string::npos, content);

  const std::string assistant = "Two bakeries are open near you right now.";
  auto turn = f.report_turn(run_id, assistant);
  // The host got the cards (so the server counts as Grounding Lite here).
  REQUIRE(turn.body["place_cards"].size() == 2);
  CHECK(turn.body["place_cards"][0]["title"] == "Sonnenschein Peer Bakery");
  REQUIRE(f.node->call("POST", "/v1/runs/" + run_id + "/finish", f.token).status == 200);

  auto events = f.events_in_store();
  bool assistant_kept = false;
  bool marker_kept = false;
  for (const auto& ev : events) {
    for (const auto& content : test::peer_maps_content) {
      CHECK_MESSAGE(ev.data.find(content) == std::string::npos,
                    ev.stream << " " << ev.type << " holds " << content);
      CHECK(ev.type.find(content) == std::string::npos);
    }
    auto data = json::parse(ev.data);
    if (ev.type == "turn.reported")
      assistant_kept = assistant_kept || data["assistant"] == assistant;
    if (ev.stream == "run." + run_id && ev.type == "tools.round") {
      REQUIRE(data["calls"].size() == 1);
      const auto& call = data["calls"][0];
      // the marker: status and reason, no output
      CHECK(call["tool"] == "search_places");
      CHECK(call["status"] == "ok");
      CHECK(call["reason"] == "completed");
      const std::set<std::string> marker_keys{"call_id", "name",      "status", "reason",
                                              "us",      "server_id", "tool"};
      for (const auto& [key, value] : call.items())
        CHECK_MESSAGE(marker_keys.count(key) == 1, key);
      marker_kept = true;
    }
  }
  CHECK(assistant_kept);
  CHECK(marker_kept);
}
