#include "storage/keys.hpp"

namespace voxos::keys {

namespace {

bool name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

} // namespace

bool valid_tenant(std::string_view tenant) noexcept {
  if (tenant == node_tenant)
    return true;
  if (tenant.empty() || tenant.size() > max_name_length || tenant.front() == '_')
    return false;
  for (char c : tenant)
    if (!name_char(c))
      return false;
  return true;
}

bool valid_stream(std::string_view stream) noexcept {
  if (stream.empty() || stream.size() > max_name_length)
    return false;
  for (char c : stream)
    if (!name_char(c) && c != '.')
      return false;
  return true;
}

std::string tenant_prefix(std::string_view tenant) {
  std::string out;
  out.reserve(tenant.size() + 1);
  out.append(tenant).push_back('/');
  return out;
}

std::string stream_prefix(std::string_view tenant, std::string_view stream) {
  std::string out;
  out.reserve(tenant.size() + stream.size() + 2);
  out.append(tenant).append(1, '/').append(stream).push_back('/');
  return out;
}

std::string event_key(std::string_view tenant, std::string_view stream, uint64_t seq) {
  auto out = stream_prefix(tenant, stream);
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((seq >> shift) & 0xFF));
  return out;
}

std::optional<event_key_parts> parse_event_key(std::string_view key) noexcept {
  if (key.size() < 8 + 4)
    return std::nullopt;
  auto head = key.substr(0, key.size() - 8);
  if (head.back() != '/')
    return std::nullopt;
  head.remove_suffix(1);
  auto slash = head.find('/');
  if (slash == std::string_view::npos)
    return std::nullopt;
  event_key_parts parts{head.substr(0, slash), head.substr(slash + 1), 0};
  if (!valid_tenant(parts.tenant) || !valid_stream(parts.stream))
    return std::nullopt;
  for (auto byte : key.substr(key.size() - 8))
    parts.seq = (parts.seq << 8) | static_cast<uint8_t>(byte);
  return parts;
}

} // namespace voxos::keys
