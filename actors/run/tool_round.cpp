#include "actors/run/tool_round.hpp"

#include <algorithm>
#include <charconv>

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "actors/run/maps_grounding.hpp"
#include "transport/json_text.hpp"
#include "transport/mcp_http.hpp"

namespace voxos {

namespace {

using nlohmann::json;

constexpr std::size_t max_call_id_bytes = 128;
constexpr std::size_t max_name_bytes = 128;
/// Schema problems listed in one invalid_arguments output.
constexpr std::size_t max_listed_problems = 8;
/// Nesting of an argument object: deeper documents are refused before
/// parsing (copying and validating nested JSON recurses).
constexpr int max_argument_depth = 64;

/// Whether `text` nests objects and arrays at most `limit` deep (brackets
/// inside strings do not count). Malformed text is left to the parser.
bool nesting_within(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t idx = 0; idx < text.size(); ++idx) {
    char ch = text[idx];
    if (in_string) {
      if (ch == '\\')
        ++idx;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      if (++depth > limit)
        return false;
    } else if (ch == '}' || ch == ']') {
      --depth;
    }
  }
  return true;
}

constexpr std::string_view no_result = "The call produced no usable result: ";
constexpr std::string_view correct_one = " Correct one request before batching more calls.";

std::string tool_key(const view_entry& e) {
  std::string key{e.server_id()};
  key += '/';
  key += e.tool();
  return key;
}

uint64_t fnv1a(uint64_t hash, std::string_view text) {
  for (unsigned char ch : text) {
    hash ^= ch;
    hash *= 1099511628211ULL;
  }
  return hash;
}

/// Identifies a request: the tool and its arguments in canonical form (keys
/// sorted, no whitespace), so a repeat is recognised however it is spelled.
/// Computed only when a rejection is remembered or looked up.
uint64_t fingerprint_of(const view_entry& e, const std::string& args_text) {
  auto hash = fnv1a(14695981039346656037ULL, e.server_id());
  hash = fnv1a(hash, std::string_view{"\0", 1});
  hash = fnv1a(hash, e.tool());
  hash = fnv1a(hash, std::string_view{"\0", 1});
  return fnv1a(hash, json::parse(args_text, nullptr, false).dump());
}

/// Parses an argument text with the thread's parser (a run's turn uses it
/// and lets go); null when it is not JSON. The document is valid until the
/// thread's next parse.
const simdjson::dom::document* parse_arguments(const std::string& text) {
  thread_local simdjson::dom::parser parser;
  if (parser.parse(text).error() != simdjson::SUCCESS)
    return nullptr;
  return &parser.doc; // the document parse filled, which its root element views
}

/// Whether an object anywhere in `value` names one member twice (JSON
/// leaves that to the reader: the server might read another value than the
/// one checked).
bool repeats_a_member(simdjson::dom::element value) {
  simdjson::dom::array items;
  if (value.get_array().get(items) == simdjson::SUCCESS) {
    for (auto item : items)
      if (repeats_a_member(item))
        return true;
    return false;
  }
  simdjson::dom::object members;
  if (value.get_object().get(members) != simdjson::SUCCESS)
    return false;
  std::vector<std::string_view> keys;
  keys.reserve(members.size());
  for (auto field : members) {
    keys.push_back(field.key);
    if (repeats_a_member(field.value))
      return true;
  }
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

/// Counts this round against the tool's correction budget (rule 4), once.
void spend_correction(tool_round& round, run_memory& memory, const std::string& key) {
  if (round.corrected_tools.insert(key).second)
    ++memory.invalid_rounds[key];
}

/// Answers a call locally with a failure output: a continuation result that
/// says plainly the call produced no usable result, why, and asks the model
/// to correct one request before batching more (every failure, whatever its
/// kind; a cancelled run has no model turn to ask).
void fail(round_call& call, call_status st, std::string reason, std::string_view message,
          json problems = nullptr) {
  call.status = st;
  call.reason = std::move(reason);
  json out{{"error", to_string(st)},
           {"usable_result", false},
           {"message", std::string{no_result} + std::string{message}
                         + std::string{st == call_status::cancelled ? "" : correct_one}}};
  if (!problems.is_null())
    out["problems"] = std::move(problems);
  call.output = out.dump();
}

void answer_locally(round_call& call, json answer) {
  call.status = call_status::local;
  call.reason = "answered_by_runtime";
  call.output = answer.dump();
}

/// Adds the member names `schema` declares, at any depth: keys of
/// `properties` (and of `dependentRequired`, `dependentSchemas`,
/// `dependencies`), and the names `required` lists.
void collect_declared_names(const json& schema, std::unordered_set<std::string>& out) {
  if (schema.is_array()) {
    for (const auto& item : schema)
      collect_declared_names(item, out);
    return;
  }
  if (!schema.is_object())
    return;
  for (const auto& [keyword, value] : schema.items()) {
    if ((keyword == "properties" || keyword == "dependentRequired" || keyword == "dependentSchemas"
         || keyword == "dependencies")
        && value.is_object())
      for (const auto& [name, sub] : value.items())
        out.insert(name);
    if (keyword == "required" && value.is_array())
      for (const auto& name : value)
        if (name.is_string())
          out.insert(name.get<std::string>());
    collect_declared_names(value, out);
  }
}

/// The compiled schema of an entry, compiled on first use.
const tool_validator* validator_for(const view_entry& e, run_memory& memory) {
  auto schema_text = e.input_schema();
  if (auto found = memory.validators.find(schema_text.data()); found != memory.validators.end())
    return &found->second;
  auto doc = json::parse(schema_text, nullptr, false);
  if (doc.is_discarded())
    return nullptr;
  auto compiled = compile_schema(doc, schema_draft::draft2020_12);
  if (!compiled)
    return nullptr;
  tool_validator made{std::move(*compiled), {}};
  collect_declared_names(doc, made.declared_names);
  return &memory.validators.emplace(schema_text.data(), std::move(made)).first->second;
}

/// The part of an error's instance path the model is shown: array indices,
/// and member names the schema declares; it stops before the first member
/// name the schema does not declare (a name the model chose: under
/// additionalProperties or propertyNames, the rejected value itself). "/"
/// for the root.
std::string visible_path(std::string_view path, simdjson::dom::element at,
                         const std::unordered_set<std::string>& declared) {
  auto tokens = pointer_tokens(path);
  std::size_t kept = 0;
  for (; tokens && kept < tokens->size(); ++kept) {
    const auto& token = (*tokens)[kept];
    simdjson::dom::element next;
    if (at.is_array()) {
      uint64_t index = 0;
      auto [parsed_end, code] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (code != std::errc{} || parsed_end != token.data() + token.size()
          || at.at(index).get(next) != simdjson::SUCCESS)
        break;
    } else if (!at.is_object() || declared.count(token) == 0
               || at[token].get(next) != simdjson::SUCCESS) {
      break;
    }
    at = next;
  }
  if (kept == 0)
    return "/";
  // (the path as written, up to the '/' that starts the first token cut)
  std::size_t cut = 0;
  for (std::size_t token_idx = 0; token_idx < kept && cut != std::string_view::npos; ++token_idx)
    cut = path.find('/', cut + 1);
  return std::string{path.substr(0, cut)};
}

/// Validates `args` against the entry's schema; on failure answers the call.
bool validate_arguments(round_call& call, const view_entry& e, const simdjson::dom::document& args,
                        run_memory& memory) {
  const auto* validator = validator_for(e, memory);
  if (validator == nullptr) {
    fail(call, call_status::unavailable, "schema_unusable",
         "the tool's input schema cannot be used to check arguments, so it is not called.");
    return false;
  }
  // The boolean pass alone when they hold; the listing pass only when not.
  auto checked = validate(validator->schema, args, max_listed_problems);
  if (checked.is_valid())
    return true;
  json problems = json::array();
  for (const auto& err : checked.errors) {
    problems.push_back(
      {{"path", visible_path(err.instance_path, args.root(), validator->declared_names)},
       {"schema_path", err.schema_path},
       {"constraint", err.constraint}});
  }
  fail(call, call_status::invalid_arguments, "invalid_arguments",
       "its arguments do not match the tool's input schema (see problems); it was not sent.",
       std::move(problems));
  return false;
}

/// Rules 4-8 for a call resolved to a tool entry (MCP, internal or phone
/// integration), with its argument
/// text and that text parsed (`parsed`, valid until the next parse on this
/// thread, and its root `args`). What is sent is the model's own text, unless a normaliser
/// rewrote it.
void decide_tool_call(round_call& call, const view_entry& e, std::string args_text,
                      const simdjson::dom::document& parsed, const adapter_map& adapters,
                      run_memory& memory, const round_limits& limits,
                      std::unordered_set<std::string>& invalid_now) {
  auto key = tool_key(e);
  auto args = parsed.root();
  if (auto spent = memory.invalid_rounds.find(key);
      spent != memory.invalid_rounds.end() && spent->second >= limits.max_corrections) {
    fail(call, call_status::skipped, "correction_budget_spent",
         "it was not sent: this tool's arguments were invalid or rejected in "
           + std::to_string(limits.max_corrections)
           + " rounds of this run, so it is not called again in this run.");
    return;
  }
  if (invalid_now.count(key) != 0) {
    fail(call, call_status::skipped, "earlier_invalid_call",
         "it was not sent because an earlier call to the same tool in this response had invalid "
         "arguments.");
    return;
  }
  if (!args.is_object()) {
    fail(call, call_status::invalid_arguments, "invalid_arguments",
         "its arguments must be one JSON object.");
    invalid_now.insert(key);
    return;
  }
  if (repeats_a_member(args)) {
    fail(call, call_status::invalid_arguments, "invalid_arguments",
         "its arguments name one member twice in an object; it was not sent.");
    invalid_now.insert(key);
    return;
  }
  if (!validate_arguments(call, e, parsed, memory)) {
    if (call.status == call_status::invalid_arguments)
      invalid_now.insert(key);
    return;
  }
  // Curated normalisers run on schema-valid arguments.
  if (auto adapter = adapters.find(std::string{e.server_id()});
      adapter != adapters.end() && adapter->second == call_adapter::maps_grounding_lite) {
    auto normalised = maps_grounding::normalize_arguments(e.tool(), json::parse(args_text));
    if (!normalised) {
      fail(call, call_status::invalid_arguments, "invalid_arguments",
           "its arguments do not meet the provider's contract (" + normalised.error().message()
             + "); it was not sent.");
      invalid_now.insert(key);
      return;
    }
    args_text = normalised->dump();
  }
  call.arguments = std::move(args_text);
  if (!memory.rejected.empty() && memory.rejected.count(fingerprint_of(e, call.arguments)) != 0) {
    fail(call, call_status::skipped, "repeated_rejected_request",
         "it was not sent because the server already rejected this exact request in this run. "
         "Change the arguments before trying again.");
    return;
  }
  call.read_only = e.read_only;
  call.resend_safe = e.read_only || e.idempotent();
  call.reason = "allowed";
}

/// Answers tool_search and tool_describe from the run's catalog.
void answer_catalog(round_call& call, const view_entry& e, const json& args,
                    const tool_catalog* catalog) {
  if (catalog == nullptr) {
    fail(call, call_status::denied, "not_in_view", "this run has no tool catalog.");
    return;
  }
  if (e.role == view_role::catalog_search) {
    auto limit =
      args.contains("limit") ? args["limit"].get<std::size_t>() : catalog_limits::default_limit;
    auto hits = catalog->search(args["query"].get<std::string>(), limit);
    if (!hits) {
      fail(call, call_status::invalid_arguments, "invalid_arguments", hits.error().message() + ".");
      return;
    }
    json results = json::array();
    for (const auto& hit : *hits)
      results.push_back(
        {{"id", hit.id}, {"name", hit.name}, {"server", hit.server}, {"summary", hit.summary}});
    answer_locally(call, {{"results", std::move(results)}});
    return;
  }
  auto described = catalog->describe(args["id"].get<std::string>());
  if (!described) {
    fail(call, call_status::invalid_arguments, "unknown_catalog_id",
         described.error().message() + ".");
    return;
  }
  answer_locally(call, {{"id", described->id},
                        {"name", described->name},
                        {"title", described->title},
                        {"description", described->description},
                        {"input_schema", json::parse(described->input_schema, nullptr, false)}});
}

void remember_rejection(run_memory& memory, uint64_t fingerprint, const round_limits& limits) {
  if (!memory.rejected.insert(fingerprint).second)
    return;
  memory.rejected_order.push_back(fingerprint);
  if (memory.rejected_order.size() > limits.max_remembered_rejections) {
    memory.rejected.erase(memory.rejected_order.front());
    memory.rejected_order.erase(memory.rejected_order.begin());
  }
}

} // namespace

std::string_view to_string(call_status x) noexcept {
  switch (x) {
  case call_status::pending:
    return "pending";
  case call_status::ok:
    return "ok";
  case call_status::tool_error:
    return "tool_error";
  case call_status::local:
    return "local";
  case call_status::denied:
    return "denied";
  case call_status::invalid_arguments:
    return "invalid_arguments";
  case call_status::rejected:
    return "rejected";
  case call_status::skipped:
    return "skipped";
  case call_status::unavailable:
    return "unavailable";
  case call_status::failed:
    return "failed";
  case call_status::cancelled:
    return "cancelled";
  }
  return "failed";
}

result<tool_round> make_round(std::vector<tool_call> calls, const round_limits& limits) {
  if (calls.empty())
    return status::error(errc::missing_field, "tool calls: at least one call is required");
  if (calls.size() > limits.max_calls)
    return status::error(errc::out_of_range, "tool calls: one response may carry at most "
                                               + std::to_string(limits.max_calls) + " calls");
  tool_round round;
  round.calls.reserve(calls.size());
  std::unordered_set<std::string_view> ids;
  for (std::size_t call_idx = 0; call_idx < calls.size(); ++call_idx) {
    auto& in = calls[call_idx];
    auto where = "tool calls[" + std::to_string(call_idx) + "]";
    bool printable = std::all_of(in.call_id.begin(), in.call_id.end(),
                                 [](unsigned char ch) { return ch > 0x20 && ch < 0x7f; });
    if (in.call_id.empty() || in.call_id.size() > max_call_id_bytes || !printable)
      return status::error(errc::out_of_range,
                           where + ".call_id: 1-128 printable ASCII characters required");
    round.calls.push_back({});
    auto& call = round.calls.back();
    call.call_id = std::move(in.call_id);
    // A name no tool can have is that call's failure, not the response's:
    // the calls beside it still get their outputs (the name is not kept).
    if (in.name.empty() || in.name.size() > max_name_bytes) {
      fail(call, call_status::denied, "invalid_name",
           "its tool name must be 1-128 bytes, and no tool of such a name is available in this "
           "run.");
      continue;
    }
    call.name = std::move(in.name);
    call.arguments = std::move(in.arguments);
  }
  for (const auto& call : round.calls)
    if (!ids.insert(call.call_id).second)
      return status::error(errc::conflict, "tool calls: call ids must be unique in a response");
  return round;
}

void decide_round(tool_round& round, const tool_view& view, const tool_catalog* catalog,
                  const effective_policy& snapshot, const adapter_map& adapters, run_memory& memory,
                  const round_limits& limits) {
  std::unordered_set<std::string> invalid_now;
  for (auto& call : round.calls) {
    if (call.status != call_status::pending) // (answered by make_round)
      continue;
    // 1. A direct tool of the view (catalog tools resolve their target).
    const auto* e = view.find_direct(call.name);
    if (e == nullptr) {
      fail(call, call_status::denied, "not_in_view",
           "no tool of this name is available in this run.");
      continue;
    }
    // Arguments that are not one bounded JSON text are invalid like those
    // a schema refuses: for a direct tool of the view, later calls to it in
    // this response are not sent, and the round counts toward its
    // correction budget (checked, like the snapshot, once arguments parse;
    // a catalog call's target is not known yet).
    auto malformed = [&](std::string code, const std::string& why) {
      fail(call, call_status::invalid_arguments, std::move(code), why + "; it was not sent.");
      if (e->role == view_role::tool)
        invalid_now.insert(tool_key(*e));
    };
    if (call.arguments.size() > limits.max_argument_bytes) {
      malformed("arguments_too_large",
                "its arguments exceed " + std::to_string(limits.max_argument_bytes) + " bytes");
      continue;
    }
    if (!nesting_within(call.arguments, max_argument_depth)) {
      malformed("arguments_too_deep",
                "its arguments nest deeper than " + std::to_string(max_argument_depth) + " levels");
      continue;
    }
    // No arguments are the empty object.
    std::string args_text = call.arguments.empty() ? "{}" : call.arguments;
    const auto* parsed = parse_arguments(args_text);
    if (parsed == nullptr) {
      malformed("invalid_arguments", "its arguments are not well-formed JSON");
      continue;
    }
    if (e->role != view_role::tool) {
      // The catalog tools' own arguments are checked by their schemas.
      if (!parsed->root().is_object()) {
        fail(call, call_status::invalid_arguments, "invalid_arguments",
             "its arguments must be one JSON object.");
        continue;
      }
      if (!validate_arguments(call, *e, *parsed, memory))
        continue;
      auto args = json::parse(args_text);
      if (e->role != view_role::catalog_call) {
        answer_catalog(call, *e, args, catalog);
        continue;
      }
      auto target = catalog != nullptr ? catalog->entry(args["id"].get<std::string>())
                                       : result<const view_entry*>{status::error(
                                         errc::not_found, "this run has no tool catalog")};
      if (!target) {
        fail(call, call_status::invalid_arguments, "unknown_catalog_id",
             target.error().message() + ".");
        continue;
      }
      e = *target;
      args_text = args["arguments"].dump();
      parsed = parse_arguments(args_text); // well-formed: it was just written
      if (parsed == nullptr) {
        fail(call, call_status::invalid_arguments, "invalid_arguments",
             "its arguments are not well-formed JSON; it was not sent.");
        continue;
      }
    }
    call.entry = e;
    // 2. The execution check against the snapshot.
    if (snapshot.find(e->server_id(), e->tool()) == nullptr) {
      fail(call, call_status::denied, std::string{to_string(reason::not_in_snapshot)},
           "this tool is not allowed in this run.");
      continue;
    }
    // 3. MCP tools go to their server; internal and phone integration tools
    // to the tenant's tool desk, under the same rules.
    decide_tool_call(call, *e, std::move(args_text), *parsed, adapters, memory, limits,
                     invalid_now);
  }
  // The bounded correction: one more invalid round per tool.
  for (const auto& key : invalid_now)
    spend_correction(round, memory, key);
}

std::vector<std::size_t> next_wave(tool_round& round, const round_limits& limits) {
  std::vector<std::size_t> wave;
  auto width = std::max<std::size_t>(1, limits.wave_width);
  for (; round.cursor < round.calls.size(); ++round.cursor) {
    auto& call = round.calls[round.cursor];
    if (call.status != call_status::pending)
      continue;
    if (round.rejected_tools.count(tool_key(*call.entry)) != 0) {
      fail(call, call_status::skipped, "rejected_earlier_in_round",
           "it was not sent because the server rejected an earlier call to the same tool in this "
           "response.");
      continue;
    }
    if (!call.read_only) {
      if (wave.empty()) {
        wave.push_back(round.cursor++);
      }
      break;
    }
    if (wave.size() == width)
      break;
    wave.push_back(round.cursor);
  }
  return wave;
}

namespace {

/// Whether a tool result (the JSON text of a `tools/call` result, already
/// checked as JSON by the connection) says `"isError": true`; nullopt when it
/// is not an object. Reads only the top level (simdjson On-Demand), however
/// large the result. `text` has room for simdjson's padding (made here if
/// not).
std::optional<bool> reports_error(std::string& text) {
  thread_local simdjson::ondemand::parser parser;
  text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(text).get(doc) != simdjson::SUCCESS
      || doc.get_object().get(object) != simdjson::SUCCESS)
    return std::nullopt;
  bool flag = false;
  for (auto field : object) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS)
      return std::nullopt;
    if (key == "isError") {
      bool value = false;
      if (field.value().get_bool().get(value) == simdjson::SUCCESS)
        flag = value;
    }
  }
  return flag;
}

