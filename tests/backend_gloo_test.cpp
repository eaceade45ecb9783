// The gloo backend across real processes. Each test forks one child per rank; a child makes the
// world through ranks::backends::create_world("gloo", ...) over a shared store, submits requests
// built as ranks/collectives.cpp builds them, checks the results against tests/expected.hpp and
// reports through its exit status (the parent joins every child and expects 0). A child that
// hangs dies of its alarm, so no test can hang.

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>
#include <ostream>
#include <set>
#include <source_location>
#include <string>
#include <vector>

#include "expected.hpp"
#include "ranks/backends/registry.hpp"
#include "ranks/config.hpp"
#include "ranks/errors.hpp"
#include "ranks/store/stores.hpp"

namespace ranks::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kTimeout = std::chrono::milliseconds(20s);
constexpr unsigned kChildAlarmSeconds = 25;  // a hung child dies rather than hanging the test

// A check inside a child: the message goes to stderr and the child exits non-zero.
struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void check(bool ok, const std::string& what,
           std::source_location where = std::source_location::current()) {
  if (!ok) throw CheckFailed(fmt::format("line {}: {}", where.line(), what));
}

void check_values(const Tensor& t, const std::vector<double>& want, const std::string& what,
                  std::source_location where = std::source_location::current()) {
  std::vector<double> got = values(t);
  check(got.size() == want.size(),
        fmt::format("{}: {} elements, want {}", what, got.size(), want.size()), where);
  for (size_t i = 0; i < got.size(); ++i) {
    check(std::abs(got[i] - want[i]) <= tolerance(t.dtype(), want[i]),
          fmt::format("{}: element {} is {}, want {}", what, i, got[i], want[i]), where);
  }
}

template <class E, class F>
std::string expect_error(F&& f, const std::string& what,
                         std::source_location where = std::source_location::current()) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    check(false, fmt::format("{}: threw the wrong kind of error: {}", what, e.what()), where);
  }
  check(false, what + ": did not throw", where);
  return {};
}

// Builds requests as ranks/collectives.cpp does and numbers them as dispatch does.
class Client {
 public:
  Client(Backend& backend, int rank, int size, std::chrono::milliseconds timeout = kTimeout)
      : backend_(backend), rank_(rank), size_(size), timeout_(timeout) {}

  int rank() const { return rank_; }
  int size() const { return size_; }
  Backend& backend() { return backend_; }

  Work submit(OpKind kind, std::vector<Tensor> inputs, std::vector<Tensor> outputs, int root = -1,
              ReduceOp op = ReduceOp::Sum, int tag = 0,
              std::source_location where = std::source_location::current()) {
    OpRequest r = make_request(kind, std::move(inputs), std::move(outputs), root, op);
    r.tag = tag;
    return submit(std::move(r), where);
  }
  static OpRequest make_request(OpKind kind, std::vector<Tensor> inputs,
                                std::vector<Tensor> outputs, int root, ReduceOp op) {
    OpRequest r;
    r.kind = kind;
    r.inputs.assign(inputs.begin(), inputs.end());
    r.outputs.assign(outputs.begin(), outputs.end());
    r.root = root;
    r.reduce_op = op;
    return r;
  }
  Work submit(OpRequest r, std::source_location where = std::source_location::current()) {
    r.seq = is_point_to_point(r.kind) ? p2p_seq_++ : collective_seq_++;
    r.timeout = timeout_;
    r.where = where;
    return backend_.submit(std::move(r));
  }
  // Submits and waits at once. With blocking set, the request says so, as the blocking API's do
  // (the backend may then run it inside submit); without, it is an async op waited at once.
  void run(OpKind kind, std::vector<Tensor> inputs, std::vector<Tensor> outputs, int root = -1,
           ReduceOp op = ReduceOp::Sum) {
    run(blocking, kind, std::move(inputs), std::move(outputs), root, op);
  }
  void run(bool blocking_request, OpKind kind, std::vector<Tensor> inputs,
           std::vector<Tensor> outputs, int root = -1, ReduceOp op = ReduceOp::Sum) {
    OpRequest r = make_request(kind, std::move(inputs), std::move(outputs), root, op);
    r.blocking = blocking_request;
    submit(std::move(r)).wait();
  }

