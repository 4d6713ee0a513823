#include "actors/work/work_item.hpp"

#include "storage/digest.hpp"
#include "storage/keys.hpp"

namespace voxos::work {

namespace {

using nlohmann::json;

/// Ids the node makes: 1..64 of [a-z0-9_-].
bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > keys::max_name_length)
    return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

status malformed(std::string_view field) {
  return status::error(errc::corrupt_data, "work item: " + std::string{field} + " is malformed");
}

} // namespace

std::string_view to_string(kind k) noexcept {
  switch (k) {
  case kind::scheduled_turn:
    return "scheduled_turn";
  case kind::child_run:
    return "child_run";
  }
  return "scheduled_turn";
}

std::optional<kind> parse_kind(std::string_view name) noexcept {
  for (auto k : {kind::scheduled_turn, kind::child_run})
    if (to_string(k) == name)
      return k;
  return std::nullopt;
}

json to_json(const item& it) {
  json out{{"item_id", it.item_id},        {"kind", to_string(it.k)}, {"agent_id", it.agent_id},
           {"chat_id", it.chat_id},        {"run_id", it.run_id},     {"text", it.text},
           {"enqueued_us", it.enqueued_us}};
  if (it.k == kind::scheduled_turn) {
    out["schedule_id"] = it.schedule_id;
    out["occurrence_s"] = it.occurrence_s;
  } else {
    out["parent_run_id"] = it.parent_run_id;
    out["context"] = it.context;
    out["provider"] = it.provider;
    out["model"] = it.model;
  }
  return out;
}

result<item> item_from_json(const json& doc) {
  if (!doc.is_object())
    return malformed("the record");
  auto text = [&](const char* key, std::string& out, bool id) -> bool {
    auto found = doc.find(key);
    if (found == doc.end() || !found->is_string())
      return false;
    out = found->get<std::string>();
    return !id || valid_id(out);
  };
  auto integer = [&](const char* key, int64_t& out) -> bool {
    auto found = doc.find(key);
    if (found == doc.end() || !found->is_number_integer())
      return false;
    out = found->get<int64_t>();
    return true;
  };
  item it;
  std::string kind_name;
  if (!text("item_id", it.item_id, true))
    return malformed("item_id");
  if (!text("kind", kind_name, false) || !parse_kind(kind_name))
    return malformed("kind");
  it.k = *parse_kind(kind_name);
  if (!text("agent_id", it.agent_id, true))
    return malformed("agent_id");
  if (!text("chat_id", it.chat_id, true))
    return malformed("chat_id");
  if (!text("run_id", it.run_id, true))
    return malformed("run_id");
  if (!text("text", it.text, false))
    return malformed("text");
  if (!integer("enqueued_us", it.enqueued_us))
    return malformed("enqueued_us");
  if (it.k == kind::scheduled_turn) {
    if (!text("schedule_id", it.schedule_id, true))
      return malformed("schedule_id");
    if (!integer("occurrence_s", it.occurrence_s))
      return malformed("occurrence_s");
  } else {
    if (!text("parent_run_id", it.parent_run_id, true))
      return malformed("parent_run_id");
    if (!text("context", it.context, false)
        || (it.context != "isolated" && it.context != "summary"))
      return malformed("context");
    if (!text("provider", it.provider, false) || !text("model", it.model, false))
      return malformed("model");
  }
  return it;
}

std::string scheduled_item_id(std::string_view schedule_id, int64_t occurrence_s) {
  auto digest = digest::sha256_hex(std::string{schedule_id} + "@" + std::to_string(occurrence_s));
  return "w_" + digest.substr(0, 24);
}

bool valid_item_id(std::string_view id) noexcept {
  return valid_id(id);
}

std::string child_item_id() {
  return "w_" + digest::random_hex(12);
}

std::string run_id_of(std::string_view item_id) {
  auto tail = item_id.substr(item_id.find('_') == std::string_view::npos ? 0 : 2);
  return "r_w" + std::string{tail};
}

bool is_work_run(std::string_view run_id) noexcept {
  return run_id.compare(0, 3, "r_w") == 0;
}

std::string stream_of(std::string_view chat_id) {
  return "chat." + std::string{chat_id};
}

event_draft enqueued_event(const item& it) {
  return {std::string{enqueued}, to_json(it).dump()};
}

event_draft settled_event(std::string_view type, const item& it, std::string_view reason) {
  json data{{"item_id", it.item_id}, {"run_id", it.run_id}};
  if (!reason.empty())
    data["reason"] = std::string{reason};
  return {std::string{type}, data.dump()};
}

std::string work_prefix(std::string_view tenant) {
  return keys::tenant_prefix(tenant) + "work/";
}

std::string schedule_prefix(std::string_view tenant) {
  return keys::tenant_prefix(tenant) + "sched/";
}

status project(const event_record& ev, std::vector<state_write>& out) {
  std::string_view type = ev.type;
  bool work_event = type.compare(0, 5, "work.") == 0;
  bool schedule_event = type == schedule_saved || type == schedule_deleted;
  if (!work_event && !schedule_event)
    return status::ok();
  if (std::string_view{ev.stream}.compare(0, 5, "chat.") != 0)
    return status::error(errc::out_of_range, "work and schedule events belong to a chat's stream");
  auto doc = json::parse(ev.data, nullptr, false);
  if (!doc.is_object())
    return status::error(errc::bad_json, "a work or schedule event must be one JSON object");
  if (schedule_event) {
    auto id = doc.find("schedule_id");
    if (id == doc.end() || !id->is_string() || !valid_id(id->get_ref<const std::string&>()))
      return status::error(errc::out_of_range, "schedule_id: expected a schedule id");
    auto key = schedule_prefix(ev.tenant) + id->get<std::string>();
    if (type == schedule_saved)
      out.push_back({std::move(key), ev.data});
    else
      out.push_back({std::move(key), std::nullopt});
    return status::ok();
  }
  if (type == enqueued) {
    auto it = item_from_json(doc);
    if (!it)
      return status::error(errc::out_of_range, it.error().message());
    if (stream_of(it->chat_id) != ev.stream)
      return status::error(errc::out_of_range, "work item: chat_id is not this stream's chat");
    out.push_back({work_prefix(ev.tenant) + it->item_id, ev.data});
    return status::ok();
  }
  if (type == completed || type == failed || type == cancelled) {
    auto id = doc.find("item_id");
    if (id == doc.end() || !id->is_string() || !valid_id(id->get_ref<const std::string&>()))
      return status::error(errc::out_of_range, "item_id: expected a work item id");
    out.push_back({work_prefix(ev.tenant) + id->get<std::string>(), std::nullopt});
    return status::ok();
  }
  return status::error(errc::out_of_range, "unknown work event type");
}

} // namespace voxos::work
