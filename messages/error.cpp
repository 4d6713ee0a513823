#include "messages/error.hpp"

#include <caf/atom.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace voxos {

caf::atom_value error_category() noexcept {
  return caf::atom("voxos");
}

caf::error make_error(errc code, std::string message) {
  return caf::error{static_cast<uint8_t>(code), error_category(),
                    caf::make_message(std::move(message))};
}

caf::error to_error(const status& x) {
  return make_error(x.code(), x.message());
}

errc code_of(const caf::error& x) noexcept {
  if (x.category() != error_category() || x.code() == 0)
    return errc::internal;
  return static_cast<errc>(x.code());
}

std::string message_of(const caf::error& x) {
  if (x.category() == error_category() && x.context().match_elements<std::string>())
    return x.context().get_as<std::string>(0);
  if (x.category() == error_category())
    return std::string{to_string(code_of(x))};
  return "runtime error code " + std::to_string(x.code());
}

} // namespace voxos
