#include "ranks/sim/outsiders.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

#include "ranks/detail/check.hpp"
#include "ranks/detail/foreign_call.hpp"
#include "ranks/errors.hpp"
#include "ranks/sim/interruption.hpp"

namespace ranks::sim::detail {

std::atomic<bool> in_forked_child{false};

namespace {

std::atomic<int> simulations{0};  // running in this process
std::atomic<Engine*> watched{nullptr};  // the latest to start, for a foreign call's report

void mark_child() {
  if (simulations.load(std::memory_order_relaxed) > 0) {
    in_forked_child.store(true, std::memory_order_relaxed);
  }
}

void refuse_foreign_call(std::string_view op, const std::source_location& where) {
  const std::string message = fmt::format(
      "{} at {} was called from a thread that is none of the simulated ranks' (a thread a rank "
      "started, such as a threading.Thread): in a real run it would be its process's rank's op, "
      "alongside the rank's own, which the simulator runs one rank at a time and cannot; call "
      "collectives on the rank's own thread (hand the thread's results to it, then call the "
      "collective)",
      op, ranks::detail::where_str(where));
  // Under `ranks sim` the run ends with its report; a simulation inside the program's own process
  // (ranks.sim.run) is not the simulator's to end: the thread gets the error.
  if (Engine* engine = watched.load(std::memory_order_relaxed);
      engine != nullptr && crash_report_installed()) {
    report_foreign_call_and_exit(*engine, message);
  }
  throw Unsupported(message);
}

}  // namespace

OutsiderWatch::OutsiderWatch(Engine& engine) {
  static std::once_flag registered;
  std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, mark_child); });
  simulations.fetch_add(1, std::memory_order_relaxed);
  watched.store(&engine, std::memory_order_relaxed);
  ranks::detail::foreign_call_hook.store(refuse_foreign_call, std::memory_order_relaxed);
}

OutsiderWatch::~OutsiderWatch() {
  if (simulations.fetch_sub(1, std::memory_order_relaxed) == 1) {
    ranks::detail::foreign_call_hook.store(nullptr, std::memory_order_relaxed);
    watched.store(nullptr, std::memory_order_relaxed);
  }
}

void stop_forked_child(int rank, std::string_view what) {
  const std::string text = fmt::format(
      "ranks sim: process {}, forked by simulated rank {} (process {}), {}: a forked child "
      "cannot go on as a simulated rank (it holds a copy of every rank of the run, and would "
      "run the rest of it again; a real run's child would share its parent's connections). "
      "End the child before that (os._exit), or start it afresh (subprocess, multiprocessing "
      "with the 'spawn' start method)\n",
      ::getpid(), rank, ::getppid(), what);
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  ::_exit(70);
}

}  // namespace ranks::sim::detail
