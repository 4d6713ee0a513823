#include "actors/tenant/tenant_events.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <nlohmann/json.hpp>

#include "storage/keys.hpp"

namespace voxos::tenant_events {

namespace {

using nlohmann::json;

// -- enum names ----------------------------------------------------------------

// One overload set over every enum this file encodes; "unknown" for values
// outside the enum. Named name_of (not to_string) so that a later
// voxos::to_string for the model's enums cannot make calls ambiguous.

std::string_view name_of(grant_decision x) noexcept {
  switch (x) {
  case grant_decision::allow:
    return "allow";
  case grant_decision::deny:
    return "deny";
  }
  return "unknown";
}

std::string_view name_of(route_mode x) noexcept {
  switch (x) {
  case route_mode::automatic:
    return "automatic";
  case route_mode::pinned:
    return "pinned";
  }
  return "unknown";
}

std::string_view name_of(phone_provider x) noexcept {
  switch (x) {
  case phone_provider::twilio:
    return "twilio";
  case phone_provider::telnyx:
    return "telnyx";
  }
  return "unknown";
}

std::string_view name_of(contact_detail x) noexcept {
  switch (x) {
  case contact_detail::full_numbers:
    return "full_numbers";
  case contact_detail::number_endings:
    return "number_endings";
  }
  return "unknown";
}

std::string_view name_of(risk_level x) noexcept {
  return to_string(x);
}
std::string_view name_of(transport_kind x) noexcept {
  return to_string(x);
}
std::string_view name_of(auth_mode x) noexcept {
  return to_string(x);
}
std::string_view name_of(channel x) noexcept {
  return to_string(x);
}
std::string_view name_of(caller_class x) noexcept {
  return to_string(x);
}
std::string_view name_of(tool_origin x) noexcept {
  return to_string(x);
}
std::string_view name_of(reason x) noexcept {
  return to_string(x);
}

/// The enumerator whose name is `text`. Every enum here has the underlying
/// type uint8_t, so trying each value finds every enumerator, including ones
/// added later.
template <class Enum>
std::optional<Enum> parse_enum(std::string_view text) {
  static_assert(std::is_same_v<std::underlying_type_t<Enum>, uint8_t>);
  for (unsigned value = 0; value <= std::numeric_limits<uint8_t>::max(); ++value) {
    auto candidate = static_cast<Enum>(value);
    auto name = name_of(candidate);
    if (name != "unknown" && name == text)
      return candidate;
  }
  return std::nullopt;
}

// -- identifier rules ------------------------------------------------------------

enum class rule : uint8_t {
  text,               ///< any string
  id,                 ///< agent, contact, integration ids and handles
  id_or_empty,        ///< an id, or empty
  server_id,          ///< an id other than "-" (the grant key's "no server")
  server_id_or_empty, ///< a server id, or empty (internal)
  tool,               ///< a tool name
  tool_or_empty,      ///< a tool name, or empty
  action,             ///< an action route name such as web.search
  action_or_empty,    ///< an action, or empty
  migration,          ///< a migration name
  tenant,             ///< a tenant id other than "_node"
  e164,               ///< '+' and 8 to 15 digits
  https_origin,       ///< https://host[:port]
  provider,           ///< a subagent model provider's name
  model,              ///< a subagent model id
};

bool lower_or_digit(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool all_chars(std::string_view s, std::size_t max_len, bool (*allowed)(char) noexcept) {
  return !s.empty() && s.size() <= max_len && std::all_of(s.begin(), s.end(), allowed);
}

bool id_char(char c) noexcept {
  return lower_or_digit(c) || c == '_' || c == '-';
}
bool action_char(char c) noexcept {
  return lower_or_digit(c) || c == '_' || c == '.';
}
bool migration_char(char c) noexcept {
  return id_char(c) || c == '.';
}
bool digit(char c) noexcept {
  return c >= '0' && c <= '9';
}
bool provider_char(char c) noexcept {
  return lower_or_digit(c) || c == '_' || c == '.' || c == '-';
}
bool model_char(char c) noexcept {
  return provider_char(c) || (c >= 'A' && c <= 'Z') || c == ':' || c == '/' || c == '@';
}
bool origin_char(char c) noexcept {
  auto byte = static_cast<unsigned char>(c);
  return byte > 0x20 && byte != 0x7F && c != '/' && c != '?' && c != '#' && c != '@' && c != '\\';
}

bool valid_id(std::string_view s) noexcept {
  return all_chars(s, 64, id_char);
}
bool valid_server_id(std::string_view s) noexcept {
  return valid_id(s) && s != "-";
}
bool valid_tool(std::string_view s) noexcept {
  return is_storable_tool_name(s);
}
bool valid_action(std::string_view s) noexcept {
  return all_chars(s, 64, action_char);
}

bool matches(rule r, std::string_view s) noexcept {
  switch (r) {
  case rule::text:
    return true;
  case rule::id:
    return valid_id(s);
  case rule::id_or_empty:
    return s.empty() || valid_id(s);
  case rule::server_id:
    return valid_server_id(s);
  case rule::server_id_or_empty:
    return s.empty() || valid_server_id(s);
  case rule::tool:
    return valid_tool(s);
  case rule::tool_or_empty:
    return s.empty() || valid_tool(s);
  case rule::action:
    return valid_action(s);
  case rule::action_or_empty:
    return s.empty() || valid_action(s);
  case rule::migration:
    return all_chars(s, 64, migration_char);
  case rule::tenant:
    return keys::valid_tenant(s) && s != keys::node_tenant;
  case rule::e164:
    return s.size() >= 9 && s.size() <= 16 && s.front() == '+' && all_chars(s.substr(1), 15, digit);
  case rule::https_origin: {
    constexpr std::string_view scheme = "https://";
    return s.size() > scheme.size() && s.substr(0, scheme.size()) == scheme
           && all_chars(s.substr(scheme.size()), 255, origin_char);
  }
  case rule::provider:
    return all_chars(s, 128, provider_char);
  case rule::model:
    return all_chars(s, 128, model_char);
  }
  return false;
}

std::string_view describe(rule r) noexcept {
  switch (r) {
  case rule::text:
    return "a string";
  case rule::id:
    return "1-64 characters of [a-z0-9_-]";
  case rule::id_or_empty:
    return "empty or 1-64 characters of [a-z0-9_-]";
  case rule::server_id:
    return "1-64 characters of [a-z0-9_-], not \"-\"";
  case rule::server_id_or_empty:
    return "empty or 1-64 characters of [a-z0-9_-], not \"-\"";
  case rule::tool:
    return "1-128 characters of [A-Za-z0-9_.-]";
  case rule::tool_or_empty:
    return "empty or 1-128 characters of [A-Za-z0-9_.-]";
  case rule::action:
    return "1-64 characters of [a-z0-9_.]";
  case rule::action_or_empty:
    return "empty or 1-64 characters of [a-z0-9_.]";
  case rule::migration:
    return "1-64 characters of [a-z0-9_.-]";
  case rule::tenant:
    return "a tenant id";
  case rule::e164:
    return "E.164 ('+' and 8 to 15 digits)";
  case rule::https_origin:
    return "an https origin";
  case rule::provider:
    return "1-128 characters of [a-z0-9_.-]";
  case rule::model:
    return "1-128 characters of [A-Za-z0-9_.:/@-]";
  }
  return "valid";
}

// -- strict object reader ----------------------------------------------------------

/// A field name fit to appear in a message: plain and short, else a placeholder.
std::string printable_field(const std::string& name) {
  bool plain =
    !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
      return lower_or_digit(c) || (c >= 'A' && c <= 'Z') || c == '_';
    });
  return plain ? name : std::string{"(unprintable name)"};
}

/// Reads one JSON object strictly: it must be an object, carry only the
/// allowed fields, and each field read must be present with the right type
/// and satisfy its rule. The first failure sticks; every later read is a
/// no-op, and finish() answers it. Messages name the field's path
/// ("server.cached_tools[2].name"), never its value.
class reader {
public:
  reader(const json& doc, std::string path, std::initializer_list<std::string_view> allowed)
      : doc_(doc), path_(std::move(path)) {
    if (!doc_.is_object()) {
      fail(errc::wrong_type,
           path_.empty() ? "expected a JSON object" : path_ + ": expected an object");
      return;
    }
    for (const auto& item : doc_.items())
      if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
        fail(errc::unknown_field, path_of(printable_field(item.key())) + ": unknown field");
        return;
      }
  }

