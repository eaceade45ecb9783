#pragma once
// A Chrome/Perfetto trace of a simulated run: one track per rank, one slice per op on the virtual
// clock (from the call to its completion, so blocked time is the slice's width).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ranks::sim::detail {

class Trace {
 public:
  void slice(int rank, std::string_view name, std::string_view group, int64_t seq,
             std::chrono::nanoseconds start, std::chrono::nanoseconds end, std::string_view where);
  void instant(int rank, std::string_view name, std::chrono::nanoseconds at,
               std::string_view detail);
  void write(const std::filesystem::path& path, int world_size) const;

 private:
  struct Entry {
    int rank;
    bool instant;
    std::string name, group, where;
    int64_t seq;
    int64_t start_ns, end_ns;
  };
  std::vector<Entry> entries_;
};

}  // namespace ranks::sim::detail
