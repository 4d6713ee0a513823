// The MCP conformance suite's server fixture, built on transport/mcp_server:
// the tools, resources and prompts the suite's server scenarios call (their
// names, arguments and answers are the scenarios'; see
// tests/peers/CONFORMANCE.md, "Server scenarios"), and skills
// (fixture_skills.cpp) for its Skills extension scenarios. A test program, not part
// of the product: the server core knows none of this.
//
//   mcp_fixture_server [PORT]
// Serves http://127.0.0.1:PORT/mcp (PORT 0 or none: a free port), prints
// "listening http://127.0.0.1:<port>/mcp" on stdout, and runs until SIGTERM
// or SIGINT. Every caller is anonymous: the fixture has no authentication.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/log.hpp"
#include "conformance/fixture_skills.hpp"
#include "transport/http_server.hpp"
#include "transport/mcp_server.hpp"

using nlohmann::json;
using voxos::mcp_call_context;
using voxos::mcp_input_required;
using voxos::mcp_outcome;
using voxos::mcp_run_as_task;
using voxos::mcp_server;
using voxos::mcp_task_support;

namespace {

// A 1x1 red PNG and a minimal WAV, as the suite's reference server sends them.
constexpr const char* test_image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8D"
                                   "wHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
constexpr const char* test_audio = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Registration must succeed: a fixture that cannot register is broken.
void must(voxos::status added) {
  if (!added) {
    std::fprintf(stderr, "fixture: %s\n", added.message().c_str());
    std::exit(2);
  }
}

json text_block(const std::string& text) {
  return {{"type", "text"}, {"text", text}};
}

json content(json blocks) {
  return {{"content", std::move(blocks)}};
}

json elicitation(const std::string& message, json properties, json required) {
  return {
    {"method", "elicitation/create"},
    {"params",
     {{"message", message},
      {"requestedSchema",
       {{"type", "object"}, {"properties", std::move(properties)}, {"required", required}}}}}};
}

json sampling(const std::string& prompt, int max_tokens) {
  return {{"method", "sampling/createMessage"},
          {"params",
           {{"messages", json::array({{{"role", "user"}, {"content", text_block(prompt)}}})},
            {"maxTokens", max_tokens}}}};
}

json roots() {
  return {{"method", "roots/list"}, {"params", json::object()}};
}

/// The text of an elicitation answer's `field`, or "unknown".
std::string answered(const json& response, const char* field) {
  if (response.contains("content") && response["content"].is_object()
      && response["content"].contains(field) && response["content"][field].is_string())
    return response["content"][field].get<std::string>();
  return "unknown";
}

mcp_input_required ask(json requests) {
  mcp_input_required input;
  input.input_requests = std::move(requests);
  return input;
}

mcp_input_required ask(json requests, json state) {
  auto input = ask(std::move(requests));
  input.state = std::move(state);
  return input;
}

void simple_tool(mcp_server& server, const char* name, const char* description, json result) {
  voxos::mcp_tool tool;
  tool.name = name;
  tool.description = description;
  tool.handler = [result = std::move(result)](const json&, mcp_call_context&) -> mcp_outcome {
    return result;
  };
  must(server.add_tool(std::move(tool)));
}

void tool(mcp_server& server, const char* name, const char* description,
          voxos::mcp_tool_handler handler,
          json input_schema = {{"type", "object"}, {"properties", json::object()}}) {
  voxos::mcp_tool added;
  added.name = name;
  added.description = description;
  added.input_schema = std::move(input_schema);
  added.handler = std::move(handler);
  must(server.add_tool(std::move(added)));
}

/// A tool whose calls may become tasks (the tasks extension).
void task_tool(mcp_server& server, const char* name, const char* description,
               mcp_task_support support, voxos::mcp_tool_handler handler,
               json input_schema = {{"type", "object"}, {"properties", json::object()}}) {
  voxos::mcp_tool added;
  added.name = name;
  added.description = description;
  added.input_schema = std::move(input_schema);
  added.task_support = support;
  added.handler = std::move(handler);
  must(server.add_tool(std::move(added)));
}

/// Waits `seconds`, less if the call is cancelled meanwhile; false then.
bool work_for(double seconds, mcp_call_context& ctx) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ctx.cancelled())
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