  bool ok() const noexcept { return status_.is_ok(); }
  bool has(std::string_view name) const { return ok() && doc_.contains(name); }

  void text(std::string_view name, std::string& out, rule r = rule::text) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    if (!value->is_string())
      return fail(errc::wrong_type, path_of(name) + ": expected a string");
    const auto& s = value->get_ref<const std::string&>();
    if (!matches(r, s))
      return fail(errc::out_of_range, path_of(name) + ": expected " + std::string{describe(r)});
    out = s;
  }

  void flag(std::string_view name, bool& out) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    if (!value->is_boolean())
      return fail(errc::wrong_type, path_of(name) + ": expected a boolean");
    out = value->get<bool>();
  }

  void integer(std::string_view name, int64_t& out) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    if (!value->is_number_integer())
      return fail(errc::wrong_type, path_of(name) + ": expected an integer");
    if (value->is_number_unsigned()
        && value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return fail(errc::out_of_range, path_of(name) + ": larger than a signed 64-bit integer");
    out = value->get<int64_t>();
  }

  template <class Enum>
  void choice(std::string_view name, Enum& out) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    if (!value->is_string())
      return fail(errc::wrong_type, path_of(name) + ": expected a string");
    auto parsed = parse_enum<Enum>(value->get_ref<const std::string&>());
    if (!parsed)
      return fail(errc::out_of_range, path_of(name) + ": not a known value");
    out = *parsed;
  }

  void texts(std::string_view name, std::vector<std::string>& out, rule r) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    if (!value->is_array())
      return fail(errc::wrong_type, path_of(name) + ": expected an array");
    std::vector<std::string> items;
    for (std::size_t item_idx = 0; item_idx < value->size(); ++item_idx) {
      const auto& item = (*value)[item_idx];
      auto item_path = path_of(name) + "[" + std::to_string(item_idx) + "]";
      if (!item.is_string())
        return fail(errc::wrong_type, item_path + ": expected a string");
      if (!matches(r, item.get_ref<const std::string&>()))
        return fail(errc::out_of_range, item_path + ": expected " + std::string{describe(r)});
      items.push_back(item.get<std::string>());
    }
    out = std::move(items);
  }

  /// A nested object decoded by `decode(json, path) -> result<T>`.
  template <class T, class Decode>
  void object(std::string_view name, T& out, Decode decode) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    auto decoded = decode(*value, path_of(name));
    if (!decoded)
      return fail(decoded.error());
    out = std::move(*decoded);
  }

  /// An array of objects, each decoded by `decode(json, path) -> result<T>`.
  template <class T, class Decode>
  void objects(std::string_view name, std::vector<T>& out, Decode decode) {
    const auto* value = field(name);
    if (value == nullptr)
      return;
    if (!value->is_array())
      return fail(errc::wrong_type, path_of(name) + ": expected an array");
    std::vector<T> items;
    for (std::size_t item_idx = 0; item_idx < value->size(); ++item_idx) {
      auto decoded =
        decode((*value)[item_idx], path_of(name) + "[" + std::to_string(item_idx) + "]");
      if (!decoded)
        return fail(decoded.error());
      items.push_back(std::move(*decoded));
    }
    out = std::move(items);
  }

  /// Refuses the object with `code` and a message about the field `name`.
  void refuse(std::string_view name, errc code, const std::string& what) {
    if (ok())
      fail(code, path_of(name) + ": " + what);
  }

  template <class T>
  result<T> finish(T&& value) {
    if (!ok())
      return status_;
    return std::forward<T>(value);
  }

