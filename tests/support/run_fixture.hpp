// A node, an SDK-built MCP peer (JSON answers unless told otherwise) registered for "mcp", and a
// tenant whose default agent may call the peer's tools: the server is
// created, tested, enabled, trusted, allowlisted and tested again (enabling
// goes back through the test), and each tool but "add" is granted ("add" is
// allowlisted and never granted). Used by the run integration tests.
//
// The peer's arguments and the tools allowlisted can be chosen
// (run_fixture_options). Two helpers stop the node to reach its store
// directly, then (the first) start it again on the same data:
// `as_grounding_lite` re-records the peer's server under the Grounding Lite
// preset's identity, `events_in_store` reads every stored event of the tenant.
#pragma once

#include "actors/node/node.hpp"
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "actors/tenant/tenant_events.hpp"
#include "storage/directory_projection.hpp"
#include "storage/event_db.hpp"
#include "support/node_peer.hpp"
#include "support/running_node.hpp"

namespace voxos::test {

inline const std::vector<std::string> peer_tools{"echo", "add", "sleep", "get_forecast",
                                                 "record_note"};

struct run_fixture_options {
  /// Adjusts the node's configuration before it starts.
  std::function<void(node_config&)> tweak;
  std::vector<std::string> peer_args{"--json"};
  /// Allowlisted on the peer's server; each but "add" granted.
  std::vector<std::string> tools = peer_tools;
};

/// A peer with search_places (`--maps`), echo beside it.
inline run_fixture_options maps_peer(std::function<void(node_config&)> tweak = {}) {
  run_fixture_options opts;
  opts.tweak = std::move(tweak);
  opts.peer_args = {"--json", "--maps"};
  opts.tools = {"echo", "search_places"};
  return opts;
}

/// What the peer's search_places answers (tests/peers/sdk_peer.mjs,
/// MAPS_PLACES) and nothing may keep: the places' titles, IDs, URLs (whole
/// and their distinctive parts), coordinates, and the summary naming them.
inline const std::vector<std::string> peer_maps_content{"Sonnenschein Peer Bakery",
                                                        "Blue Stag Peer Coffee",
                                                        "ChIJpeerSonnenscheinBakery",
                                                        "ChIJpeerBlueStagCoffee",
                                                        "https://maps.google.com/?cid=7340019001",
                                                        "https://maps.google.com/?cid=7340019002",
                                                        "7340019001",
                                                        "7340019002",
                                                        "destination_place_id",
                                                        "52.5219",
                                                        "13.4132",
                                                        "Found 2 places"};

/// A tenant whose default agent may call the peer's tools (all but "add",
/// which is allowlisted on the server but never granted).
struct run_fixture {
  std::unique_ptr<node_peer> peer;
  temp_dir dir;
  std::unique_ptr<running_node> node;
  std::string tenant_id;
  std::string token;
  std::string agent_id;
  std::string server_id;

  /// `tweak` adjusts the node's configuration before it starts.
  explicit run_fixture(std::function<void(node_config&)> tweak = {})
      : run_fixture(run_fixture_options{std::move(tweak)}) {}

  explicit run_fixture(run_fixture_options opts) : peer(start_sdk_peer(opts.peer_args)) {
    const auto& tools = opts.tools;
    REQUIRE_MESSAGE(peer->up(), peer->error_output());
    node = std::make_unique<running_node>(
      dir, std::vector<node_config::registered_url>{{peer->url(), "mcp"}}, std::move(opts.tweak));
    std::tie(tenant_id, token) = node->make_tenant("Acme");
    agent_id = node->call("GET", "/v1/agents", token).body[0]["agent_id"].get<std::string>();
    auto made = node->call("POST", "/v1/servers", token,
                           nlohmann::json{{"url", peer->url()}, {"label", "Peer"}}.dump());
    REQUIRE_MESSAGE(made.status == 201, made.raw);
    server_id = made.body["server_id"].get<std::string>();
    auto tested = node->call("POST", "/v1/servers/" + server_id + "/test", token);
    REQUIRE_MESSAGE(tested.status == 200, tested.raw);
    auto patched = node->call(
      "PATCH", "/v1/servers/" + server_id, token,
      nlohmann::json{{"enabled", true}, {"trusted", true}, {"allowed_tools", tools}}.dump());
    REQUIRE_MESSAGE(patched.status == 200, patched.raw);
    // Enabling goes back through the test-and-grant flow: test again.
    tested = node->call("POST", "/v1/servers/" + server_id + "/test", token);
    REQUIRE_MESSAGE(tested.status == 200, tested.raw);
    for (const auto& tool : tools) {
      if (tool == "add")
        continue;
      auto granted = node->call(
        "PUT", "/v1/agents/" + agent_id + "/grants", token,
        nlohmann::json{{"server_id", server_id}, {"tool", tool}, {"decision", "allow"}}.dump());
      REQUIRE_MESSAGE(granted.status == 200, granted.raw);
    }
  }

