// new_group_of_members() in real runs: a torch.distributed backend's groups are asked for on
// their members only, each with a store of its own (torch's, under the group's prefix), so the
// group's communicator is the world's backend made over the members through that store.
// A backend that rendezvouses otherwise makes such groups itself (mpi) or cannot make them.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ranks/backends/registry.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/errors.hpp"
#include "ranks/real/group_setup.hpp"

namespace ranks {

std::unique_ptr<Backend> Backend::create_member_group(const GroupSpec& spec,
                                                      std::shared_ptr<Store> store) {
  const std::string backend(name());
  if (!capabilities(backend).rendezvous_through_store) {
    throw Unsupported(fmt::format(
        "group '{}' of ranks [{}]: {} makes groups from the world with every rank taking part, "
        "and only its members ask for this one; use new_group() on every rank",
        spec.name, fmt::join(spec.global_ranks(), ", "), backend));
  }
  if (!store) {
    throw InvalidArgument(fmt::format("group '{}': {} needs a store for its members to meet",
                                      spec.name, backend));
  }
  backends::WorldSetup setup = detail::group_setup(spec);
  setup.store = std::move(store);
  return backends::create_world(backend, setup);
}

}  // namespace ranks
