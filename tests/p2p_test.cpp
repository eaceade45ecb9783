// Point-to-point: send/recv and isend/irecv, tags, any_source, MPI's non-overtaking order, rings,
// zero-element messages, every dtype, sub-groups (group ranks), and a mismatched matched pair.

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

std::string site(int line) { return fmt::format("p2p_test.cpp:{}", line); }

TEST(P2P, BlockingSendRecvReturnsTheSender) {
  run_ranks(2, [] {
    if (get_rank() == 0) {
      send(Tensor::of<int64_t>({11, -22, 33}), 1);
    } else {
      Tensor t = Tensor::zeros({3}, DType::Int64);
      int src = recv(t, 0);
      EXPECT_EQ(src, 0);
      EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{11, -22, 33}));
    }
  });
}

TEST(P2P, IsendIrecvCompleteOnWait) {
  run_ranks(2, [] {
    int rank = get_rank();
    Tensor mine = Tensor::of<float>({static_cast<float>(rank) + 0.5f, 7.0f});
    Tensor theirs = Tensor::zeros({2}, DType::Float32);
    // Both ranks post the receive first: with blocking calls this order would deadlock.
    Work r = irecv(theirs, 1 - rank);
    Work s = isend(mine, 1 - rank);
    r.wait();
    s.wait();
    EXPECT_TRUE(r.is_completed());
    EXPECT_TRUE(s.is_completed());
    EXPECT_EQ(r.exception(), nullptr);
    EXPECT_EQ(s.exception(), nullptr);
    EXPECT_EQ(r.source_rank(), 1 - rank);
    EXPECT_EQ(theirs.to_vector<float>(),
              (std::vector<float>{static_cast<float>(1 - rank) + 0.5f, 7.0f}));
  });
}

TEST(P2P, RecvForALaterTagSkipsEarlierMessages) {
  // Both messages are already waiting when the receives are posted, in the other tag order.
  run_ranks(2, [] {
    if (get_rank() == 0) {
      Tensor one = Tensor::of<int32_t>({1});
      Tensor two = Tensor::of<int32_t>({2});
      Work a = isend(one, 1, {}, /*tag=*/1);
      Work b = isend(two, 1, {}, /*tag=*/2);
      barrier();
      a.wait();
      b.wait();
    } else {
      barrier();
      Tensor t = Tensor::zeros({1}, DType::Int32);
      EXPECT_EQ(recv(t, 0, {}, /*tag=*/2), 0);
      EXPECT_EQ(t.item<int32_t>(), 2);
      EXPECT_EQ(recv(t, 0, {}, /*tag=*/1), 0);
      EXPECT_EQ(t.item<int32_t>(), 1);
    }
  });
}

TEST(P2P, SendsMatchPostedReceivesByTag) {
  // The receives are posted first (tag 2 before tag 1); each send must pick the one with its tag.
  run_ranks(2, [] {
    if (get_rank() == 1) {
      Tensor for_two = Tensor::zeros({1}, DType::Int32);
      Tensor for_one = Tensor::zeros({1}, DType::Int32);
      Work two = irecv(for_two, 0, {}, /*tag=*/2);
      Work one = irecv(for_one, 0, {}, /*tag=*/1);
      barrier();
      one.wait();
      two.wait();
      EXPECT_EQ(for_one.item<int32_t>(), 100);
      EXPECT_EQ(for_two.item<int32_t>(), 200);
    } else {
      barrier();
      send(Tensor::of<int32_t>({100}), 1, {}, /*tag=*/1);
      send(Tensor::of<int32_t>({200}), 1, {}, /*tag=*/2);
    }
  });
}

TEST(P2P, AnySourceRecvReturnsEachSender) {
  const int n = 5;
  run_ranks(n, [] {
    int rank = get_rank();
    if (rank != 0) {
      send(Tensor::of<int64_t>({rank * 10}), 0, {}, /*tag=*/3);
      return;
    }
    std::set<int> senders;
    for (int k = 1; k < n; ++k) {
      Tensor t = Tensor::zeros({1}, DType::Int64);
      int src = recv(t, any_source, {}, /*tag=*/3);
      EXPECT_EQ(t.item<int64_t>(), src * 10) << "the data came from another rank than reported";
      senders.insert(src);
    }
    EXPECT_EQ(senders, (std::set<int>{1, 2, 3, 4}));
  });
}

