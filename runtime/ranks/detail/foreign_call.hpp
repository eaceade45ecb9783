#pragma once
// An op called, while a simulation runs in this process, from a thread that is none of its ranks'
// (a threading.Thread a Python rank started, a std::thread of a C++ rank). Such a thread has no
// simulated rank's Context: left alone, its ops would run as "not distributed" (a world of one)
// or on another rank's groups from outside the simulator's turns, and the run would end with a
// verdict a real run contradicts. The simulator sets the hook while it runs; the hook ends the
// run with a report naming the call, or throws where it cannot (a simulation inside a program's
// own process, ranks.sim.run).

#include <atomic>
#include <source_location>
#include <string_view>

namespace ranks::detail {

// op: the call's name as the program wrote it ("all_reduce", "broadcast_object_list").
using ForeignCallHook = void (*)(std::string_view op, const std::source_location& where);
extern std::atomic<ForeignCallHook> foreign_call_hook;

// Whether this thread runs a simulated rank now (its Context is a rank's).
bool on_simulated_rank();

// Called on every op's path: one relaxed load while no simulation runs.
inline void check_foreign_call(std::string_view op, const std::source_location& where) {
  if (ForeignCallHook hook = foreign_call_hook.load(std::memory_order_relaxed)) [[unlikely]] {
    if (!on_simulated_rank()) hook(op, where);
  }
}

}  // namespace ranks::detail
