#include "ranks/errors.hpp"
#include "ranks/sim.hpp"
#include "ranks/sim/engine.hpp"

namespace ranks::sim {

Report run(const Options& options, const std::function<void()>& body) {
  if (auto running = ranks::detail::set_context_slot(nullptr)) {
    ranks::detail::set_context_slot(running);
    throw InvalidArgument(
        "sim::run: a simulation is already running on this thread; simulations "
        "do not nest");
  }
  detail::Engine engine(options);
  return engine.run(body);
}

}  // namespace ranks::sim
