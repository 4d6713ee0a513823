#include "actors/tools/history.hpp"

#include <algorithm>
#include <ctime>
#include <initializer_list>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "config/log.hpp"
#include "storage/event_db.hpp"
#include "transport/json_text.hpp"

namespace voxos {

namespace {

using json = nlohmann::json;
namespace od = simdjson::ondemand;

constexpr std::string_view chat_prefix = "chat.";
constexpr std::string_view run_prefix = "run.";
/// Runs whose chat is remembered (for their rounds' records) at most; past
/// it the memory starts afresh and a round reads its run's record instead.
constexpr std::size_t max_remembered_runs = 4096;

// -- keys and names -------------------------------------------------------------------

std::string turn_key(std::string_view chat_id, uint64_t seq) {
  return "t." + std::string{chat_id} + "." + std::to_string(seq);
}

std::string round_key(std::string_view run_id, uint64_t seq) {
  return "a." + std::string{run_id} + "." + std::to_string(seq);
}

std::string run_key(std::string_view run_id) {
  return "r." + std::string{run_id};
}

const char* kind_name(std::string_view kind) {
  return kind == "t" ? "transcript" : kind == "a" ? "tool_activity" : "run";
}

/// "2025-03-14T09:26:53Z"
std::string utc_time(int64_t us) {
  auto seconds = static_cast<std::time_t>(us / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

/// `name` with '_', '.' and '-' read as spaces ("get_forecast" -> "get
/// forecast"), so a search for one of its words finds it.
std::string spaced(std::string_view name) {
  std::string out{name};
  std::replace_if(
    out.begin(), out.end(), [](char c) { return c == '_' || c == '.' || c == '-'; }, ' ');
  return out;
}

/// `name`, and its words apart when it is one word of several
/// ("invalid_arguments (invalid arguments)").
std::string with_words(std::string_view name) {
  auto words = spaced(name);
  return words == name ? words : std::string{name} + " (" + words + ")";
}

std::size_t json_bytes(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace).size();
}

// -- event data (simdjson On-Demand: a snapshot's tool list is skipped unread) --------

/// Calls each(key, value) for every member of an object; false if it is not
/// one or `each` refuses.
template <class F>
bool for_each_member(od::object object, F&& each) {
  for (auto member : object) {
    std::string_view key;
    if (member.unescaped_key().get(key) != simdjson::SUCCESS)
      return false;
    od::value value;
    if (member.value().get(value) != simdjson::SUCCESS || !each(key, value))
      return false;
  }
  return true;
}

/// Where one member of an object goes: a string or a number.
struct field_target {
  std::string_view name;
  std::string* text = nullptr;
  uint64_t* number = nullptr;
};

/// Reads `value` into the target `key` names: 1 if read, 0 if no target is
/// named so (the member is skipped), -1 if the value has the wrong type.
int read_field(std::string_view key, od::value& value,
               std::initializer_list<field_target> targets) {
  for (const auto& target : targets) {
    if (target.name != key)
      continue;
    if (target.number != nullptr)
      return value.get_uint64().get(*target.number) == simdjson::SUCCESS ? 1 : -1;
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS)
      return -1;
    target.text->assign(text);
    return 1;
  }
  return 0;
}

/// Parses one event's data (a JSON object) and hands its members to `each`.
template <class F>
bool parse_object(const std::string& data, F&& each) {
  thread_local od::parser parser;
  thread_local std::string padded;
  padded.assign(data);
  padded.reserve(data.size() + simdjson::SIMDJSON_PADDING);
  od::document doc;
  od::object object;
  if (parser.iterate(padded.data(), padded.size(), padded.capacity()).get(doc) != simdjson::SUCCESS
      || doc.get_object().get(object) != simdjson::SUCCESS)
    return false;
  return for_each_member(object, each);
}

struct turn_data {
  std::string run_id;
  uint64_t turn = 0;
  std::string user;
  std::string assistant;
};

std::optional<turn_data> parse_turn(const std::string& data) {
  turn_data out;
  int found = 0; // each of the four is required
  bool ok = parse_object(data, [&](std::string_view key, od::value& value) {
    auto read = read_field(key, value,
                           {{"run_id", &out.run_id},
                            {"turn", nullptr, &out.turn},
                            {"user", &out.user},
                            {"assistant", &out.assistant}});
    found += read > 0 ? 1 : 0;
    return read >= 0;
  });
  if (!ok || found != 4)
    return std::nullopt;
  return out;
}

struct run_data {
  std::string chat_id;
  std::string agent_id;
  std::string chan;
  std::string caller;
};

std::optional<run_data> parse_run_started(const std::string& data) {
  run_data out;
  bool has_snapshot = false;
  bool ok = parse_object(data, [&](std::string_view key, od::value& value) {
    if (key != "snapshot")
      return read_field(key, value, {{"chat_id", &out.chat_id}}) >= 0;
    has_snapshot = true;
    od::object snapshot;
    if (value.get_object().get(snapshot) != simdjson::SUCCESS)
      return false;
    return for_each_member(snapshot, [&](std::string_view name, od::value& field) {
      return read_field(name, field,
                        {{"agent_id", &out.agent_id}, {"chan", &out.chan}, {"caller", &out.caller}})
             >= 0;
    });
  });
  if (!ok || !has_snapshot || out.chat_id.empty())
    return std::nullopt;
  return out;
}

struct call_data {
  std::string name;
  std::string status;
  std::string reason;
  std::string server_id;
  std::string tool;
  uint64_t us = 0;
};

struct round_data {
  uint64_t round = 0;
  std::vector<call_data> calls;
};

std::optional<round_data> parse_round(const std::string& data) {
  round_data out;
  bool has_calls = false;
  bool ok = parse_object(data, [&](std::string_view key, od::value& value) {
    if (key != "calls")
      return read_field(key, value, {{"round", nullptr, &out.round}}) >= 0;
    has_calls = true;
    od::array calls;
    if (value.get_array().get(calls) != simdjson::SUCCESS)
      return false;
    for (auto element : calls) {
      od::object object;
      if (element.get_object().get(object) != simdjson::SUCCESS)
        return false;
      call_data call;
      bool call_ok = for_each_member(object, [&](std::string_view name, od::value& field) {
        return read_field(name, field,
                          {{"name", &call.name},
                           {"status", &call.status},
                           {"reason", &call.reason},
                           {"server_id", &call.server_id},
                           {"tool", &call.tool},
                           {"us", nullptr, &call.us}})
               >= 0;
      });
      if (!call_ok)
        return false;
      out.calls.push_back(std::move(call));
    }
    return true;
  });
  if (!ok || !has_calls)
    return std::nullopt;
  return out;
}

/// run.finished {"rounds","calls"} or run.cancelled {"cancelled_calls"}.
std::optional<json> parse_run_end(const std::string& data) {
  auto out = json::object();
  bool ok = parse_object(data, [&](std::string_view key, od::value& value) {
    uint64_t number = 0;
    auto read = read_field(key, value,
                           {{"rounds", nullptr, &number},
                            {"calls", nullptr, &number},
                            {"cancelled_calls", nullptr, &number}});
    if (read > 0)
      out[std::string{key}] = number;
    return read >= 0;
  });
  if (!ok)
    return std::nullopt;
  return out;
}

/// What a run's document says, in words.
std::string run_summary(const json& meta) {
  std::string text = "Run on " + spaced(meta.value("chan", "")) + " for agent "
                     + meta.value("agent", "") + ", caller " + spaced(meta.value("caller", ""))
                     + ": " + meta.value("outcome", "");
  std::string counts;
  for (const char* name : {"rounds", "calls", "cancelled_calls"})
    if (meta.contains(name))
      counts += (counts.empty() ? "" : ", ") + spaced(name) + ": "
                + std::to_string(meta[name].get<uint64_t>());
  return text + (counts.empty() ? "" : " (" + counts + ")") + ".";
}

/// What a tool round's calls did, in words, one line per call.
std::string round_summary(const round_data& round) {
  std::string text;
  for (const auto& call : round.calls) {
    text += with_words(call.name) + " " + call.status;
    if (!call.reason.empty())
      text += ": " + with_words(call.reason);
    if (!call.tool.empty())
      text += " [" + with_words(call.tool) + " on " + call.server_id + "]";
    text += "\n";
  }
  return text;
}

/// A round's record data: {"k":"a","run","chat","round","seq","us","calls":[{"name","status",
/// "us"[,"reason"][,"server_id","tool"]}]}, written by hand (a record per
/// tool round: this is on the path of every call).
std::string round_meta(std::string_view run_id, std::string_view chat_id, const round_data& round,
                       uint64_t seq, int64_t us) {
  std::string out;
  // `"key":"value"`, after a comma unless first in its object.
  auto member = [&out](std::string_view key, std::string_view value) {
    if (out.back() != '{')
      out += ',';
    append_json_member(out, key, value);
  };
  auto number = [&out](std::string_view key, auto value) {
    out += ",\"";
    out += key;
    out += "\":" + std::to_string(value);
  };
  out = "{";
  member("k", "a");
  member("run", run_id);
  member("chat", chat_id);
  number("round", round.round);
  number("seq", seq);
  number("us", us);
  out += ",\"calls\":[";
  for (const auto& call : round.calls) {
    out += out.back() == '[' ? "{" : ",{";
    member("name", call.name);
    member("status", call.status);
    number("us", call.us);
    if (!call.reason.empty())
      member("reason", call.reason);
    if (!call.tool.empty()) {
      member("server_id", call.server_id);
      member("tool", call.tool);
    }
    out += '}';
  }
  return out + "]}";
}

status not_history(const char* what) {
  return status::error(errc::corrupt_data,
                       std::string{what} + ": the data does not have its shape");
}

} // namespace

struct history_index::impl {
  std::string tenant_id;
  history_options opts;
  std::unique_ptr<fulltext_index> text;
  /// The chat of each run started and not ended, as far as indexed (a
  /// round's record names it); at most max_remembered_runs.
  std::unordered_map<std::string, std::string> run_chats;
  /// Live events waiting for flush().
  std::vector<event_record> queued;

