// The skills the conformance fixture serves through transport/mcp_skills
// (the Skills extension, SEP-2640): see fixture_skills.cpp.
#pragma once

#include <vector>

#include "transport/mcp_skills.hpp"

namespace voxos::fixture {

/// The fixture's skills, the same for every caller. The first in name order
/// carries a description and metadata made to break a careless YAML writer,
/// a subdirectory two levels deep and a binary file, since the suite's
/// scenarios look at the first skill they find.
std::vector<mcp_skill> conformance_skills();

/// Registers them on `server`, two skills a skills/list page and two
/// children a directory page, so that both paginate; exits on failure.
void serve_skills(mcp_server& server);

} // namespace voxos::fixture
