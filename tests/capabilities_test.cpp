// Backend support matrices as data: the nccl, gloo and mpi tables (op x device, reduce ops), their
// markdown, why_unsupported's reasons, the simulator enforcing the chosen backend's table
// (outcome unsupported, naming backend, op, device and call site), and mixed devices in one op.
// comm_device() has its own file.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

namespace ranks::testing {
namespace {

std::string site(int line) { return fmt::format("capabilities_test.cpp:{}", line); }

const std::vector<OpKind> all_ops = {
    OpKind::Barrier,   OpKind::AllReduce, OpKind::Broadcast, OpKind::Reduce,
    OpKind::AllGather, OpKind::Gather,    OpKind::Scatter,   OpKind::ReduceScatter,
    OpKind::AllToAll,  OpKind::Send,      OpKind::Recv,      OpKind::NewGroup,
};

// The tables as this test expects them, written out by hand: for each op, (cpu, cuda) with
// Y = supported, S = staged through a copy, N = not supported.
struct Row {
  char cpu, cuda;
};
using Table = std::map<OpKind, Row>;

const Table& expected_table(const std::string& backend) {
  static const Table nccl = {
      {OpKind::Barrier, {'Y', 'Y'}},   {OpKind::AllReduce, {'S', 'Y'}},
      {OpKind::Broadcast, {'S', 'Y'}}, {OpKind::Reduce, {'N', 'Y'}},
      {OpKind::AllGather, {'S', 'Y'}}, {OpKind::Gather, {'N', 'Y'}},
      {OpKind::Scatter, {'N', 'Y'}},   {OpKind::ReduceScatter, {'N', 'Y'}},
      {OpKind::AllToAll, {'N', 'Y'}},  {OpKind::Send, {'N', 'Y'}},
      {OpKind::Recv, {'N', 'Y'}},      {OpKind::NewGroup, {'Y', 'Y'}},
  };
  static const Table gloo = {
      {OpKind::Barrier, {'Y', 'Y'}},   {OpKind::AllReduce, {'Y', 'S'}},
      {OpKind::Broadcast, {'Y', 'S'}}, {OpKind::Reduce, {'Y', 'N'}},
      {OpKind::AllGather, {'Y', 'S'}}, {OpKind::Gather, {'Y', 'N'}},
      {OpKind::Scatter, {'Y', 'N'}},   {OpKind::ReduceScatter, {'Y', 'N'}},
      {OpKind::AllToAll, {'Y', 'N'}},  {OpKind::Send, {'Y', 'N'}},
      {OpKind::Recv, {'Y', 'N'}},      {OpKind::NewGroup, {'Y', 'Y'}},
  };
  static const Table mpi = {
      {OpKind::Barrier, {'Y', 'Y'}},   {OpKind::AllReduce, {'Y', 'N'}},
      {OpKind::Broadcast, {'Y', 'N'}}, {OpKind::Reduce, {'Y', 'N'}},
      {OpKind::AllGather, {'Y', 'N'}}, {OpKind::Gather, {'Y', 'N'}},
      {OpKind::Scatter, {'Y', 'N'}},   {OpKind::ReduceScatter, {'Y', 'N'}},
      {OpKind::AllToAll, {'Y', 'N'}},  {OpKind::Send, {'Y', 'N'}},
      {OpKind::Recv, {'Y', 'N'}},      {OpKind::NewGroup, {'Y', 'Y'}},
  };
  if (backend == "nccl") return nccl;
  if (backend == "gloo") return gloo;
  return mpi;
}

char letter(Support s) {
  switch (s) {
    case Support::Yes:
      return 'Y';
    case Support::Staged:
      return 'S';
    case Support::No:
      return 'N';
  }
  return '?';
}

const std::vector<std::string> backends = {"nccl", "gloo", "mpi"};

// --- the tables ----------------------------------------------------------------------------------

TEST(Capabilities, BackendNames) {
  std::vector<std::string> names;
  for (auto name : backend_names()) names.emplace_back(name);
  EXPECT_EQ(names, backends);
}

TEST(Capabilities, TablesMatchTheExpectedMatrix) {
  for (const std::string& backend : backends) {
    const BackendCapabilities& caps = capabilities(backend);
    EXPECT_EQ(caps.backend, backend);
    EXPECT_EQ(caps.ops.size(), all_ops.size()) << backend << ": one row per op";
    for (OpKind op : all_ops) {
      SCOPED_TRACE(fmt::format("{} {}", backend, op_name(op)));
      const OpSupport* row = caps.find(op);
      ASSERT_NE(row, nullptr);
      EXPECT_EQ(row->op, op);
      const Row want = expected_table(backend).at(op);
      EXPECT_EQ(letter(row->cpu), want.cpu);
      EXPECT_EQ(letter(row->cuda), want.cuda);
    }
  }
}

// Debian's gloo ships a reduce_scatter (gloo/reduce_scatter.h) for host memory; torch's gloo
// process group has none, and the torch column says so.
TEST(Capabilities, GlooReduceScattersCpuTensorsWhereTorchHasNone) {
  const OpSupport* row = capabilities("gloo").find(OpKind::ReduceScatter);
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->cpu, Support::Yes);
  EXPECT_EQ(row->cuda, Support::No);
  EXPECT_EQ(row->torch_cpu, Support::No);
  EXPECT_EQ(row->torch_cuda, Support::No);
}

// MMEngine moves all_reduce, all_gather and broadcast tensors to the comm device and back.
TEST(Capabilities, GlooCudaStagesMmenginesThreeAndHasBarrier) {
  const BackendCapabilities& gloo = capabilities("gloo");
  for (OpKind op : all_ops) {
    SCOPED_TRACE(op_name(op));
    Support cuda = gloo.find(op)->cuda;
    if (op == OpKind::Broadcast || op == OpKind::AllReduce || op == OpKind::AllGather) {
      EXPECT_EQ(cuda, Support::Staged);
    } else if (op == OpKind::Barrier || op == OpKind::NewGroup) {
      EXPECT_EQ(cuda, Support::Yes);
    } else {
      EXPECT_EQ(cuda, Support::No);
    }
  }
}

TEST(Capabilities, NcclRejectsMostCpuOpsButStagesThreeCollectives) {
  const BackendCapabilities& nccl = capabilities("nccl");
  for (OpKind op : {OpKind::Send, OpKind::Recv, OpKind::Gather, OpKind::Scatter, OpKind::Reduce,
                    OpKind::ReduceScatter, OpKind::AllToAll}) {
    EXPECT_EQ(nccl.find(op)->cpu, Support::No) << op_name(op);
  }
  for (OpKind op : {OpKind::AllReduce, OpKind::Broadcast, OpKind::AllGather}) {
    EXPECT_EQ(nccl.find(op)->cpu, Support::Staged) << op_name(op);
  }
  for (OpKind op : all_ops) EXPECT_EQ(nccl.find(op)->cuda, Support::Yes) << op_name(op);
}

TEST(Capabilities, MpiIsCpuOnly) {
  const BackendCapabilities& mpi = capabilities("mpi");
  for (OpKind op : all_ops) {
    SCOPED_TRACE(op_name(op));
    EXPECT_EQ(mpi.find(op)->cpu, Support::Yes);
    bool tensorless = op == OpKind::Barrier || op == OpKind::NewGroup;
    EXPECT_EQ(mpi.find(op)->cuda, tensorless ? Support::Yes : Support::No);
  }
}

TEST(Capabilities, ReduceOps) {
  const std::vector<ReduceOp> arithmetic = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Product,
                                            ReduceOp::Min, ReduceOp::Max};
  const std::vector<ReduceOp> bitwise = {ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor};
  auto has = [](const BackendCapabilities& caps, ReduceOp op) {
    return std::find(caps.reduce_ops.begin(), caps.reduce_ops.end(), op) != caps.reduce_ops.end();
  };
  for (const std::string& backend : backends) {
    for (ReduceOp op : arithmetic) {
      EXPECT_TRUE(has(capabilities(backend), op)) << backend << " " << reduce_op_name(op);
    }
    for (ReduceOp op : bitwise) {
      EXPECT_EQ(has(capabilities(backend), op), backend != "nccl")
          << backend << " " << reduce_op_name(op);
    }
  }
}

