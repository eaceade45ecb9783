#pragma once
// The subcommands of the `ranks` CLI. Each registers its options on the app and returns the
// function that runs it once the command line is parsed.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "ranks/capabilities.hpp"

namespace ranks::cli {

using Command = std::function<int()>;

// What --backend accepts: the backends of the capability table.
inline std::vector<std::string> backend_choices() {
  const auto names = backend_names();
  return {names.begin(), names.end()};
}

Command add_sim_command(CLI::App& app);
Command add_matrix_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_calibrate_command(CLI::App& app);
Command add_report_command(CLI::App& app);

}  // namespace ranks::cli