  std::string start_run() {
    auto started =
      node->call("POST", "/v1/runs", token,
                 nlohmann::json{{"agent_id", agent_id}, {"channel", "owner_text_chat"}}.dump());
    REQUIRE_MESSAGE(started.status == 201, started.raw);
    return started.body["run_id"].get<std::string>();
  }

  http_reply submit(const std::string& run_id, const nlohmann::json& calls) {
    return node->call("POST", "/v1/runs/" + run_id + "/tool-calls", token,
                      nlohmann::json{{"calls", calls}}.dump());
  }

  /// One round of one search_places call ("bakery nearby") to the peer with
  /// `--maps`; its output must be "ok".
  http_reply search_places(const std::string& run_id) {
    auto searched =
      submit(run_id, nlohmann::json::array({{{"call_id", "places"},
                                             {"name", "search_places"},
                                             {"arguments", {{"textQuery", "bakery nearby"}}}}}));
    REQUIRE_MESSAGE(searched.status == 200, searched.raw);
    REQUIRE(searched.body["outputs"][0]["status"] == "ok");
    return searched;
  }

  /// Reports a turn of the run (the user asking for bread, `assistant`
  /// answering); must be accepted.
  http_reply report_turn(const std::string& run_id, const std::string& assistant) {
    auto turn = node->call(
      "POST", "/v1/runs/" + run_id + "/turns", token,
      nlohmann::json{{"user", "Where can I buy bread?"}, {"assistant", assistant}}.dump());
    REQUIRE_MESSAGE(turn.status == 201, turn.raw);
    return turn;
  }

  /// Stops the node and opens its store with the node's projectors.
  std::unique_ptr<event_db> open_store() {
    node->stop();
    event_db_options opts;
    opts.projectors = node_projectors();
    auto db = event_db::open(dir.str() + "/store", std::move(opts));
    REQUIRE_MESSAGE(db, (db ? "" : db.error().message()));
    return std::move(*db);
  }

  /// Re-records the peer's server as a Google Maps Grounding Lite preset
  /// server (preset_id google_maps_grounding_lite; its URL, discovery cache,
  /// flags and allowlist unchanged), then starts the node again on the same
  /// data. The HTTP API cannot make this record: the preset fixes its
  /// public URL, which a test cannot serve. The tenant chooses the preset's
  /// adapter by preset_id (actors/tenant/tenant.cpp, spawn_run_actor).
  void as_grounding_lite() {
    {
      auto db = open_store();
      auto entries = db->scan_state(tenant_events::state_prefix(tenant_id), 100'000);
      REQUIRE(entries);
      auto loaded = tenant_events::load(tenant_id, *entries);
      REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message()));
      auto rec = loaded->state.servers.at(server_id);
      rec.preset_id = "google_maps_grounding_lite";
      append_request req{tenant_id,
                         tenant_events::stream,
                         {tenant_events::server_upserted(rec)},
                         append_request::any_seq};
      REQUIRE(db->append(req, 1));
    }
    node->start();
  }

  /// Every stored event of the tenant, all streams (the node stops).
  std::vector<event_record> events_in_store() {
    auto db = open_store();
    auto events = db->read_tenant(tenant_id, 10'000);
    REQUIRE(events);
    REQUIRE(events->size() < 10'000); // (all of them)
    return std::move(*events);
  }
};

} // namespace voxos::test
