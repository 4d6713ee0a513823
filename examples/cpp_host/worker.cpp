#include "worker.hpp"

#include <chrono>
#include <iostream>
#include <thread>

#include <caf/scoped_actor.hpp>

#include "messages/error.hpp"

namespace voxos::example {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr auto ask_wait = std::chrono::seconds(30);
constexpr auto round_wait = std::chrono::minutes(128 + 1);

/// Requests `(work_atom, token, op, body)` of the run host; the JSON answer,
/// or nullopt after printing the refusal. A heartbeat waits less: a node
/// that went away is noticed well within the lease.
std::optional<json> work_op(caf::scoped_actor& self, const run_host_actor& run_host,
                            const std::string& token, const std::string& op, const json& body) {
  std::optional<json> out;
  auto wait = op == "heartbeat" ? std::chrono::seconds(5) : ask_wait;
  self->request(run_host, wait, work_atom::value, token, op, body.dump())
    .receive([&](const std::string& text) { out = json::parse(text, nullptr, false); },
             [&](const caf::error& err) {
               std::cout << "refused " << op << " " << body.value("item_id", "") << ": "
                         << to_string(code_of(err)) << ": " << message_of(err) << "\n";
             });
  return out;
}

/// Holds the lease for `hold` (heartbeating at a third of the lease), as a
/// long model call would; false as soon as a heartbeat is refused (the
/// lease is lost, or the node is gone).
bool hold_lease(caf::scoped_actor& self, const run_host_actor& run_host, const std::string& token,
                const json& lease, milliseconds hold) {
  auto beat = milliseconds{std::max<int64_t>(100, lease.value("lease_ms", 30'000) / 3)};
  auto until = std::chrono::steady_clock::now() + hold;
  while (std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::min<milliseconds>(
      beat, std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now())));
    if (!work_op(self, run_host, token, "heartbeat",
                 {{"item_id", lease["item_id"]}, {"lease_id", lease["lease_id"]}}))
      return false;
  }
  return true;
}

/// One leased item: begin its run, play the model's rounds, complete it.
void serve(caf::scoped_actor& self, const run_host_actor& run_host, const std::string& token,
           const json& lease, const worker_options& opts, const model_factory& make_model) {
  auto item_id = lease.value("item_id", "");
  std::cout << "lease " << item_id << " attempt " << lease.value("attempt", 0) << " run "
            << lease.value("run_id", "") << " kind " << lease.value("kind", "") << "\n";
  json held{{"item_id", item_id}, {"lease_id", lease["lease_id"]}};
  auto ticket = work_op(self, run_host, token, "begin", held);
  if (!ticket)
    return;
  auto view = (*ticket)["view"];
  std::cout << "begun " << ticket->value("run_id", "") << ": "
            << view.value("direct", json::array()).size() << " tools in view\n";
  if (opts.hold.count() > 0 && !hold_lease(self, run_host, token, lease, opts.hold))
    return;
  auto model = make_model(lease.value("text", ""));
  std::vector<tool_output> previous;
  std::vector<tool_output> seen;
  while (auto calls = model->next_round(view, previous)) {
    bool ok = true;
    self
      ->request(run_host, round_wait, tool_atom::value, token, ticket->value("run_id", ""),
                std::move(*calls))
      .receive([&](std::vector<tool_output>& outputs) { previous = std::move(outputs); },
               [&](const caf::error& err) {
                 std::cout << "round refused: " << message_of(err) << "\n";
                 ok = false;
               });
    if (!ok)
      break;
    seen.insert(seen.end(), previous.begin(), previous.end());
  }
  auto done = held;
  done["answer"] = model->answer(seen);
  if (work_op(self, run_host, token, "complete", done))
    std::cout << "completed " << item_id << "\n";
}

} // namespace

int run_worker(caf::actor_system& sys, const run_host_actor& run_host, const std::string& token,
               const worker_options& opts, const model_factory& make_model) {
  caf::scoped_actor self{sys};
  bool registered = false;
  self->request(run_host, ask_wait, work_atom::value, token, caf::actor{self}, opts.capacity)
    .receive([&](bool ok) { registered = ok; },
             [&](const caf::error& err) {
               std::cerr << "error: " << to_string(code_of(err)) << ": " << message_of(err) << "\n";
             });
  if (!registered)
    return 1;
  std::cout << "worker ready, capacity " << opts.capacity << "\n";
  std::size_t served = 0;
  bool node_gone = false;
  self->monitor(run_host);
  while (!node_gone && (opts.max_items == 0 || served < opts.max_items)) {
    self->receive(
      [&](work_atom, offer_atom, const std::string& text) {
        auto lease = json::parse(text, nullptr, false);
        if (lease.is_object())
          serve(self, run_host, token, lease, opts, make_model);
        ++served;
      },
      [&](caf::down_msg&) {
        std::cout << "the node went away\n";
        node_gone = true;
      });
  }
  return node_gone ? 3 : 0;
}

} // namespace voxos::example
