#include "transport/request_head.hpp"

namespace voxos {

head_verdict request_head_scanner::feed(char byte) noexcept {
  if (verdict_ != head_verdict::reading)
    return verdict_;
  ++bytes_;
  if (byte == '\0')
    return verdict_ = head_verdict::nul_byte;
  if (bytes_ > limits_.max_bytes)
    return verdict_ = lines_ == 0 ? head_verdict::request_line_long : head_verdict::too_many_bytes;
  if (byte != '\n') {
    ++line_bytes_;
    after_cr_ = byte == '\r';
    return verdict_;
  }
  // A line ends. After the request line, CR LF alone ends the head.
  const bool blank = line_bytes_ == 1 && after_cr_;
  line_bytes_ = 0;
  after_cr_ = false;
  if (lines_ > 0 && blank)
    return verdict_ = head_verdict::complete;
  // Header lines beyond the request line; the one past the bound refuses.
  if (++lines_ > limits_.max_lines + 1)
    verdict_ = head_verdict::too_many_lines;
  return verdict_;
}

void request_head_scanner::reset() noexcept {
  verdict_ = head_verdict::reading;
  bytes_ = 0;
  lines_ = 0;
  line_bytes_ = 0;
  after_cr_ = false;
}

} // namespace voxos
