#include "storage/event_codec.hpp"

#include <nlohmann/json.hpp>

namespace voxos::event_codec {

namespace {

constexpr uint8_t format_version = 1;
constexpr std::size_t header_size = 1 + 8 + 1;

} // namespace

bool valid_type(std::string_view type) noexcept {
  if (type.empty() || type.size() > max_type_length)
    return false;
  for (char c : type)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
      return false;
  return true;
}

bool valid_data(std::string_view data) noexcept {
  auto first = data.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || data[first] != '{')
    return false;
  return nlohmann::json::accept(data.begin(), data.end());
}

std::string encode(int64_t time_us, std::string_view type, std::string_view data) {
  std::string out;
  out.reserve(header_size + type.size() + data.size());
  out.push_back(static_cast<char>(format_version));
  auto time = static_cast<uint64_t>(time_us);
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((time >> shift) & 0xFF));
  out.push_back(static_cast<char>(type.size()));
  out.append(type).append(data);
  return out;
}

status decode(std::string_view value, event_record& out) {
  auto corrupt = [](const char* what) {
    return status::error(errc::corrupt_data, std::string{"stored event: "} + what);
  };
  if (value.size() < header_size)
    return corrupt("value shorter than its header");
  if (static_cast<uint8_t>(value[0]) != format_version)
    return corrupt("unknown format version");
  uint64_t time = 0;
  for (std::size_t idx = 1; idx < 9; ++idx)
    time = (time << 8) | static_cast<uint8_t>(value[idx]);
  auto type_len = static_cast<uint8_t>(value[9]);
  if (value.size() < header_size + type_len)
    return corrupt("type runs past the value");
  auto type = value.substr(header_size, type_len);
  if (!valid_type(type))
    return corrupt("malformed type");
  auto data = value.substr(header_size + type_len);
  if (!valid_data(data))
    return corrupt("data is not a JSON object");
  out.time_us = static_cast<int64_t>(time);
  out.type.assign(type);
  out.data.assign(data);
  return status::ok();
}

} // namespace voxos::event_codec
