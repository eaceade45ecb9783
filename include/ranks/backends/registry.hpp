#pragma once
// The real backends this build has, and how to make one. Which were built is in the generated
// ranks/config.hpp (RANKS_HAS_GLOO, RANKS_HAS_MPI, RANKS_HAS_NCCL); nothing else asks. Each is a
// library of its own, loaded by create_world the first time it is asked for (plugin.hpp).

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/backend.hpp"
#include "ranks/store.hpp"

namespace ranks::backends {

// Everything a backend needs to make the world communicator of one process.
struct WorldSetup {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;            // the device for nccl
  std::shared_ptr<Store> store;  // rendezvous (null for mpi, which mpirun wires up)
  std::chrono::milliseconds timeout{0};
  // A group of new_group(ranks, backend) (Backend::create_side_group): the communicator is made
  // over its members only, rank and world_size above still being the process's in the world.
  // create_world returns null on a rank outside it, after taking whatever part in making it the
  // backend needs (mpi splits its world: every rank calls). Unset: the world.
  std::optional<GroupSpec> group;
};

// The group a backend makes from setup (the world, or setup.group), after the checks every
// backend makes: a store for `store_use` (what the backend needs it for) and a rank inside the
// world size. InvalidArgument naming `backend` otherwise.
GroupSpec world_spec(std::string_view backend, const WorldSetup& setup, std::string_view store_use);

// The backends compiled into this library ("gloo", "mpi", "nccl"), in that order.
std::vector<std::string> built();
bool is_built(std::string_view name);

// The world communicator of backend `name`; Unsupported naming the built ones when it is not
// built, or naming the library when it was built but cannot be loaded.
std::unique_ptr<Backend> create_world(std::string_view name, const WorldSetup& setup);

}  // namespace ranks::backends