/// Whether a call that failed so may have run at its server (in part, or
/// still running): anything but an answer that refused it before any
/// handler ran, or a failure before it was sent. A doubt counts as "may
/// have run" (a redirect answered to the POST, a malformed answer, HTTP 5xx,
/// the deadline, a connection lost after the request went out).
bool may_have_run(const status& failure) {
  const auto& text = failure.message();
  auto starts = [&text](std::string_view prefix) { return text.rfind(prefix, 0) == 0; };
  auto names_code = [&](std::string_view code) {
    std::string prefix = "server error " + std::string{code};
    return text == prefix || starts(prefix + " ");
  };
  switch (failure.code()) {
  case errc::rejected:           // its content refused (HTTP 400/422), or input it never got
  case errc::unauthorized:       // HTTP 401
  case errc::needs_auth:         // no credential to send it with: never sent
  case errc::method_not_allowed: // HTTP 405
  case errc::not_found:          // HTTP 404, or its session expired or lost: nothing ran
  case errc::conflict:           // a key already in flight: never sent
    return false;
  case errc::forbidden: // HTTP 403, or the URL policy; a redirect may follow a run
    return starts("redirects are refused");
  case errc::server_error:
    // Refused before any handler ran: unreadable, not a request, no such
    // method, invalid params.
    return !(starts("server could not read the request") || names_code("-32700")
             || names_code("-32600") || names_code("-32601") || names_code("-32602"));
  case errc::unavailable:
    // Refused by the connection, or no connection made: never sent.
    return !(text == "connection closed" || text == "too many requests waiting"
             || starts("http request failed: could not connect")
             || starts("http request failed: connect timed out")
             || starts("http request failed: tls certificate verification failed")
             || starts("http request failed: tls handshake failed"));
  case errc::internal:
    return text != "no connection for this server";
  default:
    return true;
  }
}

