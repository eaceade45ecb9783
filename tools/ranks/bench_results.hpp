#pragma once
// Reading `ranks-bench --json` output (one JSON object per line) for calibrate and report.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ranks/sim/calibrate.hpp"

namespace ranks::cli {

using Row = nlohmann::ordered_json;

// Every line of every file; InvalidArgument names the file and line of a malformed one. A file
// of nccl-tests output (nccl_tests_output.hpp) is read as its rows; `nccl_tests_op` overrides
// the op it names.
std::vector<Row> read_results(const std::vector<std::string>& paths,
                              const std::string& nccl_tests_op = "");
// One row per (backend, world size, ranks per node, op, bytes, dtype, reduce op, model): the
// fastest, when a sweep was run more than once (the bench's own rule for repeats: interference
// only adds time). Order of first appearance is kept.
std::vector<Row> fastest_rows(const std::vector<Row>& rows);
// A measured row as a calibration sample: link class from ranks_per_node vs world size.
sim::Sample to_sample(const Row& row);
// Rows a model may be fitted to or judged by: measured (not simulated), checked correct
// (#wrong 0) and timed.
bool usable(const Row& row);

}  // namespace ranks::cli
