// Not distributed (a plain process, no simulator): MMEngine's fallbacks — world size 1, rank 0,
// no backend, collectives are no-ops and the gather family returns {data} — plus launcher
// inference from the environment. Then the same queries inside the simulator: master_only, init
// calls adopted by a simulated rank, and local ranks with several ranks per node.

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

// Sets or unsets environment variables for one test and restores them afterwards.
class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::string> names) : names_(std::move(names)) {
    for (const std::string& name : names_) {
      const char* value = std::getenv(name.c_str());
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
    }
  }
  ~EnvGuard() {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (saved_[i]) {
        setenv(names_[i].c_str(), saved_[i]->c_str(), 1);
      } else {
        unsetenv(names_[i].c_str());
      }
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
  void set(const std::string& name, const std::string& value) {
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) { unsetenv(name.c_str()); }
  void unset_all() {
    for (const std::string& name : names_) unsetenv(name.c_str());
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<std::string>> saved_;
};

TEST(Fallback, QueriesWhenNotDistributed) {
  EXPECT_FALSE(is_initialized());
  EXPECT_FALSE(is_distributed());
  EXPECT_EQ(get_world_size(), 1);
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_backend(), std::nullopt);
  EXPECT_EQ(get_local_rank(), 0);
  EXPECT_EQ(get_local_size(), 1);
  EXPECT_EQ(get_dist_info(), std::make_pair(0, 1));
  EXPECT_TRUE(is_main_process());
  Group world;
  EXPECT_TRUE(world.is_member());
  EXPECT_EQ(world.rank(), 0);
  EXPECT_EQ(world.size(), 1);
  EXPECT_EQ(world.global_ranks(), std::vector<int>{0});
}

TEST(Fallback, BarrierIsANoOp) {
  barrier();
  Work w = barrier_async();
  EXPECT_TRUE(w.is_completed());
  w.wait();
}

TEST(Fallback, AllReduceLeavesDataUnchangedForEveryOp) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product, ReduceOp::Min,
                      ReduceOp::Max, ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor}) {
    SCOPED_TRACE(std::string(reduce_op_name(op)));
    Tensor t = Tensor::of<int32_t>({3, -7, 11});
    all_reduce(t, op);
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{3, -7, 11}));
    all_reduce(t, reduce_op_name(op));  // the string form
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{3, -7, 11}));
  }
  Tensor f = Tensor::of<float>({0.5f, 3.0f});
  all_reduce(f, "mean");
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0.5f, 3.0f}));
  reduce(f, 0, ReduceOp::Max);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0.5f, 3.0f}));
}

TEST(Fallback, InvalidOpsStillThrow) {
  // MMEngine skips its op check when not distributed; ranks validates the same way everywhere,
  // so a typo shows up on a laptop, not first on the cluster.
  Tensor t = Tensor::of<float>({1.0f});
  EXPECT_THROW(all_reduce(t, "average"), InvalidArgument);
  EXPECT_THROW(all_reduce(t, ReduceOp::BXor), InvalidArgument);  // bitwise on a float tensor
  EXPECT_THROW(all_reduce(t, "band"), InvalidArgument);
  EXPECT_THROW(broadcast(t, 1), InvalidArgument);  // src out of range [0, 1)
  Tensor undefined;
  EXPECT_THROW(all_reduce(undefined), InvalidArgument);
  EXPECT_EQ(t.item<float>(), 1.0f);
}

TEST(Fallback, AllGatherAndGatherReturnTheDataItself) {
  Tensor t = Tensor::of<int64_t>({4, 5, 6});
  std::vector<Tensor> all = all_gather(t);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].data_ptr(), t.data_ptr()) << "MMEngine returns [data]: the same tensor";
  std::vector<Tensor> at_root = gather(t, 0);
  ASSERT_EQ(at_root.size(), 1u);
  EXPECT_EQ(at_root[0].data_ptr(), t.data_ptr());
  // Writes through the returned tensor are writes to data.
  all[0].data<int64_t>()[0] = 40;
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{40, 5, 6}));
  EXPECT_EQ(at_root[0].to_vector<int64_t>(), (std::vector<int64_t>{40, 5, 6}));
}

