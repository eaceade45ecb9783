// The simulator's cost model: closed-form predictions, the virtual clock advancing by them,
// topology from ranks_per_node, presets and model files. Expected times are written out from
// the textbook formulas here, not taken from the model's own tables.

#include "ranks/sim/cost_model.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness.hpp"
#include "model_files.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using sim::Algorithm;
using sim::LinkClass;

constexpr double kAlpha = 5e-6;  // 5 us
constexpr double kBeta = 10e9;   // 10 GB/s
constexpr double kAlphaInter = 20e-6;
constexpr double kBetaInter = 1e9;

// A hand-written model file: ring all_reduce on both link classes.
const char* kModelJson = R"({
  "name": "test-model",
  "links": {"intra": {"alpha_us": 5, "beta_GBps": 10}, "inter": {"alpha_us": 20, "beta_GBps": 1}},
  "ops": {"all_reduce": {"algorithm": "ring"}}
})";

std::filesystem::path write_model() {
  auto path = std::filesystem::temp_directory_path() / fmt::format("ranks-model-{}.json", getpid());
  std::ofstream(path) << kModelJson;
  return path;
}

std::chrono::nanoseconds ns(double seconds) {
  return std::chrono::nanoseconds(std::llround(seconds * 1e9));
}

// Ring all_reduce: n-1 reduce-scatter steps and n-1 all-gather steps of S/n bytes each.
double ring_all_reduce(int n, double bytes, double alpha, double beta) {
  return 2.0 * (n - 1) * (alpha + bytes / (n * beta));
}

sim::Report one_all_reduce(int n, int64_t count, int ranks_per_node = 0) {
  auto path = write_model();
  sim::Options options = default_options();
  options.model = path.string();
  options.ranks_per_node = ranks_per_node;
  sim::Report report = simulate(
      n,
      [count] {
        auto t = Tensor::zeros({count}, DType::Float32);
        all_reduce(t);
      },
      options);
  std::filesystem::remove(path);
  return report;
}

TEST(CostModel, RingAllReduceMatchesTheClosedForm) {
  const auto model = sim::parse_cost_model(kModelJson, "test");
  for (int n : {2, 3, 4, 8, 64}) {
    for (double bytes : {8.0, 4096.0, 1048576.0, 268435456.0}) {
      auto p = sim::predict(model, "all_reduce", n, bytes, LinkClass::Intra);
      EXPECT_EQ(p.algorithm, Algorithm::Ring);
      EXPECT_NEAR(p.seconds, ring_all_reduce(n, bytes, kAlpha, kBeta), 1e-15) << n << " " << bytes;
    }
  }
}

TEST(CostModel, TheVirtualClockAdvancesByThePrediction) {
  for (int n : {2, 4, 8}) {
    const int64_t count = 1 << 18;  // 1 MiB of float32
    sim::Report report = one_all_reduce(n, count);
    ASSERT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
    EXPECT_EQ(report.virtual_time, ns(ring_all_reduce(n, count * 4.0, kAlpha, kBeta))) << n;
  }
}

TEST(CostModel, RanksPerNodeMakesARingCrossNodesSlower) {
  const int64_t count = 1 << 16;
  sim::Report one_node = one_all_reduce(8, count, 8);
  sim::Report two_nodes = one_all_reduce(8, count, 4);
  EXPECT_EQ(one_node.virtual_time, ns(ring_all_reduce(8, count * 4.0, kAlpha, kBeta)));
  // Contention-free: every ring step waits for the slowest (inter-node) link.
  EXPECT_EQ(two_nodes.virtual_time, ns(ring_all_reduce(8, count * 4.0, kAlphaInter, kBetaInter)));
}

