// ranks-bench: nccl-tests for every ranks backend. Built on ranks::main, so one binary runs under
// `ranks run` (measured), under `ranks sim` (the cost model's prediction on the virtual clock)
// and alone (one rank). Flags follow nccl-tests (-b -e -f -i -w -n -c -d), except that -o names
// the collective (nccl-tests has one binary per collective) and -r the reduce op.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bench_ops.hpp"
#include "ranks/capabilities.hpp"
#include "ranks/ranks.hpp"
#include "report_lines.hpp"
#include "runner.hpp"
#include "sizes.hpp"

namespace {

struct Args {
  std::string min_bytes = "8";
  std::string max_bytes = "32M";
  double factor = 2;
  std::string increment = "0";
  std::string ops = "all_reduce";
  std::string dtype = "float32";
  std::string reduce_op = "sum";
  int warmup = 5;
  int iters = 20;
  int check = 1;
  int in_place = 0;
  int repeats = 1;
  std::string json;
};

ranks::DType parse_dtype(std::string name) {
  // nccl-tests' names too
  if (name == "half") name = "float16";
  if (name == "float") name = "float32";
  if (name == "double") name = "float64";
  for (ranks::DType d : ranks::all_dtypes) {
    if (ranks::dtype_name(d) == name && d != ranks::DType::Bool) return d;
  }
  throw ranks::InvalidArgument(fmt::format(
      "dtype '{}' is not one of uint8, int8, int32, int64, float16 (half), bfloat16, float32 "
      "(float), float64 (double)",
      name));
}

bool names_reduce_op(const std::string& name);

// nccl-tests takes the reduce op after -o and the root after -r; ranks bench runs several
// collectives, so -o names them and -r is the reduce op. Say so to someone typing nccl-tests'.
std::string nccl_tests_hint(const std::string& name) {
  if (!names_reduce_op(name)) return "";
  return fmt::format("; '{}' is a reduce op: give it with -r (nccl-tests' -o)", name);
}

std::vector<const ranks::bench::BenchOp*> parse_ops(const std::string& list) {
  std::vector<const ranks::bench::BenchOp*> ops;
  if (list == "all") {
    for (const auto& op : ranks::bench::bench_ops()) ops.push_back(&op);
    return ops;
  }
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    const auto* op = ranks::bench::find_bench_op(name);
    if (op == nullptr) {
      throw ranks::InvalidArgument(fmt::format(
          "op '{}' is not one of all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
          "all_to_all, sendrecv (or all){}",
          name, nccl_tests_hint(name)));
    }
    ops.push_back(op);
  }
  return ops;
}

// Why this run cannot measure op ("" when it can): the backend's capability table, as data.
std::string skip_reason(const ranks::bench::BenchOp& op, const ranks::bench::RunConfig& config) {
  if (auto why = ranks::bench::in_place_unsupported(op, config); !why.empty()) {
    return std::string("in place (-I 1): ") + std::string(why);
  }
  const auto backend = ranks::get_backend();
  if (!backend) return op.kind == ranks::OpKind::Send ? "sendrecv needs two ranks" : "";
  if (op.kind == ranks::OpKind::Send && ranks::get_world_size() < 2)
    return "sendrecv needs two ranks";
  ranks::OpRequest probe;
  probe.kind = op.kind;
  probe.reduce_op = config.reduce_op;
  probe.inputs.push_back(ranks::Tensor::zeros({1}, config.dtype, ranks::comm_device()));
  if (!op.uses_reduce_op) probe.reduce_op = ranks::ReduceOp::Sum;
  auto why = ranks::capabilities(*backend).why_unsupported(probe);
  return why.value_or("");
}

// MMEngine's names (ranks::parse_reduce_op), and nccl-tests' prod and avg.
ranks::ReduceOp parse_bench_reduce_op(const std::string& name) {
  if (name == "prod") return ranks::ReduceOp::Product;
  if (name == "avg") return ranks::ReduceOp::Mean;
  if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit)) {
    throw ranks::InvalidArgument(fmt::format(
        "-r takes the reduce op (sum, mean, product, min, max, band, bor, bxor), not a root "
        "('{}'): nccl-tests' -r is the root; ranks bench's broadcast and reduce use root 0",
        name));
  }
  return ranks::parse_reduce_op(name);
}

bool names_reduce_op(const std::string& name) {
  try {
    parse_bench_reduce_op(name);
    return true;
  } catch (const ranks::InvalidArgument&) {
    return false;
  }
}

