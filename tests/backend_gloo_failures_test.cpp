// The gloo backend when things go wrong, across real processes (tests/gloo_harness.hpp): dead
// peers, timeouts and missing ranks, each reported on every rank well before its deadline.

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>

#include "failure_shapes.hpp"
#include "gloo_harness.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

// and every later op of the group fails at once.
TEST_F(GlooBackend, KilledPeerFailsTheOthers) {
  const int size = 3;
  Rendezvous rendezvous(Rendezvous::Kind::File, size);
  const auto deadline = std::chrono::milliseconds(15s);
  auto statuses = fork_ranks(size, [&](int rank) {
    auto world = backends::create_world(
        "gloo", setup_for(rank, size, rendezvous.store(rank, deadline), deadline));
    Client c(*world, rank, size, deadline);
    c.run(OpKind::Barrier, {}, {});
    if (rank == 2) raise(SIGKILL);
    Tensor t = row_tensor(DType::Float32, rank, 1000);
    const auto start = Clock::now();
    std::string message;
    bool lost_peer = false;
    try {
      c.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Sum);
      check(false, "all_reduce with a dead peer succeeded");
    } catch (const RankFailure& e) {
      message = e.what();
      lost_peer = true;
    } catch (const Timeout& e) {
      message = e.what();
    }
    check(Clock::now() - start < deadline, "failed before the deadline: " + message);
    // The shape the simulator's survivors get too (FailureShape.OfADeadPeerInTheSimulator).
    check(lost_peer ? matches(message, lost_peer_shape(rank, "all_reduce", "world"))
                    : has(message, "all_reduce on group 'world'"),
          message);
    std::fprintf(stderr, "rank %d saw: %s\n", rank, message.c_str());
    const auto again = Clock::now();
    std::string later = expect_error<Error>([&] { c.run(OpKind::Barrier, {}, {}); }, "later op");
    check(Clock::now() - again < 2s, "a later op fails at once");
    check(has(later, "failed earlier"), later);
  });
  EXPECT_TRUE(WIFSIGNALED(statuses[2]) && WTERMSIG(statuses[2]) == SIGKILL)
      << describe_status(statuses[2]);
  for (int r : {0, 1}) {
    EXPECT_TRUE(WIFEXITED(statuses[static_cast<size_t>(r)]) &&
                WEXITSTATUS(statuses[static_cast<size_t>(r)]) == 0)
        << "rank " << r << ": " << describe_status(statuses[static_cast<size_t>(r)]);
  }
}

// A receive nobody sends times out; the group closes, and the peer, blocked on a receive of its
// own, learns that at once rather than at its deadline.
TEST_F(GlooBackend, RecvNobodySendsTimesOut) {
  Rendezvous rendezvous(Rendezvous::Kind::File, 2);
  expect_all_ok(fork_ranks(2, [&](int rank) {
    auto world =
        backends::create_world("gloo", setup_for(rank, 2, rendezvous.store(rank, kTimeout)));
    Client c(*world, rank, 2);
    c.run(OpKind::Barrier, {}, {});
    Tensor t = Tensor::zeros({4}, DType::Int32);
    const auto start = Clock::now();
    if (rank == 0) {
      Work w = c.submit(OpKind::Recv, {}, {t}, 1, ReduceOp::Sum, 5);
      std::string message = expect_error<Timeout>([&] { w.wait(300ms); }, "recv");
      check(Clock::now() - start >= 300ms, "waited the whole timeout");
      check(matches(message,
                    timeout_shape(0, "300 ms", "recv", "world", "backend_gloo_failures_test.cpp:")),
            message);
      check(has(message, "; rank 1 has sent no message with tag 5; group 'world' is closed"),
            message);
    } else {
      Work w = c.submit(OpKind::Recv, {}, {t}, 0, ReduceOp::Sum, 6);
      std::string message = expect_error<RankFailure>([&] { w.wait(); }, "peer's recv");
      check(Clock::now() - start < kTimeout / 2, "learned before its deadline");
      check(has(message, "rank 0"), message);
    }
  }));
}

