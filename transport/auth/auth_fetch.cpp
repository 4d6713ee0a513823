#include "transport/auth/auth_fetch.hpp"

#include "transport/ascii.hpp"
#include "transport/url_policy.hpp"

namespace voxos::auth {

namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

bool is_unreserved(unsigned char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')
         || ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

std::string encode(std::string_view text, bool space_as_plus) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char ch : text) {
    if (is_unreserved(ch)) {
      out += static_cast<char>(ch);
    } else if (ch == ' ' && space_as_plus) {
      out += '+';
    } else {
      out += '%';
      out += hex_digits[ch >> 4];
      out += hex_digits[ch & 0x0F];
    }
  }
  return out;
}

int hex_value(char ch) {
  if (ch >= '0' && ch <= '9')
    return ch - '0';
  if (ch >= 'a' && ch <= 'f')
    return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F')
    return ch - 'A' + 10;
  return -1;
}

std::string decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size(); ++pos) {
    char ch = text[pos];
    if (ch == '+') {
      out += ' ';
    } else if (ch == '%' && pos + 2 < text.size() && hex_value(text[pos + 1]) >= 0
               && hex_value(text[pos + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[pos + 1]) * 16 + hex_value(text[pos + 2]));
      pos += 2;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string media_type(std::string_view content_type) {
  auto semi = content_type.find(';');
  return ascii_lowered(trim_ows(content_type.substr(0, semi)));
}

} // namespace

std::string form_encode(const form_fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty())
      out += '&';
    out += encode(name, true);
    out += '=';
    out += encode(value, true);
  }
  return out;
}

std::string percent_encode(std::string_view text) {
  return encode(text, false);
}

form_fields form_decode(std::string_view text) {
  form_fields out;
  while (!text.empty()) {
    auto amp = text.find('&');
    auto part = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (part.empty())
      continue;
    auto eq = part.find('=');
    if (eq == std::string_view::npos)
      out.emplace_back(decode(part), std::string{});
    else
      out.emplace_back(decode(part.substr(0, eq)), decode(part.substr(eq + 1)));
  }
  return out;
}

auth_fetcher::auth_fetcher(std::shared_ptr<const url_policy> policy, auth_fetch_options opts)
    : policy_(std::move(policy)), opts_(std::move(opts)) {}

result<auth_reply> auth_fetcher::get(const std::string& url,
                                     const http_header_list& headers) const {
  return send("GET", url, headers, nullptr, {}, false);
}

result<auth_reply> auth_fetcher::post_form(const std::string& url, const form_fields& fields,
                                           const http_header_list& headers) const {
  auto body = form_encode(fields);
  return send("POST", url, headers, &body, "application/x-www-form-urlencoded", false);
}

result<auth_reply> auth_fetcher::post_json(const std::string& url, const std::string& json,
                                           const http_header_list& headers) const {
  return send("POST", url, headers, &json, "application/json", false);
}

result<auth_reply> auth_fetcher::get_redirect(const std::string& url) const {
  return send("GET", url, {}, nullptr, {}, true);
}

result<auth_reply> auth_fetcher::send(const std::string& method, const std::string& url,
                                      const http_header_list& headers, const std::string* body,
                                      const std::string& content_type, bool allow_redirect) const {
  // The URL policy: purpose "oauth", or a URL registered for "mcp".
  auto checked = policy_->check(url, "oauth");
  if (!checked) {
    auto as_mcp = policy_->check(url, "mcp");
    if (!as_mcp || !as_mcp->registered)
      return checked.error();
    checked = std::move(as_mcp);
  }
  auto addrs = resolve(checked->url.host, checked->url.port);
  if (!addrs)
    return addrs.error();
  http_client::options opts;
  opts.connect_timeout = std::min(opts.connect_timeout, opts_.timeout);
  opts.read_timeout = opts_.timeout;
  opts.total_deadline = opts_.timeout;
  opts.max_body_bytes = opts_.max_body_bytes;
  opts.keep_alive = false;
  opts.ca_file = opts_.ca_file;
  opts.refuse_redirects = !allow_redirect;
  auto client = http_client::create(*policy_, *checked, std::move(*addrs), opts);
  if (!client)
    return client.error();
  http_header_list all = headers;
  if (body != nullptr)
    all.emplace_back("Accept", "application/json");
  auth_reply out;
  auto sink = [&out](std::string_view piece) {
    out.body.append(piece);
    return true;
  };
  const auto& path = checked->url.path_and_query;
  result<http_response> answered = method == "GET"
                                     ? (*client)->get(path, all, sink)
                                     : (*client)->post(path, all, *body, content_type, sink, false);
  if (!answered)
    return answered.error();
  out.status = answered->status;
  out.content_type = media_type(answered->header("content-type"));
  out.location = answered->header("location");
  out.www_authenticate = answered->header("www-authenticate");
  return out;
}

} // namespace voxos::auth
