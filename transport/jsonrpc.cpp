#include "transport/jsonrpc.hpp"

#include <memory>
#include <utility>

#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace voxos {

namespace {

namespace ondemand = simdjson::ondemand;

// Messages up to this size are parsed with parsers kept per thread (their
// buffers grow to the largest such message); larger ones, rarer, get parsers
// of their own so no thread keeps megabytes of parse buffers.
constexpr std::size_t reused_parser_bytes = std::size_t{64} << 10;

status refuse(std::string what) {
  return status::error(errc::bad_json, "JSON-RPC message: " + std::move(what));
}

bool is_json_whitespace(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

std::string_view trim_trailing_whitespace(std::string_view text) {
  while (!text.empty() && is_json_whitespace(text.back()))
    text.remove_suffix(1);
  return text;
}

/// "a boolean", "an object"... for error messages.
const char* describe(ondemand::json_type type) {
  switch (type) {
  case ondemand::json_type::array:
    return "an array";
  case ondemand::json_type::object:
    return "an object";
  case ondemand::json_type::number:
    return "a number";
  case ondemand::json_type::string:
    return "a string";
  case ondemand::json_type::boolean:
    return "a boolean";
  case ondemand::json_type::null:
    return "null";
  }
  return "a value";
}

/// simdjson refuses some well-formed documents for limits of its own:
/// integers beyond 64 bits. nlohmann, which reads those as doubles, decides
/// them (as storage/event_codec does). Both refuse numbers beyond the range
/// of a double (1e400).
bool is_number_limit(simdjson::error_code err) {
  return err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE;
}

/// nlohmann's verdict on well-formed JSON, keeping simdjson's depth limit so
/// that both paths refuse the same nesting. Builds no document.
class depth_limited_acceptor final : public nlohmann::json_sax<nlohmann::json> {
public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    // 406: a number beyond the range of a double, which nlohmann refuses too.
    number_overflow = ex.id == 406;
    return false;
  }

  bool number_overflow = false;

private:
  bool enter() { return ++depth_ <= simdjson::DEFAULT_MAX_DEPTH; }
  bool leave() {
    --depth_;
    return true;
  }
  std::size_t depth_ = 0;
};

/// After simdjson refused a number: ok, or why nlohmann refuses the text.
status accept_within_depth(std::string_view text) {
  depth_limited_acceptor acceptor;
  if (nlohmann::json::sax_parse(text.begin(), text.end(), &acceptor))
    return status::ok();
  if (acceptor.number_overflow)
    return refuse("a number is beyond the range of a double");
  return refuse("not well-formed JSON");
}

/// Full validation of `text` (grammar, UTF-8, escapes, nothing after the
/// value) and the root's kind. The ondemand pass that follows skips the
/// values it copies as raw text, so it cannot be the validator.
status validate(const simdjson::padded_string& text) {
  thread_local simdjson::dom::parser reused;
  std::unique_ptr<simdjson::dom::parser> own;
  auto* parser = &reused;
  if (text.size() > reused_parser_bytes) {
    own = std::make_unique<simdjson::dom::parser>();
    parser = own.get();
  }
  simdjson::dom::element root;
  auto err = parser->parse(text).get(root);
  if (err == simdjson::DEPTH_ERROR)
    return refuse("nested deeper than " + std::to_string(simdjson::DEFAULT_MAX_DEPTH) + " levels");
  if (err != simdjson::SUCCESS) {
    if (!is_number_limit(err))
      return refuse("not well-formed JSON");
    std::string_view view{text};
    if (auto accepted = accept_within_depth(view); !accepted)
      return accepted;
    // Well-formed despite simdjson's number limits: find the root's kind by
    // its first character.
    auto first = view.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
      return refuse("not well-formed JSON");
    if (view[first] == '[')
      return refuse("a batch (top-level array); MCP sends one message per text");
    if (view[first] != '{')
      return refuse("not an object");
    return status::ok();
  }
  if (root.is_array())
    return refuse("a batch (top-level array); MCP sends one message per text");
  if (!root.is_object())
    return refuse("not an object");
  return status::ok();
}

/// The raw text of `value`, of any type.
status read_raw(ondemand::value& value, std::string& out) {
  ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS)
    return refuse("unreadable value");
  std::string_view raw;
  simdjson::error_code err = simdjson::SUCCESS;
  if (type == ondemand::json_type::object) {
    ondemand::object object;
    err = value.get_object().get(object);
    if (!err)
      err = object.raw_json().get(raw);
  } else if (type == ondemand::json_type::array) {
    ondemand::array array;
    err = value.get_array().get(array);
    if (!err)
      err = array.raw_json().get(raw);
  } else {
    raw = value.raw_json_token();
  }
  if (err)
    return refuse("unreadable value");
  out.assign(trim_trailing_whitespace(raw));
  return status::ok();
}

