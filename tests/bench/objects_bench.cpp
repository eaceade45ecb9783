// Object collectives at the sizes MMEngine users hit: all_gather_object of a 10,000-entry
// map<string, vector<float>> per rank, and collect_results of 100,000 small records (the
// evaluation loop's DefaultSampler split: rank r holds records r, r + n, ...). Runs wherever
// ranks::main runs: `ranks sim -n 8 -- objects_bench`, `ranks run -n 2 --backend gloo -- ...`.
// Prints, on rank 0, the median time per call (the slowest rank's), the bytes moved per second
// and the growth of the process's peak RSS during the calls. reports/objects.md compares it
// with torch.distributed (reports/objects_torch.py) on the same data.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ranks/context.hpp"
#include "ranks/ranks.hpp"

namespace {

struct Record {
  int64_t index = 0;
  float score = 0;
  int32_t label = 0;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(index, score, label);
  }
};

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

std::string text_arg(int argc, char** argv, const std::string& name, std::string fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return fallback;
}

int arg(int argc, char** argv, const std::string& name, int fallback) {
  return std::atoi(text_arg(argc, argv, name, std::to_string(fallback)).c_str());
}

// The median of this rank's call times, then the slowest rank's median. Under the simulator all
// ranks take turns on one thread, so a rank's own call spans whatever the others did meanwhile
// (and how much depends on how many collectives a call takes): there the figure is the whole
// world's time per call instead, between two barriers.
template <class F>
double median_ms(int iters, F call) {
  call();
  call();  // warm-up: first-touch of buffers, lazy connections
  if (ranks::detail::simulating_on_this_thread()) {
    ranks::barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) call();
    ranks::barrier();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
               .count() /
           iters;
  }
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::nth_element(times.begin(), times.begin() + iters / 2, times.end());
  ranks::Tensor t = ranks::Tensor::of<double>({times[static_cast<size_t>(iters / 2)]});
  ranks::all_reduce(t, ranks::ReduceOp::Max);
  return t.to_vector<double>()[0];
}

void report(const char* what, double ms, double bytes, long rss_before) {
  if (ranks::get_rank() != 0) return;
  std::printf("%-44s %9.3f ms %10.1f MB/s   peak RSS +%.1f MiB\n", what, ms,
              bytes / (ms * 1e-3) / 1e6, static_cast<double>(peak_rss_kib() - rss_before) / 1024);
}

}  // namespace

int main(int argc, char** argv) {
  const int entries = arg(argc, argv, "--entries", 10000);
  const int floats = arg(argc, argv, "--floats", 8);
  const int records = arg(argc, argv, "--records", 100000);
  const int iters = arg(argc, argv, "--iters", 20);
  // One measurement per process (--op), so that each peak-RSS growth is its own.
  const std::string op = text_arg(argc, argv, "--op", "all");
  auto wanted = [&](const std::string& name) { return op == "all" || op == name; };
  return ranks::main(argc, argv, [&] {
    const int n = ranks::get_world_size();
    const int rank = ranks::get_rank();
    if (rank == 0) {
      std::printf("# backend %s, %d ranks, %d timed calls after 2 warm-up calls\n",
                  ranks::get_backend().value_or("none").c_str(), n, iters);
    }

    if (wanted("metrics")) {
      std::map<std::string, std::vector<float>> metrics;
      for (int i = 0; i < entries; ++i) {
        metrics["k" + std::to_string(i)] =
            std::vector<float>(static_cast<size_t>(floats), 0.5f * i);
      }
      const double map_bytes = static_cast<double>(ranks::object::encode(metrics).size());
      const long rss = peak_rss_kib();
      const double gather_ms = median_ms(iters, [&] { (void)ranks::all_gather_object(metrics); });
      report(("all_gather_object map<string,vector<float>> " + std::to_string(entries)).c_str(),
             gather_ms, map_bytes * n, rss);
    }
    if (wanted("anchor")) {
      std::map<std::string, int64_t> anchor;  // the anchor's dict {"k<i>": i}
      for (int i = 0; i < entries; ++i) anchor["k" + std::to_string(i)] = i;
      const double anchor_bytes = static_cast<double>(ranks::object::encode(anchor).size());
      const long rss = peak_rss_kib();
      const double anchor_ms = median_ms(iters, [&] { (void)ranks::all_gather_object(anchor); });
      report(("all_gather_object map<string,int64> " + std::to_string(entries)).c_str(), anchor_ms,
             anchor_bytes * n, rss);
    }

    long rss = 0;
    std::vector<Record> part;
    for (int i = rank; i < records; i += n) part.push_back({i, 0.25f * i, i % 80});
    const double part_bytes = static_cast<double>(ranks::object::encode(part).size()) * n;
    for (const char* device : {"gpu", "cpu"}) {
      if (!wanted(std::string("collect-") + device)) continue;
      bool ordered = true;
      rss = peak_rss_kib();
      const double ms = median_ms(iters, [&] {
        auto all = ranks::collect_results(part, static_cast<size_t>(records), device);
        if (all) {
          for (size_t i = 0; i < all->size(); ++i)
            ordered = ordered && (*all)[i].index == int64_t(i);
          ordered = ordered && all->size() == static_cast<size_t>(records);
        }
      });
      report(("collect_results(device=\"" + std::string(device) + "\") " + std::to_string(records) +
              " records")
                 .c_str(),
             ms, part_bytes, rss);
      if (!ordered) throw ranks::Error("collect_results returned the records out of order");
    }
  });
}
