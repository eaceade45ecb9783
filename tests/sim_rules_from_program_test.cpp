// sim::Options::backend_from_program: when nothing chose the rules, the backend the program's
// init asks for becomes the run's rules (every rank's, and the report says which and why); a
// backend chosen by the caller stays. A reduce of a cpu tensor tells them apart: nccl's rules
// refuse it, gloo's allow it.

#include "harness.hpp"

namespace ranks::testing {
namespace {

void init_gloo_then_reduce() {
  InitOptions init;
  init.backend = "gloo";
  init_process_group(init);
  Tensor t = Tensor::of<float>({1.0f});
  reduce(t, 0);
  if (get_rank() == 0) {
    EXPECT_EQ(t.to_doubles(), std::vector<double>{double(get_world_size())});
  }
  EXPECT_EQ(get_backend(), "gloo");
}

sim::Options nccl_by_default(bool from_program) {
  sim::Options options;
  options.world_size = 3;
  options.backend = "nccl";
  options.backend_from_program = from_program;
  return options;
}

TEST(RulesFromProgram, TheProgramsBackendBecomesTheRunsRules) {
  for (bool threads : {false, true}) {
    sim::Options options = nccl_by_default(true);
    options.rank_threads = threads;
    const sim::Report report = sim::run(options, init_gloo_then_reduce);
    EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
    EXPECT_EQ(report.backend, "gloo");
    EXPECT_TRUE(Contains(report.backend_from, "rank 0's init asked for gloo (no --backend)"));
    EXPECT_TRUE(Contains(report.to_text(), "gloo rules: rank 0's init asked for gloo"));
    EXPECT_TRUE(Contains(report.to_json(), "\"backend_from\": \"rank 0's init asked for gloo"));
  }
}

TEST(RulesFromProgram, ABackendTheCallerChoseStays) {
  const sim::Report report = sim::run(nccl_by_default(false), init_gloo_then_reduce);
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  EXPECT_EQ(report.backend, "nccl");
  EXPECT_TRUE(report.backend_from.empty());
  EXPECT_FALSE(Contains(report.to_json(), "backend_from"));
}

TEST(RulesFromProgram, AProgramThatAsksForNoneKeepsTheDefault) {
  const sim::Report report = sim::run(nccl_by_default(true), [] {
    init_process_group();
    Tensor t = Tensor::of<float>({1.0f});
    reduce(t, 0);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  EXPECT_EQ(report.backend, "nccl");
  EXPECT_TRUE(report.backend_from.empty());
}

}  // namespace
}  // namespace ranks::testing
