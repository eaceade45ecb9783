// The Open MPI backend's collectives, driven directly (no Context yet): one process per rank
// under `mpirun -np N backend_mpi_test`, or alone as an MPI singleton (world size 1, where the
// multi-rank cases skip). Point-to-point, timeouts and groups: backend_mpi_p2p_test.cpp.
// Requests are built as runtime/ranks/collectives.cpp builds them; expected values come from
// tests/expected.hpp, never from the library's kernels.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <source_location>
#include <string>
#include <vector>

#include "expected.hpp"
#include "harness.hpp"
#include "mpi_harness.hpp"
#include "ranks/config.hpp"
#include "ranks/errors.hpp"
#if RANKS_HAS_MPI
#include "ranks/backends/mpi/backend.hpp"
#endif

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(MpiBackend, CreateWorldMatchesTheLauncher) {
#if RANKS_HAS_MPI
  backends::WorldSetup setup = launcher_setup();
  std::unique_ptr<Backend> backend = backends::mpi::create_world(setup);
  EXPECT_EQ(backend->name(), "mpi");
  backends::WorldSetup wrong = setup;
  wrong.world_size += 1;
  try {
    backends::mpi::create_world(wrong);
    FAIL() << "expected RendezvousError";
  } catch (const RendezvousError& e) {
    EXPECT_TRUE(Contains(e.what(), fmt::format("rank {} of {}", wrong.rank, wrong.world_size)));
    EXPECT_TRUE(Contains(e.what(), fmt::format("rank {} of {}", setup.rank, setup.world_size)));
  }
#endif
}

TEST_F(MpiBackend, CreateWorldThroughTheRegistry) {
  auto backend = backends::create_world("mpi", launcher_setup());
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->name(), "mpi");
}

TEST_F(MpiBackend, Barrier) {
  Comm c = world();
  for (int i = 0; i < 3; ++i) c.run(request(OpKind::Barrier, {}, {}));
}

TEST_F(MpiBackend, AllReduceEveryDtypeAndOp) {
  Comm c = world();
  const auto ranks = all_ranks(c.size);
  for (DType dtype : all_dtypes) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product, ReduceOp::Min,
                        ReduceOp::Max, ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor}) {
      if (!reduce_op_supports(op, dtype)) continue;
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(dtype), reduce_op_name(op)));
      Tensor t = make_tensor(dtype, count, [&](int64_t i) { return reduce_input(op, c.rank, i); });
      OpRequest r = request(OpKind::AllReduce, {t}, {t});
      r.reduce_op = op;
      c.run(std::move(r));
      std::vector<double> got = values(t);
      for (int64_t i = 0; i < count; ++i) {
        double want = expected_reduction(dtype, op, ranks,
                                         [&](int rank) { return reduce_input(op, rank, i); });
        EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want) << "element " << i;
      }
    }
  }
}

TEST_F(MpiBackend, MinMaxPropagateNaN) {
  Comm c = world();
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    for (ReduceOp op : {ReduceOp::Min, ReduceOp::Max}) {
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(dtype), reduce_op_name(op)));
      const double nan = std::numeric_limits<double>::quiet_NaN();
      // Element 0 is NaN on rank 0, element 1 on the last rank: either side of MPI's operands.
      Tensor t = make_tensor(dtype, 3, [&](int64_t i) {
        if (i == 0 && c.rank == 0) return nan;
        if (i == 1 && c.rank == c.size - 1) return nan;
        return static_cast<double>(c.rank + 1);
      });
      OpRequest r = request(OpKind::AllReduce, {t}, {t});
      r.reduce_op = op;
      c.run(std::move(r));
      std::vector<double> got = values(t);
      EXPECT_TRUE(std::isnan(got[0]));
      EXPECT_TRUE(std::isnan(got[1]));
      EXPECT_EQ(got[2], op == ReduceOp::Min ? 1.0 : static_cast<double>(c.size));
    }
  }
}

TEST_F(MpiBackend, BitwiseOnFloatIsInvalid) {
  Comm c = world();
  Tensor t = Tensor::zeros({4}, DType::Float32);
  OpRequest r = request(OpKind::AllReduce, {t}, {t});
  r.reduce_op = ReduceOp::BXor;
  EXPECT_THROW(c.submit(std::move(r)), InvalidArgument);
}

