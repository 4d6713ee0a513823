// transport/mcp_server at 2026-07-28 (stateless) over loopback HTTP.
#include "transport/mcp_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

#include "support/mcp_served.hpp"

using nlohmann::json;
using namespace voxos;
using namespace voxos::test;

namespace {

/// A tool that asks for the user's name (keeping `{"asked": true}` as its
/// state) and greets them once it has it; `runs` counts its runs.
mcp_tool greeter(std::atomic<int>* runs = nullptr) {
  mcp_tool tool;
  tool.name = "greet";
  tool.description = "greets the user by name";
  tool.handler = [runs](const json&, mcp_call_context& ctx) -> mcp_outcome {
    if (runs)
      ++*runs;
    const auto& answers = ctx.input_responses();
    if (!answers.contains("name") || !ctx.request_state()) {
      mcp_input_required input;
      input.input_requests["name"] = {
        {"method", "elicitation/create"},
        {"params",
         {{"message", "Your name?"},
          {"requestedSchema",
           {{"type", "object"}, {"properties", {{"n", {{"type", "string"}}}}}}}}}};
      input.state = json{{"asked", true}};
      return input;
    }
    return mcp_text_result("Hello, " + answers["name"]["content"].value("n", "?") + " ("
                           + ctx.request_state()->dump() + ")");
  };
  return tool;
}

json elicitation_capable() {
  return modern_meta({{"elicitation", json::object()}});
}

} // namespace

TEST_CASE("server/discover names versions, capabilities and the server, with caching hints") {
  mcp_server_options options;
  options.name = "fixture";
  options.version = "9.9";
  options.instructions = "be kind";
  options.discover_cache = {60000, true};
  mcp_served served{options};
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto answer = modern(served.port, "server/discover");
  REQUIRE(answer.status == 200);
  CHECK(answer.header("content-type") == "application/json");
  auto result = answer.json()["result"];
  CHECK(result["supportedVersions"] == json::array({"2026-07-28"}));
  CHECK(result["capabilities"]["tools"] == json{{"listChanged", true}});
  CHECK(result["_meta"]["io.modelcontextprotocol/serverInfo"]
        == json{{"name", "fixture"}, {"version", "9.9"}});
  CHECK(result["instructions"] == "be kind");
  CHECK(result["resultType"] == "complete");
  CHECK(result["ttlMs"] == 60000);
  CHECK(result["cacheScope"] == "public");
}

TEST_CASE("the envelope's refusals come with HTTP 400 and echo the request id") {
  mcp_served served;
  served.start();
  auto meta = modern_meta();
  auto body = rpc("probe-7", "server/discover", {{"_meta", meta}});

  // No MCP-Protocol-Version header: a request with _meta still goes stateless.
  auto no_version =
    mcp_send(served.port, "POST", body, accepting_both({{"Mcp-Method", "server/discover"}}));
  CHECK(no_version.status == 400);
  CHECK(no_version.json()["error"]["code"] == mcp_code::header_mismatch);
  CHECK(no_version.json()["id"] == "probe-7");

  auto wrong_method = mcp_send(served.port, "POST", body, modern_headers("tools/list"));
  CHECK(wrong_method.status == 400);
  CHECK(wrong_method.json()["error"]["code"] == mcp_code::header_mismatch);

  auto no_meta = mcp_send(served.port, "POST", rpc(101, "server/discover", json::object()),
                          modern_headers("server/discover"));
  CHECK(no_meta.status == 400);
  CHECK(no_meta.json()["error"]["code"] == mcp_code::invalid_params);
  CHECK(no_meta.json()["id"] == 101);

  auto future = meta;
  future["io.modelcontextprotocol/protocolVersion"] = "v999";
  auto headers = with_header(modern_headers("server/discover"), "MCP-Protocol-Version", "v999");
  auto unsupported =
    mcp_send(served.port, "POST", rpc(301, "server/discover", {{"_meta", future}}), headers);
  CHECK(unsupported.status == 400);
  CHECK(unsupported.json()["error"]["code"] == mcp_code::unsupported_protocol_version);
  CHECK(unsupported.json()["error"]["data"]
        == json{{"supported", {"2026-07-28"}}, {"requested", "v999"}});

  auto mismatch = mcp_send(served.port, "POST", rpc(302, "server/discover", {{"_meta", future}}),
                           modern_headers("server/discover"));
  CHECK(mismatch.status == 400);
  CHECK(mismatch.json()["error"]["code"] == mcp_code::header_mismatch);
}

