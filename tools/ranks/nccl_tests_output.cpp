#include "nccl_tests_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include "ranks/errors.hpp"

namespace ranks::cli {

namespace {

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<double> number(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// nccl-tests' program names (all_reduce_perf, alltoall_perf) as the op families the model
// prices; "" for a test it has no family for (hypercube).
std::string family_of(std::string program) {
  if (auto slash = program.rfind('/'); slash != std::string::npos) program.erase(0, slash + 1);
  if (program.size() > 5 && program.ends_with("_perf")) program.resize(program.size() - 5);
  static const std::map<std::string, std::string, std::less<>> names = {
      {"all_reduce", "all_reduce"}, {"all_gather", "all_gather"},
      {"reduce_scatter", "reduce_scatter"}, {"broadcast", "broadcast"},
      {"reduce", "reduce"}, {"alltoall", "all_to_all"},
      {"gather", "gather"}, {"scatter", "scatter"},
      {"sendrecv", "sendrecv"}};
  const auto it = names.find(program);
  return it == names.end() ? "" : it->second;
}

// One test of the output: its op, its ranks' hosts, its table rows.
struct Block {
  std::string op;
  std::map<std::string, int> ranks_per_host;
  int ranks = 0;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // (line number, words)
};

}  // namespace

bool is_nccl_tests_output(const std::string& first_line) {
  return first_line.find("nccl-tests") != std::string::npos ||
         first_line.find("Collective test starting") != std::string::npos ||
         first_line.find("nThread") != std::string::npos;
}

std::vector<Row> read_nccl_tests(std::istream& in, const std::string& path,
                                 const std::string& op) {
  std::vector<Block> blocks(1);
  blocks.back().op = op;
  int number_of_line = 0;
  for (std::string line; std::getline(in, line);) {
    ++number_of_line;
    const auto w = words(line);
    if (w.empty()) continue;
    if (line.find("Collective test starting:") != std::string::npos) {
      if (!blocks.back().rows.empty() || blocks.back().ranks > 0) blocks.emplace_back();
      blocks.back().op = op.empty() ? family_of(w.back()) : op;
      continue;
    }
    // "#  Rank  3 Group  0 Pid 123 on host-a device  3 [0000:1b:00] NVIDIA H100 80GB HBM3"
    // (older versions have no Group): the host follows "on".
    if (w.size() >= 4 && w[0] == "#" && w[1] == "Rank") {
      const auto on = std::find(w.begin() + 2, w.end(), "on");
      if (on != w.end() && on + 1 != w.end()) {
        ++blocks.back().ranks;
        ++blocks.back().ranks_per_host[*(on + 1)];
      }
      continue;
    }
    if (w[0].starts_with("#")) continue;
    // A table row: size count type redop root time algbw busbw #wrong (out of place), then
    // the same for in place; anything else (a library's warning, mpirun's notes) is not data.
    if (w.size() >= 9 && number(w[0]) && number(w[1]) && number(w[5])) {
      blocks.back().rows.emplace_back(number_of_line, w);
    }
  }
  std::vector<Row> rows;
  for (const Block& b : blocks) {
    if (b.rows.empty()) continue;
    const int line = b.rows.front().first;
    if (b.op.empty()) {
      throw InvalidArgument(fmt::format(
          "{}:{}: nccl-tests output without a \"# Collective test starting: NAME_perf\" line (or "
          "of a test the cost model has no op for): give the op with --op",
          path, line));
    }
    if (b.ranks == 0) {
      throw InvalidArgument(fmt::format(
          "{}:{}: nccl-tests output without its \"#  Rank N ... on HOST\" lines: the world size "
          "and the nodes cannot be told",
          path, line));
    }
    int per_node = 0;
    for (const auto& [host, count] : b.ranks_per_host) per_node = std::max(per_node, count);
    const std::string host = b.ranks_per_host.begin()->first;
    for (const auto& [number_at, w] : b.rows) {
      // Times are at 5 (out of place) and 9 (in place); the faster is kept, as for repeats.
      double time_us = *number(w[5]);
      if (w.size() >= 13) {
        if (auto in_place = number(w[9]); in_place && *in_place > 0) {
          time_us = std::min(time_us, *in_place);
        }
      }
      const auto wrong = number(w[8]);
      rows.push_back(Row{{"backend", "nccl"},
                         {"world_size", b.ranks},
                         {"ranks_per_node", per_node},
                         {"op", b.op},
                         {"bytes", *number(w[0])},
                         {"count", *number(w[1])},
                         {"dtype", w[2]},
                         {"redop", w[3]},
                         {"time_us", time_us},
                         {"wrong", wrong ? static_cast<int64_t>(*wrong) : 0},
                         {"host", host},
                         {"source", fmt::format("{}:{}", path, number_at)}});
    }
  }
  return rows;
}

}  // namespace ranks::cli
