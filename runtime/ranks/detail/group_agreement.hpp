#pragma once
// new_group's agreement on the real backends: every member of the parent group contributes a
// hash of the member list it asks for (OpRequest::extra), each backend gathers them its own way,
// and this one check says who asked for what.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ranks::detail {

// Throws Mismatch when the gathered hashes (by group rank) differ, naming the global ranks that
// ask for this rank's list and those that ask for another. op: the op's description.
void check_group_agreement(std::string_view op, const uint64_t* hashes, size_t count, uint64_t mine,
                           const std::vector<int>& global_ranks);

}  // namespace ranks::detail