TEST(Capabilities, UnknownBackendThrows) {
  EXPECT_THROW(capabilities("bogus"), InvalidArgument);
  EXPECT_THROW(capabilities(""), InvalidArgument);
  try {
    capabilities("bogus");
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(Contains(e.what(), "bogus"));
    EXPECT_TRUE(Contains(e.what(), "nccl"));
  }
}

// --- markdown ------------------------------------------------------------------------------------

std::vector<std::string> table_lines(const std::string& markdown) {
  std::vector<std::string> lines;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("|")) lines.push_back(line);
  }
  return lines;
}

TEST(Capabilities, MarkdownHasOneRowPerOpAndBothColumnSets) {
  // new_group is the agreement behind a call, not an op a user picks a backend for: 11 rows.
  const std::vector<std::string> ops = {"barrier",    "all_reduce", "broadcast", "reduce",
                                        "all_gather", "gather",     "scatter",   "reduce_scatter",
                                        "all_to_all", "send",       "recv"};
  for (const std::string& backend : backends) {
    SCOPED_TRACE(backend);
    std::string md = capabilities(backend).to_markdown();
    EXPECT_TRUE(Contains(md, "### " + backend));
    std::vector<std::string> lines = table_lines(md);
    ASSERT_EQ(lines.size(), 2 + ops.size()) << md;
    EXPECT_EQ(lines[0], "| op | cpu | cuda | torch cpu | torch cuda | note |");
    EXPECT_TRUE(lines[1].starts_with("| --- |"));
    for (const std::string& op : ops) {
      int rows = 0;
      for (const std::string& line : lines) rows += line.starts_with("| " + op + " |") ? 1 : 0;
      EXPECT_EQ(rows, 1) << op;
    }
    EXPECT_TRUE(Contains(md, "reduce ops: "));
  }
  EXPECT_TRUE(Contains(capabilities("gloo").to_markdown(), "| reduce_scatter | ✓ | ✘ | ✘ | ✘ |"));
  EXPECT_TRUE(
      Contains(capabilities("nccl").to_markdown(), "| all_reduce | ✓ (staged) | ✓ | ✘ | ✓ |"));
  EXPECT_TRUE(Contains(capabilities("mpi").to_markdown(), "| send | ✓ | ✘ | ✓ | ✘ |"));
  EXPECT_FALSE(Contains(capabilities("nccl").to_markdown(), "band"));
  EXPECT_TRUE(Contains(capabilities("gloo").to_markdown(), "band"));
}

