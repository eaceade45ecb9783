// `ranks calibrate`'s fit: synthetic measurements made from known parameters (with the
// algorithms' formulas written out here) must give those parameters back.

#include "ranks/sim/calibrate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace ranks::sim {
namespace {

std::vector<double> sweep(double from, double to) {
  std::vector<double> sizes;
  for (double s = from; s <= to; s *= 2) sizes.push_back(s);
  return sizes;
}

TEST(Calibrate, RecoversRingAllReduceParameters) {
  const double overhead = 7e-6, alpha = 30e-6, beta = 2.5e9;
  std::vector<Sample> samples;
  for (int n : {2, 3, 4}) {
    for (double s : sweep(8, 64 << 20)) {
      // Ring: 2(n-1) steps, each rank sends 2(n-1)/n of the buffer.
      double t = overhead + 2 * (n - 1) * alpha + 2.0 * (n - 1) / n * s / beta;
      samples.push_back({"all_reduce", n, LinkClass::Intra, s, t});
    }
  }
  CostModel model = calibrate(samples, "synthetic", "test");
  ASSERT_EQ(model.ops.count("all_reduce"), 1u);
  const auto& segments = model.ops.at("all_reduce").intra;
  ASSERT_EQ(segments.size(), 1u) << "exact data need one range";
  EXPECT_EQ(segments[0].algorithm, Algorithm::Ring);
  EXPECT_NEAR(segments[0].overhead_s, overhead, overhead * 1e-6);
  EXPECT_NEAR(segments[0].alpha_s, alpha, alpha * 1e-6);
  EXPECT_NEAR(segments[0].beta_Bps, beta, beta * 1e-6);
  for (const Sample& s : samples) EXPECT_LT(relative_error(model, s), 1e-9);
  // And it extrapolates to world sizes it never saw, as the formula says.
  EXPECT_NEAR(predict(model, "all_reduce", 64, 1 << 20, LinkClass::Intra).seconds,
              overhead + 126 * alpha + 2.0 * 63 / 64 * (1 << 20) / beta, 1e-12);
}

// The model is judged by its worst point, so the fit minimises the worst relative error: a flat
// range of 100 us with one 140 us outlier is fitted by the level that is 1/6 off from both,
// 116.7 us, not by the least-squares level nearer 100 us, which misses the outlier by ~23 %.
TEST(Calibrate, FitsForTheWorstPointNotTheAverage) {
  std::vector<Sample> samples;
  for (double s : sweep(8, 128)) {
    samples.push_back({"broadcast", 2, LinkClass::Intra, s, s == 64 ? 140e-6 : 100e-6});
  }
  CalibrationOptions one_range;
  one_range.max_segments = 1;
  CostModel model = calibrate(samples, "outlier", "test", one_range);
  double worst = 0;
  for (const Sample& s : samples) worst = std::max(worst, relative_error(model, s));
  const double minimax = 40.0 / 240.0;  // (c - 100) / 100 = (140 - c) / 140 at c = 116.67
  EXPECT_NEAR(worst, minimax, 0.01);
  EXPECT_NEAR(predict(model, "broadcast", 2, 32, LinkClass::Intra).seconds, 116.67e-6, 1.5e-6);
}

// Small sizes that swing +-30 % (thread wake-ups on a busy machine) must not keep the large
// sizes, which follow the formula exactly, from a range of their own. One range fits everything
// within the small sizes' 30 % (the large ones to within 23 %), so judging a plan by its one
// worst point keeps it; judged by each sample's own range's worst error, the large sizes get
// their own range and fit exactly.
TEST(Calibrate, NoisySmallSizesDoNotBlockARangeForTheLargeOnes) {
  std::vector<Sample> samples;
  bool up = true;
  for (double s : sweep(8, 2 << 20)) {
    double t = 0;
    if (s <= 4096) {
      t = up ? 130e-6 : 70e-6;  // latency-bound and noisy
      up = !up;
    } else {
      t = 80e-6 + s / 1e9;  // one step: alpha + bytes / beta
    }
    samples.push_back({"sendrecv", 2, LinkClass::Intra, s, t});
  }
  CostModel model = calibrate(samples, "noisy", "test");
  for (const Sample& s : samples) {
    if (s.bytes > 4096) {
      EXPECT_LT(relative_error(model, s), 0.01) << s.bytes << " B";
    }
  }
}

TEST(Calibrate, FindsTwoProtocolsAndTheirBreakpoint) {
  // An eager protocol up to 64 KiB, then a rendezvous protocol with a higher start-up cost.
  std::vector<Sample> samples;
  for (double s : sweep(8, 16 << 20)) {
    double t = s <= 65536 ? 2e-6 + s / 1e9 : 40e-6 + s / 8e9;  // sendrecv: one step
    samples.push_back({"sendrecv", 2, LinkClass::Intra, s, t});
  }
  CostModel model = calibrate(samples, "synthetic", "test");
  const auto& segments = model.ops.at("sendrecv").intra;
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].up_to_bytes, 65536);
  EXPECT_NEAR(segments[0].alpha_s + segments[0].overhead_s, 2e-6, 1e-12);
  EXPECT_NEAR(segments[0].beta_Bps, 1e9, 1e3);
  EXPECT_NEAR(segments[1].alpha_s + segments[1].overhead_s, 40e-6, 1e-12);
  EXPECT_NEAR(segments[1].beta_Bps, 8e9, 8e3);
  // sendrecv defines the links: one message of b bytes is alpha + b / beta.
  EXPECT_NEAR(model.intra.beta_Bps, 8e9, 8e3);
}

