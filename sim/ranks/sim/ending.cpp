// How a run ends: what it leaves unfinished (ops nobody completed, faults that never struck),
// which its report names, and a rank that ends the whole process with exit().

#include <fmt/format.h>

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
  const std::string site = exit_site_ && exit_site_->first == rank.rank
                               ? " at " + ranks::detail::where_str(exit_site_->second)
                               : std::string();
  rank.failed_between_ops = true;
  rank.state = RankState::Crashed;
  rank.error_kind = "crash";
  rank.error = fmt::format(
      "rank {} called exit(){} {}, at virtual time {}; every simulated rank lives in one "
      "process, so the run ends here (return from the body, or throw, to end one rank)",
      rank.rank, site, after, format_duration(now_));
  if (!first_failure_) first_failure_ = Failure{now_, rank.rank, "crash", rank.error};
  if (trace_) {
    trace_->instant(rank.rank, "exit", now_, rank.error);
    trace_->write(*options_.trace, options_.world_size);
  }
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
