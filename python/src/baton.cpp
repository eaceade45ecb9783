// The bare hand-over between OS threads that a simulation on rank threads is measured against
// (reports/torch_sim.py): N threads pass one baton round-robin, each waiting on a futex word of
// its own and waking the next one's. Nothing but the hand-over: no scheduler, no Python.

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "bindings.hpp"
#include "ranks/errors.hpp"

namespace ranks::python {

namespace {

struct alignas(64) Word {
  std::atomic<uint32_t> value{0};
};

void wait_for(Word& word) {
  while (word.value.exchange(0, std::memory_order_acquire) == 0) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word.value), FUTEX_WAIT_PRIVATE, 0,
              nullptr, nullptr, 0);
  }
}

void hand_to(Word& word) {
  word.value.store(1, std::memory_order_release);
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word.value), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

// Seconds for `rounds` turns of the baton around `threads` threads.
double baton_seconds(int threads, int rounds) {
  auto words = std::make_unique<Word[]>(static_cast<size_t>(threads));
  Word done;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < rounds; ++r) {
        wait_for(words[static_cast<size_t>(t)]);
        if (t + 1 < threads) {
          hand_to(words[static_cast<size_t>(t + 1)]);
        } else if (r + 1 < rounds) {
          hand_to(words[0]);
        } else {
          hand_to(done);
        }
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  hand_to(words[0]);
  wait_for(done);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (auto& thread : pool) thread.join();
  return std::chrono::duration<double>(elapsed).count();
}

}  // namespace

void register_baton(py::module_& m) {
  m.def(
      "baton_seconds",
      [](int threads, int rounds) {
        if (threads < 1 || rounds < 1) throw InvalidArgument("baton_seconds: threads and rounds must be positive");
        py::gil_scoped_release unlocked;
        return baton_seconds(threads, rounds);
      },
      py::arg("threads"), py::arg("rounds"));
}

}  // namespace ranks::python
