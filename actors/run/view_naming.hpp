// The pieces of the tool view's naming rule (tool_view.hpp), in one place, so
// that whatever composes model-facing names (the view, the tenant's tool name
// order in tool_names.hpp) spells them as the view does. CAF-free, pure;
// internal to actors/run.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "actors/tenant/tenant_model.hpp"

namespace voxos::view_naming {

constexpr std::size_t max_name_bytes = 64;
constexpr std::size_t max_slug_bytes = 16;

/// `name` in the model-facing character set, at most 64 bytes, never empty.
std::string sanitize_name(std::string_view name);

/// A short lowercase label: [a-z0-9_], no leading, trailing or doubled '_'.
std::string slug(std::string_view text);

/// The slug of an MCP server's entries: of its preset variant, else its
/// preset id, else its label.
std::string server_slug(const mcp_server_record& server);

/// A model-facing name under construction (at most 64 bytes plus a suffix).
class name_buffer {
public:
  void append(std::string_view text) {
    auto n = std::min(text.size(), sizeof buf_ - size_);
    std::copy_n(text.data(), n, buf_ + size_);
    size_ += n;
  }
  std::string_view view() const noexcept { return {buf_, size_}; }
  std::size_t size() const noexcept { return size_; }

private:
  char buf_[160];
  std::size_t size_ = 0;
};

/// Appends 6 hex digits of FNV-1a 64 over `text` (then, if given, a NUL
/// byte and `more`): stable across builds and machines.
void append_short_hash(name_buffer& out, std::string_view text, const std::string_view* more);

/// Appends `base` cut so that base + `suffix` fits the name limit, then `suffix`.
void append_suffixed(name_buffer& out, std::string_view base, std::string_view suffix);

} // namespace voxos::view_naming