/// What a failed call that may change something, sent and not answered,
/// adds to its message: the model must not take the failure for "nothing
/// happened" and call it again.
std::string unknown_outcome_text(const char* why_unknown) {
  return std::string{why_unknown}
         + " It was not sent again. Check whether the change happened (with a read-only tool, "
           "or by asking the user) before calling it again.";
}

/// Marks a failure output (JSON text) "outcome": "unknown".
void mark_outcome_unknown(round_call& call) {
  auto out = json::parse(call.output);
  out["outcome"] = "unknown";
  call.output = out.dump();
}

bool deadline_passed(const status& failure) {
  return failure.code() == errc::unavailable
         && (failure.message() == "request deadline exceeded"
             || failure.message() == "deadline exceeded");
}

} // namespace

std::string call_params(const round_call& call) {
  std::string out = R"({"name":)";
  append_json_string(out, call.entry->tool());
  out += R"(,"arguments":)";
  out += call.arguments;
  out += '}';
  return out;
}

void settle_call(round_call& call, tool_round& round, run_memory& memory,
                 const round_limits& limits, const result<std::string>& answer) {
  if (answer) {
    // Room for simdjson's padding first: results can be megabytes.
    call.output.reserve(answer->size() + simdjson::SIMDJSON_PADDING);
    call.output = *answer;
    auto tool_error = reports_error(call.output);
    if (!tool_error) {
      fail(call, call_status::failed, "bad_result", "the server's answer was not a tool result.");
      return;
    }
    if (!*tool_error) {
      call.status = call_status::ok;
      call.reason = "completed";
      return;
    }
    // A failure like the others, with the server's own result beside it
    // (built as text: a result can be megabytes)
    call.status = call_status::tool_error;
    call.reason = "tool_reported_error";
    // An internal tool's refusal is typed: its code is the activity's reason
    // (the audit trail says "not_found", "slug_exists", ...).
    if (call.entry->origin != tool_origin::mcp) {
      auto result = json::parse(call.output, nullptr, false);
      if (auto code =
            result.is_object()
              ? result.value("structuredContent", json::object()).value("error", std::string{})
              : std::string{};
          !code.empty())
        call.reason = std::move(code);
    }
    std::string out = R"({"error":"tool_error","usable_result":false,"message":)";
    append_json_string(out, std::string{no_result}
                              + "the tool reported an error; its result (\"result\") says what "
                                "went wrong."
                              + std::string{correct_one});
    out += R"(,"result":)";
    out += call.output;
    out += '}';
    call.output = std::move(out);
    return;
  }
  const auto& failure = answer.error();
  if (is_argument_rejection(failure)) {
    remember_rejection(memory, fingerprint_of(*call.entry, call.arguments), limits);
    round.rejected_tools.insert(tool_key(*call.entry));
    spend_correction(round, memory, tool_key(*call.entry));
    fail(call, call_status::rejected, "server_rejected_arguments",
         "the server rejected its arguments.");
    return;
  }
  if (failure.code() == errc::unavailable && failure.message() == "request cancelled") {
    // Cancelled while in flight: MCP cancellation is advisory, so a call
    // that may change something may have run, or may still run.
    if (call.resend_safe) {
      fail(call, call_status::cancelled, "cancelled", "the run was cancelled before it completed.");
      return;
    }
    fail(call, call_status::cancelled, "cancelled",
         "the run was cancelled before it completed."
           + unknown_outcome_text(" The request may have reached the server, which may still be "
                                  "running it: the change it asks for may or may not have "
                                  "happened, or may still happen."));
    mark_outcome_unknown(call);
    return;
  }
  std::string why;
  if (failure.code() == errc::server_error)
    why = "the server answered with an error: " + failure.message() + ".";
  else
    why = "the server or its connection failed (" + std::string{to_string(failure.code())} + ": "
          + failure.message() + ").";
  const bool outcome_unknown = !call.resend_safe && may_have_run(failure);
  if (outcome_unknown)
    why += unknown_outcome_text(
      deadline_passed(failure)
        ? " Its deadline passed while the server may still have been running it: the change it "
          "asks for may or may not have happened, or may still happen."
        : " The request may have reached the server: the change it asks for may or may not have "
          "happened.");
  fail(call, call_status::failed, std::string{to_string(failure.code())},
       why + " Answer with what succeeded and say what was not completed.");
  if (outcome_unknown)
    mark_outcome_unknown(call);
}

