// errc as caf::error: the form errors take when they cross an actor boundary.
#pragma once

#include <string>

#include <caf/error.hpp>

#include "messages/errc.hpp"
#include "messages/status.hpp"

namespace voxos {

/// The category atom of every voxos error.
caf::atom_value error_category() noexcept;

/// An error with a human message (no secrets, no rejected values).
caf::error make_error(errc code, std::string message);

/// Converts a failed status into a caf::error. Precondition: !x.is_ok().
caf::error to_error(const status& x);

/// The voxos code of `x`, or errc::internal if `x` is of another category.
errc code_of(const caf::error& x) noexcept;

/// The human message of `x` (its context string, or CAF's own rendering).
std::string message_of(const caf::error& x);

} // namespace voxos
