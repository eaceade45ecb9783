#pragma once
// The parts of collect_results() that do not depend on the element type: argument checks, the
// shared-directory exchange and MMEngine's interleaving order.

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ranks/collectives.hpp"
#include "ranks/object/payload.hpp"

namespace ranks::object {

// device is "cpu" or "gpu"; "gpu" takes no tmpdir. Checked first, distributed or not, as in
// MMEngine.
void check_collect_args(std::string_view device, const std::optional<std::filesystem::path>& tmpdir,
                        where_t where);

// Through a directory every rank sees: rank 0 makes a fresh one under tmpdir (default
// ./.dist_test) and tells the others its absolute path; each rank checks it sees rank 0's marker
// there, writes its part, and all ranks exchange what happened (so a rank that cannot see or
// write the directory makes every rank raise the same error, naming it, instead of leaving
// anyone waiting). Rank 0 then reads the parts in rank order into consume(rank, payload) and
// removes the directory it made, and tmpdir as MMEngine does, but only when it is then empty.
void collect_through_directory(Bytes mine, const std::optional<std::filesystem::path>& tmpdir,
                               const std::function<void(int, std::span<const uint8_t>)>& consume,
                               where_t where);

// MMEngine's order: the first element of each part in rank order, then the second of each, ...
// skipping parts that have run out; then the first `size` of those.
template <class T>
std::vector<T> interleave(std::vector<std::vector<T>> parts, size_t size) {
  std::vector<T> out;
  size_t total = 0;
  size_t longest = 0;
  for (const auto& part : parts) {
    total += part.size();
    longest = std::max(longest, part.size());
  }
  out.reserve(std::min(total, size));
  for (size_t i = 0; i < longest && out.size() < size; ++i) {
    for (auto& part : parts) {
      if (i < part.size() && out.size() < size) out.push_back(std::move(part[i]));
    }
  }
  return out;
}

}  // namespace ranks::object
