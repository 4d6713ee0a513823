// The HTTP API's request-head bounds on a voxosd process: a flood of header
// lines is refused at the bound and leaves the node's resident memory where
// it was (without the bound, one such GET grew it by about 460 MiB, kept).
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "support/loopback_http.hpp"
#include "support/voxosd_process.hpp"

using namespace voxos;

namespace {

/// VmRSS of process `pid`, in KiB (0 if unreadable).
long resident_kib(pid_t pid) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stol(line.substr(6));
  return 0;
}

} // namespace

TEST_CASE("a GET with four million header lines is refused and resident memory stays put") {
  test::temp_dir dir;
  test::voxosd_process node{dir, test::test_config(dir)};
  REQUIRE(node.wait_up());
  auto cli = node.client();
  REQUIRE(cli.Get("/healthz"));
  const long before = resident_kib(node.proc().pid());
  REQUIRE(before > 0);

  auto answer = test::header_flood(node.http_port(), 4L * 1024 * 1024);
  CHECK(answer.rfind("HTTP/1.1 431 ", 0) == 0);
  CHECK(answer.find("\"headers_too_large\"") != std::string::npos);

  // The node still serves, and holds at most a few MiB more than before
  // (what a worker's first request allocates): the flood's 30 MiB, and the
  // 600 MiB its parsed lines took, were never buffered.
  auto health = cli.Get("/healthz");
  REQUIRE(health);
  CHECK(health->status == 200);
  const long after = resident_kib(node.proc().pid());
  MESSAGE("resident before " << before << " KiB, after " << after << " KiB");
  CHECK(after - before < 16 * 1024);
}