  void remember_chat(std::string_view run_id, std::string chat_id) {
    if (run_chats.size() >= max_remembered_runs)
      run_chats.clear();
    run_chats[std::string{run_id}] = std::move(chat_id);
  }

  /// The run list: the newest opts.recent_runs runs by (start time, run id),
  /// and each one's key there by run id.
  std::map<std::pair<int64_t, std::string>, recent_run> recent;
  std::unordered_map<std::string, int64_t> recent_started;

  void remember_start(std::string_view run_id, const run_data& run, int64_t started_us) {
    std::string id{run_id};
    if (auto known = recent_started.find(id); known != recent_started.end())
      recent.erase({known->second, id});
    recent_run entry{id, run.agent_id, run.chan, run.chat_id, started_us};
    recent_started[id] = started_us;
    recent.emplace(std::make_pair(started_us, id), std::move(entry));
    while (recent.size() > opts.recent_runs) {
      recent_started.erase(recent.begin()->second.run_id);
      recent.erase(recent.begin());
    }
  }

  void remember_end(std::string_view run_id, bool finished, int64_t ended_us) {
    std::string id{run_id};
    auto known = recent_started.find(id);
    if (known == recent_started.end())
      return;
    auto& entry = recent.at({known->second, id});
    entry.outcome = finished ? "finished" : "cancelled";
    entry.ended_us = ended_us;
  }