  bool blocking = false;  // what run() marks its requests
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

 private:
  Backend& backend_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  uint64_t collective_seq_ = 0;
  uint64_t p2p_seq_ = 0;
};

std::vector<int> iota_ranks(int n) {
  std::vector<int> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

std::vector<double> row(int rank, int64_t count) {
  std::vector<double> v;
  for (int64_t i = 0; i < count; ++i) v.push_back(static_cast<double>(small_value(rank, i)));
  return v;
}

Tensor row_tensor(DType dtype, int rank, int64_t count) {
  return make_tensor(dtype, count, [&](int64_t i) { return small_value(rank, i); });
}

void stored_row(DType dtype, std::vector<double>& v) {
  for (double& x : v) x = stored(dtype, static_cast<int64_t>(x));
}

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
    GroupSpec spec{name, std::make_shared<const std::vector<int>>(members),
                   it == members.end() ? -1 : static_cast<int>(it - members.begin())};
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

void unsupported_and_mismatch_cases(Client& c) {
  Tensor out = Tensor::zeros({2}, DType::Float32);
  std::vector<Tensor> in(static_cast<size_t>(c.size()), Tensor::zeros({2}, DType::Float32));
  expect_error<Unsupported>([&] { c.run(OpKind::ReduceScatter, in, {out}); },
                            "reduce_scatter on gloo");
  // Ranks that disagree on new_group all get Mismatch, and the world stays usable.
  OpRequest r;
  r.kind = OpKind::NewGroup;
  r.extra = c.rank() == 0 ? 1 : 2;
  Work w = c.submit(std::move(r));
  std::string message = expect_error<Mismatch>([&] { w.wait(); }, "new_group disagreement");
  check(has(message, "disagree"), message);
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
  unsupported_and_mismatch_cases(c);
  c.run(OpKind::Barrier, {}, {});
}

// --- processes -------------------------------------------------------------------------------

// Where the ranks of one test meet: a FileStore in a fresh directory, or a TCPStore that rank 0
// hosts on a free port and announces to the others through a pipe.
class Rendezvous {
 public:
  enum class Kind { File, Tcp };
  Rendezvous(Kind kind, int size) : kind_(kind), size_(size) {
    char pattern[] = "/tmp/ranks-gloo-XXXXXX";
    dir_ = mkdtemp(pattern);
    if (kind_ == Kind::Tcp && pipe(port_pipe_) != 0) throw std::runtime_error("pipe failed");
  }
  ~Rendezvous() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    if (kind_ == Kind::Tcp) {
      close(port_pipe_[0]);
      close(port_pipe_[1]);
    }
  }

  // In the child of `rank`.
  std::shared_ptr<Store> store(int rank, std::chrono::milliseconds timeout) {
    if (kind_ == Kind::File) {
      return std::make_shared<FileStore>(dir_ + "/store", size_, timeout);
    }
    if (rank == 0) {
      auto store = std::make_shared<TCPStore>("127.0.0.1", 0, size_, true, timeout);
      const int port = store->port();
      for (int r = 1; r < size_; ++r) {
        check(write(port_pipe_[1], &port, sizeof(port)) == sizeof(port), "announce the port");
      }
      return store;
    }
    pollfd ready{port_pipe_[0], POLLIN, 0};
    check(poll(&ready, 1, static_cast<int>(timeout.count())) == 1, "rank 0 announced its port");
    int port = 0;
    check(read(port_pipe_[0], &port, sizeof(port)) == sizeof(port), "read the port");
    return std::make_shared<TCPStore>("127.0.0.1", port, size_, false, timeout);
  }

 private:
  Kind kind_;
  int size_;
  std::string dir_;
  int port_pipe_[2] = {-1, -1};
};

backends::WorldSetup setup_for(int rank, int size, std::shared_ptr<Store> store,
                               std::chrono::milliseconds timeout = kTimeout) {
  backends::WorldSetup setup;
  setup.rank = rank;
  setup.world_size = size;
  setup.store = std::move(store);
  setup.timeout = timeout;
  return setup;
}

