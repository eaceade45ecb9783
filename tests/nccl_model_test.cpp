// The cost model's NCCL system (sim/ranks/sim/nccl_tuner.cpp): NCCL's own latencies and graph
// bandwidths as its formulas give them by hand, the held-out published measurements it must
// meet (reports/cost_model/measured.csv), and the simulator pricing a group by the nodes it spans.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "harness.hpp"
#include "model_files.hpp"
#include "ranks/sim/cost_model.hpp"

namespace ranks::testing {
namespace {

using sim::LinkClass;

const sim::NcclSystem& h100() {
  static const sim::NcclSystem system = *sim::cost_model_preset("h100-nvlink-ib").nccl;
  return system;
}

// NCCL's table entry for (algorithm, protocol); fails the test when it is not enabled.
sim::NcclCost entry(const std::vector<sim::NcclCost>& table, std::string_view algorithm,
                    std::string_view protocol) {
  for (const auto& c : table) {
    if (c.algorithm == algorithm && c.protocol == protocol) return c;
  }
  ADD_FAILURE() << algorithm << "/" << protocol << " is not in the table";
  return {};
}

// NCCL's latencies (µs) on HGX H100, from tuning.cc's formulas worked by hand (base latency plus
// per-hop latencies: one node's ring all_reduce in LL is 6.6 + 14 x 0.6 = 15.0; between nodes a
// ring step that crosses pays the network's hop, one that does not the larger of NVLink's hop
// and the host's network overhead).
TEST(NcclModel, LatenciesAreNcclsOwn) {
  struct Row {
    int n, nodes;
    std::array<double, 3> ring, tree;
    double nvls, nvls_tree;
    std::array<double, 3> gather_ring;
    double broadcast_ll;
  };
  const Row rows[] = {
      {8, 1, {15.0, 40.6, 56.0}, {15.2, 31.5, 64.4}, 25.0, -1, {10.8, 27.3, 32.2}, 7.2},
      {16, 2, {40.0, 75.2, 131.6}, {25.2, 48.5, 92.4}, -1, 66.8, {23.3, 44.6, 70.0}, 9.3},
      {32, 4, {78.8, 144.4, 282.8}, {35.2, 65.5, 120.4}, -1, 108.6, {42.7, 79.2, 145.6}, 9.3},
      {64, 8, {156.4, 282.8, 585.2}, {45.2, 82.5, 148.4}, -1, 150.4, {81.5, 148.4, 296.8}, 9.3},
  };
  const std::array<std::string_view, 3> protocols = {"LL", "LL128", "Simple"};
  for (const Row& r : rows) {
    SCOPED_TRACE(fmt::format("{} ranks on {} nodes", r.n, r.nodes));
    const auto all_reduce = sim::nccl_costs(h100(), "all_reduce", r.n, r.nodes, 1024);
    const auto all_gather = sim::nccl_costs(h100(), "all_gather", r.n, r.nodes, 1024);
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_NEAR(entry(all_reduce, "ring", protocols[p]).latency_us, r.ring[p], 0.05);
      EXPECT_NEAR(entry(all_reduce, "tree", protocols[p]).latency_us, r.tree[p], 0.05);
      EXPECT_NEAR(entry(all_gather, "ring", protocols[p]).latency_us, r.gather_ring[p], 0.05);
    }
    if (r.nvls >= 0) {
      EXPECT_NEAR(entry(all_reduce, "nvls", "Simple").latency_us, r.nvls, 0.05);
    }
    if (r.nvls_tree >= 0) {
      EXPECT_NEAR(entry(all_reduce, "nvls_tree", "Simple").latency_us, r.nvls_tree, 0.05);
    }
    const auto broadcast = sim::nccl_costs(h100(), "broadcast", r.n, r.nodes, 1024);
    EXPECT_NEAR(entry(broadcast, "ring", "LL").latency_us, r.broadcast_ll, 0.05);
    // NVLS reduces in the switch of one node; between nodes it needs CollNet, which is off.
    EXPECT_EQ(std::ranges::count(all_reduce, "nvls", &sim::NcclCost::algorithm), r.nodes == 1);
    EXPECT_EQ(std::ranges::count(all_reduce, "nvls_tree", &sim::NcclCost::algorithm),
              r.nodes > 1);
  }
}

// The graphs' bandwidth, worked from search.cc's speeds: one H100 node's ring runs 12 channels
// of 30 GB/s (360 of NVLink's 18 x 20.6 = 370.8), LL halves it up to its 141 GB/s cap, and
// NVLS has 8 channels of 40 GB/s at 85 % efficiency, 7 of 8 reducing, both directions (476).
// Algorithm bandwidth is bus bandwidth x n / (2 (n - 1)) for an all_reduce.
TEST(NcclModel, BandwidthsAreNcclsGraphs) {
  const auto table = sim::nccl_costs(h100(), "all_reduce", 8, 1, 1 << 30);
  const double to_algbw = 8.0 / 14.0;
  EXPECT_EQ(entry(table, "ring", "Simple").channels, 12);
  EXPECT_NEAR(entry(table, "ring", "Simple").bandwidth_GBps, 360 * to_algbw, 1e-9);
  EXPECT_NEAR(entry(table, "ring", "LL").bandwidth_GBps, 141 * to_algbw, 1e-9);
  EXPECT_NEAR(entry(table, "ring", "LL128").bandwidth_GBps, 360 * 0.92 * to_algbw, 1e-9);
  EXPECT_NEAR(entry(table, "nvls", "Simple").bandwidth_GBps, 8 * 40 * 0.85 * 7 / 8 * 2 * to_algbw,
              1e-9);
  // At 1 GiB NCCL's default on one H100 node is NVLS (its time is the smallest).
  EXPECT_EQ(table.front().algorithm, "nvls");
  // A100: 12 NVLink3 links of 20 GB/s, 12 ring channels of 20, no NVLS.
  const auto a100 = *sim::cost_model_preset("a100-nvlink-ib").nccl;
  const auto a100_table = sim::nccl_costs(a100, "all_reduce", 8, 1, 1 << 30);
  EXPECT_NEAR(entry(a100_table, "ring", "Simple").bandwidth_GBps, 240 * to_algbw, 1e-9);
  EXPECT_EQ(std::ranges::count(a100_table, "nvls", &sim::NcclCost::algorithm), 0);
}

// The accuracy the preset promises (issue 50's criterion), on published nccl-tests runs it was
// not fitted to: busbw within 20 % from 1 MiB up, time within 35 % below, on at least 85 % of
// the points, none off by more than 2x.
struct Accuracy {
  int points = 0;
  int within = 0;
  int beyond_twice = 0;
  std::string worst;
};

Accuracy check_measurements(std::string_view preset, std::string_view role, int min_version) {
  std::ifstream in(std::string(RANKS_SOURCE_DIR) + "/reports/cost_model/measured.csv");
  EXPECT_TRUE(in) << "reports/cost_model/measured.csv";
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::stringstream s(line); std::getline(s, line, ',');) header.push_back(line);
  auto col = [&](std::string_view name) {
    return static_cast<size_t>(std::ranges::find(header, name) - header.begin());
  };
  Accuracy a;
  double worst = 1;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string field; std::getline(s, field, ',');) f.push_back(field);
    f.resize(header.size());
    if (f[col("system")] != preset || f[col("role")] != role || !f[col("nccl_algo")].empty()) {
      continue;
    }
    const std::string version = f[col("nccl_version")];
    if (min_version > 0 && (version.empty() || std::stoi(version.substr(2)) < min_version)) {
      continue;
    }
    const int n = std::stoi(f[col("nranks")]), nodes = std::stoi(f[col("nnodes")]);
    const double bytes = std::stod(f[col("bytes")]);
    const double measured_us = std::stod(f[col("time_us")]);
    const sim::CostModel model = sim::cost_model_preset(preset);
    const double predicted_us =
        sim::predict(model, f[col("op")], n, bytes, nodes > 1 ? LinkClass::Inter : LinkClass::Intra,
                     n / nodes, nodes)
            .seconds *
        1e6;
    // From 1 MiB the criterion is on bandwidth (measured time / predicted), below on time.
    const double ratio =
        bytes >= (1 << 20) ? measured_us / predicted_us : predicted_us / measured_us;
    ++a.points;
    if (std::abs(ratio - 1) <= (bytes >= (1 << 20) ? 0.20 : 0.35)) ++a.within;
    if (ratio > 2 || ratio < 0.5) ++a.beyond_twice;
    if (std::abs(std::log(ratio)) > std::abs(std::log(worst))) {
      worst = ratio;
      a.worst = fmt::format("{} n={} nodes={} bytes={}: ratio {:.2f}", f[col("op")], n, nodes,
                            bytes, ratio);
    }
  }
  return a;
}