  result<bool> index_turn(const event_record& ev, std::string_view chat_id) {
    auto turn = parse_turn(ev.data);
    if (!turn)
      return not_history("turn.reported");
    fulltext_document doc;
    doc.key = turn_key(chat_id, ev.seq);
    doc.data = json{{"k", "t"},           {"chat", chat_id}, {"run", turn->run_id},
                    {"turn", turn->turn}, {"seq", ev.seq},   {"us", ev.time_us}}
                 .dump();
    doc.fields.push_back({"user", std::move(turn->user), 1});
    doc.fields.push_back({"assistant", std::move(turn->assistant), 1});
    if (auto st = text->put(doc); !st)
      return st;
    return true;
  }

  /// The stored meta-data of a run's document, if it has one.
  result<std::optional<json>> run_meta(std::string_view run_id) const {
    auto doc = text->get(run_key(run_id));
    if (!doc)
      return doc.error();
    if (!doc->has_value())
      return std::optional<json>{};
    auto meta = json::parse((*doc)->data, nullptr, false);
    if (!meta.is_object())
      return status::error(errc::corrupt_data, "a run's history record does not decode");
    return std::optional<json>{std::move(meta)};
  }

  status put_run(std::string_view run_id, const json& meta) {
    fulltext_document doc;
    doc.key = run_key(run_id);
    doc.fields.push_back({"summary", run_summary(meta), 1});
    doc.data = meta.dump();
    return text->put(doc);
  }

