// What every internal tool is given: the execution context of its call, and
// what it answers. CAF-free.
//
// The context is filled by the runtime from the run (its persisted snapshot
// and start request): tenant, agent, run, chat, channel, caller. A tool reads
// its authority from here and never from model arguments; an argument that
// names another tenant's, agent's, chat's or run's id is refused by the
// tool's schema (no such property) or by the tool (an id that is not this
// tenant's reads as not found).
//
// A tool is a function of (its family's state, the context, the validated
// arguments) to an outcome: the structured result the model sees, or a
// typed error, and the events that make its change durable. The tool desk
// (tool_desk.hpp) appends those events, awaited, before the answer leaves:
// nothing a tool reports as done is lost, and a refused call stores nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tenant/policy.hpp"
#include "messages/types.hpp"

namespace voxos {

struct tool_context {
  std::string tenant_id;
  std::string agent_id;
  std::string run_id;
  std::string chat_id;
  channel chan = channel::owner_text_chat;
  caller_class caller = caller_class::owner;
  /// How contact results are shaped on this run (number endings on SMS and
  /// WhatsApp).
  contact_detail contacts = contact_detail::full_numbers;
  /// Phone calls and inbound messages: the caller's normalised number.
  std::string caller_number;
  /// Wall clock at the call, microseconds since the Unix epoch.
  int64_t now_us = 0;
};

/// Events one tool call appends to one stream of its tenant.
struct tool_write {
  std::string stream;
  std::vector<event_draft> events;
};

/// What one internal tool call answers.
struct tool_outcome {
  /// Success: the structured result. Failure: {"error": code, "message": ...}.
  nlohmann::json result = nlohmann::json::object();
  bool is_error = false;
  /// Durable before the answer; empty for reads and refusals.
  std::vector<tool_write> writes;

  static tool_outcome ok(nlohmann::json result) {
    tool_outcome out;
    out.result = std::move(result);
    return out;
  }
  /// A typed refusal: `code` is stable (not_found, ambiguous, conflict,
  /// out_of_range, invalid_arguments, ...), `message` model-facing and free of
  /// secrets and of the rejected values.
  static tool_outcome error(std::string code, std::string message) {
    tool_outcome out;
    out.is_error = true;
    out.result = {{"error", std::move(code)}, {"message", std::move(message)}};
    return out;
  }
};

/// The MCP CallToolResult text of an outcome: the result as structured
/// content and as one text block, `isError` on failure.
std::string to_call_result(const tool_outcome& outcome);

} // namespace voxos