json string_argument(const char* name, const char* description) {
  return {{"type", "object"},
          {"properties", {{name, {{"type", "string"}, {"description", description}}}}},
          {"required", {name}}};
}

void content_tools(mcp_server& server) {
  simple_tool(server, "test_simple_text", "Tests simple text content response",
              content({text_block("This is a simple text response for testing.")}));
  simple_tool(server, "test_image_content", "Tests image content response",
              content({{{"type", "image"}, {"data", test_image}, {"mimeType", "image/png"}}}));
  simple_tool(server, "test_audio_content", "Tests audio content response",
              content({{{"type", "audio"}, {"data", test_audio}, {"mimeType", "audio/wav"}}}));
  simple_tool(server, "test_embedded_resource", "Tests embedded resource content response",
              content({{{"type", "resource"},
                        {"resource",
                         {{"uri", "test://embedded-resource"},
                          {"mimeType", "text/plain"},
                          {"text", "This is an embedded resource content."}}}}}));
  simple_tool(server, "test_multiple_content_types",
              "Tests response with multiple content types (text, image, resource)",
              content({text_block("Multiple content types test:"),
                       {{"type", "image"}, {"data", test_image}, {"mimeType", "image/png"}},
                       {{"type", "resource"},
                        {"resource",
                         {{"uri", "test://mixed-content-resource"},
                          {"mimeType", "application/json"},
                          {"text", R"({"test":"data","value":123})"}}}}}));
  simple_tool(server, "test_error_handling", "Tests error response handling",
              voxos::mcp_tool_error("This tool intentionally returns an error for testing"));
}

void streaming_tools(mcp_server& server) {
  tool(server, "test_tool_with_logging", "Tests tool that emits log messages during execution",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         for (const char* step :
              {"Tool execution started", "Tool processing data", "Tool execution completed"})
           ctx.log(voxos::mcp_log_level::info, step, "conformance-fixture");
         return voxos::mcp_text_result("Tool with logging executed successfully");
       });
  tool(server, "test_tool_with_progress", "Tests tool that reports progress notifications",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         for (double done : {0.0, 50.0, 100.0})
           ctx.progress(done, 100.0, "Completed step " + std::to_string(int(done)) + " of 100");
         return voxos::mcp_text_result("Progress reported");
       });
  // Diagnostics of server-stateless: a notification before the result, a
  // log that a request without logLevel must not see, list changes.
  tool(server, "test_streaming_elicitation", "Diagnostic tool validating response progress streams",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         ctx.progress(50, 100, "half way");
         return voxos::mcp_text_result("Streaming complete");
       });
  tool(server, "test_logging_tool", "Diagnostic logging validator tool",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         ctx.log(voxos::mcp_log_level::info, "Diagnostic trace logging activated");
         return voxos::mcp_text_result("Logging evaluated");
       });
  tool(server, "test_trigger_tool_change", "Diagnostic: reports a change of the tool list",
       [&server](const json&, mcp_call_context&) -> mcp_outcome {
         server.notify_tools_changed();
         return voxos::mcp_text_result("Mutation triggered");
       });
  tool(server, "test_trigger_prompt_change", "Diagnostic: reports a change of the prompt list",
       [&server](const json&, mcp_call_context&) -> mcp_outcome {
         server.notify_prompts_changed();
         return voxos::mcp_text_result("Mutation triggered");
       });
  // SEP-2243: arguments mirrored into Mcp-Param-* headers, checked by the server.
  tool(server, "test_header_mirroring", "Echoes its region, which clients mirror into a header",
       [](const json& arguments, mcp_call_context&) -> mcp_outcome {
         return voxos::mcp_text_result("region " + arguments.value("region", ""));
       },
       {{"type", "object"},
        {"properties",
         {{"region", {{"type", "string"}, {"x-mcp-header", "Region"}}},
          {"priority", {{"type", "integer"}, {"x-mcp-header", "Priority"}}},
          {"verbose", {{"type", "boolean"}, {"x-mcp-header", "Verbose"}}}}},
        {"required", {"region"}}});
  // SEP-1699: the call ends its connection before its result, which waits
  // for the client to resume the stream (GET with Last-Event-ID).
  tool(server, "test_reconnection",
       "Tests SSE stream disconnection and client reconnection (SEP-1699): the server closes "
       "the stream mid-call and sends the result after the client reconnects",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         ctx.close_stream();
         return voxos::mcp_text_result("Reconnection test completed");
       });
  voxos::mcp_tool needs_sampling;
  needs_sampling.name = "test_missing_capability";
  needs_sampling.description = "Test tool requiring sampling";
  needs_sampling.required_capabilities = {"sampling"};
  needs_sampling.handler = [](const json&, mcp_call_context&) -> mcp_outcome {
    return voxos::mcp_text_result("Success");
  };
  must(server.add_tool(std::move(needs_sampling)));
}

