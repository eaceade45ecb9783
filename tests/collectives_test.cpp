// Every tensor collective, written once as a multi-rank body, over world sizes, dtypes, reduce
// ops, element counts and roots. Expected values come from tests/expected.hpp.

#include <fmt/format.h>

#include <chrono>
#include <numeric>

#include "expected.hpp"

namespace ranks::testing {
namespace {

const int kWorldSizes[] = {1, 2, 3, 4, 7, 8, 64};
const int64_t kCounts[] = {0, 1, 17};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product, ReduceOp::Min,
                         ReduceOp::Max, ReduceOp::BAnd, ReduceOp::BOr,     ReduceOp::BXor};

std::vector<int> iota_ranks(int n) {
  std::vector<int> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

std::vector<int> roots_for(int n) {
  std::vector<int> roots = {0};
  if (n > 2) roots.push_back(n / 2);
  if (n > 1) roots.push_back(n - 1);
  return roots;
}

struct Case {
  std::string backend;  // "sim", or a real backend run as one process per rank
  int world_size;
  DType dtype;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.backend << " n=" << c.world_size << " " << dtype_name(c.dtype);
}

// Whether the backend runs op on cpu tensors (the simulator's test table, mpi's, runs all).
bool runs(const std::string& backend, OpKind op) {
  if (is_simulated(backend)) return true;
  const OpSupport* row = capabilities(backend).find(op);
  return row != nullptr && row->cpu != Support::No;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return fmt::format("{}_n{}_{}", info.param.backend, info.param.world_size,
                     dtype_name(info.param.dtype));
}

// Every world size in the simulator; 2, 3 and 4 processes on each real backend built.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const std::string& backend : test_backends()) {
    for (int n : kWorldSizes) {
      if (!is_simulated(backend) && n > 4) continue;
      if (!is_simulated(backend) && n < 2) continue;
      for (DType d : all_dtypes) cases.push_back({backend, n, d});
    }
  }
  return cases;
}

class Collectives : public ::testing::TestWithParam<Case> {};

TEST_P(Collectives, AllReduceEveryOpAndCount) {
  const auto& [backend, n, dtype] = GetParam();
  for (ReduceOp op : kOps) {
    if (!reduce_op_supports(op, dtype)) continue;
    for (int64_t count : kCounts) {
      SCOPED_TRACE(fmt::format("op {} count {}", reduce_op_name(op), count));
      run_on(backend, n, [&, op = op, count = count] {
        int rank = get_rank();
        Tensor t = make_tensor(dtype, count, [&](int64_t i) { return reduce_input(op, rank, i); });
        all_reduce(t, op);
        auto got = values(t);
        ASSERT_EQ(got.size(), static_cast<size_t>(count));
        for (int64_t i = 0; i < count; ++i) {
          double want = expected_reduction(dtype, op, iota_ranks(n),
                                           [&](int r) { return reduce_input(op, r, i); });
          EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want)
              << "rank " << rank << " element " << i;
        }
      });
    }
  }
}

TEST_P(Collectives, ReduceToEveryRoot) {
  const auto& [backend, n, dtype] = GetParam();
  for (int root : roots_for(n)) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Mean}) {
      if (!reduce_op_supports(op, dtype)) continue;  // mean of bools: Errors.MeanOfBoolTensors
      SCOPED_TRACE(fmt::format("root {} op {}", root, reduce_op_name(op)));
      run_on(backend, n, [&, root = root, op = op] {
        int rank = get_rank();
        const int64_t count = 17;
        Tensor t = make_tensor(dtype, count, [&](int64_t i) { return reduce_input(op, rank, i); });
        Tensor before = t.clone();
        reduce(t, root, op);
        if (rank != root) {
          EXPECT_TRUE(t.equal(before)) << "reduce wrote to non-root rank " << rank;
          return;
        }
        auto got = values(t);
        for (int64_t i = 0; i < count; ++i) {
          double want = expected_reduction(dtype, op, iota_ranks(n),
                                           [&](int r) { return reduce_input(op, r, i); });
          EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want);
        }
      });
    }
  }
}

TEST_P(Collectives, BroadcastFromEveryRoot) {
  const auto& [backend, n, dtype] = GetParam();
  for (int root : roots_for(n)) {
    for (int64_t count : kCounts) {
      SCOPED_TRACE(fmt::format("root {} count {}", root, count));
      run_on(backend, n, [&, root = root, count = count] {
        int rank = get_rank();
        Tensor t = make_tensor(dtype, count, [&](int64_t i) { return small_value(rank, i); });
        broadcast(t, root);
        auto got = values(t);
        for (int64_t i = 0; i < count; ++i) {
          EXPECT_EQ(got[static_cast<size_t>(i)], stored(dtype, small_value(root, i)));
        }
      });
    }
  }
}