/// An id member: a string or an integer in int64 range; null is reported as
/// an empty optional (an error response may carry it).
status read_id(ondemand::value& value, std::optional<jsonrpc_id>& out) {
  ondemand::json_type type;
  if (value.type().get(type) != simdjson::SUCCESS)
    return refuse("unreadable member 'id'");
  switch (type) {
  case ondemand::json_type::null:
    out.reset();
    return status::ok();
  case ondemand::json_type::string: {
    std::string_view text;
    if (value.get_string().get(text) != simdjson::SUCCESS)
      return refuse("unreadable member 'id'");
    out = jsonrpc_id{std::string{text}};
    return status::ok();
  }
  case ondemand::json_type::number: {
    ondemand::number_type kind;
    if (value.get_number_type().get(kind) != simdjson::SUCCESS)
      return refuse("member 'id' is a number outside the 64-bit integer range");
    if (kind == ondemand::number_type::floating_point_number)
      return refuse("member 'id' must be a string or an integer, not a fractional number");
    int64_t number = 0;
    if (kind != ondemand::number_type::signed_integer
        || value.get_int64().get(number) != simdjson::SUCCESS)
      return refuse("member 'id' is an integer outside the 64-bit signed range");
    out = jsonrpc_id{number};
    return status::ok();
  }
  default:
    return refuse(std::string{"member 'id' must be a string or an integer, not "} + describe(type));
  }
}

/// The members of "error": an integer code, a string message, any data.
status read_error(ondemand::value& value, jsonrpc_error_response& out) {
  ondemand::object object;
  if (value.get_object().get(object) != simdjson::SUCCESS)
    return refuse("member 'error' must be an object");
  bool has_code = false;
  bool has_message = false;
  for (auto member : object) {
    ondemand::field field;
    std::string_view key;
    if (std::move(member).get(field) != simdjson::SUCCESS
        || field.unescaped_key().get(key) != simdjson::SUCCESS)
      return refuse("unreadable member of 'error'");
    ondemand::value member_value = field.value();
    if (key == "code") {
      if (has_code)
        return refuse("member 'error.code' appears twice");
      has_code = true;
      ondemand::number_type kind;
      if (member_value.get_number_type().get(kind) != simdjson::SUCCESS
          || kind != ondemand::number_type::signed_integer
          || member_value.get_int64().get(out.code) != simdjson::SUCCESS)
        return refuse("member 'error.code' must be an integer in the 64-bit signed range");
    } else if (key == "message") {
      if (has_message)
        return refuse("member 'error.message' appears twice");
      has_message = true;
      std::string_view text;
      if (member_value.get_string().get(text) != simdjson::SUCCESS)
        return refuse("member 'error.message' must be a string");
      out.message.assign(text);
    } else if (key == "data") {
      if (out.data)
        return refuse("member 'error.data' appears twice");
      out.data.emplace();
      if (auto read = read_raw(member_value, *out.data); !read)
        return read;
    }
  }
  if (!has_code)
    return refuse("missing member 'error.code'");
  if (!has_message)
    return refuse("missing member 'error.message'");
  return status::ok();
}

enum class member { jsonrpc, id, method, params, result, error, other };

member member_of(std::string_view key) {
  if (key == "jsonrpc")
    return member::jsonrpc;
  if (key == "id")
    return member::id;
  if (key == "method")
    return member::method;
  if (key == "params")
    return member::params;
  if (key == "result")
    return member::result;
  if (key == "error")
    return member::error;
  return member::other;
}

