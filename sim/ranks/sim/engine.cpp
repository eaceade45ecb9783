#include "ranks/sim/engine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/all.hpp>
#include <algorithm>
#include <numeric>

#include "ranks/capabilities.hpp"
#include "ranks/detail/check.hpp"
#include "ranks/errors.hpp"
#include "ranks/sim/comm.hpp"
#include "ranks/sim/fiber_end.hpp"
#include "ranks/sim/interruption.hpp"
#include "ranks/sim/prefetch.hpp"
#include "ranks/sim/scheduler.hpp"
#include "ranks/sim/stack.hpp"
#include "ranks/sim/thread_turns.hpp"
#include "ranks/sim/wall_guard.hpp"

namespace ranks::sim::detail {

namespace {

size_t default_stack_bytes(int world_size) { return world_size <= 4096 ? 256 * 1024 : 64 * 1024; }
// What glibc gives a thread by default (the soft stack limit of a usual shell): what the
// libraries a rank thread runs expect to have.
constexpr size_t default_thread_stack_bytes = size_t{8} << 20;

// How far ahead of the fiber being made the stack pool prefetches the top of a slot: far enough
// that the slot's lines have arrived when its fiber is made, so making thousands of fibers does
// not wait on each top's miss in turn (measured: reports/simulator.md).
constexpr size_t fibers_made_ahead = 4;

}  // namespace

Engine::Engine(const Options& options)
    : options_(options), rng_(options.seed), hazards_(options.accept) {
  if (options.world_size < 1) {
    throw InvalidArgument(
        fmt::format("sim: world_size must be at least 1, got {}", options.world_size));
  }
  if (options.ranks_per_node < 0) {
    throw InvalidArgument(
        fmt::format("sim: ranks_per_node must be 0 (one node) or positive, "
                    "got {}",
                    options.ranks_per_node));
  }
  if (options.timeout.count() <= 0) {
    throw InvalidArgument(
        fmt::format("sim: timeout must be positive, got {} ms", options.timeout.count()));
  }
  if (std::ranges::find(backend_names(), options.backend) == backend_names().end()) {
    throw InvalidArgument(fmt::format("sim: backend '{}' is not one of {}", options.backend,
                                      fmt::join(backend_names(), ", ")));
  }
  faults_ = parse_faults(options.faults, options.world_size);
  if (!options.model.empty()) cost_model_ = load_cost_model(options.model);
  priced_ = !cost_model_.is_free();
  if (priced_ && options.ranks_per_node > 0 && options.ranks_per_node < options.world_size &&
      !cost_model_.prices_inter_node()) {
    throw InvalidArgument(fmt::format(
        "sim: cost model '{}' has no figures for links between nodes (was it calibrated on one "
        "machine?), but {} ranks per node put the {} ranks on {} nodes, so every op between "
        "nodes would cost nothing; simulate one node (ranks_per_node 0), or give the model "
        "\"inter\" figures",
        cost_model_.name, options.ranks_per_node, options.world_size,
        (options.world_size + options.ranks_per_node - 1) / options.ranks_per_node));
  }
  ranks_per_node_ = options.ranks_per_node == 0 ? options.world_size : options.ranks_per_node;
  if (cost_model_.nccl) {
    // NCCL runs one rank per GPU: a node holds at most gpus_per_node ranks, and left to the
    // model ranks fill nodes of that many.
    const int gpus = cost_model_.nccl->gpus_per_node;
    if (options.ranks_per_node > gpus) {
      throw InvalidArgument(fmt::format(
          "sim: cost model '{}' has {} GPUs per node and NCCL runs one rank per GPU, but "
          "ranks_per_node is {}; give at most {} (0: nodes of {})",
          cost_model_.name, gpus, options.ranks_per_node, gpus, gpus));
    }
    if (options.ranks_per_node == 0) ranks_per_node_ = std::min(gpus, options.world_size);
  }
  peers_fail_fast_ = ranks::capabilities(options.backend).dead_peer_noticed_at_once;
  if (options_.on_rank_switch) on_rank_switch_ = &options_.on_rank_switch;
  for (const Fault& fault : faults_) {
    if (fault.kind == Fault::Kind::CrashAtTime) {
      events_.push(Event{fault.at, event_order_++, fault.rank, &fault, nullptr});
    }
  }
  if (options.trace) trace_ = std::make_unique<Trace>();
  rank_records_ = std::make_unique<SimRank[]>(static_cast<size_t>(options.world_size));
  ranks_.reserve(static_cast<size_t>(options.world_size));
  for (int r = 0; r < options.world_size; ++r) {
    ranks_.push_back(&rank_records_[static_cast<size_t>(r)]);
    ranks_.back()->rank = r;
  }
}

Engine::~Engine() { work_pool_->orphan(); }

void Engine::switching_to(boost::fibers::context* fiber, SimRank* rank) {
  running_fiber_ = fiber;
  running_ = rank;
  // Only this thread writes it: a plain increment, not a locked read-modify-write.
  switches_.store(switches_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  running_context_ = rank != nullptr ? &rank->context : nullptr;
  if (on_rank_switch_ != nullptr) [[unlikely]] (*on_rank_switch_)(rank != nullptr ? rank->rank : -1);
}

void Engine::run_fibers(const std::function<void()>& body) {
  const int world_size = options_.world_size;
  StackPool stacks(static_cast<size_t>(world_size), options_.stack_bytes != 0
                                                        ? options_.stack_bytes
                                                        : default_stack_bytes(world_size));
  stacks_ = &stacks;
  FiberEnd fiber_end;
  boost::fibers::use_scheduling_algorithm<Scheduler>(*this, options_.seed, world_size);
  arm_exit_guard(this);  // after Boost's scheduler exists: see ending.cpp
  {
    WallGuard wall_guard(*this, options_.timeout);
    // The fibers are detached, so that Boost frees each as it ends (fiber_end.hpp), and the
    // main fiber waits for the last rank to end instead of joining each. Not with Boost's mutex
    // and condition variable: their spinlocks take 5 KiB of the last rank's stack.
    boost::fibers::context* main_fiber = boost::fibers::context::active();
    int ranks_running = world_size;
    for (int r = 0; r < world_size; ++r) {
      SimRank* rank = ranks_[static_cast<size_t>(r)];
      stacks.prefetch_top(fibers_made_ahead);
      waking_ = rank;  // a new fiber is scheduled as it is made
      boost::fibers::fiber(std::allocator_arg, PooledStack{&stacks}, [&, rank] {
        // Boost deletes a fiber's properties with it.
        running_fiber_->set_properties(new RankProps(running_fiber_, rank));
        run_rank(*rank, body);
        if (--ranks_running == 0) running_fiber_->schedule(main_fiber);
        fiber_end.expect(running_fiber_);
        scheduler_->free_ended_next();
      }).detach();
      waking_ = nullptr;
    }
    while (ranks_running > 0) main_fiber->suspend();
  }
  // A rank that overflowed its stack without bringing the process down has written over the
  // stack below its own: whatever the run ended with, that is its first failure.
  if (const long slot = stacks.overflowed(nullptr); slot >= 0 && slot < world_size) {
    SimRank& rank = *ranks_[static_cast<size_t>(slot)];
    rank.state = RankState::Crashed;
    rank.error_kind = "crash";
    rank.error = stack_overflow_text(rank);
    first_failure_ = Failure{now_, rank.rank, "crash", rank.error};
  }
  stacks_ = nullptr;
  // Each rank's fiber was freed as it ended (Scheduler::free_ended_next). Boost frees any other
  // ended fiber (one a program made inside a rank) when its dispatcher next runs: make it run
  // now, while the stacks are still mapped.
  boost::this_fiber::sleep_for(std::chrono::nanoseconds(0));
  boost::fibers::use_scheduling_algorithm<boost::fibers::algo::round_robin>();
  arm_exit_guard(nullptr);
}

void Engine::run_threads(const std::function<void()>& body) {
  ThreadTurns::Hooks hooks{options_.on_turn_given, options_.on_turn_taken};
  // This thread only waits while the ranks run, so it watches them itself (no wall guard): the
  // report of a rank that keeps its turn is written from here, with where the rank is now.
  ThreadTurns turns(*this, options_.seed, options_.world_size,
                    options_.stack_bytes != 0 ? options_.stack_bytes : default_thread_stack_bytes,
                    options_.timeout, std::move(hooks));
  turns_ = &turns;
  try {
    turns.run([&](SimRank& rank) {
      ranks::detail::set_context_slot(&running_context_);
      arm_exit_guard(this);
      run_rank(rank, body);
      arm_exit_guard(nullptr);  // the thread's end is not the process's
      ranks::detail::set_context_slot(nullptr);
    });
  } catch (...) {
    turns_ = nullptr;
    throw;
  }
  turns_ = nullptr;
}

Report Engine::run(const std::function<void()>& body) {
  OutsiderWatch outsiders(*this);
  const int world_size = options_.world_size;
  const int per_node = ranks_per_node_;
  GroupRegistry registry(*this);
  auto everyone = std::make_shared<std::vector<int>>(static_cast<size_t>(world_size));
  std::iota(everyone->begin(), everyone->end(), 0);
  GroupSpec world_spec{std::move(everyone), -1, "world"};
  std::shared_ptr<SimGroup> world = registry.get(world_spec, ranks::capabilities(options_.backend));
  world_group_ = world.get();

  for (int r = 0; r < world_size; ++r) {
    Context& context = ranks_[static_cast<size_t>(r)]->context;
    context.initialized = true;
    context.started_by_main = true;
    context.rank = r;
    context.world_size = world_size;
    context.local_rank = r % per_node;
    context.local_size = std::min(per_node, world_size - r / per_node * per_node);
    context.backend_name = options_.backend;
    context.timeout = options_.timeout;
    context.clock = this;
    context.rng.seed(options_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(r));
    auto impl = ranks::detail::make_group_impl();
    impl->spec = world_spec;
    impl->spec.rank = r;
    impl->backend_name = options_.backend;
    impl->capabilities = &ranks::capabilities(options_.backend);
    impl->timeout = options_.timeout;
    impl->backend = std::make_unique<SimComm>(*this, registry, world, r, r);
    context.world = std::move(impl);
  }

  auto previous_slot = ranks::detail::set_context_slot(&running_context_);
  {
    InterruptionReport interruption(*this);
    if (options_.rank_threads) {
      run_threads(body);
    } else {
      run_fibers(body);
    }
  }
  ranks::detail::set_context_slot(previous_slot);
  running_context_ = nullptr;
  running_ = nullptr;

  world_group_ = nullptr;
  close_run(registry);
  Report report = make_report();
  for (auto& rank : ranks_) rank->context.reset();  // drops the communicators before the groups
  if (trace_) trace_->write(*options_.trace, world_size);
  return report;
}

bool Engine::adopt_backend(const SimRank& asking, std::string_view backend,
                           std::source_location where) {
  if (!options_.backend_from_program || !backend_from_.empty()) return backend == options_.backend;
  if (std::ranges::find(backend_names(), backend) == backend_names().end()) return false;
  options_.backend = std::string(backend);
  const BackendCapabilities& rules = ranks::capabilities(options_.backend);
  peers_fail_fast_ = rules.dead_peer_noticed_at_once;
  if (world_group_ != nullptr) world_group_->adopt_rules(rules);
  for (SimRank* rank : ranks_) {
    rank->context.backend_name = options_.backend;
    if (ranks::detail::GroupImpl* world = rank->context.world.get()) {
      world->backend_name = options_.backend;
      world->capabilities = &rules;
    }
  }
  const bool located = where.file_name() != nullptr && *where.file_name() != '\0';
  backend_from_ = fmt::format("rank {}'s init{} asked for {} (no --backend)", asking.rank,
                              located ? " at " + ranks::detail::where_str(where) : std::string(),
                              backend);
  return true;
}

void Engine::block(SimRank& rank, Nanos deadline) {
  rank.state = RankState::Blocked;
  rank.deadline = deadline;
  if (turns_ != nullptr) {
    turns_->block(rank);
    return;
  }
  rank.fiber = running_fiber_;
  // Where on its stack the rank waits, for the scheduler to prefetch around when it is next to
  // run: the depth depends on how deep in the program's own calls the op was made.
  rank.stack_mark = static_cast<const char*>(__builtin_frame_address(0));
  rank.fiber->suspend();
}

void Engine::wake(SimRank& rank) {
  if (rank.state != RankState::Blocked) return;
  boost::fibers::context* fiber = std::exchange(rank.fiber, nullptr);
  if (fiber == nullptr && turns_ == nullptr) return;
  rank.state = RankState::Runnable;
  rank.deadline = never;
  rank.own_deadline = false;
  rank.waiting_on = nullptr;
  if (turns_ != nullptr) {
    turns_->ready(rank);
  } else {
    scheduler_->ready(fiber, &rank);
  }
}

void Engine::wait(SimRank& rank, SimWork& work) {
  // Every blocking op of every rank comes through here, and this frame is on the rank's stack
  // while it waits: the rare cases are handled out of line.
  while (!work.done) {
    if ((!dead_.empty() && peers_fail_fast_) || stuck_) refuse_to_wait(rank, work);
    Nanos deadline =
        work.timeout.count() > 0 && now_ <= never - work.timeout ? now_ + work.timeout : never;
    rank.waiting_on = &work;
    rank.own_deadline = work.own_deadline;
    if (rank.block_work != &work) describe_late_wait(rank, work);
    block(rank, deadline);
    if (rank.wake_error) throw_wake_error(rank, work);
  }
}

void Engine::describe_late_wait(SimRank& rank, const SimWork& work) {
  rank.block = work.info();
  rank.block_work = &work;
}

void Engine::refuse_to_wait(SimRank& rank, SimWork& work) {
  if (!dead_.empty() && peers_fail_fast_) {
    for (int dead : dead_) {
      if (work.group.involves(work, dead)) fail_wait(work, dead_peer_error(rank, work, dead));
    }
  }
  if (stuck_) {
    fail_wait(work,
              std::make_exception_ptr(Deadlock(fmt::format(
                  "rank {} cannot start waiting in {} at {}: the run is already stuck", rank.rank,
                  op_label(work.request), ranks::detail::where_str(work.request.where)))));
  }
}

void Engine::throw_wake_error(SimRank& rank, SimWork& work) {
  fail_wait(work, std::exchange(rank.wake_error, nullptr));
}

void Engine::fail_wait(SimWork& work, std::exception_ptr error) {
  // The op is over for this rank, as a real backend's is when it times out or loses a peer: its
  // Work reports it completed, with the error (Work::is_completed, Work::exception).
  work.group.withdraw(work);
  work.error = error;
  work.owner.last_op_error = error;
  work.done = true;
  if (trace_) {  // the op's slice, as long as the rank was blocked in it
    const BlockInfo info = work.info();
    trace_->slice(work.owner.rank, info.op, info.group ? *info.group : "", info.seq, work.started,
                  now_, ranks::detail::where_str(info.where));
  }
  std::rethrow_exception(error);
}

void Engine::poll(SimRank& rank, SimWork& work) {
  if (work.done || running_ != &rank) return;
  if (stuck_) throw Deadlock(fmt::format("rank {} cannot poll: the run is stuck", rank.rank));
  if (rank.polled_at != progress_) {
    rank.polled_at = progress_;
    if (turns_ != nullptr) {
      turns_->yield(rank);
    } else {
      waking_ = &rank;  // Boost calls the scheduler's awakened(), which takes it
      running_fiber_->yield();
    }
    return;
  }
  try {
    wait(rank, work);
  } catch (...) {
    if (rank.stopped_by_engine) throw;  // a stuck run unwinds the rank
  }
}

void Engine::complete(SimWork& work, std::exception_ptr error) {
  if (work.done) return;
  ++progress_;
  work.done = true;
  work.error = std::move(error);
  if (work.error) work.owner.last_op_error = work.error;
  if (trace_) {
    const BlockInfo info = work.info();
    trace_->slice(work.owner.rank, info.op, info.group ? *info.group : "", info.seq, work.started,
                  now_, ranks::detail::where_str(info.where));
  }
  if (work.owner.waiting_on == &work) wake(work.owner);
}

void Engine::complete_all(std::vector<std::shared_ptr<SimWork>>&& works,
                          const std::exception_ptr& error) {
  // A collective's last arrival completes every member's work, and waking each reads its
  // SimRank: two dependent misses per member once the ranks no longer fit in cache. Prefetched
  // down the list in stages, the second reading the pointer the first brought in, they overlap.
  // (A work's first line holds its count, done flag, error and owner: work_pool.hpp, comm.hpp;
  // what wake() reads and writes of a SimRank is its first line; it no longer reads the fiber's
  // control block, Scheduler::ready.) +10 % at 16,384 ranks.
  constexpr size_t stage = 8;
  const size_t n = works.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + 3 * stage < n) {
      prefetch_range(work_block(works[i + 3 * stage].get()), kPrefetchLine);
    }
    if (i + 2 * stage < n) prefetch_range(&works[i + 2 * stage]->owner, 64);
    complete(*works[i], error);
    works[i].reset();  // now, while its line is cached, not in a second pass over them all
  }
}

