#pragma once
// The simulator's engine: the ranks, the virtual clock, the event queue, blocking and waking, and
// what happens when no fiber can run (the clock jumps to the next event or deadline, or the run
// is stuck). Everything runs on one OS thread; nothing here is thread-safe, by design.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ranks/context.hpp"
#include "ranks/detail/failure_text.hpp"
#include "ranks/detail/rejected_op.hpp"
#include "ranks/sim.hpp"
#include "ranks/sim/cost_model.hpp"
#include "ranks/sim/faults.hpp"
#include "ranks/sim/outsiders.hpp"
#include "ranks/sim/hazards.hpp"
#include "ranks/sim/trace.hpp"
#include "ranks/sim/work_pool.hpp"

namespace boost::fibers {
class context;
}

namespace ranks::sim::detail {

using Nanos = std::chrono::nanoseconds;
inline constexpr Nanos never = Nanos::max();

class SimWork;
class SimGroup;
class Engine;
class StackPool;

// The run going on on this thread (null: none), for a rank's exit() and a fatal-signal handler
// (ending.cpp, crash_report.cpp). Arming also makes the guard that turns exit() into a report.
void arm_exit_guard(Engine* running);
Engine* running_engine_for_crash();
// The running rank has kept the thread past the run's timeout of real time (wall_guard.hpp):
// from the guard's signal handler, writes the timeout report as the crash handler writes its
// report (crash_report.cpp: no allocation beyond now_at's), then _exit(1).
// now_at: where the rank is now, when the caller can tell (rank threads: Options::where_is_rank).
[[noreturn]] void report_stall_and_exit(Engine& engine, std::string_view now_at = {});
class GroupRegistry;
class Scheduler;
class ThreadTurns;

// Stuck: was blocked when the run got stuck and has been unwound; reported as blocked. One byte:
// SimRank's first line holds all that waking a rank reads and writes.
enum class RankState : uint8_t { Runnable, Blocked, Finished, Failed, Crashed, Stuck };

using ranks::detail::format_duration;
using ranks::detail::format_duration_to;  // into a signal handler's buffer: no allocation
struct SimRank;
// Engine::after_last_op() into out (crash_report.cpp).
std::string_view after_last_op_to(std::span<char, 1024> out, const SimRank& rank);
// "0 → 1 → 2 → 0"; a cycle of more than 12 ranks shows its first 8 and last 2, and how many
// are left out between (Report::cycle keeps them all).
std::string format_cycle(const std::vector<int>& cycle);

inline constexpr int no_peer = -2;  // BlockInfo::peer when the op has neither root nor peer

// What a rank is blocked in, kept for reports.
struct BlockInfo {
  std::string_view op;  // op_name(), or "sleep_for"
  const std::string* group = nullptr;
  int64_t seq = -1;
  std::source_location where;
  int peer = no_peer;  // global rank of the root or point-to-point peer; -1: any source
  int64_t count = -1;  // element count of the tensor that describes the op; -1: no tensor
  DType dtype = DType::Float32;
};

// Where the op stands, as failure texts place it (detail/failure_text.hpp).
inline ranks::detail::OpPlace place_of(const BlockInfo& info) {
  return {info.op, info.group ? std::string_view(*info.group) : std::string_view(), info.seq,
          info.where};
}

// Cache-line aligned, with what every op reads or writes first and the context's own hot fields
// right after: a rank-operation of a large run waits on each line it touches.
struct alignas(64) SimRank {
  int rank = 0;
  RankState state = RankState::Runnable;
  // The deadline is the caller's own (Work::wait(timeout)), not the group's: the program expects
  // the Timeout and goes on, so it fires even when nothing else could ever happen.
  bool own_deadline = false;
  bool stopped_by_engine = false;           // woken to unwind a stuck run
  boost::fibers::context* fiber = nullptr;  // while blocked
  Nanos deadline = never;                   // while blocked
  SimWork* waiting_on = nullptr;            // the work it is blocked on, if any
  std::exception_ptr wake_error;            // makes the blocking call throw when it wakes
  int64_t ops_entered = 0;                  // for op=K faults: ops this rank has started
  const char* stack_mark = nullptr;         // the frame it last blocked in (scheduler.cpp)
  BlockInfo block;                          // the op it last entered, or is waiting for
  // The work `block` describes. Every work is made by submit, which sets both, so a later work
  // at the same address (the pool reuses them) has set it anew.
  const SimWork* block_work = nullptr;
  Context context;
  bool failed_between_ops = false;    // the body failed on its own, not inside an op
  std::exception_ptr last_op_error;   // what the rank's latest failed op delivered
  uint64_t polled_at = ~uint64_t{0};  // the engine's progress count at its last poll
  std::string error_kind;
  std::string error;

