// `ranks sim -n N [options] -- PROGRAM ARGS`: runs a program built on ranks::main with N simulated
// ranks. The options travel to the program as RANKS_SIM_* variables; the program prints the
// human report and writes the JSON one. If the program dies before it can, this command writes
// the report for it, so a crash never goes unreported.

#include <fcntl.h>
#include <signal.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "python_program.hpp"
#include "ranks/sim.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::cli {

namespace {

struct SimArgs {
  int world_size = 0;
  int ranks_per_node = 0;
  std::string backend = "nccl";
  uint64_t seed = 0;
  std::string seeds;  // "A:B": run seeds A..B, stop at the first failing one
  double timeout_seconds = 1800;
  std::vector<std::string> faults;
  std::string trace;
  std::string report;
  std::string model;
  bool shapes_only = false;
  std::vector<std::string> accept;  // hazard kinds that leave the outcome ok
  // Neither --backend, RANKS_BACKEND nor a calibrated model chose the rules: nccl's, the default.
  bool backend_by_default = true;
  std::vector<std::string> program;
};

std::string join(const std::vector<std::string>& items, char separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// What the program writes to the report path: all of it for --report, or only the outcome where
// this command just needs to know that the program reported (4,096 ranks' rows cost ~2 % of such
// a run).
enum class ReportRows { Written, LeftOut };

// The environment the program runs in: this one, with the simulator's variables set over it.
std::vector<std::string> program_environment(
    const std::vector<std::pair<std::string, std::string>>& vars) {
  std::vector<std::string> entries;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const bool overridden = std::any_of(vars.begin(), vars.end(), [&](const auto& var) {
      return text.size() > var.first.size() && text.starts_with(var.first) &&
             text[var.first.size()] == '=';
    });
    if (!overridden) entries.emplace_back(text);
  }
  for (const auto& [name, value] : vars) entries.push_back(name + "=" + value);
  return entries;
}

// SIGINT, SIGTERM or SIGHUP sent to this command (Ctrl-C, a CI system's time limit, `timeout`):
// the program gets it too, writes the report of where each rank stood and dies of it; one that
// has not ended within the grace period is killed. The program also gets SIGTERM should this
// command die outright (RANKS_SIM_PARENT_PID: ranks::main asks the kernel for it).
constexpr unsigned kInterruptGraceSeconds = 10;
volatile sig_atomic_t running_program = 0;
volatile sig_atomic_t interrupted_by = 0;

void on_interruption(int sig) {
  const pid_t child = running_program;
  if (child > 0) {
    kill(child, sig);
    if (interrupted_by == 0) alarm(kInterruptGraceSeconds);
  }
  interrupted_by = sig;
}

void on_grace_over(int) {
  const pid_t child = running_program;
  if (child > 0) kill(child, SIGKILL);
}

// While it lives, the signals above go to the running program.
class ForwardedInterruptions {
 public:
  ForwardedInterruptions() {
    struct sigaction action {};
    action.sa_handler = on_interruption;
    action.sa_flags = SA_RESTART;
    for (size_t i = 0; i < 3; ++i) sigaction(kSignals[i], &action, &previous_[i]);
    struct sigaction alarm_action {};
    alarm_action.sa_handler = on_grace_over;
    alarm_action.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &alarm_action, &previous_[3]);
  }
  ~ForwardedInterruptions() {
    alarm(0);
    running_program = 0;
    for (size_t i = 0; i < 4; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  ForwardedInterruptions(const ForwardedInterruptions&) = delete;
  ForwardedInterruptions& operator=(const ForwardedInterruptions&) = delete;

 private:
  static constexpr int kSignals[4] = {SIGINT, SIGTERM, SIGHUP, SIGALRM};
  struct sigaction previous_[4]{};
};

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// Runs the program once with the simulator's variables set; returns its wait status. quiet:
// its output goes to /dev/null (the seed sweep prints only the run it replays). posix_spawn
// rather than fork: the child shares this process's memory until it execs, so neither copies
// page tables nor takes copy-on-write faults (~0.2 ms of a 4,096-rank run's 40).
int run_program(const SimArgs& args, const std::string& report_path, ReportRows rows,
                bool quiet = false) {
  std::vector<std::string> environment = program_environment({
      {"RANKS_SIM_WORLD_SIZE", std::to_string(args.world_size)},
      {"RANKS_SIM_RANKS_PER_NODE", std::to_string(args.ranks_per_node)},
      {"RANKS_SIM_BACKEND", args.backend},
      {"RANKS_SIM_SEED", std::to_string(args.seed)},
      {"RANKS_SIM_TIMEOUT_MS", std::to_string(static_cast<long long>(args.timeout_seconds * 1000))},
      {"RANKS_SIM_FAULTS", join(args.faults, ';')},
      {"RANKS_SIM_TRACE", args.trace},
      {"RANKS_SIM_REPORT", report_path},
      {"RANKS_SIM_REPORT_BRIEF", rows == ReportRows::LeftOut ? "1" : "0"},
      {"RANKS_SIM_MODEL", args.model},
      {"RANKS_SIM_MOVE_DATA", args.shapes_only ? "0" : "1"},
      {"RANKS_SIM_ACCEPT", join(args.accept, ',')},
      // Nothing chose the rules: the program's own init may (sim::Options::backend_from_program).
      {"RANKS_SIM_BACKEND_FROM_PROGRAM", args.backend_by_default ? "1" : "0"},
      {"RANKS_SIM_PARENT_PID", std::to_string(getpid())},
  });
  // Same seed, same run, for Python programs too: string hashes (set and dict iteration order)
  // are fixed unless the caller chose a hash seed.
  if (std::getenv("PYTHONHASHSEED") == nullptr) environment.emplace_back("PYTHONHASHSEED=0");
  bool entry_module = false;
  std::vector<std::string> argv_strings = simulated_python_command(args.program, entry_module);
  // The package's own import must not take the run over too: the entry module does.
  if (entry_module) environment.emplace_back("RANKS_SIM_ENTRY=ranks._simulate");
  std::vector<char*> argv = pointers_to(argv_strings);
  std::vector<char*> envp = pointers_to(environment);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  std::fflush(nullptr);
  pid_t child = 0;
  ForwardedInterruptions forwarded;
  const int error = posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  running_program = child;
  // A signal that came while the program was being started: it gets it now.
  if (const int sig = interrupted_by; sig != 0 && error == 0) {
    kill(child, sig);
    alarm(kInterruptGraceSeconds);
  }
  if (error != 0) {
    // As a shell says it: the program did not start, status 127, and the caller reports that.
    std::fprintf(stderr, "ranks sim: cannot run %s: %s\n", argv[0], std::strerror(error));
    return 127 << 8;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// The report for a program that ended without writing one (it crashed, is not built on
// ranks::main, or is a Python script that never imported ranks).
std::string orphan_report(const SimArgs& args, int status) {
  std::string message;
  if (const int sig = interrupted_by; sig != 0) {
    message = fmt::format(
        "{} was interrupted by signal {} (SIG{}) and ended without a simulator report{}",
        args.program.front(), sig, sigabbrev_np(sig),
        WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
            ? fmt::format(" (killed: it had not ended {} s after the signal)",
                          kInterruptGraceSeconds)
            : "");
  } else if (!WIFSIGNALED(status) && is_python(args.program.front())) {
    message = fmt::format(
        "{} exited with status {} without a simulator report: the script ended before its "
        "simulation started (ranks' package, ranks._simulate, runs it on every simulated "
        "rank; a script run with -c or -m starts it at its first import of ranks.dist); its "
        "last lines above say why, e.g. ranks or torch missing from that interpreter",
        args.program.front(), WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    message = fmt::format(
        "{} died on signal {} ({}) before the simulator could report (a crash before or "
        "outside the simulated ranks: is it built on ranks::main? its last lines above say why)",
        args.program.front(), WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else {
    message = fmt::format(
        "{} exited with status {} without a simulator report (is it built on "
        "ranks::main?)",
        args.program.front(), WEXITSTATUS(status));
  }
  nlohmann::ordered_json report = {{"outcome", WIFSIGNALED(status) ? "crash" : "error"},
                                   {"world_size", args.world_size},
                                   {"seed", args.seed},
                                   {"virtual_time_ns", 0},
                                   {"message", message},
                                   {"ranks", nlohmann::ordered_json::array()},
                                   {"cycle", nlohmann::ordered_json::array()}};
  std::printf("\nranks sim: outcome %s (%d ranks, seed %llu)\n%s\n",
              report["outcome"].get<std::string>().c_str(), args.world_size,
              static_cast<unsigned long long>(args.seed), message.c_str());
  return report.dump(2) + "\n";
}

int run_once(const SimArgs& args);

// --seeds A:B: each seed is a different, reproducible interleaving. The first that fails is run
// again with its output shown, which replays the identical failure.
int run_seeds(SimArgs args) {
  uint64_t first = 0, last = 0;
  char colon = 0;
  std::istringstream in(args.seeds);
  if (!(in >> first >> colon >> last) || colon != ':' || !in.eof() || first == 0 || last < first) {
    std::fprintf(stderr, "ranks sim: --seeds takes A:B with 1 <= A <= B, got '%s'\n",
                 args.seeds.c_str());
    return 2;
  }
  namespace fs = std::filesystem;
  fs::path report = fs::temp_directory_path() / fmt::format("ranks-seeds-{}.json", getpid());
  for (uint64_t seed = first; seed <= last; ++seed) {
    args.seed = seed;
    fs::remove(report);
    run_program(args, report.string(), ReportRows::LeftOut, /*quiet=*/true);
    std::string outcome = "crash";
    if (fs::exists(report)) {
      outcome = nlohmann::json::parse(std::ifstream(report))["outcome"].get<std::string>();
    }
    fs::remove(report);
    if (const int sig = interrupted_by; sig != 0) {
      std::printf("ranks sim: seed %llu of %llu:%llu was interrupted by SIG%s\n",
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(first),
                  static_cast<unsigned long long>(last), sigabbrev_np(sig));
      return 128 + sig;
    }
    if (outcome != "ok") {
      std::printf("ranks sim: seed %llu of %llu:%llu gives outcome %s; replaying it\n",
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(first),
                  static_cast<unsigned long long>(last), outcome.c_str());
      return run_once(args);
    }
  }
  std::printf("ranks sim: seeds %llu:%llu: all %llu runs ok\n",
              static_cast<unsigned long long>(first), static_cast<unsigned long long>(last),
              static_cast<unsigned long long>(last - first + 1));
  args.seed = last;
  return run_once(args);  // so that --report and --trace describe a run, as without --seeds
}

// Why text is not a --timeout (seconds, whole milliseconds, at most a year); "" when it is.
std::string timeout_problem(const std::string& text) {
  double seconds = 0;
  try {
    size_t used = 0;
    seconds = std::stod(text, &used);
    if (used != text.size()) return "takes seconds, got '" + text + "'";
  } catch (const std::exception&) {
    return "takes seconds, got '" + text + "'";
  }
  if (!(seconds >= 0.001 && seconds <= 365.0 * 24 * 3600)) {
    return "must be between 0.001 and 31536000 seconds (a year), got '" + text + "'";
  }
  return "";
}

// Real runs take their backend and timeout from RANKS_BACKEND and RANKS_TIMEOUT; so does a
// simulated run, so that one job script serves both. The flags win. Returns whether the backend
// came from the environment. Throws CLI::ValidationError for a value the flag would refuse.
bool adopt_environment(SimArgs& args, bool backend_given, bool timeout_given) {
  bool backend_from_env = false;
  if (const char* backend = std::getenv("RANKS_BACKEND"); backend && *backend && !backend_given) {
    const auto choices = backend_choices();
    if (std::find(choices.begin(), choices.end(), backend) == choices.end()) {
      throw CLI::ValidationError("RANKS_BACKEND", std::string("'") + backend +
                                                      "' is not one of nccl, gloo, mpi");
    }
    args.backend = backend;
    backend_from_env = true;
  }
  if (const char* timeout = std::getenv("RANKS_TIMEOUT"); timeout && *timeout && !timeout_given) {
    if (const std::string problem = timeout_problem(timeout); !problem.empty()) {
      throw CLI::ValidationError("RANKS_TIMEOUT", problem);
    }
    args.timeout_seconds = std::stod(timeout);
  }
  return backend_from_env;
}

// A model calibrated by `ranks calibrate` records the backend it measured; its prices belong to
// that backend's rules, so without --backend the run emulates that backend (nccl rules would
// refuse, say, a cpu-tensor reduce the gloo model prices). A preset records none. A model that
// does not load is left for the program to report.
void adopt_model_backend(SimArgs& args, bool backend_given) {
  if (args.model.empty()) return;
  std::string recorded;
  try {
    recorded = sim::load_cost_model(args.model).backend;
  } catch (const std::exception&) {
    return;
  }
  if (recorded.empty() || recorded == args.backend) return;
  if (!backend_given) {
    args.backend = recorded;
  } else {
    std::fprintf(stderr,
                 "ranks sim: note: %s was calibrated on %s; emulating %s's rules as --backend "
                 "says\n",
                 args.model.c_str(), recorded.c_str(), args.backend.c_str());
  }
}

// The report and trace are written after the run: a path that cannot be written is said now,
// before the program runs, not as a confusing second report after it.
bool writable(const std::string& path, const char* option) {
  if (path.empty()) return true;
  const bool existed = std::filesystem::exists(path);
  if (std::ofstream probe(path, std::ios::app); !probe) {
    std::fprintf(stderr, "ranks sim: cannot write %s %s: %s\n", option, path.c_str(),
                 std::strerror(errno));
    return false;
  }
  if (!existed) std::filesystem::remove(path);
  return true;
}

int run_sim(const SimArgs& args) {
  if (!writable(args.report, "--report") || !writable(args.trace, "--trace")) return 2;
  return args.seeds.empty() ? run_once(args) : run_seeds(args);
}

// An op refused only because nccl's rules, the default, allow no cpu tensors there: most such
// programs are CPU jobs run without saying so.
void note_default_rules(const SimArgs& args, const std::filesystem::path& report_path) {
  if (!args.backend_by_default) return;
  try {
    const auto report = nlohmann::json::parse(std::ifstream(report_path));
    const std::string message = report.value("message", "");
    if (report.value("outcome", "") == "unsupported" &&
        message.find("the nccl backend does not support") != std::string::npos &&
        message.find("on cpu tensors") != std::string::npos) {
      std::printf(
          "ranks sim: note: these are nccl's rules, the default; a CPU job runs under "
          "`--backend gloo` (or RANKS_BACKEND=gloo), as it would with init_dist(..., "
          "backend=\"gloo\")\n");
    }
  } catch (const std::exception&) {
    // no readable report: nothing to add
  }
}

int run_once(const SimArgs& args) {
  namespace fs = std::filesystem;
  fs::path report_path = args.report;
  bool temporary = report_path.empty();
  if (temporary) {
    report_path = fs::temp_directory_path() / fmt::format("ranks-sim-{}.json", getpid());
  }
  fs::remove(report_path);
  int status = run_program(args, report_path.string(),
                           temporary ? ReportRows::LeftOut : ReportRows::Written);
  int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!fs::exists(report_path)) {
    std::ofstream(report_path) << orphan_report(args, status);
    exit_code = exit_code == 0 ? 1 : exit_code;
  }
  note_default_rules(args, report_path);
  if (temporary) fs::remove(report_path);
  return exit_code;
}

}  // namespace

Command add_sim_command(CLI::App& app) {
  auto args = std::make_shared<SimArgs>();
  CLI::App* sim = app.add_subcommand("sim", "run a program with N simulated ranks in one process");
  sim->add_option("-n,--nproc", args->world_size, "number of simulated ranks")
      ->required()
      ->check(CLI::Range(1, 1 << 24));
  sim->add_option("--ranks-per-node", args->ranks_per_node,
                  "ranks per node (0: one node; under a model of GPU nodes, nodes of its GPUs)")
      ->check(CLI::NonNegativeNumber);
  auto* backend = sim->add_option("--backend", args->backend,
                                  "backend whose rules to emulate (default: RANKS_BACKEND, else "
                                  "the backend a calibrated --model file was measured on, else "
                                  "nccl)")
                      ->check(CLI::IsMember(backend_choices()));
  auto* seed = sim->add_option("--seed", args->seed, "0: FIFO schedule; else a seeded interleaving")
                   ->check(CLI::Range(uint64_t{0}, uint64_t{std::numeric_limits<int64_t>::max()}));
  sim->add_option("--seeds", args->seeds, "A:B: try seeds A..B, report the first failing one")
      ->excludes(seed);
  auto* timeout = sim->add_option("--timeout", args->timeout_seconds,
                                  "per-op timeout in virtual seconds (default 1800, or "
                                  "RANKS_TIMEOUT); also how long, in real seconds, one rank may "
                                  "keep the thread all ranks share")
                      ->check(CLI::Validator(timeout_problem, "SECONDS"));
  sim->add_option("--fault", args->faults, "fault spec, e.g. crash:rank=1,op=3");
  sim->add_option("--trace", args->trace, "write a Chrome/Perfetto trace here");
  sim->add_option("--report", args->report, "write the JSON report here");
  sim->add_option("--model", args->model,
                  "cost model: a preset (h100-nvlink-ib, a100-nvlink-ib, pcie-gen5-ib, "
                  "ethernet-40g) or a model file from `ranks calibrate`; default free (ops take "
                  "no virtual time)");
  sim->add_flag("--shapes-only", args->shapes_only,
                "move no data: ops are matched, checked and priced, results are not computed");
  std::vector<std::string> kinds(sim::hazard_kinds().begin(), sim::hazard_kinds().end());
  sim->add_option("--accept", args->accept,
                  "a hazard kind to accept (still listed, outcome ok): " +
                      join(kinds, ','))
      ->check(CLI::IsMember(kinds));
  sim->add_option("program", args->program, "the program and its arguments (after --)")->required();
  sim->positionals_at_end();
  return [args, backend, timeout] {
    const bool backend_given = backend->count() > 0;
    const bool from_env = adopt_environment(*args, backend_given, timeout->count() > 0);
    const std::string before_model = args->backend;
    adopt_model_backend(*args, backend_given || from_env);
    args->backend_by_default = !backend_given && !from_env && args->backend == before_model;
    return run_sim(*args);
  };
}

}  // namespace ranks::cli
