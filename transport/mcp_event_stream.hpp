// A resumable SSE stream of a 2025-11-25 session (a call's POST stream, or
// the session's GET stream): its events numbered, the last of them kept for a
// client that lost the connection and asks (GET with Last-Event-ID) for those
// after the last one it saw. Part of mcp_server; CAF-free.
//
// An event id is "<stream>-<seq>": the stream's number (unique within its
// session) and the event's place in it, from 1; seq 0 is the stream's
// priming event, which carries no message. At most one connection reads a
// stream at a time; one that resumes it takes over from the one before.
//
//   open --finish(response)--> finished --response read--> (forgotten by the session)
//   open | finished --close()--> closed (the session ended, the server stops, or it was dropped)
//
// Bounds: the last `replay` events are kept; a reader whose next event was
// dropped meanwhile is cut off (it cannot be given every event in order).
//
// Threading: every member may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace voxos {

/// A Last-Event-ID this server issued, read back: stream number and seq.
struct mcp_event_position {
  uint64_t stream = 0;
  uint64_t seq = 0;
};

/// "<stream>-<seq>" parsed (decimal, no sign, no leading zeros but "0");
/// nullopt for anything else.
std::optional<mcp_event_position> mcp_parse_event_id(std::string_view id);

/// The SSE text of a stream's priming event: its id, the `retry` the client
/// should wait before reconnecting, and empty data.
std::string mcp_priming_event_text(std::string_view id, std::chrono::milliseconds retry);

class mcp_event_stream {
public:
  struct event {
    uint64_t seq = 0;
    std::string message;
  };
  /// What a reader gets: events in order, and whether it may read on.
  struct batch {
    std::vector<event> events;
    /// The stream is finished and its last event is the last in `events`
    /// (or was read before): the reader is done once it wrote them.
    bool ended = false;
    /// The reader may not read on: another took over, the stream closed,
    /// or the events after its cursor are no longer kept.
    bool cut = false;
  };
  /// Why a position cannot be resumed.
  enum class resume_refusal : uint8_t { none, unknown_event, no_longer_kept };

  mcp_event_stream(uint64_t number, std::size_t replay) : number_(number), replay_(replay) {}

  uint64_t number() const noexcept { return number_; }
  std::string event_id(uint64_t seq) const;

  /// Appends `message` as the next event; false once finished or closed.
  bool send(std::string message);
  /// Appends the stream's last event (a call's response); false as send().
  bool finish(std::string message);
  void close();
  bool closed() const;

  /// Makes a new reader the stream's only one; its token.
  uint64_t attach();
  /// The reader leaves (if it is still the stream's).
  void detach(uint64_t reader);
  bool has_reader() const;
  /// Whether a reader may resume after `seq` (checked before it attaches).
  resume_refusal can_resume(uint64_t seq) const;
  /// The events after `cursor`, waiting up to `wait` for one.
  batch read(uint64_t reader, uint64_t cursor, std::chrono::milliseconds wait);

private:
  /// What `reader` may read after `cursor` now; mutex_ held.
  batch take(uint64_t reader, uint64_t cursor) const;

  const uint64_t number_;
  const std::size_t replay_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<event> kept_;
  uint64_t last_seq_ = 0;
  uint64_t reader_ = 0; ///< the reading connection's token; 0: none
  uint64_t next_reader_ = 0;
  bool finished_ = false;
  bool closed_ = false;
};

} // namespace voxos