private:
  std::string path_of(std::string_view name) const {
    return path_.empty() ? std::string{name} : path_ + "." + std::string{name};
  }

  /// The field's value; nullptr after a failure or when absent (a failure).
  const json* field(std::string_view name) {
    if (!ok())
      return nullptr;
    auto found = doc_.find(name);
    if (found == doc_.end()) {
      fail(errc::missing_field, path_of(name) + ": required");
      return nullptr;
    }
    return &*found;
  }

  void fail(errc code, std::string message) {
    if (ok())
      status_ = status::error(code, std::move(message));
  }
  void fail(const status& inner) {
    if (ok())
      status_ = inner;
  }

  const json& doc_;
  std::string path_;
  status status_ = status::ok();
};

// -- decoders of the model ----------------------------------------------------------

result<agent_record> decode_agent(const json& x, const std::string& path) {
  reader r{x, path, {"agent_id", "name", "is_default"}};
  agent_record out;
  r.text("agent_id", out.agent_id, rule::id);
  r.text("name", out.name);
  r.flag("is_default", out.is_default);
  return r.finish(std::move(out));
}

result<tool_definition> decode_tool_definition(const json& x, const std::string& path) {
  reader r{x,
           path,
           {"name", "title", "description", "input_schema", "output_schema", "read_only_hint",
            "destructive_hint", "idempotent_hint"}};
  tool_definition out;
  r.text("name", out.name, rule::tool);
  r.text("title", out.title);
  r.text("description", out.description);
  r.text("input_schema", out.input_schema);
  r.text("output_schema", out.output_schema);
  r.flag("read_only_hint", out.read_only_hint);
  r.flag("destructive_hint", out.destructive_hint);
  if (r.has("idempotent_hint")) // (absent from records made before it: false)
    r.flag("idempotent_hint", out.idempotent_hint);
  return r.finish(std::move(out));
}

/// A server record's sealed values (and its pending sign-in's id), by their
/// stored names: written to the stored form only, never to listings.
template <class Record>
auto sealed_fields(Record& rec) {
  using text = std::conditional_t<std::is_const_v<Record>, const std::string, std::string>;
  return std::array<std::pair<const char*, text*>, 5>{
    {{"sealed_headers", &rec.sealed_headers},
     {"sealed_oauth_client", &rec.sealed_oauth_client},
     {"sealed_oauth_tokens", &rec.sealed_oauth_tokens},
     {"sealed_sign_in", &rec.sealed_sign_in},
     {"sign_in_flow", &rec.sign_in_flow}}};
}

result<connection_test> decode_connection_test(const json& x, const std::string& path) {
  reader r{x, path, {"at_us", "ok", "error"}};
  connection_test out;
  r.integer("at_us", out.at_us);
  r.flag("ok", out.ok);
  if (r.has("error")) {
    struct error_text {
      std::string code;
      std::string message;
    };
    error_text text;
    r.object("error", text, [](const json& e, const std::string& at) -> result<error_text> {
      reader er{e, at, {"code", "message"}};
      error_text decoded;
      er.text("code", decoded.code, rule::id);
      er.text("message", decoded.message);
      return er.finish(std::move(decoded));
    });
    out.error_code = std::move(text.code);
    out.error_message = std::move(text.message);
  }
  return r.finish(std::move(out));
}

result<mcp_server_record> decode_server(const json& x, const std::string& path) {
  reader r{x,
           path,
           {"server_id",
            "tenant_id",
            "label",
            "preset_id",
            "variant",
            "transport",
            "url",
            "auth",
            "enabled",
            "trusted",
            "connected",
            "allowed_tools",
            "cached_tools",
            "cache_version",
            "discovered_us",
            "sealed_headers",
            "has_headers",
            "tool_count",
            "sealed_oauth_client",
            "sealed_oauth_tokens",
            "sealed_sign_in",
            "sign_in_flow",
            "needs_auth",
            "signed_in",
            "has_oauth_client",
            "last_test"}};
  mcp_server_record out;
  r.text("server_id", out.server_id, rule::server_id);
  r.text("tenant_id", out.tenant_id, rule::tenant);
  r.text("label", out.label);
  r.text("preset_id", out.preset_id, rule::id_or_empty);
  r.text("variant", out.variant);
  r.choice("transport", out.transport);
  r.text("url", out.url);
  r.choice("auth", out.auth);
  r.flag("enabled", out.enabled);
  r.flag("trusted", out.trusted);
  r.flag("connected", out.connected);
  r.texts("allowed_tools", out.allowed_tools, rule::tool);
  // Optional: to_json leaves the discovery cache out of listings.
  if (r.has("cached_tools")) {
    std::vector<tool_definition> cached;
    r.objects("cached_tools", cached, decode_tool_definition);
    out.cached_tools = tool_cache{std::move(cached)};
  }
  r.text("cache_version", out.cache_version);
  r.integer("discovered_us", out.discovered_us);
  // Stored forms only, each when set (and absent from records made before
  // OAuth).
  for (auto [name, value] : sealed_fields(out))
    if (r.has(name))
      r.text(name, *value);
  if (r.has("needs_auth"))
    r.flag("needs_auth", out.needs_auth);
  // Absent from records made before tests were recorded, and until a test.
  if (r.has("last_test"))
    r.object("last_test", out.last_test, decode_connection_test);
  return r.finish(std::move(out));
}

result<tool_grant> decode_grant(const json& x, const std::string& path) {
  reader r{x, path, {"agent_id", "server_id", "tool", "decision"}};
  tool_grant out;
  r.text("agent_id", out.agent_id, rule::id);
  r.text("server_id", out.server_id, rule::server_id_or_empty);
  r.text("tool", out.tool, rule::tool);
  r.choice("decision", out.decision);
  return r.finish(std::move(out));
}

