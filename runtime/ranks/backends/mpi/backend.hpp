#pragma once
// The Open MPI backend: one MPI communicator per group. The world is MPI_COMM_WORLD (mpirun,
// srun or an MPI singleton wires it up; WorldSetup::store is not used).

#include <memory>

#include "ranks/backend.hpp"
#include "ranks/backends/registry.hpp"

namespace ranks::backends::mpi {

// Initialises MPI when nobody has (MPI_THREAD_MULTIPLE when the library has it, else serialised
// calls; MPI_Finalize at exit) and returns this process's world communicator. Throws
// RendezvousError when setup's rank or world size disagree with MPI_COMM_WORLD's, BackendError
// when an MPI call fails.
std::unique_ptr<Backend> create_world(const WorldSetup& setup);

}  // namespace ranks::backends::mpi