// --- why_unsupported ---------------------------------------------------------------------------

OpRequest make_request(OpKind kind, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                       ReduceOp reduce_op = ReduceOp::Sum) {
  OpRequest r;
  r.kind = kind;
  r.reduce_op = reduce_op;
  r.inputs.assign(inputs.begin(), inputs.end());
  r.outputs.assign(outputs.begin(), outputs.end());
  return r;
}

TEST(Capabilities, WhyUnsupportedNamesBackendOpAndDevice) {
  Tensor cpu = Tensor::zeros({2}, DType::Int32);
  Tensor cuda = Tensor::zeros({2}, DType::Int32, Device::cuda(0));

  auto why = capabilities("nccl").why_unsupported(make_request(OpKind::Send, {cpu}, {}));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "the nccl backend does not support send on cpu tensors; move the tensor to a "
            "cuda device");

  why = capabilities("gloo").why_unsupported(make_request(OpKind::Gather, {cuda}, {cuda, cuda}));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "the gloo backend does not support gather on cuda tensors; move the tensor "
            "to the cpu");

  // Neither device works: the note says what to do instead.
  constexpr std::array<OpSupport, 1> none = {
      OpSupport{OpKind::ReduceScatter, Support::No, Support::No, Support::No, Support::No,
                "all_reduce and slice"}};
  constexpr std::array<ReduceOp, 1> sum = {ReduceOp::Sum};
  const BackendCapabilities bare("bare", none, sum, "a table for this test");
  why = bare.why_unsupported(make_request(OpKind::ReduceScatter, {cpu, cpu}, {cpu}));
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(Contains(*why, "the bare backend does not support reduce_scatter on cpu tensors"));
  EXPECT_TRUE(Contains(*why, "all_reduce and slice"));

  why = capabilities("mpi").why_unsupported(make_request(OpKind::AllReduce, {cuda}, {cuda}));
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(Contains(*why, "the mpi backend does not support all_reduce on cuda tensors"));
}

