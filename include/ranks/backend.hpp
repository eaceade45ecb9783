#pragma once
// What a backend provides: one Backend object per (rank, group) — a communicator.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/op.hpp"
#include "ranks/store.hpp"
#include "ranks/work.hpp"

namespace ranks {

// Identity of a group, the same on every member: deterministic, never a creation counter.
// Every op reads members and rank (size, rank in group); they come first, so that they share a
// cache line with the fields before a GroupImpl's spec.
struct GroupSpec {
  // Ascending global ranks, as torch sorts them: group rank i is (*members)[i]. Shared, because
  // in the simulator every member of a 100,000-rank group would otherwise hold its own copy.
  std::shared_ptr<const std::vector<int>> members;
  int rank = -1;     // this process's rank within the group, -1 if not a member
  std::string name;  // "world", "world/0,2,4", a repeated set gets "#2", "#3", ...

  const std::vector<int>& global_ranks() const { return *members; }
  int size() const { return static_cast<int>(members->size()); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;  // "sim", "gloo", "mpi", "nccl"
  // A cleared request for the front end to build the next op in and then pass to submit(). A
  // backend that keeps each op's request in a record of its own returns that record's, so the
  // request is written once instead of built on the caller's stack and moved there (in the
  // simulator its 216 bytes were a tenth of the cache lines an op touches). submit() must still
  // take any request, drafted or not.
  virtual OpRequest& draft() {
    if (scratch_ == nullptr) {
      scratch_ = std::make_unique<OpRequest>();
    } else {
      *scratch_ = OpRequest{};
    }
    return *scratch_;
  }
  // Starts the operation and returns at once; Work::wait() finishes it.
  virtual Work submit(OpRequest&& request) = 0;
  // A communicator for a group made by new_group(); called on every rank of this (world)
  // backend after the members have agreed. Returns nullptr on ranks outside the group.
  virtual std::unique_ptr<Backend> create_subgroup(const GroupSpec& spec) = 0;
  // A communicator of another backend (a backend_names() entry) for a group made by
  // new_group(ranks, backend); called on every rank of this (world) backend after the members
  // have agreed. Returns nullptr on ranks outside the group. By default, in real runs, that
  // backend's world made over the group's members through the job's rendezvous store
  // (runtime/ranks/real/side_group.cpp); the simulator makes a group under that backend's rules.
  virtual std::unique_ptr<Backend> create_side_group(const GroupSpec& spec,
                                                     std::string_view backend);
  // A communicator for a group made by new_group_of_members(): called on its members only. By
  // default, in real runs, this backend's world made over the members through `store` when the
  // backend rendezvouses through a store (runtime/ranks/real/member_group.cpp), else
  // Unsupported; mpi makes it with MPI_Comm_create_group, the simulator as create_subgroup does.
  virtual std::unique_ptr<Backend> create_member_group(const GroupSpec& spec,
                                                       std::shared_ptr<Store> store);

 private:
  std::unique_ptr<OpRequest> scratch_;  // draft()'s, made on first use
};

}  // namespace ranks
