// `ranks report RESULTS.jsonl... [-o DIR] [--model BACKEND=FILE]...`: the latency/bandwidth
// report. Adds the cost model's prediction to each measured row of a backend that has a model,
// writes DIR/results.jsonl, and runs reports/plot_bench.py (matplotlib) on it, which draws the
// plots and writes DIR/summary.md.

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "bench_results.hpp"
#include "commands.hpp"
#include "ranks/errors.hpp"

#ifndef RANKS_BUILD_DIR
#define RANKS_BUILD_DIR ""
#endif
#ifndef RANKS_REPORTS_SOURCE_DIR
#define RANKS_REPORTS_SOURCE_DIR ""
#endif

namespace ranks::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::vector<std::string> results;
  std::string output = "report";
  std::vector<std::string> models;  // BACKEND=FILE
  std::string title;
};

// The plotting script: $RANKS_REPORTS_DIR, the installed share/ranks/reports, or the source tree.
fs::path script() {
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("RANKS_REPORTS_DIR"); dir && *dir) candidates.emplace_back(dir);
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  candidates.push_back(exe.parent_path().parent_path() / "share" / "ranks" / "reports");
  // The source tree only for the build tree's own binary: an installed one that fell back on it
  // would hide an install that lacks share/ranks/reports on the machine that built it.
  const std::string build_dir = RANKS_BUILD_DIR;
  if (!build_dir.empty() && exe.string().starts_with(build_dir + "/")) {
    candidates.emplace_back(RANKS_REPORTS_SOURCE_DIR);
  }
  for (const fs::path& dir : candidates) {
    if (!dir.empty() && fs::exists(dir / "plot_bench.py")) return dir / "plot_bench.py";
  }
  throw Error("cannot find plot_bench.py (set RANKS_REPORTS_DIR to the reports/ directory)");
}

// Debian's python3 has python3-matplotlib; a python3 earlier on PATH (pyenv) may not.
std::string python() {
  if (const char* p = std::getenv("RANKS_PYTHON"); p && *p) return p;
  return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

int run_report(const ReportArgs& args) {
  std::map<std::string, sim::CostModel> models;
  for (const std::string& spec : args.models) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw InvalidArgument(fmt::format("--model takes BACKEND=FILE, got '{}'", spec));
    }
    models[spec.substr(0, eq)] = sim::load_cost_model(spec.substr(eq + 1));
  }
  std::vector<Row> rows = fastest_rows(read_results(args.results));
  std::map<std::string, int> unpriced;  // model name -> rows between nodes it has no figures for
  for (Row& row : rows) {
    auto model = models.find(row["backend"].get<std::string>());
    if (model == models.end() || row["backend"] == "sim") continue;
    const sim::Sample s = to_sample(row);
    // A model fitted on one machine says nothing of links between nodes: no prediction (the
    // simulator refuses such a model for more than one node, and 0 us would read as a 100 % miss).
    if (s.link == sim::LinkClass::Inter && !model->second.prices_inter_node()) {
      ++unpriced[model->second.name];
      continue;
    }
    row["predicted_us"] =
        sim::predict(model->second, s.family, s.n, s.bytes, s.link, s.members_per_node, s.nodes).seconds *
        1e6;
    row["model"] = model->second.name;
  }
  for (const auto& [name, count] : unpriced) {
    fmt::print(stderr,
               "ranks report: model {} has no figures between nodes; {} rows measured across "
               "nodes get no prediction\n",
               name, count);
  }
  fs::create_directories(args.output);
  const fs::path merged = fs::path(args.output) / "results.jsonl";
  {
    std::ofstream out(merged);
    for (const Row& row : rows) out << row.dump() << '\n';
    if (!out) throw Error(fmt::format("cannot write {}", merged.string()));
  }
  std::vector<std::string> argv = {python(), script().string(), merged.string(), args.output};
  if (!args.title.empty()) argv.insert(argv.end(), {"--title", args.title});
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) throw Error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (child == 0) {
    std::vector<char*> raw;
    for (auto& s : argv) raw.push_back(s.data());
    raw.push_back(nullptr);
    execvp(raw[0], raw.data());
    std::fprintf(stderr, "ranks report: cannot run %s: %s\n", raw[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fmt::print(stderr, "ranks report: the plotting script failed\n");
    return 1;
  }
  fmt::print("ranks report: wrote {}/summary.md\n", args.output);
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* cmd =
      app.add_subcommand("report", "plots and a markdown summary from ranks-bench --json output");
  cmd->add_option("results", args->results, "ranks-bench JSON lines files")->required();
  cmd->add_option("-o,--output", args->output, "directory for summary.md and the plots");
  cmd->add_option("--model", args->models,
                  "BACKEND=FILE: predict BACKEND's rows with this cost model (repeatable)");
  cmd->add_option("--title", args->title, "the summary's title");
  return [args] { return run_report(*args); };
}

}  // namespace ranks::cli