TEST(P2P, IrecvAnySourceReportsSourceRank) {
  // Reading source_rank() before the receive completes is an unwaited_work hazard; here it
  // checks what such a read gives.
  sim::Options options = default_options();
  options.accept = {"unwaited_work"};
  run_ranks(3, [] {
    int rank = get_rank();
    if (rank == 0) {
      Tensor t = Tensor::zeros({1}, DType::Int64);
      Work w = irecv(t);  // any_source, tag 0
      EXPECT_EQ(w.source_rank(), -1) << "nothing has been received yet";
      w.wait();
      EXPECT_EQ(w.source_rank(), 2);
      EXPECT_EQ(t.item<int64_t>(), 42);
      barrier();
    } else if (rank == 1) {
      barrier();  // rank 1 sends nothing, so the message can only come from rank 2
    } else {
      send(Tensor::of<int64_t>({42}), 0);
      barrier();
    }
  }, options);
}

TEST(P2P, MessagesFromOneSourceWithOneTagArriveInOrder) {
  // MPI's non-overtaking rule, under FIFO and several seeded schedules, for a named source and
  // for any_source.
  for (uint64_t seed : {0, 1, 2, 3, 17}) {
    for (int from : {0, any_source}) {
      SCOPED_TRACE(fmt::format("seed {} source {}", seed, from));
      sim::Options options = default_options();
      options.seed = seed;
      run_ranks(
          2,
          [from] {
            const int count = 6;
            if (get_rank() == 0) {
              std::vector<Tensor> messages;
              std::vector<Work> works;
              for (int k = 0; k < count; ++k) {
                messages.push_back(Tensor::of<int32_t>({k}));
                works.push_back(isend(messages.back(), 1, {}, /*tag=*/5));
              }
              for (Work& w : works) w.wait();
            } else {
              for (int k = 0; k < count; ++k) {
                Tensor t = Tensor::zeros({1}, DType::Int32);
                EXPECT_EQ(recv(t, from, {}, /*tag=*/5), 0);
                EXPECT_EQ(t.item<int32_t>(), k);
              }
            }
          },
          options);
    }
  }
}

TEST(P2P, RingExchangeWithIsendAndRecv) {
  for (int n : {2, 3, 7, 64}) {
    SCOPED_TRACE(fmt::format("world size {}", n));
    run_ranks(n, [n] {
      int rank = get_rank();
      int right = (rank + 1) % n;
      int left = (rank + n - 1) % n;
      Tensor out = Tensor::of<int64_t>({rank, rank * rank, -rank});
      Work w = isend(out, right);
      Tensor in = Tensor::zeros({3}, DType::Int64);
      EXPECT_EQ(recv(in, left), left);
      w.wait();
      EXPECT_EQ(in.to_vector<int64_t>(), (std::vector<int64_t>{left, left * left, -left}));
    });
  }
}

TEST(P2P, ZeroElementMessages) {
  run_ranks(2, [] {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{0}, std::vector<int64_t>{3, 0}}) {
      if (get_rank() == 0) {
        send(Tensor::empty(shape, DType::Float32), 1, {}, /*tag=*/4);
      } else {
        Tensor t = Tensor::empty(shape, DType::Float32);
        EXPECT_EQ(recv(t, any_source, {}, /*tag=*/4), 0);
        EXPECT_EQ(t.numel(), 0);
        EXPECT_EQ(t.shape(), shape);
      }
    }
  });
}

