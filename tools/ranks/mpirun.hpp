#pragma once
// Open MPI ranks must be started by mpirun: MPI_COMM_WORLD comes from it, not from the
// torchrun-style variables `ranks run` sets. `ranks run --backend mpi` and `ranks bench --backend
// mpi` hand their processes to mpirun through these.

#include <string>
#include <vector>

namespace ranks::cli {

// mpirun -np N on this node with RANKS_BACKEND=mpi, then the program and its arguments.
// bind_to: "core" (each rank on one core, two ranks to a core allowed), "none", or "" for
// mpirun's own policy.
std::vector<std::string> mpirun_command(int world_size, const std::string& bind_to,
                                        const std::vector<std::string>& program);

// Replaces this process with argv (looked up in PATH); throws if it cannot.
[[noreturn]] void exec_program(std::vector<std::string> argv);

}  // namespace ranks::cli
