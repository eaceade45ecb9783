#pragma once
// What the two forms of an op share: the non-blocking one (collectives.cpp, polled by a Work) and
// the blocking one (blocking.cpp, on the caller's thread under the watchdog). MPI's own limits
// (tags, int counts), in-place and staging memory, and all_to_all's size exchange.

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "ranks/backends/mpi/work.hpp"

namespace ranks::backends::mpi {

// InvalidArgument: "<op described>: <what>".
[[noreturn]] void invalid(const Comm& comm, const OpRequest& r, const std::string& what);
// MPI counts are int: InvalidArgument past INT_MAX.
int count_of(const Comm& comm, const OpRequest& r, int64_t n);
int count_of(const Comm& comm, const OpRequest& r, const Tensor& t);
// What only MPI can refuse, which the capability table cannot say: a tag past MPI_TAG_UB (MPI
// guarantees 32767). MPI's int counts are checked where each count is taken (count_of).
// Everything else dispatch has checked before the backend sees the request: op.hpp's
// conventions, devices (the table has no cuda for mpi), roots, peers, tags below 0.
void check_request(const Comm& comm, const OpRequest& r);

void copy_bytes(void* dst, const void* src, size_t bytes);
// The in-place ops work on outputs[0]; a caller that passed a distinct input gets it copied in.
Tensor& in_place(OpRequest& r);
std::unique_ptr<std::byte[]> staging(size_t bytes);
// Mean is a sum divided on the ranks that receive it; a no-op for every other op.
void finish_mean(const Comm& comm, const OpRequest& r, Tensor& t);

// all_to_all first swaps the per-pair sizes, so that a disagreement is a Mismatch on both ranks
// of the pair instead of a truncation or a silently short result; then every rank moves the
// smaller of the two sizes, so nobody is left waiting. Its ints hold, for n ranks:
//   mine[2n] (what I send to j, room I have for j) | theirs[2n] | send counts, send
//   displacements, receive counts, receive displacements (n each).
struct AllToAllPlan {
  explicit AllToAllPlan(size_t ranks) : n(ranks), ints(8 * ranks, 0) {}
  size_t n;
  std::vector<int> ints;
  int* mine() { return ints.data(); }
  int* theirs() { return ints.data() + 2 * n; }
  int* send_counts() { return ints.data() + 4 * n; }
  int* send_displs() { return ints.data() + 5 * n; }
  int* recv_counts() { return ints.data() + 6 * n; }
  int* recv_displs() { return ints.data() + 7 * n; }
  size_t send_bytes = 0;  // the staging sizes, once planned
  size_t recv_bytes = 0;
};
// Fills mine() from the request (InvalidArgument past MPI's int counts).
void describe_sizes(const Comm& comm, const OpRequest& r, AllToAllPlan& plan);
// After the exchange of sizes: counts and displacements, and the inputs copied into send.
void plan_moves(const OpRequest& r, AllToAllPlan& plan, std::unique_ptr<std::byte[]>& send,
                std::unique_ptr<std::byte[]>& recv);
// After the moves: Mismatch when the pairs disagreed on sizes, else the outputs filled from recv.
void finish_moves(const Comm& comm, OpRequest& r, AllToAllPlan& plan, const std::byte* recv,
                  const std::string& describe);

}  // namespace ranks::backends::mpi
