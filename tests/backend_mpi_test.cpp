// The Open MPI backend, driven directly (no Context yet): one process per rank under
// `mpirun -np N backend_mpi_test`, or alone as an MPI singleton (world size 1, where the
// multi-rank cases skip). Requests are built as runtime/ranks/collectives.cpp builds them;
// expected values come from tests/expected.hpp, never from the library's kernels.

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
#include "ranks/backends/registry.hpp"
#include "ranks/config.hpp"
#include "ranks/errors.hpp"
#if RANKS_HAS_MPI
#include "ranks/backends/mpi/backend.hpp"
#endif

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::chrono::milliseconds op_timeout = 20s;  // a broken test fails, never hangs

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::atoi(value) : fallback;
}

// What a launcher would say: mpirun's variables, or a singleton's rank 0 of 1.
backends::WorldSetup launcher_setup() {
  backends::WorldSetup setup;
  setup.rank = env_int("OMPI_COMM_WORLD_RANK", env_int("PMI_RANK", 0));
  setup.world_size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
  setup.timeout = op_timeout;
  return setup;
}

// One communicator plus the bookkeeping dispatch would do (sequence numbers, deadline, site).
struct Comm {
  std::unique_ptr<Backend> backend;
  int rank = 0;
  int size = 1;
  uint64_t seq = 0;
  uint64_t p2p_seq = 0;

  Work submit(OpRequest r, std::chrono::milliseconds timeout = op_timeout,
              std::source_location where = std::source_location::current()) {
    r.seq = is_point_to_point(r.kind) ? p2p_seq++ : seq++;
    r.timeout = timeout;
    r.where = where;
    return backend->submit(std::move(r));
  }
  void run(OpRequest r, std::source_location where = std::source_location::current()) {
    submit(std::move(r), op_timeout, where).wait();
  }
};

// Through the registry, so that this file also builds (and skips) where mpi is not built.
Comm world() {
  backends::WorldSetup setup = launcher_setup();
  Comm c;
  c.backend = backends::create_world("mpi", setup);
  c.rank = setup.rank;
  c.size = setup.world_size;
  return c;
}

OpRequest request(OpKind kind, std::vector<Tensor> inputs, std::vector<Tensor> outputs) {
  OpRequest r;
  r.kind = kind;
  r.inputs.assign(inputs.begin(), inputs.end());
  r.outputs.assign(outputs.begin(), outputs.end());
  return r;
}

std::vector<int> all_ranks(int n) {
  std::vector<int> ranks(static_cast<size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

constexpr int64_t count = 37;  // odd, so no kernel gets a tidy multiple

class MpiBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!backends::is_built("mpi")) GTEST_SKIP() << "this build has no mpi backend";
  }
};

#define SKIP_UNLESS_MULTI_RANK(c) \
  if ((c).size < 2) GTEST_SKIP() << "needs mpirun -np 2 or more"

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

TEST_F(MpiBackend, CudaTensorsAreUnsupported) {
  Comm c = world();
  Tensor t = Tensor::zeros({4}, DType::Float32, Device::cuda(0));
  EXPECT_THROW(c.submit(request(OpKind::AllReduce, {t}, {t})), Unsupported);
}