void Engine::complete_after(Nanos delay, std::vector<std::shared_ptr<SimWork>> works) {
  if (delay.count() <= 0) {
    complete_all(std::move(works));
    return;
  }
  const int owner = works.front()->owner.rank;
  events_.push(Event{now_ + delay, event_order_++, owner, nullptr,
                     std::make_shared<std::vector<std::shared_ptr<SimWork>>>(std::move(works))});
}

void Engine::strike_op_faults(SimRank& rank, const BlockInfo& op) {
  for (const Fault& fault : faults_) {
    if (fault.rank != rank.rank || fault.op != rank.ops_entered) continue;
    if (fault.kind == Fault::Kind::DelayAtOp) {
      if (trace_) trace_->instant(rank.rank, "delay", now_, fault.spec);
      // The sleep is the op's, and reports say so: `op` may be rank.block itself, which the
      // sleep overwrites.
      const BlockInfo entered = op;
      const SimWork* work = rank.block_work;
      sleep_for(fault.by);
      rank.block = entered;
      rank.block_work = work;
    } else if (fault.kind == Fault::Kind::CrashAtOp) {
      crash(rank, fault,
            fmt::format("entering its op {}, {} on group '{}' seq {} at {}", fault.op, op.op,
                        op.group ? *op.group : "", op.seq, ranks::detail::where_str(op.where)));
      throw CrashUnwind{};
    }
  }
}

