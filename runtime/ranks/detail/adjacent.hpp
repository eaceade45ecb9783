#pragma once
// Gathers receive into one buffer (gloo and MPI take a single receive pointer). When the caller's
// outputs already lie back to back, that buffer is the outputs themselves: no staging block and no
// copy out of it. Object collectives arrange exactly that (object/exchange.cpp).

#include <cstdint>

#include "ranks/tensor_list.hpp"

namespace ranks::detail {

// The first output's bytes when every output is host memory of the input's size and output j
// starts right after output j - 1; nullptr otherwise, and also when the input overlaps them (MPI
// forbids a send buffer inside the receive buffer).
uint8_t* adjacent_outputs(TensorList& outputs, const Tensor& input);

}  // namespace ranks::detail
