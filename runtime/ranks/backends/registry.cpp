#include "ranks/backends/registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

}  // namespace ranks::backends
