#include "actors/tools/tool_context.hpp"

namespace voxos {

std::string to_call_result(const tool_outcome& outcome) {
  nlohmann::json doc{
    {"content", nlohmann::json::array({{{"type", "text"}, {"text", outcome.result.dump()}}})},
    {"structuredContent", outcome.result},
    {"isError", outcome.is_error}};
  return doc.dump();
}

} // namespace voxos
