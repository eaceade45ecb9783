// The hazards a run passes through without failing: a buffer written while its op is in flight,
// a Work never waited (or read before it completed), an exchange that completes only because the
// library buffers it. Each ends the run with outcome hazard naming the rank, op and call site;
// accepting its kind leaves the outcome ok; correct programs that do nearly the same see none.

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

std::string site(int line) { return fmt::format("hazards_test.cpp:{}", line); }

// The report's only hazard, with its kind checked.
const sim::Hazard& only_hazard(const sim::Report& report, const std::string& kind) {
  EXPECT_EQ(report.hazards.size(), 1u) << report.to_text();
  if (report.hazards.empty()) throw std::runtime_error("no hazard: " + report.to_text());
  EXPECT_EQ(report.hazards.front().kind, kind) << report.to_text();
  return report.hazards.front();
}

sim::Options accepting(std::string kind, sim::Options options = default_options()) {
  options.accept.push_back(std::move(kind));
  return options;
}

// --- buffers written while their op is in flight ------------------------------------------

int isend_line = 0;
void write_send_buffer_before_wait() {
  Tensor t = Tensor::of<int32_t>({get_rank(), 7});
  if (get_rank() == 0) {
    isend_line = __LINE__ + 1;
    Work sent = isend(t, 1);
    t.data<int32_t>()[1] = 8;  // the bug: the library may still be reading it
    sent.wait();
  } else {
    recv(t, 0);
  }
}

TEST(BufferInFlight, SendBufferWrittenBeforeTheWaitIsReported) {
  sim::Report report = simulate(2, write_send_buffer_before_wait);
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "buffer_in_flight");
  EXPECT_EQ(hazard.ranks, std::vector<int>{0});
  EXPECT_EQ(hazard.ops, std::vector<std::string>{"send"});
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(isend_line)});
  EXPECT_TRUE(Contains(hazard.message, "a buffer of rank 0's send on group 'world'"));
  EXPECT_TRUE(Contains(hazard.message, "before the op had read or written them"));
  EXPECT_TRUE(Contains(report.message, "all 2 ranks finished, through 1 hazard"));
  EXPECT_TRUE(Contains(report.to_text(), "  hazard buffer_in_flight: a buffer of rank 0's send"));
}

TEST(BufferInFlight, AcceptedItIsListedAndTheOutcomeIsOk) {
  // Accepting the kind also turns its check off: nothing is hashed, nothing listed.
  sim::Report report = simulate(2, write_send_buffer_before_wait, accepting("buffer_in_flight"));
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  EXPECT_TRUE(report.hazards.empty()) << report.to_text();
}

TEST(BufferInFlight, InPlaceAllReduceWrittenBeforeTheLastRankArrived) {
  // The all_reduce reads every rank's tensor when the last arrives; rank 0 arrives first and
  // writes its tensor before then.
  int line = 0;
  sim::Report report = simulate(3, [&] {
    Tensor t = Tensor::of<float>({1.0f});
    line = __LINE__ + 1;
    Work reduced = all_reduce_async(t);
    if (get_rank() == 0) t.data<float>()[0] = 5.0f;
    reduced.wait();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "buffer_in_flight");
  EXPECT_EQ(hazard.ranks, std::vector<int>{0});
  EXPECT_EQ(hazard.ops, std::vector<std::string>{"all_reduce"});
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(line)});
}

TEST(BufferInFlight, ReceiveBufferWrittenBeforeTheMessageArrivedNamesTheWait) {
  int post = 0;
  sim::Report report = simulate(2, [&] {
    Tensor t = Tensor::zeros({4}, DType::Int64);
    if (get_rank() == 1) {
      post = __LINE__ + 1;
      Work received = irecv(t, 0);
      t.data<int64_t>()[0] = 1;  // rank 0 has not sent yet: the message will land on this
      barrier();
      received.wait();
    } else {
      barrier();
      send(t, 1);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "buffer_in_flight");
  EXPECT_EQ(hazard.ranks, std::vector<int>{1});
  EXPECT_EQ(hazard.ops, std::vector<std::string>{"recv"});
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(post)});
}