const char* name_of(member which) {
  switch (which) {
  case member::jsonrpc:
    return "jsonrpc";
  case member::id:
    return "id";
  case member::method:
    return "method";
  case member::params:
    return "params";
  case member::result:
    return "result";
  case member::error:
    return "error";
  case member::other:
    break;
  }
  return "other";
}

/// Everything read from the top-level object, before classification.
struct members {
  bool seen[static_cast<int>(member::other)] = {};
  std::optional<jsonrpc_id> id; ///< empty for "id": null
  std::string method;
  std::optional<std::string> params;
  std::string result;
  jsonrpc_error_response error;

  bool has(member which) const { return seen[static_cast<int>(which)]; }
};

status read_member(member which, ondemand::value& value, members& out) {
  switch (which) {
  case member::jsonrpc: {
    std::string_view version;
    if (value.get_string().get(version) != simdjson::SUCCESS || version != "2.0")
      return refuse("member 'jsonrpc' must be the string \"2.0\"");
    return status::ok();
  }
  case member::id:
    return read_id(value, out.id);
  case member::method: {
    std::string_view method;
    if (value.get_string().get(method) != simdjson::SUCCESS)
      return refuse("member 'method' must be a string");
    out.method.assign(method);
    return status::ok();
  }
  case member::params: {
    ondemand::json_type type;
    if (value.type().get(type) != simdjson::SUCCESS
        || (type != ondemand::json_type::object && type != ondemand::json_type::array))
      return refuse("member 'params' must be an object or an array");
    out.params.emplace();
    return read_raw(value, *out.params);
  }
  case member::result:
    return read_raw(value, out.result);
  case member::error:
    return read_error(value, out.error);
  case member::other:
    break;
  }
  return status::ok();
}

/// Reads the known members of a validated top-level object.
status read_members(simdjson::padded_string& text, members& out) {
  thread_local ondemand::parser reused;
  std::unique_ptr<ondemand::parser> own;
  auto* parser = &reused;
  if (text.size() > reused_parser_bytes) {
    own = std::make_unique<ondemand::parser>();
    parser = own.get();
  }
  ondemand::document document;
  ondemand::object object;
  if (parser->iterate(text).get(document) != simdjson::SUCCESS
      || document.get_object().get(object) != simdjson::SUCCESS)
    return refuse("not an object");
  for (auto entry : object) {
    ondemand::field field;
    std::string_view key;
    if (std::move(entry).get(field) != simdjson::SUCCESS
        || field.unescaped_key().get(key) != simdjson::SUCCESS)
      return refuse("unreadable member");
    auto which = member_of(key);
    if (which == member::other)
      continue;
    auto& seen = out.seen[static_cast<int>(which)];
    if (seen)
      return refuse(std::string{"member '"} + name_of(which) + "' appears twice");
    seen = true;
    ondemand::value value = field.value();
    if (auto read = read_member(which, value, out); !read)
      return read;
  }
  return status::ok();
}

/// Decides the kind of message from the members present.
result<jsonrpc_message> classify(members&& in) {
  if (!in.has(member::jsonrpc))
    return refuse("missing member 'jsonrpc'");
  bool has_result = in.has(member::result);
  bool has_error = in.has(member::error);
  if (has_result && has_error)
    return refuse("both 'result' and 'error'");
  auto null_id = [] { return refuse("member 'id' must be a string or an integer, not null"); };
  if (in.has(member::method)) {
    if (has_result || has_error)
      return refuse("'method' together with 'result' or 'error'");
    if (!in.has(member::id))
      return jsonrpc_message{jsonrpc_notification{std::move(in.method), std::move(in.params)}};
    if (!in.id)
      return null_id();
    return jsonrpc_message{
      jsonrpc_request{std::move(*in.id), std::move(in.method), std::move(in.params)}};
  }
  if (has_result) {
    if (!in.has(member::id))
      return refuse("missing member 'id' in a response");
    if (!in.id)
      return null_id();
    return jsonrpc_message{jsonrpc_response{std::move(*in.id), std::move(in.result)}};
  }
  if (has_error) {
    in.error.id = std::move(in.id);
    return jsonrpc_message{std::move(in.error)};
  }
  return refuse("none of 'method', 'result' and 'error'");
}