TEST(CostModel, MessagesCostOneStepOfTheirLink) {
  auto path = write_model();
  sim::Options options = default_options();
  options.model = path.string();
  options.ranks_per_node = 2;
  std::vector<std::chrono::nanoseconds> done(4);
  const int64_t count = 1000;  // 4,000 bytes
  sim::Report report = simulate(
      4,
      [&] {
        auto t = Tensor::zeros({count}, DType::Float32);
        const int r = get_rank();
        if (r == 0) send(t, 1);  // same node
        if (r == 1) recv(t, 0);
        if (r == 2) send(t, 0);  // rank 2 is on the second node
        if (r == 0) recv(t, 2);
        done[static_cast<size_t>(r)] = now();
      },
      options);
  std::filesystem::remove(path);
  ASSERT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  const auto intra = ns(kAlpha + 4000 / kBeta);
  const auto inter = ns(kAlphaInter + 4000 / kBetaInter);
  EXPECT_EQ(done[1], intra);
  EXPECT_EQ(done[2], intra + inter) << "rank 0 receives only after its own send completed";
  EXPECT_EQ(done[0], intra + inter);
}

TEST(CostModel, MessagesUseTheFitOfTheirGroupsWorldSize) {
  // Calibrated at 4 ranks: 7 us a message there; the all-sizes fit says 1 us.
  auto path =
      std::filesystem::temp_directory_path() / fmt::format("ranks-model-n-{}.json", getpid());
  std::ofstream(path) << R"({"ops": {"sendrecv": {
      "intra": [{"algorithm": "direct", "alpha_us": 1}],
      "intra_by_world_size": {"4": [{"algorithm": "direct", "alpha_us": 7}]}}}})";
  std::vector<std::chrono::nanoseconds> done(4);
  sim::Options options = default_options();
  options.model = path.string();
  sim::Report report = simulate(
      4,
      [&] {
        const int r = get_rank();
        auto out = Tensor::zeros({4}, DType::Float32);
        auto in = Tensor::zeros({4}, DType::Float32);
        Work sent = isend(out, (r + 1) % 4);
        Work received = irecv(in, (r + 3) % 4);
        sent.wait();
        received.wait();
        done[static_cast<size_t>(r)] = now();
      },
      options);
  std::filesystem::remove(path);
  ASSERT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  for (auto t : done) EXPECT_EQ(t, 7us);
}

TEST(CostModel, WithoutAModelOpsAreFree) {
  sim::Report report = simulate(8, [] {
    auto t = Tensor::zeros({1 << 16}, DType::Float32);
    all_reduce(t);
    barrier();
  });
  EXPECT_EQ(report.virtual_time, 0ns);
  EXPECT_TRUE(sim::load_cost_model("free").is_free());
}

TEST(CostModel, AutoTakesTheCheaperAlgorithm) {
  sim::CostModel model;
  model.intra = {kAlpha, kBeta};
  const int n = 16;
  // Small: latency decides, recursive doubling's log2(16) = 4 steps beat the ring's 30.
  auto small = sim::predict(model, "all_reduce", n, 8, LinkClass::Intra);
  EXPECT_EQ(small.algorithm, Algorithm::Tree);
  EXPECT_NEAR(small.seconds, 4 * (kAlpha + 8 / kBeta), 1e-15);
  // Large: bandwidth decides, the ring moves 2(n-1)/n of the buffer instead of log2(n) times it.
  auto large = sim::predict(model, "all_reduce", n, 1 << 26, LinkClass::Intra);
  EXPECT_EQ(large.algorithm, Algorithm::Ring);
  EXPECT_NEAR(large.seconds, ring_all_reduce(n, 1 << 26, kAlpha, kBeta), 1e-12);
}

TEST(CostModel, SegmentsPriceSizeRangesSeparately) {
  sim::CostModel model;
  sim::OpModel op;
  op.intra = {sim::Segment{1024, Algorithm::Tree, 1e-6, 2e-6, 1e9},
              sim::Segment{sim::unlimited, Algorithm::Ring, 0, 3e-6, 5e9}};
  model.ops["all_reduce"] = op;
  EXPECT_NEAR(sim::predict(model, "all_reduce", 4, 1024, LinkClass::Intra).seconds,
              1e-6 + 2 * (2e-6 + 1024 / 1e9), 1e-15);
  EXPECT_NEAR(sim::predict(model, "all_reduce", 4, 4096, LinkClass::Intra).seconds,
              ring_all_reduce(4, 4096, 3e-6, 5e9), 1e-15);
}

