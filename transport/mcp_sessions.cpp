#include "transport/mcp_sessions.hpp"

#include <algorithm>
#include <utility>

#include "transport/auth/auth_crypto.hpp"

namespace voxos {

namespace {

constexpr std::size_t session_id_bytes = 16;

} // namespace

// -- mcp_stream ----------------------------------------------------------------

bool mcp_stream::push(std::string message) {
  std::lock_guard lock{mutex_};
  if (closed_)
    return false;
  if (queue_.size() >= backlog_) {
    closed_ = true;
    queue_.clear();
    ready_.notify_all();
    return false;
  }
  queue_.push_back(std::move(message));
  ready_.notify_all();
  return true;
}

std::vector<std::string> mcp_stream::take(std::chrono::milliseconds wait) {
  std::unique_lock lock{mutex_};
  ready_.wait_for(lock, wait, [this] { return closed_ || !queue_.empty(); });
  std::vector<std::string> taken{std::make_move_iterator(queue_.begin()),
                                 std::make_move_iterator(queue_.end())};
  queue_.clear();
  return taken;
}

void mcp_stream::close() {
  std::lock_guard lock{mutex_};
  closed_ = true;
  ready_.notify_all();
}

bool mcp_stream::closed() const {
  std::lock_guard lock{mutex_};
  return closed_;
}

// -- mcp_session ---------------------------------------------------------------

std::optional<int> mcp_session::log_level() const {
  std::lock_guard lock{mutex_};
  return log_level_;
}

void mcp_session::set_log_level(int level) {
  std::lock_guard lock{mutex_};
  log_level_ = level;
}

void mcp_session::subscribe(const std::string& uri) {
  std::lock_guard lock{mutex_};
  subscriptions_.insert(uri);
}

void mcp_session::unsubscribe(const std::string& uri) {
  std::lock_guard lock{mutex_};
  subscriptions_.erase(uri);
}

bool mcp_session::subscribed(const std::string& uri) const {
  std::lock_guard lock{mutex_};
  return subscriptions_.count(uri) != 0;
}

std::shared_ptr<mcp_event_stream> mcp_session::open_stream(std::size_t replay) {
  std::lock_guard lock{mutex_};
  auto stream = std::make_shared<mcp_event_stream>(++last_stream_, replay);
  if (ended_)
    stream->close();
  else
    streams_.emplace(stream->number(), stream);
  return stream;
}

std::shared_ptr<mcp_event_stream> mcp_session::open_get_stream(std::size_t replay) {
  std::shared_ptr<mcp_event_stream> dropped;
  std::shared_ptr<mcp_event_stream> opened;
  {
    std::lock_guard lock{mutex_};
    if (ended_)
      return nullptr;
    auto before = streams_.find(get_stream_);
    if (before != streams_.end()) {
      if (before->second->has_reader())
        return nullptr;
      dropped = std::move(before->second);
      streams_.erase(before);
    }
    opened = std::make_shared<mcp_event_stream>(++last_stream_, replay);
    get_stream_ = opened->number();
    streams_.emplace(get_stream_, opened);
  }
  if (dropped)
    dropped->close();
  return opened;
}

std::shared_ptr<mcp_event_stream> mcp_session::stream(uint64_t number) const {
  std::lock_guard lock{mutex_};
  auto found = streams_.find(number);
  return found == streams_.end() ? nullptr : found->second;
}

void mcp_session::forget_stream(uint64_t number) {
  std::lock_guard lock{mutex_};
  streams_.erase(number);
}

void mcp_session::trim_detached(std::size_t max) {
  std::vector<std::shared_ptr<mcp_event_stream>> dropped;
  {
    std::lock_guard lock{mutex_};
    std::size_t unread = 0;
    for (const auto& [number, stream] : streams_)
      unread += stream->has_reader() ? 0 : 1;
    // Oldest first: the map is in number order.
    for (auto it = streams_.begin(); it != streams_.end() && unread > max;) {
      if (it->second->has_reader()) {
        ++it;
        continue;
      }
      dropped.push_back(std::move(it->second));
      it = streams_.erase(it);
      --unread;
    }
  }
  for (const auto& stream : dropped)
    stream->close();
}

void mcp_session::notify(const std::string& message) {
  std::shared_ptr<mcp_event_stream> stream;
  {
    std::lock_guard lock{mutex_};
    auto found = streams_.find(get_stream_);
    if (found != streams_.end())
      stream = found->second;
  }
  if (stream)
    stream->send(message);
}

void mcp_session::end() {
  std::map<uint64_t, std::shared_ptr<mcp_event_stream>> streams;
  {
    std::lock_guard lock{mutex_};
    ended_ = true;
    streams.swap(streams_);
  }
  for (const auto& [number, stream] : streams)
    stream->close();
}

bool mcp_session::ended() const {
  std::lock_guard lock{mutex_};
  return ended_;
}

// -- mcp_session_table -----------------------------------------------------------

result<std::shared_ptr<mcp_session>> mcp_session_table::open(std::string principal,
                                                             std::string version,
                                                             nlohmann::json capabilities,
                                                             nlohmann::json client_info) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock{mutex_};
  sweep(now);
  if (sessions_.size() >= max_sessions_)
    return status::error(errc::unavailable, "too many sessions; try again later");
  auto own = std::count_if(sessions_.begin(), sessions_.end(), [&](const auto& entry) {
    return entry.second.session->principal() == principal;
  });
  if (static_cast<std::size_t>(own) >= max_per_principal_)
    return status::error(errc::unavailable,
                         "too many sessions of this caller; end one (DELETE) or try later");
  auto id = auth::random_base64url(session_id_bytes);
  auto session = std::make_shared<mcp_session>(id, std::move(principal), std::move(version),
                                               std::move(capabilities), std::move(client_info));
  sessions_.emplace(std::move(id), slot{session, now});
  return session;
}

