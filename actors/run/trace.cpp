#include "actors/run/trace.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "actors/tenant/tenant_events.hpp"

namespace voxos {

namespace {

using nlohmann::json;

std::string hex_of(const catalog_key& key) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (auto byte : key) {
    out += digits[byte >> 4];
    out += digits[byte & 0xf];
  }
  return out;
}

bool key_of(const std::string& hex, catalog_key& out) {
  if (hex.size() != out.size() * 2)
    return false;
  auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9')
      return ch - '0';
    if (ch >= 'a' && ch <= 'f')
      return ch - 'a' + 10;
    return -1;
  };
  for (std::size_t idx = 0; idx < out.size(); ++idx) {
    auto high = nibble(hex[2 * idx]);
    auto low = nibble(hex[2 * idx + 1]);
    if (high < 0 || low < 0)
      return false;
    out[idx] = static_cast<unsigned char>(high << 4 | low);
  }
  return true;
}

json calls_json(const std::vector<tool_call>& calls) {
  json out = json::array();
  for (const auto& c : calls)
    out.push_back({{"call_id", c.call_id}, {"name", c.name}, {"arguments", c.arguments}});
  return out;
}

std::vector<tool_call> calls_from_json(const json& calls) {
  std::vector<tool_call> out;
  for (const auto& c : calls)
    out.push_back({c.at("call_id").get<std::string>(), c.at("name").get<std::string>(),
                   c.at("arguments").get<std::string>()});
  return out;
}

/// The output of a call to a redacted server, as the replayed run answers
/// it from the redacted answer: "ok" carries the result itself, "tool_error"
/// holds it as "result"; other outputs carry nothing the server sent.
std::optional<std::string> redacted_output(const tool_output& o) {
  if (o.status == "ok")
    return redacted_result(o.output);
  if (o.status != "tool_error")
    return std::nullopt;
  auto doc = json::parse(o.output, nullptr, false);
  if (!doc.is_object() || !doc.contains("result"))
    return std::nullopt;
  doc["result"] = json::parse(redacted_result(doc["result"].dump()));
  return doc.dump();
}

status bad_line(std::size_t line_no, const std::string& what) {
  return status::error(errc::corrupt_data, "trace line " + std::to_string(line_no) + ": " + what);
}

} // namespace

std::string redacted_result(std::string_view result_json) {
  auto doc = json::parse(result_json, nullptr, false);
  if (!doc.is_object())
    return json(redacted_text).dump();
  // isError as the run reads it: true only when it is the boolean true
  auto is_error =
    doc.contains("isError") && doc["isError"].is_boolean() && doc["isError"].get<bool>();
  return json{{"content", json::array({{{"type", "text"}, {"text", redacted_text}}})},
              {"isError", is_error}}
    .dump();
}

result<std::unique_ptr<run_trace>> run_trace::create(const std::string& path, uint64_t max_bytes) {
  // Created 0600 before anything is written into it.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return status::error(errc::storage_failure, "cannot create the run's trace file");
  ::close(fd);
  std::ofstream out{path, std::ios::trunc};
  if (!out)
    return status::error(errc::storage_failure, "cannot open the run's trace file");
  return std::unique_ptr<run_trace>{new run_trace{std::move(out), max_bytes}};
}

void run_trace::line(const json& doc) {
  if (truncated_)
    return;
  // (bytes that are not UTF-8 become U+FFFD: a trace line never ends its run)
  auto text = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr uint64_t truncated_line_room = 64;
  if (written_ + text.size() + 1 + truncated_line_room > max_bytes_) {
    truncated_ = true;
    text = json{{"type", "truncated"}, {"max_bytes", max_bytes_}}.dump();
  }
  written_ += text.size() + 1;
  out_ << text << '\n';
  out_.flush();
}

void run_trace::header(const std::string& tenant_id, const effective_policy& snapshot,
                       const std::vector<const mcp_server_record*>& servers,
                       const adapter_map& adapters, const catalog_key& key, view_kind kind,
                       const round_limits& limits) {
  json server_docs = json::array();
  for (const auto* rec : servers)
    server_docs.push_back(tenant_events::to_json(*rec, true));
  json adapter_docs = json::object();
  for (const auto& [server_id, adapter] : adapters)
    if (adapter == call_adapter::maps_grounding_lite) {
      adapter_docs[server_id] = "maps_grounding_lite";
      redacted_servers_.insert(server_id);
    }
  line({{"type", "header"},
        {"version", 1},
        {"proves", ""},
        {"run_id", snapshot.run_id},
        {"tenant_id", tenant_id},
        {"view_kind", kind == view_kind::voice ? "voice" : "text"},
        {"snapshot", tenant_events::to_json(snapshot)},
        {"servers", std::move(server_docs)},
        {"adapters", std::move(adapter_docs)},
        {"catalog_key", hex_of(key)},
        {"limits",
         {{"max_calls", limits.max_calls},
          {"max_argument_bytes", limits.max_argument_bytes},
          {"wave_width", limits.wave_width},
          {"max_corrections", limits.max_corrections},
          {"max_remembered_rejections", limits.max_remembered_rejections}}}});
}

