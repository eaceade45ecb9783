#pragma once
// What must agree between the ranks' calls of one collective (op, reduce op, root, dtype,
// element count, device type, new_group members), as a fixed-size record that can travel
// between processes, and the field-by-field comparison every mismatch report uses: the
// simulator's (always on) and the real backends' RANKS_DEBUG=detail check.

#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "ranks/op.hpp"

namespace ranks::detail {

// Trivial on purpose: it travels between processes as its bytes.
struct Fingerprint {
  OpKind kind;
  ReduceOp reduce_op;
  DType dtype;
  Device::Type device;
  bool has_tensor;
  int32_t root;
  uint32_t line;
  int64_t numel;
  uint64_t extra;
  char file[64];  // the call site's file name (no directories), cut to fit
  char api[24];   // the object collective the op is part of (OpRequest::api), or empty
};

Fingerprint fingerprint_of(const OpRequest& request);
// The fields on which two calls of one collective disagree, e.g. "dtype (float32 vs int64)";
// empty when they agree. all_to_all pieces may differ in size (they are checked pair by pair).
std::vector<std::string> differences(const Fingerprint& a, const Fingerprint& b);
// "all_reduce(sum, float32 x 4 on cpu) at train.cpp:42"; the op of an object collective as
// "gather_object's all_gather(uint8 x 1040 on cpu) at eval.cpp:9".
std::string describe(const Fingerprint& f);

}  // namespace ranks::detail
