#include "config/tool_types.hpp"

#include <algorithm>
#include <cstdint>

namespace voxos {

tool_cache::tool_cache(std::vector<tool_definition> definitions) {
  if (definitions.empty())
    return;
  auto built = std::make_shared<data>();
  built->definitions = std::move(definitions);
  // `built` never moves once shared, so views into it stay valid.
  auto& names = built->by_name;
  names.reserve(built->definitions.size());
  for (const auto& def : built->definitions)
    names.push_back({def.name, &def});
  std::stable_sort(names.begin(), names.end(),
                   [](const named& x, const named& y) { return x.name < y.name; });
  // The first definition of each name stays (stable sort: discovery order).
  names.erase(std::unique(names.begin(), names.end(),
                          [](const named& x, const named& y) { return x.name == y.name; }),
              names.end());
  // The names, copied into one block (sized first: it never reallocates).
  std::size_t bytes = 0;
  for (const auto& n : names)
    bytes += n.name.size();
  built->names.reserve(bytes);
  for (auto& n : names) {
    auto offset = built->names.size();
    built->names += n.name;
    n.name = std::string_view{built->names}.substr(offset, n.name.size());
    n.text_bytes = static_cast<uint32_t>(std::min<std::size_t>(
      n.name.size() + n.def->description.size() + n.def->input_schema.size(), UINT32_MAX));
    n.name_is_model_facing = is_model_facing_name(n.name);
    n.input_schema_is_object = looks_like_json_object(n.def->input_schema);
  }
  data_ = std::move(built);
}

const std::vector<tool_definition>& tool_cache::definitions() const noexcept {
  static const std::vector<tool_definition> none;
  return data_ != nullptr ? data_->definitions : none;
}

const std::vector<tool_cache::named>& tool_cache::by_name() const noexcept {
  static const std::vector<named> none;
  return data_ != nullptr ? data_->by_name : none;
}

const tool_definition* tool_cache::find(std::string_view name) const noexcept {
  const auto& names = by_name();
  auto it = std::lower_bound(names.begin(), names.end(), name,
                             [](const named& n, std::string_view x) { return n.name < x; });
  return it != names.end() && it->name == name ? it->def : nullptr;
}

bool is_model_facing_name(std::string_view name) noexcept {
  auto allowed = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
           || ch == '_' || ch == '-';
  };
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), allowed);
}

bool is_storable_tool_name(std::string_view name) noexcept {
  auto allowed = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
           || ch == '_' || ch == '.' || ch == '-';
  };
  return !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), allowed);
}

bool looks_like_json_object(std::string_view text) noexcept {
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; };
  std::size_t first = 0;
  auto last = text.size();
  while (first < last && space(text[first]))
    ++first;
  while (last > first && space(text[last - 1]))
    --last;
  return last - first >= 2 && text[first] == '{' && text[last - 1] == '}';
}

std::string_view to_string(risk_level x) noexcept {
  switch (x) {
  case risk_level::low:
    return "low";
  case risk_level::medium:
    return "medium";
  case risk_level::high:
    return "high";
  }
  return "unknown";
}

std::string_view to_string(transport_kind x) noexcept {
  switch (x) {
  case transport_kind::streamable_http:
    return "streamable_http";
  case transport_kind::sse:
    return "sse";
  }
  return "unknown";
}

std::string_view to_string(auth_mode x) noexcept {
  switch (x) {
  case auth_mode::none:
    return "none";
  case auth_mode::static_bearer:
    return "static_bearer";
  case auth_mode::api_key_header:
    return "api_key_header";
  case auth_mode::oauth_authorization_code:
    return "oauth_authorization_code";
  case auth_mode::oauth_client_credentials:
    return "oauth_client_credentials";
  case auth_mode::private_key_jwt:
    return "private_key_jwt";
  case auth_mode::static_headers:
    return "static_headers";
  case auth_mode::brokered_oauth:
    return "brokered_oauth";
  }
  return "unknown";
}

} // namespace voxos
