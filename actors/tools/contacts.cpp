#include "actors/tools/contacts.hpp"

#include <algorithm>
#include <cctype>

#include "actors/tools/knowledge.hpp"
#include "storage/digest.hpp"

namespace voxos::contacts {

using json = nlohmann::json;

namespace {

std::string lowered(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (auto ch : text)
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for (auto ch : lowered(text)) {
    if (std::isalnum(static_cast<unsigned char>(ch)) || static_cast<unsigned char>(ch) >= 0x80
        || ch == '\'') {
      word += ch;
    } else if (!word.empty()) {
      out.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty())
    out.push_back(std::move(word));
  return out;
}

std::string digits_of(std::string_view text) {
  std::string out;
  for (auto ch : text)
    if (std::isdigit(static_cast<unsigned char>(ch)))
      out += ch;
  return out;
}

/// A query of digits and phone punctuation only, with at least four digits.
bool is_number_query(std::string_view query) {
  return digits_of(query).size() >= 4 && std::all_of(query.begin(), query.end(), [](char ch) {
           return std::isdigit(static_cast<unsigned char>(ch)) || ch == '+' || ch == ' '
                  || ch == '-' || ch == '(' || ch == ')' || ch == '.';
         });
}

/// Every query word starts a word of the name.
bool name_matches(const std::vector<std::string>& query, std::string_view name) {
  auto words = words_of(name);
  return std::all_of(query.begin(), query.end(), [&](const std::string& q) {
    return std::any_of(words.begin(), words.end(),
                       [&](const std::string& w) { return w.rfind(q, 0) == 0; });
  });
}

json shown(const contact_record& c, contact_detail detail) {
  // Ids, display names and numbers only: never notes, email or the admin flag.
  auto number = detail == contact_detail::full_numbers
                  ? c.phone
                  : "…" + (c.phone.size() > 4 ? c.phone.substr(c.phone.size() - 4) : c.phone);
  return {{"contact_id", c.contact_id},
          {"display_name", c.display_name},
          {detail == contact_detail::full_numbers ? "phone" : "phone_ending", number}};
}

/// Whether `text` holds a node id: t_, a_, r_, c_ or s_ and 16 hex digits.
bool names_internal_id(std::string_view text) {
  auto hex = [](char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'); };
  for (std::size_t pos = 0; pos + 18 <= text.size(); ++pos) {
    if (text[pos + 1] != '_' || std::string_view{"tarcs"}.find(text[pos]) == std::string_view::npos)
      continue;
    if (pos > 0 && std::isalnum(static_cast<unsigned char>(text[pos - 1])))
      continue;
    auto id = text.substr(pos + 2, 16);
    if (std::all_of(id.begin(), id.end(), hex))
      return true;
  }
  return false;
}

bool messaging(channel c) {
  return c == channel::sms || c == channel::whatsapp;
}

} // namespace

tool_outcome search(const std::vector<contact_record>& saved, const tool_context& ctx,
                    const json& args) {
  if (messaging(ctx.chan) && ctx.caller != caller_class::admin)
    return tool_outcome::error("sender_not_admin",
                               "contact search is only available to a saved admin sender.");
  auto query = args.at("query").get<std::string>();
  std::vector<const contact_record*> found;
  if (is_number_query(query)) {
    auto wanted = digits_of(query);
    for (const auto& c : saved) {
      auto have = digits_of(c.phone);
      if (have.size() >= wanted.size()
          && have.compare(have.size() - wanted.size(), wanted.size(), wanted) == 0)
        found.push_back(&c);
    }
  } else {
    auto words = words_of(query);
    if (words.empty())
      return tool_outcome::error("invalid_query", "the query needs a name or a number.");
    auto whole = lowered(query);
    // An exact display name settles it.
    for (const auto& c : saved)
      if (lowered(c.display_name) == whole)
        found.push_back(&c);
    if (found.size() != 1) {
      found.clear();
      for (const auto& c : saved)
        if (name_matches(words, c.display_name))
          found.push_back(&c);
    }
  }
  std::sort(found.begin(), found.end(), [](const contact_record* a, const contact_record* b) {
    return a->display_name != b->display_name ? a->display_name < b->display_name
                                              : a->contact_id < b->contact_id;
  });
  if (found.empty())
    return tool_outcome::ok(
      {{"resolution", "not_found"},
       {"contacts", json::array()},
       {"guidance", "No saved contact matches. Ask the user for the number, or offer to create "
                    "a contact."}});
  if (found.size() == 1)
    return tool_outcome::ok({{"resolution", "unique"},
                             {"contacts", json::array({shown(*found.front(), ctx.contacts)})},
                             {"guidance", "One saved contact matches; proceed with it."}});
  json listed = json::array();
  for (std::size_t idx = 0; idx < found.size() && idx < max_matches; ++idx)
    listed.push_back(shown(*found[idx], ctx.contacts));
  json out{{"resolution", "ambiguous"},
           {"contacts", std::move(listed)},
           {"guidance", "Several saved contacts match. Ask the user to choose one."}};
  if (found.size() > max_matches)
    out["more"] = found.size() - max_matches;
  return tool_outcome::ok(std::move(out));
}

tool_outcome place_call(const std::vector<contact_record>& saved, const phone_integration& phone,
                        const tool_context& ctx, const json& args) {
  auto contact_id = args.at("contact_id").get<std::string>();
  auto contact = std::find_if(saved.begin(), saved.end(),
                              [&](const contact_record& c) { return c.contact_id == contact_id; });
  if (contact == saved.end())
    return tool_outcome::error("not_found",
                               "no saved contact has that ID; search contacts first and pass the "
                               "contact ID it returns.");
  auto objective = args.at("objective").get<std::string>();
  if (std::any_of(objective.begin(), objective.end(),
                  [](char ch) { return static_cast<unsigned char>(ch) < 0x20 && ch != '\n'; }))
    return tool_outcome::error("objective_not_caller_safe",
                               "the objective holds control characters; write it as plain "
                               "sentences.");
  if (words_of(objective).size() < min_objective_words)
    return tool_outcome::error("objective_incomplete",
                               "the objective must say the call's whole purpose in at least "
                                 + std::to_string(min_objective_words) + " words.");
  if (knowledge::looks_like_credential(objective))
    return tool_outcome::error("objective_not_caller_safe",
                               "the objective looks like it holds a credential; the person called "
                               "hears it, so it may hold none.");
  // Ids of tenants, agents, runs, chats or servers (this tenant's or
  // another's) have no place in what the callee hears.
  if (names_internal_id(objective))
    return tool_outcome::error("objective_not_caller_safe",
                               "the objective names an internal identifier; describe the call's "
                               "purpose in plain words.");
  auto session_id = "ps_" + digest::random_hex(8);
  json data{{"session_id", session_id},      {"integration_id", phone.integration_id},
            {"tool", phone.place_call_tool}, {"contact_id", contact->contact_id},
            {"objective", objective},        {"run_id", ctx.run_id},
            {"agent_id", ctx.agent_id},      {"chat_id", ctx.chat_id},
            {"requested_us", ctx.now_us}};
  auto out = tool_outcome::ok(
    {{"session_id", session_id},
     {"status", "queued"},
     {"contact", {{"contact_id", contact->contact_id}, {"display_name", contact->display_name}}},
     {"message", "The call is queued for the phone integration with this objective as its "
                 "context."}});
  out.writes.push_back({std::string{sessions_stream}, {{"phone.session_requested", data.dump()}}});
  return out;
}

} // namespace voxos::contacts