TEST_F(MpiBackend, ReduceWritesOnlyTheRoot) {
  Comm c = world();
  const auto ranks = all_ranks(c.size);
  for (int root : {0, c.size - 1}) {
    for (DType dtype :
         {DType::Bool, DType::Int32, DType::Float16, DType::BFloat16, DType::Float32}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max}) {
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

TEST_F(MpiBackend, SendRecvMatchesTagsNotOrder) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  const int next = (c.rank + 1) % c.size;
  const int prev = (c.rank + c.size - 1) % c.size;
  for (DType dtype : {DType::Bool, DType::Float16, DType::Int64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto value = [&](int from, int tag, int64_t i) { return small_value(from + tag, i); };
    Tensor five = make_tensor(dtype, count, [&](int64_t i) { return value(c.rank, 5, i); });
    Tensor nine = make_tensor(dtype, count, [&](int64_t i) { return value(c.rank, 9, i); });
    OpRequest s5 = request(OpKind::Send, {five}, {});
    s5.root = next;
    s5.tag = 5;
    OpRequest s9 = request(OpKind::Send, {nine}, {});
    s9.root = next;
    s9.tag = 9;
    Work w5 = c.submit(std::move(s5));
    Work w9 = c.submit(std::move(s9));
    // Received in the other order: tags, not arrival, pick the message.
    Tensor got9 = Tensor::zeros({count}, dtype);
    Tensor got5 = Tensor::zeros({count}, dtype);
    OpRequest r9 = request(OpKind::Recv, {}, {got9});
    r9.root = prev;
    r9.tag = 9;
    OpRequest r5 = request(OpKind::Recv, {}, {got5});
    r5.root = any_source;
    r5.tag = 5;
    Work wr9 = c.submit(std::move(r9));
    Work wr5 = c.submit(std::move(r5));
    wr9.wait();
    wr5.wait();
    w5.wait();
    w9.wait();
    EXPECT_EQ(wr9.source_rank(), prev);
    EXPECT_EQ(wr5.source_rank(), prev);
    EXPECT_TRUE(
        got9.equal(make_tensor(dtype, count, [&](int64_t i) { return value(prev, 9, i); })));
    EXPECT_TRUE(
        got5.equal(make_tensor(dtype, count, [&](int64_t i) { return value(prev, 5, i); })));
  }
}

TEST_F(MpiBackend, AnySourceReportsTheSender) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  const int tag = 3;
  if (c.rank != 0) {
    OpRequest s = request(OpKind::Send, {Tensor::of<int32_t>({c.rank * 10, c.rank})}, {});
    s.root = 0;
    s.tag = tag;
    c.run(std::move(s));
    return;
  }
  std::vector<int> seen;
  for (int k = 1; k < c.size; ++k) {
    Tensor t = Tensor::zeros({2}, DType::Int32);
    OpRequest r = request(OpKind::Recv, {}, {t});
    r.root = any_source;
    r.tag = tag;
    Work w = c.submit(std::move(r));
    w.wait();
    const int from = w.source_rank();
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{from * 10, from}));
    seen.push_back(from);
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int> want(static_cast<size_t>(c.size - 1));
  std::iota(want.begin(), want.end(), 1);
  EXPECT_EQ(seen, want);
}

TEST_F(MpiBackend, RecvOfTheWrongSizeIsAMismatch) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  // Rank 1 sends 3 then 5 elements; rank 0 receives both into 4.
  if (c.rank == 1) {
    for (int64_t n : {3, 5}) {
      OpRequest s = request(OpKind::Send, {Tensor::zeros({n}, DType::Float32)}, {});
      s.root = 0;
      s.tag = 1;
      c.run(std::move(s));
    }
  } else if (c.rank == 0) {
    for (const char* part : {"sent 3 elements", "larger than the receiving tensor"}) {
      OpRequest r = request(OpKind::Recv, {}, {Tensor::zeros({4}, DType::Float32)});
      r.root = 1;
      r.tag = 1;
      try {
        c.run(std::move(r));
        FAIL() << "expected Mismatch";
      } catch (const Mismatch& e) {
        EXPECT_TRUE(Contains(e.what(), part));
      }
    }
  }
  c.run(request(OpKind::Barrier, {}, {}));
}

