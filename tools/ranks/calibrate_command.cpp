// `ranks calibrate RESULTS... [-o model.json] [--backend B] [--name NAME] [--check FILE]
// [--nccl BASE] [--op OP]`: fits the cost model to measured `ranks-bench --json` output (or
// nccl-tests' own output) and writes the model file
// `ranks sim --model` loads; prints how far the fitted model is from each measurement, and from
// measurements it was not fitted to (`--check`: other launches of the same sweep), which is the
// figure that says whether its size ranges follow the library or the noise.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

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
  std::string nccl;  // a model of an NCCL system whose physical figures are fitted
  std::string op;    // the op of nccl-tests output that does not name it
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

// The criterion's view of a model on samples (reports/cost_model.md): points within, beyond 2x,
// and the worst, per op and world size.
void print_criterion(const sim::CostModel& model, const std::vector<sim::Sample>& samples,
                     const std::string& heading) {
  struct Series {
    int points = 0, within = 0;
    double worst = 1;
  };
  std::map<std::tuple<std::string, int, int>, Series> series;
  int points = 0, within = 0, beyond = 0;
  for (const sim::Sample& s : samples) {
    if (!sim::nccl_prices(s.family) || s.n < 2) continue;
    const double ratio = sim::criterion_ratio(model, s);
    Series& one = series[{s.family, s.n, s.nodes}];
    ++one.points;
    ++points;
    if (sim::within_criterion(s, ratio)) {
      ++one.within;
      ++within;
    }
    if (ratio > 2 || ratio < 0.5) ++beyond;
    if (std::abs(std::log(ratio)) > std::abs(std::log(one.worst))) one.worst = ratio;
  }
  fmt::print(stderr, "{}: {} of {} points within (busbw +-20 % from 1 MiB, time +-35 % below), "
             "{} off by more than 2x\n", heading, within, points, beyond);
  fmt::print(stderr, "  {:<16} {:>5} {:>5} {:>8} {:>7}\n", "op", "ranks", "nodes", "within",
             "worst");
  for (const auto& [key, one] : series) {
    fmt::print(stderr, "  {:<16} {:>5} {:>5} {:>4}/{:<3} {:>7.2f}\n", std::get<0>(key),
               std::get<1>(key), std::get<2>(key), one.within, one.points, one.worst);
  }
}

// `--nccl BASE`: NCCL's physical figures fitted; every third size of each series is held out
// (unless --check gives other runs to judge by) and the fit is judged on it.
sim::CostModel calibrate_nccl_figures(const CalibrateArgs& args, std::vector<sim::Sample> samples,
                                      const std::string& name) {
  const sim::CostModel base = sim::load_cost_model(args.nccl);
  std::vector<sim::Sample> fit, held_out;
  if (args.check.empty()) {
    std::map<std::tuple<std::string, int, int>, std::vector<sim::Sample>> series;
    for (const sim::Sample& s : samples) series[{s.family, s.n, s.nodes}].push_back(s);
    for (auto& [key, list] : series) {
      std::sort(list.begin(), list.end(),
                [](const sim::Sample& a, const sim::Sample& b) { return a.bytes < b.bytes; });
      for (size_t i = 0; i < list.size(); ++i) (i % 3 == 1 ? held_out : fit).push_back(list[i]);
    }
  } else {
    fit = std::move(samples);
    held_out = samples_of(fastest_rows(read_results(args.check, args.op)), "nccl");
  }
  const sim::NcclCalibration result = sim::calibrate_nccl(fit, base, name);
  fmt::print(stderr, "ranks calibrate: NCCL figures of {} fitted to {} measurements:\n",
             base.name, fit.size());
  for (const sim::NcclFigure& f : result.figures) {
    fmt::print(stderr, "  {:<24} {:>10.4g} -> {:<10.4g}\n", f.name, f.base, f.fitted);
  }
  print_criterion(result.model, fit, "ranks calibrate: the fit on its own measurements");
  if (!held_out.empty()) {
    print_criterion(result.model, held_out,
                    args.check.empty()
                        ? "ranks calibrate: on every third size, held out of the fit"
                        : fmt::format("ranks calibrate: on {}, held out of the fit",
                                      fmt::join(args.check, ", ")));
  }
  return result.model;
}

void write_model(const sim::CostModel& model, const std::string& output) {
  const std::string json = sim::to_json(model);
  if (output.empty()) {
    fmt::print("{}", json);
    return;
  }
  std::ofstream out(output);
  out << json;
  if (!out) throw Error(fmt::format("cannot write {}", output));
  fmt::print(stderr, "ranks calibrate: wrote {} (use: ranks sim --model {})\n", output, output);
}

int run_calibrate(const CalibrateArgs& args) {
  std::vector<Row> rows = fastest_rows(read_results(args.results, args.op));
  std::set<std::string> backends;
  for (const Row& row : rows) {
    if (usable(row)) backends.insert(row["backend"].get<std::string>());
  }
  std::string backend = args.nccl.empty() ? args.backend : "nccl";
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
  const std::string name = args.name.empty() ? fmt::format("{}-{}", backend, host) : args.name;
  if (!args.nccl.empty()) {
    write_model(calibrate_nccl_figures(args, std::move(samples), name), args.output);
    return 0;
  }
  sim::CalibrationOptions options;
  options.max_segments = args.max_segments;
  options.min_sizes_per_segment = args.min_sizes;
  sim::CostModel model = sim::calibrate(samples, name, backend, options);

  print_errors(
      model, samples,
      fmt::format("ranks calibrate: {} samples of {}; error of the fit for sizes >= 4 KiB:",
                  samples.size(), backend));
  if (!args.check.empty()) {
    std::vector<sim::Sample> held_out =
        samples_of(fastest_rows(read_results(args.check, args.op)), backend);
    if (held_out.empty()) {
      throw InvalidArgument(fmt::format("no usable {} measurements in {} (--check)", backend,
                                        fmt::join(args.check, ", ")));
    }
    print_errors(model, held_out,
                 fmt::format("ranks calibrate: error on {} samples it was not fitted to ({}):",
                             held_out.size(), fmt::join(args.check, ", ")));
  }
  write_model(model, args.output);
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
  cmd->add_option("--nccl", args->nccl,
                  "fit the physical figures of this model of an NCCL system (h100-nvlink-ib, "
                  "a100-nvlink-ib or a model file) to nccl measurements, holding every third size "
                  "out to judge the fit (or judging it on --check)");
  cmd->add_option("--op", args->op,
                  "the op of nccl-tests output that does not say (all_reduce, all_gather, ...)");
  return [args] { return run_calibrate(*args); };
}

}  // namespace ranks::cli
