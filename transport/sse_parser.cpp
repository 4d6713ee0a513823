#include "transport/sse_parser.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace voxos {

namespace {

constexpr char utf8_bom[] = "\xEF\xBB\xBF";
constexpr uint8_t utf8_bom_size = 3;

// A line buffer that grew past this for one long line is released when the
// line ends, so a quiet stream does not keep a megabyte per parser.
constexpr std::size_t kept_line_capacity = std::size_t{64} << 10;

/// Finds line ends (CR or LF) in one chunk in linear time overall: the next
/// position of each byte is searched again only once the parse has passed it.
class line_end_finder {
public:
  explicit line_end_finder(const char* end) : end_(end) {}

  /// The first CR or LF at or after `pos`, or the chunk's end.
  const char* next(const char* pos) {
    if (next_lf_ == nullptr || next_lf_ < pos)
      next_lf_ = find(pos, '\n');
    if (next_cr_ == nullptr || next_cr_ < pos)
      next_cr_ = find(pos, '\r');
    return std::min(next_lf_, next_cr_);
  }

private:
  const char* find(const char* pos, char wanted) const {
    const void* hit = std::memchr(pos, wanted, static_cast<std::size_t>(end_ - pos));
    return hit != nullptr ? static_cast<const char*>(hit) : end_;
  }

  const char* end_;
  const char* next_lf_ = nullptr;
  const char* next_cr_ = nullptr;
};

/// Appends `bytes` to `buffer`, growing its capacity at most to `limit`.
/// Precondition: buffer.size() + bytes.size() <= limit. (libstdc++'s
/// reserve() on a non-empty string may still double past the requested size,
/// so growth goes through a fresh string, reserved exactly.)
void append_bounded(std::string& buffer, std::string_view bytes, std::size_t limit) {
  auto needed = buffer.size() + bytes.size();
  if (needed > buffer.capacity()) {
    std::string grown;
    grown.reserve(std::min(std::max(needed, 2 * buffer.capacity()), limit));
    grown.append(buffer);
    buffer.swap(grown);
  }
  buffer.append(bytes);
}

/// Empties `buffer`, releasing its memory if one long line made it large.
void clear_line_buffer(std::string& buffer) {
  if (buffer.capacity() > kept_line_capacity)
    std::string{}.swap(buffer);
  else
    buffer.clear();
}

/// The `retry` value in ms: only ASCII digits, at most 2^32-1.
std::optional<uint32_t> parse_retry(std::string_view value) {
  if (value.empty())
    return std::nullopt;
  uint64_t ms = 0;
  for (char ch : value) {
    if (ch < '0' || ch > '9')
      return std::nullopt;
    ms = ms * 10 + static_cast<uint64_t>(ch - '0');
    if (ms > std::numeric_limits<uint32_t>::max())
      return std::nullopt;
  }
  return static_cast<uint32_t>(ms);
}

} // namespace

sse_parser::sse_parser(event_handler on_event, comment_handler on_comment, sse_limits limits)
    : on_event_(std::move(on_event)), on_comment_(std::move(on_comment)), limits_(limits) {}

status sse_parser::feed(std::string_view chunk) {
  if (failure_)
    return *failure_;
  // Stream start: drop one UTF-8 BOM, which may itself arrive split.
  if (!bom_done_) {
    std::size_t used = 0;
    while (used < chunk.size() && !bom_done_) {
      if (chunk[used] == utf8_bom[bom_matched_]) {
        ++used;
        bom_done_ = ++bom_matched_ == utf8_bom_size;
      } else {
        // Not a BOM after all: the bytes matched so far are line content.
        bom_done_ = true;
        consume(std::string_view{utf8_bom, bom_matched_});
      }
    }
    chunk.remove_prefix(used);
  }
  consume(chunk);
  if (failure_)
    return *failure_;
  return status::ok();
}

void sse_parser::restart_stream() {
  bom_matched_ = 0;
  bom_done_ = false;
  after_cr_ = false;
  state_ = line_state::start;
  field_ = field_kind::other;
  line_bytes_ = 0;
  std::string{}.swap(name_);
  std::string{}.swap(value_);
  std::string{}.swap(data_);
  std::string{}.swap(event_type_);
  // Like browsers, a new stream starts from the last event ID already
  // dispatched, so an event without an `id` field keeps it.
  id_buffer_ = last_event_id_;
  block_has_id_ = false;
  block_retry_.reset();
  failure_.reset();
}

std::size_t sse_parser::buffered_bytes() const noexcept {
  return name_.capacity() + value_.capacity() + data_.capacity() + event_type_.capacity()
         + id_buffer_.capacity() + last_event_id_.capacity();
}

