#include "config/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace voxos::log {

namespace {

std::atomic<int> max_level{static_cast<int>(level::info)};
std::mutex out_mutex;

const char* name_of(level lvl) {
  switch (lvl) {
  case level::error:
    return "ERROR";
  case level::warn:
    return "WARN";
  case level::info:
    return "INFO";
  case level::debug:
    return "DEBUG";
  }
  return "INFO";
}

} // namespace

bool set_level(std::string_view name) noexcept {
  level lvl;
  if (name == "error")
    lvl = level::error;
  else if (name == "warn")
    lvl = level::warn;
  else if (name == "info")
    lvl = level::info;
  else if (name == "debug")
    lvl = level::debug;
  else
    return false;
  max_level = static_cast<int>(lvl);
  return true;
}

void write(level lvl, std::string_view component, std::string_view text) {
  if (static_cast<int>(lvl) > max_level.load(std::memory_order_relaxed))
    return;
  auto now = std::chrono::system_clock::now();
  auto secs = std::chrono::system_clock::to_time_t(now);
  auto millis =
    std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&secs, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  std::lock_guard<std::mutex> guard{out_mutex};
  std::fprintf(stderr, "%s.%03dZ %-5s %.*s: %.*s\n", stamp, static_cast<int>(millis), name_of(lvl),
               static_cast<int>(component.size()), component.data(), static_cast<int>(text.size()),
               text.data());
  std::fflush(stderr);
}

} // namespace voxos::log
