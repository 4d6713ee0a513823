#include "actors/run/tool_names.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

#include "actors/run/view_naming.hpp"
#include "config/internal_tools.hpp"

namespace voxos {

struct tool_name_order::data {
  std::string text;                    ///< every name held, back to back (distinct or not)
  std::vector<std::string_view> names; ///< distinct, ascending; point into text
  std::vector<server_names> servers;   ///< by server id
  /// (the address of a server's by_name(), its index in servers), by
  /// address, for servers with tools: found by identity, no name compared.
  std::vector<std::pair<const void*, uint32_t>> by_block;
};

tool_name_order::tool_name_order(const tenant_state& tenant) {
  using view_naming::name_buffer;
  auto out = std::make_shared<data>();
  // Every name, as (offset, size) in `text` until it stops growing; `slots`
  // says which rank each one fills (servers' ranks, then the rest unused).
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  std::vector<uint32_t*> slots;
  auto hold = [&](std::string_view name, uint32_t* slot) {
    spans.emplace_back(static_cast<uint32_t>(out->text.size()), static_cast<uint32_t>(name.size()));
    slots.push_back(slot);
    out->text.append(name);
  };
  out->servers.reserve(tenant.servers.size());
  for (const auto& [id, record] : tenant.servers) {
    auto& s = out->servers.emplace_back();
    s.server_id = id;
    s.cache = record.cached_tools;
    s.slug = view_naming::server_slug(record);
    s.ranks.assign(2 * s.cache.by_name().size(), 0);
  }
  // (ranks no longer move: the slots can be pointed at)
  std::string sanitized;
  for (auto& s : out->servers) {
    auto suffix = "__" + s.slug;
    const auto& named = s.cache.by_name();
    for (std::size_t named_idx = 0; named_idx < named.size(); ++named_idx) {
      std::string_view base = named[named_idx].name;
      if (!named[named_idx].name_is_model_facing) {
        sanitized = view_naming::sanitize_name(base);
        base = sanitized;
      }
      hold(base, &s.ranks[2 * named_idx]);
      name_buffer suffixed;
      view_naming::append_suffixed(suffixed, base, suffix);
      hold(suffixed.view(), &s.ranks[2 * named_idx + 1]);
    }
  }
  for (const auto& phone : tenant.phones)
    if (!phone.place_call_tool.empty())
      hold(view_naming::sanitize_name(phone.place_call_tool), nullptr);
  for (const auto& t : internal_tools())
    hold(t.name, nullptr);
  for (auto reserved :
       {internal_names::tool_search, internal_names::tool_describe, internal_names::tool_call})
    hold(reserved, nullptr);
  for (uint32_t server_idx = 0; server_idx < out->servers.size(); ++server_idx) {
    const auto& named = out->servers[server_idx].cache.by_name();
    if (!named.empty())
      out->by_block.emplace_back(&named, server_idx);
  }
  std::sort(out->by_block.begin(), out->by_block.end(), [](const auto& x, const auto& y) {
    return std::less<const void*>{}(x.first, y.first);
  });
  // Ranks must stay odd and below 2^32: far beyond any bounded tenant.
  if (spans.size() >= (uint32_t{1} << 31))
    return;

  // Sorted once; equal names share a place.
  auto name_at = [&](uint32_t span_idx) {
    return std::string_view{out->text}.substr(spans[span_idx].first, spans[span_idx].second);
  };
  std::vector<uint32_t> order(spans.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t x, uint32_t y) { return name_at(x) < name_at(y); });
  for (auto span_idx : order) {
    auto name = name_at(span_idx);
    if (out->names.empty() || out->names.back() != name)
      out->names.push_back(name);
    if (slots[span_idx] != nullptr)
      *slots[span_idx] = static_cast<uint32_t>(2 * (out->names.size() - 1) + 1);
  }
  data_ = std::move(out);
}

uint32_t tool_name_order::rank_of(std::string_view name) const noexcept {
  if (data_ == nullptr)
    return 0;
  const auto& names = data_->names;
  auto at = std::lower_bound(names.begin(), names.end(), name);
  auto place = static_cast<uint32_t>(at - names.begin());
  return at != names.end() && *at == name ? 2 * place + 1 : 2 * place;
}

std::size_t tool_name_order::size() const noexcept {
  return data_ != nullptr ? data_->names.size() : 0;
}

const tool_name_order::server_names* tool_name_order::server(std::string_view server_id,
                                                             const tool_cache& cache,
                                                             std::string_view slug) const noexcept {
  const auto& named = cache.by_name();
  if (data_ == nullptr || named.empty())
    return nullptr;
  // The very cache the ranks were computed from (the order keeps its block
  // alive: no other cache can have its address), of this server and slug.
  const auto& by_block = data_->by_block;
  const void* block = &named;
  auto at =
    std::lower_bound(by_block.begin(), by_block.end(), block, [](const auto& entry, const void* x) {
      return std::less<const void*>{}(entry.first, x);
    });
  for (; at != by_block.end() && at->first == block; ++at) {
    const auto& s = data_->servers[at->second];
    if (s.server_id == server_id && s.slug == slug)
      return &s;
  }
  return nullptr;
}

} // namespace voxos