TEST(Capabilities, WhyUnsupportedIsEmptyForSupportedAndStagedOps) {
  Tensor cpu = Tensor::zeros({2}, DType::Float32);
  Tensor cuda = Tensor::zeros({2}, DType::Float32, Device::cuda(1));
  EXPECT_EQ(capabilities("nccl").why_unsupported(make_request(OpKind::AllReduce, {cpu}, {cpu})),
            std::nullopt);  // staged
  EXPECT_EQ(capabilities("nccl").why_unsupported(make_request(OpKind::Send, {cuda}, {})),
            std::nullopt);
  EXPECT_EQ(capabilities("gloo").why_unsupported(make_request(OpKind::Broadcast, {cuda}, {cuda})),
            std::nullopt);  // staged
  EXPECT_EQ(capabilities("mpi").why_unsupported(make_request(OpKind::Barrier, {}, {})),
            std::nullopt);
  EXPECT_EQ(
      capabilities("mpi").why_unsupported(make_request(OpKind::ReduceScatter, {cpu, cpu}, {cpu})),
      std::nullopt);
}

TEST(Capabilities, NcclRejectsBitwiseReductions) {
  Tensor cuda = Tensor::zeros({2}, DType::Int32, Device::cuda(0));
  for (ReduceOp op : {ReduceOp::BAnd, ReduceOp::BOr, ReduceOp::BXor}) {
    for (OpKind kind : {OpKind::AllReduce, OpKind::Reduce}) {
      SCOPED_TRACE(fmt::format("{} {}", op_name(kind), reduce_op_name(op)));
      auto why = capabilities("nccl").why_unsupported(make_request(kind, {cuda}, {cuda}, op));
      ASSERT_TRUE(why.has_value());
      EXPECT_EQ(*why, fmt::format("the nccl backend has no '{}' reduction", reduce_op_name(op)));
      Tensor cpu = Tensor::zeros({2}, DType::Int32);
      EXPECT_EQ(capabilities("gloo").why_unsupported(make_request(kind, {cpu}, {cpu}, op)),
                std::nullopt);
    }
  }
  EXPECT_EQ(capabilities("nccl").why_unsupported(
                make_request(OpKind::AllReduce, {cuda}, {cuda}, ReduceOp::Max)),
            std::nullopt);
}

// NCCL matches a receive to one named sender, so the nccl table has no any_source; the
// simulator enforcing it keeps `ranks sim --backend nccl` from passing a program real NCCL
// would refuse.
TEST(Capabilities, NcclHasNoReceiveFromAnySource) {
  Tensor cuda = Tensor::zeros({2}, DType::Float32, Device::cuda(0));
  Tensor cpu = Tensor::zeros({2}, DType::Float32);
  OpRequest any = make_request(OpKind::Recv, {}, {cuda});
  any.root = any_source;
  OpRequest named = make_request(OpKind::Recv, {}, {cuda});
  named.root = 1;
  EXPECT_FALSE(capabilities("nccl").recv_any_source);
  auto why = capabilities("nccl").why_unsupported(any);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why,
            "the nccl backend has no receive from any source (it matches a receive to one named "
            "sender); pass the src rank, or use the gloo or mpi backend for this exchange");
  EXPECT_EQ(capabilities("nccl").why_unsupported(named), std::nullopt);
  any.outputs = {cpu};
  for (const char* backend : {"gloo", "mpi"}) {
    EXPECT_TRUE(capabilities(backend).recv_any_source) << backend;
    EXPECT_EQ(capabilities(backend).why_unsupported(any), std::nullopt) << backend;
  }
  EXPECT_TRUE(Contains(capabilities("nccl").to_markdown(), "recv from any_source: ✘."));
}

