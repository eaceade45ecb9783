#pragma once
// What a group's communicator is made from in real runs, whichever way the group was asked for
// (new_group(ranks, backend), new_group_of_members()): this process's place in the world, the
// world's timeout, and the group; the caller adds the store its members meet through.

#include "ranks/backends/registry.hpp"
#include "ranks/context.hpp"

namespace ranks::detail {

inline backends::WorldSetup group_setup(const GroupSpec& spec) {
  const Context& context = current();
  backends::WorldSetup setup;
  setup.rank = context.rank;
  setup.world_size = context.world_size;
  setup.local_rank = context.local_rank;
  setup.timeout = context.world->timeout;
  setup.group = spec;
  return setup;
}

}  // namespace ranks::detail
