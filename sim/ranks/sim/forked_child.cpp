#include "ranks/sim/forked_child.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>

namespace ranks::sim::detail {

std::atomic<bool> in_forked_child{false};

namespace {

std::atomic<int> simulations{0};  // running in this process

void mark_child() {
  if (simulations.load(std::memory_order_relaxed) > 0) {
    in_forked_child.store(true, std::memory_order_relaxed);
  }
}

}  // namespace

ForkWatch::ForkWatch() {
  static std::once_flag registered;
  std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, mark_child); });
  simulations.fetch_add(1, std::memory_order_relaxed);
}

ForkWatch::~ForkWatch() { simulations.fetch_sub(1, std::memory_order_relaxed); }

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