TEST(Fallback, BroadcastIsANoOp) {
  Tensor t = Tensor::of<double>({2.5, -1.0});
  broadcast(t, 0);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{2.5, -1.0}));
  EXPECT_TRUE(broadcast_async(t, 0).is_completed());
}

TEST(Fallback, MasterOnlyRuns) {
  int calls = 0;
  auto count = master_only([&] { ++calls; });
  count();
  count();
  EXPECT_EQ(calls, 2);

  auto twice = master_only([](int x) { return 2 * x; });
  std::optional<int> got = twice(21);
  static_assert(std::is_same_v<decltype(got), std::optional<int>>);
  EXPECT_EQ(got, std::optional<int>(42));
}

TEST(Fallback, SleepForSleepsAndRejectsNegatives) {
  // Real time: only that it returns (no wall-clock assertions) and that the clock is monotonic.
  auto before = now();
  sleep_for(std::chrono::microseconds(50));
  EXPECT_GE(now(), before);
  sleep_for(std::chrono::nanoseconds(0));
  EXPECT_THROW(sleep_for(std::chrono::nanoseconds(-1)), InvalidArgument);
}

TEST(Fallback, NewGroupOfRankZeroIsTheWorldOfOne) {
  Group g = new_group({0});
  EXPECT_TRUE(g.is_default());
  EXPECT_EQ(g.rank(), 0);
  EXPECT_EQ(g.size(), 1);
  Tensor t = Tensor::of<float>({1.5f});
  all_reduce(t, ReduceOp::Sum, g);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>{1.5f});
  barrier(g);
  EXPECT_THROW(new_group({0, 1}), InvalidArgument);
  EXPECT_THROW(new_group({1}), InvalidArgument);
  EXPECT_THROW(new_group({}), InvalidArgument);
}

TEST(Fallback, PointToPointNeedsAGroup) {
  Tensor t = Tensor::of<int32_t>({1});
  EXPECT_THROW(send(t, 0), InvalidArgument);
  EXPECT_THROW(recv(t), InvalidArgument);
}

