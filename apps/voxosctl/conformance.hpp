// The client side of the official MCP conformance suite (see conformance.cpp).
#pragma once

#include <string>

namespace voxos {

/// Runs the scenario named by MCP_CONFORMANCE_SCENARIO against `url`
/// through an mcp_connection actor; returns the process exit code.
int run_conformance_client(const std::string& url);

} // namespace voxos
