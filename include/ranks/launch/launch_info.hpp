#pragma once
// What a launcher (torchrun / `ranks run`, srun, mpirun) tells a process about its job.

#include <optional>
#include <string>
#include <vector>

namespace ranks::launch {

// torch's and MMEngine's default rendezvous port when MASTER_PORT is not set.
inline constexpr int kDefaultMasterPort = 29500;

struct LaunchInfo {
  std::string launcher;  // "pytorch" | "slurm" | "mpi"
  int rank = 0;          // 0 <= rank < world_size
  int world_size = 1;
  // Empty when the launcher does not say: the runtime then derives them from the hostnames the
  // ranks exchange through the store. Each may be present without the other.
  std::optional<int> local_rank;         // 0 <= local_rank < local_size (or world_size)
  std::optional<int> local_size;         // 1 <= local_size <= world_size
  std::string master_addr;               // where rank 0 hosts the store; never empty
  int master_port = kDefaultMasterPort;  // 1..65535
  // Where master_addr and master_port came from, for rendezvous error messages, e.g.
  // "MASTER_ADDR=n1, MASTER_PORT unset (default 29500)".
  std::string master_origin;
  // slurm: the expanded node list (the step's, when srun exports it), in SLURM's order;
  // other launchers: empty.
  std::vector<std::string> hosts;
  // pytorch: non-empty when torchrun's agent hosts the store at master_addr:master_port
  // (TORCHELASTIC_USE_AGENT_STORE=True): the key prefix torch's workers use there,
  // "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>". Every rank is then the store's client.
  std::string agent_store_prefix;
};

}  // namespace ranks::launch
