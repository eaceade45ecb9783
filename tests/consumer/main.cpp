// Built against the installed package: runs a body under ranks::sim::run directly, then (when
// started by `ranks sim`) as a ranks::main program.

#include <ranks/ranks.hpp>
#include <ranks/sim.hpp>

#include <cstdio>
#include <cstring>

namespace {
void body() {
  auto t = ranks::Tensor::of<int32_t>({ranks::get_rank() + 1});
  ranks::all_reduce(t);
  int n = ranks::get_world_size();
  if (t.item<int32_t>() != n * (n + 1) / 2) throw std::runtime_error("wrong all_reduce result");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--main") == 0) return ranks::main(argc, argv, body);
  ranks::sim::Options options;
  options.world_size = 5;
  ranks::sim::Report report = ranks::sim::run(options, body);
  std::fputs(report.to_text().c_str(), stdout);
  return report.outcome == ranks::sim::Outcome::Ok ? 0 : 1;
}
