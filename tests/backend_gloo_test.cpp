// The gloo backend across real processes: every op of its table on 2, 3 and 4 ranks. Each test
// forks one child per rank; a child makes the world through ranks::backends::create_world("gloo",
// ...) over a shared store, submits requests built as ranks/collectives.cpp builds them, checks
// the results against tests/expected.hpp and reports through its exit status (the parent joins
// every child and expects 0). Failures: backend_gloo_failures_test.cpp.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "gloo_harness.hpp"
#include "ranks/config.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;

// --- the collective body, run by every rank ---------------------------------------------------

void all_reduce_cases(Client& c) {
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product, ReduceOp::Min,
                          ReduceOp::Max, ReduceOp::BAnd, ReduceOp::BOr,     ReduceOp::BXor};
  for (DType dtype : all_dtypes) {
    for (ReduceOp op : ops) {
      if (!reduce_op_supports(op, dtype)) continue;
      for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{17}}) {
        Tensor t =
            make_tensor(dtype, count, [&](int64_t i) { return reduce_input(op, c.rank(), i); });
        c.run(OpKind::AllReduce, {t}, {t}, -1, op);
        std::vector<double> want;
        for (int64_t i = 0; i < count; ++i) {
          want.push_back(expected_reduction(dtype, op, iota_ranks(c.size()),
                                            [&](int r) { return reduce_input(op, r, i); }));
        }
        check_values(
            t, want,
            fmt::format("all_reduce {} {} x{}", dtype_name(dtype), reduce_op_name(op), count));
      }
    }
  }
  // Big enough for gloo to split it into many segments per rank.
  const int64_t big = 300001;
  Tensor t = row_tensor(DType::Float32, c.rank(), big);
  c.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Sum);
  std::vector<double> want(static_cast<size_t>(big), 0.0);
  for (int r = 0; r < c.size(); ++r) {
    auto v = row(r, big);
    for (size_t i = 0; i < v.size(); ++i) want[i] += v[i];
  }
  check_values(t, want, "big all_reduce");
  // A cuda tensor goes through host memory (here it is host memory already).
  Tensor cuda = row_tensor(DType::Float32, c.rank(), 5).to(Device::cuda(0));
  c.run(OpKind::AllReduce, {cuda}, {cuda}, -1, ReduceOp::Max);
  std::vector<double> max_want;
  for (int64_t i = 0; i < 5; ++i) {
    max_want.push_back(expected_reduction(DType::Float32, ReduceOp::Max, iota_ranks(c.size()),
                                          [&](int r) { return small_value(r, i); }));
  }
  check_values(cuda.to(Device::cpu()), max_want, "cuda all_reduce");
}

void rooted_cases(Client& c) {
  const int n = c.size();
  for (int root : {0, n - 1}) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int64, DType::Bool}) {
      const std::string what = fmt::format("broadcast {} from {}", dtype_name(dtype), root);
      Tensor t = c.rank() == root ? row_tensor(dtype, root, 9)
                                  : make_tensor(dtype, 9, [](int64_t) { return 1; });
      c.run(OpKind::Broadcast, {t}, {t}, root);
      auto want = row(root, 9);
      stored_row(dtype, want);
      check_values(t, want, what);
    }
    for (DType dtype : {DType::Float16, DType::Int32, DType::Float64}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Mean}) {
        const std::string what =
            fmt::format("reduce {} {} to {}", dtype_name(dtype), reduce_op_name(op), root);
        Tensor t = row_tensor(dtype, c.rank(), 11);
        c.run(OpKind::Reduce, {t}, {t}, root, op);
        std::vector<double> want;
        for (int64_t i = 0; i < 11; ++i) {
          want.push_back(c.rank() == root
                             ? expected_reduction(dtype, op, iota_ranks(n),
                                                  [&](int r) { return small_value(r, i); })
                             : static_cast<double>(small_value(c.rank(), i)));  // untouched
        }
        check_values(t, want, what);
      }
    }
    for (DType dtype : {DType::UInt8, DType::BFloat16}) {
      const std::string what = fmt::format("gather {} to {}", dtype_name(dtype), root);
      Tensor in = row_tensor(dtype, c.rank(), 6);
      std::vector<Tensor> out;
      if (c.rank() == root) {
        for (int r = 0; r < n; ++r) out.push_back(Tensor::zeros({6}, dtype));
      }
      c.run(OpKind::Gather, {in}, out, root);
      for (int r = 0; r < static_cast<int>(out.size()); ++r) {
        check_values(out[static_cast<size_t>(r)], row(r, 6), what);
      }
      const std::string scatter_what = fmt::format("scatter {} from {}", dtype_name(dtype), root);
      std::vector<Tensor> pieces;
      if (c.rank() == root) {
        for (int r = 0; r < n; ++r) pieces.push_back(row_tensor(dtype, r + 10, 4));
      }
      Tensor mine = Tensor::zeros({4}, dtype);
      c.run(OpKind::Scatter, pieces, {mine}, root);
      check_values(mine, row(c.rank() + 10, 4), scatter_what);
    }
  }
}

