#include "ranks/context.hpp"

#include <utility>

namespace ranks {

namespace {
// Per thread, not per rank: which simulator (if any) runs fibers on this thread.
thread_local detail::ContextResolver resolver = nullptr;

Context& process_context() {
  static Context context;
  return context;
}
}  // namespace

Context& current() {
  if (resolver != nullptr) {
    if (Context* simulated = resolver()) return *simulated;
  }
  return process_context();
}

void Context::reset() {
  Clock* kept_clock = clock;
  *this = Context{};
  clock = kept_clock;
}

namespace detail {

ContextResolver set_context_resolver(ContextResolver r) { return std::exchange(resolver, r); }

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace detail
}  // namespace ranks
