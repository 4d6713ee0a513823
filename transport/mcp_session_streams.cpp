// The resumable streams of 2025-11-25 sessions (mcp_server.hpp,
// mcp_event_stream.hpp): a call's stream written on the POST connection that
// opened it, and a session's GET, which opens its stream anew or resumes one
// after a Last-Event-ID.
#include "transport/mcp_server_state.hpp"

#include <utility>

#include "transport/sse_parser.hpp"

namespace voxos {

using namespace mcp_detail;

namespace {

/// Writes a session stream's events on the POST connection that opened it,
/// for as long as that connection is the stream's reader: until the call's
/// response went out, the handler ended the connection (close_stream), the
/// connection failed, or a resuming GET took the stream over. Its members
/// may be called from the handler's threads; one mutex orders them.
class post_stream_writer {
public:
  /// `delivered` runs once the stream's last event went out, before the
  /// response ends.
  post_stream_writer(httplib::DataSink& sink, mcp_event_stream& stream,
                     std::function<void()> delivered)
      : sink_(sink), stream_(stream), reader_(stream.attach()),
        on_delivered_(std::move(delivered)) {}

  /// The priming event: the id to resume from, and `retry`.
  void prime(std::chrono::milliseconds retry) {
    std::lock_guard lock{mutex_};
    if (!write(mcp_priming_event_text(stream_.event_id(0), retry)))
      lose();
  }
  /// Writes what the stream holds past what this connection wrote.
  void flush() {
    std::lock_guard lock{mutex_};
    if (!open_)
      return;
    auto batch = stream_.read(reader_, cursor_, std::chrono::milliseconds(0));
    if (batch.cut) {
      end();
      return;
    }
    for (const auto& event : batch.events) {
      if (!write(sse_event_text(event.message, "message", stream_.event_id(event.seq)))) {
        lose();
        return;
      }
      cursor_ = event.seq;
    }
    if (batch.ended) {
      delivered_ = true;
      on_delivered_();
      end();
    }
  }
  /// Ends the connection, not the stream.
  void cut() {
    std::lock_guard lock{mutex_};
    end();
  }
  /// True once the stream's last event went out on this connection.
  bool delivered() const {
    std::lock_guard lock{mutex_};
    return delivered_;
  }

private:
  bool write(const std::string& text) { return sink_.write(text.data(), text.size()); }
  /// The response ends here (the terminating chunk); mutex_ held.
  void end() {
    if (!open_)
      return;
    sink_.done();
    open_ = false;
    stream_.detach(reader_);
  }
  /// The connection failed: nothing more is written on it; mutex_ held.
  void lose() {
    open_ = false;
    stream_.detach(reader_);
  }