void gather_all_cases(Client& c) {
  const int n = c.size();
  for (DType dtype : {DType::Float64, DType::Int8, DType::Bool}) {
    Tensor in = row_tensor(dtype, c.rank(), 5);
    std::vector<Tensor> out;
    for (int r = 0; r < n; ++r) out.push_back(Tensor::zeros({5}, dtype));
    c.run(OpKind::AllGather, {in}, out);
    for (int r = 0; r < n; ++r) {
      auto want = row(r, 5);
      stored_row(dtype, want);
      check_values(out[static_cast<size_t>(r)], want,
                   fmt::format("all_gather {} piece {}", dtype_name(dtype), r));
    }
  }
  // Uneven all_to_all: rank i sends (i + 2j) % 3 elements (zero included) to rank j.
  auto pieces = [](int i, int j) { return static_cast<int64_t>((i + 2 * j) % 3); };
  auto value = [](int i, int j, int64_t k) { return static_cast<int64_t>(i * 100 + j * 10 + k); };
  for (DType dtype : {DType::Int32, DType::Float16}) {
    std::vector<Tensor> in;
    std::vector<Tensor> out;
    for (int j = 0; j < n; ++j) {
      in.push_back(make_tensor(dtype, pieces(c.rank(), j),
                               [&](int64_t k) { return value(c.rank(), j, k); }));
      out.push_back(Tensor::zeros({pieces(j, c.rank())}, dtype));
    }
    c.run(OpKind::AllToAll, in, out);
    for (int j = 0; j < n; ++j) {
      std::vector<double> want;
      for (int64_t k = 0; k < pieces(j, c.rank()); ++k) {
        want.push_back(static_cast<double>(value(j, c.rank(), k)));
      }
      check_values(out[static_cast<size_t>(j)], want,
                   fmt::format("all_to_all {} from {}", dtype_name(dtype), j));
    }
  }
}