// Forks a child per rank that runs child(rank) and exits with its status (1 on a failed check or
// an exception, after printing it); returns each child's wait status, in rank order.
std::vector<int> fork_ranks(int size, const std::function<void(int)>& child) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < size; ++rank) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(kChildAlarmSeconds);
      int status = 0;
      try {
        child(rank);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        status = 1;
      }
      std::fflush(stderr);
      _exit(status);
    }
    pids.push_back(pid);
  }
  std::vector<int> statuses;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    statuses.push_back(status);
  }
  return statuses;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("signal {}", WTERMSIG(status));
  return "unknown";
}

void expect_all_ok(const std::vector<int>& statuses) {
  for (size_t r = 0; r < statuses.size(); ++r) {
    EXPECT_TRUE(WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 0)
        << "rank " << r << ": " << describe_status(statuses[r]);
  }
}

class GlooBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!backends::is_built("gloo")) GTEST_SKIP() << "this build has no gloo backend";
  }
};

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
    try {
      c.run(OpKind::AllReduce, {t}, {t}, -1, ReduceOp::Sum);
      check(false, "all_reduce with a dead peer succeeded");
    } catch (const RankFailure& e) {
      message = e.what();
    } catch (const Timeout& e) {
      message = e.what();
    }
    check(Clock::now() - start < deadline, "failed before the deadline: " + message);
    check(has(message, "all_reduce on group 'world'"), message);
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
      check(has(message, "rank 1 sent no message with tag 5 within 300 ms"), message);
    } else {
      Work w = c.submit(OpKind::Recv, {}, {t}, 0, ReduceOp::Sum, 6);
      std::string message = expect_error<RankFailure>([&] { w.wait(); }, "peer's recv");
      check(Clock::now() - start < kTimeout / 2, "learned before its deadline");
      check(has(message, "rank 0"), message);
    }
  }));
}

// A collective one rank never joins times out on the other, through the worker.
TEST_F(GlooBackend, CollectiveTimesOut) {
  Rendezvous rendezvous(Rendezvous::Kind::File, 2);
  expect_all_ok(fork_ranks(2, [&](int rank) {
    auto world =
        backends::create_world("gloo", setup_for(rank, 2, rendezvous.store(rank, kTimeout)));
    Client c(*world, rank, 2);
    c.run(OpKind::Barrier, {}, {});
    Tensor t = Tensor::zeros({4}, DType::Int32);
    if (rank == 0) {
      Work w = c.submit(OpKind::AllReduce, {t}, {t});
      std::string message = expect_error<Timeout>([&] { w.wait(200ms); }, "all_reduce");
      check(has(message, "did not complete within 200 ms"), message);
    } else {
      Work w = c.submit(OpKind::Recv, {}, {t}, 0, ReduceOp::Sum, 6);
      expect_error<RankFailure>([&] { w.wait(); }, "peer's recv");
    }
  }));
}

// The same through the blocking form, which runs on the calling thread when the queue is idle:
// the op's own deadline applies, and the error is the same.
TEST_F(GlooBackend, BlockingCollectiveTimesOut) {
  Rendezvous rendezvous(Rendezvous::Kind::File, 2);
  expect_all_ok(fork_ranks(2, [&](int rank) {
    auto world =
        backends::create_world("gloo", setup_for(rank, 2, rendezvous.store(rank, kTimeout)));
    Client c(*world, rank, 2);
    c.run(true, OpKind::Barrier, {}, {});
    Tensor t = Tensor::zeros({4}, DType::Int32);
    if (rank == 0) {
      c.set_timeout(200ms);
      std::string message = expect_error<Timeout>([&] { c.run(true, OpKind::AllReduce, {t}, {t}); },
                                                  "blocking all_reduce");
      check(has(message, "did not complete within 200 ms"), message);
      std::string later =
          expect_error<Error>([&] { c.run(true, OpKind::Barrier, {}, {}); }, "later op");
      check(has(later, "failed earlier"), later);
    } else {
      Work w = c.submit(OpKind::Recv, {}, {t}, 0, ReduceOp::Sum, 6);
      expect_error<RankFailure>([&] { w.wait(); }, "peer's recv");
    }
  }));
}

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

}  // namespace
}  // namespace ranks::testing
