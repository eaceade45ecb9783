// `ranks bench [--sim] [-n N] [--backend B] [--bind-to core|none] [--ranks-per-node R]
//  [--model M] -- BENCH ARGS`:
// runs ranks-bench (installed next to `ranks`) through this same CLI, as
// `ranks run -n N --backend B -- ranks-bench ARGS` (measured; mpirun for mpi) or
// `ranks sim -n N ... --model M -- ranks-bench ARGS` (the cost model's prediction). One
// launcher each, no second copy of their logic.

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "commands.hpp"
#include "mpirun.hpp"
#include "ranks/sim.hpp"

namespace ranks::cli {

namespace {

struct BenchArgs {
  bool simulate = false;
  int world_size = 2;
  std::string backend;
  int ranks_per_node = 0;
  std::string model;
  bool shapes_only = false;
  std::string bind_to;  // empty: the launcher's own default (ranks run: none; mpirun: its policy)
  std::vector<std::string> bench_args;
};

std::filesystem::path self() { return std::filesystem::read_symlink("/proc/self/exe"); }

std::string bench_program() {
  if (const char* path = std::getenv("RANKS_BENCH"); path && *path) return path;
  auto beside = self().parent_path() / "ranks-bench";
  return std::filesystem::exists(beside) ? beside.string() : "ranks-bench";
}

// A simulated bench predicts times, so it needs a cost model ("free" would print zeros): without
// --model, the preset of the hardware the emulated backend usually runs on.
std::string default_model(const std::string& backend) {
  // No --backend: the simulator's default rules.
  return std::string(
      ranks::capabilities(backend.empty() ? sim::Options{}.backend : backend).usual_hardware);
}

int run_bench(const BenchArgs& a) {
  // An option the chosen mode would ignore is a mistake worth saying.
  if (!a.simulate && (!a.model.empty() || a.ranks_per_node > 0 || a.shapes_only)) {
    std::fprintf(stderr,
                 "ranks bench: --model, --ranks-per-node and --shapes-only are for simulated "
                 "runs (add --sim)\n");
    return 2;
  }
  if (a.simulate && !a.bind_to.empty()) {
    std::fprintf(stderr, "ranks bench: --bind-to is for measured runs (without --sim)\n");
    return 2;
  }
  if (!a.simulate && !a.backend.empty() && ranks::capabilities(a.backend).launcher == "mpi") {
    std::vector<std::string> program = {bench_program()};
    program.insert(program.end(), a.bench_args.begin(), a.bench_args.end());
    exec_program(mpirun_command(a.world_size, a.bind_to, program));
  }
  std::vector<std::string> argv = {"ranks", a.simulate ? "sim" : "run", "-n",
                                   std::to_string(a.world_size)};
  if (!a.backend.empty()) argv.insert(argv.end(), {"--backend", a.backend});
  if (!a.simulate && !a.bind_to.empty()) argv.insert(argv.end(), {"--bind-to", a.bind_to});
  // Rank 0 prints the table: the same lines as under mpirun or the simulator, no rank prefix.
  if (!a.simulate) argv.push_back("--raw-output");
  if (a.simulate) {
    if (a.ranks_per_node > 0) {
      argv.insert(argv.end(), {"--ranks-per-node", std::to_string(a.ranks_per_node)});
    }
    argv.insert(argv.end(), {"--model", a.model.empty() ? default_model(a.backend) : a.model});
    if (a.shapes_only) argv.push_back("--shapes-only");
  }
  argv.push_back("--");
  argv.push_back(bench_program());
  argv.insert(argv.end(), a.bench_args.begin(), a.bench_args.end());
  argv.front() = self().string();
  exec_program(std::move(argv));
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* bench = app.add_subcommand(
      "bench", "latency and bandwidth of collectives, nccl-tests style (measured or simulated)");
  bench->add_flag("--sim", args->simulate, "simulate with the cost model instead of measuring");
  bench->add_option("-n,--nproc", args->world_size, "number of ranks")
      ->check(CLI::Range(1, 1 << 24));
  bench->add_option("--backend", args->backend, "gloo | mpi | nccl (simulated: whose rules)")
      ->check(CLI::IsMember(backend_choices()));
  bench
      ->add_option("--bind-to", args->bind_to,
                   "measured: core (each rank on one CPU, in turn) or none; default: the "
                   "launcher's own (ranks run: none; mpirun: core for up to 2 ranks)")
      ->check(CLI::IsMember({"none", "core"}));
  bench->add_option("--ranks-per-node", args->ranks_per_node, "simulated: ranks per node")
      ->check(CLI::NonNegativeNumber);
  bench->add_option("--model", args->model,
                    "simulated: cost model preset or file (default: h100-nvlink-ib for nccl "
                    "rules, pcie-gen5-ib for mpi, ethernet-40g for gloo)");
  bench->add_flag("--shapes-only", args->shapes_only,
                  "simulated: move no data (large sizes on many ranks; no #wrong check)");
  bench->add_option("args", args->bench_args, "ranks-bench options (after --), e.g. -o all -e 1M");
  bench->positionals_at_end();
  return [args] { return run_bench(*args); };
}

}  // namespace ranks::cli