void point_to_point_cases(Client& c) {
  const int n = c.size();
  const int me = c.rank();
  // A ring, every receive posted before its send: sends must not queue behind receives.
  {
    Tensor in = Tensor::zeros({3}, DType::Int64);
    Work r = c.submit(OpKind::Recv, {}, {in}, (me + n - 1) % n, ReduceOp::Sum, 3);
    Work s = c.submit(OpKind::Send, {row_tensor(DType::Int64, me, 3)}, {}, (me + 1) % n,
                      ReduceOp::Sum, 3);
    r.wait();
    s.wait();
    check(r.source_rank() == (me + n - 1) % n, fmt::format("ring source {}", r.source_rank()));
    check_values(in, row((me + n - 1) % n, 3), "ring recv");
  }
  // Tags select messages: rank 1 receives tag 2 before tag 1, which rank 0 sent first.
  if (me == 0) {
    Work a = c.submit(OpKind::Send, {make_tensor(DType::Float32, 2, [](int64_t) { return 1; })}, {},
                      1, ReduceOp::Sum, 1);
    Work b = c.submit(OpKind::Send, {make_tensor(DType::Float32, 2, [](int64_t) { return 2; })}, {},
                      1, ReduceOp::Sum, 2);
    a.wait();
    b.wait();
  } else if (me == 1) {
    Tensor two = Tensor::zeros({2}, DType::Float32);
    Tensor one = Tensor::zeros({2}, DType::Float32);
    Work b = c.submit(OpKind::Recv, {}, {two}, 0, ReduceOp::Sum, 2);
    b.wait();
    Work a = c.submit(OpKind::Recv, {}, {one}, 0, ReduceOp::Sum, 1);
    a.wait();
    check_values(two, {2, 2}, "tag 2");
    check_values(one, {1, 1}, "tag 1");
  }
  // any_source: rank 0 hears from everyone else and learns who sent what.
  if (me == 0) {
    std::vector<Tensor> got;
    std::vector<Work> works;
    for (int k = 1; k < n; ++k) {
      got.push_back(Tensor::zeros({1}, DType::Int32));
      works.push_back(c.submit(OpKind::Recv, {}, {got.back()}, any_source, ReduceOp::Sum, 4));
    }
    std::set<int> sources;
    for (size_t k = 0; k < works.size(); ++k) {
      works[k].wait();
      const int source = works[k].source_rank();
      check_values(got[k], {static_cast<double>(source * 11)}, "any_source payload");
      sources.insert(source);
    }
    check(sources.size() == static_cast<size_t>(n - 1), "any_source saw every sender once");
  } else {
    c.submit(OpKind::Send, {make_tensor(DType::Int32, 1, [&](int64_t) { return me * 11; })}, {}, 0,
             ReduceOp::Sum, 4)
        .wait();
  }
  // An empty message still matches.
  if (me < 2) {
    Tensor empty = Tensor::zeros({0}, DType::Float64);
    c.submit(me == 0 ? OpKind::Send : OpKind::Recv,
             me == 0 ? std::vector<Tensor>{empty} : std::vector<Tensor>{},
             me == 0 ? std::vector<Tensor>{} : std::vector<Tensor>{empty}, 1 - me, ReduceOp::Sum, 9)
        .wait();
  }
}

// A collective nobody waits for yet still runs: rank 0 starts an all_reduce and then blocks in a
// receive that rank 1 sends only after its own (blocking) all_reduce has finished.
void progress_cases(Client& c) {
  if (c.rank() > 1) {
    Tensor t = row_tensor(DType::Float32, c.rank(), 3);
    c.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Sum);
    return;
  }
  Tensor t = row_tensor(DType::Float32, c.rank(), 3);
  Tensor token = Tensor::zeros({1}, DType::Int32);
  if (c.rank() == 0) {
    Work reduce = c.submit(OpKind::AllReduce, {t}, {t});
    c.submit(OpKind::Recv, {}, {token}, 1, ReduceOp::Sum, 11).wait();
    reduce.wait();
  } else {
    c.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Sum);
    c.submit(OpKind::Send, {token}, {}, 0, ReduceOp::Sum, 11).wait();
  }
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (int r = 0; r < c.size(); ++r) sum += static_cast<double>(small_value(r, i));
    want.push_back(sum);
  }
  check_values(t, want, "all_reduce that progressed without a waiter");
}

