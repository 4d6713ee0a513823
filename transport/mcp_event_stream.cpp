#include "transport/mcp_event_stream.hpp"

#include <limits>

namespace voxos {

namespace {

/// A decimal number without sign or leading zeros ("0" itself allowed).
std::optional<uint64_t> decimal(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  uint64_t value = 0;
  for (char ch : text) {
    if (ch < '0' || ch > '9')
      return std::nullopt;
    auto digit = static_cast<uint64_t>(ch - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

} // namespace

std::optional<mcp_event_position> mcp_parse_event_id(std::string_view id) {
  auto dash = id.find('-');
  if (dash == std::string_view::npos)
    return std::nullopt;
  auto stream = decimal(id.substr(0, dash));
  auto seq = decimal(id.substr(dash + 1));
  if (!stream || !seq)
    return std::nullopt;
  return mcp_event_position{*stream, *seq};
}

std::string mcp_priming_event_text(std::string_view id, std::chrono::milliseconds retry) {
  std::string text = "id: ";
  text += id;
  text += "\nretry: ";
  text += std::to_string(retry.count());
  text += "\ndata: \n\n";
  return text;
}

std::string mcp_event_stream::event_id(uint64_t seq) const {
  return std::to_string(number_) + "-" + std::to_string(seq);
}

bool mcp_event_stream::send(std::string message) {
  std::lock_guard lock{mutex_};
  if (finished_ || closed_)
    return false;
  kept_.push_back({++last_seq_, std::move(message)});
  while (kept_.size() > replay_)
    kept_.pop_front();
  changed_.notify_all();
  return true;
}

bool mcp_event_stream::finish(std::string message) {
  std::lock_guard lock{mutex_};
  if (finished_ || closed_)
    return false;
  kept_.push_back({++last_seq_, std::move(message)});
  // The response is the one event a reader must get: it stays however many
  // came before.
  while (kept_.size() > replay_ && kept_.size() > 1)
    kept_.pop_front();
  finished_ = true;
  changed_.notify_all();
  return true;
}

void mcp_event_stream::close() {
  std::lock_guard lock{mutex_};
  closed_ = true;
  changed_.notify_all();
}

bool mcp_event_stream::closed() const {
  std::lock_guard lock{mutex_};
  return closed_;
}

uint64_t mcp_event_stream::attach() {
  std::lock_guard lock{mutex_};
  reader_ = ++next_reader_;
  changed_.notify_all(); // the reader before, if waiting, sees it was cut
  return reader_;
}

void mcp_event_stream::detach(uint64_t reader) {
  std::lock_guard lock{mutex_};
  if (reader_ == reader)
    reader_ = 0;
}

bool mcp_event_stream::has_reader() const {
  std::lock_guard lock{mutex_};
  return reader_ != 0;
}

mcp_event_stream::resume_refusal mcp_event_stream::can_resume(uint64_t seq) const {
  std::lock_guard lock{mutex_};
  if (seq > last_seq_)
    return resume_refusal::unknown_event;
  // Every event after `seq` must still be kept.
  if (seq < last_seq_ && (kept_.empty() || kept_.front().seq > seq + 1))
    return resume_refusal::no_longer_kept;
  return resume_refusal::none;
}

mcp_event_stream::batch mcp_event_stream::read(uint64_t reader, uint64_t cursor,
                                               std::chrono::milliseconds wait) {
  std::unique_lock lock{mutex_};
  changed_.wait_for(lock, wait, [&] { return closed_ || reader_ != reader || last_seq_ > cursor; });
  return take(reader, cursor);
}

mcp_event_stream::batch mcp_event_stream::take(uint64_t reader, uint64_t cursor) const {
  batch out;
  if (closed_ || reader_ != reader) {
    out.cut = true;
    return out;
  }
  if (cursor < last_seq_ && (kept_.empty() || kept_.front().seq > cursor + 1)) {
    out.cut = true; // fell behind: what followed its cursor is gone
    return out;
  }
  for (const auto& kept : kept_)
    if (kept.seq > cursor)
      out.events.push_back(kept);
  out.ended = finished_; // every event after the cursor is in `events`, the last one too
  return out;
}

} // namespace voxos
