// A process group destroyed and made again in the same processes, on the same rendezvous address
// (test suites, notebooks, torch's init/destroy pattern): every rank must reach the new
// rendezvous, never the previous one that rank 0 may still be closing.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

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

// A file:// rendezvous carries the job's secret (RANKS_STORE_TOKEN): a rank of another job (another
// secret) that is given the same path is refused by name, where it used to join the job.
TEST(Reinit, AFileRendezvousIsRefusedToAnotherJobsRank) {
  if (!backend_built("gloo")) GTEST_SKIP() << "gloo is not built";
  run_processes("gloo", 2, [] {
    const int rank = get_rank();
    destroy_process_group();
    const std::string path = fmt::format("/tmp/ranks-file-rendezvous-{}", std::getenv("MASTER_PORT"));
    InitOptions options;
    options.backend = "gloo";
    options.init_method = "file://" + path;
    options.rank = rank;
    options.world_size = 2;
    if (rank == 0) {
      // The job: its store file holds its secret until its rendezvous gives up (rank 1 is not
      // of this job and never joins it).
      ::setenv("RANKS_STORE_TOKEN", "the-job", 1);
      options.timeout = std::chrono::seconds(6);
      EXPECT_THROW(init_process_group(options), Error);
      return;
    }
    ::setenv("RANKS_STORE_TOKEN", "another-job", 1);
    options.timeout = std::chrono::seconds(30);
    // Rank 0 makes the file; rank 1 comes once it is there (a deadline bounds the wait).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_TRUE(std::filesystem::exists(path)) << "rank 0 made no store file";
    try {
      init_process_group(options);
      ADD_FAILURE() << "a rank of another job joined the job's file rendezvous";
    } catch (const RendezvousError& e) {
      EXPECT_TRUE(Contains(e.what(), "different job token")) << e.what();
    }
  });
}

}  // namespace
}  // namespace ranks::testing