// Blocking collectives among async ones. Collectives run in submission order, so a blocking one
// submitted while async ones are still queued runs after them (here it reads what the async
// broadcast wrote), and async ones submitted after it run after it; every result is right
// whichever thread ran each op.
void interleave_cases(Client& c) {
  const int n = c.size();
  Tensor x = row_tensor(DType::Float32, c.rank(), 5);
  Tensor y = row_tensor(DType::Int32, c.rank(), 4);
  Work sum_x = c.submit(OpKind::AllReduce, {x}, {x});
  Work from_last = c.submit(OpKind::Broadcast, {y}, {y}, n - 1);
  c.run(true, OpKind::AllReduce, {y}, {y}, -1, ReduceOp::Sum);
  from_last.wait();
  sum_x.wait();
  std::vector<double> want_x(5, 0.0);
  for (int r = 0; r < n; ++r) {
    auto v = row(r, 5);
    for (size_t i = 0; i < v.size(); ++i) want_x[i] += v[i];
  }
  check_values(x, want_x, "async all_reduce posted before a blocking one");
  std::vector<double> want_y = row(n - 1, 4);
  for (double& v : want_y) v *= n;
  check_values(y, want_y, "blocking all_reduce after an async broadcast of its tensor");

  // A blocking op, then an async op on its tensor: the async one sees the blocking one's result.
  Tensor z = row_tensor(DType::Int64, c.rank(), 3);
  c.run(true, OpKind::AllReduce, {z}, {z}, -1, ReduceOp::Max);
  Work sum_z = c.submit(OpKind::AllReduce, {z}, {z});
  c.run(true, OpKind::Barrier, {}, {});
  sum_z.wait();
  std::vector<double> want_z;
  for (int64_t i = 0; i < 3; ++i) {
    want_z.push_back(n * expected_reduction(DType::Int64, ReduceOp::Max, iota_ranks(n),
                                            [&](int r) { return small_value(r, i); }));
  }
  check_values(z, want_z, "async all_reduce after a blocking one on the same tensor");
}

// new_group's agreement and two sub-groups: {0, n-1} and everyone but rank 0.
void subgroup_cases(Client& world) {
  const int n = world.size();
  const int me = world.rank();
  auto make_group = [&](const std::string& name, std::vector<int> members) {
    OpRequest agree;
    agree.kind = OpKind::NewGroup;
    agree.extra = std::hash<std::string>{}(name);
    world.submit(std::move(agree)).wait();
    auto it = std::find(members.begin(), members.end(), me);
    GroupSpec spec{std::make_shared<const std::vector<int>>(members),
                   it == members.end() ? -1 : static_cast<int>(it - members.begin()), name};
    std::unique_ptr<Backend> group = world.backend().create_subgroup(spec);
    check((group != nullptr) == (spec.rank >= 0), name + ": a communicator exactly on members");
    return std::make_pair(std::move(group), spec);
  };
  auto [ends, ends_spec] = make_group(fmt::format("world/0,{}", n - 1), {0, n - 1});
  std::vector<int> rest_members;
  for (int r = 1; r < n; ++r) rest_members.push_back(r);
  auto [rest, rest_spec] =
      make_group(fmt::format("world/{}", fmt::join(rest_members, ",")), rest_members);
  if (ends) {
    Client g(*ends, ends_spec.rank, 2);
    Tensor t = row_tensor(DType::Int32, me, 7);
    g.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Sum);
    std::vector<double> want;
    for (int64_t i = 0; i < 7; ++i) {
      want.push_back(static_cast<double>(small_value(0, i) + small_value(n - 1, i)));
    }
    check_values(t, want, "sub-group all_reduce");
    Tensor b =
        g.rank() == 1 ? row_tensor(DType::Float16, 42, 3) : Tensor::zeros({3}, DType::Float16);
    g.run(OpKind::Broadcast, {b}, {b}, 1);
    check_values(b, row(42, 3), "sub-group broadcast from group rank 1");
    // Group ranks in point-to-point: group rank 1 is global rank n-1.
    Tensor p = Tensor::zeros({2}, DType::Int64);
    if (g.rank() == 0) {
      Work w = g.submit(OpKind::Recv, {}, {p}, any_source, ReduceOp::Sum, 7);
      w.wait();
      check(w.source_rank() == 1, fmt::format("sub-group source {}", w.source_rank()));
      check_values(p, row(n - 1, 2), "sub-group recv");
    } else {
      g.submit(OpKind::Send, {row_tensor(DType::Int64, me, 2)}, {}, 0, ReduceOp::Sum, 7).wait();
    }
  }
  if (rest && rest_spec.size() > 1) {
    Client g(*rest, rest_spec.rank, rest_spec.size());
    Tensor t = row_tensor(DType::Float32, me, 4);
    g.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Max);
    std::vector<double> want;
    for (int64_t i = 0; i < 4; ++i) {
      want.push_back(expected_reduction(DType::Float32, ReduceOp::Max, rest_members,
                                        [&](int r) { return small_value(r, i); }));
    }
    check_values(t, want, "second sub-group all_reduce");
  }
  world.run(OpKind::Barrier, {}, {});
}

