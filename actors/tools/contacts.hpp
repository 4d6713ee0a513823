// Contacts: search_contacts, and the place-call tool of a connected phone
// integration (Twilio or Telnyx). CAF-free.
//
// search_contacts reads only the tenant's saved contacts (the tenant hands
// the tool desk its current list) and answers a typed resolution:
// `not_found`, `unique` or `ambiguous`, with contact ids, display names and
// phone numbers only; never notes, email addresses or admin flags. On SMS and
// WhatsApp (contact_detail::number_endings) a number shows only its last four
// digits, and only an admin sender gets an answer at all (the channel policy
// already drops the tool for anyone else; the tool checks again).
//
// The place-call tool resolves a contact id inside the same tenant, takes a
// complete, bounded, caller-safe objective, and records a durable phone
// session request (stream "phone.sessions") with the initiating run, agent
// and chat from the execution context. The objective is context for the call
// only: it widens no caller access, MCP trust or snapshot. Dialling is the
// phone adapter's work, not a tool's.
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tenant/tenant_model.hpp"
#include "actors/tools/tool_context.hpp"

namespace voxos::contacts {

inline constexpr std::string_view sessions_stream = "phone.sessions";

/// Most contacts an ambiguous answer lists (the rest are counted).
inline constexpr std::size_t max_matches = 10;
/// The fewest words a complete objective has.
inline constexpr std::size_t min_objective_words = 3;

tool_outcome search(const std::vector<contact_record>& saved, const tool_context& ctx,
                    const nlohmann::json& args);

tool_outcome place_call(const std::vector<contact_record>& saved, const phone_integration& phone,
                        const tool_context& ctx, const nlohmann::json& args);

} // namespace voxos::contacts
