// The Open MPI backend's point-to-point ops, timeouts, sub-groups and ops in flight, driven
// directly (no Context yet): one process per rank under `mpirun -np N backend_mpi_p2p_test`, or
// alone as an MPI singleton (world size 1, where the multi-rank cases skip). Requests are built as
// runtime/ranks/collectives.cpp builds them; expected values come from tests/expected.hpp, never
// from the library's kernels.

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
#include "failure_shapes.hpp"
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

// MPI moves a large message only inside MPI calls: a rank that polls Work::is_completed()
// instead of waiting must drive that progress, or both sides would spin forever.
TEST_F(MpiBackend, PollingIsCompletedMovesALargeMessage) {
  Comm c = world();
  SKIP_UNLESS_MULTI_RANK(c);
  if (c.rank > 1) return;
  const int64_t n = 1 << 20;  // 4 MiB: past every eager limit
  Tensor t = Tensor::zeros({n}, DType::Float32);
  if (c.rank == 0) {
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i % 1000);
  }
  OpRequest r = c.rank == 0 ? request(OpKind::Send, {t}, {}) : request(OpKind::Recv, {}, {t});
  r.root = 1 - c.rank;
  Work w = c.submit(std::move(r));
  while (!w.is_completed()) {
  }
  w.wait();
  if (c.rank == 1) {
    std::vector<float> got = t.to_vector<float>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i)
      wrong += got[static_cast<size_t>(i)] != static_cast<float>(i % 1000);
    EXPECT_EQ(wrong, 0);
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
    EXPECT_TRUE(Contains(text, "backend_mpi_p2p_test.cpp:"));
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
        EXPECT_TRUE(matches(e.what(), timeout_shape(0, "150 ms", "barrier", "world/all",
                                                    "backend_mpi_p2p_test.cpp:")))
            << e.what();
        EXPECT_TRUE(Contains(e.what(), "MPI cannot tell which ranks have not arrived"));
      }
    }
    try {
      sub.run(request(OpKind::Barrier, {}, {}));
      FAIL() << "expected BackendError";
    } catch (const BackendError& e) {
      EXPECT_TRUE(matches(e.what(), failed_earlier_shape("barrier", "world/all"))) << e.what();
      EXPECT_TRUE(Contains(e.what(), "rank 0's barrier timed out at backend_mpi_p2p_test.cpp:"));
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
  // On every rank, naming who asks for which list.
  std::vector<int> others;
  for (int r = 0; r + 1 < c.size; ++r) others.push_back(r);
  const std::string last = fmt::format("[{}]", c.size - 1);
  const std::string rest = fmt::format("[{}]", fmt::join(others, ", "));
  const bool is_last = c.rank == c.size - 1;
  try {
    c.run(std::move(disagree));
    ADD_FAILURE() << "new_group disagreement: no Mismatch";
  } catch (const Mismatch& e) {
    const std::string expected =
        fmt::format("ranks {} ask for this rank's member list and ranks {} for another",
                    is_last ? last : rest, is_last ? rest : last);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
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
  (void)c.submit(request(OpKind::AllReduce, {dropped}, {dropped}));
  c.run(request(OpKind::Barrier, {}, {}));
  c.run(request(OpKind::Barrier, {}, {}));
}

}  // namespace
}  // namespace ranks::testing