TEST_P(Collectives, AllGatherAndGather) {
  const auto& [backend, n, dtype] = GetParam();
  for (int64_t count : kCounts) {
    for (int root : roots_for(n)) {
      SCOPED_TRACE(fmt::format("count {} root {}", count, root));
      run_on(backend, n, [&, count = count, root = root] {
        int rank = get_rank();
        Tensor mine = make_tensor(dtype, count, [&](int64_t i) { return small_value(rank, i); });
        auto everyone = all_gather(mine);
        ASSERT_EQ(everyone.size(), static_cast<size_t>(n));
        auto at_root = gather(mine, root);
        ASSERT_EQ(at_root.size(), rank == root ? static_cast<size_t>(n) : 0u);
        for (int r = 0; r < n; ++r) {
          auto got = values(everyone[static_cast<size_t>(r)]);
          for (int64_t i = 0; i < count; ++i) {
            EXPECT_EQ(got[static_cast<size_t>(i)], stored(dtype, small_value(r, i)));
          }
          if (rank != root) continue;
          auto rooted = values(at_root[static_cast<size_t>(r)]);
          for (int64_t i = 0; i < count; ++i) {
            EXPECT_EQ(rooted[static_cast<size_t>(i)], stored(dtype, small_value(r, i)));
          }
        }
      });
    }
  }
}

TEST_P(Collectives, ScatterFromEveryRoot) {
  const auto& [backend, n, dtype] = GetParam();
  for (int root : roots_for(n)) {
    SCOPED_TRACE(fmt::format("root {}", root));
    run_on(backend, n, [&, root = root] {
      int rank = get_rank();
      const int64_t count = 5;
      std::vector<Tensor> pieces;
      if (rank == root) {
        for (int r = 0; r < n; ++r) {
          pieces.push_back(
              make_tensor(dtype, count, [&](int64_t i) { return small_value(r + 1, i); }));
        }
      }
      Tensor out = Tensor::zeros({count}, dtype);
      scatter(out, pieces, root);
      auto got = values(out);
      for (int64_t i = 0; i < count; ++i) {
        EXPECT_EQ(got[static_cast<size_t>(i)], stored(dtype, small_value(rank + 1, i)));
      }
    });
  }
}

TEST_P(Collectives, ReduceScatterEveryOp) {
  const auto& [backend, n, dtype] = GetParam();
  if (!runs(backend, OpKind::ReduceScatter)) GTEST_SKIP() << backend << " has no reduce_scatter";
  for (ReduceOp op : kOps) {
    if (!reduce_op_supports(op, dtype)) continue;
    SCOPED_TRACE(fmt::format("op {}", reduce_op_name(op)));
    run_on(backend, n, [&, op = op] {
      int rank = get_rank();
      const int64_t count = 3;
      // Rank r's piece for rank j holds reduce_input(op, r, j * count + i).
      std::vector<Tensor> in;
      for (int j = 0; j < n; ++j) {
        in.push_back(make_tensor(dtype, count,
                                 [&](int64_t i) { return reduce_input(op, rank, j * count + i); }));
      }
      Tensor out = Tensor::zeros({count}, dtype);
      reduce_scatter(out, in, op);
      auto got = values(out);
      for (int64_t i = 0; i < count; ++i) {
        double want = expected_reduction(
            dtype, op, iota_ranks(n), [&](int r) { return reduce_input(op, r, rank * count + i); });
        EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want);
      }
    });
  }
}

