#pragma once
// What `ranks bench` prints: the nccl-tests table on stdout (rank 0) and one JSON line per op
// and size (--json FILE), with where and when it was measured.

#include <cstdio>
#include <optional>
#include <string>

#include "ranks/sim/cost_model.hpp"

#include "bench_ops.hpp"
#include "runner.hpp"

namespace ranks::bench {

struct RunInfo {
  std::string backend;      // "gloo", "mpi", "nccl"; "sim" under ranks sim
  std::string sim_backend;  // the backend the simulator emulates ("" for real runs)
  std::string model;        // the simulator's cost model ("" for real runs)
  int world_size = 1;
  int ranks_per_node = 1;
  std::string host;
  std::string date;  // ISO 8601, UTC
  std::string git;   // the revision the bench was built from (`git describe --dirty`)
  // Simulated with a model of an NCCL system: the model, to name the algorithm and protocol
  // its tuner picks per size (as NCCL_DEBUG=INFO's tuning lines do).
  std::optional<sim::CostModel> nccl_model;
};

// "nvls/Simple": what the model's NCCL tuner runs `op` of `bytes` with; "" when nothing does.
std::string nccl_choice(const RunInfo& info, const BenchOp& op, size_t bytes);

RunInfo describe_run();
void print_header(std::FILE* out, const RunInfo& info, const BenchOp& op, const RunConfig& config);
void print_row(std::FILE* out, const RunInfo& info, const BenchOp& op, const RunConfig& config,
               const Measurement& m);
// nccl-tests' closing lines: "# Out of bounds values : N OK|FAILED" and the mean bus bandwidth
// over every row printed (wrong < 0: nothing was checked).
void print_footer(std::FILE* out, int64_t wrong, double busbw_sum, size_t rows);
// As nccl-tests, wrong results fail the run: throws ranks::Error when wrong > 0.
void fail_if_wrong(int64_t wrong);
// A row's bus bandwidth (GB/s), as its table line shows it.
double row_busbw(const BenchOp& op, const Measurement& m, int world_size);
std::string json_line(const RunInfo& info, const BenchOp& op, const RunConfig& config,
                      const Measurement& m);

}  // namespace ranks::bench
