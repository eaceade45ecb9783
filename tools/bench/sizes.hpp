#pragma once
// The size sweep, nccl-tests style: -b MIN -e MAX with -f FACTOR (geometric) or -i INCREMENT.

#include <cstddef>
#include <string>
#include <vector>

namespace ranks::bench {

// "8", "4K", "256M", "1G" (powers of 1024, as nccl-tests reads them); InvalidArgument otherwise.
size_t parse_size(const std::string& text);
// "8 B", "4 KiB", "256 MiB": for progress lines.
std::string format_size(size_t bytes);
std::vector<size_t> size_sweep(size_t min_bytes, size_t max_bytes, double factor, size_t increment);

}  // namespace ranks::bench