/// Tools that ask the client for input (answered in rounds at either wire).
void input_tools(mcp_server& server) {
  tool(
    server, "test_sampling", "Tests server-initiated sampling (LLM completion request)",
    [](const json& arguments, mcp_call_context& ctx) -> mcp_outcome {
      const auto& answers = ctx.input_responses();
      if (!answers.contains("completion"))
        return ask({{"completion", sampling(arguments.value("prompt", ""), 100)}});
      const auto& reply = answers["completion"];
      std::string text = reply.contains("content") && reply["content"].is_object()
                           ? reply["content"].value("text", "No response")
                           : "No response";
      return voxos::mcp_text_result("LLM response: " + text);
    },
    string_argument("prompt", "The prompt to send to the LLM"));
  tool(
    server, "test_elicitation", "Tests server-initiated elicitation (user input request)",
    [](const json& arguments, mcp_call_context& ctx) -> mcp_outcome {
      const auto& answers = ctx.input_responses();
      if (!answers.contains("input"))
        return ask(
          {{"input",
            elicitation(arguments.value("message", ""),
                        {{"response", {{"type", "string"}, {"description", "User's response"}}}},
                        {"response"})}});
      const auto& reply = answers["input"];
      return voxos::mcp_text_result("User response: action=" + reply.value("action", "")
                                    + ", content=" + reply.value("content", json::object()).dump());
    },
    string_argument("message", "The message to show the user"));
  tool(
    server, "test_elicitation_sep1034_defaults",
    "Tests elicitation with default values per SEP-1034",
    [](const json&, mcp_call_context& ctx) -> mcp_outcome {
      const auto& answers = ctx.input_responses();
      if (!answers.contains("form"))
        return ask(
          {{"form",
            elicitation(
              "Please review and update the form fields with defaults",
              {{"name",
                {{"type", "string"}, {"description", "User name"}, {"default", "John Doe"}}},
               {"age", {{"type", "integer"}, {"description", "User age"}, {"default", 30}}},
               {"score", {{"type", "number"}, {"description", "User score"}, {"default", 95.5}}},
               {"status",
                {{"type", "string"},
                 {"description", "User status"},
                 {"enum", {"active", "inactive", "pending"}},
                 {"default", "active"}}},
               {"verified",
                {{"type", "boolean"}, {"description", "Verification status"}, {"default", true}}}},
              json::array())}});
      const auto& reply = answers["form"];
      return voxos::mcp_text_result("Elicitation completed: action=" + reply.value("action", "")
                                    + ", content=" + reply.value("content", json::object()).dump());
    });
  tool(
    server, "test_elicitation_sep1330_enums",
    "Tests elicitation with enum schema improvements per SEP-1330",
    [](const json&, mcp_call_context& ctx) -> mcp_outcome {
      const auto& answers = ctx.input_responses();
      if (!answers.contains("enums")) {
        auto titled = [](const char* prefix, const char* one, const char* two, const char* three) {
          return json::array({{{"const", std::string{prefix} + "1"}, {"title", one}},
                              {{"const", std::string{prefix} + "2"}, {"title", two}},
                              {{"const", std::string{prefix} + "3"}, {"title", three}}});
        };
        json properties = {
          {"untitledSingle",
           {{"type", "string"},
            {"description", "Select one option"},
            {"enum", {"option1", "option2", "option3"}}}},
          {"titledSingle",
           {{"type", "string"},
            {"description", "Select one option with titles"},
            {"oneOf", titled("value", "First Option", "Second Option", "Third Option")}}},
          {"legacyEnum",
           {{"type", "string"},
            {"description", "Select one option (legacy)"},
            {"enum", {"opt1", "opt2", "opt3"}},
            {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
          {"untitledMulti",
           {{"type", "array"},
            {"description", "Select multiple options"},
            {"minItems", 1},
            {"maxItems", 3},
            {"items", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}}}},
          {"titledMulti",
           {{"type", "array"},
            {"description", "Select multiple options with titles"},
            {"minItems", 1},
            {"maxItems", 3},
            {"items",
             {{"anyOf", titled("value", "First Choice", "Second Choice", "Third Choice")}}}}}};
        return ask({{"enums", elicitation("Please select options from the enum fields",
                                          std::move(properties), json::array())}});
      }
      const auto& reply = answers["enums"];
      return voxos::mcp_text_result("Elicitation completed: action=" + reply.value("action", "")
                                    + ", content=" + reply.value("content", json::object()).dump());
    });
}

/// The multi round-trip tools of the 2026-07-28 scenarios (SEP-2322).
void input_required_tools(mcp_server& server) {
  auto name_request = [] {
    return elicitation("What is your name?", {{"name", {{"type", "string"}}}}, {"name"});
  };
  tool(server, "test_input_required_result_elicitation",
       "MRTR: returns InputRequiredResult with elicitation request",
       [name_request](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& answers = ctx.input_responses();
         if (!answers.contains("user_name"))
           return ask({{"user_name", name_request()}});
         return voxos::mcp_text_result("Hello, " + answered(answers["user_name"], "name") + "!");
       });
  tool(server, "test_input_required_result_sampling",
       "MRTR: returns InputRequiredResult with sampling request",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& answers = ctx.input_responses();
         if (!answers.contains("capital_question"))
           return ask({{"capital_question", sampling("What is the capital of France?", 100)}});
         const auto& reply = answers["capital_question"];
         std::string text = reply.contains("content") && reply["content"].is_object()
                              ? reply["content"].value("text", "no response")
                              : "no response";
         return voxos::mcp_text_result("Sampling result: " + text);
       });
  tool(server, "test_input_required_result_list_roots",
       "MRTR: returns InputRequiredResult with roots/list request",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& answers = ctx.input_responses();
         if (!answers.contains("client_roots"))
           return ask({{"client_roots", roots()}});
         const auto& listed = answers["client_roots"];
         auto count =
           listed.contains("roots") && listed["roots"].is_array() ? listed["roots"].size() : 0;
         return voxos::mcp_text_result("Found " + std::to_string(count) + " root(s)");
       });
  auto confirm = [] {
    return elicitation("Please confirm", {{"ok", {{"type", "boolean"}}}}, {"ok"});
  };
  tool(server, "test_input_required_result_request_state",
       "MRTR: returns InputRequiredResult with requestState",
       [confirm](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& state = ctx.request_state();
         const auto& answers = ctx.input_responses();
         if (state && state->value("kind", "") == "request-state" && answers.contains("confirm"))
           return voxos::mcp_text_result("state-ok: requestState validated");
         return ask({{"confirm", confirm()}}, json{{"kind", "request-state"}});
       });
  // The state is sealed by the server, so a tampered one never gets here.
  tool(server, "test_input_required_result_tampered_state",
       "MRTR: integrity-protected requestState",
       [confirm](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& state = ctx.request_state();
         if (state && ctx.input_responses().contains("confirm"))
           return voxos::mcp_text_result("integrity-ok: state verified");
         return ask({{"confirm", confirm()}}, json{{"kind", "tamper-test"}});
       });
  tool(server, "test_input_required_result_multiple_inputs",
       "MRTR: returns InputRequiredResult with multiple input requests",
       [name_request](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& answers = ctx.input_responses();
         if (ctx.request_state() && answers.contains("user_name") && answers.contains("greeting")
             && answers.contains("client_roots"))
           return voxos::mcp_text_result("Name: " + answered(answers["user_name"], "name")
                                         + "; all inputs received");
         return ask({{"user_name", name_request()},
                     {"greeting", sampling("Generate a greeting", 50)},
                     {"client_roots", roots()}},
                    json{{"kind", "multiple-inputs"}});
       });
  tool(server, "test_input_required_result_multi_round",
       "MRTR: multi-round InputRequiredResult workflow",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         const auto& state = ctx.request_state();
         const auto& answers = ctx.input_responses();
         int round = state ? state->value("round", 0) : 0;
         if (round == 1 && answers.contains("step1"))
           return ask({{"step2", elicitation("Step 2: What is your favorite color?",
                                             {{"color", {{"type", "string"}}}}, {"color"})}},
                      json{{"round", 2}, {"name", answered(answers["step1"], "name")}});
         if (round == 2 && answers.contains("step2"))
           return voxos::mcp_text_result("Multi-round complete for "
                                         + state->value("name", "friend") + " who likes "
                                         + answered(answers["step2"], "color"));
         return ask({{"step1", elicitation("Step 1: What is your name?",
                                           {{"name", {{"type", "string"}}}}, {"name"})}},
                    json{{"round", 1}});
       });
  // Asks only for what the client declared it can answer.
  tool(server, "test_input_required_result_capabilities",
       "MRTR: respects client capabilities in inputRequests",
       [](const json&, mcp_call_context& ctx) -> mcp_outcome {
         if (!ctx.input_responses().empty())
           return voxos::mcp_text_result("capabilities-ok");
         json requests = json::object();
         if (ctx.client_supports("elicitation"))
           requests["elicit_input"] =
             elicitation("Elicitation input", {{"value", {{"type", "string"}}}}, {"value"});
         if (ctx.client_supports("sampling"))
           requests["sample_input"] = sampling("Sample request", 50);
         if (requests.empty())
           return voxos::mcp_text_result("No supported capabilities declared");
         return ask(std::move(requests), json{{"kind", "capabilities-test"}});
       });
}