void mismatch_cases(Client& c) {
  // Ranks that disagree on new_group all get Mismatch, and the world stays usable.
  OpRequest r;
  r.kind = OpKind::NewGroup;
  r.extra = c.rank() == 0 ? 1 : 2;
  Work w = c.submit(std::move(r));
  std::string message = expect_error<Mismatch>([&] { w.wait(); }, "new_group disagreement");
  // Rank 0 asks for one list, every other rank for another: each side is named.
  std::vector<int> others;
  for (int member = 1; member < c.size(); ++member) others.push_back(member);
  const std::string zero = "[0]", rest = fmt::format("[{}]", fmt::join(others, ", "));
  check(has(message, fmt::format("ranks {} ask for this rank's member list and ranks {} for "
                                 "another",
                                 c.rank() == 0 ? zero : rest, c.rank() == 0 ? rest : zero)),
        message);
  c.run(OpKind::Barrier, {}, {});
}

void collective_body(Backend& backend, int rank, int size) {
  Client c(backend, rank, size);
  // Rank 0 runs the table through the blocking form (on the calling thread when the queue is
  // idle), the others through the queue's thread: both paths, and a world that mixes them.
  c.blocking = rank == 0;
  c.run(OpKind::Barrier, {}, {});
  all_reduce_cases(c);
  rooted_cases(c);
  gather_all_cases(c);
  point_to_point_cases(c);
  progress_cases(c);
  interleave_cases(c);
  subgroup_cases(c);
  mismatch_cases(c);
  c.run(OpKind::Barrier, {}, {});
}

struct WorldCase {
  int size;
  Rendezvous::Kind store;
};

void PrintTo(const WorldCase& c, std::ostream* out) {
  *out << c.size << " ranks, " << (c.store == Rendezvous::Kind::File ? "FileStore" : "TCPStore");
}

class GlooCollectives : public GlooBackend, public ::testing::WithParamInterface<WorldCase> {};

TEST_P(GlooCollectives, EveryOpOfTheTable) {
  const auto [size, kind] = GetParam();
  Rendezvous rendezvous(kind, size);
  expect_all_ok(fork_ranks(size, [&](int rank) {
    auto world =
        backends::create_world("gloo", setup_for(rank, size, rendezvous.store(rank, kTimeout)));
    check(world->name() == "gloo", "backend name");
    collective_body(*world, rank, size);
  }));
}

std::string world_case_name(const ::testing::TestParamInfo<WorldCase>& param) {
  return fmt::format("n{}_{}", param.param.size,
                     param.param.store == Rendezvous::Kind::File ? "file" : "tcp");
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooCollectives,
                         ::testing::Values(WorldCase{2, Rendezvous::Kind::File},
                                           WorldCase{3, Rendezvous::Kind::Tcp},
                                           WorldCase{4, Rendezvous::Kind::File}),
                         world_case_name);

// A rank that dies makes the others fail with RankFailure or Timeout, well before their deadline,