void Engine::crash(SimRank& rank, const Fault& fault, const std::string& where) {
  rank.state = RankState::Crashed;
  rank.error_kind = "crash";
  rank.error = fmt::format("rank {} crashed (fault '{}') {}, at virtual time {}", rank.rank,
                           fault.spec, where, format_duration(now_));
  if (!first_failure_) first_failure_ = Failure{now_, rank.rank, "crash", rank.error};
  dead_.push_back(rank.rank);
  if (trace_) trace_->instant(rank.rank, "crashed", now_, rank.error);
  if (peers_fail_fast_) fail_waiters_on(rank.rank);
}

std::exception_ptr Engine::dead_peer_error(const SimRank& waiter, const SimWork& work,
                                           int dead) const {
  const BlockInfo info = work.info();
  return std::make_exception_ptr(RankFailure(ranks::detail::lost_peer_text(
      waiter.rank, fmt::format("rank {}", dead), ranks_[static_cast<size_t>(dead)]->error, place_of(info),
      fmt::format("the {} backend reports a dead peer at once", options_.backend))));
}

void Engine::fail_waiters_on(int dead) {
  for (auto& waiter : ranks_) {
    if (waiter->state != RankState::Blocked || waiter->waiting_on == nullptr) continue;
    if (!waiter->waiting_on->group.involves(*waiter->waiting_on, dead)) continue;
    waiter->wake_error = dead_peer_error(*waiter, *waiter->waiting_on, dead);
    wake(*waiter);
  }
}