std::shared_ptr<mcp_session> mcp_session_table::find(std::string_view id,
                                                     std::string_view principal) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock{mutex_};
  sweep(now);
  auto found = sessions_.find(id);
  if (found == sessions_.end() || found->second.session->principal() != principal)
    return nullptr;
  found->second.last_used = now;
  return found->second.session;
}

bool mcp_session_table::end(std::string_view id, std::string_view principal) {
  std::shared_ptr<mcp_session> ended;
  {
    std::lock_guard lock{mutex_};
    auto found = sessions_.find(id);
    if (found == sessions_.end() || found->second.session->principal() != principal)
      return false;
    ended = std::move(found->second.session);
    sessions_.erase(found);
  }
  ended->end();
  return true;
}

void mcp_session_table::end_all() {
  std::map<std::string, slot, std::less<>> ended;
  {
    std::lock_guard lock{mutex_};
    ended.swap(sessions_);
  }
  for (auto& [id, entry] : ended)
    entry.session->end();
}

std::vector<std::shared_ptr<mcp_session>> mcp_session_table::live() {
  std::lock_guard lock{mutex_};
  sweep(std::chrono::steady_clock::now());
  std::vector<std::shared_ptr<mcp_session>> out;
  out.reserve(sessions_.size());
  for (const auto& [id, entry] : sessions_)
    out.push_back(entry.session);
  return out;
}

std::size_t mcp_session_table::size() const {
  std::lock_guard lock{mutex_};
  return sessions_.size();
}

void mcp_session_table::sweep(std::chrono::steady_clock::time_point now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used > idle_) {
      it->second.session->end();
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

// -- mcp_pending_inputs ----------------------------------------------------------

std::string mcp_pending_inputs::expect(const std::string& session_id) {
  std::lock_guard lock{mutex_};
  auto id = "voxos-input-" + std::to_string(++next_);
  slots_.emplace(id, slot{session_id, std::nullopt});
  return id;
}

bool mcp_pending_inputs::deliver(const std::string& session_id, const std::string& id,
                                 answer value) {
  std::lock_guard lock{mutex_};
  auto found = slots_.find(id);
  if (found == slots_.end() || found->second.session_id != session_id || found->second.value)
    return false;
  found->second.value = std::move(value);
  arrived_.notify_all();
  return true;
}

std::map<std::string, mcp_pending_inputs::answer>
mcp_pending_inputs::await(const std::vector<std::string>& ids, std::chrono::milliseconds wait,
                          const std::function<bool()>& gone) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  std::unique_lock lock{mutex_};
  auto all_arrived = [&] {
    return std::all_of(ids.begin(), ids.end(), [&](const std::string& id) {
      auto found = slots_.find(id);
      return found != slots_.end() && found->second.value;
    });
  };
  while (!stopped_ && !all_arrived() && std::chrono::steady_clock::now() < deadline) {
    arrived_.wait_for(lock, mcp_liveness_slice);
    if (gone) {
      // Not under the lock: looking at the client's socket may take a while.
      lock.unlock();
      bool left = gone();
      lock.lock();
      if (left)
        break;
    }
  }
  std::map<std::string, answer> out;
  for (const auto& id : ids) {
    auto found = slots_.find(id);
    if (found == slots_.end())
      continue;
    if (found->second.value)
      out.emplace(id, std::move(*found->second.value));
    slots_.erase(found);
  }
  return out;
}

void mcp_pending_inputs::stop() {
  std::lock_guard lock{mutex_};
  stopped_ = true;
  arrived_.notify_all();
}

} // namespace voxos
