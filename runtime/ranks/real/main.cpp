#include "ranks/main.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ranks/context.hpp"
#include "ranks/real/fatal.hpp"
#include "ranks/real/run_simulated.hpp"
#include "ranks/errors.hpp"
#include "ranks/init.hpp"
#include "ranks/launch/launcher.hpp"
#include "ranks/sim.hpp"

namespace ranks {

namespace {

const char* env(const char* name) { return std::getenv(name); }

// max bounds the magnitude: RANKS_TIMEOUT is seconds made milliseconds and then nanoseconds,
// which must not overflow into a negative deadline.
long long env_number(const char* name, long long fallback,
                     long long max = std::numeric_limits<long long>::max()) {
  const char* text = env(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0') {
    throw InvalidArgument(
        fmt::format("environment variable {}='{}' is not a whole number", name, text));
  }
  if (errno == ERANGE || value > max || value < -max) {
    throw InvalidArgument(
        fmt::format("environment variable {}='{}' is out of range (at most {} in absolute value)",
                    name, text, max));
  }
  return value;
}

// The non-empty items of a variable's separated list (none when it is unset).
std::vector<std::string> env_list(const char* name, char separator) {
  std::vector<std::string> items;
  const char* value = env(name);
  const std::string all = value != nullptr ? value : "";
  for (size_t begin = 0; begin < all.size();) {
    size_t end = all.find(separator, begin);
    if (end == std::string::npos) end = all.size();
    if (end > begin) items.push_back(all.substr(begin, end - begin));
    begin = end + 1;
  }
  return items;
}

// `ranks sim` passes its options to the program through RANKS_SIM_* variables.
sim::Options sim_options_from_env() {
  sim::Options options;
  options.world_size = static_cast<int>(env_number("RANKS_SIM_WORLD_SIZE", 8));
  options.ranks_per_node = static_cast<int>(env_number("RANKS_SIM_RANKS_PER_NODE", 0));
  if (const char* backend = env("RANKS_SIM_BACKEND"); backend && *backend)
    options.backend = backend;
  options.seed = static_cast<uint64_t>(env_number("RANKS_SIM_SEED", 0));
  options.timeout = std::chrono::milliseconds(env_number("RANKS_SIM_TIMEOUT_MS", 30 * 60 * 1000));
  options.faults = env_list("RANKS_SIM_FAULTS", ';');
  if (const char* trace = env("RANKS_SIM_TRACE"); trace && *trace) options.trace = trace;
  if (const char* model = env("RANKS_SIM_MODEL"); model && *model) options.model = model;
  options.move_data = env_number("RANKS_SIM_MOVE_DATA", 1) != 0;
  options.accept = env_list("RANKS_SIM_ACCEPT", ',');
  options.backend_from_program = env_number("RANKS_SIM_BACKEND_FROM_PROGRAM", 0) != 0;
  return options;
}

// Prints the human report and writes the JSON one where `ranks sim` asked for it.
// The JSON first: a reader that closes the pipe early (`ranks sim ... | head`) must not cost
// the run its report.
void publish(const sim::Report& report) {
  if (const char* path = env("RANKS_SIM_REPORT"); path && *path) {
    std::ofstream out(path);
    // Brief: `ranks sim` without --report reads only the outcome and the message (and that the
    // program reported), never the rows of 10,000 ranks.
    const char* brief = env("RANKS_SIM_REPORT_BRIEF");
    if (brief != nullptr && std::string_view(brief) == "1") {
      out << nlohmann::json{{"outcome", sim::outcome_name(report.outcome)},
                            {"message", report.message}}
                 .dump()
          << "\n";
    } else {
      out << report.to_json();
    }
    if (!out) throw Error(fmt::format("cannot write the report to {}", path));
  }
  std::fflush(stdout);
  std::fputs(("\n" + report.to_text()).c_str(), stdout);
}

std::string main_launcher() { return launch::launcher_for_main(launch::Env::process()); }

}  // namespace

namespace detail {

int run_simulated(const std::function<void()>& body,
                  const std::function<void(sim::Options&)>& adjust) {
  sim::Report report;
  sim::Options options = sim_options_from_env();
  if (adjust) adjust(options);
  sim::detail::install_crash_report(env("RANKS_SIM_REPORT"));
  // Started by `ranks sim`: should that command die outright (SIGKILL), this process gets
  // SIGTERM, and the run ends with its report rather than running on unwatched. Only when the
  // parent is still that command (a process the program starts inherits the variable).
  if (const char* parent = env("RANKS_SIM_PARENT_PID");
      parent != nullptr && std::atol(parent) == static_cast<long>(getppid())) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
  }
  options.on_exit = [](const sim::Report& at_exit) {
    try {
      publish(at_exit);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ranks: error: %s\n", e.what());
    }
  };
  try {
    report = sim::run(options, body);
  } catch (const InvalidArgument& e) {
    // Options the simulator refuses (a fault spec naming a rank the run does not have, an
    // unknown model): no rank ran, and the report says why rather than nothing.
    report.outcome = sim::Outcome::Error;
    report.world_size = options.world_size;
    report.seed = options.seed;
    report.message = fmt::format("the simulator did not start: {}", e.what());
  }
  publish(report);
  return report.outcome == sim::Outcome::Ok ? 0 : 1;
}

}  // namespace detail

int main(int /*argc*/, char** /*argv*/, const std::function<void()>& body) {
  bool real = false;
  try {
    if (env("RANKS_SIM_WORLD_SIZE")) return detail::run_simulated(body, {});
    if (const std::string launcher = main_launcher(); launcher != "none") {
      real = true;
      InitOptions options;
      if (const char* backend = env("RANKS_BACKEND")) options.backend = backend;
      options.timeout = std::chrono::seconds(env_number("RANKS_TIMEOUT", 1800, 1'000'000'000));
      init_dist(launcher, options.backend, options);
      current().started_by_main = true;  // the body's own init_process_group() adopts this
    } else {
      // MMEngine runs non-distributed here without a word; half of torchrun's variables is
      // more often a launch script's slip than a wish.
      for (const char* name : {"RANK", "LOCAL_RANK"}) {
        if (env(name) != nullptr) {
          std::fprintf(stderr,
                       "ranks: note: %s is set but WORLD_SIZE is not, so this runs as one "
                       "process, not distributed\n",
                       name);
          break;
        }
      }
    }
    body();
    destroy_process_group();
    return 0;
  } catch (const std::exception& e) {
    if (real) detail::exit_on(e);
    std::fflush(stdout);
    std::fprintf(stderr, "ranks: error: %s\n", e.what());
    return 1;
  } catch (...) {
    // `throw 42`: main.hpp promises non-zero after saying why, not std::terminate.
    const std::runtime_error e("the body threw something that is not a std::exception");
    if (real) detail::exit_on(e);
    std::fflush(stdout);
    std::fprintf(stderr, "ranks: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace ranks
