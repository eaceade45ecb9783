#pragma once
// DLPack 0.6, the version the project builds against, has no code for bool; later versions
// assign it 6. Exports of bool tensors use it and imports accept it, which keeps bool tensors
// exchangeable with newer producers and consumers (and lets a producer that refuses bool share
// the same memory as uint8, relabelled: python/src/tensors.cpp).

#include <cstdint>

namespace ranks::detail {

inline constexpr uint8_t kDLBoolCode = 6;

}  // namespace ranks::detail
