// Message structs: the data that crosses actor boundaries, locally or over the
// CAF network. Each struct has a free `inspect` and is registered by
// `register_types` (register.hpp). Plain structs, so CAF-free layers may use
// them; only the lightweight type_name header of CAF is included.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

namespace voxos {

/// One event to append; `data` is a JSON document (object) as text.
struct event_draft {
  std::string type;
  std::string data;
};

/// One stored event. Events are the truth; projections are derived from them.
struct event_record {
  std::string tenant;  ///< tenant id, or "_node" for node-level streams
  std::string stream;  ///< stream name inside the tenant, e.g. "directory"
  uint64_t seq = 0;    ///< 1-based, gap-free within (tenant, stream)
  int64_t time_us = 0; ///< append time, microseconds since the Unix epoch
  std::string type;    ///< dotted event type, e.g. "tenant.created"
  std::string data;    ///< JSON object as text
};

/// Appends `events` to (tenant, stream) atomically, with the projection
/// updates they cause. `expected_next` guards optimistic writers: the append
/// fails with `sequence_conflict` unless the stream's next sequence equals it.
/// `sync_deferred`: acknowledged once written to the WAL, and durable with
/// the store's next synced write, at the latest `event_store.deferred_sync_ms`
/// later (a record of what already happened, never an intent). A store
/// without WAL sync treats every append this way.
struct append_request {
  static constexpr uint64_t any_seq = std::numeric_limits<uint64_t>::max();
  std::string tenant;
  std::string stream;
  std::vector<event_draft> events;
  uint64_t expected_next = any_seq;
  bool sync_deferred = false;
};

/// The sequence numbers an acknowledged (durable) append received.
struct append_result {
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
};

/// Reads up to `limit` events of one stream with seq >= `from_seq`, or, with
/// from_seq == newest, the stream's newest `limit` events (in order).
struct stream_query {
  static constexpr uint64_t newest = 0;
  std::string tenant;
  std::string stream;
  uint64_t from_seq = 1;
  uint32_t limit = 1000;
};

/// One projection entry (state column family).
struct state_entry {
  std::string key;
  std::string value;
};

/// What a full verification of the event store found.
struct store_report {
  uint64_t events = 0;
  uint64_t streams = 0;
  uint64_t state_entries = 0;
};

/// A tenant as the node's directory knows it.
struct tenant_record {
  std::string tenant_id;
  std::string name;
  int64_t created_us = 0;
};

/// An API token's public half (its secret is only ever returned once, at issue).
struct token_record {
  std::string token_id;
  std::string tenant_id;
  std::string label;
  int64_t created_us = 0;
  bool revoked = false;
};

/// A newly issued token: `secret` is shown to the caller once and stored only hashed.
struct issued_token {
  token_record record;
  std::string secret;
};

/// Who an authenticated tenant token speaks for.
struct tenant_identity {
  std::string tenant_id;
  std::string tenant_name;
  std::string token_id;
};

/// The answer to a ping on the published run_host.
struct pong_reply {
  std::string node_id;
  std::string version;
  int64_t time_us = 0;
};

/// One tool call of a model response, as an agent host hands it over.
struct tool_call {
  std::string call_id;   ///< the model's call id, unique in its response
  std::string name;      ///< the model-facing tool name (from the run's view)
  std::string arguments; ///< the argument object, JSON text ("" for none)
};

/// The runtime's answer to one tool call.
struct tool_output {
  std::string call_id;
  /// ok | tool_error | local | denied | invalid_arguments | rejected |
  /// skipped | unavailable | failed | cancelled
  std::string status;
  std::string output; ///< what the model receives, JSON text
};

/// A host's request to start a run.
struct run_start {
  std::string agent_id;
  std::string channel;       ///< e.g. "owner_text_chat"
  std::string caller_number; ///< phone and messaging channels: E.164
  std::string chat_id;       ///< the chat the run belongs to; "" starts a new chat
  /// The user's shared location, JSON {"latitude","longitude","accuracy_m",
  /// "captured_us"}, or "" (see actors/run/location.hpp).
  std::string location;
};

/// A started run: its id, its chat, its tool view (JSON) and what the
/// agent's instructions gain for this run (the location paragraph, or "").
struct run_ticket {
  std::string run_id;
  std::string chat_id;
  std::string view;
  std::string instructions;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_draft& x) {
  return f(caf::meta::type_name("event_draft"), x.type, x.data);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_record& x) {
  return f(caf::meta::type_name("event_record"), x.tenant, x.stream, x.seq, x.time_us, x.type,
           x.data);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_request& x) {
  return f(caf::meta::type_name("append_request"), x.tenant, x.stream, x.events, x.expected_next,
           x.sync_deferred);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_result& x) {
  return f(caf::meta::type_name("append_result"), x.first_seq, x.last_seq);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stream_query& x) {
  return f(caf::meta::type_name("stream_query"), x.tenant, x.stream, x.from_seq, x.limit);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, state_entry& x) {
  return f(caf::meta::type_name("state_entry"), x.key, x.value);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, store_report& x) {
  return f(caf::meta::type_name("store_report"), x.events, x.streams, x.state_entries);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tenant_record& x) {
  return f(caf::meta::type_name("tenant_record"), x.tenant_id, x.name, x.created_us);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_record& x) {
  return f(caf::meta::type_name("token_record"), x.token_id, x.tenant_id, x.label, x.created_us,
           x.revoked);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, issued_token& x) {
  return f(caf::meta::type_name("issued_token"), x.record, x.secret);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tenant_identity& x) {
  return f(caf::meta::type_name("tenant_identity"), x.tenant_id, x.tenant_name, x.token_id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pong_reply& x) {
  return f(caf::meta::type_name("pong_reply"), x.node_id, x.version, x.time_us);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_call& x) {
  return f(caf::meta::type_name("tool_call"), x.call_id, x.name, x.arguments);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tool_output& x) {
  return f(caf::meta::type_name("tool_output"), x.call_id, x.status, x.output);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_start& x) {
  return f(caf::meta::type_name("run_start"), x.agent_id, x.channel, x.caller_number, x.chat_id,
           x.location);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, run_ticket& x) {
  return f(caf::meta::type_name("run_ticket"), x.run_id, x.chat_id, x.view, x.instructions);
}

// Equality, for tests that compare round-tripped values.
bool operator==(const event_draft& x, const event_draft& y);
bool operator==(const event_record& x, const event_record& y);
bool operator==(const append_request& x, const append_request& y);
bool operator==(const append_result& x, const append_result& y);
bool operator==(const stream_query& x, const stream_query& y);
bool operator==(const state_entry& x, const state_entry& y);
bool operator==(const store_report& x, const store_report& y);
bool operator==(const tenant_record& x, const tenant_record& y);
bool operator==(const token_record& x, const token_record& y);
bool operator==(const issued_token& x, const issued_token& y);
bool operator==(const tenant_identity& x, const tenant_identity& y);
bool operator==(const pong_reply& x, const pong_reply& y);
bool operator==(const tool_call& x, const tool_call& y);
bool operator==(const tool_output& x, const tool_output& y);
bool operator==(const run_start& x, const run_start& y);
bool operator==(const run_ticket& x, const run_ticket& y);

} // namespace voxos
