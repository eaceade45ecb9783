#include "ranks/context.hpp"

#include <random>
#include <utility>

#include "ranks/detail/foreign_call.hpp"
#include "ranks/detail/line_aligned.hpp"
#include "ranks/group.hpp"

namespace ranks {

namespace {
// Per thread, not per rank: where the simulator running fibers on this thread (if any) keeps
// the running rank's Context. initial-exec: current() is on every op's path, and the general
// TLS model would cost a __tls_get_addr call each time.
thread_local Context* const* simulated_slot __attribute__((tls_model("initial-exec"))) = nullptr;

// A real process draws its seeds (sync_random_seed) from the OS, as MMEngine's unseeded NumPy
// generator does; the simulator seeds each rank's generator from the run's seed instead.
Context& process_context() {
  static Context context = [] {
    Context c;
    std::random_device entropy;
    c.rng.seed((uint64_t{entropy()} << 32) | entropy());
    return c;
  }();
  return context;
}
}  // namespace

Context& current() {
  if (simulated_slot != nullptr && *simulated_slot != nullptr) return **simulated_slot;
  return process_context();
}

void Context::reset() {
  Clock* kept_clock = clock;
  detail::Rng kept_rng = rng;
  *this = Context{};
  clock = kept_clock;
  rng = kept_rng;
}

namespace detail {

std::shared_ptr<GroupImpl> make_group_impl() {
  return std::allocate_shared<GroupImpl>(LineAligned<GroupImpl>{});
}

ObjectCallScope::ObjectCallScope(const char* api, const Group& group, std::source_location where)
    : context_(current()),
      outer_(context_.object_call),
      group_(group.is_default() ? context_.world.get() : group.impl().get()) {
  if (outer_.api == nullptr) context_.object_call = {api, &group, where};
  if (group_ != nullptr) {
    outer_api_ = group_->object_api;
    if (outer_api_ == nullptr) group_->object_api = context_.object_call.api;
  }
}

ObjectCallScope::~ObjectCallScope() {
  context_.object_call = outer_;
  if (group_ != nullptr) group_->object_api = outer_api_;
}

Context* const* set_context_slot(Context* const* slot) {
  return std::exchange(simulated_slot, slot);
}

bool simulating_on_this_thread() { return simulated_slot != nullptr; }

std::atomic<ForeignCallHook> foreign_call_hook{nullptr};

bool on_simulated_rank() { return simulated_slot != nullptr && *simulated_slot != nullptr; }

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace detail
}  // namespace ranks
