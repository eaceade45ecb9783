#pragma once
// Which of the ranks an op waits on are frozen: their process stopped by a signal (SIGSTOP,
// SIGTSTP) or held at a debugger's stop. A backend cannot tell a frozen peer from a slow one;
// the kernel can, for a process on this host (its state in /proc). So each rank's process is
// made known at the world's creation, by host name and pid: through the rendezvous store (key
// ranks/process/<rank>, read only when a timeout asks) or, for backends without one, a table
// the backend fills (mpi gathers it over its own communicator, which takes no op's sequence
// number).

#include <string>
#include <vector>

namespace ranks {
class Store;
}

namespace ranks::detail {

struct RankProcess {
  std::string host;
  int pid = 0;
};

// This process, as the others see it.
RankProcess this_process();

// Whether process pid of this host is stopped: by a signal (state T) or at a debugger's stop (t).
bool process_stopped(int pid);

// Publishes this rank's process to the job's store.
void publish_process(Store& store, int global_rank);

// The world's processes by global rank, for a backend without a store.
void set_rank_processes(std::vector<RankProcess> processes);

// "; rank 0 (pid 1234) is frozen: its process is stopped (SIGSTOP, SIGTSTP or a debugger)" for
// each of global_ranks whose process is on this host and stopped; "" when none is, or none can
// be told. Never throws, and asks the store for at most a few seconds: it runs on the way to a
// failure report.
std::string frozen_peers(const std::vector<int>& global_ranks);

}  // namespace ranks::detail
