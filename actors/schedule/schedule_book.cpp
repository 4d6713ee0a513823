#include "actors/schedule/schedule_book.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>

#include <nlohmann/json.hpp>

#include "config/civil_time.hpp"
#include "config/time_zone.hpp"
#include "storage/digest.hpp"
#include "transport/json_text.hpp"

namespace voxos::schedules {

namespace {

using nlohmann::json;

/// The tool schema's bounds, checked again (the keeper may be asked by
/// something other than a validated tool call).
constexpr std::size_t max_task_name_bytes = 100;
constexpr std::size_t max_instruction_bytes = 4000;

int64_t seconds_of(int64_t now_us) {
  return floor_div(now_us, 1'000'000);
}

/// Which rule a refused timing broke. parse_timing reports each of its
/// bounds as out_of_range; asking it again with one bound lifted at a time
/// tells which one it was, so its rules have one copy, in timing.cpp.
std::string timing_rule(const json& timing, const std::string& zone, int64_t now_s,
                        const schedule_bounds& bounds, const status& refused, time_zone_db& zones) {
  if (refused.code() != errc::out_of_range)
    return "invalid_arguments";
  auto lifted = bounds;
  lifted.min_interval_s = 1;
  lifted.max_interval_s = max_schedule_interval_s;
  if (auto parsed = parse_timing(timing, zone, now_s, lifted, zones))
    return parsed->every_s < bounds.min_interval_s ? "interval_too_short" : "interval_too_long";
  lifted.max_horizon_s = std::numeric_limits<int64_t>::max();
  if (parse_timing(timing, zone, now_s, lifted, zones))
    return "too_far_ahead";
  if (parse_timing(timing, zone, time_zone::min_seconds, lifted, zones))
    return "in_past";
  return "invalid_arguments";
}

/// A string argument of 1 .. `max` bytes, or the refusal naming it.
std::optional<refusal> text_argument(const json& args, const char* key, std::size_t max,
                                     std::string& out) {
  auto found = args.find(key);
  if (found == args.end() || !found->is_string() || found->get_ref<const std::string&>().empty()
      || found->get_ref<const std::string&>().size() > max)
    return refusal{"invalid_arguments", std::string{key} + " must be a string of 1 to "
                                          + std::to_string(max) + " bytes"};
  out = found->get<std::string>();
  return std::nullopt;
}

using text_member = std::pair<std::string_view, std::string_view>;

/// Whether `text` needs no escaping: ids the node makes ([a-z0-9_-]) and
/// other plain ASCII, checked byte by byte (cheaper than the UTF-8 check
/// of append_json_string for the short ids of a record).
bool plain_ascii(std::string_view text) {
  for (char c : text)
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\')
      return false;
  return true;
}

/// Appends `"key":` to an object being written (a comma first unless it
/// is the object's first member).
void append_key(std::string& out, std::string_view key) {
  if (out.back() != '{')
    out += ',';
  out += '"';
  out += key;
  out += "\":";
}

/// Appends `"key":"value"` for each member.
void append_members(std::string& out, std::initializer_list<text_member> members) {
  for (auto [key, value] : members) {
    append_key(out, key);
    if (plain_ascii(value)) {
      out += '"';
      out += value;
      out += '"';
    } else {
      append_json_string(out, value);
    }
  }
}

void append_integer(std::string& out, std::string_view key, int64_t value) {
  append_key(out, key);
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  out.append(digits, static_cast<std::size_t>(end - digits));
}

void append_optional(std::string& out, std::string_view key, const std::optional<int64_t>& value) {
  if (value) {
    append_integer(out, key, *value);
  } else {
    append_key(out, key);
    out += "null";
  }
}

/// The stored form, with the fire's last fired and next due times.
std::string write_record(std::string_view schedule_id, const record& rec,
                         const std::optional<int64_t>& last_fired_s,
                         const std::optional<int64_t>& next_due_s) {
  std::string out;
  out.reserve(256 + rec.instruction.size() + rec.task_name.size());
  out += '{';
  append_members(out, {{"schedule_id", schedule_id},
                       {"agent_id", rec.agent_id},
                       {"chat_id", rec.chat_id},
                       {"created_by_run", rec.created_by_run},
                       {"task_name", rec.task_name},
                       {"instruction", rec.instruction},
                       {"timezone", rec.timing.zone}});
  append_key(out, "timing");
  out += rec.timing_json.empty() ? timing_to_json(rec.timing).dump() : rec.timing_json;
  append_members(out, {{"state", rec.st == state::active ? "active" : "paused"}});
  append_integer(out, "created_us", rec.created_us);
  append_optional(out, "last_fired_s", last_fired_s);
  append_optional(out, "resumed_s", rec.resumed_s);
  append_optional(out, "next_due_s", next_due_s);
  out += '}';
  return out;
}

} // namespace

// -- creating -------------------------------------------------------------------

creation create(const requester& who, const json& arguments, const create_limits& limits,
                std::size_t held, time_zone_db& zones) {
  creation out;
  auto refuse = [&out](std::string code, std::string message) {
    out.refused = refusal{std::move(code), std::move(message)};
    return std::move(out);
  };
  if (held >= limits.max_schedules)
    return refuse("too_many_schedules",
                  "this account holds " + std::to_string(limits.max_schedules)
                    + " schedules, the most it may (work.max_schedules); the owner must delete "
                      "one first");
  if (!arguments.is_object())
    return refuse("invalid_arguments", "the arguments must be an object");
  record rec;
  if (auto bad = text_argument(arguments, "task_name", max_task_name_bytes, rec.task_name))
    return refuse(bad->code, bad->message);
  if (auto bad = text_argument(arguments, "instruction", max_instruction_bytes, rec.instruction))
    return refuse(bad->code, bad->message);
  std::string zone_name;
  if (auto bad = text_argument(arguments, "timezone", 64, zone_name))
    return refuse(bad->code, bad->message);
  auto timing = arguments.find("timing");
  if (timing == arguments.end())
    return refuse("invalid_arguments", "timing is required");

  // The zone first: its refusal is its own.
  auto zone = zones.load(zone_name);
  if (!zone)
    return zone.error().code() == errc::out_of_range || zone.error().code() == errc::not_found
             ? refuse("unknown_timezone",
                      "timezone is not an IANA time zone this node knows; use a name such as "
                      "Europe/London or America/New_York")
             : refuse("timezone_unavailable", "the node's data for this time zone cannot be read");

  // The timing against the bounds.
  const int64_t now_s = seconds_of(who.now_us);
  auto parsed = parse_timing(*timing, zone_name, now_s, limits.timing, zones);
  if (!parsed)
    return refuse(timing_rule(*timing, zone_name, now_s, limits.timing, parsed.error(), zones),
                  parsed.error().message());
  rec.agent_id = who.agent_id;
  rec.chat_id = who.chat_id;
  rec.created_by_run = who.run_id;
  rec.timing = std::move(*parsed);
  rec.timing_json = timing_to_json(rec.timing).dump();
  rec.zone = std::move(*zone);
  rec.created_us = who.now_us;
  rec.next_due_s = next_occurrence(rec.timing, *rec.zone, now_s);
  out.schedule_id = "sc_" + digest::random_hex(8);
  out.rec = std::move(rec);
  return out;
}

// -- the stored form ------------------------------------------------------------

std::string to_json_text(std::string_view schedule_id, const record& rec) {
  return write_record(schedule_id, rec, rec.last_fired_s, rec.next_due_s);
}

std::string iso_utc(int64_t utc_s) {
  return iso_date_time(utc_s) + "Z";
}

std::string iso_local(const time_zone& zone, int64_t utc_s) {
  return iso_date_time(zone.to_local(utc_s)) + iso_offset(zone.at(utc_s).utc_offset_s);
}

json to_listing(std::string_view schedule_id, const record& rec) {
  auto out = json::parse(to_json_text(schedule_id, rec));
  out["next_due_utc"] = nullptr;
  out["next_due_local"] = nullptr;
  if (rec.next_due_s && rec.st == state::active) {
    out["next_due_utc"] = iso_utc(*rec.next_due_s);
    if (rec.zone)
      out["next_due_local"] = iso_local(*rec.zone, *rec.next_due_s);
  }
  return out;
}

result<std::pair<std::string, record>> from_json(const json& stored, time_zone_db& zones) {
  auto corrupt = [](const std::string& what) {
    return status::error(errc::corrupt_data, "stored schedule: " + what);
  };
  if (!stored.is_object())
    return corrupt("not an object");
  record rec;
  std::string schedule_id;
  std::string zone_name;
  for (auto [key, out] : {std::pair<const char*, std::string*>{"schedule_id", &schedule_id},
                          {"agent_id", &rec.agent_id},
                          {"chat_id", &rec.chat_id},
                          {"created_by_run", &rec.created_by_run},
                          {"task_name", &rec.task_name},
                          {"instruction", &rec.instruction},
                          {"timezone", &zone_name}}) {
    auto found = stored.find(key);
    if (found == stored.end() || !found->is_string())
      return corrupt(std::string{key} + " is not a string");
    *out = found->get<std::string>();
  }
  auto timing = timing_from_json(stored.value("timing", json{}));
  if (!timing)
    return timing.error();
  if (timing->zone != zone_name)
    return corrupt("timezone is not the timing's zone");
  rec.timing = std::move(*timing);
  rec.timing_json = timing_to_json(rec.timing).dump();
  auto st = stored.value("state", std::string{});
  if (st != "active" && st != "paused")
    return corrupt("state is neither active nor paused");
  rec.st = st == "active" ? state::active : state::paused;
  auto created = stored.find("created_us");
  if (created == stored.end() || !created->is_number_integer())
    return corrupt("created_us is not an integer");
  rec.created_us = created->get<int64_t>();
  for (auto [key, out] :
       {std::pair<const char*, std::optional<int64_t>*>{"last_fired_s", &rec.last_fired_s},
        {"resumed_s", &rec.resumed_s},
        {"next_due_s", &rec.next_due_s}}) {
    auto found = stored.find(key);
    if (found == stored.end() || found->is_null())
      continue;
    if (!found->is_number_integer())
      return corrupt(std::string{key} + " is neither null nor an integer");
    *out = found->get<int64_t>();
  }
  if (auto zone = zones.load(zone_name))
    rec.zone = std::move(*zone);
  return std::pair<std::string, record>{std::move(schedule_id), std::move(rec)};
}

std::string item_text(const work::item& it) {
  std::string out;
  out.reserve(320 + it.text.size());
  out += '{';
  append_members(out, {{"item_id", it.item_id},
                       {"kind", work::to_string(it.k)},
                       {"agent_id", it.agent_id},
                       {"chat_id", it.chat_id},
                       {"run_id", it.run_id},
                       {"text", it.text}});
  append_integer(out, "enqueued_us", it.enqueued_us);
  if (it.k == work::kind::scheduled_turn) {
    append_members(out, {{"schedule_id", it.schedule_id}});
    append_integer(out, "occurrence_s", it.occurrence_s);
  } else {
    append_members(out, {{"parent_run_id", it.parent_run_id},
                         {"context", it.context},
                         {"provider", it.provider},
                         {"model", it.model}});
  }
  out += '}';
  return out;
}

event_draft saved_event(std::string_view schedule_id, const record& rec) {
  return {std::string{work::schedule_saved}, to_json_text(schedule_id, rec)};
}

event_draft deleted_event(std::string_view schedule_id) {
  std::string data{"{"};
  append_members(data, {{"schedule_id", schedule_id}});
  data += '}';
  return {std::string{work::schedule_deleted}, std::move(data)};
}

// -- firing and the owner's changes ---------------------------------------------

firing fire(std::string_view schedule_id, const record& rec, int64_t now_us) {
  firing out;
  if (!rec.zone || rec.st != state::active)
    return out; // never due (not indexed)
  // What counts as fired: the occurrence last fired, and for an interval
  // every occurrence up to its last resume (passed over by the pause).
  auto settled = rec.last_fired_s;
  if (rec.timing.k == schedule_timing::kind::interval && rec.resumed_s)
    settled = std::max(settled.value_or(*rec.resumed_s), *rec.resumed_s);
  const auto decided = decide_due(rec.timing, *rec.zone, settled, seconds_of(now_us));
  out.next_due_s = decided.next_due_utc_s;
  if (!decided.fire)
    return out;
  out.fire = true;
  out.occurrence_s = decided.occurrence_utc_s;
  auto& it = out.item;
  it.item_id = work::scheduled_item_id(schedule_id, out.occurrence_s);
  it.k = work::kind::scheduled_turn;
  it.agent_id = rec.agent_id;
  it.chat_id = rec.chat_id;
  it.run_id = work::run_id_of(it.item_id);
  it.text = rec.instruction;
  it.enqueued_us = now_us;
  it.schedule_id = std::string{schedule_id};
  it.occurrence_s = out.occurrence_s;
  // Nothing left to fire: the schedule goes with its last turn.
  out.gone = !out.next_due_s;
  out.with.push_back(fired_event(schedule_id, rec, out.occurrence_s, out.next_due_s));
  return out;
}

event_draft fired_event(std::string_view schedule_id, const record& rec, int64_t occurrence_s,
                        const std::optional<int64_t>& next_due_s) {
  if (!next_due_s)
    return deleted_event(schedule_id);
  return {std::string{work::schedule_saved},
          write_record(schedule_id, rec, occurrence_s, next_due_s)};
}

change pause(std::string_view schedule_id, const record& rec) {
  change out;
  if (rec.st == state::paused)
    return out;
  record after = rec;
  after.st = state::paused;
  after.next_due_s.reset();
  after.busy = false;
  out.event = saved_event(schedule_id, after);
  out.after = std::move(after);
  return out;
}

change resume(std::string_view schedule_id, const record& rec, int64_t now_s) {
  change out;
  if (rec.st == state::active)
    return out;
  if (!rec.zone) {
    out.refused = refusal{"timezone_unavailable", "the schedule's time zone cannot be loaded"};
    return out;
  }
  auto next =
    next_occurrence(rec.timing, *rec.zone, std::max(now_s, rec.last_fired_s.value_or(now_s)));
  if (!next) {
    out.refused = refusal{"passed", "its time passed while it was paused and nothing is left to "
                                    "run; delete it instead"};
    return out;
  }
  record after = rec;
  after.st = state::active;
  after.resumed_s = now_s;
  after.next_due_s = next;
  after.busy = false;
  out.event = saved_event(schedule_id, after);
  out.after = std::move(after);
  return out;
}

// -- the book ---------------------------------------------------------------------

const record* book::find(std::string_view schedule_id) const {
  auto found = records_.find(schedule_id);
  return found == records_.end() ? nullptr : &found->second;
}

void book::unindex(const map::value_type& entry) {
  if (entry.second.next_due_s)
    due_.erase({*entry.second.next_due_s, std::string_view{entry.first}});
}

void book::index(const map::value_type& entry) {
  const auto& rec = entry.second;
  if (rec.st == state::active && !rec.busy && rec.next_due_s && rec.zone)
    due_.emplace(*rec.next_due_s, std::string_view{entry.first});
}

void book::put(std::string schedule_id, record rec) {
  auto found = records_.find(schedule_id);
  if (found != records_.end()) {
    unindex(*found);
    found->second = std::move(rec);
  } else {
    found = records_.emplace(std::move(schedule_id), std::move(rec)).first;
  }
  index(*found);
}

void book::erase(std::string_view schedule_id) {
  auto found = records_.find(schedule_id);
  if (found == records_.end())
    return;
  unindex(*found);
  records_.erase(found);
}

void book::update(std::string_view schedule_id, const std::function<void(record&)>& edit) {
  auto found = records_.find(schedule_id);
  if (found == records_.end())
    return;
  unindex(*found);
  edit(found->second);
  index(*found);
}

std::optional<int64_t> book::next_due() const {
  if (due_.empty())
    return std::nullopt;
  return due_.begin()->first;
}

std::vector<std::string_view> book::due(int64_t now_s) const {
  std::vector<std::string_view> out;
  for (auto pos = due_.begin(); pos != due_.end() && pos->first <= now_s; ++pos)
    out.push_back(pos->second);
  return out;
}

} // namespace voxos::schedules