/// Serializes `value` compactly; strict about UTF-8.
std::string dump(const nlohmann::json& value) {
  return value.dump();
}

std::string dump_id(const jsonrpc_id& id) {
  return std::visit([](const auto& value) { return dump(nlohmann::json(value)); }, id);
}

status check_params(const nlohmann::json& params) {
  if (params.is_null() || params.is_object() || params.is_array())
    return status::ok();
  return status::error(errc::wrong_type, "JSON-RPC params must be an object or an array");
}

/// Runs a builder, turning nlohmann's exception for a string that is not
/// valid UTF-8 into an error value.
template <class Build>
result<std::string> build(Build&& body) {
  try {
    std::string text = "{\"jsonrpc\":\"2.0\"";
    body(text);
    text += '}';
    return text;
  } catch (const nlohmann::json::exception&) {
    return status::error(errc::bad_json, "JSON-RPC message would hold a string that is not UTF-8");
  }
}

} // namespace

result<jsonrpc_message> parse_jsonrpc(std::string_view text) {
  // One padded copy serves both passes (simdjson reads a little past the end).
  simdjson::padded_string padded{text};
  if (auto valid = validate(padded); !valid)
    return valid;
  members read;
  if (auto read_status = read_members(padded, read); !read_status)
    return read_status;
  return classify(std::move(read));
}

result<std::string> make_jsonrpc_request(const jsonrpc_id& id, std::string_view method,
                                         const nlohmann::json& params) {
  if (auto checked = check_params(params); !checked)
    return checked;
  return build([&](std::string& text) {
    text += ",\"id\":" + dump_id(id);
    text += ",\"method\":" + dump(nlohmann::json(method));
    if (!params.is_null())
      text += ",\"params\":" + dump(params);
  });
}

result<std::string> make_jsonrpc_request_text(const jsonrpc_id& id, std::string_view method,
                                              std::string_view params_text) {
  // The params: one well-formed JSON object, checked in full.
  std::string_view params = trim_trailing_whitespace(params_text);
  while (!params.empty() && is_json_whitespace(params.front()))
    params.remove_prefix(1);
  if (!params_text.empty()) {
    if (params.empty())
      return status::error(errc::wrong_type, "JSON-RPC params must be a JSON object");
    simdjson::padded_string padded{params};
    if (auto valid = validate(padded); !valid)
      return status::error(errc::wrong_type, "JSON-RPC params must be a JSON object");
  }
  return build([&](std::string& text) {
    text.reserve(64 + method.size() + params.size());
    text += ",\"id\":";
    if (const auto* number = std::get_if<int64_t>(&id))
      text += std::to_string(*number);
    else
      text += dump_id(id);
    text += ",\"method\":" + dump(nlohmann::json(method));
    if (!params.empty()) {
      text += ",\"params\":";
      text += params;
    }
  });
}

result<std::string> make_jsonrpc_notification(std::string_view method,
                                              const nlohmann::json& params) {
  if (auto checked = check_params(params); !checked)
    return checked;
  return build([&](std::string& text) {
    text += ",\"method\":" + dump(nlohmann::json(method));
    if (!params.is_null())
      text += ",\"params\":" + dump(params);
  });
}

result<std::string> make_jsonrpc_response(const jsonrpc_id& id,
                                          const nlohmann::json& result_value) {
  return build([&](std::string& text) {
    text += ",\"id\":" + dump_id(id);
    text += ",\"result\":" + dump(result_value);
  });
}

result<std::string> make_jsonrpc_error_response(const std::optional<jsonrpc_id>& id, int64_t code,
                                                std::string_view message) {
  return make_jsonrpc_error_response(id, code, message, nullptr);
}

result<std::string> make_jsonrpc_error_response(const std::optional<jsonrpc_id>& id, int64_t code,
                                                std::string_view message,
                                                const nlohmann::json& data) {
  return build([&](std::string& text) {
    text += ",\"id\":" + (id ? dump_id(*id) : std::string{"null"});
    text += ",\"error\":{\"code\":" + std::to_string(code);
    text += ",\"message\":" + dump(nlohmann::json(message));
    if (!data.is_null())
      text += ",\"data\":" + dump(data);
    text += '}';
  });
}

} // namespace voxos