TEST(Fallback, InferLauncherPrecedence) {
  EnvGuard env({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_LOCAL_RANK"});
  env.unset_all();
  EXPECT_EQ(infer_launcher(), "none");

  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  EXPECT_EQ(infer_launcher(), "mpi");

  env.set("SLURM_NTASKS", "4");
  EXPECT_EQ(infer_launcher(), "slurm") << "SLURM_NTASKS outranks OMPI_COMM_WORLD_LOCAL_RANK";

  env.set("WORLD_SIZE", "4");
  EXPECT_EQ(infer_launcher(), "pytorch") << "WORLD_SIZE outranks everything";

  env.unset("SLURM_NTASKS");
  EXPECT_EQ(infer_launcher(), "pytorch");
  env.unset("WORLD_SIZE");
  EXPECT_EQ(infer_launcher(), "mpi");
  env.unset("OMPI_COMM_WORLD_LOCAL_RANK");
  env.set("SLURM_NTASKS", "2");
  EXPECT_EQ(infer_launcher(), "slurm");

  // As in MMEngine ('WORLD_SIZE' in os.environ): present counts, even when empty.
  env.unset_all();
  env.set("WORLD_SIZE", "");
  EXPECT_EQ(infer_launcher(), "pytorch");
}

// Under the simulator a rank answers as under `ranks run` with the same backend: a program that
// picks its path by launcher must take the distributed one there too.
TEST(Fallback, InferLauncherInTheSimulatorIsWhatRanksRunWouldGive) {
  EnvGuard env({"WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_LOCAL_RANK"});
  env.unset_all();
  for (const char* backend : {"nccl", "gloo", "mpi"}) {
    std::vector<std::string> seen;
    sim::Options options = options_for(backend);
    options.world_size = 2;
    sim::Report report = sim::run(options, [&] { seen.push_back(infer_launcher()); });
    EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
    const std::string want = std::string(backend) == "mpi" ? "mpi" : "pytorch";
    EXPECT_EQ(seen, (std::vector<std::string>{want, want})) << backend;
  }
  EXPECT_EQ(infer_launcher(), "none");  // and outside it, the environment's answer again
}

TEST(Fallback, InferLauncherRestoresTheEnvironment) {
  // The guard above must leave the environment as it found it.
  const char* before = std::getenv("WORLD_SIZE");
  std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  {
    EnvGuard env({"WORLD_SIZE"});
    env.set("WORLD_SIZE", "123");
    EXPECT_EQ(infer_launcher(), "pytorch");
  }
  const char* after = std::getenv("WORLD_SIZE");
  EXPECT_EQ(after ? std::optional<std::string>(after) : std::nullopt, saved);
}

TEST(Fallback, InitDistRejectsAnUnknownLauncher) {
  for (const char* launcher : {"none", "torchrun", "", "PYTORCH"}) {
    SCOPED_TRACE(launcher);
    try {
      init_dist(launcher);
      ADD_FAILURE() << "init_dist accepted launcher '" << launcher << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_TRUE(Contains(e.what(), "pytorch, slurm or mpi"));
      EXPECT_TRUE(Contains(e.what(), fmt::format("'{}'", launcher)));
    }
  }
  EXPECT_FALSE(is_initialized()) << "a rejected init_dist initialised something";
}

// --- the same queries inside the simulator -------------------------------------------------

TEST(FallbackSim, MasterOnlyRunsOnRankZeroOnly) {
  std::vector<int> ran_on;
  std::vector<std::optional<int>> values_seen(5);
  run_ranks(5, [&] {
    const int rank = get_rank();
    master_only([&] { ran_on.push_back(rank); })();
    values_seen[static_cast<size_t>(rank)] = master_only([&] { return 100 + rank; })();
  });
  EXPECT_EQ(ran_on, std::vector<int>{0});
  EXPECT_EQ(values_seen[0], std::optional<int>(100));
  for (size_t r = 1; r < values_seen.size(); ++r) EXPECT_EQ(values_seen[r], std::nullopt) << r;
}

TEST(FallbackSim, InitCallsInsideASimulatedRankAreAdopted) {
  sim::Options options = default_options();
  options.backend = "gloo";
  run_ranks(
      3,
      [] {
        init_process_group();
        init_dist("pytorch");
        init_dist("slurm", "gloo");
        InitOptions init;
        init.backend = "nccl";
        init_process_group(init);
        EXPECT_TRUE(is_initialized());
        EXPECT_TRUE(is_distributed());
        EXPECT_EQ(get_world_size(), 3);
        EXPECT_EQ(get_backend(), std::optional<std::string>("gloo"));
        EXPECT_EQ(is_main_process(), get_rank() == 0);
        // The launcher is still validated.
        EXPECT_THROW(init_dist("nonsense"), InvalidArgument);
        Tensor t = Tensor::of<int32_t>({get_rank()});
        all_reduce(t);
        EXPECT_EQ(t.item<int32_t>(), 0 + 1 + 2);
      },
      options);
}

TEST(FallbackSim, LocalRanksWithFourRanksPerNode) {
  // 10 ranks, 4 per node: nodes {0-3}, {4-7}, {8, 9}.
  sim::Options options = default_options();
  options.ranks_per_node = 4;
  std::vector<std::pair<int, int>> seen(10, {-1, -1});
  run_ranks(
      10,
      [&] {
        seen[static_cast<size_t>(get_rank())] = {get_local_rank(), get_local_size()};
        EXPECT_EQ(get_dist_info(), std::make_pair(get_rank(), 10));
      },
      options);
  const std::vector<std::pair<int, int>> want = {{0, 4}, {1, 4}, {2, 4}, {3, 4}, {0, 4},
                                                 {1, 4}, {2, 4}, {3, 4}, {0, 2}, {1, 2}};
  EXPECT_EQ(seen, want);
}

TEST(FallbackSim, OneNodeByDefault) {
  std::vector<std::pair<int, int>> seen(6, {-1, -1});
  run_ranks(6, [&] {
    seen[static_cast<size_t>(get_rank())] = {get_local_rank(), get_local_size()};
  });
  for (int r = 0; r < 6; ++r) EXPECT_EQ(seen[static_cast<size_t>(r)], std::make_pair(r, 6));
}

TEST(FallbackSim, ProcessStateIsUntouchedAfterARun) {
  run_ranks(3, [] { EXPECT_TRUE(is_initialized()); });
  EXPECT_FALSE(is_initialized());
  EXPECT_EQ(get_world_size(), 1);
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_backend(), std::nullopt);
}

}  // namespace
}  // namespace ranks::testing