result<action_route> decode_route(const json& x, const std::string& path) {
  reader r{x, path, {"agent_id", "action", "mode", "pinned_server_id", "pinned_tool"}};
  action_route out;
  r.text("agent_id", out.agent_id, rule::id);
  r.text("action", out.action, rule::action);
  r.choice("mode", out.mode);
  r.text("pinned_server_id", out.pinned_server_id, rule::server_id_or_empty);
  r.text("pinned_tool", out.pinned_tool, rule::tool_or_empty);
  // A pinned route names its exact server and tool; an automatic one names none.
  bool pinned = out.mode == route_mode::pinned;
  if (pinned == out.pinned_server_id.empty())
    r.refuse("pinned_server_id", errc::out_of_range,
             pinned ? "required for a pinned route" : "only a pinned route names a server");
  if (pinned == out.pinned_tool.empty())
    r.refuse("pinned_tool", errc::out_of_range,
             pinned ? "required for a pinned route" : "only a pinned route names a tool");
  return r.finish(std::move(out));
}

result<contact_record> decode_contact(const json& x, const std::string& path) {
  reader r{x, path, {"contact_id", "display_name", "phone", "is_admin", "notes", "email"}};
  contact_record out;
  r.text("contact_id", out.contact_id, rule::id);
  r.text("display_name", out.display_name);
  r.text("phone", out.phone, rule::e164);
  r.flag("is_admin", out.is_admin);
  if (r.has("notes"))
    r.text("notes", out.notes);
  if (r.has("email"))
    r.text("email", out.email);
  return r.finish(std::move(out));
}

result<phone_integration> decode_phone(const json& x, const std::string& path) {
  reader r{x, path, {"integration_id", "provider", "call_capable", "connected", "place_call_tool"}};
  phone_integration out;
  r.text("integration_id", out.integration_id, rule::server_id);
  r.choice("provider", out.provider);
  r.flag("call_capable", out.call_capable);
  r.flag("connected", out.connected);
  r.text("place_call_tool", out.place_call_tool, rule::tool_or_empty);
  return r.finish(std::move(out));
}

result<browser_profile> decode_profile(const json& x, const std::string& path) {
  reader r{x, path, {"handle", "label", "primary_origin", "agent_ids", "server_id", "tool"}};
  browser_profile out;
  r.text("handle", out.handle, rule::id);
  r.text("label", out.label);
  r.text("primary_origin", out.primary_origin, rule::https_origin);
  r.texts("agent_ids", out.agent_ids, rule::id);
  r.text("server_id", out.server_id, rule::server_id_or_empty);
  r.text("tool", out.tool, rule::tool_or_empty);
  return r.finish(std::move(out));
}

using provider_models = std::map<std::string, std::vector<std::string>>;

/// {"<provider>": ["<model>", ...]} within the allowlist's bounds. Paths
/// name a provider only once its name passed its rule.
result<provider_models> decode_providers(const json& x, const std::string& path) {
  auto refuse = [](errc code, std::string message) -> result<provider_models> {
    return status::error(code, std::move(message));
  };
  if (!x.is_object())
    return refuse(errc::wrong_type, path + ": expected an object");
  if (x.size() > max_subagent_providers)
    return refuse(errc::out_of_range,
                  path + ": at most " + std::to_string(max_subagent_providers) + " providers");
  provider_models out;
  for (const auto& [name, models] : x.items()) {
    if (!matches(rule::provider, name))
      return refuse(errc::out_of_range,
                    path + ": a provider name must be " + std::string{describe(rule::provider)});
    auto list_path = path + "." + name;
    if (!models.is_array())
      return refuse(errc::wrong_type, list_path + ": expected an array");
    if (models.empty() || models.size() > max_subagent_models)
      return refuse(errc::out_of_range, list_path + ": expected 1 to "
                                          + std::to_string(max_subagent_models) + " models");
    std::vector<std::string> list;
    for (std::size_t model_idx = 0; model_idx < models.size(); ++model_idx) {
      const auto& model = models[model_idx];
      auto item_path = list_path + "[" + std::to_string(model_idx) + "]";
      if (!model.is_string())
        return refuse(errc::wrong_type, item_path + ": expected a string");
      const auto& id = model.get_ref<const std::string&>();
      if (!matches(rule::model, id))
        return refuse(errc::out_of_range,
                      item_path + ": expected " + std::string{describe(rule::model)});
      if (std::find(list.begin(), list.end(), id) != list.end())
        return refuse(errc::out_of_range, item_path + ": a duplicate of an earlier model");
      list.push_back(id);
    }
    out.emplace(name, std::move(list));
  }
  return out;
}

result<subagent_allowlist> decode_allowlist(const json& x, const std::string& path) {
  reader r{x, path, {"providers"}};
  subagent_allowlist out;
  r.object("providers", out.providers, decode_providers);
  return r.finish(std::move(out));
}

// -- the effective policy ----------------------------------------------------------------

json tool_json(const snapshot_tool& x) {
  return json{{"origin", name_of(x.origin)},     {"name", x.name()},
              {"server_id", x.server_id()},      {"risk", name_of(x.risk)},
              {"read_only", x.read_only},        {"mutating", x.mutating},
              {"route_action", x.route_action()}};
}

result<snapshot_tool> decode_snapshot_tool(const json& x, const std::string& path) {
  reader r{
    x, path, {"origin", "name", "server_id", "risk", "read_only", "mutating", "route_action"}};
  tool_origin origin = tool_origin::internal;
  std::string name;
  std::string server_id;
  risk_level risk = risk_level::medium;
  bool read_only = false;
  bool mutating = false;
  std::string route_action;
  r.choice("origin", origin);
  r.text("name", name, rule::tool);
  r.text("server_id", server_id, rule::server_id_or_empty);
  r.choice("risk", risk);
  r.flag("read_only", read_only);
  r.flag("mutating", mutating);
  r.text("route_action", route_action, rule::action_or_empty);
  return r.finish(snapshot_tool{origin, name, server_id, risk, read_only, mutating, route_action});
}

