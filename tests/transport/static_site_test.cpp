#include "transport/static_site.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <httplib.h>

#include "support/temp_dir.hpp"
#include "transport/http_server.hpp"

using voxos::http_server;
using voxos::static_site;
using voxos::test::temp_dir;

namespace {

void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A console folder: index, a module, its gzip twin, a nested page, and files
// that must never be served (an unknown type, a dot file, a symlink out).
void lay_out(const std::filesystem::path& dir) {
  write(dir / "index.html", "<!doctype html><title>console</title>");
  write(dir / "app.js", "export const answer = 42;\n");
  write(dir / "app.js.gz", "GZIP-BYTES-STAND-IN");
  write(dir / "pages/tools.js", "export default 1;\n");
  write(dir / "tool.exe", "MZ");
  write(dir / ".env", "SECRET=1");
  std::filesystem::create_symlink("/etc/hostname", dir / "hostname.txt");
}

httplib::Response served(const static_site& site, const std::string& path,
                         const std::string& accept_encoding = "") {
  httplib::Request req;
  if (!accept_encoding.empty())
    req.set_header("Accept-Encoding", accept_encoding);
  httplib::Response res;
  site.serve(path, req, res);
  return res;
}

void check_security_headers(const httplib::Response& res) {
  CHECK(res.get_header_value("Content-Security-Policy") == static_site::content_security_policy);
  CHECK(res.get_header_value("X-Frame-Options") == "DENY");
  CHECK(res.get_header_value("X-Content-Type-Options") == "nosniff");
  CHECK(res.get_header_value("Referrer-Policy") == "no-referrer");
}

} // namespace

TEST_CASE("static site: loads only allowed file types, never dot files or symlinks") {
  temp_dir dir;
  lay_out(dir.path());
  auto site = static_site::load(dir.str());
  REQUIRE(site.is_ok());
  CHECK(site->file_count() == 3);
  CHECK(site->find("index.html") != nullptr);
  CHECK(site->find("pages/tools.js") != nullptr);
  CHECK(site->find("tool.exe") == nullptr);
  CHECK(site->find(".env") == nullptr);
  CHECK(site->find("hostname.txt") == nullptr);
  CHECK(site->find("app.js.gz") == nullptr);
  CHECK(site->find("../index.html") == nullptr);
}

TEST_CASE(
  "static site: a folder without index.html, a missing one and one past its limits are refused") {
  temp_dir dir;
  CHECK(static_site::load((dir.path() / "absent").string()).error().code()
        == voxos::errc::not_found);
  write(dir.path() / "app.js", "1");
  CHECK(static_site::load(dir.str()).error().code() == voxos::errc::not_found);
  write(dir.path() / "index.html", std::string(100, 'x'));
  CHECK(static_site::load(dir.str(), {1, 1 << 20}).error().code() == voxos::errc::out_of_range);
  CHECK(static_site::load(dir.str(), {16, 50}).error().code() == voxos::errc::out_of_range);
  CHECK(static_site::load(dir.str(), {16, 1 << 20}).is_ok());
}

TEST_CASE("static site: every answer carries the security headers, a 404 included") {
  temp_dir dir;
  lay_out(dir.path());
  auto site = static_site::load(dir.str());
  REQUIRE(site.is_ok());
  auto index = served(*site, "index.html");
  CHECK(index.status == 200);
  CHECK(index.get_header_value("Content-Type") == "text/html; charset=utf-8");
  CHECK(index.body == "<!doctype html><title>console</title>");
  check_security_headers(index);
  CHECK(index.get_header_value("Content-Security-Policy").find("'unsafe-inline'")
        == std::string::npos);
  CHECK(index.get_header_value("Content-Security-Policy").find("frame-ancestors 'none'")
        != std::string::npos);
  auto missing = served(*site, "tool.exe");
  CHECK(missing.status == 404);
  check_security_headers(missing);
  CHECK(missing.body.find("not_found") != std::string::npos);
}

TEST_CASE(
  "static site: the gzip twin goes only to clients that accept gzip, and ETags revalidate") {
  temp_dir dir;
  lay_out(dir.path());
  auto site = static_site::load(dir.str());
  REQUIRE(site.is_ok());
  auto plain = served(*site, "app.js");
  CHECK(plain.body == "export const answer = 42;\n");
  CHECK_FALSE(plain.has_header("Content-Encoding"));
  CHECK(served(*site, "app.js", "gzip;q=0").body == "export const answer = 42;\n");
  auto zipped = served(*site, "app.js", "gzip, deflate, br");
  CHECK(zipped.get_header_value("Content-Encoding") == "gzip");
  CHECK(zipped.get_header_value("Content-Type") == "text/javascript; charset=utf-8");
  // As sent to a gzip client: the twin where there is one, else the file.
  CHECK(site->compressed_bytes()
        == site->find("index.html")->body.size() + std::string{"GZIP-BYTES-STAND-IN"}.size()
             + site->find("pages/tools.js")->body.size());

  httplib::Request again;
  again.set_header("If-None-Match", plain.get_header_value("ETag"));
  httplib::Response res;
  site->serve("app.js", again, res);
  CHECK(res.status == 304);
  CHECK(res.body.empty());
  check_security_headers(res);
}

TEST_CASE("static site: over HTTP the precompressed bytes are sent once, never compressed again") {
  temp_dir dir;
  lay_out(dir.path());
  auto site = static_site::load(dir.str());
  REQUIRE(site.is_ok());
  http_server server({});
  server.routes().Get("/app.js", [&](const httplib::Request& req, httplib::Response& res) {
    site->serve("app.js", req, res);
  });
  auto port = server.start();
  REQUIRE(port.is_ok());
  httplib::Client client("127.0.0.1", *port);
  // Asked raw (no decompression here), as a browser asks.
  client.set_decompress(false);
  auto res = client.Get("/app.js", {{"Accept-Encoding", "gzip, deflate, br"}});
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value_count("Content-Encoding") == 1);
  CHECK(res->get_header_value("Content-Encoding") == "gzip");
  CHECK(res->body == "GZIP-BYTES-STAND-IN");
}