// Returns the number of wrong values found (summed over ranks and rows; -1: none checked).
int64_t run(const Args& args) {
  using namespace ranks::bench;
  RunConfig config;
  config.dtype = parse_dtype(args.dtype);
  config.reduce_op = parse_bench_reduce_op(args.reduce_op);
  config.warmup = args.warmup;
  config.iters = args.iters;
  config.check = args.check != 0;
  config.in_place = args.in_place != 0;
  config.repeats = args.repeats;
  if (const char* moves = std::getenv("RANKS_SIM_MOVE_DATA"); moves && std::string(moves) == "0") {
    config.shapes_only = true;  // no results to check
    config.check = false;
  }
  const auto sizes = size_sweep(parse_size(args.min_bytes), parse_size(args.max_bytes), args.factor,
                                parse_size(args.increment));
  const auto ops = parse_ops(args.ops);
  const bool leader = ranks::get_rank() == 0;
  const RunInfo info = describe_run();
  std::ofstream json;
  if (leader && !args.json.empty()) {
    json.open(args.json, std::ios::app);
    if (!json) throw ranks::Error(fmt::format("cannot write {}", args.json));
  }
  // Progress goes to stderr once a sweep has run for a few (real) seconds.
  const auto started = std::chrono::steady_clock::now();
  const size_t steps = ops.size() * sizes.size();
  size_t step = 0;
  int64_t wrong = config.check ? 0 : -1;
  double busbw_sum = 0;
  size_t rows = 0;
  for (const BenchOp* op : ops) {
    if (std::string why = skip_reason(*op, config); !why.empty()) {
      if (leader)
        fmt::print("# ranks bench: skipping {} on {}: {}\n\n", op->name, info.backend, why);
      step += sizes.size();
      continue;
    }
    if (leader) print_header(stdout, info, *op, config);
    for (size_t bytes : sizes) {
      ++step;
      Measurement m = measure(*op, config, bytes);
      if (m.shape.piece_count == 0) {  // smaller than one element per rank: nothing to time
        if (leader) {
          fmt::print("# {} bytes: less than one {} per rank on {} ranks; no row\n", bytes,
                     ranks::dtype_name(config.dtype), info.world_size);
        }
        continue;
      }
      if (m.wrong > 0) wrong += m.wrong;  // every rank has the sum (measure all-reduces it)
      if (!leader) continue;
      busbw_sum += row_busbw(*op, m, info.world_size);
      ++rows;
      print_row(stdout, info, *op, config, m);
      std::fflush(stdout);
      if (json.is_open()) json << json_line(info, *op, config, m) << '\n' << std::flush;
      if (std::chrono::steady_clock::now() - started > std::chrono::seconds(3)) {
        fmt::print(stderr, "ranks bench: {} {} done ({}/{})\n", op->name, format_size(bytes), step,
                   steps);
      }
    }
    if (leader) fmt::print("\n");
  }
  if (leader) print_footer(stdout, wrong, busbw_sum, rows);
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"ranks-bench: latency and bandwidth of collectives, nccl-tests style"};
  app.add_option("-b,--minbytes", args.min_bytes, "smallest size (8, 4K, 1M, 1G)");
  app.add_option("-e,--maxbytes", args.max_bytes, "largest size");
  app.add_option("-f,--stepfactor", args.factor, "multiply the size by this each step");
  app.add_option("-i,--stepbytes", args.increment, "add this to the size each step (0: use -f)");
  app.add_option("-o,--op", args.ops,
                 "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, "
                 "sendrecv; a comma-separated list, or all");
  app.add_option("-d,--datatype", args.dtype, "float32, float64, float16, bfloat16, int32, ...");
  app.add_option("-r,--redop", args.reduce_op,
                 "sum, mean (avg), product (prod), min, max, band, bor, bxor");
  app.add_option("-w,--warmup_iters", args.warmup, "untimed runs per size")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-n,--iters", args.iters, "timed runs per size")->check(CLI::PositiveNumber);
  app.add_option("-c,--check", args.check, "1: check results (#wrong); 0: do not");
  app.add_option("-I,--in_place", args.in_place,
                 "1: in place (all_gather's input is its slice of the output, reduce_scatter's "
                 "output its slice of the input); 0: separate buffers. all_reduce, broadcast "
                 "and reduce are always in place");
  app.add_option("-R,--repeats", args.repeats,
                 "timed blocks of -n runs per size; the fastest block is reported")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", args.json, "append one JSON line per op and size to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  // Every rank has the count, so every launcher sees the run fail.
  return ranks::main(argc, argv, [&] { ranks::bench::fail_if_wrong(run(args)); });
}