json route_resolution_json(const route_resolution& x) {
  return json{
    {"action", x.action}, {"mode", name_of(x.mode)}, {"server_id", x.server_id}, {"tool", x.tool}};
}

result<route_resolution> decode_route_resolution(const json& x, const std::string& path) {
  reader r{x, path, {"action", "mode", "server_id", "tool"}};
  route_resolution out;
  r.text("action", out.action, rule::action);
  r.choice("mode", out.mode);
  r.text("server_id", out.server_id, rule::server_id_or_empty);
  r.text("tool", out.tool, rule::tool_or_empty);
  return r.finish(std::move(out));
}

json offer_json(const profile_offer& x) {
  return json{{"handle", x.handle}, {"label", x.label}, {"primary_origin", x.primary_origin}};
}

result<profile_offer> decode_offer(const json& x, const std::string& path) {
  reader r{x, path, {"handle", "label", "primary_origin"}};
  profile_offer out;
  r.text("handle", out.handle, rule::id);
  r.text("label", out.label);
  r.text("primary_origin", out.primary_origin, rule::https_origin);
  return r.finish(std::move(out));
}

json decision_json(const policy_decision& x) {
  return json{{"origin", name_of(x.origin)},
              {"tool", x.tool()},
              {"server_id", x.server_id()},
              {"why", name_of(x.why)}};
}

result<policy_decision> decode_decision(const json& x, const std::string& path) {
  reader r{x, path, {"origin", "tool", "server_id", "why"}};
  tool_origin origin = tool_origin::internal;
  std::string tool;
  std::string server_id;
  reason why = reason::not_granted;
  r.choice("origin", origin);
  r.text("tool", tool, rule::tool);
  r.text("server_id", server_id, rule::server_id_or_empty);
  r.choice("why", why);
  return r.finish(policy_decision{origin, tool, server_id, why});
}

// -- projection entries ----------------------------------------------------------------------

/// migration/<name>: its value is {"name"}.
struct migration_marker {
  std::string name;
};

/// What one projection entry holds.
using entity =
  std::variant<agent_record, mcp_server_record, tool_grant, action_route, contact_record,
               phone_integration, browser_profile, subagent_allowlist, migration_marker>;

// Keys below "<tenant>/cfg/".
std::string key_of(const agent_record& x) {
  return "agent/" + x.agent_id;
}
std::string key_of(const mcp_server_record& x) {
  return "server/" + x.server_id;
}
/// An internal grant (no server) has "-" in the server's place.
std::string key_of(const tool_grant& x) {
  return "grant/" + x.agent_id + "/" + (x.server_id.empty() ? std::string{"-"} : x.server_id) + "/"
         + x.tool;
}
std::string key_of(const action_route& x) {
  return "route/" + x.agent_id + "/" + x.action;
}
std::string key_of(const contact_record& x) {
  return "contact/" + x.contact_id;
}
std::string key_of(const phone_integration& x) {
  return "phone/" + x.integration_id;
}
std::string key_of(const browser_profile& x) {
  return "profile/" + x.handle;
}
std::string key_of(const subagent_allowlist&) {
  return "subagent_models";
}
std::string key_of(const migration_marker& x) {
  return "migration/" + x.name;
}

json value_of(const entity& x) {
  return std::visit(
    [](const auto& e) -> json {
      using T = std::decay_t<decltype(e)>;
      if constexpr (std::is_same_v<T, migration_marker>)
        return json{{"name", e.name}};
      else
        return to_json(e);
    },
    x);
}

/// Decodes a projection value of the kind its key names (the text before the
/// first '/'); the key must be the one the value projects to.
result<entity> decode_entry(const std::string& key, const json& value) {
  auto kind = key.substr(0, key.find('/'));
  auto decoded = [&]() -> result<entity> {
    auto wrap = [](auto r) -> result<entity> {
      if (!r)
        return r.error();
      return entity{std::move(*r)};
    };
    if (kind == "agent")
      return wrap(decode_agent(value, kind));
    if (kind == "server")
      return wrap(decode_server(value, kind));
    if (kind == "grant")
      return wrap(decode_grant(value, kind));
    if (kind == "route")
      return wrap(decode_route(value, kind));
    if (kind == "contact")
      return wrap(decode_contact(value, kind));
    if (kind == "phone")
      return wrap(decode_phone(value, kind));
    if (kind == "profile")
      return wrap(decode_profile(value, kind));
    if (kind == "subagent_models")
      return wrap(decode_allowlist(value, kind));
    if (kind == "migration") {
      reader r{value, kind, {"name"}};
      migration_marker out;
      r.text("name", out.name, rule::migration);
      return wrap(r.finish(std::move(out)));
    }
    return status::error(errc::corrupt_data, "an entry of an unknown kind");
  }();
  if (!decoded)
    return decoded;
  if (std::visit([](const auto& e) { return key_of(e); }, *decoded) != key)
    return status::error(errc::corrupt_data, "an entry whose key does not match its value");
  return decoded;
}

/// Inserts `x`, or replaces the element with its key, keeping `xs` in key
/// order (the order load produces).
template <class T>
void upsert_keyed(std::vector<T>& xs, T x) {
  auto key = key_of(x);
  if (xs.empty() || key_of(xs.back()) < key) {
    xs.push_back(std::move(x));
    return;
  }
  auto pos = std::find_if(xs.begin(), xs.end(), [&](const T& y) { return !(key_of(y) < key); });
  if (pos != xs.end() && key_of(*pos) == key)
    *pos = std::move(x);
  else
    xs.insert(pos, std::move(x));
}

