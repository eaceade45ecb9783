#include "sizes.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "ranks/errors.hpp"

namespace ranks::bench {

size_t parse_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string unit = text.substr(digits);
  size_t multiplier = 0;
  if (unit.empty() || unit == "B") multiplier = 1;
  if (unit == "K" || unit == "k" || unit == "KiB") multiplier = size_t{1} << 10;
  if (unit == "M" || unit == "m" || unit == "MiB") multiplier = size_t{1} << 20;
  if (unit == "G" || unit == "g" || unit == "GiB") multiplier = size_t{1} << 30;
  if (digits == 0 || multiplier == 0) {
    throw InvalidArgument(
        fmt::format("size '{}' is not a number of bytes with an optional K, M or G", text));
  }
  // Sizes past 2^50 bytes (a PiB) are typing mistakes, and would overflow once multiplied.
  constexpr size_t most = size_t{1} << 50;
  const std::string number = text.substr(0, digits);
  if (digits > 16 || std::stoull(number) > most / multiplier) {
    throw InvalidArgument(fmt::format("size '{}' is larger than 1 PiB", text));
  }
  return std::stoull(number) * multiplier;
}

std::string format_size(size_t bytes) {
  constexpr const char* units[] = {"B", "KiB", "MiB", "GiB"};
  size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return value == std::floor(value) ? fmt::format("{} {}", value, units[unit])
                                    : fmt::format("{:.1f} {}", value, units[unit]);
}

std::vector<size_t> size_sweep(size_t min_bytes, size_t max_bytes, double factor,
                               size_t increment) {
  if (min_bytes == 0 || max_bytes < min_bytes) {
    throw InvalidArgument(
        fmt::format("size sweep: need 0 < min <= max, got {} and {}", min_bytes, max_bytes));
  }
  if (increment == 0 && !(factor > 1)) {
    throw InvalidArgument(fmt::format("size sweep: factor must be > 1, got {}", factor));
  }
  std::vector<size_t> sizes;
  for (double size = static_cast<double>(min_bytes); size <= static_cast<double>(max_bytes);) {
    sizes.push_back(static_cast<size_t>(size));
    const double next =
        increment > 0 ? size + static_cast<double>(increment) : std::floor(size * factor);
    if (next <= size) {
      // nccl-tests' -f is a whole number; a fraction can round a small size back to itself.
      throw InvalidArgument(fmt::format(
          "size sweep: factor {} does not grow {} bytes (sizes are whole bytes); use a larger "
          "-f (nccl-tests takes a whole number >= 2), a larger -b, or -i",
          factor, static_cast<size_t>(size)));
    }
    size = next;
  }
  return sizes;
}

}  // namespace ranks::bench