TEST_CASE("removed and unknown methods answer 404 with method not found") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  for (const char* method : {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "resources/unsubscribe", "unknown/method"}) {
    auto answer = modern(served.port, method, json::object(), {}, 500);
    CHECK(answer.status == 404);
    CHECK(answer.json()["error"]["code"] == mcp_code::method_not_found);
    CHECK(answer.json()["id"] == 500);
  }
}

TEST_CASE("GET and DELETE are not allowed at 2026-07-28") {
  mcp_served served;
  served.start();
  for (const char* method : {"GET", "DELETE"}) {
    auto answer = mcp_send(served.port, method, "", modern_headers("x"));
    CHECK(answer.status == 405);
    CHECK(answer.header("allow") == "POST");
  }
}

TEST_CASE("Mcp-Name must name the tool the body calls, in plain or base64 form") {
  mcp_served served;
  std::atomic<int> runs{0};
  REQUIRE(served.server.add_tool(text_tool("weather", "sunny", &runs)).is_ok());
  served.start();
  auto body = rpc(1, "tools/call", {{"name", "weather"}, {"_meta", modern_meta()}});
  CHECK(mcp_send(served.port, "POST", body, modern_headers("tools/call", "weather")).status == 200);
  CHECK(mcp_send(served.port, "POST", body, modern_headers("tools/call", "=?base64?d2VhdGhlcg==?="))
          .status
        == 200);
  auto other = mcp_send(served.port, "POST", body, modern_headers("tools/call", "climate"));
  CHECK(other.status == 400);
  CHECK(other.json()["error"]["code"] == mcp_code::header_mismatch);
  auto missing = mcp_send(served.port, "POST", body, modern_headers("tools/call"));
  CHECK(missing.status == 400);
  CHECK(runs == 2);
}

TEST_CASE("a tool needing a capability the client did not declare is refused with 400 -32021") {
  mcp_served served;
  std::atomic<int> runs{0};
  auto tool = text_tool("summarise", "done", &runs);
  tool.required_capabilities = {"sampling"};
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto refused = modern(served.port, "tools/call", {{"name", "summarise"}}, {}, 401);
  CHECK(refused.status == 400);
  auto error = refused.json()["error"];
  CHECK(error["code"] == mcp_code::missing_client_capability);
  CHECK(error["data"] == json{{"requiredCapabilities", {{"sampling", json::object()}}}});
  CHECK(refused.json()["id"] == 401);
  CHECK(runs == 0);

  auto declared =
    modern(served.port, "tools/call",
           {{"name", "summarise"}, {"_meta", modern_meta({{"sampling", json::object()}})}});
  CHECK(declared.status == 200);
  CHECK(declared.message()["result"]["content"][0]["text"] == "done");
}

TEST_CASE("a tool asking for input answers input_required, and the retry runs with the state and "
          "the answers") {
  mcp_served served;
  REQUIRE(served.server.add_tool(greeter()).is_ok());
  served.start();
  auto first =
    modern(served.port, "tools/call", {{"name", "greet"}, {"_meta", elicitation_capable()}});
  REQUIRE(first.status == 200);
  auto result = first.message()["result"];
  CHECK(result["resultType"] == "input_required");
  CHECK(result["inputRequests"]["name"]["method"] == "elicitation/create");
  REQUIRE(result["requestState"].is_string());
  CHECK(result["requestState"].get<std::string>().find("asked") == std::string::npos); // sealed

  auto retry =
    modern(served.port, "tools/call",
           {{"name", "greet"},
            {"_meta", elicitation_capable()},
            {"inputResponses", {{"name", {{"action", "accept"}, {"content", {{"n", "Ada"}}}}}}},
            {"requestState", result["requestState"]}},
           {}, 2);
  auto done = retry.message()["result"];
  CHECK(done["resultType"] == "complete");
  CHECK(done["content"][0]["text"] == R"(Hello, Ada ({"asked":true}))");
}

TEST_CASE("a tampered requestState, or one sealed for another caller, is refused and the handler "
          "does not run") {
  mcp_served served;
  std::atomic<int> runs{0};
  REQUIRE(served.server.add_tool(greeter(&runs)).is_ok());
  served.start();
  auto first =
    modern(served.port, "tools/call", {{"name", "greet"}, {"_meta", elicitation_capable()}},
           {{"X-Test-Principal", "alice"}});
  auto state = first.message()["result"]["requestState"].get<std::string>();
  REQUIRE(runs == 1);
  json answers = {{"name", {{"action", "accept"}, {"content", {{"n", "Eve"}}}}}};
  auto retry = [&](const std::string& sent_state, const std::string& principal) {
    return modern(served.port, "tools/call",
                  {{"name", "greet"},
                   {"_meta", elicitation_capable()},
                   {"inputResponses", answers},
                   {"requestState", sent_state}},
                  {{"X-Test-Principal", principal}});
  };
  auto tampered = retry(state + "-TAMPERED", "alice");
  CHECK(tampered.json()["error"]["code"] == mcp_code::invalid_params);
  auto stolen = retry(state, "mallory");
  CHECK(stolen.json()["error"]["code"] == mcp_code::invalid_params);
  CHECK(stolen.json()["error"]["message"]
        == "Invalid params: requestState belongs to another caller");
  CHECK(runs == 1);
  CHECK(retry(state, "alice").message()["result"]["resultType"] == "complete");
}