  // The op the front end rejected, when that is what the body failed with (from the error
  // itself, detail/rejected_op.hpp): the report names the op the rank failed in even though no
  // backend saw it.
  std::optional<ranks::detail::RejectedOp> rejected;

  // What a rank-operation reads or writes of it: the lines up to the context's clock, the last
  // of the context's hot fields (valgrind's lackey on an all_reduce: reports/simulator.md). The
  // rest serves reports and rare paths, and prefetching it would cost each operation more lines
  // to wait for.
  size_t hot_bytes() const {
    return static_cast<size_t>(reinterpret_cast<const char*>(&context.clock + 1) -
                               reinterpret_cast<const char*>(this));
  }
};

struct Failure {
  Nanos time{0};
  int rank = -1;
  std::string kind;  // an Error::kind() or "deadlock"
  std::string message;
};

class Engine final : public Clock {
 public:
  explicit Engine(const Options& options);
  ~Engine() override;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Report run(const std::function<void()>& body);

  // Clock, for the running rank.
  void sleep_for(Nanos duration) override;
  Nanos now() override { return now_; }

  const Options& options() const { return options_; }
  SimRank& rank(int r) { return *ranks_[static_cast<size_t>(r)]; }
  SimRank* running() { return running_; }  // the running rank, or null on the main fiber
  // How many times the scheduler has switched fibers: what the wall guard watches (from a signal
  // handler on this thread; atomic so that the handler reads a whole value).
  uint64_t switches() const { return switches_.load(std::memory_order_relaxed); }
  // The scheduler tells the engine which fiber it resumes next (rank null: not a rank's fiber).
  void switching_to(boost::fibers::context* fiber, SimRank* rank);
  // The rank whose fiber the engine is handing to the scheduler right now, once; else null.
  SimRank* take_waking() { return std::exchange(waking_, nullptr); }
  // The scheduling algorithm in use while run() runs (it registers itself), or null.
  void attach(Scheduler* scheduler) { scheduler_ = scheduler; }
  ranks::detail::Rng& schedule_rng() { return rng_; }
  WorkPool* work_pool() { return work_pool_; }
  Trace* trace() { return trace_.get(); }

  // Blocks the running rank until work is done, its deadline passes or the run is stuck.
  void wait(SimRank& rank, SimWork& work);
  // The running rank asked whether work is done and it is not (Work::is_completed): the other
  // ranks run first; when nothing has happened since this rank's last poll, spinning could never
  // end, so it waits for the work instead (a failed wait leaves the work done with its error).
  void poll(SimRank& rank, SimWork& work);
  // Marks work done (or failed) and wakes its rank if it is blocked on it.
  void complete(SimWork& work, std::exception_ptr error = nullptr);
  // The same for every work of one op, `delay` later on the virtual clock (the cost model's
  // price of the op): one event per op, however many ranks take part.
  void complete_after(Nanos delay, std::vector<std::shared_ptr<SimWork>> works);
  // complete() for each of a collective's works, in order, dropping each reference as it goes.
  void complete_all(std::vector<std::shared_ptr<SimWork>>&& works,
                    const std::exception_ptr& error = nullptr);