template <class T>
void erase_keyed(std::vector<T>& xs, const std::string& key) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [&](const T& y) { return key_of(y) == key; }),
           xs.end());
}

void put(entity&& x, loaded_tenant& into) {
  auto& state = into.state;
  std::visit(
    [&](auto& e) {
      using T = std::decay_t<decltype(e)>;
      if constexpr (std::is_same_v<T, agent_record>)
        upsert_keyed(state.agents, std::move(e));
      else if constexpr (std::is_same_v<T, mcp_server_record>)
        state.servers.insert_or_assign(e.server_id, std::move(e));
      else if constexpr (std::is_same_v<T, tool_grant>)
        upsert_keyed(state.grants, std::move(e));
      else if constexpr (std::is_same_v<T, action_route>)
        upsert_keyed(state.routes, std::move(e));
      else if constexpr (std::is_same_v<T, contact_record>)
        upsert_keyed(state.contacts, std::move(e));
      else if constexpr (std::is_same_v<T, phone_integration>)
        upsert_keyed(state.phones, std::move(e));
      else if constexpr (std::is_same_v<T, browser_profile>)
        upsert_keyed(state.profiles, std::move(e));
      else if constexpr (std::is_same_v<T, subagent_allowlist>)
        state.subagent_models = std::move(e);
      else
        into.migrations.insert(std::move(e.name));
    },
    x);
}

/// Removes whatever entity has `key` (keys of different kinds never collide).
void erase(const std::string& key, loaded_tenant& into) {
  auto& state = into.state;
  erase_keyed(state.agents, key);
  erase_keyed(state.grants, key);
  erase_keyed(state.routes, key);
  erase_keyed(state.contacts, key);
  erase_keyed(state.phones, key);
  erase_keyed(state.profiles, key);
  constexpr std::string_view server_kind = "server/";
  if (key.compare(0, server_kind.size(), server_kind) == 0)
    state.servers.erase(key.substr(server_kind.size()));
  constexpr std::string_view migration_kind = "migration/";
  if (key.compare(0, migration_kind.size(), migration_kind) == 0)
    into.migrations.erase(key.substr(migration_kind.size()));
}

// -- events ------------------------------------------------------------------------------------

/// One decoded event: the key it changes below "<tenant>/cfg/", and the
/// entity it stores there, or none to delete the key.
struct change {
  std::string key;
  std::optional<entity> value;
};

template <class T>
result<change> put_change(result<T>&& decoded) {
  if (!decoded)
    return decoded.error();
  auto key = key_of(*decoded);
  return change{std::move(key), entity{std::move(*decoded)}};
}

/// Decodes {"<field>": entity} with `decode`.
template <class T, class Decode>
result<T> wrapped(const json& data, const char* field, Decode decode) {
  reader r{data, "", {field}};
  T out;
  r.object(field, out, decode);
  return r.finish(std::move(out));
}

/// Decodes a deletion event whose data is {"<field>"}, the key's last part.
result<change> delete_change(const json& data, const char* field, rule r_id, const char* kind) {
  reader r{data, "", {field}};
  std::string id;
  r.text(field, id, r_id);
  if (!r.ok())
    return r.finish(change{});
  return change{std::string{kind} + "/" + id, std::nullopt};
}

/// The change one configuration event of `tenant_id` makes.
result<change> decode_event(const std::string& tenant_id, const std::string& type,
                            const json& data) {
  if (type == "agent.created")
    return put_change(wrapped<agent_record>(data, "agent", decode_agent));
  if (type == "server.upserted") {
    auto server = wrapped<mcp_server_record>(data, "server", decode_server);
    if (server && server->tenant_id != tenant_id)
      return status::error(errc::out_of_range, "server.tenant_id: must be the stream's tenant");
    return put_change(std::move(server));
  }
  if (type == "server.deleted")
    return delete_change(data, "server_id", rule::server_id, "server");
  if (type == "grant.set")
    return put_change(wrapped<tool_grant>(data, "grant", decode_grant));
  if (type == "grant.cleared") {
    reader r{data, "", {"agent_id", "server_id", "tool"}};
    tool_grant g;
    r.text("agent_id", g.agent_id, rule::id);
    r.text("server_id", g.server_id, rule::server_id_or_empty);
    r.text("tool", g.tool, rule::tool);
    if (!r.ok())
      return r.finish(change{});
    return change{key_of(g), std::nullopt};
  }
  if (type == "route.set")
    return put_change(wrapped<action_route>(data, "route", decode_route));
  if (type == "route.cleared") {
    reader r{data, "", {"agent_id", "action"}};
    action_route route;
    r.text("agent_id", route.agent_id, rule::id);
    r.text("action", route.action, rule::action);
    if (!r.ok())
      return r.finish(change{});
    return change{key_of(route), std::nullopt};
  }
  if (type == "contact.upserted")
    return put_change(wrapped<contact_record>(data, "contact", decode_contact));
  if (type == "contact.deleted")
    return delete_change(data, "contact_id", rule::id, "contact");
  if (type == "phone.upserted")
    return put_change(wrapped<phone_integration>(data, "phone", decode_phone));
  if (type == "phone.deleted")
    return delete_change(data, "integration_id", rule::server_id, "phone");
  if (type == "profile.upserted")
    return put_change(wrapped<browser_profile>(data, "profile", decode_profile));
  if (type == "profile.deleted")
    return delete_change(data, "handle", rule::id, "profile");
  if (type == "subagent_models.set")
    return put_change(wrapped<subagent_allowlist>(data, "allowlist", decode_allowlist));
  if (type == "migration.applied") {
    reader r{data, "", {"name"}};
    migration_marker out;
    r.text("name", out.name, rule::migration);
    return put_change(r.finish(std::move(out)));
  }
  return status::error(errc::corrupt_data, "config event of an unknown type");
}