TEST_F(MpiBackend, ReduceWritesOnlyTheRoot) {
  Comm c = world();
  const auto ranks = all_ranks(c.size);
  for (int root : {0, c.size - 1}) {
    for (DType dtype :
         {DType::Bool, DType::Int32, DType::Float16, DType::BFloat16, DType::Float32}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max}) {
        if (!reduce_op_supports(op, dtype)) continue;
        SCOPED_TRACE(fmt::format("root {} {} {}", root, dtype_name(dtype), reduce_op_name(op)));
        auto input = [&](int rank, int64_t i) { return reduce_input(op, rank, i); };
        Tensor t = make_tensor(dtype, count, [&](int64_t i) { return input(c.rank, i); });
        Tensor before = t.clone();
        OpRequest r = request(OpKind::Reduce, {t}, {t});
        r.root = root;
        r.reduce_op = op;
        c.run(std::move(r));
        if (c.rank != root) {
          EXPECT_TRUE(t.equal(before));
          continue;
        }
        std::vector<double> got = values(t);
        for (int64_t i = 0; i < count; ++i) {
          double want = expected_reduction(dtype, op, ranks, [&](int r2) { return input(r2, i); });
          EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want) << "element " << i;
        }
      }
    }
  }
}

TEST_F(MpiBackend, BroadcastFromFirstAndLast) {
  Comm c = world();
  for (int root : {0, c.size - 1}) {
    for (DType dtype : {DType::Bool, DType::UInt8, DType::Int64, DType::Float16, DType::BFloat16,
                        DType::Float64}) {
      SCOPED_TRACE(fmt::format("root {} {}", root, dtype_name(dtype)));
      auto value = [&](int rank, int64_t i) { return small_value(rank + 1, i); };
      Tensor t = make_tensor(dtype, count, [&](int64_t i) { return value(c.rank, i); });
      c.run([&] {
        OpRequest r = request(OpKind::Broadcast, {t}, {t});
        r.root = root;
        return r;
      }());
      Tensor want = make_tensor(dtype, count, [&](int64_t i) { return value(root, i); });
      EXPECT_TRUE(t.equal(want));
    }
  }
}

TEST_F(MpiBackend, AllGather) {
  Comm c = world();
  for (DType dtype : {DType::Bool, DType::Int8, DType::Float16, DType::BFloat16, DType::Float32}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor in = make_tensor(dtype, count, [&](int64_t i) { return small_value(c.rank, i); });
    std::vector<Tensor> out;
    for (int j = 0; j < c.size; ++j) out.push_back(Tensor::zeros({count}, dtype));
    c.run(request(OpKind::AllGather, {in}, out));
    for (int j = 0; j < c.size; ++j) {
      EXPECT_TRUE(out[static_cast<size_t>(j)].equal(
          make_tensor(dtype, count, [&](int64_t i) { return small_value(j, i); })))
          << "from rank " << j;
    }
  }
}

TEST_F(MpiBackend, GatherToFirstAndLast) {
  Comm c = world();
  for (int root : {0, c.size - 1}) {
    for (DType dtype : {DType::Bool, DType::Int32, DType::BFloat16}) {
      SCOPED_TRACE(fmt::format("root {} {}", root, dtype_name(dtype)));
      Tensor in = make_tensor(dtype, count, [&](int64_t i) { return small_value(c.rank, i); });
      std::vector<Tensor> out;
      if (c.rank == root) {
        for (int j = 0; j < c.size; ++j) out.push_back(Tensor::zeros({count}, dtype));
      }
      OpRequest r = request(OpKind::Gather, {in}, out);
      r.root = root;
      c.run(std::move(r));
      for (int j = 0; j < static_cast<int>(out.size()); ++j) {
        EXPECT_TRUE(out[static_cast<size_t>(j)].equal(
            make_tensor(dtype, count, [&](int64_t i) { return small_value(j, i); })))
            << "from rank " << j;
      }
    }
  }
}