  result<bool> index_run_event(const event_record& ev, std::string_view run_id) {
    if (ev.type == "run.started") {
      auto run = parse_run_started(ev.data);
      if (!run)
        return not_history("run.started");
      json meta{{"k", "r"},
                {"run", run_id},
                {"chat", run->chat_id},
                {"agent", run->agent_id},
                {"chan", run->chan},
                {"caller", run->caller},
                {"seq", ev.seq},
                {"us", ev.time_us},
                {"outcome", "started"}};
      remember_chat(run_id, run->chat_id);
      if (auto st = put_run(run_id, meta); !st)
        return st;
      remember_start(run_id, *run, ev.time_us);
      return true;
    }
    if (ev.type == "run.finished" || ev.type == "run.cancelled") {
      auto end = parse_run_end(ev.data);
      if (!end)
        return not_history(ev.type.c_str());
      auto meta = run_meta(run_id);
      if (!meta)
        return meta.error();
      // A run whose start is not here (cut from the store) still ends.
      json updated = meta->value_or(json{{"k", "r"}, {"run", run_id}, {"seq", ev.seq}});
      updated.update(*end);
      updated["outcome"] = ev.type == "run.finished" ? "finished" : "cancelled";
      updated["ended_us"] = ev.time_us;
      if (!updated.contains("us"))
        updated["us"] = ev.time_us;
      if (auto st = put_run(run_id, updated); !st)
        return st;
      remember_end(run_id, ev.type == "run.finished", ev.time_us);
      run_chats.erase(std::string{run_id});
      return true;
    }
    if (ev.type == "tools.round") {
      auto round = parse_round(ev.data);
      if (!round)
        return not_history("tools.round");
      auto chat = run_chats.find(std::string{run_id});
      if (chat == run_chats.end()) {
        // (a run whose start this index has not seen, or forgotten)
        auto meta = run_meta(run_id);
        if (!meta)
          return meta.error();
        remember_chat(run_id, meta->has_value() ? (*meta)->value("chat", "") : "");
        chat = run_chats.find(std::string{run_id});
      }
      fulltext_document doc;
      doc.key = round_key(run_id, ev.seq);
      doc.fields.push_back({"calls", round_summary(*round), 1});
      doc.data = round_meta(run_id, chat->second, *round, ev.seq, ev.time_us);
      if (auto st = text->put(doc); !st)
        return st;
      return true;
    }
    return false;
  }
};

history_index::history_index(std::unique_ptr<impl> self) : self_(std::move(self)) {}
history_index::~history_index() = default;

result<std::unique_ptr<history_index>> history_index::open(std::string tenant_id,
                                                           history_options opts) {
  auto text = fulltext_index::open(opts.index);
  if (!text)
    return text.error();
  auto self = std::make_unique<impl>();
  self->tenant_id = std::move(tenant_id);
  self->opts = std::move(opts);
  self->text = std::move(*text);
  return std::unique_ptr<history_index>{new history_index{std::move(self)}};
}

result<bool> history_index::index(const event_record& ev) {
  if (ev.tenant != self_->tenant_id)
    return status::error(errc::out_of_range, "an event of another tenant");
  std::string_view stream{ev.stream};
  if (ev.type == "turn.reported" && stream.substr(0, chat_prefix.size()) == chat_prefix)
    return self_->index_turn(ev, stream.substr(chat_prefix.size()));
  if (stream.substr(0, run_prefix.size()) == run_prefix)
    return self_->index_run_event(ev, stream.substr(run_prefix.size()));
  return false;
}

bool history_index::queue(event_record ev) {
  self_->queued.push_back(std::move(ev));
  return self_->queued.size() >= self_->opts.batch_events;
}

std::size_t history_index::queued() const noexcept {
  return self_->queued.size();
}

history_flush_report history_index::flush() {
  history_flush_report report;
  if (self_->queued.empty())
    return report;
  std::string first_error;
  for (const auto& ev : self_->queued) {
    auto indexed = index(ev);
    if (indexed && *indexed) {
      ++report.indexed;
    } else if (!indexed) {
      if (report.left_out++ == 0)
        first_error = indexed.error().message();
    }
  }
  if (report.left_out > 0)
    log::warn("history",
              std::to_string(report.left_out)
                + " history event(s) were left out of the index; the first: " + first_error);
  self_->queued.clear(); // (its room is kept for the next batch)
  return report;
}

const std::string& history_index::tenant_id() const noexcept {
  return self_->tenant_id;
}

const history_options& history_index::options() const noexcept {
  return self_->opts;
}

result<std::size_t> history_index::size() const {
  return self_->text->size();
}

std::vector<recent_run> history_index::recent_runs(std::size_t limit) const {
  std::vector<recent_run> out;
  limit = std::min(limit, self_->opts.recent_runs);
  for (auto it = self_->recent.rbegin(); it != self_->recent.rend() && out.size() < limit; ++it)
    out.push_back(it->second);
  return out;
}

status history_index::commit() {
  return self_->text->commit();
}

const fulltext_index& history_index::text() const noexcept {
  return *self_->text;
}

result<history_rebuild_report> rebuild_history(history_index& index, const event_db& db,
                                               uint32_t page_events) {
  history_rebuild_report report;
  for (auto prefix : {chat_prefix, run_prefix}) {
    tenant_query query;
    query.tenant = index.tenant_id();
    query.stream_prefix = std::string{prefix};
    query.limit = std::max<uint32_t>(1, page_events);
    while (true) {
      auto page = db.read_tenant(query);
      if (!page)
        return page.error();
      for (const auto& ev : *page) {
        ++report.events;
        auto indexed = index.index(ev);
        if (indexed && *indexed)
          ++report.indexed;
        else if (!indexed && indexed.error().code() == errc::corrupt_data)
          ++report.skipped;
        else if (!indexed)
          return indexed.error();
      }
      if (page->size() < query.limit)
        break;
      query.after_stream = page->back().stream;
      query.after_seq = page->back().seq;
    }
  }
  return report;
}

// -- the tools ------------------------------------------------------------------------

namespace {

tool_outcome unavailable() {
  return tool_outcome::error("unavailable", "the account history cannot be read right now");
}

/// A tool given another tenant's index: a wiring fault, never the model's.
bool wrong_tenant(const history_index& index, const tool_context& ctx) {
  return ctx.tenant_id != index.tenant_id();
}

tool_outcome wrong_tenant_outcome() {
  return tool_outcome::error("internal", "the account history is not available to this run");
}

/// The citation of a record: what it is and where it comes from.
json citation(const std::string& key, const json& meta) {
  auto kind = meta.value("k", "");
  json out{{"evidence_id", key}, {"kind", kind_name(kind)}};
  if (auto chat = meta.value("chat", ""); !chat.empty())
    out["chat_id"] = chat;
  if (auto run = meta.value("run", ""); !run.empty())
    out["run_id"] = run;
  out["time"] = utc_time(meta.value("us", int64_t{0}));
  if (kind == "t")
    out["turn"] = meta.value("turn", uint64_t{0});
  if (kind == "a")
    out["round"] = meta.value("round", uint64_t{0});
  return out;
}

std::optional<json> meta_of(const std::string& data) {
  auto meta = json::parse(data, nullptr, false);
  if (!meta.is_object())
    return std::nullopt;
  return meta;
}

/// One record as a context entry: its citation and what it holds.
json entry_of(const fulltext_document& doc, const json& meta) {
  auto out = citation(doc.key, meta);
  out.erase("chat_id"); // the chat or run is the citation's
  auto field = [&](const char* name) {
    for (const auto& f : doc.fields)
      if (f.name == name)
        return f.text;
    return std::string{};
  };
  auto kind = meta.value("k", "");
  if (kind == "t") {
    out["user"] = field("user");
    out["assistant"] = field("assistant");
  } else if (kind == "a") {
    out["calls"] = meta.value("calls", json::array());
  } else {
    for (const char* name : {"agent", "chan", "caller", "outcome"})
      if (meta.contains(name))
        out[name == std::string_view{"chan"} ? "channel" : name] = meta[name];
    for (const char* name : {"rounds", "calls", "cancelled_calls"})
      if (meta.contains(name))
        out[name] = meta[name];
    if (meta.contains("ended_us"))
      out["ended"] = utc_time(meta["ended_us"].get<int64_t>());
  }
  return out;
}

/// Cuts the cited entry to `max_bytes` of JSON: a turn's texts share what
/// room there is (the shorter keeps what it needs up to half), a round loses
/// its last calls. True if anything was cut.
bool fit_entry(json& entry, std::size_t max_bytes) {
  auto size = json_bytes(entry);
  if (size <= max_bytes)
    return false;
  if (entry.contains("user")) {
    auto user = entry["user"].get<std::string>();
    auto assistant = entry["assistant"].get<std::string>();
    entry["user"] = "";
    entry["assistant"] = "";
    auto overhead = json_bytes(entry);
    auto room = max_bytes > overhead ? max_bytes - overhead : 0;
    auto& shorter = user.size() <= assistant.size() ? user : assistant;
    auto& longer = user.size() <= assistant.size() ? assistant : user;
    shorter = utf8_prefix(shorter, std::min(shorter.size(), room / 2));
    longer = utf8_prefix(longer, room - shorter.size());
    // Escaping makes JSON longer than its text: cut further until it fits.
    for (;;) {
      entry["user"] = user;
      entry["assistant"] = assistant;
      size = json_bytes(entry);
      if (size <= max_bytes || (user.empty() && assistant.empty()))
        break;
      auto& cut = user.size() >= assistant.size() ? user : assistant;
      cut = utf8_prefix(cut, cut.size() - std::min(cut.size(), size - max_bytes));
    }
    return true;
  }
  bool cut = false;
  while (size > max_bytes && entry.contains("calls") && !entry["calls"].empty()) {
    entry["calls"].erase(entry["calls"].size() - 1);
    size = json_bytes(entry);
    cut = true;
  }
  return cut;
}

} // namespace

tool_outcome search_agent_history(history_index& index, const tool_context& ctx,
                                  const nlohmann::json& args) {
  if (wrong_tenant(index, ctx))
    return wrong_tenant_outcome();
  index.flush();
  auto query = args.find("query");
  if (query == args.end() || !query->is_string())
    return tool_outcome::error("invalid_arguments", "query: a string is required");
  std::size_t limit = index.options().default_limit;
  if (auto given = args.find("limit"); given != args.end()) {
    if (!given->is_number_integer() || given->get<int64_t>() < 1)
      return tool_outcome::error("invalid_arguments", "limit: an integer of at least 1");
    limit = given->get<std::size_t>();
  }
  auto hits = index.text().search(query->get_ref<const std::string&>(), limit);
  if (!hits) {
    if (hits.error().code() == errc::out_of_range)
      return tool_outcome::error("out_of_range", hits.error().message());
    return unavailable();
  }
  auto results = json::array();
  for (auto& hit : *hits) {
    auto meta = meta_of(hit.data);
    if (!meta)
      return unavailable();
    auto entry = citation(hit.key, *meta);
    entry["from"] = hit.field;
    entry["excerpt"] = std::move(hit.snippet);
    results.push_back(std::move(entry));
  }
  return tool_outcome::ok(json{{"results", std::move(results)}});
}

tool_outcome read_agent_history(history_index& index, const tool_context& ctx,
                                const nlohmann::json& args) {
  if (wrong_tenant(index, ctx))
    return wrong_tenant_outcome();
  index.flush();
  auto id = args.find("evidence_id");
  if (id == args.end() || !id->is_string())
    return tool_outcome::error("invalid_arguments", "evidence_id: a string is required");
  auto not_found = [] {
    return tool_outcome::error("not_found", "no such evidence in this account's history");
  };
  const auto& text = index.text();
  auto cited = text.get(id->get_ref<const std::string&>());
  if (!cited)
    return unavailable();
  if (!cited->has_value())
    return not_found();
  auto meta = meta_of((*cited)->data);
  if (!meta)
    return unavailable();
  const auto& opts = index.options();

  // The cited entry, cut to the bound if it is larger alone.
  auto entry = entry_of(**cited, *meta);
  entry["cited"] = true;
  // The bound is the context array's JSON: brackets, entries, commas.
  bool truncated = fit_entry(entry, opts.max_read_bytes > 2 ? opts.max_read_bytes - 2 : 0);
  auto used = 2 + json_bytes(entry);

  // Its neighbours on the same stream, nearest first, alternating sides,
  // while they fit.
  auto kind = meta->value("k", "");
  auto chat = meta->value("chat", "");
  auto run = meta->value("run", "");
  uint64_t run_seq = 0;
  if (kind != "t") {
    auto run_doc = text.get(run_key(run));
    if (!run_doc)
      return unavailable();
    if (run_doc->has_value())
      if (auto run_meta = meta_of((*run_doc)->data))
        run_seq = run_meta->value("seq", uint64_t{0});
  }
  auto key_at = [&](uint64_t seq) {
    if (kind == "t")
      return turn_key(chat, seq);
    return seq == run_seq ? run_key(run) : round_key(run, seq);
  };
  struct side {
    side(int64_t step, uint64_t next) : step(step), next(next) {}
    int64_t step;
    uint64_t next; ///< 0: past the stream's start
    bool open = true;
    bool more = false;
    std::vector<json> entries;
  };
  auto seq = meta->value("seq", uint64_t{0});
  side before{-1, seq > 0 ? seq - 1 : 0};
  side after{+1, seq + 1};
  while (before.open || after.open) {
    for (auto* s : {&before, &after}) {
      if (!s->open)
        continue;
      // The nearest record on this side, over at most max_neighbour_gap gaps.
      std::optional<fulltext_document> found;
      std::size_t gaps = 0;
      while (!found && s->next > 0 && gaps <= opts.max_neighbour_gap) {
        auto doc = text.get(key_at(s->next));
        if (!doc)
          return unavailable();
        if (doc->has_value())
          found = std::move(**doc);
        else
          ++gaps;
        if (!found)
          s->next += s->step;
      }
      if (!found) {
        s->open = false;
        continue;
      }
      auto found_meta = meta_of(found->data);
      if (!found_meta)
        return unavailable();
      auto neighbour = entry_of(*found, *found_meta);
      auto bytes = 1 + json_bytes(neighbour);
      if (used + bytes > opts.max_read_bytes) {
        s->open = false;
        s->more = true;
        continue;
      }
      used += bytes;
      s->entries.push_back(std::move(neighbour));
      s->next += s->step;
    }
  }
  auto context = json::array();
  for (auto it = before.entries.rbegin(); it != before.entries.rend(); ++it)
    context.push_back(std::move(*it));
  context.push_back(std::move(entry));
  for (auto& neighbour : after.entries)
    context.push_back(std::move(neighbour));
  return tool_outcome::ok(json{{"citation", citation((*cited)->key, *meta)},
                               {"context", std::move(context)},
                               {"more_before", before.more},
                               {"more_after", after.more},
                               {"truncated", truncated}});
}

} // namespace voxos