void remember_places(const round_call& call, const adapter_map& adapters, run_memory& memory) {
  constexpr std::size_t max_searches = 16;
  if (call.status != call_status::ok || call.entry == nullptr
      || call.entry->tool() != "search_places")
    return;
  auto adapter = adapters.find(std::string{call.entry->server_id()});
  if (adapter == adapters.end() || adapter->second != call_adapter::maps_grounding_lite)
    return;
  auto cards = maps_grounding::place_cards_from_result(call.output);
  if (!cards)
    return;
  if (memory.place_searches.size() == max_searches)
    memory.place_searches.erase(memory.place_searches.begin());
  memory.place_searches.push_back(std::move(cards->cards));
}

std::string turn_place_cards(std::string_view answer_text, run_memory& memory) {
  json out = json::array();
  for (const auto& card : maps_grounding::select_cards(answer_text, memory.place_searches)) {
    json item{{"place_id", card.place_id},
              {"title", card.title},
              {"place_url", card.place_url},
              {"directions_url", card.directions_url}};
    if (card.coordinates) {
      item["latitude"] = card.coordinates->latitude;
      item["longitude"] = card.coordinates->longitude;
    }
    out.push_back(std::move(item));
  }
  memory.place_searches.clear();
  return out.dump();
}

void cancel_round(tool_round& round) {
  for (auto& call : round.calls)
    if (call.status == call_status::pending)
      fail(call, call_status::cancelled, "cancelled", "the run was cancelled before it completed.");
  round.cursor = round.calls.size();
}

std::vector<tool_output> round_outputs(const tool_round& round) {
  std::vector<tool_output> out;
  out.reserve(round.calls.size());
  for (const auto& call : round.calls)
    out.push_back({call.call_id, std::string{to_string(call.status)}, call.output});
  return out;
}

} // namespace voxos
