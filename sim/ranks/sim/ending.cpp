// How a run ends: what it leaves unfinished (ops nobody completed, faults that never struck),
// which its report names, a rank that ends the whole process with exit(), and one that never
// hands the thread back (wall_guard.hpp).

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ranks/detail/check.hpp"
#include "ranks/sim/comm.hpp"
#include "ranks/sim/engine.hpp"

namespace ranks::sim::detail {

namespace {

// The run going on on this thread (per thread, not per rank), for the exit guard.
thread_local Engine* running_engine = nullptr;

// exit() first destroys the calling thread's thread_local objects, newest first. Boost.Fiber's
// scheduler is one of them, and destroying it from a rank's fiber waits for every other fiber
// to end: ranks blocked on each other never do, and the process spins forever. This guard is
// made after Boost's, so its destructor runs first and ends the process with a report instead.
struct ExitGuard {
  ~ExitGuard() {
    Engine* engine = std::exchange(running_engine, nullptr);
    if (engine != nullptr && engine->running() != nullptr) {
      engine->on_exit_from_rank(*engine->running());
    }
  }
};

}  // namespace

void arm_exit_guard(Engine* engine) {
  thread_local ExitGuard guard;
  (void)guard;
  running_engine = engine;
}

Engine* running_engine_for_crash() { return running_engine; }

// Ops a rank started and nobody finished (an isend never received, an async collective the
// others never called) end with an error now, and the report names them.
void Engine::close_run(GroupRegistry& registry) {
  unfinished_ = registry.close_all();
  for (; !events_.empty(); events_.pop()) {
    if (!events_.top().works) continue;
    for (auto& work : *events_.top().works) {
      if (!work->done) unfinished_.push_back(end_unfinished(*work));
    }
  }

  // A fault that never struck means the run did not test what it was asked to.
  for (const Fault& fault : faults_) {
    const SimRank& target = rank(fault.rank);
    if (fault.kind == Fault::Kind::CrashAtTime
            ? fault.at > now_ && target.state != RankState::Crashed
            : target.ops_entered < fault.op) {
      unstruck_.push_back(fault.kind == Fault::Kind::CrashAtTime
                              ? fmt::format("fault '{}' never struck: the run ended at {}",
                                            fault.spec, format_duration(now_))
                              : fmt::format("fault '{}' never struck: rank {} entered {} op{}",
                                            fault.spec, fault.rank, target.ops_entered,
                                            target.ops_entered == 1 ? "" : "s"));
    }
  }
}

void Engine::on_exit_from_rank(SimRank& rank) {
  const std::string after = after_last_op(rank);
  rank.failed_between_ops = true;
  rank.state = RankState::Crashed;
  rank.error_kind = "crash";
  rank.error = fmt::format(
      "rank {} called exit() {}, at virtual time {}; every simulated rank lives in one process, "
      "so the run ends here (return from the body, or throw, to end one rank)",
      rank.rank, after, format_duration(now_));
  if (!first_failure_) first_failure_ = Failure{now_, rank.rank, "crash", rank.error};
  if (trace_) trace_->instant(rank.rank, "exit", now_, rank.error);
  end_process_with_report();
}

void Engine::on_wall_stall() {
  // Whatever happens to the report below (the program's stdout stuck behind the blocked rank's
  // lock on it), the process still ends; the JSON report is written first.
  ::alarm(30);
  SimRank* rank = running_;
  std::string message;
  if (rank != nullptr) {
    message = fmt::format(
        "rank {} has not handed the thread back to the simulator for {} of real time (the run's "
        "timeout), {}: it is blocked or busy outside ranks (a real sleep or lock, I/O, waiting "
        "for another rank by means ranks cannot see, a long computation). Every simulated rank "
        "runs on this one thread, so no other rank could run; real ranks waiting for it would "
        "time out",
        rank->rank, format_duration(options_.timeout), after_last_op(*rank));
    rank->failed_between_ops = true;  // in no op: the report's row gives this as its error
    rank->error_kind = "timeout";
    rank->error = fmt::format("kept the thread for {} of real time, outside ranks ({})",
                              format_duration(options_.timeout), after_last_op(*rank));
    if (trace_) trace_->instant(rank->rank, "stalled", now_, message);
  } else {
    message = fmt::format(
        "the simulator made no progress for {} of real time (the run's timeout) while no rank "
        "was running",
        format_duration(options_.timeout));
  }
  if (!first_failure_) {
    first_failure_ = Failure{now_, rank != nullptr ? rank->rank : -1, "timeout", message};
  }
  end_process_with_report();
}

void Engine::end_process_with_report() {
  if (trace_) trace_->write(*options_.trace, options_.world_size);
  Report report = make_report();
  if (options_.on_exit) {
    options_.on_exit(report);
  } else {
    std::fputs(report.to_text().c_str(), stderr);
  }
  std::fflush(nullptr);
  std::_Exit(1);
}

}  // namespace ranks::sim::detail
