#pragma once
// Each op described once in MPI's terms, then run in either form from that description: as MPI's
// blocking call on the caller's thread (blocking.cpp) or as its non-blocking twin, polled by a
// Work (collectives.cpp). The description says which MPI call, with which buffers, counts,
// datatype, reduction and root, and what follows once it has completed (a mean's division,
// copying staging memory out, new_group's agreement, all_to_all's second call).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ranks/backends/mpi/requests.hpp"
#include "ranks/backends/mpi/work.hpp"

namespace ranks::backends::mpi {

// One MPI call; issue() makes it blocking or non-blocking.
struct MpiCall {
  enum class Fn : uint8_t {
    Barrier,
    Allreduce,
    Bcast,
    Reduce,
    Allgather,
    Gather,
    Scatter,
    ReduceScatterBlock,
    Alltoall,   // fixed counts (all_to_all's swap of sizes, new_group's hashes use Allgather)
    Alltoallv,  // counts and displacements from the op's AllToAllPlan
    Send,
    Recv,
  };
  Fn fn = Fn::Barrier;
  const void* send = nullptr;  // MPI_IN_PLACE for in-place calls
  void* recv = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  int root = 0;  // the root, or the peer of a send or receive (MPI_ANY_SOURCE)
  int tag = 0;
  const AllToAllPlan* plan = nullptr;  // Alltoallv's counts and displacements

  // "MPI_Allreduce", or "MPI_Iallreduce" for the non-blocking form.
  const char* name(bool nonblocking) const;
};

// Makes the call: blocking when request is null, else non-blocking into *request. MPI's code.
int issue(const MpiCall& call, MPI_Comm comm, MPI_Request* request);

// What follows the op's first call once it has completed.
enum class Then : uint8_t {
  Done,
  DivideMean,      // outputs[0] /= the group size (mean is a sum divided where it lands)
  Unstage,         // copy staging.recv into the outputs, unstage_each bytes each
  CheckAgreement,  // new_group: every member's hash of the member list is the same
  MoveAllToAll,    // all_to_all: the sizes are swapped; plan_moves(), its call, finish_moves()
  CheckReceived,   // recv: the sender's element count is the tensor's (needs the status)
};

// What follows a call, in 16 trivially copyable bytes: a non-blocking op's step keeps it in
// std::function's own storage, with no allocation.
struct After {
  Then then = Then::Done;
  size_t unstage_each = 0;  // Unstage: the bytes of each output
};

struct OpPlan {
  MpiCall call;
  After after;
};

// The op in MPI's terms, allocating the staging it needs (Staging: work.hpp). Throws
// InvalidArgument past MPI's int counts. Makes no MPI call.
OpPlan plan_op(const Comm& comm, OpRequest& r, Staging& staging);
// all_to_all's second call, once the sizes are swapped (fills staging's buffers).
MpiCall plan_moves_call(OpRequest& r, Staging& staging);
// What `after` says once the op's calls have completed (for MoveAllToAll, once plan_moves_call's
// call has too); nothing for CheckReceived, which reads the receive's status (collectives.cpp).
void finish(const Comm& comm, OpRequest& r, Staging& staging, After after);

}  // namespace ranks::backends::mpi
