#include "ranks/init.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "ranks/config.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/context.hpp"
#include "ranks/errors.hpp"
#include "ranks/launch/launcher.hpp"

namespace ranks {

void init_dist(std::string_view launcher, std::string_view backend, InitOptions options) {
  if (launcher != "pytorch" && launcher != "slurm" && launcher != "mpi") {
    throw InvalidArgument(fmt::format(
        "init_dist: invalid launcher type '{}'; expected pytorch, slurm or mpi", launcher));
  }
  options.backend = backend;
  init_process_group(options);
}

std::string infer_launcher() {
  // A simulated rank answers as the same program would under `ranks run` with that backend (the
  // torchrun variables, or mpirun for mpi), so that a program choosing its path by launcher takes
  // the distributed one in the simulator too; the simulator sets no launcher variables.
  if (detail::simulating_on_this_thread() && current().initialized) {
    return std::string(capabilities(current().backend_name).launcher);
  }
  return launch::infer_launcher(launch::Env::process());
}

void destroy_process_group() { current().reset(); }

bool is_initialized() { return current().initialized; }
bool is_distributed() { return current().initialized; }

// torch's answer for a rank outside the group is -1, as get_rank's (MMEngine passes both on).
int get_world_size(const Group& group) { return group.is_member() ? group.size() : -1; }
int get_rank(const Group& group) { return group.rank(); }

std::optional<std::string> get_backend(const Group& group) {
  if (!current().initialized) return std::nullopt;
  return group.backend();
}

int get_local_rank() {
  const Context& context = current();
  return context.initialized ? context.local_rank : 0;
}

int get_local_size() {
  const Context& context = current();
  return context.initialized ? context.local_size : 1;
}

std::pair<int, int> get_dist_info(const Group& group) {
  return {get_rank(group), get_world_size(group)};
}

bool is_main_process(const Group& group) { return group.rank() == 0; }

void sleep_for(std::chrono::nanoseconds duration) {
  if (duration.count() < 0) {
    throw InvalidArgument(fmt::format("sleep_for: duration {} ns is negative", duration.count()));
  }
  if (Clock* clock = current().clock) {
    clock->sleep_for(duration);
  } else {
    std::this_thread::sleep_for(duration);
  }
}

std::chrono::nanoseconds now() {
  if (Clock* clock = current().clock) return clock->now();
  return std::chrono::steady_clock::now().time_since_epoch();
}

}  // namespace ranks