void Engine::sleep_for(Nanos duration) {
  SimRank* rank = running();
  if (rank == nullptr) throw InvalidArgument("sim: sleep_for called outside a simulated rank");
  if (in_forked_child.load(std::memory_order_relaxed)) [[unlikely]] {
    stop_forked_child(rank->rank, "called sleep_for");
  }
  if (duration.count() <= 0) return;
  if (stuck_) throw Deadlock(fmt::format("rank {} cannot sleep: the run is stuck", rank->rank));
  Nanos start = now_;
  events_.push(Event{now_ + duration, event_order_++, rank->rank, nullptr, nullptr});
  rank->waiting_on = nullptr;
  // While it sleeps, reports say so; once it wakes, its last op is again the one it entered
  // last ("after entering its op 3 (all_reduce ... at train.py:9)"), not the sleep.
  const BlockInfo entered = rank->block;
  const SimWork* entered_work = rank->block_work;
  rank->block = BlockInfo{"sleep_for", nullptr, -1, {}};
  rank->block_work = nullptr;
  block(*rank, never);
  if (rank->wake_error) std::rethrow_exception(std::exchange(rank->wake_error, nullptr));
  rank->block = entered;
  rank->block_work = entered_work;
  if (trace_) trace_->slice(rank->rank, "sleep_for", "", -1, start, now_, "");
}

