// The CPU side of all_gather_object, without the network: encoding, decoding and destroying the
// issue's 10,000-entry map<string, vector<float>> and the anchors' map<string, int64>, one
// process, one thread. reports/objects.md splits a call's time with it; run it under
// `valgrind --tool=callgrind` for instruction counts, which this noisy machine cannot give by
// timing.

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "ranks/ranks.hpp"

namespace {

using Metrics = std::map<std::string, std::vector<float>>;
using Anchor = std::map<std::string, int64_t>;

Metrics metrics() {
  Metrics out;
  for (int i = 0; i < 10000; ++i) out["k" + std::to_string(i)] = std::vector<float>(8, 0.5f * i);
  return out;
}

Anchor anchor() {
  Anchor out;
  for (int i = 0; i < 10000; ++i) out["k" + std::to_string(i)] = i;
  return out;
}

template <class T>
void encode(benchmark::State& state, const T& value) {
  for (auto _ : state) benchmark::DoNotOptimize(ranks::object::encode(value));
}

template <class T>
void decode(benchmark::State& state, const T& value) {
  const ranks::object::Bytes payload = ranks::object::encode(value);
  for (auto _ : state) {
    T out = ranks::object::decode<T>(payload, "bench");
    benchmark::DoNotOptimize(out);
    state.PauseTiming();  // destroy() times the destruction on its own
    out = T{};
    state.ResumeTiming();
  }
}

template <class T>
void destroy(benchmark::State& state, const T& value) {
  for (auto _ : state) {
    state.PauseTiming();
    T copy = value;
    state.ResumeTiming();
    copy = T{};
    benchmark::DoNotOptimize(copy);
  }
}

void BM_EncodeMap(benchmark::State& state) { encode(state, metrics()); }
void BM_DecodeMap(benchmark::State& state) { decode(state, metrics()); }
void BM_DestroyMap(benchmark::State& state) { destroy(state, metrics()); }
void BM_EncodeAnchor(benchmark::State& state) { encode(state, anchor()); }
void BM_DecodeAnchor(benchmark::State& state) { decode(state, anchor()); }
void BM_DestroyAnchor(benchmark::State& state) { destroy(state, anchor()); }

}  // namespace

BENCHMARK(BM_EncodeMap)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeMap)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DestroyMap)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeAnchor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeAnchor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DestroyAnchor)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
