// The web console's files (console/, built into `http.console_dir`): `/`
// answers its index.html and `/console/<path>` its other files, each with the
// static site's security headers. The console is a client of the HTTP API
// like any other; no API route exists for it alone.
#pragma once

#include <memory>
#include <string>

#include <httplib.h>

namespace voxos {

class static_site;

/// Adds `GET /` and `GET /console/...`. With no site, both answer 404 naming
/// the setting, with the same headers.
void install_console(httplib::Server& srv, std::shared_ptr<const static_site> site);

} // namespace voxos
