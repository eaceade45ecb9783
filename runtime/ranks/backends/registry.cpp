#include "ranks/backends/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>

#include "ranks/config.hpp"
#include "ranks/errors.hpp"
#if RANKS_HAS_GLOO
#include "ranks/backends/gloo/backend.hpp"
#endif
#if RANKS_HAS_MPI
#include "ranks/backends/mpi/backend.hpp"
#endif
#if RANKS_HAS_NCCL
#include "ranks/backends/nccl/backend.hpp"
#endif

namespace ranks::backends {

std::vector<std::string> built() {
  std::vector<std::string> names;
  if (RANKS_HAS_GLOO) names.emplace_back("gloo");
  if (RANKS_HAS_MPI) names.emplace_back("mpi");
  if (RANKS_HAS_NCCL) names.emplace_back("nccl");
  return names;
}

bool is_built(std::string_view name) {
  for (const auto& b : built()) {
    if (b == name) return true;
  }
  return false;
}

std::unique_ptr<Backend> create_world(std::string_view name,
                                      [[maybe_unused]] const WorldSetup& setup) {
#if RANKS_HAS_GLOO
  if (name == "gloo") return gloo::create_world(setup);
#endif
#if RANKS_HAS_MPI
  if (name == "mpi") return mpi::create_world(setup);
#endif
#if RANKS_HAS_NCCL
  if (name == "nccl") return nccl::create_world(setup);
#endif
  auto names = built();
  throw Unsupported(
      fmt::format("backend '{}' is not built into this ranks {} (built: {}); rebuild with "
                  "-DRANKS_WITH_{}=ON, or simulate the program with `ranks sim -n N --backend {}`",
                  name, RANKS_VERSION,
                  names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")),
                  name == "gloo"  ? "GLOO"
                  : name == "mpi" ? "MPI"
                                  : "NCCL",
                  name));
}

GroupSpec world_spec(std::string_view backend, const WorldSetup& setup,
                     std::string_view store_use) {
  if (setup.store == nullptr) {
    throw InvalidArgument(fmt::format(
        "{} backend: the world needs a store {} (TCPStore, FileStore, ...); none was given",
        backend, store_use));
  }
  if (setup.world_size < 1 || setup.rank < 0 || setup.rank >= setup.world_size) {
    throw InvalidArgument(fmt::format("{} backend: rank {} is out of range for world size {}",
                                      backend, setup.rank, setup.world_size));
  }
  auto members = std::make_shared<std::vector<int>>(static_cast<size_t>(setup.world_size));
  std::iota(members->begin(), members->end(), 0);
  return GroupSpec{"world", std::move(members), setup.rank};
}

}  // namespace ranks::backends