  // The cost model (pricing.cpp): whether ops cost virtual time at all, and what they cost.
  bool priced() const { return priced_; }
  const CostModel& cost_model() const { return cost_model_; }
  int node_of(int global_rank) const { return global_rank / ranks_per_node_; }
  void record_failure(SimRank& rank, std::string kind, std::string message);
  // Collectives whose calls disagree raise Mismatch here, as real backends do only under
  // RANKS_DEBUG=detail: a program that catches it and goes on must not pass as ok.
  void note_mismatch(std::string message) {
    if (!first_mismatch_) first_mismatch_ = std::move(message);
  }
  // The body threw something of its own (not an op's ranks::Error): the report must not say it
  // failed in the op it last entered, which had completed.
  void record_body_failure(SimRank& rank, std::string message, std::string kind = "error");
  // "after entering its op 3 (barrier on group 'world' seq 2 at train.cpp:42)", or "before any
  // op".
  std::string after_last_op(const SimRank& rank) const;

  // Options::backend_from_program: `asking`'s init asks for backend's rules; the first ask
  // makes them the run's (every rank's world, new groups, dead-peer behaviour, the report).
  // Whether they are the run's rules now.
  bool adopt_backend(const SimRank& asking, std::string_view backend, std::source_location where);

  // The hazards the run has passed through (hazards.hpp).
  HazardLog& hazards() { return hazards_; }
  // Whether this engine's run is going on on this thread (a work dropped after the run, by a
  // program that kept its handle, reports nothing).
  bool running_here() const { return running_engine_for_crash() == this; }

  // The ranks' fiber stacks while run_fibers runs (null on rank threads), for the crash report.
  const StackPool* stacks() const { return stacks_; }
  // The ranks' threads while run_threads runs (null on fibers), for the crash report.
  const ThreadTurns* turns() const { return turns_; }
  // What the report says of a rank that overflowed its fiber stack.
  std::string stack_overflow_text(const SimRank& rank) const;

  // Called by the scheduler when no rank is ready.
  void on_idle();
  // The run is over: closes its groups and notes what it left unfinished (ending.cpp).
  void close_run(GroupRegistry& registry);
  // Where `rank` is about to end the process (sim::rank_exits_at), for on_exit_from_rank.
  void note_exit_site(const SimRank& rank, std::source_location where) {
    exit_site_ = {rank.rank, where};
  }
  // A rank called exit() (the process is ending under the run): report, then _exit(1).
  [[noreturn]] void on_exit_from_rank(SimRank& rank);
  // Called as the running rank enters an op, before it is matched: where op=K faults strike.
  void on_op_entered(SimRank& rank, const BlockInfo& op) {
    if (in_forked_child.load(std::memory_order_relaxed)) [[unlikely]] {
      stop_forked_child(rank.rank, "called " + ranks::detail::describe(place_of(op)));
    }
    ++rank.ops_entered;
    ++progress_;
    if (!faults_.empty()) strike_op_faults(rank, op);
  }

 private:
  struct Event {
    Nanos time;
    uint64_t order;
    int rank;
    const Fault* crash;  // null: wake a sleeping rank (or complete `work`); else crash the rank
    std::shared_ptr<std::vector<std::shared_ptr<SimWork>>> works;  // an op whose time is up
    bool operator>(const Event& other) const {
      return time != other.time ? time > other.time : order > other.order;
    }
  };

