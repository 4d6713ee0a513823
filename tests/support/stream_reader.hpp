// Reads a run's activity stream (GET /v1/runs/{run}/events) on a thread of
// its own: the constructor returns once the response head arrived (or the
// request failed); the destructor closes the connection if the stream is
// still open (the client goes away; a failed check never waits on a stream
// that does not end) and returns once the thread ended.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include <httplib.h>

#include "support/running_node.hpp"

namespace voxos::test {

struct stream_reader {
  int status = 0;
  std::string events; ///< the body so far (read only after the stream ended)
  std::thread thread;

  /// Reads `target` with `token` until `stop(events so far)` says so or the
  /// node ends the stream.
  stream_reader(running_node& node, const std::string& token, const std::string& target,
                std::function<bool(const std::string&)> stop) {
    std::promise<void> opened;
    auto head = opened.get_future();
    client = std::make_unique<httplib::Client>("127.0.0.1", node.get().http_port());
    client->set_read_timeout(60);
    thread = std::thread{[this, token, target, stop, opened = std::move(opened)]() mutable {
      bool told = false;
      client->Get(
        target.c_str(), {{"Authorization", "Bearer " + token}},
        [&](const httplib::Response& res) {
          status = res.status;
          told = true;
          opened.set_value();
          return true;
        },
        [&](const char* data, std::size_t len) {
          events.append(data, len);
          return !stop(events);
        });
      if (!told)
        opened.set_value();
    }};
    head.wait();
  }
  stream_reader(const stream_reader&) = delete;
  stream_reader& operator=(const stream_reader&) = delete;
  ~stream_reader() {
    client->stop();
    if (thread.joinable())
      thread.join();
  }

private:
  std::unique_ptr<httplib::Client> client;
};

} // namespace voxos::test