TEST(NcclModel, H100HeldOutMeasurementsMeetTheCriterion) {
  const Accuracy a = check_measurements("h100-nvlink-ib", "held_out", 0);
  EXPECT_GE(a.points, 200);
  EXPECT_GE(a.within, 0.85 * a.points) << a.within << " of " << a.points << "; worst " << a.worst;
  EXPECT_EQ(a.beyond_twice, 0) << a.worst;
}

// A100's held-out runs with a current NCCL (2.17 on): the 2021 runs of NCCL 2.8.4 measure an
// older tuner (reports/cost_model.md) and are reported, not held to the criterion.
TEST(NcclModel, A100HeldOutMeasurementsOfCurrentNcclMeetTheCriterion) {
  const Accuracy a = check_measurements("a100-nvlink-ib", "held_out", 17);
  EXPECT_GE(a.points, 20);
  EXPECT_GE(a.within, 0.85 * a.points) << a.within << " of " << a.points << "; worst " << a.worst;
  EXPECT_EQ(a.beyond_twice, 0) << a.worst;
}

// Through the simulator, on two H100 nodes (left to the model, 8 ranks to a node): ranks 7 and 8
// are one rank on each node, so their all_reduce is priced as NCCL's 2 ranks on 2 nodes; the
// world's as 16 ranks on 2 nodes; and a group within a node as one node.
TEST(NcclModel, TheSimulatorPricesAGroupByTheNodesItSpans) {
  sim::Options options = default_options();
  options.model = "h100-nvlink-ib";
  const int64_t count = 1 << 18;  // 1 MiB of float32
  const double bytes = count * 4.0;
  std::map<std::string, std::chrono::nanoseconds> took;
  int local_size = 0;
  sim::Report report = simulate(
      16,
      [&] {
        auto pair = new_group({7, 8});
        auto inside = new_group({0, 1, 2, 3});
        auto t = Tensor::zeros({count}, DType::Float32);
        auto timed = [&](const char* name, auto&& op) {
          barrier();
          const auto start = now();
          op();
          if (get_rank() == (std::string(name) == "pair" ? 7 : 0)) {
            took[name] = now() - start;
          }
        };
        if (get_rank() == 0) local_size = get_local_size();
        timed("pair", [&] {
          if (pair.is_member()) all_reduce(t, ReduceOp::Sum, pair);
        });
        timed("inside", [&] {
          if (inside.is_member()) all_reduce(t, ReduceOp::Sum, inside);
        });
        timed("world", [&] { all_reduce(t); });
      },
      options);
  ASSERT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_EQ(local_size, 8);
  auto priced = [&](int n, int nodes) {
    return std::chrono::nanoseconds(
        std::llround(sim::nccl_predict(h100(), "all_reduce", n, nodes, bytes).seconds * 1e9));
  };
  EXPECT_EQ(took["pair"], priced(2, 2));
  EXPECT_EQ(took["inside"], priced(4, 1));
  EXPECT_EQ(took["world"], priced(16, 2));
  // One rank per node crosses on one NIC; the whole world has every rail, and NVLS-tree.
  EXPECT_GT(took["pair"], took["inside"]);
}

