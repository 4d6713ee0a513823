#include "messages/errc.hpp"

namespace voxos {

std::string_view to_string(errc code) noexcept {
  switch (code) {
  case errc::bad_json:
    return "bad_json";
  case errc::unknown_field:
    return "unknown_field";
  case errc::wrong_type:
    return "wrong_type";
  case errc::missing_field:
    return "missing_field";
  case errc::out_of_range:
    return "out_of_range";
  case errc::body_too_large:
    return "body_too_large";
  case errc::unsupported_media_type:
    return "unsupported_media_type";
  case errc::unauthorized:
    return "unauthorized";
  case errc::forbidden:
    return "forbidden";
  case errc::not_found:
    return "not_found";
  case errc::method_not_allowed:
    return "method_not_allowed";
  case errc::conflict:
    return "conflict";
  case errc::sequence_conflict:
    return "sequence_conflict";
  case errc::storage_failure:
    return "storage_failure";
  case errc::data_dir_locked:
    return "data_dir_locked";
  case errc::corrupt_data:
    return "corrupt_data";
  case errc::vault_open_failed:
    return "vault_open_failed";
  case errc::config_invalid:
    return "config_invalid";
  case errc::unavailable:
    return "unavailable";
  case errc::internal:
    return "internal";
  case errc::rejected:
    return "rejected";
  case errc::too_many_requests:
    return "too_many_requests";
  case errc::server_error:
    return "server_error";
  case errc::needs_auth:
    return "needs_auth";
  }
  return "internal";
}

} // namespace voxos
