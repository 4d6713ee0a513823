#include "transport/auth/www_authenticate.hpp"

#include "transport/ascii.hpp"
#include "transport/http_client.hpp"

namespace voxos::auth {

namespace {

constexpr std::size_t max_header_bytes = 8 * 1024;

bool is_space(char ch) {
  return ch == ' ' || ch == '\t';
}

bool is_token_char(char ch) {
  return is_http_token(std::string_view{&ch, 1});
}

/// A cursor over the header.
struct reader {
  std::string_view text;
  std::size_t pos = 0;

  bool done() const { return pos >= text.size(); }
  char peek() const { return text[pos]; }
  void skip_space() {
    while (!done() && is_space(peek()))
      ++pos;
  }
  /// A token (also token68's characters, '/' '+' '=' in a value).
  std::string_view token(bool token68 = false) {
    auto start = pos;
    while (!done() && (is_token_char(peek()) || (token68 && (peek() == '/' || peek() == '='))))
      ++pos;
    return text.substr(start, pos - start);
  }
  /// A quoted string, unescaped; false on an unterminated one.
  bool quoted(std::string& out) {
    ++pos; // the opening quote
    while (!done()) {
      char ch = text[pos++];
      if (ch == '"')
        return true;
      if (ch == '\\') {
        if (done())
          return false;
        ch = text[pos++];
      }
      out += ch;
    }
    return false;
  }
};

} // namespace

bearer_challenge parse_bearer_challenge(std::string_view header) {
  bearer_challenge out;
  reader in{header.substr(0, max_header_bytes)};
  bool in_bearer = false;
  while (!in.done()) {
    in.skip_space();
    if (!in.done() && in.peek() == ',') {
      ++in.pos;
      continue;
    }
    auto name = in.token();
    if (name.empty())
      return out; // a fault: keep what was read
    in.skip_space();
    if (!in.done() && in.peek() == '=') {
      // A parameter of the current challenge (or a token68 ending in '=').
      ++in.pos;
      in.skip_space();
      std::string value;
      if (!in.done() && in.peek() == '"') {
        if (!in.quoted(value))
          return out;
      } else {
        value = std::string{in.token(true)};
      }
      if (in_bearer) {
        if (equals_ignoring_case(name, "resource_metadata"))
          out.resource_metadata = value;
        else if (equals_ignoring_case(name, "scope")) {
          out.scope = value;
          out.has_scope = true;
        } else if (equals_ignoring_case(name, "error"))
          out.error = value;
      }
      continue;
    }
    // A scheme name starts a challenge: the end of the Bearer one, if read.
    if (in_bearer)
      return out;
    in_bearer = equals_ignoring_case(name, "Bearer");
    if (in_bearer)
      out.present = true;
  }
  return out;
}

} // namespace voxos::auth