TEST_F(MpiBackend, RecvNobodySendsTimesOut) {
  Comm c = world();
  OpRequest r = request(OpKind::Recv, {}, {Tensor::zeros({2}, DType::Int32)});
  r.root = any_source;
  r.tag = 77;
  const auto start = std::chrono::steady_clock::now();
  Work w = c.submit(std::move(r), 200ms);
  try {
    w.wait();
    FAIL() << "expected Timeout";
  } catch (const Timeout& e) {
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_GE(took, 200ms);
    EXPECT_LT(took, 5s);
    const std::string text = e.what();
    EXPECT_TRUE(Contains(text, fmt::format("rank {} timed out after 200 ms in recv", c.rank)));
    EXPECT_TRUE(Contains(text, "group 'world' seq 0"));
    EXPECT_TRUE(Contains(text, "backend_mpi_test.cpp:"));
    EXPECT_TRUE(Contains(text, "waited"));
    EXPECT_TRUE(Contains(text, "no rank has sent a message with tag 77"));
  }
  EXPECT_TRUE(w.is_completed());
  EXPECT_NE(w.exception(), nullptr);
  // Work::wait(timeout): this call's deadline, not the request's.
  if (c.size > 1) {
    OpRequest r2 = request(OpKind::Recv, {}, {Tensor::zeros({2}, DType::Int32)});
    r2.root = (c.rank + 1) % c.size;
    r2.tag = 78;
    Work w2 = c.submit(std::move(r2));
    try {
      w2.wait(100ms);
      FAIL() << "expected Timeout";
    } catch (const Timeout& e) {
      EXPECT_TRUE(Contains(e.what(), "after 100 ms"));
      EXPECT_TRUE(Contains(
          e.what(), fmt::format("rank {} has sent no message with tag 78", (c.rank + 1) % c.size)));
    }
  }
  // A cancelled receive leaves the communicator usable.
  c.run(request(OpKind::Barrier, {}, {}));
}

TEST_F(MpiBackend, CollectiveTimeoutBreaksOnlyThatGroup) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  GroupSpec spec;
  spec.name = "world/all";
  spec.members = std::make_shared<const std::vector<int>>(all_ranks(c.size));
  spec.rank = c.rank;
  Comm sub{c.backend->create_subgroup(spec), c.rank, c.size};
  ASSERT_NE(sub.backend, nullptr);
  const int go_tag = 11;
  if (c.rank == 0) {
    {
      // The others hold back until rank 0 has given up.
      const auto start = std::chrono::steady_clock::now();
      Work w = sub.submit(request(OpKind::Barrier, {}, {}), 150ms);
      try {
        w.wait();
        FAIL() << "expected Timeout";
      } catch (const Timeout& e) {
        EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
        EXPECT_TRUE(
            Contains(e.what(),
                     "rank 0 timed out after 150 ms in barrier on group 'world/all' seq 0 at "
                     "backend_mpi_test.cpp:"));
        EXPECT_TRUE(Contains(e.what(), "MPI cannot tell which ranks have not arrived"));
      }
    }
    try {
      sub.run(request(OpKind::Barrier, {}, {}));
      FAIL() << "expected BackendError";
    } catch (const BackendError& e) {
      EXPECT_TRUE(Contains(e.what(), "barrier seq 0 at backend_mpi_test.cpp:"));
      EXPECT_TRUE(Contains(e.what(), "timed out"));
    }
    for (int r = 1; r < c.size; ++r) {
      OpRequest s = request(OpKind::Send, {Tensor::of<int32_t>({1})}, {});
      s.root = r;
      s.tag = go_tag;
      c.run(std::move(s));
    }
  } else {
    OpRequest r = request(OpKind::Recv, {}, {Tensor::zeros({1}, DType::Int32)});
    r.root = 0;
    r.tag = go_tag;
    c.run(std::move(r));
    sub.run(request(OpKind::Barrier, {}, {}));  // meets rank 0's abandoned barrier
  }
  // The world communicator is unaffected.
  c.run(request(OpKind::Barrier, {}, {}));
}

TEST_F(MpiBackend, NewGroupAgreement) {
  Comm c = world();
  OpRequest agree = request(OpKind::NewGroup, {}, {});
  agree.extra = 0x1234abcd;
  c.run(std::move(agree));
  if (c.size < 2) return;
  OpRequest disagree = request(OpKind::NewGroup, {}, {});
  disagree.extra = c.rank == c.size - 1 ? 7 : 8;
  EXPECT_THROW(c.run(std::move(disagree)), Mismatch);  // on every rank
}

