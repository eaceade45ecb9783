#pragma once
// Reading nccl-tests' own output (all_reduce_perf and the rest) as ranks-bench rows, so that
// `ranks calibrate` and `ranks report` take a cluster's nccl-tests logs as they are: the op from
// "# Collective test starting: NAME_perf", the world size and the ranks per node from the
// "#  Rank N ... on HOST" lines, one row per table line (the faster of the out-of-place and
// in-place times, as repeats keep the fastest).

#include <istream>
#include <string>
#include <vector>

#include "bench_results.hpp"

namespace ranks::cli {

// Whether a file whose first non-blank line is this is nccl-tests output.
bool is_nccl_tests_output(const std::string& first_line);
// Every table row of every test in the output, as a row of backend "nccl" with "source"
// FILE:LINE. `op` (a family: all_reduce, ...) overrides the one the output names.
// InvalidArgument, naming the file and line, for a table with no op or no rank lines.
std::vector<Row> read_nccl_tests(std::istream& in, const std::string& path,
                                 const std::string& op = "");

}  // namespace ranks::cli
