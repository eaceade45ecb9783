#pragma once
// `ranks run --bind-to core`: each local rank on one CPU of those the launcher may use, as
// mpirun's --bind-to core does. Unbound ranks on a small machine migrate between cores and share
// them at random, which on a 2-core CI machine moves a two-rank gloo all_reduce of 1 MiB by
// 2-3x between launches (reports/bench/README.md); bound, each rank keeps its core's caches.

#include <vector>

namespace ranks::launch {

// The CPUs this process may run on, in increasing order (its affinity mask).
std::vector<int> allowed_cpus();

// The CPU local rank `local_rank` is bound to: the ranks take the allowed CPUs in turn, so with
// more ranks than CPUs they share them evenly (mpirun's overload-allowed binding).
int cpu_for_local_rank(const std::vector<int>& cpus, int local_rank);

// Restricts the calling process to one CPU; throws std::runtime_error naming the CPU and the
// reason when the kernel refuses.
void bind_this_process_to(int cpu);

}  // namespace ranks::launch