// dispatch asks allows() on every op and why_unsupported() only when it says no: the two must
// give the same verdict on every op, device mix, reduce op and receive source, on every table.
TEST(Capabilities, AllowsAgreesWithWhyUnsupportedEverywhere) {
  const Tensor cuda = Tensor::zeros({2}, DType::Float32, Device::cuda(0));
  const Tensor cpu = Tensor::zeros({2}, DType::Float32);
  const std::vector<std::pair<std::vector<Tensor>, std::vector<Tensor>>> layouts = {
      {{}, {}},          {{cpu}, {cpu}},       {{cuda}, {cuda}},       {{cpu}, {}},
      {{}, {cuda}},      {{cpu, cpu}, {cpu}},  {{cuda}, {cuda, cuda}}, {{cpu}, {cuda}},
      {{cuda, cpu}, {}}, {{cuda}, {cuda, cpu}}};
  int checked = 0;
  for (const char* backend : {"gloo", "mpi", "nccl"}) {
    const BackendCapabilities& caps = capabilities(backend);
    for (OpKind kind : all_ops) {
      for (const auto& [inputs, outputs] : layouts) {
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::BAnd, ReduceOp::Max}) {
          for (int root : {0, any_source}) {
            OpRequest r = make_request(kind, inputs, outputs, op);
            r.root = root;
            EXPECT_EQ(caps.allows(r), !caps.why_unsupported(r).has_value())
                << backend << " " << op_name(kind) << " " << inputs.size() << " in, "
                << outputs.size() << " out, " << reduce_op_name(op) << ", root " << root;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(SimBackendMatrix, NcclRejectsReceiveFromAnySourceInTheSimulator) {
  sim::Options options;
  options.backend = "nccl";
  sim::Report report = simulate(
      2,
      [] {
        Tensor t = Tensor::zeros({1}, DType::Float32, Device::cuda(0));
        if (get_rank() == 0) {
          recv(t, any_source);
        } else {
          send(t, 0);
        }
      },
      options);
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  EXPECT_TRUE(Contains(report.to_text(), "nccl backend has no receive from any source"));
}

TEST(Capabilities, WhyUnsupportedRejectsMixedDevices) {
  Tensor cpu = Tensor::zeros({2}, DType::Float32);
  Tensor cuda = Tensor::zeros({2}, DType::Float32, Device::cuda(0));
  for (const std::string& backend : backends) {
    SCOPED_TRACE(backend);
    auto why =
        capabilities(backend).why_unsupported(make_request(OpKind::AllGather, {cpu}, {cuda, cuda}));
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why, "its tensors are on different devices (cpu and cuda:0)");
    why = capabilities(backend).why_unsupported(make_request(OpKind::AllReduce, {cuda}, {cpu}));
    ASSERT_TRUE(why.has_value());
    EXPECT_EQ(*why, "its tensors are on different devices (cuda:0 and cpu)");
  }
}

// --- the simulator enforces the chosen table ---------------------------------------------------

// Calls `op` once on two ranks with tensors on `device` (send/recv: rank 0 sends to rank 1).
void call_op(OpKind op, Device device) {
  const int rank = get_rank();
  Tensor t = Tensor::of<int32_t>({rank + 1, 7}, device);
  auto like = [&] { return Tensor::zeros({2}, DType::Int32, device); };
  switch (op) {
    case OpKind::Barrier:
      barrier();
      return;
    case OpKind::AllReduce:
      all_reduce(t);
      EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{3, 14}));
      return;
    case OpKind::Broadcast:
      broadcast(t, 1);
      EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{2, 7}));
      return;
    case OpKind::Reduce:
      reduce(t, 0);
      if (rank == 0) {
        EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{3, 14}));
      }
      return;
    case OpKind::AllGather: {
      auto all = all_gather(t);
      ASSERT_EQ(all.size(), 2u);
      EXPECT_EQ(all[1].to_vector<int32_t>(), (std::vector<int32_t>{2, 7}));
      return;
    }
    case OpKind::Gather: {
      auto all = gather(t, 0);
      EXPECT_EQ(all.size(), rank == 0 ? 2u : 0u);
      return;
    }
    case OpKind::Scatter: {
      Tensor out = like();
      std::vector<Tensor> in;
      if (rank == 0)
        in = {Tensor::of<int32_t>({1, 2}, device), Tensor::of<int32_t>({3, 4}, device)};
      scatter(out, in, 0);
      EXPECT_EQ(out.to_vector<int32_t>(),
                rank == 0 ? (std::vector<int32_t>{1, 2}) : (std::vector<int32_t>{3, 4}));
      return;
    }
    case OpKind::ReduceScatter: {
      Tensor out = like();
      reduce_scatter(out, {t, t});
      EXPECT_EQ(out.to_vector<int32_t>(), (std::vector<int32_t>{3, 14}));
      return;
    }
    case OpKind::AllToAll: {
      std::vector<Tensor> out;
      all_to_all(out, {t, t});
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(out[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 7}));
      return;
    }
    case OpKind::Send:
    case OpKind::Recv: {
      // Rank 0, which runs first, makes the call under test.
      const int sender = op == OpKind::Send ? 0 : 1;
      if (rank == sender) {
        send(t, 1 - sender);
      } else {
        Tensor in = like();
        EXPECT_EQ(recv(in, sender), sender);
        EXPECT_EQ(in.to_vector<int32_t>(), (std::vector<int32_t>{sender + 1, 7}));
      }
      return;
    }
    case OpKind::NewGroup: {
      Group g = new_group({0, 1});
      EXPECT_EQ(g.size(), 2);
      return;
    }
  }
}

