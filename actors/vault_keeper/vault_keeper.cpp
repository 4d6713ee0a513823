#include "actors/vault_keeper/vault_keeper.hpp"

#include <vector>

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <nlohmann/json.hpp>

#include "config/log.hpp"
#include "messages/error.hpp"
#include "storage/event_db.hpp"
#include "storage/server_keys.hpp"
#include "storage/vault.hpp"
#include "storage/vault_upkeep.hpp"

namespace voxos {

namespace {

using nlohmann::json;

constexpr std::string_view log_component = "vault_keeper";

struct vault_keeper_state {
  static inline const char* name = "vault_keeper";
  std::shared_ptr<event_db> db;
  std::shared_ptr<const vault> node_keys;
  std::shared_ptr<server_keys> keys;
  vault_keeper_options opts;
  vault_upkeep::reseal_cursor cursor;
  bool failed = false; ///< the pass stopped on a storage error
  /// Reports asked to wait for the end of the pass.
  std::vector<caf::typed_response_promise<std::string>> waiting;
};

using self_pointer = vault_keeper_actor::stateful_pointer<vault_keeper_state>;

bool pass_ended(const vault_keeper_state& st) {
  return st.cursor.done || st.failed;
}

result<std::string> keys_report(const vault_keeper_state& st) {
  auto rows = vault_upkeep::usage(*st.db, *st.node_keys);
  if (!rows)
    return rows.error();
  json keys = json::array();
  for (const auto& row : *rows) {
    const char* state = row.active ? "active" : row.configured ? "retired" : "missing";
    keys.push_back({{"key_id", row.key_id},
                    {"state", state},
                    {"values", row.values},
                    {"droppable", row.configured && !row.active && row.values == 0}});
  }
  return json{{"active", st.node_keys->active_key_id()},
              {"keys", std::move(keys)},
              {"reseal",
               {{"done", st.cursor.done},
                {"resealed", st.cursor.resealed},
                {"unopened", st.cursor.unopened},
                {"failed", st.failed}}}}
    .dump();
}

/// Answers every report that waited for the end of the pass.
void answer_waiting(self_pointer self) {
  auto& st = self->state;
  for (auto& promise : st.waiting) {
    auto report = keys_report(st);
    if (report)
      promise.deliver(std::move(*report));
    else
      promise.deliver(to_error(report.error()));
  }
  st.waiting.clear();
}

vault_keeper_actor::behavior_type vault_keeper_behavior(self_pointer self,
                                                        std::shared_ptr<event_db> db,
                                                        std::shared_ptr<const vault> node_keys,
                                                        std::shared_ptr<server_keys> keys,
                                                        vault_keeper_options opts) {
  auto& st = self->state;
  st.db = std::move(db);
  st.node_keys = std::move(node_keys);
  st.keys = std::move(keys);
  st.opts = opts;
  self->send(self, reseal_atom::value);
  return {
    [self](erase_atom, server_atom, const std::string& tenant,
           const std::string& server_id) -> caf::result<bool> {
      if (auto erased = self->state.keys->erase_server_key(tenant, server_id); !erased)
        return to_error(erased);
      return true;
    },
    [self](list_atom, vault_atom, bool wait_for_pass) -> caf::result<std::string> {
      auto& st = self->state;
      if (wait_for_pass && !pass_ended(st)) {
        auto promise = self->make_response_promise<std::string>();
        st.waiting.push_back(promise);
        return promise;
      }
      auto report = keys_report(st);
      if (!report)
        return to_error(report.error());
      return std::move(*report);
    },
    [self](reseal_atom) {
      auto& st = self->state;
      if (pass_ended(st))
        return;
      auto before = st.cursor.resealed;
      auto step =
        vault_upkeep::reseal_batch(*st.db, *st.node_keys, st.opts.reseal_batch, st.cursor);
      if (!step) {
        st.failed = true;
        log::error(log_component, "the reseal pass stopped: " + step.message());
      } else if (st.cursor.resealed != before) {
        log::info(log_component, "resealed " + std::to_string(st.cursor.resealed - before)
                                   + " vault values under key '" + st.node_keys->active_key_id()
                                   + "'");
      }
      if (!pass_ended(st)) {
        self->send(self, reseal_atom::value);
        return;
      }
      if (st.cursor.unopened != 0)
        log::error(log_component, std::to_string(st.cursor.unopened)
                                    + " vault values did not open with their key and were "
                                      "left as they are");
      answer_waiting(self);
    },
  };
}

} // namespace

vault_keeper_actor spawn_vault_keeper(caf::actor_system& sys, std::shared_ptr<event_db> db,
                                      std::shared_ptr<const vault> node_keys,
                                      std::shared_ptr<server_keys> keys,
                                      vault_keeper_options opts) {
  return sys.spawn<caf::detached>(vault_keeper_behavior, std::move(db), std::move(node_keys),
                                  std::move(keys), opts);
}

} // namespace voxos
