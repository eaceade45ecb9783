#include "ranks/detail/group_agreement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ranks/errors.hpp"

namespace ranks::detail {

void check_group_agreement(std::string_view op, const uint64_t* hashes, size_t count, uint64_t mine,
                           const std::vector<int>& global_ranks) {
  std::vector<int> same;
  std::vector<int> other;
  for (size_t r = 0; r < count; ++r) (hashes[r] == mine ? same : other).push_back(global_ranks[r]);
  if (other.empty()) return;
  throw Mismatch(fmt::format(
      "{}: the ranks disagree on the group being created: ranks [{}] ask for this rank's member "
      "list and ranks [{}] for another; every rank of the world must call new_group with the "
      "same members, in the same order",
      op, fmt::join(same, ", "), fmt::join(other, ", ")));
}

}  // namespace ranks::detail