void run_trace::calls(uint64_t round, const std::vector<tool_call>& calls) {
  line({{"type", "calls"}, {"round", round}, {"calls", calls_json(calls)}});
}

void run_trace::mcp(uint64_t round, const std::string& server_id, const std::string& params,
                    uint8_t code, const std::string& text) {
  bool redact = code == 0 && redacted_servers_.count(server_id) != 0;
  json doc{{"type", "mcp"},    {"round", round}, {"server_id", server_id},
           {"params", params}, {"code", code},   {"text", redact ? redacted_result(text) : text}};
  if (redact)
    doc["redacted"] = true;
  line(doc);
}

void run_trace::outputs(uint64_t round, const tool_round& settled,
                        const std::vector<tool_output>& outputs) {
  json docs = json::array();
  for (std::size_t idx = 0; idx < outputs.size(); ++idx) {
    const auto& o = outputs[idx];
    json doc{{"call_id", o.call_id}, {"status", o.status}, {"output", o.output}};
    const auto* entry = idx < settled.calls.size() ? settled.calls[idx].entry : nullptr;
    if (entry != nullptr && redacted_servers_.count(std::string{entry->server_id()}) != 0)
      if (auto redacted = redacted_output(o)) {
        doc["output"] = std::move(*redacted);
        doc["redacted"] = true;
      }
    docs.push_back(std::move(doc));
  }
  line({{"type", "outputs"}, {"round", round}, {"outputs", std::move(docs)}});
}

std::string refusal_text(const status& error) {
  return std::string{to_string(error.code())} + ": " + error.message();
}

void run_trace::refused(uint64_t after_round, const std::vector<tool_call>& calls,
                        const status& error) {
  line({{"type", "refused"},
        {"after_round", after_round},
        {"calls", calls_json(calls)},
        {"error", refusal_text(error)}});
}

void run_trace::turn(uint64_t after_round, const std::string& assistant, const std::string& cards,
                     bool during_round) {
  json doc{{"type", "turn"}, {"after_round", after_round}, {"assistant", assistant}};
  // Place cards come from Grounding Lite searches only: their number is kept.
  auto parsed = json::parse(cards, nullptr, false);
  if (parsed.is_array() && parsed.empty())
    doc["cards"] = "[]";
  else
    doc["cards_redacted"] = parsed.is_array() ? parsed.size() : std::size_t{1};
  if (during_round)
    doc["during_round"] = true;
  line(doc);
}

void run_trace::cancel() {
  line({{"type", "cancel"}});
}

