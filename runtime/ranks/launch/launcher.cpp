#include "ranks/launch/launcher.hpp"

#include <fmt/format.h>

#include "ranks/errors.hpp"
#include "ranks/launch/detail/readers.hpp"

namespace ranks::launch {

std::string infer_launcher(const Env& env) {
  if (env.has("WORLD_SIZE")) return "pytorch";
  if (env.has("SLURM_NTASKS")) return "slurm";
  if (env.has("OMPI_COMM_WORLD_LOCAL_RANK")) return "mpi";
  // Not in MMEngine, which knows only Open MPI: MPICH's and Intel MPI's Hydra export PMI_*.
  // Checked after Open MPI so that MMEngine's answers never change.
  if (env.has("PMI_RANK") || env.has("PMI_SIZE")) return "mpi";
  return "none";
}

std::string launcher_for_main(const Env& env) {
  if (env.has("RANK") && env.has("WORLD_SIZE")) return "pytorch";
  if (env.has("OMPI_COMM_WORLD_LOCAL_RANK")) return "mpi";
  return infer_launcher(env);
}

LaunchInfo read_launch(std::string_view launcher, const Env& env) {
  if (launcher == "pytorch") return detail::read_pytorch(env);
  if (launcher == "slurm") return detail::read_slurm(env);
  if (launcher == "mpi") return detail::read_mpi(env);
  throw InvalidArgument(fmt::format(
      "unknown launcher \"{}\"; expected pytorch, slurm or mpi (\"none\" means the process was "
      "not started by a launcher, so there is nothing to read)",
      launcher));
}

}  // namespace ranks::launch