void sse_parser::consume(std::string_view bytes) {
  const char* pos = bytes.data();
  const char* end = pos + bytes.size();
  line_end_finder line_ends{end};
  while (pos < end && !failure_) {
    // A LF right after the CR that ended a line ends nothing more.
    if (after_cr_) {
      after_cr_ = false;
      if (*pos == '\n') {
        ++pos;
        continue;
      }
    }
    switch (state_) {
    case line_state::start:
      // First byte of a line: blank line, comment or field name.
      if (*pos == '\r' || *pos == '\n') {
        after_cr_ = *pos == '\r';
        ++pos;
        dispatch();
      } else if (*pos == ':') {
        ++pos;
        state_ = line_state::comment;
        if (!count_line_bytes(1))
          return;
      } else {
        state_ = line_state::name;
      }
      break;
    case line_state::name: {
      // The field name runs to the first colon or to the line end.
      const char* eol = line_ends.next(pos);
      const void* colon = std::memchr(pos, ':', static_cast<std::size_t>(eol - pos));
      const char* stop = colon != nullptr ? static_cast<const char*>(colon) : eol;
      if (!append_line_bytes(name_, {pos, static_cast<std::size_t>(stop - pos)}))
        return;
      pos = stop;
      if (pos == end)
        return; // the name continues in the next chunk
      if (*pos == ':') {
        ++pos;
        if (!count_line_bytes(1))
          return;
        field_ = kind_of(name_);
        state_ = line_state::value_start;
      } else {
        // A line without a colon: the whole line names a field, value empty.
        finish_field(kind_of(name_));
        end_line(*pos++);
      }
      break;
    }
    case line_state::value_start:
      // One space after the colon is not part of the value.
      if (*pos == ' ') {
        ++pos;
        if (!count_line_bytes(1))
          return;
      }
      state_ = line_state::value;
      break;
    case line_state::value:
    case line_state::comment: {
      const char* eol = line_ends.next(pos);
      std::string_view part{pos, static_cast<std::size_t>(eol - pos)};
      bool ok = true;
      if (state_ == line_state::comment || field_ == field_kind::event || field_ == field_kind::id
          || field_ == field_kind::retry)
        ok = append_line_bytes(value_, part);
      else if (field_ == field_kind::data)
        ok = append_data(part);
      else
        ok = count_line_bytes(part.size()); // an ignored field: only its length matters
      if (!ok)
        return;
      pos = eol;
      if (pos == end)
        return; // the line continues in the next chunk
      if (state_ == line_state::comment) {
        ++comments_;
        if (on_comment_)
          on_comment_(value_);
      } else {
        finish_field(field_);
      }
      end_line(*pos++);
      break;
    }
    }
  }
}

void sse_parser::end_line(char terminator) {
  after_cr_ = terminator == '\r';
  state_ = line_state::start;
  field_ = field_kind::other;
  line_bytes_ = 0;
  clear_line_buffer(name_);
  clear_line_buffer(value_);
}

sse_parser::field_kind sse_parser::kind_of(std::string_view name) noexcept {
  if (name == "data")
    return field_kind::data;
  if (name == "event")
    return field_kind::event;
  if (name == "id")
    return field_kind::id;
  if (name == "retry")
    return field_kind::retry;
  return field_kind::other;
}

void sse_parser::finish_field(field_kind kind) {
  switch (kind) {
  case field_kind::data:
    // Each data line's value is followed by a LF; dispatch drops the last.
    append_data("\n");
    break;
  case field_kind::event:
    event_type_.swap(value_);
    break;
  case field_kind::id:
    // An id holding a NUL is ignored whole; an empty one resets the ID.
    if (value_.find('\0') == std::string::npos) {
      id_buffer_.swap(value_);
      block_has_id_ = true;
    }
    break;
  case field_kind::retry:
    if (auto ms = parse_retry(value_)) {
      reconnection_ms_ = ms;
      block_retry_ = ms;
    }
    break;
  case field_kind::other:
    break;
  }
}

void sse_parser::dispatch() {
  // The last event ID moves even when no event is emitted.
  last_event_id_ = id_buffer_;
  auto block_has_id = std::exchange(block_has_id_, false);
  auto block_retry = std::exchange(block_retry_, std::nullopt);
  if (data_.empty()) {
    event_type_.clear();
    return;
  }
  if (data_.back() == '\n')
    data_.pop_back(); // the LF after the last data line
  sse_event event;
  event.event = event_type_.empty() ? std::string{"message"} : std::move(event_type_);
  event.data = std::move(data_);
  event.id = last_event_id_;
  event.has_id = block_has_id;
  event.retry_ms = block_retry;
  data_.clear();
  event_type_.clear();
  if (on_event_)
    on_event_(std::move(event));
}

bool sse_parser::fail(std::string message) {
  failure_ = status::error(errc::body_too_large, std::move(message));
  return false;
}

bool sse_parser::count_line_bytes(std::size_t count) {
  if (count > limits_.max_line_bytes - line_bytes_)
    return fail("event stream line longer than " + std::to_string(limits_.max_line_bytes)
                + " bytes");
  line_bytes_ += count;
  return true;
}

bool sse_parser::append_line_bytes(std::string& buffer, std::string_view bytes) {
  if (!count_line_bytes(bytes.size()))
    return false;
  append_bounded(buffer, bytes, limits_.max_line_bytes);
  return true;
}

bool sse_parser::append_data(std::string_view bytes) {
  if (bytes.size() > limits_.max_event_bytes - data_.size())
    return fail("event stream event with more than " + std::to_string(limits_.max_event_bytes)
                + " bytes of data");
  append_bounded(data_, bytes, limits_.max_event_bytes);
  return true;
}

std::string sse_event_text(std::string_view data, std::string_view event, std::string_view id) {
  std::string text;
  text.reserve(data.size() + event.size() + id.size() + 24);
  if (!id.empty()) {
    text += "id: ";
    text += id;
    text += '\n';
  }
  text += "event: ";
  text += event;
  text += "\ndata: ";
  for (std::size_t pos = 0; pos < data.size(); ++pos) {
    char ch = data[pos];
    if (ch == '\r' || ch == '\n') {
      if (ch == '\r' && pos + 1 < data.size() && data[pos + 1] == '\n')
        ++pos;
      text += "\ndata: ";
    } else {
      text += ch;
    }
  }
  text += "\n\n";
  return text;
}

} // namespace voxos