/// The tasks scenarios' tools (SEP-2663): `greet` never a task; the others
/// hand their work off, which the server makes a task when the request
/// declares the extension.
void task_tools(mcp_server& server) {
  tool(
    server, "greet", "Greets by name (never a task)",
    [](const json& arguments, mcp_call_context&) -> mcp_outcome {
      return voxos::mcp_text_result("Hello, " + arguments.value("name", "") + "!");
    },
    string_argument("name", "Whom to greet"));
  task_tool(server, "slow_compute", "Computes for `seconds` seconds (0: answers at once)",
            mcp_task_support::optional,
            [](const json& arguments, mcp_call_context&) -> mcp_outcome {
              double seconds = arguments.value("seconds", 1.0);
              std::string label = arguments.value("label", "");
              auto text = "Computed " + label + " in " + std::to_string(seconds) + " s";
              if (seconds <= 0)
                return voxos::mcp_text_result(text); // fast enough: no task
              return mcp_run_as_task{[seconds, text](mcp_call_context& ctx) -> mcp_outcome {
                                       if (!work_for(seconds, ctx))
                                         return voxos::mcp_tool_error("cancelled");
                                       return voxos::mcp_text_result(text);
                                     },
                                     "computing"};
            },
            {{"type", "object"},
             {"properties", {{"seconds", {{"type", "number"}}}, {"label", {{"type", "string"}}}}}});
  task_tool(server, "failing_job", "A job that fails as a tool error (task required)",
            mcp_task_support::required, [](const json&, mcp_call_context&) -> mcp_outcome {
              return mcp_run_as_task{[](mcp_call_context& ctx) -> mcp_outcome {
                                       work_for(0.3, ctx);
                                       return voxos::mcp_tool_error("the job failed");
                                     },
                                     {}};
            });
  task_tool(server, "protocol_error_job", "A job whose work breaks (a protocol error)",
            mcp_task_support::optional, [](const json&, mcp_call_context&) -> mcp_outcome {
              return mcp_run_as_task{
                [](mcp_call_context&) -> mcp_outcome { throw std::runtime_error("the job broke"); },
                {}};
            });
  task_tool(
    server, "confirm_delete", "Asks the user to confirm deleting a file, in a task",
    mcp_task_support::optional,
    [](const json& arguments, mcp_call_context&) -> mcp_outcome {
      std::string filename = arguments.value("filename", "");
      return mcp_run_as_task{
        [filename](mcp_call_context& ctx) -> mcp_outcome {
          const auto& answers = ctx.input_responses();
          if (!answers.contains("confirm"))
            return ask(
              {{"confirm", elicitation("Delete " + filename + "?",
                                       {{"confirm", {{"type", "boolean"}}}}, {"confirm"})}});
          bool yes = answers["confirm"].value("action", "") == "accept";
          return voxos::mcp_text_result((yes ? "Deleted " : "Kept ") + filename);
        },
        {}};
    },
    string_argument("filename", "The file to delete"));
  task_tool(
    server, "multi_input", "Asks two questions at once, in a task", mcp_task_support::optional,
    [](const json&, mcp_call_context&) -> mcp_outcome {
      return mcp_run_as_task{
        [](mcp_call_context& ctx) -> mcp_outcome {
          const auto& answers = ctx.input_responses();
          if (!answers.contains("name") || !answers.contains("confirm"))
            return ask(
              {{"name", elicitation("Your name?", {{"name", {{"type", "string"}}}}, {"name"})},
               {"confirm",
                elicitation("Proceed?", {{"confirm", {{"type", "boolean"}}}}, {"confirm"})}});
          return voxos::mcp_text_result("Name: " + answered(answers["name"], "name")
                                        + "; both inputs received");
        },
        {}};
    });
  // SEP-2322 then SEP-2663: the name asked synchronously, then a task.
  task_tool(server, "test_tool_with_task", "MRTR input first, then a task (task required)",
            mcp_task_support::required, [](const json&, mcp_call_context& ctx) -> mcp_outcome {
              const auto& answers = ctx.input_responses();
              if (!answers.contains("user_name"))
                return ask(
                  {{"user_name", elicitation("What is your name?", {{"name", {{"type", "string"}}}},
                                             {"name"})}});
              auto name = answered(answers["user_name"], "name");
              return mcp_run_as_task{[name](mcp_call_context&) -> mcp_outcome {
                                       return voxos::mcp_text_result("Hello, " + name + "!");
                                     },
                                     {}};
            });
}