void Engine::on_idle() {
  Nanos next_event = events_.empty() ? never : events_.top().time;
  Nanos next_deadline = never;
  Nanos next_own_deadline = never;
  for (const auto& rank : ranks_) {
    if (rank->state != RankState::Blocked) continue;
    next_deadline = std::min(next_deadline, rank->deadline);
    if (rank->own_deadline) next_own_deadline = std::min(next_own_deadline, rank->deadline);
  }
  // With no event pending nothing can ever change: every blocked rank would wait forever, and
  // reporting that as a deadlock beats reporting the timeouts it would eventually cause.
  if (next_event == never) {
    if (release_buffered_sends()) return;
    // A dead peer under nccl is not a deadlock: the survivors' watchdogs time out. Nor is a
    // rank waiting with a deadline of its own (Work::wait(timeout)): it goes on after it.
    if (!dead_.empty() && !peers_fail_fast_ && next_deadline != never) {
      now_ = next_deadline;
      fire_deadlines(now_);
      return;
    }
    if (next_own_deadline != never) {
      now_ = next_own_deadline;
      fire_deadlines(now_);
      return;
    }
    declare_stuck();
    return;
  }
  if (next_deadline < next_event) {
    now_ = next_deadline;
    fire_deadlines(now_);
    return;
  }
  now_ = next_event;
  while (!events_.empty() && events_.top().time == now_) {
    Event event = events_.top();
    events_.pop();
    SimRank& target = rank(event.rank);
    if (event.works) {
      complete_all(std::move(*event.works));
    } else if (event.crash == nullptr) {
      ++progress_;
      wake(target);
    } else if (target.state == RankState::Blocked) {
      std::string where = target.waiting_on == nullptr
                              ? std::string("while sleeping")
                              : fmt::format("while in {} at {}", target.block.op,
                                            ranks::detail::where_str(target.block.where));
      // Its half of the op goes first, so that peers in it count as waiting for a dead rank;
      // and it is woken while still Blocked (crash() marks it Crashed, which wake() skips).
      if (target.waiting_on != nullptr) target.waiting_on->group.withdraw(*target.waiting_on);
      target.wake_error = std::make_exception_ptr(CrashUnwind{});
      wake(target);
      crash(target, *event.crash, where);
    }
  }
}