  // A rank's whole life on its fiber or thread: the body, and how it ended (finished, crashed,
  // failed).
  void run_rank(SimRank& rank, const std::function<void()>& body);
  // The ranks of run() as fibers of this thread, or (Options::rank_threads) on threads of their
  // own; both return when every rank has ended.
  void run_fibers(const std::function<void()>& body);
  void run_threads(const std::function<void()>& body);
  void strike_op_faults(SimRank& rank, const BlockInfo& op);
  void block(SimRank& rank, Nanos deadline);  // rank.block says in what
  // wait()'s rare exits: a dead peer the work needs or a stuck run (throws then; returns when
  // the dead are not involved), and an error the rank was woken with.
  [[gnu::noinline]] void refuse_to_wait(SimRank& rank, SimWork& work);
  [[noreturn, gnu::noinline]] void throw_wake_error(SimRank& rank, SimWork& work);
  // Points rank.block at an async op waited for after others began. Out of line: the BlockInfo
  // it builds took 88 bytes of wait()'s frame, which is on every rank's stack at every op, and
  // a rank-operation of a 16,384-rank run waits on each stack line it touches.
  [[gnu::noinline]] static void describe_late_wait(SimRank& rank, const SimWork& work);
  // Ends the rank's wait for work with error: the work is withdrawn and done, the error thrown.
  [[noreturn]] void fail_wait(SimWork& work, std::exception_ptr error);
  void wake(SimRank& rank);
  void fire_deadlines(Nanos time);
  void declare_stuck();
  // Nothing can run: the sends that ranks are blocked in and that the emulated backend would
  // have buffered (Open MPI's eager messages) complete now, each a buffering hazard. Whether
  // any did (then the run goes on).
  bool release_buffered_sends();
  void crash(SimRank& rank, const Fault& fault, const std::string& where);
  // gloo and mpi notice a dead peer (closed connection, aborted job) and fail at once; nccl
  // waits until its timeout.
  void fail_waiters_on(int dead);
  std::exception_ptr dead_peer_error(const SimRank& waiter, const SimWork& work, int dead) const;
  // Diagnosis (diagnosis.cpp): the wait-for graph of blocked ranks, its first cycle, and the
  // paragraph that says who waits for whom.
  std::vector<int> find_cycle() const;
  std::string describe_blocked(const std::vector<SimRank*>& blocked) const;
  // Where a rank that another waits for is instead: "finished without calling it", "is in
  // recv on group 'world' seq 0 at a.cpp:9", "is sleeping (sleep_for)", ...
  std::string whereabouts(const SimRank& rank) const;
  // "; rank 2 is sleeping (sleep_for); rank 3 is in recv ...": the first few of `ranks`.
  std::string whereabouts_of(const std::vector<int>& ranks) const;
  Report make_report() const;

  Options options_;
  CostModel cost_model_;
  bool priced_ = false;
  int ranks_per_node_ = 1;
  Nanos now_{0};
  uint64_t event_order_ = 0;
  uint64_t progress_ = 0;  // ops entered and completed, ranks woken: what a poll waits to see
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  // Every rank's record in one line-aligned allocation: one each would cost a glibc memalign
  // (~600 instructions) per rank at start-up. ranks_ points into it.
  std::unique_ptr<SimRank[]> rank_records_;
  std::vector<SimRank*> ranks_;
  boost::fibers::context* running_fiber_ = nullptr;
  SimRank* running_ = nullptr;
  std::atomic<uint64_t> switches_{0};
  SimRank* waking_ = nullptr;  // see take_waking()
  Scheduler* scheduler_ = nullptr;
  ThreadTurns* turns_ = nullptr;  // while run_threads runs
  const StackPool* stacks_ = nullptr;  // while run_fibers runs: the ranks' stacks
  Context* running_context_ = nullptr;  // what ranks::current() returns while we simulate
  // Options::on_rank_switch, or null when empty: one test of a pointer per switch.
  const std::function<void(int)>* on_rank_switch_ = nullptr;
  std::optional<Failure> first_failure_;
  std::optional<std::string> first_mismatch_;  // raised, whether or not the program caught it
  bool stuck_ = false;
  SimGroup* world_group_ = nullptr;  // while run() runs
  std::optional<std::pair<int, std::source_location>> exit_site_;  // see note_exit_site
  std::string backend_from_;         // Report::backend_from
  std::vector<Fault> faults_;
  std::vector<int> dead_;                // crashed ranks, in order
  bool peers_fail_fast_ = true;          // see fail_waiters_on
  std::vector<int> cycle_;               // found when the run got stuck
  std::vector<std::string> unfinished_;  // ops started and never completed, for the report
  std::vector<std::string> unstruck_;    // faults the run never reached, for the report
  ranks::detail::Rng rng_;
  std::unique_ptr<Trace> trace_;
  WorkPool* work_pool_ = WorkPool::create();  // orphaned, not deleted: see work_pool.hpp
  HazardLog hazards_;
};

}  // namespace ranks::sim::detail
