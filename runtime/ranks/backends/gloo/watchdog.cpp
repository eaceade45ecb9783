#include "ranks/backends/gloo/watchdog.hpp"

#include "ranks/real/stuck_peers.hpp"

namespace ranks::backends::gloo::detail {

std::chrono::milliseconds gloo_timeout(std::chrono::milliseconds deadline) {
  // The window, the store host's half second for the others' reads (stuck_peers.cpp), and room
  // for a loaded machine to schedule the watchdog.
  return deadline + ranks::detail::stuck_window(deadline) + std::chrono::seconds(3);
}

}  // namespace ranks::backends::gloo::detail
