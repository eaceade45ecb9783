#pragma once
// SLURM's tasks-per-node syntax, as in SLURM_TASKS_PER_NODE and SLURM_STEP_TASKS_PER_NODE:
// one count per node, in node-list order, with runs compressed as "count(xrepeat)".

#include <string_view>
#include <vector>

namespace ranks::launch {

// "4(x2),3" -> {4, 4, 3}; "2" -> {2}. Counts and repeats are positive whole numbers; anything
// else is an InvalidArgument quoting the input and the 0-based position.
std::vector<int> expand_tasks_per_node(std::string_view spec);

}  // namespace ranks::launch