  httplib::DataSink& sink_;
  mcp_event_stream& stream_;
  const uint64_t reader_;
  std::function<void()> on_delivered_;
  mutable std::mutex mutex_;
  uint64_t cursor_ = 0;
  bool open_ = true;
  bool delivered_ = false;
};

/// Serves a session stream on a GET connection until the stream's last
/// event went out, the reader is cut off (another took over, the stream
/// closed, or it fell behind), the client leaves, or the server stops.
/// `first` goes out first (the priming event, or a keepalive comment).
bool pump_events(mcp_server_state& state, httplib::DataSink& sink, mcp_session& session,
                 mcp_event_stream& stream, uint64_t reader, uint64_t cursor,
                 const std::string& first) {
  auto write = [&sink](std::string_view text) { return sink.write(text.data(), text.size()); };
  if (!write(first))
    return false;
  idle_clock idle{state.options.keepalive};
  while (!state.stopping) {
    auto batch = stream.read(reader, cursor, mcp_liveness_slice);
    for (const auto& event : batch.events) {
      if (!write(sse_event_text(event.message, "message", stream.event_id(event.seq))))
        return false;
      cursor = event.seq;
    }
    if (batch.ended) {
      session.forget_stream(stream.number()); // read to its end
      break;
    }
    if (batch.cut)
      break;
    if (!idle.tick(!batch.events.empty(), write) || !sink.is_writable())
      return false;
  }
  sink.done();
  return true;
}

} // namespace

namespace mcp_detail {

/// 2025-11-25: the call answered as a resumable stream of its session.
void answer_session_stream(const std::shared_ptr<mcp_server_state>& state_ptr,
                           std::shared_ptr<mcp_call_parts> parts,
                           std::shared_ptr<std::atomic<bool>> cancelled,
                           std::function<void()> forget, httplib::Response& res) {
  auto session = std::get<0>(*parts).session;
  auto stream = session->open_stream(state_ptr->options.stream_replay);
  res.status = 200;
  set_stream_headers(res);
  // The call may end its response before its end (close_stream): no other
  // request may then wait behind it on this connection.
  res.set_header("Connection", "close");
  res.set_chunked_content_provider(
    "text/event-stream",
    [state_ptr, parts, cancelled, session, stream](std::size_t, httplib::DataSink& sink) {
      auto& [call_info, call_spec, call_id, responses, call_state] = *parts;
      const auto& options = state_ptr->options;
      // Read to its end: nothing is left to resume.
      post_stream_writer writer{sink, *stream,
                                [session, stream] { session->forget_stream(stream->number()); }};
      writer.prime(options.stream_retry);
      mcp_call_channel channel;
      channel.write = [&writer, stream](const std::string& message) {
        if (!stream->send(message))
          return false;
        writer.flush();
        return true;
      };
      // Losing the connection is not cancelling: the client may resume.
      channel.gone = [state_ptr, session, stream] {
        return state_ptr->stopping || session->ended() || stream->closed();
      };
      auto ctx = mcp_call_run::context(call_info, channel, cancelled);
      mcp_call_run::set_input(ctx, std::move(responses), std::move(call_state));
      mcp_call_run::set_close_stream(ctx, [&writer, session, &options] {
        writer.cut();
        session->trim_detached(options.max_detached_streams);
      });
      auto final_text = run_call(state_ptr, call_info, call_spec, call_id, ctx, channel);
      stream->finish(std::move(final_text));
      writer.flush();
      if (writer.delivered())
        return true;
      // Kept for a GET that resumes it; the connection closes.
      session->trim_detached(options.max_detached_streams);
      return false;
    },
    [forget](bool) { forget(); });
}

/// A session's GET: its stream opened anew, or (with Last-Event-ID) one of
/// its streams resumed after that event.
void open_session_stream(const std::shared_ptr<mcp_server_state>& state_ptr,
                         const std::shared_ptr<mcp_session>& session, const httplib::Request& req,
                         httplib::Response& res) {
  auto& state = *state_ptr;
  std::shared_ptr<mcp_event_stream> stream;
  uint64_t cursor = 0;
  if (auto last_event = header_of(req, "Last-Event-ID")) {
    auto position = mcp_parse_event_id(*last_event);
    stream = position ? session->stream(position->stream) : nullptr;
    auto refusal =
      stream ? stream->can_resume(position->seq) : mcp_event_stream::resume_refusal::unknown_event;
    if (refusal == mcp_event_stream::resume_refusal::unknown_event) {
      answer_error(res, 400, std::nullopt, mcp_code::invalid_request,
                   "Bad Request: Last-Event-ID names no event of a stream of this session that "
                   "can be resumed");
      return;
    }
    if (refusal == mcp_event_stream::resume_refusal::no_longer_kept) {
      answer_error(res, 400, std::nullopt, mcp_code::invalid_request,
                   "Bad Request: the events after Last-Event-ID are no longer kept");
      return;
    }
    cursor = position->seq;
  }
  if (!state.acquire_stream()) {
    answer_error(res, 503, std::nullopt, mcp_code::internal_error,
                 "too many open streams; try again later");
    return;
  }
  const bool resumed = stream != nullptr;
  if (!resumed)
    stream = session->open_get_stream(state.options.stream_replay);
  if (!stream) {
    state.release_stream();
    answer_error(res, 409, std::nullopt, mcp_code::invalid_request,
                 "Conflict: this session's stream is already open");
    return;
  }
  // Attached now: a resumed stream's former reader stops at once.
  auto reader = stream->attach();
  auto first = resumed ? std::string{sse_keepalive_text}
                       : mcp_priming_event_text(stream->event_id(0), state.options.stream_retry);
  res.status = 200;
  set_stream_headers(res);
  res.set_chunked_content_provider(
    "text/event-stream",
    [state_ptr, session, stream, reader, cursor, first](std::size_t, httplib::DataSink& sink) {
      return pump_events(*state_ptr, sink, *session, *stream, reader, cursor, first);
    },
    [state_ptr, session, stream, reader](bool) {
      stream->detach(reader);
      session->trim_detached(state_ptr->options.max_detached_streams);
      state_ptr->release_stream();
    });
}

} // namespace mcp_detail

} // namespace voxos
