#include "messages/register.hpp"

#include <caf/actor_system_config.hpp>

#include "messages/error.hpp"
#include "messages/types.hpp"

namespace voxos {

namespace {

template <class T>
void add(caf::actor_system_config* cfg, std::vector<std::string>* names, const char* name) {
  if (cfg != nullptr)
    cfg->add_message_type<T>(name);
  if (names != nullptr)
    names->emplace_back(name);
}

// The single list of wire types: registers them on `cfg` and/or lists their
// names into `names` (either may be null).
void visit_types(caf::actor_system_config* cfg, std::vector<std::string>* names) {
  auto* c = cfg;
  add<event_draft>(c, names, "voxos::event_draft");
  add<event_record>(c, names, "voxos::event_record");
  add<append_request>(c, names, "voxos::append_request");
  add<append_result>(c, names, "voxos::append_result");
  add<stream_query>(c, names, "voxos::stream_query");
  add<state_entry>(c, names, "voxos::state_entry");
  add<store_report>(c, names, "voxos::store_report");
  add<tenant_record>(c, names, "voxos::tenant_record");
  add<token_record>(c, names, "voxos::token_record");
  add<issued_token>(c, names, "voxos::issued_token");
  add<tenant_identity>(c, names, "voxos::tenant_identity");
  add<pong_reply>(c, names, "voxos::pong_reply");
  add<tool_call>(c, names, "voxos::tool_call");
  add<tool_output>(c, names, "voxos::tool_output");
  add<run_start>(c, names, "voxos::run_start");
  add<run_ticket>(c, names, "voxos::run_ticket");
  add<std::vector<tool_call>>(c, names, "voxos::tool_calls");
  add<std::vector<tool_output>>(c, names, "voxos::tool_outputs");
  add<std::vector<event_record>>(c, names, "voxos::event_records");
  add<std::vector<tenant_record>>(c, names, "voxos::tenant_records");
  add<std::vector<token_record>>(c, names, "voxos::token_records");
  add<std::vector<state_entry>>(c, names, "voxos::state_entries");
}

} // namespace

void register_types(caf::actor_system_config& cfg) {
  visit_types(&cfg, nullptr);
  cfg.add_error_category(error_category(),
                         [](uint8_t code, caf::atom_value, const caf::message& ctx) -> std::string {
                           std::string out{to_string(static_cast<errc>(code))};
                           if (ctx.match_elements<std::string>())
                             out += ": " + ctx.get_as<std::string>(0);
                           return out;
                         });
}

const std::vector<std::string>& wire_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    visit_types(nullptr, &out);
    return out;
  }();
  return names;
}

void set_io_bound_scheduler(caf::actor_system_config& cfg) {
  cfg.set("scheduler.policy", caf::atom("stealing"));
  cfg.set("work-stealing.aggressive-poll-attempts", size_t{100});
  cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
  cfg.set("work-stealing.relaxed-steal-interval", size_t{1});
  // Bounds how long work queued behind a busy worker waits for the other
  // (a message an actor sends goes to its own worker's queue and wakes no
  // one; the other worker, asleep, steals it when it wakes). Each idle
  // worker wakes this often: an idle voxosd uses 1.4% of a core at 2 ms,
  // 0.65% at 5 ms, 2.7% at 1 ms, 5.6% at 500 us, 10.9% at 250 us, 16.5% at
  // 100 us. Measured with 250 us beside 2 ms (saturation_bench, run_bench
  // --paired-only), the shorter sleep lowered no p99 at 400 to 1,600 calls/s
  // and cost throughput at saturation (its wakes compete for the two cores).
  cfg.set("work-stealing.relaxed-sleep-duration", caf::timespan{std::chrono::milliseconds{2}});
}

} // namespace voxos
