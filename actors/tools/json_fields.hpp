// Reading one member of a JSON object the tools wrote or a schema already
// checked: its value, or a fallback when absent or of another type. CAF-free.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace voxos::fields {

inline std::string text(const nlohmann::json& doc, const char* key) {
  auto found = doc.find(key);
  return found != doc.end() && found->is_string() ? found->get<std::string>() : std::string{};
}

inline int64_t integer(const nlohmann::json& doc, const char* key, int64_t fallback = 0) {
  auto found = doc.find(key);
  return found != doc.end() && found->is_number_integer() ? found->get<int64_t>() : fallback;
}

inline bool flag(const nlohmann::json& doc, const char* key) {
  auto found = doc.find(key);
  return found != doc.end() && found->is_boolean() && found->get<bool>();
}

} // namespace voxos::fields
