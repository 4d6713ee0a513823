#include "actors/http_api/console_routes.hpp"

#include "transport/http_server.hpp"
#include "transport/static_site.hpp"

namespace voxos {

void install_console(httplib::Server& srv, std::shared_ptr<const static_site> site) {
  auto answer = [site](std::string_view relative, const httplib::Request& req,
                       httplib::Response& res) {
    if (!site) {
      static_site::set_security_headers(res);
      write_error(res, errc::not_found,
                  "the web console is not installed on this node (http.console_dir)");
      return;
    }
    site->serve(relative, req, res);
  };
  srv.Get("/", [answer](const httplib::Request& req, httplib::Response& res) {
    answer("index.html", req, res);
  });
  // Every path below /console/ is answered here, so even a 404 carries the
  // headers. Only names of the loaded set are ever found: a path is a key,
  // never a file name opened, so "..", "%2e%2e" or a symlink reach nothing.
  srv.Get(R"(/console/(.{1,1024}))", [answer](const httplib::Request& req, httplib::Response& res) {
    answer(std::string{req.matches[1]}, req, res);
  });
}

} // namespace voxos
