// A tenant's state as the policy sees it: agents, MCP server records, grants,
// action routes, contacts, phone integrations and browser profiles (and the
// subagent model allowlist its tools read). CAF-free
// plain data; the tenant actor keeps it current from its events.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/tool_types.hpp"

namespace voxos {

struct agent_record {
  std::string agent_id;
  std::string name;
  bool is_default = false; ///< the tenant's first agent
};

/// The outcome of a server's last connection test (HTTP `POST
/// /v1/servers/{id}/test`, a sign-in's finish); `at_us` 0: never tested.
struct connection_test {
  int64_t at_us = 0;
  bool ok = false;
  /// A failed test's error: its code (errc's name) and message, as the test
  /// answered them (messages name rules, never values or secrets).
  std::string error_code;
  std::string error_message;
};

/// A remote MCP server record of one tenant.
struct mcp_server_record {
  std::string server_id;
  std::string tenant_id;
  std::string label;     ///< user-editable; never used for identity
  std::string preset_id; ///< safe metadata: the preset it was created from, or empty
  std::string variant;   ///< preset variant, or empty
  transport_kind transport = transport_kind::streamable_http;
  std::string url;
  auth_mode auth = auth_mode::none;
  /// The static headers sent to the server (api-key or static-headers auth),
  /// sealed by the vault for (tenant, server id); empty when none. Never
  /// opened except to connect.
  std::string sealed_headers;
  /// OAuth modes, sealed like the headers, never opened except to connect
  /// or to finish a sign-in: the client (its registration with the
  /// authorization server), the tokens, and the pending browser sign-in
  /// (its PKCE verifier; one at a time, replaced by a new start, cleared
  /// when used) with its id, which the signed state names.
  std::string sealed_oauth_client;
  std::string sealed_oauth_tokens;
  std::string sealed_sign_in;
  std::string sign_in_flow;
  /// The server needs signing in (again): its credentials are missing,
  /// revoked or past refresh. Its tools leave new runs' views.
  bool needs_auth = false;
  bool enabled = false;
  bool trusted = false;
  bool connected = false;                 ///< the last explicit connection test succeeded
  std::vector<std::string> allowed_tools; ///< explicit allowlist
  /// Bounded discovery cache: immutable and shared (see tool_cache); a
  /// change replaces it whole.
  tool_cache cached_tools;
  std::string cache_version;
  int64_t discovered_us = 0;
  connection_test last_test;
};

enum class grant_decision : uint8_t { allow, deny };

/// An explicit per-agent decision for one tool: internal (server_id empty) or
/// one exact (server id, tool) pair.
struct tool_grant {
  std::string agent_id;
  std::string server_id;
  std::string tool;
  grant_decision decision = grant_decision::allow;
};

enum class route_mode : uint8_t { automatic, pinned };

/// An action route of one agent, e.g. web.search. Pinned names an exact tool
/// and server and never falls back.
struct action_route {
  std::string agent_id;
  std::string action;
  route_mode mode = route_mode::automatic;
  std::string pinned_server_id;
  std::string pinned_tool;
};

struct contact_record {
  std::string contact_id;
  std::string display_name;
  std::string phone; ///< normalised E.164
  bool is_admin = false;
  /// The owner's own notes and the contact's email: never shown to a model
  /// (search_contacts returns ids, names and numbers only).
  std::string notes;
  std::string email;
};

enum class phone_provider : uint8_t { twilio, telnyx };

/// A connected phone resource; a call-capable one brings a place-call tool.
struct phone_integration {
  std::string integration_id;
  phone_provider provider = phone_provider::twilio;
  bool call_capable = false;
  bool connected = false;
  std::string place_call_tool; ///< the integration tool's name
};

/// A saved browser profile's model-visible part.
struct browser_profile {
  std::string handle;                 ///< opaque
  std::string label;                  ///< safe label
  std::string primary_origin;         ///< https origin
  std::vector<std::string> agent_ids; ///< agents it is assigned to
  std::string server_id; ///< hosted provider's MCP server, or empty (Voxos Local Browser)
  std::string tool;      ///< the hosted provider tool it needs granted, or empty
};

/// The owner's provider-specific subagent model allowlist: the models a
/// delegate_agent_task call may name, by provider (actors/tools/delegation.hpp).
/// Replaced whole by the owner. Bounds (checked wherever it is decoded,
/// tenant_events.hpp): at most 16 providers, each with 1 to 64 models, no
/// model twice under one provider; provider names 1-128 characters of
/// [a-z0-9_.-], model ids 1-128 of [A-Za-z0-9_.:/@-]. One model id may be
/// listed under two providers (a delegation naming it is then refused as
/// ambiguous: the model cannot name a provider).
struct subagent_allowlist {
  std::map<std::string, std::vector<std::string>> providers;
};

struct tenant_state {
  std::string tenant_id;
  std::vector<agent_record> agents;
  std::map<std::string, mcp_server_record> servers; ///< by server id
  std::vector<tool_grant> grants;
  std::vector<action_route> routes;
  std::vector<contact_record> contacts;
  std::vector<phone_integration> phones;
  std::vector<browser_profile> profiles;
  subagent_allowlist subagent_models;
};

} // namespace voxos
