// JSON-RPC 2.0 messages as MCP meets them: classifying and reading one
// message received from the other side (simdjson, on the hot path; the MCP
// client reads servers' messages with it, the MCP server clients'), and
// writing messages as compact text (nlohmann). One message per text: MCP
// 2025-06-18 and later have no batches. CAF-free, stateless, safe to call
// from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json_fwd.hpp>

#include "messages/status.hpp"

namespace voxos {

/// A request id: an integer (64-bit signed) or a string. The kind is part of
/// the value: the string "1" and the integer 1 are different ids.
using jsonrpc_id = std::variant<int64_t, std::string>;

/// Raw JSON texts below are the member's value exactly as received (no
/// re-serialization: numbers, escapes and key order are unchanged), without
/// surrounding whitespace, always one well-formed JSON value.

/// The answer to one of our requests.
struct jsonrpc_response {
  jsonrpc_id id;
  std::string result; ///< raw JSON text of "result" (any JSON value)
};

/// A failed answer. The id is absent when the server sent "id": null or no
/// id, as JSON-RPC allows when it could not read the request's id.
struct jsonrpc_error_response {
  std::optional<jsonrpc_id> id;
  int64_t code = 0;
  std::string message;
  std::optional<std::string> data; ///< raw JSON text of "error.data"
};

/// A request from the server (sampling, elicitation, roots, ping...).
struct jsonrpc_request {
  jsonrpc_id id;
  std::string method;
  std::optional<std::string> params; ///< raw JSON text: an object or an array
};

/// A notification from the server (progress, logging, list changes...).
struct jsonrpc_notification {
  std::string method;
  std::optional<std::string> params; ///< raw JSON text: an object or an array
};

using jsonrpc_message =
  std::variant<jsonrpc_response, jsonrpc_error_response, jsonrpc_request, jsonrpc_notification>;

/// Classifies and reads one message. Members other than jsonrpc, id, method,
/// params, result and error are ignored (and not validated beyond being
/// well-formed JSON).
///
/// Errors, all bad_json, with a message naming the problem and never quoting
/// the text: not well-formed JSON (including ill-formed UTF-8, anything after
/// the value, nesting deeper than 1024, a number beyond the range of a
/// double such as 1e400; integers beyond 64 bits are accepted); a batch (top-level array); not an
/// object; "jsonrpc" missing or not the string "2.0"; one of the members
/// above repeated; an id that is null (except in an error response), a
/// fractional number, an integer outside the 64-bit signed range, a boolean,
/// an object or an array; "method" not a string; "params" not an object or
/// an array; both "result" and "error"; "method" together with either;
/// none of the three; "result" without an id; "error" not an object, or
/// without an integer "code" and a string "message".
result<jsonrpc_message> parse_jsonrpc(std::string_view text);

/// Builders: compact text such as {"jsonrpc":"2.0","id":1,"method":"ping"}.
/// `params` null means no params member; otherwise it must be an object or
/// an array (else wrong_type). Fails with bad_json if a string in the
/// arguments is not valid UTF-8.
result<std::string> make_jsonrpc_request(const jsonrpc_id& id, std::string_view method,
                                         const nlohmann::json& params);
/// The same request with `params_text` (a JSON object text, or "" for no
/// params) placed into the message as written, without parsing it into a
/// document and writing it again: the hot path of a client's calls. The text
/// is checked first (well-formed JSON, valid UTF-8, an object; else
/// wrong_type, also for only whitespace); surrounding whitespace is dropped.
result<std::string> make_jsonrpc_request_text(const jsonrpc_id& id, std::string_view method,
                                              std::string_view params_text);
result<std::string> make_jsonrpc_notification(std::string_view method,
                                              const nlohmann::json& params);
/// `result_value` may be any JSON value (MCP results are objects).
result<std::string> make_jsonrpc_response(const jsonrpc_id& id, const nlohmann::json& result_value);
/// Without an id, "id" is written as null (the request's id was unreadable).
result<std::string> make_jsonrpc_error_response(const std::optional<jsonrpc_id>& id, int64_t code,
                                                std::string_view message);
/// The same with "error.data" (any JSON value; null writes no data member).
result<std::string> make_jsonrpc_error_response(const std::optional<jsonrpc_id>& id, int64_t code,
                                                std::string_view message,
                                                const nlohmann::json& data);

} // namespace voxos