/// decode_event over the event's data text; errors name the event type.
result<change> decode_event_text(const std::string& tenant_id, const std::string& type,
                                 const std::string& data) {
  auto doc = json::parse(data, nullptr, false);
  if (doc.is_discarded())
    return status::error(errc::corrupt_data, "config event data is not JSON");
  auto decoded = decode_event(tenant_id, type, doc);
  if (!decoded && decoded.error().code() != errc::corrupt_data)
    return status::error(decoded.error().code(), type + ": " + decoded.error().message());
  return decoded;
}

event_draft draft(const char* type, const json& data) {
  return event_draft{type, data.dump()};
}

} // namespace

std::string state_prefix(const std::string& tenant_id) {
  return tenant_id + "/cfg/";
}

// -- event builders ------------------------------------------------------------------------------

event_draft agent_created(const agent_record& x) {
  return draft("agent.created", json{{"agent", to_json(x)}});
}

event_draft server_upserted(const mcp_server_record& x) {
  return draft("server.upserted", json{{"server", to_json(x)}});
}

event_draft server_deleted(const std::string& server_id) {
  return draft("server.deleted", json{{"server_id", server_id}});
}

event_draft grant_set(const tool_grant& x) {
  return draft("grant.set", json{{"grant", to_json(x)}});
}

event_draft grant_cleared(const std::string& agent_id, const std::string& server_id,
                          const std::string& tool) {
  return draft("grant.cleared",
               json{{"agent_id", agent_id}, {"server_id", server_id}, {"tool", tool}});
}

event_draft route_set(const action_route& x) {
  return draft("route.set", json{{"route", to_json(x)}});
}

event_draft route_cleared(const std::string& agent_id, const std::string& action) {
  return draft("route.cleared", json{{"agent_id", agent_id}, {"action", action}});
}

event_draft contact_upserted(const contact_record& x) {
  return draft("contact.upserted", json{{"contact", to_json(x)}});
}

event_draft contact_deleted(const std::string& contact_id) {
  return draft("contact.deleted", json{{"contact_id", contact_id}});
}

event_draft phone_upserted(const phone_integration& x) {
  return draft("phone.upserted", json{{"phone", to_json(x)}});
}

event_draft phone_deleted(const std::string& integration_id) {
  return draft("phone.deleted", json{{"integration_id", integration_id}});
}

event_draft profile_upserted(const browser_profile& x) {
  return draft("profile.upserted", json{{"profile", to_json(x)}});
}

event_draft profile_deleted(const std::string& handle) {
  return draft("profile.deleted", json{{"handle", handle}});
}

event_draft subagent_models_set(const subagent_allowlist& x) {
  return draft("subagent_models.set", json{{"allowlist", to_json(x)}});
}

event_draft migration_applied(const std::string& name) {
  return draft("migration.applied", json{{"name", name}});
}

// -- projection, load and apply
// ---------------------------------------------------------------------

status project(const event_record& ev, std::vector<state_write>& out) {
  if (ev.stream != stream || ev.tenant == keys::node_tenant || !keys::valid_tenant(ev.tenant))
    return status::ok();
  auto decoded = decode_event_text(ev.tenant, ev.type, ev.data);
  if (!decoded)
    return decoded.error();
  auto key = state_prefix(ev.tenant) + decoded->key;
  if (decoded->value)
    out.push_back({std::move(key), value_of(*decoded->value).dump()});
  else
    out.push_back({std::move(key), std::nullopt});
  return status::ok();
}

result<loaded_tenant> load(const std::string& tenant_id,
                           const std::vector<std::pair<std::string, std::string>>& entries) {
  if (!matches(rule::tenant, tenant_id))
    return status::error(errc::out_of_range, "tenant_id: expected a tenant id");
  loaded_tenant out;
  out.state.tenant_id = tenant_id;
  auto prefix = state_prefix(tenant_id);
  for (const auto& [key, value] : entries) {
    // Each entry: under the prefix, a JSON value of the kind its key names.
    if (key.compare(0, prefix.size(), prefix) != 0)
      return status::error(errc::corrupt_data, "config entry outside the tenant's prefix");
    auto rest = key.substr(prefix.size());
    auto doc = json::parse(value, nullptr, false);
    if (doc.is_discarded())
      return status::error(errc::corrupt_data, "config entry " + key + ": not JSON");
    auto decoded = decode_entry(rest, doc);
    if (!decoded)
      return status::error(errc::corrupt_data,
                           "config entry " + key + ": " + decoded.error().message());
    if (const auto* server = std::get_if<mcp_server_record>(&*decoded);
        server != nullptr && server->tenant_id != tenant_id)
      return status::error(errc::corrupt_data, "config entry " + key + ": another tenant's server");
    put(std::move(*decoded), out);
  }
  return out;
}

status apply(const event_draft& ev, loaded_tenant& into) {
  auto decoded = decode_event_text(into.state.tenant_id, ev.type, ev.data);
  if (!decoded)
    return decoded.error();
  if (decoded->value)
    put(std::move(*decoded->value), into);
  else
    erase(decoded->key, into);
  return status::ok();
}

// -- JSON of the model
// -------------------------------------------------------------------------------

nlohmann::json to_json(const agent_record& x) {
  return json{{"agent_id", x.agent_id}, {"name", x.name}, {"is_default", x.is_default}};
}

