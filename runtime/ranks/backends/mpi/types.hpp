#pragma once
// DType -> MPI datatype and ReduceOp -> MPI_Op. MPI's built-in types and ops where they compute
// what the simulator computes; our own (committed byte types, user-defined ops that call
// ranks::detail::reduce_into) for float16, bfloat16, bool and NaN-propagating min/max.

// The C API only: Open MPI's (deprecated) C++ bindings would need libmpi_cxx, which MPI::MPI_C
// does not link.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "ranks/dtype.hpp"
#include "ranks/reduce_op.hpp"

namespace ranks::backends::mpi {

// Creates our datatypes and ops; once per process, after MPI_Init. Throws BackendError.
void init_types();
// Frees them; only right before our own MPI_Finalize.
void free_types();

MPI_Datatype datatype(DType dtype);
// The op that reduces dtype as reduce_into does; Mean maps to the sum (the caller divides after).
// Throws InvalidArgument for a bitwise op on a floating dtype.
MPI_Op reduction(ReduceOp op, DType dtype);

}  // namespace ranks::backends::mpi