/// SEP-1613: a 2020-12 input schema kept as written.
void schema_tool(mcp_server& server) {
  json schema = {
    {"$schema", "https://json-schema.org/draft/2020-12/schema"},
    {"type", "object"},
    {"$defs",
     {{"address",
       {{"$anchor", "addressDef"},
        {"type", "object"},
        {"properties", {{"street", {{"type", "string"}}}, {"city", {{"type", "string"}}}}}}}}},
    {"properties",
     {{"name", {{"type", "string"}}},
      {"address", {{"$ref", "#/$defs/address"}}},
      {"contactMethod", {{"type", "string"}, {"enum", {"phone", "email"}}}},
      {"phone", {{"type", "string"}}},
      {"email", {{"type", "string"}}}}},
    {"allOf", {{{"anyOf", {{{"required", {"phone"}}}, {{"required", {"email"}}}}}}}},
    {"if",
     {{"properties", {{"contactMethod", {{"const", "phone"}}}}}, {"required", {"contactMethod"}}}},
    {"then", {{"required", {"phone"}}}},
    {"else", {{"required", {"email"}}}},
    {"additionalProperties", false}};
  tool(
    server, "json_schema_2020_12_tool",
    "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    [](const json& arguments, mcp_call_context&) -> mcp_outcome {
      return voxos::mcp_text_result("JSON Schema 2020-12 tool called with: " + arguments.dump());
    },
    std::move(schema));
}

