#pragma once
// Ranks on OS threads of their own, one running at a time (Options::rank_threads): for programs
// whose libraries keep per-thread state that ranks must not share, which fibers of one thread
// would share (torch's autograd engine and grad mode are C++ thread_locals).
//
// Each rank's thread waits on a futex word of its own until it is given the turn. The thread
// that gives the turn away (its rank blocks, polls or ends) picks the next ready rank with the
// fiber scheduler's rule (FIFO, or a seeded pick) and wakes that thread directly: one wake-up and
// one wait per hand-over, no thread in between and none woken for nothing. When no rank is
// ready, that same thread runs the engine's idle step (the clock jumps, deadlines fire, or the run
// is stuck) before picking. Only the thread holding the turn touches the engine, so the engine
// stays single-threaded code; the futex word's release/acquire orders one turn after the other.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "ranks/context.hpp"
#include "ranks/sim/ring_queue.hpp"

namespace ranks::sim::detail {

class Engine;
struct SimRank;

class ThreadTurns {
 public:
  struct Hooks {
    // On a rank's thread, just before it gives the turn away while its body goes on, and just
    // after it gets the turn back: where a language runtime lets go of and retakes its
    // interpreter lock. Neither may block, throw or call into ranks.
    std::function<void()> giving;
    std::function<void()> taken;
  };

  // timeout: of real time for a rank to keep its turn; the caller of run() watches for it (it
  // only waits meanwhile), asks Options::where_is_rank where the rank is, and ends the process
  // with the timeout report (report_stall_and_exit), as the wall guard does for fibers.
  ThreadTurns(Engine& engine, uint64_t seed, int world_size, size_t stack_bytes,
              std::chrono::milliseconds timeout, Hooks hooks);
  ~ThreadTurns();
  ThreadTurns(const ThreadTurns&) = delete;
  ThreadTurns& operator=(const ThreadTurns&) = delete;

  // On the caller's thread: starts one thread per rank, each calling entry(rank) once it has its
  // first turn (in rank order, as fibers start), and returns when every rank's entry has
  // returned and its thread has ended. Throws BackendError if the threads cannot be made.
  void run(const std::function<void(SimRank&)>& entry);

  // A blocked rank is runnable again: it gets a turn in its place in the queue.
  void ready(SimRank& rank) { ready_.push_back(&rank); }
  // The running rank (on its own thread) waits until it has been made ready and its turn comes.
  void block(SimRank& rank);
  // The running rank lets the ranks ready before it go first.
  void yield(SimRank& rank);

  // Whether address (a fault's) lies just below the rank's thread stack, in its guard page or
  // past it: the rank ran off its stack. Async-signal-safe (the crash report asks).
  bool ran_off_stack(int rank, const void* address) const;
  size_t stack_bytes() const { return stack_bytes_; }

 private:
  struct alignas(64) Seat {
    std::atomic<uint32_t> turn{0};  // 1: this thread's turn, not yet taken
    std::atomic<uintptr_t> stack_low{0};  // the lowest address of the thread's stack, once known
  };
  struct Start {
    ThreadTurns* turns;
    SimRank* rank;
  };
  static void* thread_main(void* start);
  void live(SimRank& rank);
  // From the thread holding the turn: gives it to the next ready rank, or back to the caller of
  // run() once every rank has ended. `me` is the rank giving it (null: one that has ended, or
  // the caller of run()); true when the next to run is `me` itself, which then keeps the turn.
  bool pass_from(SimRank* me);
  void wait_turn(SimRank& rank);
  // The caller of run() waits for the ranks, watching that turns keep being handed over.
  void watch_until_done();
  static void give(Seat& seat);
  static void take(Seat& seat);

  Engine& engine_;
  Hooks hooks_;
  size_t stack_bytes_;
  std::chrono::milliseconds timeout_;
  RingQueue<SimRank*> ready_;
  ranks::detail::Rng rng_;
  bool seeded_;
  int world_size_;
  int ended_ = 0;
  bool abandoned_ = false;  // thread creation failed: threads made so far end at once
  const std::function<void(SimRank&)>* entry_ = nullptr;
  std::unique_ptr<Seat[]> seats_;
  Seat caller_;
};

}  // namespace ranks::sim::detail
