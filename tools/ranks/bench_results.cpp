#include "bench_results.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "nccl_tests_output.hpp"
#include "ranks/errors.hpp"

namespace ranks::cli {

namespace {

bool whole_in(const Row& value, int64_t low, int64_t high) {
  return value.is_number_integer() && value.get<int64_t>() >= low && value.get<int64_t>() <= high;
}

// Values a reader would otherwise take silently: a world size of 2.5 read as 2, 2^40 wrapped, a
// negative size, an op no model prices.
void check_values(const Row& row) {
  if (!whole_in(row["world_size"], 1, std::numeric_limits<int>::max())) {
    throw InvalidArgument(fmt::format("\"world_size\" must be a whole number >= 1, got {}",
                                      row["world_size"].dump()));
  }
  if (row.contains("ranks_per_node") &&
      !whole_in(row["ranks_per_node"], 0, std::numeric_limits<int>::max())) {
    throw InvalidArgument(fmt::format("\"ranks_per_node\" must be a whole number >= 0, got {}",
                                      row["ranks_per_node"].dump()));
  }
  for (const char* key : {"bytes", "time_us"}) {
    if (!(row[key].get<double>() >= 0)) {
      throw InvalidArgument(fmt::format("\"{}\" must be >= 0, got {}", key, row[key].dump()));
    }
  }
  if (row.contains("wrong") && !whole_in(row["wrong"], 0, std::numeric_limits<int64_t>::max())) {
    throw InvalidArgument(
        fmt::format("\"wrong\" must be a whole number >= 0, got {}", row["wrong"].dump()));
  }
  const std::string op = row["op"].get<std::string>();
  const auto families = sim::op_families();
  if (std::find(families.begin(), families.end(), op) == families.end()) {
    throw InvalidArgument(
        fmt::format("\"op\" '{}' is not one of {}", op, fmt::join(families, ", ")));
  }
}

}  // namespace

std::vector<Row> read_results(const std::vector<std::string>& paths,
                              const std::string& nccl_tests_op) {
  std::vector<Row> rows;
  for (const std::string& path : paths) {
    if (std::filesystem::is_directory(path)) {
      throw InvalidArgument(fmt::format("{} is a directory, not ranks-bench JSON lines", path));
    }
    std::ifstream in(path);
    if (!in) throw InvalidArgument(fmt::format("cannot read {}", path));
    std::string first;
    while (std::getline(in, first) && first.find_first_not_of(" \t\r") == std::string::npos) {
    }
    in.clear();
    in.seekg(0);
    if (is_nccl_tests_output(first)) {
      for (Row& row : read_nccl_tests(in, path, nccl_tests_op)) {
        try {
          check_values(row);
        } catch (const InvalidArgument& e) {
          throw InvalidArgument(fmt::format("{}: {}", row["source"].get<std::string>(), e.what()));
        }
        rows.push_back(std::move(row));
      }
      continue;
    }
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        Row row = Row::parse(line);
        for (const char* key : {"backend", "world_size", "op", "bytes", "time_us"}) {
          if (!row.contains(key)) throw InvalidArgument(fmt::format("no \"{}\"", key));
        }
        // The types every reader relies on (calibrate here, plot_bench.py in `ranks report`).
        for (const char* key : {"backend", "op"}) {
          if (!row[key].is_string()) {
            throw InvalidArgument(fmt::format("\"{}\" is not a string", key));
          }
        }
        for (const char* key : {"world_size", "bytes", "time_us"}) {
          if (!row[key].is_number()) {
            throw InvalidArgument(fmt::format("\"{}\" is not a number", key));
          }
        }
        check_values(row);
        rows.push_back(std::move(row));
      } catch (const std::exception& e) {
        throw InvalidArgument(
            fmt::format("{}:{}: not a ranks-bench JSON line: {}", path, number, e.what()));
      }
    }
  }
  return rows;
}

std::vector<Row> fastest_rows(const std::vector<Row>& rows) {
  std::map<std::string, size_t> index;
  std::vector<Row> out;
  for (const Row& row : rows) {
    const std::string key = fmt::format(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}", row["backend"].get<std::string>(),
        row["world_size"].get<int>(), row.value("ranks_per_node", 0), row["op"].get<std::string>(),
        row["bytes"].get<double>(), row.value("dtype", ""), row.value("redop", ""),
        row.value("model", ""), row.value("in_place", false));
    auto [it, inserted] = index.try_emplace(key, out.size());
    if (inserted) {
      out.push_back(row);
    } else if (row["time_us"].get<double>() < out[it->second]["time_us"].get<double>()) {
      out[it->second] = row;
    }
  }
  return out;
}

sim::Sample to_sample(const Row& row) {
  sim::Sample s;
  s.family = row["op"].get<std::string>();
  s.n = row["world_size"].get<int>();
  const int per_node = row.value("ranks_per_node", s.n);
  s.link = per_node == 0 || per_node >= s.n ? sim::LinkClass::Intra : sim::LinkClass::Inter;
  s.members_per_node = sim::fewest_members_per_node(s.n, per_node);
  s.nodes = per_node == 0 || per_node >= s.n ? 1 : (s.n + per_node - 1) / per_node;
  s.bytes = row["bytes"].get<double>();
  s.seconds = row["time_us"].get<double>() * 1e-6;
  return s;
}

bool usable(const Row& row) {
  return row["backend"] != "sim" && row.value("wrong", int64_t{0}) == 0 &&
         row["time_us"].get<double>() > 0;
}

}  // namespace ranks::cli
