// An example agent host over the CAF network: connects to a node's
// published run_host, starts a run, lets a scripted stand-in for a model
// (scripted_model.hpp) decide each round of tool calls from the run's tool
// view, hands the calls to the node, reports the turn's text and finishes
// the run. A real model plugs in where the scripted one is made.
//
//   VOXOS_TOKEN=<tenant token> voxos-example-host --port 7101 --agent <agent id>
//       (--forecast "<address>" [--from YYYY-MM-DD] | --script FILE) [--host 127.0.0.1]
//   VOXOS_TOKEN=<tenant token> voxos-example-host --port 7101 --worker [--capacity N]
//       [--hold-ms M] [--items N] [--script FILE]
//
// With --worker it serves the node's queued work instead (worker.hpp).
//
// The scoped actor that starts the run stays its host until the run is
// finished: if this process dies mid-round, the node cancels the run.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "actors/run_host/run_host.hpp"
#include "messages/error.hpp"
#include "messages/register.hpp"
#include "scripted_model.hpp"
#include "worker.hpp"

using namespace voxos;
using nlohmann::json;

namespace {

struct host_config : caf::actor_system_config {
  host_config() {
    register_types(*this);
    load<caf::io::middleman>();
  }
};

struct options {
  std::string host = "127.0.0.1";
  uint16_t port = 7101;
  std::string agent;
  std::string forecast;
  std::string from;
  std::string script;
  bool worker = false;
  example::worker_options work;
};

int usage() {
  std::cerr << "usage: VOXOS_TOKEN=... voxos-example-host --port N --agent ID\n"
               "         (--forecast ADDRESS [--from YYYY-MM-DD] | --script FILE) [--host H]\n"
               "       VOXOS_TOKEN=... voxos-example-host --port N --worker [--capacity N]\n"
               "         [--hold-ms M] [--items N] [--script FILE] [--host H]\n";
  return 2;
}

std::string today() {
  auto now = std::time(nullptr);
  std::tm out{};
  gmtime_r(&now, &out);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &out);
  return text;
}

/// The longest a round can take on a node with default bounds: every call
/// one at a time, each to its deadline (run.max_calls 128 x
/// run.call_timeout_ms 60 s), plus a minute to record it. A host of a node
/// with other bounds waits what those give.
constexpr auto round_wait = std::chrono::minutes(128 + 1);

/// The worker mode: each item's model plays the script (when given) or
/// answers the item's text.
int serve_work(const options& opts, const std::string& token) {
  json script;
  if (!opts.script.empty()) {
    std::ifstream in{opts.script};
    script = json::parse(in, nullptr, false);
    if (!script.is_object()) {
      std::cerr << "the script is not a JSON object\n";
      return 2;
    }
  }
  host_config cfg;
  caf::actor_system sys{cfg};
  auto run_host = sys.middleman().remote_actor<run_host_actor>(opts.host, opts.port);
  if (!run_host) {
    std::cerr << "cannot reach the run host: " << sys.render(run_host.error()) << "\n";
    return 1;
  }
  return example::run_worker(sys, *run_host, token, opts.work,
                             [script](const std::string& text) -> std::unique_ptr<example::model> {
                               if (script.is_object())
                                 return std::make_unique<example::file_model>(script);
                               return std::make_unique<example::reply_model>(text);
                             });
}

} // namespace

int main(int argc, char** argv) {
  std::cout << std::unitbuf; // each line as it happens, also into a pipe
  options opts;
  for (int idx = 1; idx < argc; ++idx) {
    std::string arg = argv[idx];
    auto value = [&]() -> std::string { return idx + 1 < argc ? argv[++idx] : ""; };
    if (arg == "--host")
      opts.host = value();
    else if (arg == "--port")
      opts.port = static_cast<uint16_t>(std::atoi(value().c_str()));
    else if (arg == "--agent")
      opts.agent = value();
    else if (arg == "--forecast")
      opts.forecast = value();
    else if (arg == "--from")
      opts.from = value();
    else if (arg == "--script")
      opts.script = value();
    else if (arg == "--worker")
      opts.worker = true;
    else if (arg == "--capacity")
      opts.work.capacity = static_cast<uint32_t>(std::atoi(value().c_str()));
    else if (arg == "--hold-ms")
      opts.work.hold = std::chrono::milliseconds{std::atoll(value().c_str())};
    else if (arg == "--items")
      opts.work.max_items = static_cast<std::size_t>(std::atoll(value().c_str()));
    else
      return usage();
  }
  const char* token = std::getenv("VOXOS_TOKEN");
  if (token == nullptr)
    return usage();
  if (opts.worker)
    return serve_work(opts, token);
  if (opts.agent.empty() || (opts.forecast.empty() == opts.script.empty()))
    return usage();

  std::unique_ptr<example::model> model;
  if (!opts.script.empty()) {
    std::ifstream in{opts.script};
    auto script = json::parse(in, nullptr, false);
    if (!script.is_object()) {
      std::cerr << "the script is not a JSON object\n";
      return 2;
    }
    model = std::make_unique<example::file_model>(std::move(script));
  } else {
    model = std::make_unique<example::forecast_model>(opts.forecast,
                                                      opts.from.empty() ? today() : opts.from);
  }

  host_config cfg;
  caf::actor_system sys{cfg};
  auto run_host = sys.middleman().remote_actor<run_host_actor>(opts.host, opts.port);
  if (!run_host) {
    std::cerr << "cannot reach the run host: " << sys.render(run_host.error()) << "\n";
    return 1;
  }
  caf::scoped_actor self{sys};
  bool failed = false;
  auto fail = [&](const caf::error& err) {
    std::cerr << "error: " << to_string(code_of(err)) << ": " << message_of(err) << "\n";
    failed = true;
  };

  // Start the run.
  run_ticket ticket;
  self
    ->request(*run_host, std::chrono::seconds(30), create_atom::value, run_atom::value,
              std::string{token}, run_start{opts.agent, "owner_text_chat", "", "", ""})
    .receive([&](run_ticket& t) { ticket = std::move(t); }, fail);
  if (failed)
    return 1;
  auto view = json::parse(ticket.view, nullptr, false);
  std::cout << "run " << ticket.run_id << " in chat " << ticket.chat_id << ": "
            << view.value("direct", json::array()).size() << " tools in view\n"
            << "user: " << model->user_text() << "\n";

  // Rounds until the model answers.
  std::vector<tool_output> previous;
  std::vector<tool_output> seen;
  int round = 0;
  while (auto calls = model->next_round(view, previous)) {
    ++round;
    std::cout << "round " << round << ": " << calls->size() << " calls\n";
    self
      ->request(*run_host, round_wait, tool_atom::value, std::string{token}, ticket.run_id,
                std::move(*calls))
      .receive([&](std::vector<tool_output>& outputs) { previous = std::move(outputs); }, fail);
    if (failed)
      return 1;
    for (const auto& out : previous) {
      std::cout << "  " << out.call_id << " " << out.status << ": " << example::text_of(out)
                << "\n";
      seen.push_back(out);
    }
  }

  // The answer goes into the chat transcript; the run ends.
  auto answer = model->answer(seen);
  std::cout << "assistant: " << answer << "\n";
  self
    ->request(*run_host, std::chrono::seconds(30), turn_atom::value, std::string{token},
              ticket.run_id, model->user_text(), answer)
    .receive([](const std::string&) {}, fail);
  self
    ->request(*run_host, std::chrono::seconds(30), close_atom::value, std::string{token},
              ticket.run_id)
    .receive([](bool) {}, fail);
  return failed ? 1 : 0;
}
