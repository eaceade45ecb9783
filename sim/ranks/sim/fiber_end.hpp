#pragma once
// Where a rank's fiber ends. Boost 1.74's context::terminate() takes a spinlock whose lock() has
// a 5 KiB frame (a std::random_device for its back-off, constructed once but reserved on every
// call), so a fiber that ends on its own stack writes a second page of that stack for nothing
// else: at 4,096 ranks 4,096 pages, about a tenth of the run (measured: reports/simulator.md).
// The simulator ends each rank's fiber on one scratch stack instead, shared by all.
//
// How: libranks is linked with --wrap for context::terminate(), which Boost's worker_context
// (a template, so compiled into libranks) calls once the rank's function returns. The wrapper
// runs the real terminate() on a Boost.Context fiber whose stack is the scratch. The frames it
// leaves there stay needed until Boost frees the ended fiber (it resumes it once more, to free
// its stack), so the scratch is lent to one ending at a time: the rank asks the scheduler to
// free it at once (Scheduler::free_ended_next), and an ending that finds the scratch still lent
// out runs on its own stack, as before.

#include <boost/context/fiber.hpp>
#include <boost/fiber/context.hpp>
#include <cstddef>

namespace ranks::sim::detail {

class FiberEnd {
 public:
  FiberEnd();  // reserves the scratch; this thread's run ends its ranks' fibers through it
  ~FiberEnd();
  FiberEnd(const FiberEnd&) = delete;
  FiberEnd& operator=(const FiberEnd&) = delete;

  // Whether this build routes terminate() through the scratch (the stack pool then populates
  // one page per stack, not two).
  static constexpr bool enabled() noexcept {
#ifdef RANKS_SIM_END_ON_SCRATCH
    return true;
#else
    return false;
#endif
  }

  // The running rank's function is about to return: `fiber` ends next.
  void expect(boost::fibers::context* fiber) noexcept { expected_ = fiber; }

  // From the terminate() wrapper: ends `fiber` and returns what Boost's worker_context returns,
  // the context that freed it.
  boost::context::fiber end(boost::fibers::context* fiber) noexcept;
  // The FiberEnd of this thread's run, if `fiber` is the one it expects.
  static FiberEnd* expecting(boost::fibers::context* fiber) noexcept;

 private:
  char* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  size_t guard_bytes_ = 0;
  bool lent_ = false;
  boost::fibers::context* expected_ = nullptr;
  FiberEnd* previous_;
};

}  // namespace ranks::sim::detail
