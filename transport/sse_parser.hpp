// Incremental parser for `text/event-stream` bodies (WHATWG HTML, "Server-sent
// events", event stream interpretation), as MCP Streamable HTTP and the legacy
// HTTP+SSE transport use them. CAF-free, no I/O.
//
// Rules followed: one leading UTF-8 BOM is dropped; lines end at CRLF, LF or
// CR (a CRLF split across two feeds is still one line end); a line starting
// with ':' is a comment; `name:value` drops one space after the colon, a line
// without a colon is a field with an empty value; `event` sets the type,
// `data` appends its value and a LF to the data buffer, `id` sets the last
// event ID unless the value holds a NUL, `retry` sets the reconnection time
// if the value is only ASCII digits; other fields are ignored. A blank line
// dispatches: the last event ID is updated, then an event is emitted unless
// the data buffer is empty (one trailing LF removed, type "message" when no
// `event` field was given). An event still open when the stream ends is never
// emitted.
//
// Deliberate differences from a browser: bytes are not UTF-8 decoded (invalid
// sequences reach the caller unchanged; the JSON-RPC layer refuses them
// rather than seeing U+FFFD), and a `retry` value above 2^32-1 ms is ignored.
//
// Bounds (see sse_limits): the data buffer never holds more than
// max_event_bytes and no other buffer more than max_line_bytes, however the
// input is split, including a single 100 MB line fed in small chunks.
// Exceeding a bound fails with errc::body_too_large; the parser then stops
// (see feed()).
//
// Threading: none. One parser per stream, used from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "messages/status.hpp"

namespace voxos {

/// One dispatched event.
struct sse_event {
  /// The `event` field, or "message" when the event had none.
  std::string event;
  /// The `data` lines joined with '\n'. May be empty: `data:` followed by a
  /// blank line is dispatched (MCP servers send such priming events, carrying
  /// only an id). Callers should not parse an empty `data` as JSON.
  std::string data;
  /// The last event ID as of this event: the value of this event's own `id`
  /// field if it had one, else the one inherited from earlier events
  /// (possibly empty). This is what a reconnect sends as Last-Event-ID.
  std::string id;
  /// True if this event itself carried a (valid, NUL-free) `id` field.
  bool has_id = false;
  /// The `retry` field of this event, if it carried a valid one.
  std::optional<uint32_t> retry_ms;
};

struct sse_limits {
  /// Longest line other than a `data` line, in bytes without its line end
  /// (field name, colon and value; comments included). 1 MiB.
  std::size_t max_line_bytes = std::size_t{1} << 20;
  /// Largest data buffer of one event: every `data` value plus the '\n'
  /// after each, in bytes. A `data` line's value streams straight into this
  /// buffer, so one JSON-RPC message on a single `data` line (what MCP
  /// servers send) may be this large. 8 MiB.
  std::size_t max_event_bytes = std::size_t{8} << 20;
};

/// One event as a server writes it: `id: <id>` when `id` is not empty (it
/// must hold no CR, LF or NUL), `event: <event>`, then each line of `data`
/// as a `data:` line (a CR, LF or CRLF in `data` starts a new one), then the
/// blank line that dispatches it.
std::string sse_event_text(std::string_view data, std::string_view event = "message",
                           std::string_view id = {});

/// A comment line and blank line: a keepalive no client dispatches.
inline constexpr std::string_view sse_keepalive_text = ":\n\n";

class sse_parser {
public:
  /// Receives each dispatched event. Called from inside feed(); it must not
  /// throw, nor call feed() or restart_stream() on the same parser (the same
  /// holds for the comment handler).
  using event_handler = std::function<void(sse_event&&)>;
  /// Receives the text after the ':' of each comment line (usually a
  /// keepalive). A comment is never an event: callers may count it as a sign
  /// of life of the connection, never as progress on a request.
  using comment_handler = std::function<void(std::string_view)>;

  explicit sse_parser(event_handler on_event, comment_handler on_comment = {},
                      sse_limits limits = {});

  /// Parses the next bytes of the stream; a chunk may end anywhere (inside a
  /// line, between CR and LF, inside the BOM). Emits complete events through
  /// the handlers before returning. Errors: body_too_large when a non-data
  /// line exceeds max_line_bytes or an event's data exceeds
  /// max_event_bytes. After an error the parser has stopped: every later
  /// feed() returns the same error and emits nothing, until restart_stream().
  status feed(std::string_view chunk);

  /// Starts a new stream (a reconnect, a new HTTP response): drops any
  /// partial line and undispatched event, allows a BOM again and clears a
  /// stopped state. Keeps the last event ID and the reconnection time.
  void restart_stream();

  /// The last event ID, updated at each dispatch (blank line), even when no
  /// event is emitted. Empty if none was set, or if the server reset it with
  /// an empty `id` field: then no Last-Event-ID should be sent.
  const std::string& last_event_id() const noexcept { return last_event_id_; }

  /// The reconnection time from the latest valid `retry` field, in ms, if any
  /// was seen. Updated as soon as the field is read.
  std::optional<uint32_t> reconnection_time_ms() const noexcept { return reconnection_ms_; }

  /// Comment lines seen since construction.
  uint64_t comment_count() const noexcept { return comments_; }

  /// True once a bound was exceeded (until restart_stream()).
  bool stopped() const noexcept { return failure_.has_value(); }

  /// Bytes currently reserved by the parser's buffers (string capacities):
  /// at most max_event_bytes for the data buffer plus max_line_bytes for each
  /// of the current line, the event type, the ID buffer and the last event ID.
  std::size_t buffered_bytes() const noexcept;

private:
  enum class line_state : uint8_t { start, name, value_start, value, comment };
  enum class field_kind : uint8_t { data, event, id, retry, other };

  static field_kind kind_of(std::string_view name) noexcept;

  /// Runs the line state machine over `bytes` (the BOM already handled).
  void consume(std::string_view bytes);
  void end_line(char terminator);
  /// Applies the field whose line just ended (its value is in value_, or
  /// already in data_ for a data field).
  void finish_field(field_kind kind);
  void dispatch();
  /// Records a body_too_large failure; returns false.
  bool fail(std::string message);
  /// Counts `count` more bytes of a non-data line against max_line_bytes.
  bool count_line_bytes(std::size_t count);
  bool append_line_bytes(std::string& buffer, std::string_view bytes);
  bool append_data(std::string_view bytes);

  event_handler on_event_;
  comment_handler on_comment_;
  sse_limits limits_;

  // Stream start: how many bytes of a UTF-8 BOM have been matched so far;
  // bom_done_ once the BOM was dropped or found absent.
  uint8_t bom_matched_ = 0;
  bool bom_done_ = false;
  // The previous byte was a CR that ended a line: a LF now ends nothing.
  bool after_cr_ = false;

  // The line being read.
  line_state state_ = line_state::start;
  field_kind field_ = field_kind::other;
  std::size_t line_bytes_ = 0; ///< bytes of the current line so far
  std::string name_;           ///< field name, while state_ == name
  std::string value_;          ///< value of a non-data field, or comment text

  // The event being built (the spec's buffers).
  std::string data_;
  std::string event_type_;
  std::string id_buffer_;
  bool block_has_id_ = false;
  std::optional<uint32_t> block_retry_;

  // Stream state that survives restart_stream().
  std::string last_event_id_;
  std::optional<uint32_t> reconnection_ms_;
  uint64_t comments_ = 0;

  std::optional<status> failure_;
};

} // namespace voxos
