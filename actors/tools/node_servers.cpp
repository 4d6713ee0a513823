#include "actors/tools/node_servers.hpp"

#include <algorithm>

namespace voxos {

const std::vector<node_server>& node_servers() {
  static const std::vector<node_server> all{
    {"docs",
     "Voxos product documentation",
     "Search and read the Voxos product documentation. The documents are global and hold no "
     "user data.",
     {"search_product_docs", "read_product_doc"}},
    {"memory",
     "Voxos memory",
     "This agent's active memories, and proposals of new ones. A proposal waits for the "
     "owner's review before it becomes a memory.",
     {"list_agent_memories", "propose_agent_memory"}},
    {"skills",
     "Voxos skills",
     "The account's active skills. A new skill is saved as a draft for the owner to review.",
     {"list_agent_skills", "get_agent_skill", "create_user_skill"}},
  };
  return all;
}

const node_server* find_node_server(std::string_view name) {
  const auto& all = node_servers();
  auto found =
    std::find_if(all.begin(), all.end(), [&](const node_server& s) { return s.name == name; });
  return found == all.end() ? nullptr : &*found;
}

} // namespace voxos
