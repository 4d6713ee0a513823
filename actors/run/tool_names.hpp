// The tenant's model-facing tool names in byte order, computed once per
// configuration change, so that composing a run's view (tool_view.hpp)
// orders and compares names as integers instead of strings. CAF-free, pure.
//
// What it holds: every distinct name a view of the tenant can start from or
// reach in the first clash round, sorted: each cached MCP tool's base name
// (its own name, sanitised if it is not model-facing) and its level-1 name
// (base cut + "__<server slug>"), each phone integration's place-call name,
// the internal tool names and the three catalog tool names. A name's rank is
// 2 * its place + 1; a name it does not hold ranks 2 * (how many it holds sort
// before it). So ranks order as the names' bytes do, two names with one odd
// rank are equal, and only names of one even rank need their bytes compared.
//
// Identity: per server, the ranks are kept with the tool cache and slug they
// were computed from. A view uses them only for a server whose current cache
// is that very block (tool_cache shares an immutable block; the order keeps
// it alive, so its address cannot be reused) and whose slug is unchanged;
// any other entry's ranks are looked up by name (rank_of). A stale order
// therefore costs speed, never a wrong name. Names composed past level 1
// (hashed suffixes, a clash among clashes) are always looked up by name.
//
// Cost: building sorts 2 names per cached tool (allowlisted or not): about
// 0.6 ms for 2,000 tools on 2 vCPU, as much as the policy_index build. The
// tenant actor builds it beside its policy_index, lazily before the first
// run after a configuration change (or a restart, from the state loaded from
// the store). Memory: about 100 bytes a cached tool (its two names, their
// views, 8 bytes of ranks).
// Threading: const; copies share one immutable block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/tenant/tenant_model.hpp"

namespace voxos {

class tool_name_order {
public:
  /// One server's tools as the order ranks them.
  struct server_names {
    std::string server_id;
    tool_cache cache; ///< the cache the ranks were computed from (kept alive)
    std::string slug; ///< the slug the level-1 names were composed with
    /// By cache.by_name() index: the base name's rank, then the level-1 name's.
    std::vector<uint32_t> ranks;

    uint32_t base_rank(std::size_t named_idx) const noexcept { return ranks[2 * named_idx]; }
    uint32_t suffixed_rank(std::size_t named_idx) const noexcept {
      return ranks[2 * named_idx + 1];
    }
  };

  /// Holds no name: every rank is 0, every comparison falls to the bytes.
  tool_name_order() = default;
  explicit tool_name_order(const tenant_state& tenant);

  /// The rank of `name` (see above): a binary search of the held names.
  uint32_t rank_of(std::string_view name) const noexcept;

  /// How many distinct names it holds (odd ranks are below 2 * this + 1).
  std::size_t size() const noexcept;

  /// The ranks of server `server_id`'s tools if they were computed from
  /// exactly `cache` (the same shared block) and `slug`; else nullptr.
  const server_names* server(std::string_view server_id, const tool_cache& cache,
                             std::string_view slug) const noexcept;

private:
  struct data;
  std::shared_ptr<const data> data_;
};

} // namespace voxos
