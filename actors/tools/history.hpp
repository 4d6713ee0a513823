// The full-text history of one tenant and the two internal tools over it.
// CAF-free.
//
// What is indexed, from the stored events that record it:
//   transcript     `turn.reported` on `chat.<chat_id>`: one reported turn
//                  (its user and assistant text);
//   tool_activity  `tools.round` on `run.<run_id>`: one settled tool round
//                  (each call's name, status, reason, server and tool);
//   run            `run.started` on `run.<run_id>` (agent, channel, caller),
//                  updated by `run.finished` / `run.cancelled`.
// Every other event is passed over. The same index() takes the events on
// start (rebuild_history pages through the store); live events, as each
// becomes durable, are queued (queue()) and indexed in batches (flush()):
// the tool desk flushes when nothing else waits for it (a lone event is
// indexed at once, a backlog in one go), when `batch_events` wait, and
// `batch_ms` after the first; the tools flush before every search or read,
// so they see every event queued before them. A stream's events come in sequence order
// either way.
//
// Evidence ids are the index's keys: "t.<chat>.<seq>", "a.<run>.<seq>",
// "r.<run>" (`seq` the event's sequence on its stream). They are opaque to
// the model: a tool looks an id up in this tenant's index and trusts nothing
// else about it. An id that is malformed or not in this index is not_found,
// the same answer whether it exists in another tenant's or nowhere.
//
// Threading: one thread at a time (the full-text index's rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/tools/tool_context.hpp"
#include "messages/status.hpp"
#include "messages/types.hpp"
#include "storage/fulltext_index.hpp"

namespace voxos {

class event_db;

struct history_options {
  /// Where the index lives (in memory when `dir` is empty) and its query
  /// bounds (2,048 bytes, 64 distinct words by default, the rarest 8 of
  /// which rank).
  fulltext_options index;
  /// read_agent_history: the context entries around a citation, as JSON,
  /// total at most this many bytes (the cited entry is cut to fit alone).
  std::size_t max_read_bytes = 8 * 1024;
  /// search_agent_history: excerpts when the call names no limit.
  std::size_t default_limit = 5;
  /// read_agent_history: absent sequence numbers passed over on the way to
  /// a neighbour (events of other kinds on the same stream) before the
  /// context stops on that side.
  std::size_t max_neighbour_gap = 16;
  /// The run list (HTTP `GET /v1/runs`): the newest this many runs by start
  /// time are kept in memory (about 200 bytes each), which is also the most
  /// a listing answers.
  std::size_t recent_runs = 500;
  /// Live events queued before a flush indexes them: at most this many (32
  /// by default: about 0.6 ms of indexing at 20 us an event, all in one
  /// message handler, which holds its scheduler thread meanwhile) ...
  std::size_t batch_events = 32;
  /// ... and for at most this long, in ms (the tool desk's timer; 100 by
  /// default). Queued events are in memory only: the index is derived, and
  /// rebuilt from the store when the desk starts again.
  uint32_t batch_ms = 100;
};

/// A run of the run list: its start, and its end once recorded.
struct recent_run {
  std::string run_id;
  std::string agent_id;
  std::string chan;
  std::string chat_id;
  int64_t started_us = 0;
  /// "started" until run.finished or run.cancelled says "finished" or
  /// "cancelled" (then ended_us is set).
  std::string outcome = "started";
  int64_t ended_us = 0;
};

/// What one flush did.
struct history_flush_report {
  uint64_t indexed = 0;  ///< history events indexed
  uint64_t left_out = 0; ///< events that did not index (logged, with the first error)
};

class history_index {
public:
  /// An empty index for `tenant_id`. Errors: as fulltext_index::open.
  static result<std::unique_ptr<history_index>> open(std::string tenant_id, history_options opts);
  ~history_index();
  history_index(const history_index&) = delete;
  history_index& operator=(const history_index&) = delete;

  /// Indexes one stored event of this tenant: true if it is history (see
  /// above), false if it is passed over. Errors: out_of_range (an event of
  /// another tenant: nothing is indexed), corrupt_data (a history event
  /// whose data does not have its shape), storage_failure.
  result<bool> index(const event_record& ev);

  /// Queues one live event for the next flush; true when `batch_events`
  /// wait (flush now).
  bool queue(event_record ev);
  /// Events queued and not yet indexed.
  std::size_t queued() const noexcept;
  /// Indexes the queued events in the order queued (as index() would, one
  /// by one). An event that does not index is left out; the log says how
  /// many and why the first one did not.
  history_flush_report flush();

  const std::string& tenant_id() const noexcept;
  const history_options& options() const noexcept;
  /// Records held (turns, tool rounds, runs), queued ones not counted.
  result<std::size_t> size() const;

  /// The newest runs by start time, newest first (run id breaking ties), at
  /// most `limit` and history_options::recent_runs. A run whose start the
  /// index never saw is not listed, nor one still queued (flush() first).
  std::vector<recent_run> recent_runs(std::size_t limit) const;

  /// On disk: writes pending changes to the index's files now (after a
  /// rebuild, say; they are written every fulltext_options::commit_every
  /// changes anyway).
  [[nodiscard]] status commit();

  /// The full-text index under the history (the tools read it).
  const fulltext_index& text() const noexcept;

private:
  struct impl;
  explicit history_index(std::unique_ptr<impl> self);
  std::unique_ptr<impl> self_;
};

struct history_rebuild_report {
  uint64_t events = 0;  ///< events read from the chat and run streams
  uint64_t indexed = 0; ///< of which history
  uint64_t skipped = 0; ///< history events whose data did not decode (left out)
};

/// Indexes every event of the tenant's chat and run streams in `db`, read
/// in pages of `page_events`. A history event whose data does not decode is
/// counted and left out. Errors: the store's or the index's.
result<history_rebuild_report> rebuild_history(history_index& index, const event_db& db,
                                               uint32_t page_events = 4096);

/// search_agent_history {query, limit?}: flushes what is queued, then
/// answers up to `limit` (default options().default_limit) excerpts, best
/// first, each with its evidence id, kind ("transcript", "tool_activity",
/// "run"), chat and run id, time (UTC, ISO 8601), and the field it comes
/// from. Errors: out_of_range (the query bounds), unavailable (the index
/// failed).
tool_outcome search_agent_history(history_index& index, const tool_context& ctx,
                                  const nlohmann::json& args);

/// read_agent_history {evidence_id}: flushes what is queued, then answers
/// the citation and the context around it on the same chat or run, in
/// stream order, within max_read_bytes (`more_before` / `more_after` say
/// whether neighbours were left out, `truncated` whether the cited entry was
/// cut). Errors: not_found (an id that is malformed or not in this tenant's
/// index), unavailable.
tool_outcome read_agent_history(history_index& index, const tool_context& ctx,
                                const nlohmann::json& args);

} // namespace voxos
