// Simulator throughput: rank-operations per second for a barrier and an 8-byte all_reduce across
// 1,024 to 16,384 simulated ranks (a rank-operation is one rank taking part in one collective),
// and, with --memory N, peak memory per simulated rank.
//
//   build/tests/bench/sim_bench                       Google Benchmark table
//   build/tests/bench/sim_bench --memory 100000       peak RSS per rank for 100,000 ranks
//   build/tests/bench/sim_bench --deadlock 10000      wall time to diagnose a 10,000-rank deadlock
//   build/tests/bench/sim_bench --smpi 1024 100       the SMPI anchor's workload (N ranks x K
//                                                     all_reduces of 8 B), wall time
//   build/tests/bench/sim_bench --barriers 1024 100   the same with barriers (for profilers)

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ranks/ranks.hpp>
#include <ranks/sim.hpp>
#include <string>

namespace {

constexpr int kOpsPerRank = 20;

void run_or_die(int world_size, const std::function<void()>& body, bool move_data = true) {
  ranks::sim::Options options;
  options.world_size = world_size;
  options.move_data = move_data;
  auto report = ranks::sim::run(options, body);
  if (report.outcome != ranks::sim::Outcome::Ok) {
    std::fputs(report.to_text().c_str(), stderr);
    std::exit(1);
  }
}

// The simulator runs every rank on this one thread, so the thread's CPU time is the cost of the
// ranks' work. Unlike wall time it does not count the time this process waited for a core, which
// on a shared 2-core CI machine would swamp the figure.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Times kOpsPerRank operations on every rank, excluding fiber start-up and teardown (measured on
// their own by BM_StartAndJoin): rank 0 reads the clock after a first barrier and after a last
// one, and everything between is the ops of all ranks.
template <class Op>
void time_ops(benchmark::State& state, Op op) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    double start = 0, stop = 0;
    run_or_die(n, [&] {
      auto t = ranks::Tensor::of<double>({1.0});
      ranks::barrier();
      if (ranks::get_rank() == 0) start = thread_cpu_seconds();
      for (int i = 0; i < kOpsPerRank; ++i) op(t);
      ranks::barrier();
      if (ranks::get_rank() == 0) stop = thread_cpu_seconds();
    });
    state.SetIterationTime(stop - start);
  }
  const double rank_ops = static_cast<double>(state.iterations()) * n * (kOpsPerRank + 1);
  state.counters["rank_ops_per_s"] = benchmark::Counter(rank_ops, benchmark::Counter::kIsRate);
}

void BM_Barrier(benchmark::State& state) {
  time_ops(state, [](ranks::Tensor&) { ranks::barrier(); });
}

void BM_AllReduce8B(benchmark::State& state) {
  time_ops(state, [](ranks::Tensor& t) { ranks::all_reduce(t); });
}

// Only the setup and teardown of N fibers, to separate it from per-op cost.
void BM_StartAndJoin(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) run_or_die(n, [] {});
  state.counters["ranks_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * n), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Barrier)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduce8B)
    ->Arg(1024)
    ->Arg(4096)
    ->Arg(16384)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StartAndJoin)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

int memory_mode(int n) {
  long before = peak_rss_kib();
  run_or_die(n, [] {
    auto t = ranks::Tensor::of<double>({1.0});
    ranks::all_reduce(t);
    ranks::barrier();
  });
  long after = peak_rss_kib();
  std::printf("ranks=%d peak_rss_mib=%.1f bytes_per_rank=%.0f\n", n, after / 1024.0,
              (after - before) * 1024.0 / n);
  return 0;
}

// A deadlock across n ranks (rank 0 returns, everyone else waits in a barrier): the wall time of
// the whole run, diagnosis and report included.
int deadlock_mode(int n) {
  auto start = std::chrono::steady_clock::now();
  ranks::sim::Options options;
  options.world_size = n;
  auto report = ranks::sim::run(options, [] {
    if (ranks::get_rank() == 0) return;
    ranks::barrier();
  });
  std::string json = report.to_json();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("ranks=%d outcome=%s wall_s=%.3f message_bytes=%zu json_bytes=%zu\n", n,
              std::string(ranks::sim::outcome_name(report.outcome)).c_str(), seconds,
              report.message.size(), json.size());
  return report.outcome == ranks::sim::Outcome::Deadlock ? 0 : 1;
}

int smpi_mode(int n, int k, bool barriers = false) {
  auto start = std::chrono::steady_clock::now();
  run_or_die(n, [k, barriers] {
    auto t = ranks::Tensor::of<double>({1.0});
    for (int i = 0; i < k; ++i) {
      if (barriers) {
        ranks::barrier();
      } else {
        ranks::all_reduce(t);
      }
    }
  });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("ranks=%d %s=%d wall_s=%.4f rank_ops_per_s=%.3g\n", n,
              barriers ? "barriers" : "allreduces", k, seconds,
              static_cast<double>(n) * k / seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--memory") == 0) return memory_mode(std::atoi(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "--deadlock") == 0)
    return deadlock_mode(std::atoi(argv[2]));
  if (argc == 4 && std::strcmp(argv[1], "--smpi") == 0) {
    return smpi_mode(std::atoi(argv[2]), std::atoi(argv[3]));
  }
  if (argc == 4 && std::strcmp(argv[1], "--barriers") == 0) {
    return smpi_mode(std::atoi(argv[2]), std::atoi(argv[3]), /*barriers=*/true);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
