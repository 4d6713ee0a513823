// Every error code has its own stable name: the names cross the HTTP API and
// the CAF network, so a code added without a name (to_string's fallback is
// "internal") would silently read as an internal error.
#include "messages/errc.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <string_view>
#include <utility>

using voxos::errc;

TEST_CASE("every error code has its own stable name") {
  const std::pair<errc, std::string_view> expected[] = {
    {errc::bad_json, "bad_json"},
    {errc::unknown_field, "unknown_field"},
    {errc::wrong_type, "wrong_type"},
    {errc::missing_field, "missing_field"},
    {errc::out_of_range, "out_of_range"},
    {errc::body_too_large, "body_too_large"},
    {errc::unsupported_media_type, "unsupported_media_type"},
    {errc::unauthorized, "unauthorized"},
    {errc::forbidden, "forbidden"},
    {errc::not_found, "not_found"},
    {errc::method_not_allowed, "method_not_allowed"},
    {errc::conflict, "conflict"},
    {errc::sequence_conflict, "sequence_conflict"},
    {errc::storage_failure, "storage_failure"},
    {errc::data_dir_locked, "data_dir_locked"},
    {errc::corrupt_data, "corrupt_data"},
    {errc::vault_open_failed, "vault_open_failed"},
    {errc::config_invalid, "config_invalid"},
    {errc::unavailable, "unavailable"},
    {errc::internal, "internal"},
    {errc::rejected, "rejected"},
    {errc::too_many_requests, "too_many_requests"},
    {errc::server_error, "server_error"},
  };
  // The table covers the whole enum, which starts at 1 and has no gaps:
  // its last entry is the enum's last value.
  CHECK(std::size(expected) == static_cast<std::size_t>(errc::server_error));
  std::set<std::string_view> names;
  uint8_t value = 1;
  for (const auto& [code, name] : expected) {
    CAPTURE(name);
    CHECK(static_cast<uint8_t>(code) == value++);
    CHECK(voxos::to_string(code) == name);
    names.insert(voxos::to_string(code));
  }
  CHECK(names.size() == std::size(expected));
}
