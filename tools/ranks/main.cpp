// `ranks`: simulate, run, benchmark and report multi-rank programs.

#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "commands.hpp"
#include "ranks/config.hpp"

int main(int argc, char** argv) {
  CLI::App app{"ranks: run one multi-rank program simulated (ranks sim) or for real"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       fmt::format("ranks {} (backends: sim{}{}{})\nnccl: {}", RANKS_VERSION,
                                   RANKS_HAS_GLOO ? ", gloo" : "", RANKS_HAS_MPI ? ", mpi" : "",
                                   RANKS_HAS_NCCL ? ", nccl" : "", RANKS_NCCL_STATUS));
  ranks::cli::Command sim = ranks::cli::add_sim_command(app);
  ranks::cli::Command matrix = ranks::cli::add_matrix_command(app);
  ranks::cli::Command run = ranks::cli::add_run_command(app);
  ranks::cli::Command bench = ranks::cli::add_bench_command(app);
  ranks::cli::Command calibrate = ranks::cli::add_calibrate_command(app);
  ranks::cli::Command report = ranks::cli::add_report_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version succeed; every bad command line exits 2, as the tool's own checks
    // and most Unix tools do, not with CLI11's internal codes (105, 106, ...).
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (app.got_subcommand("sim")) return sim();
    if (app.got_subcommand("matrix")) return matrix();
    if (app.got_subcommand("run")) return run();
    if (app.got_subcommand("bench")) return bench();
    if (app.got_subcommand("calibrate")) return calibrate();
    if (app.got_subcommand("report")) return report();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ranks: error: %s\n", e.what());
    return 2;
  }
  return 2;
}