// NCCL runs one rank per GPU: more ranks on a node than it has GPUs is refused by name.
TEST(NcclModel, MoreRanksPerNodeThanGpusIsRefused) {
  sim::Options options = default_options();
  options.model = "h100-nvlink-ib";
  options.world_size = 16;
  options.ranks_per_node = 16;
  try {
    sim::run(options, [] {});
    ADD_FAILURE() << "16 ranks on one 8-GPU node";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("8 GPUs per node")) << e.what();
  }
  EXPECT_THROW(sim::nccl_costs(h100(), "all_reduce", 16, 1, 8), InvalidArgument);
  EXPECT_THROW(sim::nccl_costs(h100(), "all_to_all", 8, 1, 8), InvalidArgument);
}

TEST(NcclModel, ModelFileMistakesInTheSystemAreNamed) {
  auto refused = model_file_error;
  EXPECT_THAT(refused(R"({"nccl": {"arch": "volta"}})"),
              ::testing::AllOf(::testing::HasSubstr("mine.json nccl"),
                               ::testing::HasSubstr("arch 'volta' is not one of hopper, ampere")));
  EXPECT_THAT(refused(R"({"nccl": {"nic_gbps": 400}})"),
              ::testing::HasSubstr("unknown key \"nic_gbps\""));
  EXPECT_THAT(refused(R"({"nccl": {"gpus_per_node": 0}})"),
              ::testing::HasSubstr("gpus_per_node must be >= 1"));
  EXPECT_THAT(refused(R"({"nccl": {"p2p_net_efficiency": 1.5}})"),
              ::testing::HasSubstr("p2p_net_efficiency must be > 0 and <= 1"));
  EXPECT_THAT(refused(R"({"nccl": {"nvswitch": false}})"),
              ::testing::HasSubstr("nvls needs nvswitch"));
  EXPECT_EQ(refused(R"({"nccl": {"nvswitch": false, "nvls": false, "gpus_per_node": 4}})"),
            "loaded");
}

}  // namespace
}  // namespace ranks::testing