void resources(mcp_server& server) {
  auto text_resource = [&server](const char* uri, const char* name, const char* title,
                                 const char* description, const char* text) {
    voxos::mcp_resource resource;
    resource.uri = uri;
    resource.name = name;
    resource.title = title;
    resource.description = description;
    resource.mime_type = "text/plain";
    resource.read = [text](const std::string& read_uri, const auto&,
                           mcp_call_context&) -> mcp_outcome {
      return json{{"contents", {{{"uri", read_uri}, {"mimeType", "text/plain"}, {"text", text}}}}};
    };
    must(server.add_resource(std::move(resource)));
  };
  text_resource("test://static-text", "static-text", "Static Text Resource",
                "A static text resource for testing",
                "This is the content of the static text resource.");
  text_resource("test://watched-resource", "watched-resource", "Watched Resource",
                "A resource clients may subscribe to", "Watched resource content");

  voxos::mcp_resource binary;
  binary.uri = "test://static-binary";
  binary.name = "static-binary";
  binary.title = "Static Binary Resource";
  binary.description = "A static binary resource (image) for testing";
  binary.mime_type = "image/png";
  binary.read = [](const std::string& uri, const auto&, mcp_call_context&) -> mcp_outcome {
    return json{{"contents", {{{"uri", uri}, {"mimeType", "image/png"}, {"blob", test_image}}}}};
  };
  must(server.add_resource(std::move(binary)));

  voxos::mcp_resource_template data;
  data.uri_template = "test://template/{id}/data";
  data.name = "template";
  data.title = "Resource Template";
  data.description = "A resource template with parameter substitution";
  data.mime_type = "application/json";
  data.read = [](const std::string& uri, const std::map<std::string, std::string>& variables,
                 mcp_call_context&) -> mcp_outcome {
    const auto& id = variables.at("id");
    json body = {{"id", id}, {"templateTest", true}, {"data", "Data for ID: " + id}};
    return json{
      {"contents", {{{"uri", uri}, {"mimeType", "application/json"}, {"text", body.dump()}}}}};
  };
  must(server.add_resource_template(std::move(data)));
}