TEST(P2P, EveryDtypeRoundTripsExactly) {
  for (DType dtype : all_dtypes) {
    SCOPED_TRACE(dtype_name(dtype));
    run_ranks(2, [dtype] {
      const int64_t count = 37;
      // Values in [-100, 150]: exact in every float dtype, wrapping in the small integers.
      auto value = [](int64_t i) { return (i * 37) % 251 - 100; };
      if (get_rank() == 0) {
        send(make_tensor(dtype, count, value), 1);
      } else {
        Tensor t = Tensor::zeros({count}, dtype);
        recv(t, 0);
        EXPECT_EQ(t.dtype(), dtype);
        EXPECT_TRUE(t.equal(make_tensor(dtype, count, value))) << "bytes differ";
        auto got = values(t);
        for (int64_t i = 0; i < count; ++i) {
          EXPECT_EQ(got[static_cast<size_t>(i)], stored(dtype, value(i))) << "element " << i;
        }
      }
    });
  }
}

TEST(P2P, CudaTaggedTensorsTravelToo) {
  sim::Options nccl = default_options();
  nccl.backend = "nccl";  // the backend whose send/recv take cuda tensors
  run_ranks(
      2,
      [] {
        if (get_rank() == 0) {
          send(Tensor::of<float>({1.5f, -2.5f}, comm_device()), 1);
        } else {
          Tensor t = Tensor::zeros({2}, DType::Float32, comm_device());
          recv(t, 0);
          EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.5f}));
        }
      },
      nccl);
}

TEST(P2P, SubGroupUsesGroupRanks) {
  // Group {1, 3, 5} of 6 ranks: group ranks 0, 1, 2 are global ranks 1, 3, 5.
  run_ranks(6, [] {
    int rank = get_rank();
    Group g = new_group({5, 1, 3});
    if (!g.is_member()) return;
    if (g.rank() == 0) {  // global 1 -> group rank 2 (global 5)
      send(Tensor::of<int32_t>({rank}), 2, g);
    } else if (g.rank() == 1) {  // global 3 -> group rank 2 (global 5), on another tag
      send(Tensor::of<int32_t>({rank}), 2, g, /*tag=*/9);
    } else {
      EXPECT_EQ(rank, 5);
      Tensor t = Tensor::zeros({1}, DType::Int32);
      EXPECT_EQ(recv(t, 0, g), 0) << "recv returns the group rank, not the global rank";
      EXPECT_EQ(t.item<int32_t>(), 1);
      EXPECT_EQ(recv(t, any_source, g, /*tag=*/9), 1);
      EXPECT_EQ(t.item<int32_t>(), 3);
    }
  });
}

TEST(P2P, SubGroupAndWorldMessagesDoNotMix) {
  // The same pair talks on the world and on a group with the same tag: each recv gets its own.
  run_ranks(3, [] {
    int rank = get_rank();
    Group g = new_group({1, 2});
    if (rank == 1) {
      Tensor world_msg = Tensor::of<int32_t>({111});
      Tensor group_msg = Tensor::of<int32_t>({222});
      Work a = isend(world_msg, 2);
      Work b = isend(group_msg, 1, g);  // group rank 1 is global 2
      a.wait();
      b.wait();
    } else if (rank == 2) {
      Tensor t = Tensor::zeros({1}, DType::Int32);
      EXPECT_EQ(recv(t, 0, g), 0);
      EXPECT_EQ(t.item<int32_t>(), 222);
      EXPECT_EQ(recv(t, 1), 1);
      EXPECT_EQ(t.item<int32_t>(), 111);
    }
  });
}

