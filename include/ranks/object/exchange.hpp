#pragma once
// Byte payloads through the tensor collectives, so object collectives run on every backend the
// tensor collectives run on. Payloads travel as uint8 tensors on comm_device() (the GPU for
// nccl, as MMEngine does). Sizes go first, checked against max_payload_bytes() on every rank
// alike, so a rank that is out of step makes every rank raise the same error instead of one
// rank allocating garbage and the others hanging.

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ranks/collectives.hpp"
#include "ranks/object/payload.hpp"

namespace ranks::object {

// Payloads up to this many bytes travel in the same collective as their length (one collective
// instead of two: small objects, such as metrics, statuses and paths, are latency-bound). For
// all_gather_bytes the heads grow to carry the group's last largest payload too (up to 16 MiB),
// so that repeated calls with objects of a steady size also take one collective.
// Each head starts with the payload's length and the root the sender was called with (-1 for
// an all_gather): a gather whose ranks name different roots is a Mismatch on every rank, even
// when its payloads travel in one all_gather, which has no root of its own to check.
inline constexpr uint64_t head_preamble_bytes = 16;
inline constexpr uint64_t eager_bytes = 1024 - head_preamble_bytes;

// Host memory an exchange writes into; a large block goes back when freed to the calling
// thread's spares for its next exchange (exchange.cpp says why).
struct BlockRelease {
  size_t bytes = 0;  // of a mapped block; 0: from malloc
  void operator()(uint8_t* block) const;
};
using Block = std::unique_ptr<uint8_t[], BlockRelease>;

// While one lives, this thread's exchanges take their large blocks from the thread's spares and
// give them back (exchange.cpp; at most two of up to 64 MiB, kept for the thread's life),
// instead of taking them from malloc and freeing them each call. For callers whose decoding
// makes few malloc'd objects (the Python package: CPython allocates its own): there it spares a
// page fault per page of every block. A C++ decode of many small nodes (a std::map of strings)
// runs faster without it: glibc compacts its heap when the exchange's blocks come and go, and
// its small allocations find room at once.
class KeepExchangeBlocks {
 public:
  KeepExchangeBlocks();
  ~KeepExchangeBlocks();
  KeepExchangeBlocks(const KeepExchangeBlocks&) = delete;
  KeepExchangeBlocks& operator=(const KeepExchangeBlocks&) = delete;
};

// Every member's `each` bytes after a gather, in host memory, in group-rank order. On the cpu
// they were received straight into back-to-back slots of one block (gloo and MPI gather into one
// buffer: no staging block, no copy out of it); from a GPU comm device they are host copies.
struct Slots {
  Block block;                  // the slots' memory, on the cpu
  std::vector<Tensor> tensors;  // one per member (none on a gather's non-root)
};

// The payloads of a group's members, in group-rank order, in host memory. They stay in the
// (padded) slots they were received in, from `offset` on: slicing them out would copy every byte
// once more.
class Parts {
 public:
  Parts(Slots slots, std::vector<uint64_t> lengths, size_t offset = 0);
  size_t size() const { return lengths_.size(); }
  std::span<const uint8_t> operator[](size_t rank) const;

 private:
  Slots slots_;
  std::vector<uint64_t> lengths_;
  size_t offset_;
};

// Every member's object from parts, in group-rank order; the entry of group rank `self` is a copy
// of `own` instead: a rank has its object already, and copying a container costs far less than
// decoding it (std::map's copy clones the tree, no comparisons and no rebalancing).
template <class T>
std::vector<T> decode_parts(const Parts& parts, const T& own, int self, const Group& group);

// Whether the call has nobody to exchange with (not distributed, or a group of one), so the helper
// returns its one-rank answer. A rank outside the group gets InvalidArgument, as the tensor
// collectives give it: a silent one-rank answer there is a wrong answer.
bool alone_in(const Group& group, std::string_view op, where_t where);

// `op` names the object collective in messages ("all_gather_object").
Parts all_gather_bytes(Bytes mine, const Group& group, std::string_view op, where_t where);
// On dst (a group rank): every member's payload; elsewhere nullopt.
std::optional<Parts> gather_bytes(Bytes mine, int dst, const Group& group, std::string_view op,
                                  where_t where);
// src's payload, on every member (src's own is left as it is).
void broadcast_bytes(Bytes& payload, int src, const Group& group, std::string_view op,
                     where_t where);
// Hands every member's payload to consume(group_rank, payload) on dst, one at a time and in
// rank order, received point-to-point: dst never holds more than one raw part, so its memory is
// bounded by what consume keeps (the result), not by world size x the largest part.
void stream_to_root(Bytes mine, int dst, const Group& group, std::string_view op,
                    const std::function<void(int, std::span<const uint8_t>)>& consume,
                    where_t where);

// "rank 3" or "rank 3 of group 'world/0,3'", for messages.
std::string describe_rank(int group_rank, const Group& group);

template <class T>
std::vector<T> decode_parts(const Parts& parts, const T& own, int self, const Group& group) {
  std::vector<T> out;
  out.reserve(parts.size());
  for (size_t r = 0; r < parts.size(); ++r) {
    if (static_cast<int>(r) == self) {
      out.push_back(own);
    } else {
      decode_into(parts[r], out.emplace_back(), describe_rank(static_cast<int>(r), group));
    }
  }
  return out;
}

}  // namespace ranks::object