TEST_F(MpiBackend, ScatterFromFirstAndLast) {
  Comm c = world();
  for (int root : {0, c.size - 1}) {
    for (DType dtype : {DType::Bool, DType::Float16, DType::Int64}) {
      SCOPED_TRACE(fmt::format("root {} {}", root, dtype_name(dtype)));
      auto value = [&](int to, int64_t i) { return small_value(to + 2 * root, i); };
      std::vector<Tensor> in;
      if (c.rank == root) {
        for (int j = 0; j < c.size; ++j) {
          in.push_back(make_tensor(dtype, count, [&](int64_t i) { return value(j, i); }));
        }
      }
      Tensor out = Tensor::zeros({count}, dtype);
      OpRequest r = request(OpKind::Scatter, in, {out});
      r.root = root;
      c.run(std::move(r));
      EXPECT_TRUE(
          out.equal(make_tensor(dtype, count, [&](int64_t i) { return value(c.rank, i); })));
    }
  }
}

TEST_F(MpiBackend, ReduceScatterEveryOp) {
  Comm c = world();
  const auto ranks = all_ranks(c.size);
  for (DType dtype :
       {DType::Bool, DType::UInt8, DType::Int32, DType::Float16, DType::BFloat16, DType::Float64}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product, ReduceOp::Min,
                        ReduceOp::Max, ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor}) {
      if (!reduce_op_supports(op, dtype)) continue;
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(dtype), reduce_op_name(op)));
      // Rank r's piece for rank j, element i.
      auto input = [&](int r2, int j, int64_t i) { return reduce_input(op, r2 + j, i + j); };
      std::vector<Tensor> in;
      for (int j = 0; j < c.size; ++j) {
        in.push_back(make_tensor(dtype, count, [&](int64_t i) { return input(c.rank, j, i); }));
      }
      Tensor out = Tensor::zeros({count}, dtype);
      OpRequest r = request(OpKind::ReduceScatter, in, {out});
      r.reduce_op = op;
      c.run(std::move(r));
      std::vector<double> got = values(out);
      for (int64_t i = 0; i < count; ++i) {
        double want =
            expected_reduction(dtype, op, ranks, [&](int r2) { return input(r2, c.rank, i); });
        EXPECT_STORED_EQ(dtype, got[static_cast<size_t>(i)], want) << "element " << i;
      }
    }
  }
}

// Rank i sends rank j a piece of this many elements (zero included).
int64_t piece(int i, int j) { return (2 * i + 3 * j) % 4; }
double piece_value(int i, int j, int64_t k) { return static_cast<double>(i * 16 + j * 4 + k); }

TEST_F(MpiBackend, AllToAllUneven) {
  Comm c = world();
  for (DType dtype : {DType::Int32, DType::BFloat16, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    std::vector<Tensor> in;
    std::vector<Tensor> out;
    for (int j = 0; j < c.size; ++j) {
      in.push_back(make_tensor(dtype, piece(c.rank, j),
                               [&](int64_t k) { return piece_value(c.rank, j, k); }));
      out.push_back(Tensor::zeros({piece(j, c.rank)}, dtype));
    }
    c.run(request(OpKind::AllToAll, in, out));
    for (int i = 0; i < c.size; ++i) {
      EXPECT_TRUE(out[static_cast<size_t>(i)].equal(make_tensor(
          dtype, piece(i, c.rank), [&](int64_t k) { return piece_value(i, c.rank, k); })))
          << "from rank " << i;
    }
  }
}

TEST_F(MpiBackend, AllToAllSizeDisagreementIsAMismatchOnBothSides) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  // Ranks 0 and 1 disagree on what 0 sends 1; every other pair agrees.
  std::vector<Tensor> in;
  std::vector<Tensor> out;
  for (int j = 0; j < c.size; ++j) {
    in.push_back(Tensor::zeros({c.rank == 0 && j == 1 ? 2 : 3}, DType::Int32));
    out.push_back(Tensor::zeros({c.rank == 1 && j == 0 ? 4 : 3}, DType::Int32));
  }
  Work work = c.submit(request(OpKind::AllToAll, in, out));
  if (c.rank <= 1) {
    try {
      work.wait();
      FAIL() << "expected Mismatch";
    } catch (const Mismatch& e) {
      EXPECT_TRUE(Contains(e.what(), "all_to_all"));
      EXPECT_TRUE(Contains(e.what(), "has room for"));
    }
  } else {
    EXPECT_NO_THROW(work.wait());
  }
  c.run(request(OpKind::Barrier, {}, {}));  // the communicator is still in step
}

}  // namespace
}  // namespace ranks::testing
