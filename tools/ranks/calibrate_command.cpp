// `ranks calibrate RESULTS.jsonl... [-o model.json] [--backend B] [--name NAME] [--check FILE]`:
// fits the cost model to measured `ranks-bench --json` output and writes the model file
// `ranks sim --model` loads; prints how far the fitted model is from each measurement, and from
// measurements it was not fitted to (`--check`: other launches of the same sweep), which is the
// figure that says whether its size ranges follow the library or the noise.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <map>
#include <set>

#include "bench_results.hpp"
#include "commands.hpp"
#include "ranks/errors.hpp"

namespace ranks::cli {

namespace {

struct CalibrateArgs {
  std::vector<std::string> results;
  std::string output;
  std::string backend;
  std::string name;
  int max_segments = 8;
  int min_sizes = 1;
  std::vector<std::string> check;
};

// Rows of `backend` fit for calibration, as samples (fastest row per point).
// Rows of one rank are left out: the simulator prices a one-rank op at 0 whatever it measured.
std::vector<sim::Sample> samples_of(const std::vector<Row>& rows, const std::string& backend) {
  std::vector<sim::Sample> samples;
  size_t single = 0;
  for (const Row& row : rows) {
    if (!usable(row) || row["backend"] != backend) continue;
    sim::Sample s = to_sample(row);
    if (s.n < 2) {
      ++single;
      continue;
    }
    samples.push_back(s);
  }
  if (single > 0) {
    fmt::print(stderr,
               "ranks calibrate: left out {} rows of world size 1 (the simulator prices an op of "
               "one rank at 0)\n",
               single);
  }
  return samples;
}

// Worst and mean relative error per op and world size, sizes >= 4 KiB (the report's table).
void print_errors(const sim::CostModel& model, const std::vector<sim::Sample>& samples,
                  const std::string& heading) {
  std::map<std::pair<std::string, int>, std::pair<double, std::pair<double, int>>> errors;
  for (const sim::Sample& s : samples) {
    if (s.bytes < 4096) continue;
    auto& [worst, mean] = errors[{s.family, s.n}];
    const double e = sim::relative_error(model, s);
    worst = std::max(worst, e);
    mean.first += e;
    mean.second += 1;
  }
  fmt::print(stderr, "{}\n", heading);
  fmt::print(stderr, "  {:<16} {:>5} {:>10} {:>10}\n", "op", "ranks", "worst", "mean");
  for (const auto& [key, value] : errors) {
    fmt::print(stderr, "  {:<16} {:>5} {:>9.1f}% {:>9.1f}%\n", key.first, key.second,
               value.first * 100, value.second.first / value.second.second * 100);
  }
}

int run_calibrate(const CalibrateArgs& args) {
  std::vector<Row> rows = fastest_rows(read_results(args.results));
  std::set<std::string> backends;
  for (const Row& row : rows) {
    if (usable(row)) backends.insert(row["backend"].get<std::string>());
  }
  std::string backend = args.backend;
  if (backends.empty()) {
    throw InvalidArgument(fmt::format(
        "no measurements of a real backend in {} (calibration needs rows of gloo, mpi or nccl "
        "from `ranks bench --json`; simulated rows cannot calibrate)",
        fmt::join(args.results, ", ")));
  }
  if (backend.empty()) {
    if (backends.size() != 1) {
      throw InvalidArgument(fmt::format(
          "the results hold measurements of {} backends ({}); choose one with --backend",
          backends.size(), fmt::join(backends, ", ")));
    }
    backend = *backends.begin();
  }
  std::vector<sim::Sample> samples = samples_of(rows, backend);
  std::string host;
  for (const Row& row : rows) {
    if (usable(row) && row["backend"] == backend) host = row.value("host", "");
  }
  if (samples.empty()) {
    throw InvalidArgument(fmt::format("no usable {} measurements in the results", backend));
  }
  sim::CalibrationOptions options;
  options.max_segments = args.max_segments;
  options.min_sizes_per_segment = args.min_sizes;
  const std::string name = args.name.empty() ? fmt::format("{}-{}", backend, host) : args.name;
  sim::CostModel model = sim::calibrate(samples, name, backend, options);

  print_errors(
      model, samples,
      fmt::format("ranks calibrate: {} samples of {}; error of the fit for sizes >= 4 KiB:",
                  samples.size(), backend));
  if (!args.check.empty()) {
    std::vector<sim::Sample> held_out = samples_of(fastest_rows(read_results(args.check)), backend);
    if (held_out.empty()) {
      throw InvalidArgument(fmt::format("no usable {} measurements in {} (--check)", backend,
                                        fmt::join(args.check, ", ")));
    }
    print_errors(model, held_out,
                 fmt::format("ranks calibrate: error on {} samples it was not fitted to ({}):",
                             held_out.size(), fmt::join(args.check, ", ")));
  }
  const std::string json = sim::to_json(model);
  if (args.output.empty()) {
    fmt::print("{}", json);
  } else {
    std::ofstream out(args.output);
    out << json;
    if (!out) throw Error(fmt::format("cannot write {}", args.output));
    fmt::print(stderr, "ranks calibrate: wrote {} (use: ranks sim --model {})\n", args.output,
               args.output);
  }
  return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "fit the simulator's cost model to measured ranks-bench --json output");
  cmd->add_option("results", args->results, "ranks-bench JSON lines files")->required();
  cmd->add_option("-o,--output", args->output, "write the model here (default: stdout)");
  cmd->add_option("--backend", args->backend, "fit this backend's measurements");
  cmd->add_option("--name", args->name, "the model's name (default: BACKEND-HOST)");
  cmd->add_option("--max-segments", args->max_segments, "size ranges per op and world size (1-12)")
      ->check(CLI::Range(1, 12));
  cmd->add_option("--min-sizes", args->min_sizes,
                  "sizes each range must hold when there are several (fewer fit noise)")
      ->check(CLI::Range(1, 64));
  cmd->add_option(
      "--check", args->check,
      "also judge the model on these results (other launches), which it is not fitted to");
  return [args] { return run_calibrate(*args); };
}

}  // namespace ranks::cli