// Open MPI on one machine switches protocol (and falls out of a cache level) several times
// between 8 B and 2 MiB. Six regimes, each exact alpha-beta, each a jump from the last: the
// default calibration finds all six ranges and their ends. Four ranges, the old limit, cannot.
TEST(Calibrate, FindsSixRegimesAndTheirEnds) {
  struct Regime {
    double up_to, latency, bandwidth;
  };
  const Regime regimes[] = {{64, 0.3e-6, 2e9},   {512, 1e-6, 1e9},     {4096, 4e-6, 3e9},
                            {32768, 12e-6, 6e9}, {262144, 30e-6, 9e9}, {2 << 20, 150e-6, 4e9}};
  std::vector<Sample> samples;
  for (double s : sweep(8, 2 << 20)) {
    const Regime& r = *std::find_if(std::begin(regimes), std::end(regimes),
                                    [&](const Regime& g) { return s <= g.up_to; });
    samples.push_back({"sendrecv", 2, LinkClass::Intra, s, r.latency + s / r.bandwidth});
  }
  CostModel model = calibrate(samples, "six", "test");
  const auto& segments = model.ops.at("sendrecv").intra;
  ASSERT_EQ(segments.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(segments[i].up_to_bytes, i == 5 ? unlimited : regimes[i].up_to) << i;
    EXPECT_NEAR(segments[i].beta_Bps, regimes[i].bandwidth, regimes[i].bandwidth * 1e-6) << i;
  }
  for (const Sample& s : samples) EXPECT_LT(relative_error(model, s), 1e-9) << s.bytes;

  CalibrationOptions four;
  four.max_segments = 4;
  CostModel coarse = calibrate(samples, "four", "test", four);
  double worst = 0;
  for (const Sample& s : samples) worst = std::max(worst, relative_error(coarse, s));
  EXPECT_GT(worst, 0.05);
}

TEST(Calibrate, InterNodeMeasurementsFitTheInterLinks) {
  std::vector<Sample> samples;
  for (double s : sweep(1024, 1 << 24)) {
    samples.push_back({"broadcast", 8, LinkClass::Inter, s, 3 * 10e-6 + 3 * s / 5e9});  // tree
  }
  CostModel model = calibrate(samples, "synthetic", "test");
  const auto& op = model.ops.at("broadcast");
  EXPECT_TRUE(op.intra.empty());
  ASSERT_EQ(op.inter.size(), 1u);
  EXPECT_EQ(op.inter[0].algorithm, Algorithm::Tree);
  EXPECT_NEAR(op.inter[0].beta_Bps, 5e9, 5e3);
}

TEST(Calibrate, EachMeasuredWorldSizeGetsItsOwnFit) {
  // Oversubscribed: 4 ranks are far slower than the ring formula makes of 2 ranks' figures.
  std::vector<Sample> samples;
  for (double s : sweep(4096, 1 << 22)) {
    samples.push_back({"all_gather", 2, LinkClass::Intra, s, 10e-6 + 0.5 * s / 4e9});
    samples.push_back({"all_gather", 4, LinkClass::Intra, s, 3 * 200e-6 + 0.75 * s / 0.5e9});
  }
  CostModel model = calibrate(samples, "per-n", "test");
  for (const Sample& s : samples)
    EXPECT_LT(relative_error(model, s), 1e-9) << s.n << " " << s.bytes;
  const auto& op = model.ops.at("all_gather");
  EXPECT_EQ(op.intra_at.size(), 2u);
  EXPECT_FALSE(op.intra.empty()) << "the joint fit stays for unmeasured world sizes";
  EXPECT_EQ(&op.segments(LinkClass::Intra, 8), &op.intra);
}

TEST(Calibrate, RoughDataStayNonNegative) {
  std::vector<Sample> samples;
  int k = 0;
  for (double s : sweep(8, 1 << 20)) {
    double noise = 1 + 0.1 * ((k++ % 3) - 1);
    samples.push_back({"all_gather", 4, LinkClass::Intra, s, (50e-6 + s / 3e9) * noise});
  }
  CostModel model = calibrate(samples, "rough", "test");
  for (const Segment& seg : model.ops.at("all_gather").intra) {
    EXPECT_GE(seg.overhead_s, 0);
    EXPECT_GE(seg.alpha_s, 0);
    EXPECT_GT(seg.beta_Bps, 0);
  }
  for (const Sample& s : samples) EXPECT_LT(relative_error(model, s), 0.25);
}

}  // namespace
}  // namespace ranks::sim
