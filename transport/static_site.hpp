// A directory of static files (the web console), read once at start and
// served from memory with fixed security headers. Nothing is read from disk
// per request, so no request path can reach a file outside the set loaded:
// a path is only ever a key of that set.
//
// Loading: regular files of the allowed types (html, js, mjs, css, svg, png,
// ico, json, woff2, txt, map) under the directory, at most `max_files` files
// and `max_bytes` bytes in all; a file `X.gz` beside `X` is X's precompressed
// form, sent (Content-Encoding: gzip) to clients that accept gzip.
//
// Every answer, a 404 included, carries the security headers: a strict
// Content-Security-Policy (scripts, styles, images, fonts and connections from
// the node's own origin only; no inline script, no eval, no framing, no
// plugins), X-Frame-Options: DENY, X-Content-Type-Options: nosniff and
// Referrer-Policy: no-referrer. Files are revalidated on every use
// (Cache-Control: no-cache, with an ETag) so a node upgrade shows at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include <httplib.h>

#include "messages/status.hpp"

namespace voxos {

class static_site {
public:
  struct limits {
    std::size_t max_files = 512;
    std::size_t max_bytes = 16 * 1024 * 1024; ///< 16 MiB, both forms together
  };

  struct file {
    std::string content_type;
    std::string body;
    std::string gzip_body; ///< empty: no precompressed form
    std::string etag;
  };

  /// The Content-Security-Policy every answer carries.
  static constexpr std::string_view content_security_policy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'; object-src 'none'";

  /// Reads `dir` (see above). Fails when it is not a directory, holds no
  /// index.html, or passes a limit.
  static result<static_site> load(const std::string& dir, limits bounds);
  static result<static_site> load(const std::string& dir) { return load(dir, limits{}); }

  /// The file at `path` relative to the directory ("index.html",
  /// "pages/tools.js"), or nullptr.
  const file* find(std::string_view path) const;

  /// Answers `relative` (a path below the directory): the file with its type,
  /// ETag and headers, 304 for a matching If-None-Match, or a 404.
  void serve(std::string_view relative, const httplib::Request& req, httplib::Response& res) const;

  /// Sets the security headers on any answer (also used for the answer when
  /// no console is installed).
  static void set_security_headers(httplib::Response& res);

  std::size_t file_count() const noexcept { return files_.size(); }
  /// Bytes of the files as sent to a client that accepts gzip.
  std::size_t compressed_bytes() const noexcept;

private:
  std::map<std::string, file, std::less<>> files_;
};

} // namespace voxos