TEST_CASE("inputResponses that are not an object of objects are invalid params") {
  mcp_served served;
  std::atomic<int> runs{0};
  REQUIRE(served.server.add_tool(greeter(&runs)).is_ok());
  served.start();
  for (const json& bad : {json(nullptr), json(12345), json{{"name", 12345}}}) {
    auto answer =
      modern(served.port, "tools/call",
             {{"name", "greet"}, {"_meta", elicitation_capable()}, {"inputResponses", bad}});
    CHECK(answer.json()["error"]["code"] == mcp_code::invalid_params);
  }
  CHECK(runs == 0);
}

TEST_CASE("a handler asking for input the client cannot give gets -32021, not a request the client "
          "never declared") {
  mcp_served served;
  REQUIRE(served.server.add_tool(greeter()).is_ok());
  served.start();
  auto answer = modern(served.port, "tools/call", {{"name", "greet"}}); // no elicitation declared
  auto error = answer.message()["error"];
  CHECK(error["code"] == mcp_code::missing_client_capability);
  CHECK(error["data"]["requiredCapabilities"] == json{{"elicitation", json::object()}});
}

TEST_CASE("a list answers no input_required even when asked with inputResponses") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  served.start();
  auto answer = modern(served.port, "tools/list", {{"inputResponses", {{"x", json::object()}}}});
  auto result = answer.json()["result"];
  CHECK(result["resultType"] == "complete");
  CHECK(result["tools"].size() == 1);
}

TEST_CASE(
  "progress and logs stream before the result, logs only at or above the request's logLevel") {
  mcp_served served;
  mcp_tool tool;
  tool.name = "work";
  tool.handler = [](const json&, mcp_call_context& ctx) -> mcp_outcome {
    ctx.progress(1, 2, "half");
    ctx.log(mcp_log_level::debug, "detail");
    ctx.log(mcp_log_level::warning, "careful");
    return mcp_text_result("done");
  };
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();

  auto meta = modern_meta();
  meta["progressToken"] = "p-1";
  meta["io.modelcontextprotocol/logLevel"] = "info";
  auto answer = modern(served.port, "tools/call", {{"name", "work"}, {"_meta", meta}});
  CHECK(answer.header("content-type") == "text/event-stream");
  auto events = answer.events();
  REQUIRE(events.size() == 3);
  CHECK(events[0]["method"] == "notifications/progress");
  CHECK(events[0]["params"]
        == json{{"progressToken", "p-1"}, {"progress", 1.0}, {"total", 2.0}, {"message", "half"}});
  CHECK(events[1]["method"] == "notifications/message");
  CHECK(events[1]["params"]["level"] == "warning");
  CHECK(events[2]["result"]["content"][0]["text"] == "done");

  // Without logLevel and progressToken: the result alone.
  auto quiet = modern(served.port, "tools/call", {{"name", "work"}});
  CHECK(quiet.events().size() == 1);
  // A client taking JSON only gets JSON.
  auto json_only =
    mcp_send(served.port, "POST", rpc(3, "tools/call", {{"name", "work"}, {"_meta", meta}}),
             {{"MCP-Protocol-Version", "2026-07-28"},
              {"Mcp-Method", "tools/call"},
              {"Mcp-Name", "work"},
              {"Accept", "application/json"}});
  CHECK(json_only.header("content-type") == "application/json");
  CHECK(json_only.json()["result"]["content"][0]["text"] == "done");
}