TEST_P(Collectives, AllToAllWithUnevenPieces) {
  const auto& [backend, n, dtype] = GetParam();
  run_on(backend, n, [&] {
    int rank = get_rank();
    // Rank r sends (r + j) % 3 elements to rank j, valued small_value(r * n + j, i).
    auto piece = [&](int from, int to) { return static_cast<int64_t>((from + to) % 3); };
    std::vector<Tensor> in, out;
    for (int j = 0; j < n; ++j) {
      in.push_back(make_tensor(dtype, piece(rank, j),
                               [&](int64_t i) { return small_value(rank * n + j, i); }));
      out.push_back(Tensor::zeros({piece(j, rank)}, dtype));
    }
    all_to_all(out, in);
    for (int j = 0; j < n; ++j) {
      auto got = values(out[static_cast<size_t>(j)]);
      for (int64_t i = 0; i < piece(j, rank); ++i) {
        EXPECT_EQ(got[static_cast<size_t>(i)], stored(dtype, small_value(j * n + rank, i)));
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(All, Collectives, ::testing::ValuesIn(all_cases()), case_name);

// Pieces of an odd length on worlds that are not powers of two: gloo's halving-doubling
// reduce_scatter splits the data into power-of-two chunks and folds the ranks outside the
// largest power-of-two block in separately.
class ReduceScatterLarge : public ::testing::TestWithParam<std::string> {};

TEST_P(ReduceScatterLarge, OddPiecesOnOddWorlds) {
  const std::string& backend = GetParam();
  if (!runs(backend, OpKind::ReduceScatter)) GTEST_SKIP() << backend << " has no reduce_scatter";
  for (int n : {3, 5}) {
    for (auto [dtype, op] : {std::pair{DType::Float32, ReduceOp::Sum},
                             std::pair{DType::Int64, ReduceOp::Max},
                             std::pair{DType::BFloat16, ReduceOp::Mean}}) {
      SCOPED_TRACE(fmt::format("n {} {} {}", n, dtype_name(dtype), reduce_op_name(op)));
      const int64_t count = 10007;
      run_on(backend, n, [&, dtype = dtype, op = op] {
        const int rank = get_rank();
        std::vector<Tensor> in;
        for (int j = 0; j < n; ++j) {
          in.push_back(make_tensor(
              dtype, count, [&](int64_t i) { return reduce_input(op, rank, j * count + i); }));
        }
        Tensor out = Tensor::zeros({count}, dtype);
        reduce_scatter(out, in, op);
        auto got = values(out);
        for (int64_t i = 0; i < count; i += 97) {
          double want = expected_reduction(dtype, op, iota_ranks(n), [&](int r) {
            return reduce_input(op, r, rank * count + i);
          });
          EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want);
        }
        EXPECT_STORED_EQ(dtype, got.back(), expected_reduction(dtype, op, iota_ranks(n), [&](int r) {
          return reduce_input(op, r, rank * count + count - 1);
        }));
      });
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ReduceScatterLarge, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

TEST(CollectivesLarge, AllReduceOfALargeOddTensor) {
  for (int n : {2, 7}) {
    for (DType dtype : {DType::Float32, DType::Int32, DType::BFloat16}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Mean}) {
        SCOPED_TRACE(fmt::format("n {} {} {}", n, dtype_name(dtype), reduce_op_name(op)));
        const int64_t count = (1 << 17) + 1;
        run_ranks(n, [&] {
          int rank = get_rank();
          Tensor t =
              make_tensor(dtype, count, [&](int64_t i) { return reduce_input(op, rank, i); });
          all_reduce(t, op);
          auto got = values(t);
          int wrong = 0;
          for (int64_t i = 0; i < count; ++i) {
            double want = expected_reduction(dtype, op, iota_ranks(n),
                                             [&](int r) { return reduce_input(op, r, i); });
            wrong += std::abs(got[static_cast<size_t>(i)] - want) > tolerance(dtype, want);
          }
          EXPECT_EQ(wrong, 0);
        });
      }
    }
  }
}

TEST(CollectivesAsync, AsyncFormsCompleteOnWait) {
  run_ranks(4, [] {
    int rank = get_rank();
    Tensor a = make_tensor(DType::Int64, 3, [&](int64_t i) { return rank + i; });
    Tensor b = Tensor::of<float>({static_cast<float>(rank)});
    Work wa = all_reduce_async(a);
    Work wb = broadcast_async(b, 3);
    // Its own input: b is the broadcast's, written when that completes.
    Tensor c = Tensor::of<float>({static_cast<float>(rank * 2)});
    std::vector<Tensor> gathered;
    Work wg = all_gather_async(gathered, c);
    EXPECT_EQ(gathered.size(), 4u);  // allocated at once, written on completion
    wa.wait();
    wb.wait();
    wg.wait();
    EXPECT_TRUE(wa.is_completed());
    EXPECT_EQ(wa.exception(), nullptr);
    EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{6, 10, 14}));
    EXPECT_EQ(b.to_vector<float>(), std::vector<float>{3.0f});
    for (size_t r = 0; r < gathered.size(); ++r) {
      EXPECT_EQ(gathered[r].to_vector<float>(), std::vector<float>{static_cast<float>(r * 2)});
    }
    barrier_async().wait();
  });
}

// The blocking forms among async ones, on every backend: a blocking collective called while
// async ones are in flight, and async ones started after it, all complete with the right
// results (gloo runs a blocking op on the calling thread only when nothing is queued before it).
class BlockingAmongAsync : public ::testing::TestWithParam<std::string> {};

TEST_P(BlockingAmongAsync, EveryResultIsRight) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    const int n = get_world_size();
    Tensor a = make_tensor(DType::Float32, 5, [&](int64_t i) { return small_value(rank, i); });
    Tensor b = make_tensor(DType::Int32, 4, [&](int64_t i) { return small_value(rank, i); });
    Tensor c = make_tensor(DType::Int64, 3, [&](int64_t i) { return small_value(rank, i); });
    Work wa = all_reduce_async(a);
    Work wb = broadcast_async(b, n - 1);
    all_reduce(c, ReduceOp::Max);  // blocking, with two async ops in flight
    std::vector<Tensor> gathered = all_gather(Tensor::of<int32_t>({rank}));
    Tensor d = Tensor::of<float>({static_cast<float>(rank + 1)});
    Work wd = all_reduce_async(d);  // async after blocking ones
    barrier();
    wb.wait();
    wa.wait();
    wd.wait();
    for (int64_t i = 0; i < 5; ++i) {
      double want = expected_reduction(DType::Float32, ReduceOp::Sum, iota_ranks(n),
                                       [&](int r) { return small_value(r, i); });
      EXPECT_EQ(a.to_vector<float>()[static_cast<size_t>(i)], static_cast<float>(want));
    }
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(b.to_vector<int32_t>()[static_cast<size_t>(i)], small_value(n - 1, i));
    }
    for (int64_t i = 0; i < 3; ++i) {
      double want = expected_reduction(DType::Int64, ReduceOp::Max, iota_ranks(n),
                                       [&](int r) { return small_value(r, i); });
      EXPECT_EQ(c.to_vector<int64_t>()[static_cast<size_t>(i)], static_cast<int64_t>(want));
    }
    ASSERT_EQ(gathered.size(), static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(gathered[static_cast<size_t>(r)].to_vector<int32_t>(), std::vector<int32_t>{r});
    }
    EXPECT_EQ(d.to_vector<float>(), std::vector<float>{static_cast<float>(n * (n + 1) / 2)});
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockingAmongAsync, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

// Work::is_completed() is torch's non-blocking poll: a program that spins on it until its ops are
// done (overlapping them with its own work) must see every kind of op complete without calling
// wait(). On gloo it stayed false until wait() for every async op, so such a loop spun forever.
// The loop has a generous deadline only so that a regression fails instead of hanging.
class PollingWork : public ::testing::TestWithParam<std::string> {};

TEST_P(PollingWork, IsCompletedTurnsTrueWithoutWait) {
  run_on(GetParam(), 2, [] {
    const int rank = get_rank();
    Tensor mine = Tensor::of<int32_t>({rank + 10});
    Tensor theirs = Tensor::zeros({1}, DType::Int32);
    Tensor sum = Tensor::of<int64_t>({rank + 1});
    std::vector<Work> works = {irecv(theirs, 1 - rank), isend(mine, 1 - rank),
                               all_reduce_async(sum), barrier_async()};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (size_t k = 0; k < works.size(); ++k) {
      while (!works[k].is_completed() && std::chrono::steady_clock::now() < deadline) {
      }
      EXPECT_TRUE(works[k].is_completed()) << "work " << k;
      EXPECT_EQ(works[k].exception(), nullptr) << "work " << k;
    }
    EXPECT_EQ(works[0].source_rank(), 1 - rank);
    EXPECT_EQ(theirs.to_vector<int32_t>(), std::vector<int32_t>{1 - rank + 10});
    EXPECT_EQ(sum.to_vector<int64_t>(), std::vector<int64_t>{3});
    for (Work& w : works) w.wait();  // a wait after the poll returns at once
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, PollingWork, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

// One list as both input and output of all_to_all, and a scatter whose root receives into one of
// its own inputs: every rank gets what was sent, as the real libraries deliver it.
class SharedBuffers : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedBuffers, OutputsThatAreInputsGetWhatWasSent) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    const int n = get_world_size();
    std::vector<Tensor> both;
    for (int j = 0; j < n; ++j) both.push_back(Tensor::of<int32_t>({rank * 10 + j}));
    all_to_all(both, both);
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(both[static_cast<size_t>(j)].to_vector<int32_t>(),
                std::vector<int32_t>{j * 10 + rank})
          << "from rank " << j;
    }
    std::vector<Tensor> parts;
    if (rank == 0) {
      for (int j = 0; j < n; ++j) parts.push_back(Tensor::of<int32_t>({100 + j}));
    }
    Tensor out = rank == 0 ? parts[1] : Tensor::zeros({1}, DType::Int32);  // shares parts[1]
    scatter(out, parts, 0);
    EXPECT_EQ(out.to_vector<int32_t>(), std::vector<int32_t>{100 + rank});
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, SharedBuffers, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

// Outputs that are back-to-back slices of one buffer are received into directly by gloo and MPI
// (ranks/detail/adjacent.hpp); every other layout goes through staging. Each layout must give
// the same results, and an input that lies inside the outputs must not be clobbered before it
// is sent.
class GatherIntoSlices : public ::testing::TestWithParam<std::string> {};

TEST_P(GatherIntoSlices, EveryLayoutGetsEveryPart) {
  run_on(GetParam(), 3, [] {
    const int rank = get_rank();
    const int n = get_world_size();
    constexpr int64_t count = 5;
    auto part = [](int r, int64_t i) { return static_cast<int32_t>(100 * r + i); };
    Tensor in = make_tensor(DType::Int32, count, [&](int64_t i) { return part(rank, i); });
    auto expect_parts = [&](const std::vector<Tensor>& out, const char* layout) {
      SCOPED_TRACE(layout);
      ASSERT_EQ(out.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        std::vector<int32_t> want;
        for (int64_t i = 0; i < count; ++i) want.push_back(part(r, i));
        EXPECT_EQ(out[static_cast<size_t>(r)].to_vector<int32_t>(), want) << "part of rank " << r;
      }
    };
    // Slices of `buffer` in the order given (rank order: adjacent; reversed: not).
    auto slices = [&](std::vector<int32_t>& buffer, bool reversed) {
      buffer.assign(static_cast<size_t>(n * count), -1);
      std::vector<Tensor> out;
      for (int r = 0; r < n; ++r) {
        const int slot = reversed ? n - 1 - r : r;
        out.push_back(
            Tensor::from_blob(buffer.data() + slot * count, {count}, DType::Int32, Device::cpu()));
      }
      return out;
    };
    for (bool reversed : {false, true}) {
      std::vector<int32_t> buffer;
      std::vector<Tensor> out = slices(buffer, reversed);
      all_gather_async(out, in).wait();
      expect_parts(out, reversed ? "all_gather, reversed slices" : "all_gather, slices");
    }
    {
      // The input is this rank's own slice (torch's all_gather_into_tensor idiom).
      std::vector<int32_t> buffer;
      std::vector<Tensor> out = slices(buffer, false);
      out[static_cast<size_t>(rank)].copy_(in);
      all_gather_async(out, out[static_cast<size_t>(rank)]).wait();
      expect_parts(out, "all_gather, input inside the outputs");
    }
    for (bool reversed : {false, true}) {
      std::vector<int32_t> buffer;
      std::vector<Tensor> out;
      if (rank == 1) out = slices(buffer, reversed);
      gather_async(out, in, 1).wait();
      if (rank == 1) {
        expect_parts(out, reversed ? "gather, reversed slices" : "gather, slices");
      } else {
        EXPECT_TRUE(out.empty());
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, GatherIntoSlices, ::testing::ValuesIn(test_backends()),
                         [](const auto& param_info) { return param_info.param; });

TEST(CollectivesAsync, MeanKeepsIntegerDtypeAndTruncates) {
  // MMEngine: int64 mean of [1,2] and [3,4] over 2 ranks is [2,3]; negatives truncate toward 0.
  run_ranks(2, [] {
    int rank = get_rank();
    Tensor t = rank == 0 ? Tensor::of<int64_t>({1, 2, -1}) : Tensor::of<int64_t>({3, 4, -2});
    all_reduce(t, "mean");
    EXPECT_EQ(t.dtype(), DType::Int64);
    EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, -1}));
    // The asynchronous form takes the name too (MMEngine's names, any case).
    Tensor u = rank == 0 ? Tensor::of<int64_t>({1, 2, -1}) : Tensor::of<int64_t>({3, 4, -2});
    Work w = all_reduce_async(u, "MEAN");
    w.wait();
    EXPECT_EQ(u.to_vector<int64_t>(), (std::vector<int64_t>{2, 3, -1}));
  });
}

}  // namespace
}  // namespace ranks::testing