void prompts(mcp_server& server) {
  auto message = [](json block) { return json{{"role", "user"}, {"content", std::move(block)}}; };
  voxos::mcp_prompt simple;
  simple.name = "test_simple_prompt";
  simple.title = "Simple Test Prompt";
  simple.description = "A simple prompt without arguments";
  simple.get = [message](const auto&, mcp_call_context&) -> mcp_outcome {
    return json{{"messages", {message(text_block("This is a simple prompt for testing."))}}};
  };
  must(server.add_prompt(std::move(simple)));

  voxos::mcp_prompt with_arguments;
  with_arguments.name = "test_prompt_with_arguments";
  with_arguments.title = "Prompt With Arguments";
  with_arguments.description = "A prompt with required arguments";
  with_arguments.arguments = {{"arg1", "First test argument", true},
                              {"arg2", "Second test argument", true}};
  with_arguments.get = [message](const std::map<std::string, std::string>& arguments,
                                 mcp_call_context&) -> mcp_outcome {
    return json{{"messages",
                 {message(text_block("Prompt with arguments: arg1='" + arguments.at("arg1")
                                     + "', arg2='" + arguments.at("arg2") + "'"))}}};
  };
  must(server.add_prompt(std::move(with_arguments)));

  voxos::mcp_prompt embedded;
  embedded.name = "test_prompt_with_embedded_resource";
  embedded.title = "Prompt With Embedded Resource";
  embedded.description = "A prompt that includes an embedded resource";
  embedded.arguments = {{"resourceUri", "URI of the resource to embed", true}};
  embedded.get = [message](const std::map<std::string, std::string>& arguments,
                           mcp_call_context&) -> mcp_outcome {
    return json{{"messages",
                 {message({{"type", "resource"},
                           {"resource",
                            {{"uri", arguments.at("resourceUri")},
                             {"mimeType", "text/plain"},
                             {"text", "Embedded resource content for testing."}}}}),
                  message(text_block("Please process the embedded resource above."))}}};
  };
  must(server.add_prompt(std::move(embedded)));

  voxos::mcp_prompt image;
  image.name = "test_prompt_with_image";
  image.title = "Prompt With Image";
  image.description = "A prompt that includes image content";
  image.get = [message](const auto&, mcp_call_context&) -> mcp_outcome {
    return json{{"messages",
                 {message({{"type", "image"}, {"data", test_image}, {"mimeType", "image/png"}}),
                  message(text_block("Please analyze the image above."))}}};
  };
  must(server.add_prompt(std::move(image)));

  voxos::mcp_prompt needs_context;
  needs_context.name = "test_input_required_result_prompt";
  needs_context.description = "MRTR: prompt that requires elicitation input";
  needs_context.get = [message](const auto&, mcp_call_context& ctx) -> mcp_outcome {
    const auto& answers = ctx.input_responses();
    if (!answers.contains("user_context"))
      return ask({{"user_context", elicitation("What context should the prompt use?",
                                               {{"context", {{"type", "string"}}}}, {"context"})}});
    return json{{"messages",
                 {message(text_block("Prompt with context: "
                                     + answered(answers["user_context"], "context")))}}};
  };
  must(server.add_prompt(std::move(needs_context)));
}

} // namespace