TEST_CASE("a listen stream is acknowledged first and then carries only what it asked for, tagged "
          "with its id") {
  mcp_served served;
  REQUIRE(served.server.add_tool(text_tool("alpha", "a")).is_ok());
  REQUIRE(served.server.add_prompt(empty_prompt("p")).is_ok());
  served.start();
  auto params =
    json{{"_meta", modern_meta()},
         {"notifications", {{"promptsListChanged", true}, {"resourcesListChanged", true}}}};
  int notified = 0;
  auto answer = mcp_send(served.port, "POST", rpc("sub-1", "subscriptions/listen", params),
                         modern_headers("subscriptions/listen"), [&](const std::string& body) {
                           auto count = body.find("prompts/list_changed") != std::string::npos;
                           if (notified == 0 && body.find("acknowledged") != std::string::npos) {
                             ++notified;
                             // A change the stream did not ask for, then one it did.
                             served.server.notify_tools_changed();
                             served.server.notify_prompts_changed();
                           }
                           return count;
                         });
  auto events = answer.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0]["method"] == "notifications/subscriptions/acknowledged");
  // Only what the server can honour: it has no resources.
  CHECK(events[0]["params"]["notifications"] == json{{"promptsListChanged", true}});
  CHECK(events[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1");
  CHECK(events[1]["method"] == "notifications/prompts/list_changed");
  CHECK(events[1]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1");
}

TEST_CASE("an argument mirrored into Mcp-Param must come with its header, equal after decoding") {
  mcp_served served;
  std::atomic<int> runs{0};
  mcp_tool tool = text_tool("route", "routed", &runs);
  tool.input_schema = {{"type", "object"},
                       {"properties",
                        {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}},
                         {"priority", {{"type", "integer"}, {"x-mcp-header", "Priority"}}}}}};
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto call = [&](json arguments, voxos::http_header_list headers) {
    return modern(served.port, "tools/call",
                  {{"name", "route"}, {"arguments", std::move(arguments)}}, std::move(headers));
  };
  CHECK(call({{"region", "Hello"}}, {{"Mcp-Param-Region", "=?base64?SGVsbG8=?="}}).status == 200);
  CHECK(call({{"region", "us-west1"}, {"priority", 42}},
             {{"Mcp-Param-Region", "us-west1"}, {"Mcp-Param-Priority", "42.0"}})
          .status
        == 200);
  CHECK(call(json::object(), {}).status == 200); // absent: no header expected
  CHECK(runs == 3);
  for (const auto& [value, header] :
       std::vector<std::pair<std::string, std::string>>{{"Hello", "=?base64?SGVsbG8?="},
                                                        {"Hello", "=?base64?SGVs!!!bG8=?="},
                                                        {"Hello", "Goodbye"}}) {
    auto refused = call({{"region", value}}, {{"Mcp-Param-Region", header}});
    CHECK(refused.status == 400);
    CHECK(refused.json()["error"]["code"] == mcp_code::header_mismatch);
  }
  auto missing = call({{"region", "x"}}, {});
  CHECK(missing.status == 400);
  CHECK(missing.json()["error"]["message"] == "Missing Mcp-Param-Region header");
  CHECK(runs == 3);
}

TEST_CASE(
  "an unknown resource is invalid params naming its uri, and a read carries caching hints") {
  mcp_server_options options;
  options.read_cache = {1000, false};
  mcp_served served{options};
  REQUIRE(served.server.add_resource(text_resource("test://note", "hi")).is_ok());
  served.start();
  auto missing = modern(served.port, "resources/read", {{"uri", "test://nothing"}});
  CHECK(missing.message()["error"]["code"] == mcp_code::invalid_params);
  CHECK(missing.message()["error"]["data"] == json{{"uri", "test://nothing"}});
  auto read = modern(served.port, "resources/read", {{"uri", "test://note"}}).message()["result"];
  CHECK(read["contents"][0]["text"] == "hi");
  CHECK(read["ttlMs"] == 1000);
  CHECK(read["cacheScope"] == "private");
}

TEST_CASE("a client closing the call's stream is the call's cancellation") {
  mcp_served served;
  auto ended = std::make_shared<std::promise<bool>>();
  mcp_tool tool;
  tool.name = "long";
  tool.handler = [ended](const json&, mcp_call_context& ctx) -> mcp_outcome {
    ctx.progress(0, 1);
    // Bounded: a server that never notices fails the test, not the run.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ctx.cancelled() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    ended->set_value(ctx.cancelled());
    return mcp_text_result("too late");
  };
  REQUIRE(served.server.add_tool(tool).is_ok());
  served.start();
  auto meta = modern_meta();
  meta["progressToken"] = 1;
  // The client leaves at the first event.
  mcp_send(served.port, "POST", rpc(2, "tools/call", {{"name", "long"}, {"_meta", meta}}),
           modern_headers("tools/call", "long"),
           [](const std::string& so_far) { return so_far.find("progress") != std::string::npos; });
  auto noticed = ended->get_future();
  REQUIRE(noticed.wait_for(std::chrono::seconds(15)) == std::future_status::ready);
  CHECK(noticed.get());
}
