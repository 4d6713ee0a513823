// What the routes and the node's MCP servers share on an HTTP worker thread:
// asking an actor (send a request, wait for its answer with a scoped actor)
// and reading a bearer token.
#pragma once

#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <caf/scoped_actor.hpp>
#include <httplib.h>

namespace voxos {

/// How long a route waits for an actor's answer, unless it says otherwise.
inline constexpr auto ask_timeout = std::chrono::seconds(30);

/// Sends a request and waits for the answer on the calling thread.
template <class T, class Handle, class... Ts>
std::pair<std::optional<T>, caf::error> ask_within(caf::actor_system& sys, caf::duration wait,
                                                   const Handle& dest, Ts&&... xs) {
  caf::scoped_actor self{sys};
  std::pair<std::optional<T>, caf::error> out;
  self->request(dest, wait, std::forward<Ts>(xs)...)
    .receive([&](T& value) { out.first = std::move(value); },
             [&](caf::error& err) { out.second = std::move(err); });
  return out;
}

template <class T, class Handle, class... Ts>
std::pair<std::optional<T>, caf::error> ask(caf::actor_system& sys, const Handle& dest,
                                            Ts&&... xs) {
  return ask_within<T>(sys, caf::duration{ask_timeout}, dest, std::forward<Ts>(xs)...);
}

/// Bytes of a bearer token at most.
inline constexpr std::size_t max_token_bytes = 512;

/// The token of `Authorization: Bearer <token>` (the scheme in any case).
inline std::optional<std::string> bearer_token(const httplib::Request& req) {
  auto header = req.get_header_value("Authorization");
  constexpr std::string_view scheme = "bearer ";
  if (header.size() <= scheme.size() || header.size() > scheme.size() + max_token_bytes)
    return std::nullopt;
  for (std::size_t idx = 0; idx < scheme.size(); ++idx)
    if (std::tolower(static_cast<unsigned char>(header[idx])) != scheme[idx])
      return std::nullopt;
  return header.substr(scheme.size());
}

} // namespace voxos
