#pragma once
// Open MPI ranks must be started by mpirun: MPI_COMM_WORLD comes from it, not from the
// torchrun-style variables `ranks run` sets. `ranks run --backend mpi` and `ranks bench --backend
// mpi` hand their processes to mpirun through these.

#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace ranks::cli {

// mpirun -np N on this node with RANKS_BACKEND=mpi, then the program and its arguments.
// bind_to: "core" (each rank on one core, two ranks to a core allowed), "none", or "" for
// mpirun's own policy. tag_output: each line of a rank's comes with its rank (TaggedLine).
std::vector<std::string> mpirun_command(int world_size, const std::string& bind_to,
                                        const std::vector<std::string>& program,
                                        bool tag_output = false);

// A line of `mpirun --tag-output`: "[1,3]<stdout>:text" is rank 3's "text". nullopt for a line
// of mpirun's own.
struct TaggedLine {
  int rank = 0;
  std::string text;
};
std::optional<TaggedLine> parse_tagged_line(const std::string& line);

// Which rank mpirun says failed first and how ("exited with status 3", "was killed by signal 6
// (Aborted)"), read from mpirun's own last lines; nullopt when they do not say.
struct MpirunFailure {
  int rank = 0;
  std::string how;
};
std::optional<MpirunFailure> parse_mpirun_failure(const std::deque<std::string>& lines);

// Replaces this process with argv (looked up in PATH); throws if it cannot.
[[noreturn]] void exec_program(std::vector<std::string> argv);

}  // namespace ranks::cli