int main(int argc, char** argv) {
  voxos::log::set_level("warn");
  // Block the stop signals before any thread starts, so sigwait takes them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  voxos::mcp_server_options options;
  options.name = "voxos-conformance-fixture";
  options.version = "1.0.0";
  // Lists and static reads are the same for every caller here.
  options.list_cache = {300000, true};
  mcp_server server{options};
  content_tools(server);
  streaming_tools(server);
  input_tools(server);
  input_required_tools(server);
  task_tools(server);
  schema_tool(server);
  resources(server);
  prompts(server);
  voxos::fixture::serve_skills(server);
  server.set_completion([](const voxos::mcp_completion_request&, mcp_call_context&) {
    return voxos::mcp_completion{};
  });

  voxos::http_server::options http;
  http.port = argc > 1 ? static_cast<uint16_t>(std::atoi(argv[1])) : 0;
  http.threads = 16;
  voxos::http_server listener{http};
  server.mount(listener.routes(), "/mcp", {});
  auto port = listener.start();
  if (!port) {
    std::fprintf(stderr, "fixture: %s\n", port.error().message().c_str());
    return 1;
  }
  std::printf("listening http://127.0.0.1:%u/mcp\n", unsigned{*port});
  std::fflush(stdout);

  int received = 0;
  sigwait(&stop_signals, &received);
  server.stop();
  listener.stop();
  return 0;
}
