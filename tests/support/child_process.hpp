// A child process for integration tests: started with posix_spawn in a given
// working directory, its stdout read line by line through a pipe (so a test
// waits for the "is up" banner instead of sleeping), its stderr kept in a file;
// and `run_to_end` for a command line tool run once.
#pragma once

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/temp_dir.hpp"

extern char** environ;

namespace voxos::test {

class child_process {
public:
  /// Starts `argv` in `cwd` (argv[0] a path: no PATH search), with `env`
  /// ("NAME=value") added to this process's environment, replacing any
  /// variable of the same name.
  child_process(std::vector<std::string> argv, const std::string& cwd,
                const std::string& stderr_path, std::vector<std::string> env = {})
      : stderr_path_(stderr_path) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::vector<char*> args;
    for (auto& a : argv)
      args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<std::string> env_store;
    auto overridden = [&env](const char* entry) {
      for (const auto& added : env) {
        auto name_len = added.find('=');
        if (name_len != std::string::npos && std::strncmp(entry, added.data(), name_len + 1) == 0)
          return true;
      }
      return false;
    };
    for (char** e = environ; *e != nullptr; ++e)
      if (!overridden(*e))
        env_store.emplace_back(*e);
    for (auto& e : env)
      env_store.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_store)
      envp.push_back(e.data());
    envp.push_back(nullptr);
    if (::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data()) != 0)
      pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out_fd_ = fds[0];
  }

  ~child_process() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (out_fd_ >= 0)
      ::close(out_fd_);
  }

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  bool started() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }

  /// Reads stdout until a line containing `needle` (true), or EOF / the
  /// deadline (false). Everything read is kept in output().
  bool wait_for_line(const std::string& needle,
                     std::chrono::seconds deadline = std::chrono::seconds(60)) {
    auto until = std::chrono::steady_clock::now() + deadline;
    for (;;) {
      for (auto pos = out_.find('\n', scanned_); pos != std::string::npos;
           pos = out_.find('\n', scanned_)) {
        auto line = out_.substr(scanned_, pos - scanned_);
        scanned_ = pos + 1;
        if (line.find(needle) != std::string::npos)
          return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    until - std::chrono::steady_clock::now())
                    .count();
      if (left <= 0)
        return false;
      pollfd pfd{out_fd_, POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left)) <= 0)
        return false;
      char buf[4096];
      auto n = ::read(out_fd_, buf, sizeof(buf));
      if (n <= 0)
        return false;
      out_.append(buf, static_cast<std::size_t>(n));
    }
  }

  /// Reads stdout to its end (the process closed it or exited).
  const std::string& read_all(std::chrono::seconds deadline = std::chrono::seconds(60)) {
    wait_for_line(std::string(1, '\0'), deadline);
    return out_;
  }

  void signal(int sig) {
    if (pid_ > 0 && !exited_)
      ::kill(pid_, sig);
  }

  /// Waits for the exit: the exit code, or -signal if a signal ended it.
  int wait() {
    if (exited_)
      return status_;
    int raw = 0;
    while (::waitpid(pid_, &raw, 0) < 0 && errno == EINTR) {
    }
    exited_ = true;
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : -WTERMSIG(raw);
    return status_;
  }

  const std::string& output() const noexcept { return out_; }

  std::string error_output() const {
    std::ifstream in{stderr_path_};
    std::stringstream buf;
    buf << in.rdbuf();
    return buf.str();
  }

private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_;
  std::size_t scanned_ = 0;
  std::string stderr_path_;
  bool exited_ = false;
  int status_ = 0;
};

/// What a child that ran to its end printed, and how it ended.
struct finished_run {
  int code = 0; ///< as child_process::wait answers
  std::string out;
  std::string err;
};

/// Runs `argv` in `cwd` to its end (stderr through a temporary file); code
/// -1 when it could not be started. (No doctest here: benches include this.)
inline finished_run run_to_end(std::vector<std::string> argv, const std::string& cwd,
                               std::vector<std::string> env = {}) {
  temp_dir logs;
  child_process child{std::move(argv), cwd, (logs.path() / "stderr").string(), std::move(env)};
  finished_run out;
  if (!child.started()) {
    out.code = -1;
    return out;
  }
  out.out = child.read_all();
  out.code = child.wait();
  out.err = child.error_output();
  return out;
}

} // namespace voxos::test