TEST(P2P, SizeMismatchNamesBothCallSites) {
  int send_line = 0, recv_line = 0;
  sim::Report report = simulate(2, [&] {
    if (get_rank() == 0) {
      send_line = __LINE__ + 1;
      send(Tensor::zeros({4}, DType::Float32), 1);
    } else {
      Tensor t = Tensor::zeros({5}, DType::Float32);
      recv_line = __LINE__ + 1;
      recv(t, 0);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Mismatch) << report.to_text();
  EXPECT_TRUE(Contains(report.message, site(send_line)));
  EXPECT_TRUE(Contains(report.message, site(recv_line)));
  EXPECT_TRUE(Contains(report.message, "float32[4]"));
  EXPECT_TRUE(Contains(report.message, "float32[5]"));
  ASSERT_EQ(report.ranks.size(), 2u);
  for (const auto& row : report.ranks) EXPECT_EQ(row.state, "failed") << row.rank;
}

TEST(P2P, DtypeMismatchNamesBothCallSites) {
  int send_line = 0, recv_line = 0;
  bool caught = false;
  sim::Report report = simulate(2, [&] {
    if (get_rank() == 0) {
      Tensor t = Tensor::zeros({3}, DType::Int32);
      recv_line = __LINE__ + 1;
      Work w = irecv(t, 1, {}, /*tag=*/6);
      try {
        w.wait();
      } catch (const Mismatch&) {
        caught = true;
        throw;
      }
    } else {
      send_line = __LINE__ + 1;
      send(Tensor::zeros({3}, DType::Float32), 0, {}, /*tag=*/6);
    }
  });
  EXPECT_TRUE(caught) << "irecv's wait() rethrows the Mismatch";
  EXPECT_EQ(report.outcome, sim::Outcome::Mismatch) << report.to_text();
  EXPECT_TRUE(Contains(report.message, site(send_line)));
  EXPECT_TRUE(Contains(report.message, site(recv_line)));
  EXPECT_TRUE(Contains(report.message, "int32[3]"));
  EXPECT_TRUE(Contains(report.message, "float32[3]"));
}

// NCCL ignores tags: two ranks' messages pair in the order they were posted. Under the nccl
// rules the simulator pairs them that way too, and a pair whose tags differ (the program meant
// another message) is a Mismatch, where real NCCL would deliver the wrong one silently.
TEST(P2P, UnderNcclRulesTagsDoNotReorderMessages) {
  sim::Options nccl = default_options();
  nccl.backend = "nccl";
  auto reordered = [] {
    Tensor a = Tensor::zeros({2}, DType::Float32, comm_device());
    Tensor b = Tensor::zeros({2}, DType::Float32, comm_device());
    if (get_rank() == 0) {
      Work first = isend(a, 1, {}, /*tag=*/1);
      Work second = isend(b, 1, {}, /*tag=*/2);
      first.wait();
      second.wait();
    } else {
      recv(b, 0, {}, /*tag=*/2);
      recv(a, 0, {}, /*tag=*/1);
    }
  };
  sim::Report report = simulate(2, reordered, nccl);
  EXPECT_EQ(report.outcome, sim::Outcome::Mismatch) << report.to_text();
  EXPECT_TRUE(Contains(report.to_text(), "nccl ignores tags, so rank 0's send (tag 1)"));
  EXPECT_TRUE(Contains(report.to_text(), "which expects tag 2 at p2p_test.cpp:"));
  // Tags select messages on gloo (and mpi): the same program is fine there.
  sim::Options gloo = default_options();
  gloo.backend = "gloo";
  EXPECT_EQ(simulate(2, reordered, gloo).outcome, sim::Outcome::Ok);
  // In posting order, tags that agree are fine under nccl rules.
  run_ranks(
      2,
      [] {
        Tensor t = Tensor::of<float>({1.0f, 2.0f}, Device::cuda(get_local_rank()));
        if (get_rank() == 0) {
          send(t, 1, {}, 1);
          send(t, 1, {}, 2);
        } else {
          recv(t, 0, {}, 1);
          recv(t, 0, {}, 2);
          EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
        }
      },
      nccl);
}

TEST(P2P, SendWithNoMatchingRecvIsADeadlock) {
  // gloo's rules: under Open MPI's, rank 0's 4 bytes would go eagerly (a buffering hazard) and
  // only rank 1 would be left blocked.
  sim::Report report = simulate(2, [] {
    if (get_rank() == 0) send(Tensor::zeros({1}, DType::Int32), 1, {}, /*tag=*/8);
    // Rank 1 receives on another tag, so neither can finish.
    if (get_rank() == 1) {
      Tensor t = Tensor::zeros({1}, DType::Int32);
      recv(t, 0, {}, /*tag=*/7);
    }
  }, options_for("gloo"));
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.ranks[0].op, "send");
  EXPECT_EQ(report.ranks[1].op, "recv");
  EXPECT_TRUE(Contains(report.message, "tag 8"));
  EXPECT_TRUE(Contains(report.message, "tag 7"));
}

}  // namespace
}  // namespace ranks::testing
