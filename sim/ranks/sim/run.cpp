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

bool program_asks_for_backend(std::string_view backend, std::source_location where) {
  detail::Engine* engine = detail::running_engine_for_crash();
  if (engine == nullptr || engine->running() == nullptr) return false;
  return engine->adopt_backend(*engine->running(), backend, where);
}

void rank_exits_at(std::source_location where) {
  detail::Engine* engine = detail::running_engine_for_crash();
  if (engine != nullptr && engine->running() != nullptr) {
    engine->note_exit_site(*engine->running(), where);
  }
}

}  // namespace ranks::sim
