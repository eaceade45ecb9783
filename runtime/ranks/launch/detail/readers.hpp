#pragma once
// One reader per launcher; read_launch() dispatches to them.

#include "ranks/launch/env.hpp"
#include "ranks/launch/launch_info.hpp"

namespace ranks::launch::detail {

// torchrun / `ranks run`: RANK and WORLD_SIZE required; LOCAL_RANK and LOCAL_WORLD_SIZE
// optional; MASTER_ADDR required (as torch's env:// requires it: a default such as 127.0.0.1
// would make a multi-node job hang until the timeout instead of failing now); MASTER_PORT
// optional (29500).
LaunchInfo read_pytorch(const Env& env);

// srun: SLURM_PROCID and SLURM_NTASKS required; SLURM_LOCALID optional. See slurm.cpp for the
// node list, the local size and the master address and port.
LaunchInfo read_slurm(const Env& env);

// mpirun: Open MPI's OMPI_COMM_WORLD_RANK / _SIZE (+ _LOCAL_RANK / _LOCAL_SIZE) when any
// OMPI_COMM_WORLD_* is set, else MPICH's PMI_RANK / PMI_SIZE (+ MPI_LOCALRANKID /
// MPI_LOCALNRANKS). MASTER_ADDR required, MASTER_PORT optional (29500), as in MMEngine.
LaunchInfo read_mpi(const Env& env);

}  // namespace ranks::launch::detail