TEST_F(MpiBackend, SubGroupOfAllButRankZero) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  GroupSpec spec;
  std::vector<int> members;
  for (int r = 1; r < c.size; ++r) members.push_back(r);
  spec.name = fmt::format("world/{}", fmt::join(members, ","));
  spec.members = std::make_shared<const std::vector<int>>(members);
  spec.rank = c.rank == 0 ? -1 : c.rank - 1;
  std::unique_ptr<Backend> sub_backend = c.backend->create_subgroup(spec);
  if (c.rank == 0) {
    EXPECT_EQ(sub_backend, nullptr);
    c.run(request(OpKind::Barrier, {}, {}));
    return;
  }
  ASSERT_NE(sub_backend, nullptr);
  Comm sub{std::move(sub_backend), c.rank - 1, c.size - 1};
  Tensor t = Tensor::of<int64_t>({c.rank, 1});
  OpRequest r = request(OpKind::AllReduce, {t}, {t});
  sub.run(std::move(r));
  const int64_t global_sum = static_cast<int64_t>(c.size) * (c.size - 1) / 2;
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{global_sum, c.size - 1}));
  // Ranks are group ranks: broadcast from group rank 0 is global rank 1.
  Tensor b = Tensor::of<int32_t>({c.rank});
  OpRequest br = request(OpKind::Broadcast, {b}, {b});
  br.root = 0;
  sub.run(std::move(br));
  EXPECT_EQ(b.item<int32_t>(), 1);
  // A receive names the sender by group rank.
  if (sub.size > 1) {
    if (sub.rank == sub.size - 1) {
      OpRequest s = request(OpKind::Send, {Tensor::of<int32_t>({c.rank})}, {});
      s.root = 0;
      sub.run(std::move(s));
    } else if (sub.rank == 0) {
      Tensor got = Tensor::zeros({1}, DType::Int32);
      OpRequest rr = request(OpKind::Recv, {}, {got});
      rr.root = any_source;
      Work w = sub.submit(std::move(rr));
      w.wait();
      EXPECT_EQ(w.source_rank(), sub.size - 1);
      EXPECT_EQ(got.item<int32_t>(), c.size - 1);
    }
  }
  // A timed-out receive in the sub-group names the global rank it waited for.
  if (sub.size > 1 && sub.rank == 0) {
    OpRequest rr = request(OpKind::Recv, {}, {Tensor::zeros({1}, DType::Int32)});
    rr.root = 1;
    rr.tag = 4;
    try {
      sub.submit(std::move(rr), 100ms).wait();
      FAIL() << "expected Timeout";
    } catch (const Timeout& e) {
      EXPECT_TRUE(Contains(e.what(), fmt::format("group '{}'", spec.name)));
      EXPECT_TRUE(Contains(e.what(), "rank 2 has sent no message with tag 4"));
    }
  }
  c.run(request(OpKind::Barrier, {}, {}));
}

TEST_F(MpiBackend, ManyOpsInFlightAtOnce) {
  Comm c = world();
  std::vector<Tensor> tensors;
  std::vector<Work> works;
  for (int k = 0; k < 16; ++k) {
    tensors.push_back(Tensor::of<int32_t>({k, c.rank}));
    OpRequest r = request(OpKind::AllReduce, {tensors.back()}, {tensors.back()});
    works.push_back(c.submit(std::move(r)));
  }
  for (int k = 15; k >= 0; --k) works[static_cast<size_t>(k)].wait();
  const int32_t rank_sum = c.size * (c.size - 1) / 2;
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(tensors[static_cast<size_t>(k)].to_vector<int32_t>(),
              (std::vector<int32_t>{k * c.size, rank_sum}));
  }
  // A Work dropped before its wait still completes, and its tensor still gets the result.
  Tensor dropped = Tensor::of<int32_t>({1});
  c.submit(request(OpKind::AllReduce, {dropped}, {dropped}));
  c.run(request(OpKind::Barrier, {}, {}));
  c.run(request(OpKind::Barrier, {}, {}));
}

}  // namespace
}  // namespace ranks::testing