result<trace_record> read_trace(std::istream& in) {
  trace_record out;
  std::string text;
  std::size_t line_no = 0;
  bool have_header = false;
  while (std::getline(in, text)) {
    ++line_no;
    if (text.empty())
      continue;
    auto doc = json::parse(text, nullptr, false);
    if (!doc.is_object() || !doc.contains("type") || !doc["type"].is_string())
      return bad_line(line_no, "expected a JSON object with a \"type\"");
    auto type = doc["type"].get<std::string>();
    if (type == "truncated") // (even before a header: the header alone may pass the bound)
      return bad_line(line_no, "the trace was truncated at run.trace_max_bytes; what followed "
                               "was not recorded");
    try {
      if (type == "header") {
        if (have_header)
          return bad_line(line_no, "a second header");
        have_header = true;
        if (doc.value("version", 0) != 1)
          return bad_line(line_no, "unsupported version (1 expected)");
        out.proves = doc.value("proves", "");
        out.run_id = doc.at("run_id").get<std::string>();
        out.tenant.tenant_id = doc.at("tenant_id").get<std::string>();
        out.kind = doc.value("view_kind", "text") == "voice" ? view_kind::voice : view_kind::text;
        auto snapshot = tenant_events::policy_from_json(doc.at("snapshot"));
        if (!snapshot)
          return bad_line(line_no, "snapshot: " + snapshot.error().message());
        out.snapshot = std::move(*snapshot);
        for (const auto& server : doc.at("servers")) {
          auto rec = tenant_events::server_from_json(server);
          if (!rec)
            return bad_line(line_no, "servers: " + rec.error().message());
          out.tenant.servers[rec->server_id] = std::move(*rec);
        }
        for (const auto& [server_id, name] : doc.at("adapters").items())
          if (name == "maps_grounding_lite")
            out.adapters[server_id] = call_adapter::maps_grounding_lite;
        if (!key_of(doc.at("catalog_key").get<std::string>(), out.key))
          return bad_line(line_no, "catalog_key: 64 lowercase hex digits expected");
        const auto& limits = doc.at("limits");
        out.limits.max_calls = limits.at("max_calls").get<std::size_t>();
        out.limits.max_argument_bytes = limits.at("max_argument_bytes").get<std::size_t>();
        out.limits.wave_width = limits.at("wave_width").get<std::size_t>();
        out.limits.max_corrections = limits.at("max_corrections").get<uint32_t>();
        out.limits.max_remembered_rejections =
          limits.at("max_remembered_rejections").get<std::size_t>();
        continue;
      }
      if (!have_header)
        return bad_line(line_no, "the header must come first");
      if (type == "calls") {
        traced_round round;
        round.round = doc.at("round").get<uint64_t>();
        round.calls = calls_from_json(doc.at("calls"));
        out.rounds.push_back(std::move(round));
      } else if (type == "mcp") {
        out.answers.push_back({doc.at("server_id").get<std::string>(),
                               doc.at("params").get<std::string>(), doc.at("code").get<uint8_t>(),
                               doc.at("text").get<std::string>()});
      } else if (type == "outputs") {
        if (out.rounds.empty() || out.rounds.back().round != doc.at("round").get<uint64_t>())
          return bad_line(line_no, "outputs of a round whose calls were not recorded");
        for (const auto& o : doc.at("outputs")) {
          out.rounds.back().outputs.push_back({o.at("call_id").get<std::string>(),
                                               o.at("status").get<std::string>(),
                                               o.at("output").get<std::string>()});
          if (o.value("redacted", false))
            ++out.rounds.back().redacted;
        }
      } else if (type == "refused" || type == "turn") {
        traced_between step;
        step.after_round = doc.at("after_round").get<uint64_t>();
        if (type == "refused") {
          step.what = traced_between::kind::refused;
          step.calls = calls_from_json(doc.at("calls"));
          step.error = doc.at("error").get<std::string>();
        } else {
          step.what = traced_between::kind::turn;
          step.assistant = doc.at("assistant").get<std::string>();
          if (doc.contains("cards_redacted"))
            step.cards_redacted = doc.at("cards_redacted").get<std::size_t>();
          else
            step.cards = doc.at("cards").get<std::string>();
          step.during_round = doc.value("during_round", false);
        }
        out.between.push_back(std::move(step));
      } else if (type == "cancel") {
        // during a round: before its outputs (its calls answered as
        // cancelled); after them the run was idle, and no output changed
        if (!out.rounds.empty() && out.rounds.back().outputs.empty())
          out.cancelled_in_round = out.rounds.back().round;
      } else {
        return bad_line(line_no, "unknown type");
      }
    } catch (const json::exception&) {
      return bad_line(line_no, "a field is missing or has the wrong type");
    }
  }
  if (!have_header)
    return status::error(errc::corrupt_data, "trace: no header");
  return out;
}

std::string compare_outputs(const std::vector<tool_output>& recorded,
                            const std::vector<tool_output>& replayed) {
  if (recorded.size() != replayed.size())
    return std::to_string(recorded.size()) + " outputs recorded, " + std::to_string(replayed.size())
           + " replayed";
  std::string diff;
  for (std::size_t idx = 0; idx < recorded.size(); ++idx) {
    const auto& want = recorded[idx];
    const auto& got = replayed[idx];
    if (want.call_id != got.call_id) {
      diff += "output " + std::to_string(idx) + ": call id " + want.call_id + " recorded, "
              + got.call_id + " replayed\n";
      continue;
    }
    if (want.status != got.status)
      diff += want.call_id + ": status " + want.status + " recorded, " + got.status + " replayed\n";
    if (json::parse(want.output, nullptr, false) != json::parse(got.output, nullptr, false))
      diff += want.call_id + ": output differs\n  recorded: " + want.output
              + "\n  replayed: " + got.output + "\n";
  }
  return diff;
}

} // namespace voxos
