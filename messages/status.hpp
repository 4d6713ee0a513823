// Status and result values for the CAF-free layers (storage, config, transport).
// Modelled on RocksDB's Status: factories, predicates, and [[nodiscard]] so a
// caller cannot drop a failure on the floor.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

#include "messages/errc.hpp"

namespace voxos {

class [[nodiscard]] status {
public:
  static status ok() { return status{}; }
  static status error(errc code, std::string message) { return status{code, std::move(message)}; }

  bool is_ok() const noexcept { return !code_; }
  explicit operator bool() const noexcept { return is_ok(); }
  /// Precondition: !is_ok().
  errc code() const noexcept { return *code_; }
  /// Human text: names keys, paths and constraints, never secret or rejected values.
  const std::string& message() const noexcept { return message_; }

private:
  status() = default;
  status(errc code, std::string message) : code_(code), message_(std::move(message)) {}
  std::optional<errc> code_;
  std::string message_;
};

/// A value or the status explaining why there is none.
template <class T>
class [[nodiscard]] result {
public:
  result(T value) : value_(std::move(value)), status_(status::ok()) {}
  result(status failure) : status_(std::move(failure)) { assert(!status_.is_ok()); }

  bool is_ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return is_ok(); }
  const status& error() const noexcept { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

private:
  std::optional<T> value_;
  status status_;
};

} // namespace voxos