nlohmann::json to_json(const mcp_server_record& x, bool with_cached_tools) {
  json out{{"server_id", x.server_id},
           {"tenant_id", x.tenant_id},
           {"label", x.label},
           {"preset_id", x.preset_id},
           {"variant", x.variant},
           {"transport", name_of(x.transport)},
           {"url", x.url},
           {"auth", name_of(x.auth)},
           {"enabled", x.enabled},
           {"trusted", x.trusted},
           {"connected", x.connected},
           {"needs_auth", x.needs_auth},
           {"allowed_tools", x.allowed_tools},
           {"cache_version", x.cache_version},
           {"discovered_us", x.discovered_us}};
  if (x.last_test.at_us != 0) {
    json test{{"at_us", x.last_test.at_us}, {"ok", x.last_test.ok}};
    if (!x.last_test.ok)
      test["error"] = {{"code", x.last_test.error_code}, {"message", x.last_test.error_message}};
    out["last_test"] = std::move(test);
  }
  if (with_cached_tools) {
    auto tools = json::array();
    for (const auto& def : x.cached_tools)
      tools.push_back(json{{"name", def.name},
                           {"title", def.title},
                           {"description", def.description},
                           {"input_schema", def.input_schema},
                           {"output_schema", def.output_schema},
                           {"read_only_hint", def.read_only_hint},
                           {"destructive_hint", def.destructive_hint},
                           {"idempotent_hint", def.idempotent_hint}});
    out["cached_tools"] = std::move(tools);
    for (auto [name, value] : sealed_fields(x))
      if (!value->empty())
        out[name] = *value;
  } else {
    // Listings: what an operator needs, never the sealed values.
    out["has_headers"] = !x.sealed_headers.empty();
    out["has_oauth_client"] = !x.sealed_oauth_client.empty();
    out["signed_in"] = !x.sealed_oauth_tokens.empty();
    out["tool_count"] = x.cached_tools.size();
  }
  return out;
}

nlohmann::json to_json(const tool_grant& x) {
  return json{{"agent_id", x.agent_id},
              {"server_id", x.server_id},
              {"tool", x.tool},
              {"decision", name_of(x.decision)}};
}

nlohmann::json to_json(const action_route& x) {
  return json{{"agent_id", x.agent_id},
              {"action", x.action},
              {"mode", name_of(x.mode)},
              {"pinned_server_id", x.pinned_server_id},
              {"pinned_tool", x.pinned_tool}};
}

nlohmann::json to_json(const contact_record& x) {
  json out{{"contact_id", x.contact_id},
           {"display_name", x.display_name},
           {"phone", x.phone},
           {"is_admin", x.is_admin}};
  if (!x.notes.empty())
    out["notes"] = x.notes;
  if (!x.email.empty())
    out["email"] = x.email;
  return out;
}

nlohmann::json to_json(const phone_integration& x) {
  return json{{"integration_id", x.integration_id},
              {"provider", name_of(x.provider)},
              {"call_capable", x.call_capable},
              {"connected", x.connected},
              {"place_call_tool", x.place_call_tool}};
}

nlohmann::json to_json(const browser_profile& x) {
  return json{
    {"handle", x.handle},       {"label", x.label},         {"primary_origin", x.primary_origin},
    {"agent_ids", x.agent_ids}, {"server_id", x.server_id}, {"tool", x.tool}};
}

nlohmann::json to_json(const subagent_allowlist& x) {
  auto providers = json::object();
  for (const auto& [name, models] : x.providers)
    providers[name] = models;
  return json{{"providers", std::move(providers)}};
}

nlohmann::json to_json(const effective_policy& x) {
  auto tools = json::array();
  for (const auto& t : x.tools)
    tools.push_back(tool_json(t));
  auto routes = json::array();
  for (const auto& route : x.routes)
    routes.push_back(route_resolution_json(route));
  auto profiles = json::array();
  for (const auto& offer : x.profiles)
    profiles.push_back(offer_json(offer));
  auto decisions = json::array();
  for (const auto& decision : x.decisions)
    decisions.push_back(decision_json(decision));
  return json{{"tenant_id", x.tenant_id},
              {"agent_id", x.agent_id},
              {"run_id", x.run_id},
              {"chan", name_of(x.chan)},
              {"caller", name_of(x.caller)},
              {"contacts", name_of(x.contacts)},
              {"created_us", x.created_us},
              {"tools", std::move(tools)},
              {"routes", std::move(routes)},
              {"profiles", std::move(profiles)},
              {"decisions", std::move(decisions)}};
}

result<agent_record> agent_from_json(const nlohmann::json& x) {
  return decode_agent(x, "");
}

bool is_id(std::string_view text) noexcept {
  return valid_id(text);
}

bool is_tool_name(std::string_view text) noexcept {
  return valid_tool(text);
}

result<mcp_server_record> server_from_json(const nlohmann::json& x) {
  return decode_server(x, "");
}

result<tool_grant> grant_from_json(const nlohmann::json& x) {
  return decode_grant(x, "");
}

result<action_route> route_from_json(const nlohmann::json& x) {
  return decode_route(x, "");
}

result<contact_record> contact_from_json(const nlohmann::json& x) {
  return decode_contact(x, "");
}

result<phone_integration> phone_from_json(const nlohmann::json& x) {
  return decode_phone(x, "");
}

result<browser_profile> profile_from_json(const nlohmann::json& x) {
  return decode_profile(x, "");
}

result<subagent_allowlist> subagent_allowlist_from_json(const nlohmann::json& x) {
  return decode_allowlist(x, "");
}

result<effective_policy> policy_from_json(const nlohmann::json& x) {
  reader r{x,
           "",
           {"tenant_id", "agent_id", "run_id", "chan", "caller", "contacts", "created_us", "tools",
            "routes", "profiles", "decisions"}};
  effective_policy out;
  r.text("tenant_id", out.tenant_id, rule::tenant);
  r.text("agent_id", out.agent_id, rule::id);
  r.text("run_id", out.run_id, rule::id);
  r.choice("chan", out.chan);
  r.choice("caller", out.caller);
  r.choice("contacts", out.contacts);
  r.integer("created_us", out.created_us);
  r.objects("tools", out.tools, decode_snapshot_tool);
  r.objects("routes", out.routes, decode_route_resolution);
  r.objects("profiles", out.profiles, decode_offer);
  r.objects("decisions", out.decisions, decode_decision);
  return r.finish(std::move(out));
}

} // namespace voxos::tenant_events
