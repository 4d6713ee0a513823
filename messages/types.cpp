#include "messages/types.hpp"

#include <tuple>

namespace voxos {

bool operator==(const event_draft& x, const event_draft& y) {
  return std::tie(x.type, x.data) == std::tie(y.type, y.data);
}
bool operator==(const event_record& x, const event_record& y) {
  return std::tie(x.tenant, x.stream, x.seq, x.time_us, x.type, x.data)
         == std::tie(y.tenant, y.stream, y.seq, y.time_us, y.type, y.data);
}
bool operator==(const append_request& x, const append_request& y) {
  return std::tie(x.tenant, x.stream, x.events, x.expected_next, x.sync_deferred)
         == std::tie(y.tenant, y.stream, y.events, y.expected_next, y.sync_deferred);
}
bool operator==(const append_result& x, const append_result& y) {
  return std::tie(x.first_seq, x.last_seq) == std::tie(y.first_seq, y.last_seq);
}
bool operator==(const stream_query& x, const stream_query& y) {
  return std::tie(x.tenant, x.stream, x.from_seq, x.limit)
         == std::tie(y.tenant, y.stream, y.from_seq, y.limit);
}
bool operator==(const state_entry& x, const state_entry& y) {
  return x.key == y.key && x.value == y.value;
}
bool operator==(const store_report& x, const store_report& y) {
  return std::tie(x.events, x.streams, x.state_entries)
         == std::tie(y.events, y.streams, y.state_entries);
}
bool operator==(const tenant_record& x, const tenant_record& y) {
  return std::tie(x.tenant_id, x.name, x.created_us) == std::tie(y.tenant_id, y.name, y.created_us);
}
bool operator==(const token_record& x, const token_record& y) {
  return std::tie(x.token_id, x.tenant_id, x.label, x.created_us, x.revoked)
         == std::tie(y.token_id, y.tenant_id, y.label, y.created_us, y.revoked);
}
bool operator==(const issued_token& x, const issued_token& y) {
  return x.record == y.record && x.secret == y.secret;
}
bool operator==(const tenant_identity& x, const tenant_identity& y) {
  return std::tie(x.tenant_id, x.tenant_name, x.token_id)
         == std::tie(y.tenant_id, y.tenant_name, y.token_id);
}
bool operator==(const pong_reply& x, const pong_reply& y) {
  return std::tie(x.node_id, x.version, x.time_us) == std::tie(y.node_id, y.version, y.time_us);
}
bool operator==(const tool_call& x, const tool_call& y) {
  return std::tie(x.call_id, x.name, x.arguments) == std::tie(y.call_id, y.name, y.arguments);
}
bool operator==(const tool_output& x, const tool_output& y) {
  return std::tie(x.call_id, x.status, x.output) == std::tie(y.call_id, y.status, y.output);
}
bool operator==(const run_start& x, const run_start& y) {
  return std::tie(x.agent_id, x.channel, x.caller_number, x.chat_id, x.location)
         == std::tie(y.agent_id, y.channel, y.caller_number, y.chat_id, y.location);
}
bool operator==(const run_ticket& x, const run_ticket& y) {
  return std::tie(x.run_id, x.chat_id, x.view, x.instructions)
         == std::tie(y.run_id, y.chat_id, y.view, y.instructions);
}

} // namespace voxos
