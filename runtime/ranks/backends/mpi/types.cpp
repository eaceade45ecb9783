#include "ranks/backends/mpi/types.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

#include "ranks/backends/mpi/work.hpp"
#include "ranks/detail/reduce.hpp"
#include "ranks/errors.hpp"

namespace ranks::backends::mpi {

namespace {

constexpr std::array all_ops = {ReduceOp::Sum,  ReduceOp::Product, ReduceOp::Min, ReduceOp::Max,
                                ReduceOp::BAnd, ReduceOp::BOr,     ReduceOp::BXor};

// MPI handles are process-wide, like MPI itself; a real process is one rank, so this is not the
// per-rank state DESIGN.md keeps in Context.
struct Handles {
  MPI_Datatype bool_type = MPI_DATATYPE_NULL;
  MPI_Datatype float16_type = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat16_type = MPI_DATATYPE_NULL;
  std::array<MPI_Op, 8> ops{};  // indexed by ReduceOp; Mean uses Sum's
  bool ready = false;
};

Handles& handles() {
  static Handles h;
  return h;
}

std::mutex& init_mutex() {
  static std::mutex m;
  return m;
}

// The DType behind a datatype handle MPI hands back to a user-defined op.
bool dtype_of(MPI_Datatype type, DType& out) {
  const Handles& h = handles();
  if (type == h.bool_type) {
    out = DType::Bool;
  } else if (type == h.float16_type) {
    out = DType::Float16;
  } else if (type == h.bfloat16_type) {
    out = DType::BFloat16;
  } else if (type == MPI_FLOAT) {
    out = DType::Float32;
  } else if (type == MPI_DOUBLE) {
    out = DType::Float64;
  } else {
    return false;
  }
  return true;
}

// MPI_User_function: inout[i] = inout[i] op in[i]. Every op here is commutative bit for bit, so
// which side MPI passes as `in` does not matter. MPI is C: nothing may propagate out of here, and
// reduction() has already rejected everything reduce_into would throw for.
template <ReduceOp Op>
void user_reduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  DType dtype{};
  if (!dtype_of(*type, dtype)) {
    std::fputs("ranks: mpi reduction called with a datatype ranks did not create\n", stderr);
    std::abort();
  }
  try {
    ranks::detail::reduce_into(inout, in, *len, dtype, Op);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranks: mpi reduction failed: %s\n", e.what());
    std::abort();
  }
}

MPI_User_function* user_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return &user_reduce<ReduceOp::Sum>;
    case ReduceOp::Product:
      return &user_reduce<ReduceOp::Product>;
    case ReduceOp::Min:
      return &user_reduce<ReduceOp::Min>;
    case ReduceOp::Max:
      return &user_reduce<ReduceOp::Max>;
    case ReduceOp::BAnd:
      return &user_reduce<ReduceOp::BAnd>;
    case ReduceOp::BOr:
      return &user_reduce<ReduceOp::BOr>;
    case ReduceOp::BXor:
      return &user_reduce<ReduceOp::BXor>;
  }
  return nullptr;
}

void make_bytes(int size, MPI_Datatype& out) {
  check_mpi(MPI_Type_contiguous(size, MPI_BYTE, &out), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&out), "MPI_Type_commit");
}

MPI_Op ours(ReduceOp op) { return handles().ops[static_cast<size_t>(op)]; }

}  // namespace

void init_types() {
  std::lock_guard guard(init_mutex());
  Handles& h = handles();
  if (h.ready) return;
  auto lock = lock_mpi();
  // Distinct handles, even where the layouts agree: the user ops tell dtypes apart by handle.
  make_bytes(1, h.bool_type);
  make_bytes(2, h.float16_type);
  make_bytes(2, h.bfloat16_type);
  for (ReduceOp op : all_ops) {
    check_mpi(MPI_Op_create(user_function(op), /*commute=*/1, &h.ops[static_cast<size_t>(op)]),
              "MPI_Op_create");
  }
  h.ops[static_cast<size_t>(ReduceOp::Mean)] = h.ops[static_cast<size_t>(ReduceOp::Sum)];
  h.ready = true;
}

void free_types() {
  std::lock_guard guard(init_mutex());
  Handles& h = handles();
  if (!h.ready) return;
  for (ReduceOp op : all_ops) MPI_Op_free(&h.ops[static_cast<size_t>(op)]);
  for (MPI_Datatype* t : {&h.bool_type, &h.float16_type, &h.bfloat16_type}) MPI_Type_free(t);
  h = Handles{};
}

MPI_Datatype datatype(DType dtype) {
  const Handles& h = handles();
  switch (dtype) {
    case DType::Bool:
      return h.bool_type;
    case DType::UInt8:
      return MPI_UINT8_T;
    case DType::Int8:
      return MPI_INT8_T;
    case DType::Int32:
      return MPI_INT32_T;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Float16:
      return h.float16_type;
    case DType::BFloat16:
      return h.bfloat16_type;
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
  }
  throw InvalidArgument(fmt::format("mpi: unknown dtype {}", static_cast<int>(dtype)));
}

MPI_Op reduction(ReduceOp op, DType dtype) {
  if (!reduce_op_supports(op, dtype)) {
    throw InvalidArgument(why_reduce_op_unsupported(op, dtype));
  }
  // MPI has no 16-bit floats and no bool arithmetic; its float min/max drop a NaN depending on
  // the operand order, where ours (and the simulator's) always propagate it.
  const bool no_builtin =
      dtype == DType::Bool || dtype == DType::Float16 || dtype == DType::BFloat16;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      return no_builtin ? ours(op) : MPI_SUM;
    case ReduceOp::Product:
      return no_builtin ? ours(op) : MPI_PROD;
    case ReduceOp::Min:
      return no_builtin || is_floating(dtype) ? ours(op) : MPI_MIN;
    case ReduceOp::Max:
      return no_builtin || is_floating(dtype) ? ours(op) : MPI_MAX;
    case ReduceOp::BAnd:
      return no_builtin ? ours(op) : MPI_BAND;
    case ReduceOp::BOr:
      return no_builtin ? ours(op) : MPI_BOR;
    case ReduceOp::BXor:
      return no_builtin ? ours(op) : MPI_BXOR;
  }
  throw InvalidArgument(fmt::format("mpi: unknown reduce op {}", static_cast<int>(op)));
}

}  // namespace ranks::backends::mpi
