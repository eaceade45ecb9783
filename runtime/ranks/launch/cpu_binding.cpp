#include "ranks/launch/cpu_binding.hpp"

#include <fmt/format.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace ranks::launch {

std::vector<int> allowed_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) {
    throw std::runtime_error(
        fmt::format("cannot read this process's CPU affinity: {}", std::strerror(errno)));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  }
  return cpus;
}

int cpu_for_local_rank(const std::vector<int>& cpus, int local_rank) {
  if (cpus.empty()) throw std::invalid_argument("cpu_for_local_rank: no CPUs to bind to");
  if (local_rank < 0) {
    throw std::invalid_argument(fmt::format("cpu_for_local_rank: local rank {} < 0", local_rank));
  }
  return cpus[static_cast<size_t>(local_rank) % cpus.size()];
}

void bind_this_process_to(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    throw std::runtime_error(fmt::format("cannot bind to CPU {}: out of range", cpu));
  }
  cpu_set_t mask;
  CPU_ZERO(&mask);
  CPU_SET(cpu, &mask);
  if (sched_setaffinity(0, sizeof(mask), &mask) != 0) {
    throw std::runtime_error(fmt::format("cannot bind to CPU {}: {}", cpu, std::strerror(errno)));
  }
}

}  // namespace ranks::launch