TEST(CostModel, ModelFilesRoundTrip) {
  for (std::string_view preset : sim::cost_model_presets()) {
    sim::CostModel model = sim::cost_model_preset(preset);
    sim::CostModel again = sim::parse_cost_model(sim::to_json(model), "round trip");
    EXPECT_EQ(again.name, model.name);
    for (std::string_view family : sim::op_families()) {
      for (int n : {2, 8, 64}) {
        for (auto link : {LinkClass::Intra, LinkClass::Inter}) {
          // An NCCL system holds at most a node's GPUs on one node.
          if (model.nccl && link == LinkClass::Intra && n > model.nccl->gpus_per_node) continue;
          double a = sim::predict(model, family, n, 65536, link, 1, 8).seconds;
          double b = sim::predict(again, family, n, 65536, link, 1, 8).seconds;
          EXPECT_NEAR(a, b, 1e-12 + 1e-9 * a) << preset << " " << family << " " << n;
        }
      }
    }
  }
}

// A model measured on one machine knows nothing of links between nodes: simulating several
// nodes with it would make every op between them free, so the run refuses to start.
TEST(CostModel, AOneNodeModelRefusesSeveralNodes) {
  auto path =
      std::filesystem::temp_directory_path() / fmt::format("ranks-model-1node-{}.json", getpid());
  std::ofstream(path) << R"({"name": "one-node", "ops": {"all_reduce": {
      "intra": [{"algorithm": "ring", "alpha_us": 5, "beta_GBps": 2}]}}})";
  const sim::CostModel model = sim::load_cost_model(path.string());
  EXPECT_FALSE(model.prices_inter_node());
  for (std::string_view preset : sim::cost_model_presets()) {
    if (preset != "free") {
      EXPECT_TRUE(sim::cost_model_preset(preset).prices_inter_node()) << preset;
    }
  }
  sim::Options options = default_options();
  options.model = path.string();
  options.world_size = 4;
  options.ranks_per_node = 2;
  try {
    sim::run(options, [] {});
    ADD_FAILURE() << "a one-node model simulated two nodes";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "cost model 'one-node' has no figures for links between nodes"))
        << e.what();
  }
  // One node (explicitly, or by default) is what the model describes.
  options.ranks_per_node = 4;
  EXPECT_EQ(sim::run(options, [] { barrier(); }).outcome, sim::Outcome::Ok);
  options.ranks_per_node = 0;
  EXPECT_EQ(sim::run(options, [] { barrier(); }).outcome, sim::Outcome::Ok);
  std::filesystem::remove(path);
}

TEST(CostModel, BadModelsAreClearErrors) {
  EXPECT_THROW(sim::load_cost_model("no-such-preset-or-file"), InvalidArgument);
  EXPECT_THROW(sim::parse_cost_model(R"({"ops": {"all_reduce": {"algorithm": "magic"}}})", "t"),
               InvalidArgument);
  EXPECT_THROW(sim::parse_cost_model(R"({"ops": {"teleport": {}}})", "t"), InvalidArgument);
  EXPECT_THROW(sim::parse_cost_model(R"({"links": {"intra": {"beta_GBps": 0}}})", "t"),
               InvalidArgument);
  EXPECT_THROW(sim::parse_cost_model("{not json", "t"), InvalidArgument);
}

