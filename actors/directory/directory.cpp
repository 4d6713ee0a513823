#include "actors/directory/directory.hpp"

#include <chrono>
#include <map>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/directory/directory_index.hpp"
#include "actors/metrics/node_metrics.hpp"
#include "actors/work/work_item.hpp"
#include "config/clock.hpp"
#include "config/log.hpp"
#include "messages/error.hpp"
#include "storage/digest.hpp"
#include "storage/directory_projection.hpp"
#include "storage/keys.hpp"

namespace voxos {

namespace {

constexpr std::size_t max_name_bytes = 200;

constexpr auto store_timeout = std::chrono::seconds(30);

struct directory_state {
  static inline const char* name = "directory";
  event_store_actor store;
  node_metrics* metrics = nullptr;
  tenant_services services;
  std::map<std::string, tenant_actor> tenants; // strong handles: tenants live with the node
  std::optional<directory_index> index;
  /// The node's entry points' token cache: a revoked token is forgotten there.
  std::shared_ptr<node_token_cache> tokens;
  actor_counters* counters = nullptr;
  std::optional<running_guard> running;
};

using self_pointer = directory_actor::stateful_pointer<directory_state>;

constexpr std::string_view log_component = "directory";

/// The tenant actor of `tenant_id`, spawned on first use.
tenant_actor tenant_of(self_pointer self, const std::string& tenant_id) {
  auto& slot = self->state.tenants[tenant_id];
  if (!slot) {
    slot = spawn_tenant(self->system(), tenant_id, self->state.store, *self->state.metrics,
                        self->state.services);
    self->link_to(slot); // tenant actors go when the directory goes
  }
  return slot;
}

// Names and labels: bounded, printable (no control characters).
std::optional<caf::error> check_text(const std::string& text, const char* field, bool allow_empty) {
  if (text.empty() && !allow_empty)
    return make_error(errc::missing_field, std::string{field} + ": must not be empty");
  if (text.size() > max_name_bytes)
    return make_error(errc::out_of_range, std::string{field} + ": longer than "
                                            + std::to_string(max_name_bytes) + " bytes");
  for (unsigned char c : text)
    if (c < 0x20 || c == 0x7F)
      return make_error(errc::out_of_range, std::string{field} + ": contains control characters");
  return std::nullopt;
}

append_request directory_append(std::string type, std::string data) {
  append_request req;
  req.tenant = std::string{keys::node_tenant};
  req.stream = directory::stream;
  req.events.push_back({std::move(type), std::move(data)});
  return req;
}

} // namespace

directory_actor::behavior_type directory_behavior(self_pointer self, event_store_actor store,
                                                  directory_index index, node_metrics* metrics,
                                                  tenant_services services,
                                                  std::shared_ptr<node_token_cache> tokens) {
  auto& st = self->state;
  st.store = std::move(store);
  st.tokens = std::move(tokens);
  st.metrics = metrics;
  st.services = std::move(services);
  st.index.emplace(std::move(index));
  st.counters = &metrics->actor("directory");
  st.running.emplace(*st.counters);
  // Tenants are spawned on first use, except those holding schedules: a
  // schedule fires whether or not anyone talks to its tenant, so those
  // start with the node (one seek of the store each).
  for (const auto& tenant : st.index->tenants())
    self
      ->request(st.store, std::chrono::seconds(60), scan_atom::value, state_atom::value,
                work::schedule_prefix(tenant.tenant_id), uint32_t{1})
      .then(
        [self, tenant_id = tenant.tenant_id](const std::vector<state_entry>& found) {
          if (!found.empty() && self->state.index->tenant(tenant_id) != nullptr)
            tenant_of(self, tenant_id);
        },
        [](caf::error& err) {
          log::error(log_component, "cannot look for schedules: " + message_of(err));
        });
  // A tenant actor that fails (a defect: an exception in a handler) ends
  // alone. Linked, its exit would end the directory and every other tenant:
  // the directory forgets it instead, and the next request for the tenant
  // spawns it again from the store (the failed instance cancelled its live
  // runs as it ended: tenant.hpp). An exit from anything else ends the
  // directory as before.
  self->set_exit_handler([self](caf::exit_msg& msg) {
    auto& tenants = self->state.tenants;
    for (auto tenant = tenants.begin(); tenant != tenants.end(); ++tenant) {
      if (tenant->second.address() != msg.source)
        continue;
      // (the reason's text is not logged: it may quote what the tenant held)
      if (msg.reason)
        log::error(log_component,
                   "tenant " + tenant->first
                     + " stopped after a failure; it starts again on its next request");
      tenants.erase(tenant);
      return;
    }
    self->quit(std::move(msg.reason));
  });
  auto note = [self] { self->state.counters->on_message(self->mailbox().size()); };
  return {
    [self, note](create_atom, tenant_atom, std::string& name) -> caf::result<tenant_record> {
      note();
      if (auto err = check_text(name, "name", false))
        return std::move(*err);
      tenant_record tenant{"t_" + digest::random_hex(8), std::move(name), wall_clock_us()};
      auto promise = self->make_response_promise<tenant_record>();
      self
        ->request(self->state.store, store_timeout, append_atom::value,
                  directory_append("tenant.created", directory::tenant_created(tenant)))
        .then(
          [self, promise, tenant](const append_result&) mutable {
            self->state.index->put_tenant(tenant);
            tenant_of(self, tenant.tenant_id); // applies the new tenant's defaults
            promise.deliver(tenant);
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](list_atom, tenant_atom) {
      note();
      return self->state.index->tenants();
    },
    [self, note](tenant_atom, const std::string& tenant_id) -> caf::result<tenant_record> {
      note();
      if (const auto* tenant = self->state.index->tenant(tenant_id))
        return *tenant;
      return make_error(errc::not_found, "no such tenant");
    },
    [self, note](create_atom, token_atom, const std::string& tenant_id,
                 std::string& label) -> caf::result<issued_token> {
      note();
      if (self->state.index->tenant(tenant_id) == nullptr)
        return make_error(errc::not_found, "no such tenant");
      if (auto err = check_text(label, "label", true))
        return std::move(*err);
      issued_token issued;
      issued.record = token_record{"tok_" + digest::random_hex(8), tenant_id, std::move(label),
                                   wall_clock_us(), false};
      issued.secret = digest::random_token("vxt_", 32);
      auto hash = digest::sha256_hex(issued.secret);
      auto promise = self->make_response_promise<issued_token>();
      self
        ->request(self->state.store, store_timeout, append_atom::value,
                  directory_append("token.issued", directory::token_issued(issued.record, hash)))
        .then(
          [self, promise, issued, hash](const append_result&) mutable {
            self->state.index->put_token(issued.record, hash);
            promise.deliver(std::move(issued));
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](list_atom, token_atom,
                 const std::string& tenant_id) -> caf::result<std::vector<token_record>> {
      note();
      if (self->state.index->tenant(tenant_id) == nullptr)
        return make_error(errc::not_found, "no such tenant");
      return self->state.index->tokens(tenant_id);
    },
    [self, note](revoke_atom, token_atom, const std::string& tenant_id,
                 const std::string& token_id) -> caf::result<token_record> {
      note();
      auto& index = *self->state.index;
      const auto* token = index.token(tenant_id, token_id);
      if (token == nullptr || token->revoked)
        return make_error(errc::not_found, "no such live token for this tenant");
      auto revoked = *token;
      revoked.revoked = true;
      auto hash = *index.token_hash(tenant_id, token_id);
      auto promise = self->make_response_promise<token_record>();
      self
        ->request(self->state.store, store_timeout, append_atom::value,
                  directory_append("token.revoked", directory::token_revoked(revoked, hash)))
        .then(
          [self, promise, revoked, hash](const append_result&) mutable {
            self->state.index->put_token(revoked, hash);
            // (before answering: the revoked token acts on no entry point again)
            if (self->state.tokens)
              self->state.tokens->forget(hash);
            promise.deliver(revoked);
          },
          [promise](caf::error& err) mutable { promise.deliver(std::move(err)); });
      return promise;
    },
    [self, note](auth_atom, const std::string& secret) -> caf::result<tenant_identity> {
      note();
      if (auto identity = self->state.index->authenticate(secret))
        return std::move(*identity);
      return make_error(errc::unauthorized, "the token is not valid");
    },
    [self, note](config_atom, const std::string& tenant_id) -> caf::result<tenant_actor> {
      note();
      if (self->state.index->tenant(tenant_id) == nullptr)
        return make_error(errc::not_found, "no such tenant");
      return tenant_of(self, tenant_id);
    },
  };
}

directory_actor spawn_directory(caf::actor_system& sys, event_store_actor store,
                                directory_index index, node_metrics& metrics,
                                tenant_services services,
                                std::shared_ptr<node_token_cache> tokens) {
  return sys.spawn(directory_behavior, std::move(store), std::move(index), &metrics,
                   std::move(services), std::move(tokens));
}

} // namespace voxos
