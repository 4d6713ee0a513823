#include "transport/static_site.hpp"

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "transport/http_server.hpp"

namespace voxos {

namespace {

namespace fs = std::filesystem;

struct type_of_extension {
  std::string_view extension;
  std::string_view content_type;
};

constexpr std::array<type_of_extension, 11> allowed_types{{
  {".html", "text/html; charset=utf-8"},
  {".js", "text/javascript; charset=utf-8"},
  {".mjs", "text/javascript; charset=utf-8"},
  {".css", "text/css; charset=utf-8"},
  {".svg", "image/svg+xml"},
  {".png", "image/png"},
  {".ico", "image/x-icon"},
  {".json", "application/json"},
  {".woff2", "font/woff2"},
  {".txt", "text/plain; charset=utf-8"},
  {".map", "application/json"},
}};

std::string_view content_type_of(const fs::path& path) {
  auto extension = path.extension().string();
  for (const auto& entry : allowed_types)
    if (entry.extension == extension)
      return entry.content_type;
  return {};
}

bool read_whole(const fs::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream text;
  text << in.rdbuf();
  out = std::move(text).str();
  return static_cast<bool>(in) || in.eof();
}

// FNV-1a 64: an ETag only has to change when the bytes do.
std::string etag_of(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  std::ostringstream text;
  text << '"' << std::hex << hash << '-' << bytes.size() << '"';
  return text.str();
}

bool accepts_gzip(const httplib::Request& req) {
  // A coding listed with q=0 is refused; anything else that names gzip is taken.
  auto header = req.get_header_value("Accept-Encoding");
  auto at = header.find("gzip");
  if (at == std::string::npos)
    return false;
  auto rest = std::string_view{header}.substr(at + 4);
  auto end = rest.find(',');
  auto params = rest.substr(0, end);
  auto q = params.find("q=");
  if (q == std::string_view::npos)
    return true;
  auto value = params.substr(q + 2);
  return !(value.rfind("0", 0) == 0 && value.find_first_of("123456789") == std::string_view::npos);
}

} // namespace

result<static_site> static_site::load(const std::string& dir, limits bounds) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return status::error(errc::not_found, "not a directory");
  static_site site;
  std::size_t total = 0;
  std::map<std::string, std::string, std::less<>> compressed;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec))
      continue;
    auto relative = fs::relative(it->path(), dir, ec).generic_string();
    if (ec || relative.empty() || relative.front() == '.')
      continue;
    bool gz = it->path().extension() == ".gz";
    auto type = content_type_of(gz ? it->path().stem() : it->path());
    if (type.empty())
      continue;
    if (site.files_.size() + compressed.size() >= bounds.max_files)
      return status::error(errc::out_of_range,
                           "more than " + std::to_string(bounds.max_files) + " files");
    std::string body;
    if (!read_whole(it->path(), body))
      return status::error(errc::storage_failure, "cannot read " + relative);
    total += body.size();
    if (total > bounds.max_bytes)
      return status::error(errc::out_of_range,
                           "more than " + std::to_string(bounds.max_bytes) + " bytes");
    if (gz) {
      compressed.emplace(relative.substr(0, relative.size() - 3), std::move(body));
      continue;
    }
    file f;
    f.content_type = std::string{type};
    f.etag = etag_of(body);
    f.body = std::move(body);
    site.files_.emplace(std::move(relative), std::move(f));
  }
  if (ec)
    return status::error(errc::storage_failure, "cannot list the directory");
  for (auto& [name, body] : compressed)
    if (auto it = site.files_.find(name); it != site.files_.end())
      it->second.gzip_body = std::move(body);
  if (site.files_.count("index.html") == 0)
    return status::error(errc::not_found, "no index.html");
  return site;
}

const static_site::file* static_site::find(std::string_view path) const {
  auto it = files_.find(path);
  return it == files_.end() ? nullptr : &it->second;
}

void static_site::set_security_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy", std::string{content_security_policy});
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
}

void static_site::serve(std::string_view relative, const httplib::Request& req,
                        httplib::Response& res) const {
  set_security_headers(res);
  const file* f = find(relative);
  if (f == nullptr) {
    write_error(res, errc::not_found, "no such console file");
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", f->etag);
  res.set_header("Vary", "Accept-Encoding");
  if (req.get_header_value("If-None-Match") == f->etag) {
    res.status = 304;
    return;
  }
  res.status = 200;
  if (!f->gzip_body.empty() && accepts_gzip(req)) {
    // Through a sized content provider: httplib compresses a plain body
    // itself, never a provided one, so the precompressed bytes go out once.
    res.set_header("Content-Encoding", "gzip");
    const std::string* data = &f->gzip_body;
    res.set_content_provider(
      data->size(), f->content_type.c_str(),
      [data](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        return sink.write(data->data() + offset, length);
      });
  } else {
    res.set_content(f->body, f->content_type.c_str());
  }
}

std::size_t static_site::compressed_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& [name, f] : files_)
    total += f.gzip_body.empty() ? f.body.size() : f.gzip_body.size();
  return total;
}

} // namespace voxos
