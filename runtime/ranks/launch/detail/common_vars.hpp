#pragma once
// The variable patterns that the pytorch, slurm and mpi launchers share, read and checked once.

#include <string_view>

#include "ranks/launch/detail/var_reader.hpp"
#include "ranks/launch/launch_info.hpp"

namespace ranks::launch::detail {

struct RankVars {
  std::string_view rank;        // required
  std::string_view world_size;  // required
  std::string_view local_rank;  // optional
  std::string_view local_size;  // optional; empty: this launcher has no such variable
};

// Fills rank, world_size, local_rank and local_size, checking 1 <= world_size,
// 0 <= rank < world_size, 1 <= local_size <= world_size and 0 <= local_rank < local_size (or
// < world_size when the local size is unknown).
void read_rank_vars(const VarReader&, const RankVars&, LaunchInfo&);

// MMEngine's rule for the pytorch and mpi launchers: MASTER_ADDR is required (torch's env://
// rendezvous needs it too) and MASTER_PORT defaults to kDefaultMasterPort.
void read_master_vars(const VarReader&, LaunchInfo&);

}  // namespace ranks::launch::detail
