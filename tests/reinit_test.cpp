// A process group destroyed and made again in the same processes, on the same rendezvous address
// (test suites, notebooks, torch's init/destroy pattern): every rank must reach the new
// rendezvous, never the previous one that rank 0 may still be closing.

#include <gtest/gtest.h>

#include <chrono>

#include "harness.hpp"

namespace ranks::testing {
namespace {

TEST(Reinit, DestroyAndInitAgainOnTheSameAddressManyTimes) {
  if (!backend_built("gloo")) GTEST_SKIP() << "gloo is not built";
  run_processes("gloo", 3, [] {
    const int rank = get_rank();
    for (int round = 0; round < 8; ++round) {
      destroy_process_group();
      InitOptions options;
      options.backend = "gloo";
      options.timeout = std::chrono::seconds(30);
      init_process_group(options);  // env://: the same MASTER_ADDR and MASTER_PORT every time
      ASSERT_EQ(get_rank(), rank);
      Tensor t = Tensor::of<int64_t>({rank + 1, round});
      all_reduce(t);
      EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1 + 2 + 3, 3 * round}));
    }
  });
}

}  // namespace
}  // namespace ranks::testing
