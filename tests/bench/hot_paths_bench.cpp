// Hot paths, per call (Google Benchmark; speed is measured here, never asserted in tests):
//   BM_Predict            the cost model's price of one collective (every priced op pays it)
//   BM_CheckOneRank       an all_reduce on a group of one: the argument checker and the size-1
//                         short cut (no dispatch: there is nobody to talk to)
//   BM_AllReduceTwoRanks  an all_reduce of 2 floats on two simulated ranks: checker, dispatch
//                         (sequence number, capability table, op record), matching, the
//                         reduction and two fiber switches
//   BM_SwitchAndMatch     a send/recv pair between two simulated ranks: two fiber switches and
//                         one mailbox match per message
//   BM_PricedAllReduce    an 8-byte all_reduce on N ranks, free vs priced (h100-nvlink-ib):
//                         what pricing adds to the simulator's happy path

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ranks/ranks.hpp>
#include <ranks/sim.hpp>
#include <ranks/sim/cost_model.hpp>

namespace {

using Clock = std::chrono::steady_clock;

void run_or_die(ranks::sim::Options options, const std::function<void()>& body) {
  auto report = ranks::sim::run(options, body);
  if (report.outcome != ranks::sim::Outcome::Ok) {
    std::fputs(report.to_text().c_str(), stderr);
    std::exit(1);
  }
}

void BM_Predict(benchmark::State& state) {
  const auto model = ranks::sim::cost_model_preset("h100-nvlink-ib");
  double bytes = 8;
  for (auto _ : state) {
    auto p = ranks::sim::predict(model, "all_reduce", 64, bytes, ranks::sim::LinkClass::Inter);
    benchmark::DoNotOptimize(p);
    bytes = bytes < 1e9 ? bytes * 2 : 8;
  }
}

// Times `calls` ops inside one simulated run; fiber start-up and teardown stay outside.
template <class Op>
void time_inside(benchmark::State& state, ranks::sim::Options options, int calls, Op op) {
  for (auto _ : state) {
    Clock::time_point start, stop;
    run_or_die(options, [&] {
      auto t = ranks::Tensor::of<float>({1.0f, 2.0f});
      ranks::barrier();
      if (ranks::get_rank() == 0) start = Clock::now();
      for (int i = 0; i < calls; ++i) op(t);
      ranks::barrier();
      if (ranks::get_rank() == 0) stop = Clock::now();
    });
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
  }
  state.SetItemsProcessed(state.iterations() * calls);
}

void BM_CheckOneRank(benchmark::State& state) {
  ranks::sim::Options options;
  options.world_size = 1;
  options.backend = "mpi";
  time_inside(state, options, 10000, [](ranks::Tensor& t) { ranks::all_reduce(t); });
}

void BM_AllReduceTwoRanks(benchmark::State& state) {
  ranks::sim::Options options;
  options.world_size = 2;
  options.backend = "mpi";
  time_inside(state, options, 10000, [](ranks::Tensor& t) { ranks::all_reduce(t); });
}

void BM_SwitchAndMatch(benchmark::State& state) {
  ranks::sim::Options options;
  options.world_size = 2;
  options.backend = "mpi";
  time_inside(state, options, 10000, [](ranks::Tensor& t) {
    if (ranks::get_rank() == 0) {
      ranks::send(t, 1);
    } else {
      ranks::recv(t, 0);
    }
  });
}

void BM_PricedAllReduce(benchmark::State& state) {
  ranks::sim::Options options;
  options.world_size = static_cast<int>(state.range(0));
  options.ranks_per_node = 8;
  options.model = state.range(1) != 0 ? "h100-nvlink-ib" : "free";
  time_inside(state, options, 20, [](ranks::Tensor& t) { ranks::all_reduce(t); });
  state.SetLabel(options.model);
}

BENCHMARK(BM_Predict);
BENCHMARK(BM_CheckOneRank)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduceTwoRanks)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SwitchAndMatch)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PricedAllReduce)
    ->Args({1024, 0})
    ->Args({1024, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
