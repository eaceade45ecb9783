#pragma once
// Launcher detection: which launcher started this process, and what it says about the job.
// Meant for init_dist() and infer_launcher() in runtime/ranks/init.cpp.

#include <string>
#include <string_view>

#include "ranks/launch/env.hpp"
#include "ranks/launch/launch_info.hpp"

namespace ranks::launch {

// MMEngine's precedence, first hit wins, presence only (an empty value counts):
// WORLD_SIZE -> "pytorch", SLURM_NTASKS -> "slurm", OMPI_COMM_WORLD_LOCAL_RANK -> "mpi",
// then, beyond MMEngine, PMI_RANK or PMI_SIZE (MPICH, Intel MPI) -> "mpi"; else "none".
// So torchrun inside a SLURM allocation is "pytorch".
std::string infer_launcher(const Env& env);

// The launcher whose variables ranks::main and init_process_group read: infer_launcher's answer,
// except that a process Open MPI's mpirun started (OMPI_COMM_WORLD_LOCAL_RANK) is "mpi" unless
// torchrun's RANK and WORLD_SIZE are both set. salloc and sbatch export SLURM_* to everything in
// the allocation, mpirun included, and a stray WORLD_SIZE in a shell is common; MMEngine's order
// would then read variables that do not describe this job (MMEngine's users name the launcher
// instead).
std::string launcher_for_main(const Env& env);

// Reads and validates what `launcher` ("pytorch" | "slurm" | "mpi") exported; see
// detail/readers.hpp for each launcher's variables. An unknown launcher, a missing required
// variable or an invalid value is an InvalidArgument naming the variable, its value and what was
// expected.
LaunchInfo read_launch(std::string_view launcher, const Env& env);

}  // namespace ranks::launch
