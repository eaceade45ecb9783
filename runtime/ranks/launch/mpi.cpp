#include "ranks/launch/detail/common_vars.hpp"
#include "ranks/launch/detail/readers.hpp"

namespace ranks::launch::detail {

namespace {

constexpr RankVars kOpenMpi = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                               "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"};
// MPICH's Hydra process manager (also Intel MPI's).
constexpr RankVars kMpich = {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};

}  // namespace

LaunchInfo read_mpi(const Env& env) {
  VarReader vars(env, "mpi", "start the program with mpirun");
  LaunchInfo info;
  info.launcher = "mpi";
  // Any Open MPI variable selects Open MPI, so that a half-set environment reports the Open MPI
  // variable that is missing rather than a PMI one.
  bool open_mpi = env.has(kOpenMpi.rank) || env.has(kOpenMpi.world_size) ||
                  env.has(kOpenMpi.local_rank) || env.has(kOpenMpi.local_size);
  if (!open_mpi && !env.has(kMpich.rank) && !env.has(kMpich.world_size)) {
    vars.fail(
        "neither OMPI_COMM_WORLD_RANK (Open MPI) nor PMI_RANK (MPICH, Intel MPI) is set; start "
        "the program with mpirun");
  }
  read_rank_vars(vars, open_mpi ? kOpenMpi : kMpich, info);
  if (!env.has("MASTER_ADDR")) {
    // The usual slip: mpirun without RANKS_BACKEND gets the default backend, which rendezvous
    // over TCP; the mpi backend needs no address.
    vars.fail(
        "MASTER_ADDR is not set: under mpirun, RANKS_BACKEND=mpi (mpirun -x RANKS_BACKEND=mpi) "
        "needs none; gloo and nccl need the host of rank 0 (MASTER_ADDR=127.0.0.1 on one "
        "machine, passed with mpirun -x)");
  }
  read_master_vars(vars, info);
  return info;
}

}  // namespace ranks::launch::detail
