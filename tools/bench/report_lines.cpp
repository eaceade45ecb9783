#include "report_lines.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ranks/errors.hpp"
#include "ranks/ranks.hpp"
#include "ranks_git_revision.hpp"  // generated at build time: RANKS_GIT_REVISION

namespace ranks::bench {

namespace {

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// GB/s with GB = 1e9 B (nccl-tests); zero time (a free model) has no bandwidth.
double algbw(const Measurement& m) {
  return m.seconds > 0 ? static_cast<double>(m.shape.bytes) / m.seconds / 1e9 : 0.0;
}

}  // namespace

RunInfo describe_run() {
  RunInfo info;
  const char* simulated = std::getenv("RANKS_SIM_WORLD_SIZE");
  const std::string backend = get_backend().value_or("none");
  info.backend = simulated ? "sim" : backend;
  if (simulated) {
    info.sim_backend = backend;
    const char* model = std::getenv("RANKS_SIM_MODEL");
    // A model file is named by its file name: the report's legends stay short.
    info.model = model && *model ? std::filesystem::path(model).stem().string() : "free";
    if (model && *model) {
      sim::CostModel loaded = sim::load_cost_model(model);
      if (loaded.nccl) info.nccl_model = std::move(loaded);
    }
  }
  info.world_size = get_world_size();
  info.ranks_per_node = get_local_size();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  info.host = host;
  info.date = utc_now();
  info.git = RANKS_GIT_REVISION;
  return info;
}

void print_header(std::FILE* out, const RunInfo& info, const BenchOp& op, const RunConfig& c) {
  fmt::print(out, "# ranks bench: {}, backend {}{}, {} ranks ({} per node), host {}, {}, git {}\n",
             op.name, info.backend,
             info.sim_backend.empty()
                 ? ""
                 : fmt::format(" ({} rules, model {})", info.sim_backend, info.model),
             info.world_size, info.ranks_per_node, info.host, info.date, info.git);
  fmt::print(out,
             "# {}, warm-up {}, iterations {} x {} blocks, time = the slowest rank's mean "
             "(fastest block); GB = 1e9 B\n",
             runs_in_place(op, c) ? "in place" : "out of place", c.warmup, c.iters, c.repeats);
  fmt::print(out, "#{:>11} {:>12} {:>9} {:>7} {:>11} {:>11} {:>11} {:>7}{}\n", "size", "count",
             "type", "redop", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong",
             info.nccl_model ? "  algo/proto" : "");
}

std::string nccl_choice(const RunInfo& info, const BenchOp& op, size_t bytes) {
  if (!info.nccl_model || !sim::nccl_prices(op.name) || info.world_size <= 1) return "";
  const int per_node = std::max(1, info.ranks_per_node);
  const int nodes = (info.world_size + per_node - 1) / per_node;
  const auto link = nodes > 1 ? sim::LinkClass::Inter : sim::LinkClass::Intra;
  const sim::Prediction p =
      sim::predict(*info.nccl_model, op.name, info.world_size, static_cast<double>(bytes), link,
                   sim::fewest_members_per_node(info.world_size, per_node), nodes);
  return fmt::format("{}/{}", p.nccl_algorithm, p.protocol);
}

void print_row(std::FILE* out, const RunInfo& info, const BenchOp& op, const RunConfig& c,
               const Measurement& m) {
  const int world_size = info.world_size;
  const std::string tuning = nccl_choice(info, op, m.shape.bytes);
  const double alg = algbw(m);
  fmt::print(out, " {:>11} {:>12} {:>9} {:>7} {:>11.2f} {:>11.3f} {:>11.3f} {:>7}{}\n", m.shape.bytes,
             m.shape.piece_count, dtype_name(c.dtype),
             op.uses_reduce_op ? reduce_op_name(c.reduce_op) : "-", m.seconds * 1e6, alg,
             alg * busbw_factor(op.name, world_size),
             m.wrong < 0 ? std::string("N/A") : std::to_string(m.wrong),
             tuning.empty() ? "" : "  " + tuning);
}

void fail_if_wrong(int64_t wrong) {
  if (wrong > 0) {
    throw Error(
        fmt::format("ranks bench: {} wrong values (the #wrong column): the backend's "
                    "results differ from the expected ones",
                    wrong));
  }
}

double row_busbw(const BenchOp& op, const Measurement& m, int world_size) {
  return algbw(m) * busbw_factor(op.name, world_size);
}

void print_footer(std::FILE* out, int64_t wrong, double busbw_sum, size_t rows) {
  const std::string count = wrong < 0 ? std::string("N/A") : std::to_string(wrong);
  fmt::print(out, "# Out of bounds values : {} {}\n", count,
             wrong < 0    ? "(not checked)"
             : wrong == 0 ? "OK"
                          : "FAILED");
  fmt::print(out, "# Avg bus bandwidth    : {:.3f}\n",
             rows == 0 ? 0.0 : busbw_sum / static_cast<double>(rows));
}

std::string json_line(const RunInfo& info, const BenchOp& op, const RunConfig& c,
                      const Measurement& m) {
  const double alg = algbw(m);
  nlohmann::ordered_json j = {{"backend", info.backend},
                              {"world_size", info.world_size},
                              {"ranks_per_node", info.ranks_per_node},
                              {"op", op.name},
                              {"bytes", m.shape.bytes},
                              {"count", m.shape.piece_count},
                              {"dtype", dtype_name(c.dtype)},
                              {"redop", op.uses_reduce_op ? reduce_op_name(c.reduce_op) : "-"},
                              {"in_place", runs_in_place(op, c)},
                              {"time_us", m.seconds * 1e6},
                              {"algbw_GBps", alg},
                              {"busbw_GBps", alg * busbw_factor(op.name, info.world_size)},
                              {"wrong", m.wrong},
                              {"warmup", c.warmup},
                              {"iters", c.iters},
                              {"repeats", c.repeats},
                              {"host", info.host},
                              {"date", info.date},
                              {"git", info.git}};
  if (!info.sim_backend.empty()) {
    j["sim_backend"] = info.sim_backend;
    j["model"] = info.model;
    if (std::string tuning = nccl_choice(info, op, m.shape.bytes); !tuning.empty()) {
      const auto slash = tuning.find('/');
      j["nccl_algorithm"] = tuning.substr(0, slash);
      j["protocol"] = tuning.substr(slash + 1);
    }
  }
  return j.dump();
}

}  // namespace ranks::bench
