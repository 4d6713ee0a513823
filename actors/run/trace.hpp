// Run traces: every typed message that crosses a run's boundary, recorded
// as JSON lines, and read back for `voxosctl replay`. CAF-free.
//
// A run records a trace when the node's `run.trace_dir` is set: the file
// `<trace_dir>/<run_id>.jsonl`, one JSON object per line:
//   {"type":"header","version":1,"proves":"","run_id","tenant_id",
//    "view_kind":"text"|"voice","snapshot":{...},"servers":[{...}],
//    "adapters":{"<server_id>":"maps_grounding_lite"},"catalog_key":"<hex>",
//    "limits":{...}}
//       what the run was given: its snapshot, the server records (with the
//       cached tool definitions) its view was composed from, the key of its
//       tool catalog (so catalog ids replay), its round limits;
//   {"type":"calls","round":N,"calls":[{"call_id","name","arguments"}]}
//       a model response's tool calls, as the host handed them over;
//   {"type":"mcp","round":N,"server_id","params","code","text"[,"redacted":true]}
//       one tools/call the run sent and its connection's answer (code 0:
//       `text` is the result; else an errc and the failure's message);
//   {"type":"outputs","round":N,"outputs":[{"call_id","status","output"
//    [,"redacted":true]}]}
//       what the run answered;
//   {"type":"refused","after_round":N,"calls":[...],"error":"<errc>: <message>"}
//       a model response the run refused whole (too many calls, repeated
//       call ids...), nothing of it decided;
//   {"type":"turn","after_round":N,"assistant":"...","cards":"[]"|"cards_redacted":K
//    [,"during_round":true]}
//       a turn's assistant text the host reported, and the place cards the
//       run answered for it: "[]" when none, else only how many
//       (during_round: while round N was executing, so from that round's
//       searches so far: replayed, not compared);
//   {"type":"cancel"}   the run was cancelled;
//   {"type":"truncated","max_bytes":N}
//       the next line would have passed run.trace_max_bytes: the trace ends
//       here (replay refuses it: what follows was not recorded).
// `proves` is empty when recorded; a trace checked in as a test fixture
// says there what it proves.
//
// Traces hold arguments, results and the run's catalog key: they are
// sensitive operator files (mode 0600), never recorded by default.
//
// Google Maps Grounding Lite content is never written (the product keeps
// none of it beyond the live answer): every result a Grounding Lite server
// (the header's "adapters") answered is recorded redacted, in the `mcp`
// line and in the call's output, as {"content":[{"type":"text","text":
// "<redacted_text>"}],"isError":<as answered>} (an answer that is not a JSON
// object: the JSON string "<redacted_text>"), marked "redacted"; a failure
// keeps its errc and the connection's message. A turn's place cards (only
// Grounding Lite searches make them) are recorded as their number. What
// the model wrote (calls, arguments, params) and the assistant's text are
// kept. A replay serves the redacted answers, so the replayed run answers
// the redacted form: it shows the same calls reach the same servers with
// the same statuses and outputs otherwise, not that the Maps content was
// the same, and a turn's redacted cards are not compared.
//
// Threading: one run_trace belongs to one run actor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/run/tool_catalog.hpp"
#include "actors/run/tool_round.hpp"
#include "actors/run/tool_view.hpp"
#include "actors/tenant/policy.hpp"
#include "actors/tenant/tenant_model.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"

namespace voxos {

/// Writes one run's trace.
class run_trace {
public:
  /// Opens `path` for writing (created with mode 0600, truncated). The
  /// trace holds at most `max_bytes`: the line that would pass it is
  /// replaced by {"type":"truncated","max_bytes":N}, and nothing follows.
  static result<std::unique_ptr<run_trace>> create(const std::string& path,
                                                   uint64_t max_bytes = uint64_t{64} << 20);

  void header(const std::string& tenant_id, const effective_policy& snapshot,
              const std::vector<const mcp_server_record*>& servers, const adapter_map& adapters,
              const catalog_key& key, view_kind kind, const round_limits& limits);
  void calls(uint64_t round, const std::vector<tool_call>& calls);
  /// Redacts `text` (code 0) when `server_id` is a Grounding Lite server.
  void mcp(uint64_t round, const std::string& server_id, const std::string& params, uint8_t code,
           const std::string& text);
  /// `outputs` are round_outputs(settled): one per call, in call order; the
  /// results of calls to a Grounding Lite server are redacted.
  void outputs(uint64_t round, const tool_round& settled, const std::vector<tool_output>& outputs);
  void refused(uint64_t after_round, const std::vector<tool_call>& calls, const status& error);
  /// Keeps the number of `cards` (a JSON array), not the cards.
  void turn(uint64_t after_round, const std::string& assistant, const std::string& cards,
            bool during_round);
  void cancel();

private:
  run_trace(std::ofstream out, uint64_t max_bytes) : out_(std::move(out)), max_bytes_(max_bytes) {}
  void line(const nlohmann::json& doc);
  std::ofstream out_;
  uint64_t max_bytes_;
  uint64_t written_ = 0;
  bool truncated_ = false;
  /// Servers whose results are redacted (header: the Grounding Lite ones).
  std::unordered_set<std::string> redacted_servers_;
};

/// The text a redacted Grounding Lite result carries.
inline constexpr std::string_view redacted_text =
  "Google Maps Grounding Lite result: redacted from the trace";

/// A tool result (JSON text) in its redacted form (see above).
std::string redacted_result(std::string_view result_json);

/// One recorded MCP answer.
struct traced_answer {
  std::string server_id;
  std::string params;
  uint8_t code = 0;
  std::string text;
};

/// One recorded round.
struct traced_round {
  uint64_t round = 0;
  std::vector<tool_call> calls;
  std::vector<tool_output> outputs;
  /// Outputs recorded redacted (Grounding Lite results).
  std::size_t redacted = 0;
};

/// A message between rounds: a response refused whole (its error is
/// compared) or a turn's text (its place cards are compared).
struct traced_between {
  enum class kind : uint8_t { refused, turn };
  kind what = kind::refused;
  uint64_t after_round = 0;
  std::vector<tool_call> calls;   ///< refused
  std::string error;              ///< refused: "<errc>: <message>"
  std::string assistant;          ///< turn
  std::string cards;              ///< turn; empty when redacted
  std::size_t cards_redacted = 0; ///< turn: cards recorded as their number only
  bool during_round = false;      ///< turn: reported while round after_round executed
};

/// "<errc>: <message>", as a trace records a refusal.
std::string refusal_text(const status& error);

/// A trace read back: what the run was given, and what crossed its boundary.
struct trace_record {
  std::string proves;
  std::string run_id;
  tenant_state tenant; ///< tenant id and the recorded server records
  effective_policy snapshot;
  adapter_map adapters;
  catalog_key key{};
  view_kind kind = view_kind::text;
  round_limits limits;
  std::vector<traced_round> rounds;
  std::vector<traced_answer> answers;  ///< in the order they were recorded
  std::vector<traced_between> between; ///< in the order they were recorded
  /// The round during which the run was cancelled (0: never, or while it
  /// was idle between rounds, which changes no output).
  uint64_t cancelled_in_round = 0;
};

/// Reads a trace; errors name the line and what is wrong with it.
result<trace_record> read_trace(std::istream& in);

/// Where two outputs of the same round differ, for a report ("" if equal):
/// the call id and which of status and output differ.
std::string compare_outputs(const std::vector<tool_output>& recorded,
                            const std::vector<tool_output>& replayed);

} // namespace voxos
