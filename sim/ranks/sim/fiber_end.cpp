#include "ranks/sim/fiber_end.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>

#include "ranks/errors.hpp"

namespace ranks::sim::detail {

namespace {

// terminate() goes 5.4 KiB deep (its lock's frame and Boost's switch below it); the rest is
// margin. Only the pages touched are ever populated: two, once per run.
constexpr size_t scratch_bytes = 32 * 1024;

thread_local FiberEnd* this_thread_end = nullptr;

// The StackAllocator concept for a stack that someone else owns.
struct LentStack {
  boost::context::stack_context stack;
  boost::context::stack_context allocate() { return stack; }
  void deallocate(boost::context::stack_context&) noexcept {}
};

}  // namespace

}  // namespace ranks::sim::detail

#ifdef RANKS_SIM_END_ON_SCRATCH
// Boost.Fiber's context::terminate(), by its mangled name: the linker (--wrap, see
// sim/CMakeLists.txt) sends libranks' calls to the wrapper and __real_ to Boost's. A member
// function returning a class by value and a free function taking the object first share one
// calling convention (the Itanium C++ ABI's), which is what lets C linkage stand in for it.
extern "C" {
boost::context::fiber __real__ZN5boost6fibers7context9terminateEv(
    boost::fibers::context* fiber) noexcept;

[[gnu::visibility("hidden")]] boost::context::fiber __wrap__ZN5boost6fibers7context9terminateEv(
    boost::fibers::context* fiber) noexcept {
  if (auto* end = ranks::sim::detail::FiberEnd::expecting(fiber)) return end->end(fiber);
  return __real__ZN5boost6fibers7context9terminateEv(fiber);
}
}
#endif

namespace ranks::sim::detail {

FiberEnd::FiberEnd() : previous_(this_thread_end) {
  if constexpr (enabled()) {
    void* scratch = mmap(nullptr, scratch_bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (scratch == MAP_FAILED) {
      throw Error(
          fmt::format("sim: cannot reserve a {} KiB stack to end fibers on", scratch_bytes / 1024));
    }
    scratch_ = static_cast<char*>(scratch);
    scratch_bytes_ = scratch_bytes;
    // A guard page under it: should Boost ever go deeper, a fault here and not a corruption.
    guard_bytes_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mprotect(scratch_, guard_bytes_, PROT_NONE);
  }
  this_thread_end = this;
}

FiberEnd::~FiberEnd() {
  this_thread_end = previous_;
  if (scratch_ != nullptr) munmap(scratch_, scratch_bytes_);
}

FiberEnd* FiberEnd::expecting(boost::fibers::context* fiber) noexcept {
  FiberEnd* end = this_thread_end;
  return end != nullptr && end->expected_ == fiber ? end : nullptr;
}

boost::context::fiber FiberEnd::end(boost::fibers::context* fiber) noexcept {
#ifdef RANKS_SIM_END_ON_SCRATCH
  expected_ = nullptr;
  if (lent_ || scratch_ == nullptr) {
    return __real__ZN5boost6fibers7context9terminateEv(fiber);
  }
  lent_ = true;
  boost::context::stack_context stack;
  stack.sp = scratch_ + scratch_bytes_;
  stack.size = scratch_bytes_ - guard_bytes_;
  // terminate() switches away and returns only when Boost frees the fiber, with the context that
  // freed it: what worker_context must return so that Boost.Context frees the fiber's own stack
  // and goes back there. The scratch fiber then ends, handing control back to this stack.
  boost::context::fiber freed_by;
  boost::context::fiber on_scratch(std::allocator_arg, LentStack{stack},
                                   [fiber, &freed_by](boost::context::fiber&& back) {
                                     freed_by = __real__ZN5boost6fibers7context9terminateEv(fiber);
                                     return std::move(back);
                                   });
  std::move(on_scratch).resume();
  lent_ = false;
  return freed_by;
#else
  return fiber->terminate();
#endif
}

}  // namespace ranks::sim::detail