// Two ranks exchange over one connection per direction (Communicator::reverse_lane): pieces far
// larger than a socket buffer arrive whole both ways at once, into adjacent outputs (received in
// place) and into separate ones (through staging), all_to_all's uneven pieces, and an all_reduce
// large enough to go in several pieces (small ones, one piece, run in every op test).
TEST_F(GlooBackend, TwoRankExchangesMoveLargePiecesBothWays) {
  Rendezvous rendezvous(Rendezvous::Kind::Tcp, 2);
  expect_all_ok(fork_ranks(2, [&](int rank) {
    auto world =
        backends::create_world("gloo", setup_for(rank, 2, rendezvous.store(rank, kTimeout)));
    Client c(*world, rank, 2);
    const int64_t count = 3 << 20;  // 12 MiB of int32 per rank
    auto value = [](int r, int64_t i) { return static_cast<int32_t>(r * 1000003 + i % 65521); };
    Tensor in = Tensor::empty({count}, DType::Int32);
    for (int64_t i = 0; i < count; ++i) in.data<int32_t>()[i] = value(rank, i);
    Tensor block = Tensor::zeros({2 * count}, DType::Int32);
    std::vector<Tensor> adjacent = {
        Tensor::from_blob(block.data<int32_t>(), {count}, DType::Int32, Device::cpu()),
        Tensor::from_blob(block.data<int32_t>() + count, {count}, DType::Int32, Device::cpu())};
    std::vector<Tensor> separate = {Tensor::zeros({count}, DType::Int32),
                                    Tensor::zeros({count}, DType::Int32)};
    for (auto* out : {&adjacent, &separate}) {
      c.run(true, OpKind::AllGather, {in}, *out);
      for (int r = 0; r < 2; ++r) {
        const int32_t* got = (*out)[static_cast<size_t>(r)].data<int32_t>();
        int64_t wrong = 0;
        for (int64_t i = 0; i < count; ++i) wrong += got[i] != value(r, i);
        check(wrong == 0, fmt::format("all_gather piece {}: {} wrong elements", r, wrong));
      }
    }
    // all_reduce of 12 MiB: three pieces of one exchange each.
    c.run(true, OpKind::AllReduce, {in}, {in});
    int64_t wrong_sums = 0;
    for (int64_t i = 0; i < count; ++i) {
      wrong_sums += in.data<int32_t>()[i] != value(0, i) + value(1, i);
    }
    check(wrong_sums == 0, fmt::format("all_reduce: {} wrong sums", wrong_sums));
    // A last piece shorter than the others: 4 MiB of float64 and three elements more, a max.
    const int64_t odd = (int64_t{1} << 19) + 3;
    Tensor doubles = Tensor::empty({odd}, DType::Float64);
    for (int64_t i = 0; i < odd; ++i) doubles.data<double>()[i] = value(rank, i);
    c.run(true, OpKind::AllReduce, {doubles}, {doubles}, -1, ReduceOp::Max);
    int64_t wrong_max = 0;
    for (int64_t i = 0; i < odd; ++i) {
      wrong_max += doubles.data<double>()[i] != std::max(value(0, i), value(1, i));
    }
    check(wrong_max == 0, fmt::format("all_reduce max: {} wrong elements", wrong_max));
    // all_to_all: rank r sends (r + 1) << 20 elements to the other and keeps 5 for itself.
    const int peer = 1 - rank;
    auto sent = [](int from, int to) { return from == to ? int64_t{5} : int64_t{from + 1} << 20; };
    std::vector<Tensor> pieces;
    std::vector<Tensor> got;
    for (int to = 0; to < 2; ++to) {
      Tensor piece = Tensor::empty({sent(rank, to)}, DType::Int32);
      for (int64_t i = 0; i < piece.numel(); ++i)
        piece.data<int32_t>()[i] = value(rank * 2 + to, i);
      pieces.push_back(piece);
      got.push_back(Tensor::zeros({sent(to, rank)}, DType::Int32));
    }
    c.run(true, OpKind::AllToAll, pieces, got);
    for (int from : {rank, peer}) {
      const Tensor& piece = got[static_cast<size_t>(from)];
      int64_t wrong = 0;
      for (int64_t i = 0; i < piece.numel(); ++i) {
        wrong += piece.data<int32_t>()[i] != value(from * 2 + rank, i);
      }
      check(wrong == 0, fmt::format("all_to_all piece from {}: {} wrong elements", from, wrong));
    }
  }));
}

}  // namespace
}  // namespace ranks::testing
