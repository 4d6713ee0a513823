// The node's log: one line per entry on stderr, "<UTC time> <level> <component>: <text>".
// Thread-safe. Callers never pass secrets, tokens or rejected input values.
#pragma once

#include <string_view>

namespace voxos::log {

enum class level { error = 0, warn = 1, info = 2, debug = 3 };

/// Sets the most verbose level written; "error", "warn", "info" or "debug".
/// Returns false (and changes nothing) for any other name.
bool set_level(std::string_view name) noexcept;

void write(level lvl, std::string_view component, std::string_view text);

inline void error(std::string_view component, std::string_view text) {
  write(level::error, component, text);
}
inline void warn(std::string_view component, std::string_view text) {
  write(level::warn, component, text);
}
inline void info(std::string_view component, std::string_view text) {
  write(level::info, component, text);
}
inline void debug(std::string_view component, std::string_view text) {
  write(level::debug, component, text);
}

} // namespace voxos::log