TEST(BufferInFlight, ResultOverwrittenBetweenCompletionAndWaitNamesTheWait) {
  int wait_line = 0;
  sim::Report report = simulate(2, [&] {
    Tensor t = Tensor::zeros({2}, DType::Float32);
    if (get_rank() == 0) {
      Work received = irecv(t, 1);
      barrier();  // rank 1 sent before the barrier: the receive has completed
      t.data<float>()[1] = 3.0f;
      wait_line = __LINE__ + 1;
      received.wait();
    } else {
      send(t, 0);
      barrier();
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "buffer_in_flight");
  EXPECT_TRUE(Contains(hazard.message, "before its wait at " + site(wait_line)));
}

TEST(BufferInFlight, BuffersLeftAloneUntilTheWaitAreNotReported) {
  // The same shapes done right: written after the wait, read (not written) while in flight, and
  // one tensor sent to two ranks at once.
  run_ranks(3, [] {
    Tensor t = Tensor::of<int32_t>({get_rank(), 1, 2});
    if (get_rank() == 0) {
      Work a = isend(t, 1);
      Work b = isend(t, 2);
      int32_t sum = t.data<int32_t>()[1] + t.data<int32_t>()[2];
      a.wait();
      b.wait();
      t.data<int32_t>()[0] = sum;
    } else {
      recv(t, 0);
    }
    Work reduced = all_reduce_async(t);
    while (!reduced.is_completed()) {
    }
    t.data<int32_t>()[0] = 0;  // is_completed() said true: it counts as the wait
  });
}

// --- Works never waited ---------------------------------------------------------------------

TEST(UnwaitedWork, AWorkDroppedWithoutAWaitIsReported) {
  int line = 0;
  sim::Report report = simulate(2, [&] {
    Tensor t = Tensor::of<float>({1.0f, 2.0f});
    if (get_rank() == 0) {
      line = __LINE__ + 1;
      (void)isend(t, 1);  // dropped: its completion and errors go unseen
    } else {
      recv(t, 0);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "unwaited_work");
  EXPECT_EQ(hazard.ranks, std::vector<int>{0});
  EXPECT_EQ(hazard.ops, std::vector<std::string>{"send"});
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(line)});
  EXPECT_TRUE(Contains(hazard.message, "rank 0 never waited for its send on group 'world'"));
}

TEST(UnwaitedWork, OccurrencesAtOneCallSiteFoldIntoOneEntry) {
  int line = 0;
  sim::Report report = simulate(4, [&] {
    for (int i = 0; i < 5; ++i) {
      Tensor t = Tensor::of<float>({1.0f});
      line = __LINE__ + 1;
      Work reduced = all_reduce_async(t);
      (void)reduced;
    }
    barrier();
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "unwaited_work");
  EXPECT_EQ(hazard.occurrences, 20);
  EXPECT_EQ(hazard.ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(Contains(hazard.message, "(20 times at this call site, on ranks 0, 1, 2, 3)"));
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(line)});
}

TEST(UnwaitedWork, SourceRankReadBeforeTheReceiveCompletedIsReported) {
  int line = 0;
  sim::Report report = simulate(2, [&] {
    Tensor t = Tensor::zeros({1}, DType::Int32);
    if (get_rank() == 0) {
      line = __LINE__ + 1;
      Work received = irecv(t, any_source);
      const int early = received.source_rank();  // not known yet
      received.wait();
      EXPECT_EQ(early, -1);
      EXPECT_EQ(received.source_rank(), 1);
    } else {
      send(t, 0);
    }
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "unwaited_work");
  EXPECT_TRUE(Contains(hazard.message, "read source_rank() of its recv"));
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(line)});
}

// --- exchanges that complete only through buffering ----------------------------------------

int h2h_line = 0;
std::function<void()> head_to_head(int64_t bytes) {
  return [bytes] {
    const int peer = 1 - get_rank();
    Tensor out = Tensor::zeros({bytes}, DType::UInt8, comm_device());
    Tensor in = Tensor::zeros({bytes}, DType::UInt8, comm_device());
    h2h_line = __LINE__ + 1;
    send(out, peer);
    recv(in, peer);
  };
}

TEST(Buffering, HeadToHeadSendsWithinOpenMpisEagerLimitAreAHazard) {
  sim::Report report = simulate(2, head_to_head(16), options_for("mpi"));
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  const sim::Hazard& hazard = only_hazard(report, "buffering");
  EXPECT_EQ(hazard.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(hazard.occurrences, 2);
  EXPECT_EQ(hazard.where, std::vector<std::string>{site(h2h_line)});
  EXPECT_TRUE(Contains(hazard.message, "rank 0's send of 16 B to rank 1 at " + site(h2h_line) +
                                           " completed only because mpi holds a message of up "
                                           "to 4040 B between ranks of one node"));
  EXPECT_TRUE(Contains(hazard.message,
                       "With messages over 4040 B it hangs, and on nccl and "
                       "gloo at any size"));
}

TEST(Buffering, AcrossNodesTheLimitIsTcps) {
  sim::Options options = options_for("mpi");
  options.ranks_per_node = 1;
  sim::Report report = simulate(2, head_to_head(8192), options);
  EXPECT_EQ(report.outcome, sim::Outcome::Hazard) << report.to_text();
  EXPECT_TRUE(Contains(only_hazard(report, "buffering").message, "up to 65480 B between nodes"));
}

TEST(Buffering, AboveTheEagerLimitItIsADeadlock) {
  sim::Report report = simulate(2, head_to_head(4041), options_for("mpi"));
  EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << report.to_text();
  EXPECT_TRUE(report.hazards.empty());
}

TEST(Buffering, GlooAndNcclBufferNothing) {
  for (const char* backend : {"gloo", "nccl"}) {
    sim::Report report = simulate(2, head_to_head(4), options_for(backend));
    EXPECT_EQ(report.outcome, sim::Outcome::Deadlock) << backend << ": " << report.to_text();
  }
}

TEST(Buffering, AcceptedTheRunIsOkAndTheDataArrives) {
  sim::Report report = simulate(
      2,
      [] {
        const int peer = 1 - get_rank();
        Tensor out = Tensor::of<int32_t>({10 + get_rank()});
        Tensor in = Tensor::zeros({1}, DType::Int32);
        send(out, peer);
        out.data<int32_t>()[0] = -1;  // the send has returned: its buffer is the program's again
        recv(in, peer);
        EXPECT_EQ(in.data<int32_t>()[0], 10 + peer);
      },
      accepting("buffering", options_for("mpi")));
  EXPECT_EQ(report.outcome, sim::Outcome::Ok) << report.to_text();
  ASSERT_EQ(report.hazards.size(), 1u);
  EXPECT_TRUE(report.hazards.front().accepted);
  EXPECT_TRUE(Contains(report.to_text(), "  hazard buffering (accepted): rank 0's send"));
  const auto json = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(json["hazards"][0]["kind"], "buffering");
  EXPECT_EQ(json["hazards"][0]["accepted"], true);
  EXPECT_EQ(json["hazards"][0]["ranks"], nlohmann::json({0, 1}));
}

TEST(Buffering, ASafeExchangeNeedsNoBuffering) {
  run_ranks(
      2,
      [] {
        const int peer = 1 - get_rank();
        Tensor out = Tensor::of<int32_t>({get_rank()});
        Tensor in = Tensor::zeros({1}, DType::Int32);
        Work received = irecv(in, peer);
        send(out, peer);
        received.wait();
      },
      options_for("mpi"));
}

TEST(Hazards, AnUnknownKindToAcceptIsRefused) {
  EXPECT_THROW(simulate(
                   2, [] {}, accepting("buffer")),
               InvalidArgument);
}

}  // namespace
}  // namespace ranks::testing
