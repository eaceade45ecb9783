// Bad arguments give a clear InvalidArgument — never a crash, a hang or garbage — whose message
// carries the valid range and the call site; and the error hierarchy. Each check runs inside the
// simulator (caught in the body, so the run stays ok), and an uncaught error makes the run's
// outcome Error with the message in the failing rank's row.

#include <fmt/format.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "harness.hpp"
#include "invalid_argument.hpp"
#include "ranks/backends/join.hpp"
#include "ranks/store/stores.hpp"

namespace ranks::testing {
namespace {

std::string site(int line) { return fmt::format("errors_test.cpp:{}", line); }

constexpr int kWorld = 4;

// Runs body on kWorld ranks, then a world all_reduce that proves every rank is still in step (a
// rejected call must not have consumed a sequence number or left a half-posted operation).
void run_and_resync(const std::function<void()>& body) {
  run_ranks(kWorld, [&] {
    body();
    Tensor t = Tensor::of<int64_t>({1});
    all_reduce(t);
    EXPECT_EQ(t.item<int64_t>(), kWorld);
  });
}

TEST(Errors, RootOutOfRangeNamesTheRangeAndCallSite) {
  run_and_resync([] {
    Tensor t = Tensor::of<float>({1.0f});
    int line = 0;
    std::string m;

    line = __LINE__ + 1;
    m = invalid_argument([&] { broadcast(t, kWorld); });
    EXPECT_TRUE(Contains(m, "src 4"));
    EXPECT_TRUE(Contains(m, "[0, 4)"));
    EXPECT_TRUE(Contains(m, site(line)));
    EXPECT_TRUE(Contains(m, "broadcast"));

    line = __LINE__ + 1;
    m = invalid_argument([&] { broadcast(t, -1); });
    EXPECT_TRUE(Contains(m, "src -1"));
    EXPECT_TRUE(Contains(m, "[0, 4)"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { reduce(t, 7); });
    EXPECT_TRUE(Contains(m, "dst 7"));
    EXPECT_TRUE(Contains(m, "[0, 4)"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { gather(t, -3); });
    EXPECT_TRUE(Contains(m, "dst -3"));
    EXPECT_TRUE(Contains(m, site(line)));

    std::vector<Tensor> pieces(kWorld, Tensor::of<float>({0.0f}));
    line = __LINE__ + 1;
    m = invalid_argument([&] { scatter(t, pieces, kWorld); });
    EXPECT_TRUE(Contains(m, "src 4"));
    EXPECT_TRUE(Contains(m, site(line)));

    // A sub-group's range is the group's size, not the world's.
    Group g = new_group({1, 2});
    if (g.is_member()) {
      line = __LINE__ + 1;
      m = invalid_argument([&] { broadcast(t, 2, g); });
      EXPECT_TRUE(Contains(m, "[0, 2)"));
      EXPECT_TRUE(Contains(m, "world/1,2"));
      EXPECT_TRUE(Contains(m, site(line)));
    }
    EXPECT_EQ(t.item<float>(), 1.0f) << "a rejected call wrote the tensor";
  });
}

// Object collectives check their root before anything is sent: a small gather_object travels
// in an all_gather, which has no root of its own to check.
TEST(Errors, ObjectCollectivesCheckTheirRoot) {
  run_and_resync([] {
    int line = 0;
    std::string m;
    const std::string small = "x";
    const std::string large(1 << 20, 'y');  // past the size that travels in one all_gather

    line = __LINE__ + 1;
    m = invalid_argument([&] { gather_object(small, kWorld); });
    EXPECT_TRUE(Contains(m, "gather_object on group 'world'")) << m;
    EXPECT_TRUE(Contains(m, "dst 4 is out of range [0, 4)")) << m;
    EXPECT_TRUE(Contains(m, site(line))) << m;

    m = invalid_argument([&] { gather_object(small, -1); });
    EXPECT_TRUE(Contains(m, "dst -1")) << m;
    m = invalid_argument([&] { gather_object(large, -1); });
    EXPECT_TRUE(Contains(m, "dst -1")) << m;
    m = invalid_argument([&] { gather_object(large, kWorld + 5); });
    EXPECT_TRUE(Contains(m, "dst 9")) << m;

    std::vector<std::string> objects = {small};
    line = __LINE__ + 1;
    m = invalid_argument([&] { broadcast_object_list(objects, kWorld); });
    EXPECT_TRUE(Contains(m, "src 4")) << m;
    EXPECT_TRUE(Contains(m, site(line))) << m;
    EXPECT_EQ(objects, std::vector<std::string>{small});
  });
}

TEST(Errors, PeerOutOfRangeSelfAndNegativeTag) {
  run_and_resync([] {
    const int rank = get_rank();
    Tensor t = Tensor::of<int32_t>({5});
    int line = 0;
    std::string m;

    line = __LINE__ + 1;
    m = invalid_argument([&] { send(t, kWorld); });
    EXPECT_TRUE(Contains(m, "dst 4"));
    EXPECT_TRUE(Contains(m, "[0, 4)"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { (void)isend(t, -1); });
    EXPECT_TRUE(Contains(m, "dst -1"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { recv(t, kWorld + 3); });
    EXPECT_TRUE(Contains(m, "src 7"));
    EXPECT_TRUE(Contains(m, "[0, 4)"));
    EXPECT_TRUE(Contains(m, site(line)));

    // -1 is any_source; -2 is not.
    line = __LINE__ + 1;
    m = invalid_argument([&] { (void)irecv(t, -2); });
    EXPECT_TRUE(Contains(m, "src -2"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { send(t, rank); });
    EXPECT_TRUE(Contains(m, "itself"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { recv(t, rank); });
    EXPECT_TRUE(Contains(m, "itself"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { send(t, (rank + 1) % kWorld, {}, -1); });
    EXPECT_TRUE(Contains(m, "tag -1"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { recv(t, any_source, {}, -5); });
    EXPECT_TRUE(Contains(m, "tag -5"));
    EXPECT_TRUE(Contains(m, site(line)));
    EXPECT_EQ(t.item<int32_t>(), 5);
  });
}

TEST(Errors, ListsOfTheWrongSize) {
  run_and_resync([] {
    const int rank = get_rank();
    Tensor one = Tensor::of<float>({1.0f});
    std::vector<Tensor> three(3, Tensor::of<float>({0.0f}));
    int line = 0;
    std::string m;

    // scatter: src is given 3 pieces for 4 ranks; the others were given a list they must not have.
    line = __LINE__ + 1;
    m = invalid_argument([&] { scatter(one, three, 0); });
    EXPECT_TRUE(Contains(m, site(line)));
    EXPECT_TRUE(Contains(m, rank == 0 ? "has 3 tensors" : "only src 0 sends"));

    std::vector<Tensor> out3(3, Tensor::of<float>({0.0f}));
    line = __LINE__ + 1;
    m = invalid_argument([&] { (void)all_gather_async(out3, one); });
    EXPECT_TRUE(Contains(m, "has 3 tensors"));
    EXPECT_TRUE(Contains(m, "(4)"));
    EXPECT_TRUE(Contains(m, site(line)));

    line = __LINE__ + 1;
    m = invalid_argument([&] { reduce_scatter(one, three); });
    EXPECT_TRUE(Contains(m, "has 3 tensors"));
    EXPECT_TRUE(Contains(m, site(line)));

    std::vector<Tensor> out4(4, Tensor::of<float>({0.0f}));
    line = __LINE__ + 1;
    m = invalid_argument([&] { all_to_all(out4, three); });
    EXPECT_TRUE(Contains(m, "the input list has 3 tensors"));
    EXPECT_TRUE(Contains(m, site(line)));

    std::vector<Tensor> in4(4, Tensor::of<float>({2.0f}));
    line = __LINE__ + 1;
    m = invalid_argument([&] { all_to_all(out3, in4); });
    EXPECT_TRUE(Contains(m, "the output list has 3 tensors"));
    EXPECT_TRUE(Contains(m, site(line)));

    // gather: dst's output list has the wrong size; the others must pass none at all.
    std::vector<Tensor> gathered = out3;
    line = __LINE__ + 1;
    m = invalid_argument([&] { (void)gather_async(gathered, one, 0); });
    EXPECT_TRUE(Contains(m, rank == 0 ? "has 3 tensors" : "only dst 0 receives"));
    EXPECT_TRUE(Contains(m, site(line)));
  });
}

TEST(Errors, OutputListsWithTheWrongDtype) {
  run_and_resync([] {
    Tensor in = Tensor::of<int64_t>({1, 2});
    int line = 0;
    std::string m;

    std::vector<Tensor> mixed(kWorld, Tensor::zeros({2}, DType::Int64));
    mixed[2] = Tensor::zeros({2}, DType::Float32);
    line = __LINE__ + 1;
    m = invalid_argument([&] { (void)all_gather_async(mixed, in); });
    EXPECT_TRUE(Contains(m, "the output list[2]"));
    EXPECT_TRUE(Contains(m, "float32"));
    EXPECT_TRUE(Contains(m, "int64"));
    EXPECT_TRUE(Contains(m, site(line)));

    std::vector<Tensor> reduce_in(kWorld, Tensor::zeros({2}, DType::Int64));
    reduce_in[1] = Tensor::zeros({2}, DType::Int32);
    Tensor out = Tensor::zeros({2}, DType::Int64);
    line = __LINE__ + 1;
    m = invalid_argument([&] { reduce_scatter(out, reduce_in); });
    EXPECT_TRUE(Contains(m, "the input list[1]"));
    EXPECT_TRUE(Contains(m, "int32"));
    EXPECT_TRUE(Contains(m, site(line)));

    std::vector<Tensor> a2a_in(kWorld, Tensor::zeros({1}, DType::Int64));
    std::vector<Tensor> a2a_out(kWorld, Tensor::zeros({1}, DType::Int64));
    a2a_out[3] = Tensor::zeros({1}, DType::Float64);
    line = __LINE__ + 1;
    m = invalid_argument([&] { all_to_all(a2a_out, a2a_in); });
    EXPECT_TRUE(Contains(m, "the output list[3]"));
    EXPECT_TRUE(Contains(m, "float64"));
    EXPECT_TRUE(Contains(m, site(line)));

    std::vector<Tensor> a2a_mixed_in = a2a_in;
    a2a_mixed_in[0] = Tensor::zeros({1}, DType::UInt8);
    line = __LINE__ + 1;
    m = invalid_argument([&] { all_to_all(a2a_out, a2a_mixed_in); });
    EXPECT_TRUE(Contains(m, "mixes"));
    EXPECT_TRUE(Contains(m, site(line)));
  });
}

// torch refuses AVG on bool; a "mean" of truth values would silently be an OR.
TEST(Errors, MeanOfBoolTensors) {
  run_and_resync([] {
    Tensor t = Tensor::of<bool>({true, false});
    Tensor before = t.clone();
    int line = __LINE__ + 1;
    std::string m = invalid_argument([&] { all_reduce(t, "mean"); });
    EXPECT_TRUE(Contains(m, "reduce op 'mean' is not defined for bool tensors")) << m;
    EXPECT_TRUE(Contains(m, site(line)));
    m = invalid_argument([&] { reduce(t, 0, ReduceOp::Mean); });
    EXPECT_TRUE(Contains(m, "'mean'"));
    std::vector<Tensor> in(kWorld, t);
    m = invalid_argument([&] { reduce_scatter(t, in, ReduceOp::Mean); });
    EXPECT_TRUE(Contains(m, "'mean'"));
    EXPECT_TRUE(t.equal(before)) << "a rejected call wrote the tensor";
  });
}

TEST(Errors, BitwiseOpsOnFloatingTensors) {
  run_and_resync([] {
    for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
      SCOPED_TRACE(dtype_name(dtype));
      Tensor t = make_tensor(dtype, 3, [](int64_t i) { return i + 1; });
      Tensor before = t.clone();
      int line = 0;
      std::string m;

      line = __LINE__ + 1;
      m = invalid_argument([&] { all_reduce(t, ReduceOp::BAnd); });
      EXPECT_TRUE(Contains(m, "band"));
      EXPECT_TRUE(Contains(m, std::string(dtype_name(dtype))));
      EXPECT_TRUE(Contains(m, site(line)));

      line = __LINE__ + 1;
      m = invalid_argument([&] { all_reduce(t, "bxor"); });
      EXPECT_TRUE(Contains(m, "bxor"));
      EXPECT_TRUE(Contains(m, site(line)));

      m = invalid_argument([&] { all_reduce(t, "BOR"); });  // names are case-insensitive
      EXPECT_TRUE(Contains(m, "bor"));
      m = invalid_argument([&] { reduce(t, 0, ReduceOp::BOr); });
      EXPECT_TRUE(Contains(m, "bor"));
      std::vector<Tensor> in(kWorld, t);
      m = invalid_argument([&] { reduce_scatter(t, in, ReduceOp::BXor); });
      EXPECT_TRUE(Contains(m, "bxor"));
      EXPECT_TRUE(t.equal(before)) << "a rejected call wrote the tensor";
    }
  });
}

TEST(Errors, UnknownReduceOpString) {
  run_and_resync([] {
    Tensor t = Tensor::of<int32_t>({3});
    std::string m = invalid_argument([&] { all_reduce(t, "average"); });
    EXPECT_TRUE(Contains(m, "average"));
    EXPECT_TRUE(Contains(m, "sum, mean, product, min, max, band, bor, bxor"));
    invalid_argument([&] { all_reduce(t, ""); });
    invalid_argument([&] { all_reduce(t, "sum "); });
    EXPECT_EQ(t.item<int32_t>(), 3);
    EXPECT_THROW(parse_reduce_op("avg"), InvalidArgument);
    EXPECT_EQ(parse_reduce_op("MaX"), ReduceOp::Max);
  });
}

TEST(Errors, DataWithTheWrongElementType) {
  Tensor t = Tensor::of<int64_t>({1, 2});
  std::string m = invalid_argument([&] { t.data<float>(); });
  EXPECT_TRUE(Contains(m, "int64"));
  EXPECT_TRUE(Contains(m, "float32"));
  invalid_argument([&] { t.data<int32_t>(); });
  invalid_argument([&] { t.to_vector<double>(); });
  invalid_argument([&] { t.item<int64_t>(); });  // two elements, not a scalar
  const Tensor& c = t;
  invalid_argument([&] { c.data<uint8_t>(); });
  EXPECT_EQ(t.data<int64_t>()[1], 2);
}

TEST(Errors, UndefinedTensors) {
  run_and_resync([] {
    const int rank = get_rank();
    Tensor undefined;
    ASSERT_FALSE(undefined.defined());
    int line = 0;
    std::string m;

    line = __LINE__ + 1;
    m = invalid_argument([&] { all_reduce(undefined); });
    EXPECT_TRUE(Contains(m, "undefined"));
    EXPECT_TRUE(Contains(m, site(line)));

    m = invalid_argument([&] { broadcast(undefined, 0); });
    EXPECT_TRUE(Contains(m, "undefined"));
    m = invalid_argument([&] { all_gather(undefined); });
    EXPECT_TRUE(Contains(m, "undefined"));
    m = invalid_argument([&] { gather(undefined, 0); });
    EXPECT_TRUE(Contains(m, "undefined"));
    m = invalid_argument([&] { reduce(undefined, 0); });
    EXPECT_TRUE(Contains(m, "undefined"));
    m = invalid_argument([&] { send(undefined, (rank + 1) % kWorld); });
    EXPECT_TRUE(Contains(m, "undefined"));
    m = invalid_argument([&] { recv(undefined); });
    EXPECT_TRUE(Contains(m, "undefined"));

    // An undefined tensor inside a list.
    std::vector<Tensor> list(kWorld, Tensor::of<float>({0.0f}));
    list[1] = Tensor();
    Tensor out = Tensor::of<float>({0.0f});
    m = invalid_argument([&] { reduce_scatter(out, list); });
    EXPECT_TRUE(Contains(m, "the input list[1]"));
    EXPECT_TRUE(Contains(m, "undefined"));
    std::vector<Tensor> a2a_out(kWorld, Tensor::of<float>({0.0f}));
    m = invalid_argument([&] { all_to_all(a2a_out, list); });
    EXPECT_TRUE(Contains(m, "undefined"));
    std::vector<Tensor> full(kWorld, Tensor::of<float>({0.0f}));
    m = invalid_argument([&] { all_to_all(list, full); });
    EXPECT_TRUE(Contains(m, "undefined"));
    m = invalid_argument([&] { scatter(undefined, full, 0); });
    EXPECT_TRUE(Contains(m, "undefined"));
  });
}

TEST(Errors, HierarchyAndKinds) {
  static_assert(std::is_base_of_v<std::runtime_error, Error>);
  auto round_trip = [&](auto error, const char* kind) {
    using E = decltype(error);
    static_assert(std::is_base_of_v<Error, E>);
    static_assert(std::is_base_of_v<std::runtime_error, E>);
    try {
      throw error;
    } catch (const Error& e) {
      EXPECT_STREQ(e.kind(), kind);
      EXPECT_STREQ(e.what(), "what happened");
    }
    try {
      throw error;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "what happened");
    }
  };
  round_trip(Error("what happened"), "error");
  round_trip(InvalidArgument("what happened"), "invalid_argument");
  round_trip(Unsupported("what happened"), "unsupported");
  round_trip(Mismatch("what happened"), "mismatch");
  round_trip(Timeout("what happened"), "timeout");
  round_trip(Deadlock("what happened"), "deadlock");
  round_trip(RankFailure("what happened"), "rank_failure");
  round_trip(RendezvousError("what happened"), "rendezvous");
  round_trip(BackendError("what happened"), "backend");
}

TEST(Errors, UncaughtErrorFailsTheRunWithTheMessageInTheRow) {
  int line = 0;
  sim::Report report = simulate(kWorld, [&] {
    if (get_rank() != 2) return;
    Tensor t = Tensor::of<float>({1.0f});
    line = __LINE__ + 1;
    broadcast(t, 9);
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  ASSERT_EQ(report.ranks.size(), static_cast<size_t>(kWorld));
  for (const auto& row : report.ranks) {
    if (row.rank == 2) continue;
    EXPECT_EQ(row.state, "finished") << "rank " << row.rank;
    EXPECT_EQ(row.error, "") << "rank " << row.rank;
  }
  const auto& row = report.ranks[2];
  EXPECT_EQ(row.rank, 2);
  EXPECT_EQ(row.state, "failed");
  EXPECT_TRUE(Contains(row.error, "src 9 is out of range [0, 4)"));
  EXPECT_TRUE(Contains(row.error, site(line)));
  EXPECT_TRUE(Contains(report.message, "src 9 is out of range [0, 4)"));
  auto json = nlohmann::json::parse(report.to_json());
  EXPECT_EQ(json["ranks"][2]["state"], "failed");
  EXPECT_EQ(json["outcome"], "error");
}

TEST(Errors, UncaughtErrorOnEveryRank) {
  sim::Report report = simulate(kWorld, [] {
    Tensor t = Tensor::of<float>({1.0f});
    all_reduce(t, "bxor");
  });
  EXPECT_EQ(report.outcome, sim::Outcome::Error) << report.to_text();
  for (const auto& row : report.ranks) {
    EXPECT_EQ(row.state, "failed") << "rank " << row.rank;
    EXPECT_TRUE(Contains(row.error, "bxor")) << "rank " << row.rank;
  }
}

// gloo and nccl meet in the store before their own bootstrap, so that a rank that never comes
// is named by its global rank instead of surfacing as a timeout inside the library.
TEST(Errors, ARankThatNeverJoinsIsNamed) {
  HashStore store;
  GroupSpec spec{std::make_shared<const std::vector<int>>(std::vector<int>{1, 4, 6}), 0,
                 "world/1,4,6"};
  store.set("joined/1", {1});  // group rank 1 (global 4) came; group rank 2 (global 6) did not
  try {
    backends::join_members(store, spec, std::chrono::milliseconds(20), "gloo: joining");
    ADD_FAILURE() << "join_members returned with a member missing";
  } catch (const RendezvousError& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("gloo: joining: 2/3 ranks joined within 20 ms; missing: 6"),
              std::string::npos)
        << message;
  }
  EXPECT_NO_THROW(store.set("joined/2", {1}));
  EXPECT_NO_THROW(
      backends::join_members(store, spec, std::chrono::milliseconds(20), "gloo: joining"));
}

}  // namespace
}  // namespace ranks::testing