// What a hand-edited file gets wrong most: a misspelt key, an algorithm the op does not have, a
// world size that is not one, a backend that does not exist. Each is refused naming the file
// and the place, where it used to load with a default or fail later inside the user's program.
TEST(CostModel, ModelFileMistakesNameTheFileAndThePlace) {
  auto refused = model_file_error;
  EXPECT_THAT(refused(R"({"links": {"intra": {"alpa_us": 3}}})"),
              ::testing::AllOf(::testing::HasSubstr("mine.json"),
                               ::testing::HasSubstr("unknown key \"alpa_us\"")));
  EXPECT_THAT(refused(R"({"links": {"inetr": {"alpha_us": 3}}})"),
              ::testing::HasSubstr("unknown key \"inetr\""));
  EXPECT_THAT(refused(R"({"ops": {"all_reduce": {"intra": [{"algorithm": "direct"}]}}})"),
              ::testing::AllOf(::testing::HasSubstr("mine.json all_reduce"),
                               ::testing::HasSubstr("has no direct algorithm")));
  for (const char* n : {"four", "4x", "-4", "1"}) {
    const std::string json =
        fmt::format(R"({{"ops": {{"all_reduce": {{"intra_by_world_size": {{"{}": []}}}}}}}})", n);
    EXPECT_THAT(refused(json.c_str()), ::testing::HasSubstr("must be a whole number >= 2")) << n;
  }
  EXPECT_THAT(
      refused(R"({"backend": "nccl2"})"),
      ::testing::AllOf(::testing::HasSubstr("mine.json"), ::testing::HasSubstr("backend 'nccl2'")));
  EXPECT_THAT(refused(R"({"links": {"inter": {"alpha_us": 3, "rails": 0}}})"),
              ::testing::HasSubstr("rails must be >= 1"));
  EXPECT_EQ(refused(R"({"links": {"inter": {"alpha_us": 12, "beta_GBps": 50, "rails": 8}},
                        "ops": {"all_gather": {"algorithm": "ring", "intra_by_world_size":
                                {"4": [{"algorithm": "auto", "alpha_us": 1}]}}}})"),
            "loaded");
  EXPECT_THROW(sim::load_cost_model(std::filesystem::temp_directory_path().string()),
               InvalidArgument);
}

// A price beyond the 64-bit nanosecond clock (292 years) fails the op on every rank with a
// message about the model, instead of wrapping to a time of 0 and an outcome of ok.
TEST(CostModel, APriceBeyondTheVirtualClockIsAnError) {
  auto path = std::filesystem::temp_directory_path() / fmt::format("ranks-huge-{}.json", getpid());
  std::ofstream(path) << R"({"links": {"intra": {"alpha_us": 5e15, "beta_GBps": 10}}})";
  sim::Options options = default_options();
  options.model = path.string();
  sim::Report report = simulate(
      4,
      [] {
        auto t = Tensor::zeros({4}, DType::Float32);
        all_reduce(t);
      },
      options);
  std::filesystem::remove(path);
  EXPECT_NE(report.outcome, sim::Outcome::Ok);
  EXPECT_NE(report.to_text().find("beyond the virtual clock"), std::string::npos)
      << report.to_text();
}

// A model with rails (links.inter.rails): a group with k members on a node uses k of its rails
// between nodes: one member per node (data parallel across nodes) has one 50 GB/s port per step,
// four have 200 GB/s, eight are bound by the node's 370 GB/s. Messages and all_to_all keep one
// port whatever the layout.
TEST(CostModel, BetweenNodesACollectiveUsesARailPerMemberOnANode) {
  sim::CostModel railed = sim::parse_cost_model(
      R"({"links": {"intra": {"alpha_us": 3, "beta_GBps": 370},
                    "inter": {"alpha_us": 12, "beta_GBps": 50, "rails": 8}}})",
      "railed");
  const int n = 16;
  const double bytes = 1 << 30, alpha = 12e-6;
  for (auto [members, beta] : {std::pair{1, 50e9}, std::pair{4, 200e9}, std::pair{8, 370e9}}) {
    railed.ops["all_reduce"].algorithm = Algorithm::Ring;
    EXPECT_NEAR(sim::predict(railed, "all_reduce", n, bytes, LinkClass::Inter, members).seconds,
                ring_all_reduce(n, bytes, alpha, beta), 1e-12)
        << members;
  }
  const double one_port = 1 / 50e9;
  EXPECT_NEAR(sim::predict(railed, "sendrecv", 2, bytes, LinkClass::Inter, 8).seconds,
              alpha + bytes * one_port, 1e-12);
  EXPECT_NEAR(sim::predict(railed, "all_to_all", n, bytes, LinkClass::Inter, 8).seconds,
              (n - 1) * (alpha + bytes / n * one_port), 1e-12);
}

// With links only (no NCCL system) a model may gather by recursive doubling where it is cheaper.
TEST(CostModel, ALinksModelPicksTheCheaperGather) {
  auto pcie = sim::cost_model_preset("pcie-gen5-ib");
  const int n = 64;
  EXPECT_LT(sim::predict(pcie, "all_gather", n, 1024, LinkClass::Intra).seconds,
            (n - 1) * pcie.intra.alpha_s);
}

}  // namespace
}  // namespace ranks::testing