// A collective one rank never joins times out on the other, and the peer, waiting on a receive,
// learns that the group closed. Async: through the worker, waited with a deadline. Blocking: run
// on the calling thread when the queue is idle, with the op's own deadline; the error is the
// same, and the group's later ops fail at once. (A two-rank all_reduce is an exchange over both
// of the group's connections, Communicator::reverse_lane: both lanes close.)
void collective_times_out(bool blocking) {
  Rendezvous rendezvous(Rendezvous::Kind::File, 2);
  expect_all_ok(fork_ranks(2, [&](int rank) {
    auto world =
        backends::create_world("gloo", setup_for(rank, 2, rendezvous.store(rank, kTimeout)));
    Client c(*world, rank, 2);
    c.run(blocking, OpKind::Barrier, {}, {});
    Tensor t = Tensor::zeros({4}, DType::Int32);
    if (rank == 0) {
      std::string message;
      if (blocking) {
        c.set_timeout(200ms);
        message = expect_error<Timeout>([&] { c.run(true, OpKind::AllReduce, {t}, {t}); },
                                        "blocking all_reduce");
      } else {
        Work w = c.submit(OpKind::AllReduce, {t}, {t});
        message = expect_error<Timeout>([&] { w.wait(200ms); }, "all_reduce");
        check(w.is_completed() && w.exception() != nullptr,
              "a timed-out Work is completed and holds its error");
      }
      check(matches(message, timeout_shape(0, "200 ms", "all_reduce", "world", "")), message);
      std::string later =
          expect_error<Error>([&] { c.run(blocking, OpKind::Barrier, {}, {}); }, "later op");
      check(matches(later, failed_earlier_shape("barrier", "world")), later);
    } else {
      Work w = c.submit(OpKind::Recv, {}, {t}, 0, ReduceOp::Sum, 6);
      expect_error<RankFailure>([&] { w.wait(); }, "peer's recv");
    }
  }));
}

TEST_F(GlooBackend, CollectiveTimesOut) { collective_times_out(false); }

TEST_F(GlooBackend, BlockingCollectiveTimesOut) { collective_times_out(true); }

// A rank that never comes is named by the rendezvous.
TEST_F(GlooBackend, MissingRankIsNamed) {
  Rendezvous rendezvous(Rendezvous::Kind::File, 3);
  expect_all_ok(fork_ranks(2, [&](int rank) {
    auto store = rendezvous.store(rank, 2s);
    std::string message = expect_error<RendezvousError>(
        [&] { backends::create_world("gloo", setup_for(rank, 3, store, 500ms)); }, "rendezvous");
    check(has(message, "2/3 ranks joined"), message);
    check(has(message, "missing: 2"), message);
  }));
}

// A value under one of gloo's rendezvous keys that no rank of the job wrote (a stranger's write to
// a store without a secret) is named as not the job's, where gloo would decode it as an address
// and fail with a message that does not say so ("address family mismatch").
TEST_F(GlooBackend, RendezvousDataTheJobDidNotWriteIsNamedSo) {
  expect_all_ok(fork_ranks(1, [&](int) {
    auto store = std::make_shared<HashStore>();
    // A stranger posing as rank 1 of 2: it says it joined, and writes an address of its making.
    store->set("gloo/world/joined/1", {1});
    const std::string address = "AF_INET6 [::1]:1 from someone else";
    store->set("gloo/world/1", std::vector<uint8_t>(address.begin(), address.end()));
    std::string message = expect_error<RendezvousError>(
        [&] { backends::create_world("gloo", setup_for(0, 2, store, 5s)); }, "rendezvous");
    check(has(message, "the rendezvous data under key '1' was not the job's"), message);
  }));
}

// A group of two exchanges over two connections, one per direction (Communicator::reverse_lane):
// a peer that dies mid-exchange fails the survivor on whichever connection it was using, and
// closes both, so the next op fails at once.
TEST_F(GlooBackend, KilledPeerFailsATwoRankExchange) {
  Rendezvous rendezvous(Rendezvous::Kind::File, 2);
  const auto deadline = std::chrono::milliseconds(15s);
  auto statuses = fork_ranks(2, [&](int rank) {
    auto world = backends::create_world(
        "gloo", setup_for(rank, 2, rendezvous.store(rank, deadline), deadline));
    Client c(*world, rank, 2, deadline);
    c.run(OpKind::Barrier, {}, {});
    if (rank == 1) raise(SIGKILL);
    Tensor in = Tensor::zeros({1 << 20}, DType::Float32);
    std::vector<Tensor> out = {Tensor::zeros({1 << 20}, DType::Float32),
                               Tensor::zeros({1 << 20}, DType::Float32)};
    const auto start = Clock::now();
    std::string message;
    try {
      c.run(OpKind::AllGather, {in}, out);
      check(false, "all_gather with a dead peer succeeded");
    } catch (const RankFailure& e) {
      message = e.what();
    }
    check(Clock::now() - start < deadline, "failed before the deadline: " + message);
    check(has(message, "all_gather on group 'world'"), message);
    check(has(message, "rank 1"), message);
    std::string later = expect_error<Error>([&] { c.run(OpKind::Barrier, {}, {}); }, "later op");
    check(has(later, "failed earlier"), later);
  });
  EXPECT_TRUE(WIFSIGNALED(statuses[1]) && WTERMSIG(statuses[1]) == SIGKILL)
      << describe_status(statuses[1]);
  EXPECT_TRUE(WIFEXITED(statuses[0]) && WEXITSTATUS(statuses[0]) == 0)
      << describe_status(statuses[0]);
}

}  // namespace
}  // namespace ranks::testing
