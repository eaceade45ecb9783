#pragma once
// A peer's marshal payload, checked before CPython reads it. marshal.loads trusts the lengths it
// reads: six bytes announcing a list of 2^31 items make it allocate 16 GiB before it finds the
// items missing. The check walks the stream without making any object, and accepts only the
// types the sending side marshals (plain_objects.cpp), each container announcing no more items
// than bytes are left (an item takes at least one), nested at most kMaxPlainDepth deep. What
// CPython then allocates is bounded by a small multiple of the payload's size.
//
// Pure C++ over bytes, no Python: the fuzz target builds it on its own.

#include <cstdint>
#include <span>
#include <string>

namespace ranks::python {

// Containers nested deeper than this go through pickle (marshal itself stops at 2,000, and a
// simulated rank's C stack is what its reads recurse on).
inline constexpr int kMaxPlainDepth = 1000;

// Empty when `payload` is one such marshal stream with nothing after it; else what is wrong,
// for a message ("announces a list of 2147483647 items with 1 byte left").
std::string marshal_stream_problem(std::span<const uint8_t> payload);

}  // namespace ranks::python
