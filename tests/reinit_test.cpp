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

// Ranks given different world sizes (two nodes started with different -n) are told so at the
// rendezvous, instead of waiting out their timeout for ranks that will never come.
TEST(Reinit, RanksWithAnotherWorldSizeAreToldSoAtOnce) {
  if (!backend_built("gloo")) GTEST_SKIP() << "gloo is not built";
  run_processes("gloo", 2, [] {
    const int rank = get_rank();
    destroy_process_group();
    InitOptions options;
    options.backend = "gloo";
    options.timeout = std::chrono::seconds(60);
    options.rank = rank;
    options.world_size = rank == 0 ? 2 : 3;  // rank 1 believes in a third rank
    if (rank == 0) {
      // Rank 0 hosts the store and waits for a rank 1 of its own world: it times out. Its
      // store must outlive rank 1's check, so it waits with a short deadline of its own.
      options.timeout = std::chrono::seconds(5);
      EXPECT_THROW(init_process_group(options), Error);
      return;
    }
    try {
      init_process_group(options);
      ADD_FAILURE() << "rank 1 joined a world of another size";
    } catch (const RendezvousError& e) {
      EXPECT_TRUE(Contains(e.what(), "rank 1 was started with world size 3, rank 0")) << e.what();
      EXPECT_TRUE(Contains(e.what(), "with 2: every rank must be given the same WORLD_SIZE"));
    }
  });
}

}  // namespace
}  // namespace ranks::testing