TEST(SimBackendMatrix, EveryOpOnEveryDeviceFollowsTheTable) {
  for (const std::string& backend : backends) {
    for (OpKind op : all_ops) {
      for (Device device : {Device::cpu(), Device::cuda(0)}) {
        SCOPED_TRACE(fmt::format("{} {} on {}", backend, op_name(op), device.str()));
        const Row want = expected_table(backend).at(op);
        const bool supported = (device.is_cuda() ? want.cuda : want.cpu) != 'N';
        // Each rank's own GPU: nccl binds a rank to cuda:<local rank>.
        sim::Report report = simulate(
            2, [&] { call_op(op, device.is_cuda() ? Device::cuda(get_local_rank()) : device); },
            options_for(backend));
        EXPECT_EQ(report.outcome, supported ? sim::Outcome::Ok : sim::Outcome::Unsupported)
            << report.to_text();
        if (!supported) {
          const std::string device_name = device.is_cuda() ? "cuda" : "cpu";
          EXPECT_TRUE(Contains(report.message, fmt::format("the {} backend does not support {} on "
                                                           "{} tensors",
                                                           backend, op_name(op), device_name)));
          EXPECT_TRUE(Contains(report.message, "capabilities_test.cpp:"));
        }
      }
    }
  }
}

TEST(SimBackendMatrix, UnsupportedNamesBackendOpDeviceAndCallSiteInMessageAndRow) {
  int line = 0;
  sim::Report report = simulate(
      2,
      [&] {
        barrier();  // collective seq 0
        const Device gpu = Device::cuda(get_rank());
        Tensor out = Tensor::zeros({1}, DType::Float32, gpu);
        std::vector<Tensor> in = {Tensor::zeros({1}, DType::Float32, gpu),
                                  Tensor::zeros({1}, DType::Float32, gpu)};
        line = __LINE__ + 1;
        reduce_scatter(out, in);
        ADD_FAILURE() << "reduce_scatter of cuda tensors ran under gloo";
      },
      options_for("gloo"));
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  // Rank 1 gets there first: it completes the barrier and runs on while rank 0 is woken.
  EXPECT_TRUE(Contains(report.message, fmt::format("reduce_scatter on group 'world' (rank 1 of 2) "
                                                   "at {}: the gloo backend does not support "
                                                   "reduce_scatter on cuda tensors",
                                                   site(line))));
  EXPECT_TRUE(Contains(report.to_json(), "\"outcome\": \"unsupported\""));
  ASSERT_EQ(report.ranks.size(), 2u);
  for (const auto& row : report.ranks) {
    SCOPED_TRACE(fmt::format("rank {}", row.rank));
    EXPECT_EQ(row.state, "failed");
    EXPECT_EQ(row.op, "reduce_scatter") << "the row names the rejected op, not the barrier";
    EXPECT_EQ(row.where, site(line));
    EXPECT_EQ(row.group, "world");
    EXPECT_EQ(row.seq, 1);
    EXPECT_TRUE(Contains(row.error, "gloo"));
  }
}

