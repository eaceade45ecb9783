#pragma once
// ranks::main's simulated path, for entry points that run a body the same way but must adjust
// the simulator's options first (the Python package: its rank-switch hook and C stack size).

#include <functional>

#include "ranks/sim.hpp"

namespace ranks::detail {

// Runs body as `ranks sim` asked through the RANKS_SIM_* variables, after adjust(options) when
// given; prints the human report and writes the JSON one. Returns ranks::main's status.
int run_simulated(const std::function<void()>& body,
                  const std::function<void(sim::Options&)>& adjust);

}  // namespace ranks::detail
