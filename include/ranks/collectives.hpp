#pragma once
// Tensor collectives and point-to-point. Every rank argument (src, dst) is a rank within the
// group, as in MPI. Each blocking call has an asynchronous twin named *_async (isend and irecv
// for point-to-point) that returns a Work; the blocking call is exactly the twin plus wait().
// The trailing std::source_location is filled in by the compiler: it is how reports name the
// line that called the op.

#include <source_location>
#include <string_view>
#include <vector>

#include "ranks/group.hpp"
#include "ranks/reduce_op.hpp"
#include "ranks/tensor.hpp"
#include "ranks/work.hpp"

namespace ranks {

constexpr int any_source = -1;

using where_t = std::source_location;
#define RANKS_WHERE where_t where = where_t::current()

void all_reduce(Tensor&, ReduceOp = ReduceOp::Sum, const Group& = {}, RANKS_WHERE);
void all_reduce(Tensor&, std::string_view op, const Group& = {}, RANKS_WHERE);
std::vector<Tensor> all_gather(const Tensor&, const Group& = {}, RANKS_WHERE);
std::vector<Tensor> gather(const Tensor&, int dst = 0, const Group& = {},
                           RANKS_WHERE);  // empty on every rank but dst
void broadcast(Tensor&, int src = 0, const Group& = {}, RANKS_WHERE);
void reduce(Tensor&, int dst = 0, ReduceOp = ReduceOp::Sum, const Group& = {}, RANKS_WHERE);
void scatter(Tensor& out, const std::vector<Tensor>& in, int src = 0, const Group& = {},
             RANKS_WHERE);
void reduce_scatter(Tensor& out, const std::vector<Tensor>& in, ReduceOp = ReduceOp::Sum,
                    const Group& = {}, RANKS_WHERE);
void all_to_all(std::vector<Tensor>& out, const std::vector<Tensor>& in, const Group& = {},
                RANKS_WHERE);

void send(const Tensor&, int dst, const Group& = {}, int tag = 0, RANKS_WHERE);
int recv(Tensor&, int src = any_source, const Group& = {}, int tag = 0,
         RANKS_WHERE);  // returns the sender's rank within the group
Work isend(const Tensor&, int dst, const Group& = {}, int tag = 0, RANKS_WHERE);
Work irecv(Tensor&, int src = any_source, const Group& = {}, int tag = 0, RANKS_WHERE);

// Asynchronous twins. Output vectors that are passed empty are filled with new tensors shaped
// like the input; the tensors are written when the Work completes.
Work barrier_async(const Group& = {}, RANKS_WHERE);
Work all_reduce_async(Tensor&, ReduceOp = ReduceOp::Sum, const Group& = {}, RANKS_WHERE);
Work all_reduce_async(Tensor&, std::string_view op, const Group& = {}, RANKS_WHERE);
Work all_gather_async(std::vector<Tensor>& out, const Tensor& in, const Group& = {}, RANKS_WHERE);
Work gather_async(std::vector<Tensor>& out, const Tensor& in, int dst = 0, const Group& = {},
                  RANKS_WHERE);
Work broadcast_async(Tensor&, int src = 0, const Group& = {}, RANKS_WHERE);
Work reduce_async(Tensor&, int dst = 0, ReduceOp = ReduceOp::Sum, const Group& = {}, RANKS_WHERE);
Work scatter_async(Tensor& out, const std::vector<Tensor>& in, int src = 0, const Group& = {},
                   RANKS_WHERE);
Work reduce_scatter_async(Tensor& out, const std::vector<Tensor>& in, ReduceOp = ReduceOp::Sum,
                          const Group& = {}, RANKS_WHERE);
Work all_to_all_async(std::vector<Tensor>& out, const std::vector<Tensor>& in, const Group& = {},
                      RANKS_WHERE);

#undef RANKS_WHERE

}  // namespace ranks
