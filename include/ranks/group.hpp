#pragma once
// Process groups: the world, and sub-groups made by new_group().

#include <chrono>
#include <memory>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/store.hpp"

namespace ranks {

namespace detail {
struct GroupImpl;
}

class Group {
 public:
  Group() = default;  // the default (world) group of the calling rank, resolved at each use
  explicit Group(std::shared_ptr<detail::GroupImpl> impl) : impl_(std::move(impl)) {}

  bool is_member() const;
  int rank() const;  // rank within this group; -1 when not a member; 0 when not distributed
  int size() const;
  std::string backend() const;  // "" when not distributed
  std::vector<int> global_ranks() const;
  std::string name() const;  // "world", "world/0,2"
  // The timeout for this group's blocking calls (defaults to the process group's).
  std::chrono::milliseconds timeout() const;
  void set_timeout(std::chrono::milliseconds);

  bool is_default() const { return impl_ == nullptr; }
  const std::shared_ptr<detail::GroupImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<detail::GroupImpl> impl_;
};

// Collective over the whole world: every rank calls it with the same ranks (global ranks; order
// does not matter, as in torch group rank i is the i-th smallest). Ranks outside get a group
// whose is_member() is false.
Group new_group(std::vector<int> global_ranks,
                std::source_location where = std::source_location::current());

// The same, on another backend than the world's (torch's new_group(ranks, backend=...)): a gloo
// group for CPU tensors and objects in an nccl job, say. The group follows that backend's rules
// (what it supports, how it fails) in real runs and in the simulator. Its members connect
// through the job's rendezvous store; a world without one (mpi) gets one from rank 0, its
// address passed on by a broadcast on the world. The world's own backend gives the same group
// as the overload above. InvalidArgument for a backend name not in backend_names().
Group new_group(std::vector<int> global_ranks, std::string_view backend,
                std::source_location where = std::source_location::current());

// A group made by its members alone, as torch.distributed makes a backend's groups (torch asks
// the backend for a group on the members only): each member passes the same global ranks and
// name, and the store the members meet through (torch's, under the group's own prefix). Real
// runs: the world's backend made over the members through that store (gloo, nccl), or, for mpi,
// MPI_Comm_create_group over the members. Simulated: a group under the world's rules. No rank outside the group calls it, so nothing checks that the
// members agree before the group's first op.
Group new_group_of_members(std::vector<int> global_ranks, std::string name,
                           std::shared_ptr<Store> store,
                           std::source_location where = std::source_location::current());

}  // namespace ranks
