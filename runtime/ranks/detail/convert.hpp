#pragma once
// Element-wise dtype conversion on the host, with C++'s conversions (integers from floats
// truncate toward zero; to bool is != 0) and 16-bit floats going through float.

#include <cstdint>

#include "ranks/dtype.hpp"

namespace ranks::detail {

void convert(const void* src, DType from, void* dst, DType to, int64_t count);

}  // namespace ranks::detail