TEST(SimBackendMatrix, RejectedPointToPointRowNamesItsOwnSequence) {
  int line0 = 0, line1 = 0;
  sim::Report report = simulate(
      2,
      [&] {
        Tensor t = Tensor::of<int64_t>({5});
        all_reduce(t);  // staged on nccl: fine
        if (get_rank() == 0) {
          line0 = __LINE__ + 1;
          send(t, 1);
        } else {
          line1 = __LINE__ + 1;
          recv(t, 0);
        }
      },
      options_for("nccl"));
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  EXPECT_TRUE(Contains(report.message, "nccl"));
  EXPECT_TRUE(Contains(report.message, "on cpu tensors"));
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.ranks[0].op, "send");
  EXPECT_EQ(report.ranks[0].where, site(line0));
  EXPECT_EQ(report.ranks[0].seq, 0);
  EXPECT_EQ(report.ranks[1].op, "recv");
  EXPECT_EQ(report.ranks[1].where, site(line1));
  EXPECT_EQ(report.ranks[1].seq, 0);
}

TEST(SimBackendMatrix, NcclRejectsBitwiseAllReduceInTheSimulator) {
  int line = 0;
  sim::Report report = simulate(
      2,
      [&] {
        Tensor t = Tensor::of<int32_t>({6}, comm_device());
        line = __LINE__ + 1;
        all_reduce(t, ReduceOp::BXor);
      },
      options_for("nccl"));
  EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
  EXPECT_TRUE(Contains(report.message, "the nccl backend has no 'bxor' reduction"));
  EXPECT_TRUE(Contains(report.message, site(line)));
  // gloo has it.
  run_ranks(
      2,
      [] {
        Tensor t = Tensor::of<int32_t>({get_rank() == 0 ? 6 : 3}, comm_device());
        all_reduce(t, ReduceOp::BXor);
        EXPECT_EQ(t.item<int32_t>(), 5);
      },
      options_for("gloo"));
}

TEST(SimBackendMatrix, MixedDevicesInOneOpAreRejected) {
  for (const std::string& backend : backends) {
    SCOPED_TRACE(backend);
    int line = 0;
    sim::Report report = simulate(
        2,
        [&] {
          Tensor in = Tensor::of<float>({1.0f}, Device::cpu());
          std::vector<Tensor> out = {Tensor::zeros({1}, DType::Float32, Device::cuda(0)),
                                     Tensor::zeros({1}, DType::Float32, Device::cuda(0))};
          line = __LINE__ + 1;
          all_gather_async(out, in).wait();
        },
        options_for(backend));
    EXPECT_EQ(report.outcome, sim::Outcome::Unsupported) << report.to_text();
    EXPECT_TRUE(Contains(report.message, "different devices (cpu and cuda:0)"));
    EXPECT_TRUE(Contains(report.message, site(line)));
    EXPECT_EQ(report.ranks.at(0).op, "all_gather");
  }
}

}  // namespace
}  // namespace ranks::testing
