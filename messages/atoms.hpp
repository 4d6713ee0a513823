// Atoms: the verbs of the vocabulary. At most 10 characters each (CAF 0.17).
#pragma once

#include <caf/atom.hpp>

namespace voxos {

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using whoami_atom = caf::atom_constant<caf::atom("whoami")>;
using append_atom = caf::atom_constant<caf::atom("append")>;
using read_atom = caf::atom_constant<caf::atom("read")>;
using scan_atom = caf::atom_constant<caf::atom("scan")>;
using health_atom = caf::atom_constant<caf::atom("health")>;
using verify_atom = caf::atom_constant<caf::atom("verify")>;
using tenant_atom = caf::atom_constant<caf::atom("tenant")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using create_atom = caf::atom_constant<caf::atom("create")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using revoke_atom = caf::atom_constant<caf::atom("revoke")>;
using auth_atom = caf::atom_constant<caf::atom("auth")>;
using sample_atom = caf::atom_constant<caf::atom("sample")>;
using state_atom = caf::atom_constant<caf::atom("state")>;
using agent_atom = caf::atom_constant<caf::atom("agent")>;
using grant_atom = caf::atom_constant<caf::atom("grant")>;
using route_atom = caf::atom_constant<caf::atom("route")>;
using server_atom = caf::atom_constant<caf::atom("server")>;
using phone_atom = caf::atom_constant<caf::atom("phone")>;
using contact_atom = caf::atom_constant<caf::atom("contact")>;
using run_atom = caf::atom_constant<caf::atom("run")>;
using audit_atom = caf::atom_constant<caf::atom("audit")>;
using config_atom = caf::atom_constant<caf::atom("config")>;
using check_atom = caf::atom_constant<caf::atom("check")>;
using profile_atom = caf::atom_constant<caf::atom("profile")>;
using request_atom = caf::atom_constant<caf::atom("request")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using connect_atom = caf::atom_constant<caf::atom("connect")>;
using close_atom = caf::atom_constant<caf::atom("close")>;
using tool_atom = caf::atom_constant<caf::atom("tool")>;
using changed_atom = caf::atom_constant<caf::atom("changed")>;
using turn_atom = caf::atom_constant<caf::atom("turn")>;
using listen_atom = caf::atom_constant<caf::atom("listen")>;
using erase_atom = caf::atom_constant<caf::atom("erase")>;
using vault_atom = caf::atom_constant<caf::atom("vault")>;
using reseal_atom = caf::atom_constant<caf::atom("reseal")>;
using sign_in_atom = caf::atom_constant<caf::atom("signin")>;
using callback_atom = caf::atom_constant<caf::atom("callback")>;
using tokens_atom = caf::atom_constant<caf::atom("tokens")>;
using needs_auth_atom = caf::atom_constant<caf::atom("needsauth")>;
using client_atom = caf::atom_constant<caf::atom("client")>;
using broker_atom = caf::atom_constant<caf::atom("broker")>;
using knowledge_atom = caf::atom_constant<caf::atom("knowledge")>;
using history_atom = caf::atom_constant<caf::atom("history")>;
using work_atom = caf::atom_constant<caf::atom("work")>;
using enqueue_atom = caf::atom_constant<caf::atom("enqueue")>;
using offer_atom = caf::atom_constant<caf::atom("offer")>;
using schedule_atom = caf::atom_constant<caf::atom("schedule")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;

} // namespace voxos