void Engine::fire_deadlines(Nanos time) {
  // Every message is written before any rank is woken: a rank timing out at the same moment is
  // still "in" its op for the others' messages.
  std::vector<SimRank*> due;
  for (auto& rank : ranks_) {
    if (rank->state == RankState::Blocked && rank->deadline == time) due.push_back(rank);
  }
  for (SimRank* rank : due) {
    auto* work = rank->waiting_on;
    std::string waiting_for;
    if (work != nullptr) {
      waiting_for = work->group.describe_missing(*work);
      if (!waiting_for.empty()) waiting_for += whereabouts_of(work->group.waiting_for(*work));
    }
    rank->wake_error = std::make_exception_ptr(Timeout(
        ranks::detail::timeout_text(rank->rank, work ? work->timeout : Nanos{0},
                                    place_of(rank->block), {}, waiting_for, {})));
  }
  // What each timeout leaves of its group on the emulated backend (after every wake error is
  // set, so that ranks timing out together each keep their own Timeout).
  for (SimRank* rank : due) {
    if (SimWork* work = rank->waiting_on; work != nullptr) {
      work->group.after_timeout(
          *work, fmt::format("rank {}'s {} timed out at {}", rank->rank, op_label(work->request),
                             ranks::detail::where_str(work->request.where)));
    }
  }
  for (SimRank* rank : due) wake(*rank);
}

}  // namespace ranks::sim::detail
