// Tensor collectives and point-to-point. Each takes the program's tensors by DLPack (no copy),
// starts the op's asynchronous form with the Python call site, and either returns the Work
// (async_op=True, as torch.distributed) or waits for it. Output lists are allocated by the
// caller (dist.py, with torch.empty_like or numpy.empty_like), so results are the program's own
// tensor type on its own device.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "bindings.hpp"
#include "ranks/collectives.hpp"
#include "ranks/detail/foreign_call.hpp"
#include "ranks/detail/gather_into.hpp"
#include "ranks/errors.hpp"
#include "ranks/init.hpp"
#include "ranks/reduce_op.hpp"
#include "ranks/sim.hpp"

namespace ranks::python {

namespace {

// An op in flight from Python: the Work, and the tensors (and through them the Python objects)
// it reads or writes, kept alive until the Work is gone.
struct PendingOp {
  Work work;
  std::vector<Tensor> tensors;
};

std::string fmt_index(std::string_view what, size_t index) {
  return std::string(what) + "[" + std::to_string(index) + "]";
}

std::vector<Tensor> tensors_of(const py::list& list, std::string_view what) {
  std::vector<Tensor> tensors;
  tensors.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    tensors.push_back(tensor_of(list[i], fmt_index(what, i)));
  }
  return tensors;
}

// An op's result for Python: its Work when async_op, else None once it has completed. A
// blocking call runs the op's blocking form, not the async one plus a wait: a backend may run a
// waited op on the calling thread (gloo does), sparing a thread hand-off per call.
template <class Async, class Blocking>
py::object run(bool async_op, std::vector<Tensor> tensors, Async&& start, Blocking&& call) {
  if (async_op) return py::cast(PendingOp{start(), std::move(tensors)});
  blocking(call);
  return py::none();
}

}  // namespace

std::string op_name_of(py::handle op) {
  if (!PyUnicode_Check(op.ptr())) {
    std::vector<std::string_view> names;
    for (auto each = ReduceOp::Sum; each <= ReduceOp::BXor;
         each = static_cast<ReduceOp>(static_cast<int>(each) + 1)) {
      names.push_back(reduce_op_name(each));
    }
    throw InvalidArgument(fmt::format("op must be a string, one of {}; got {}",
                                      fmt::join(names, ", "), py::repr(op).cast<std::string>()));
  }
  return op.cast<std::string>();
}

void register_ops(py::module_& m) {
  py::class_<PendingOp>(m, "Work")
      .def("wait",
           [](PendingOp& op, std::optional<double> timeout) {
             if (timeout) {
               wait_for(op.work, std::chrono::milliseconds(static_cast<int64_t>(*timeout * 1000)));
             } else {
               wait_for(op.work);
             }
             return true;
           },
           py::arg("timeout") = py::none())
      .def("is_completed",
           [](PendingOp& op) { return op.work.is_completed(python_call_site()); })
      .def("source_rank", [](PendingOp& op) { return op.work.source_rank(); });

  m.def("completed_work", [] { return PendingOp{}; });
  // os._exit on a simulated rank (ranks.sim._exits_reported): the C library's exit(), which the
  // simulator's exit guard turns into a report naming the rank and its last op (the earlier
  // ranks' failures kept), as it does for a C++ rank that calls exit().
  m.def("exit_process", [](int status) {
    sim::rank_exits_at(python_call_site());  // the report names the program's os._exit line
    std::exit(status);
  });
  // The C++ API's own loop on the same tensor, for reports/python_overhead.py: the Python call's
  // overhead is its time per call minus this one's, measured in the same processes.
  m.def("cpp_all_reduce_loop", [](py::handle data, int iterations) {
    Tensor tensor = tensor_of(data, "data");
    blocking([&] {
      for (int i = 0; i < iterations; ++i) all_reduce(tensor);
    });
  });
  m.def("op_name_of", &op_name_of);
  // MMEngine's early return at world size 1 is no answer for a thread that is none of a running
  // simulation's ranks (its world is not 1): refused there as its op would be.
  m.def("check_foreign_call", [](const std::string& op) {
    detail::check_foreign_call(op, python_call_site());
  });
  // dist.all_reduce itself, the op a training loop calls most: no Python frame in between,
  // which the call-site lookup would materialise as a frame object on every call, only to skip
  // it. MMEngine's does nothing at world size 1 (or not distributed), op unchecked.
  m.def(
      "all_reduce",
      [](py::handle data, py::handle op, py::handle group, bool async_op) {
        const Group g = group_of(group);
        if (get_world_size(g) <= 1) {
          detail::check_foreign_call("all_reduce", python_call_site());
          return async_op ? py::cast(PendingOp{}) : py::none();
        }
        const std::string name = op_name_of(op);
        Tensor t = tensor_of(data, "data");
        const where_t where = python_call_site();
        return run(
            async_op, {t}, [&] { return all_reduce_async(t, name, g, where); },
            [&] { all_reduce(t, name, g, where); });
      },
      py::arg("data"), py::arg("op") = "sum", py::arg("group") = py::none(),
      py::arg("async_op") = false,
      "Reduces ``data`` in place across ``group`` (op: sum, mean, product, min, max, band, bor,\n"
      "bxor; case-insensitive). World size 1 or not distributed: nothing happens.");
  m.def("reduce", [](py::handle data, int dst, std::string op, py::handle group, bool async_op) {
    const Group g = group_of(group);
    Tensor t = tensor_of(data, "data");
    const ReduceOp reduce_op = parse_reduce_op(op);
    const where_t where = python_call_site();
    return run(
        async_op, {t}, [&] { return reduce_async(t, dst, reduce_op, g, where); },
        [&] { reduce(t, dst, reduce_op, g, where); });
  });
  m.def("broadcast", [](py::handle data, int src, py::handle group, bool async_op) {
    const Group g = group_of(group);
    Tensor t = tensor_of(data, "data");
    const where_t where = python_call_site();
    return run(
        async_op, {t}, [&] { return broadcast_async(t, src, g, where); },
        [&] { broadcast(t, src, g, where); });
  });
  m.def("all_gather", [](py::list outputs, py::handle data, py::handle group, bool async_op) {
    const Group g = group_of(group);
    std::vector<Tensor> out = tensors_of(outputs, "tensor_list");
    Tensor in = tensor_of(data, "data");
    const where_t where = python_call_site();
    std::vector<Tensor> kept = out;
    kept.push_back(in);
    return run(
        async_op, std::move(kept), [&] { return all_gather_async(out, in, g, where); },
        [&] { detail::all_gather_into(out, in, g, where); });
  });
  m.def("gather",
        [](py::list outputs, py::handle data, int dst, py::handle group, bool async_op) {
          const Group g = group_of(group);
          std::vector<Tensor> out = tensors_of(outputs, "gather_list");
          Tensor in = tensor_of(data, "data");
          const where_t where = python_call_site();
          std::vector<Tensor> kept = out;
          kept.push_back(in);
          return run(
              async_op, std::move(kept), [&] { return gather_async(out, in, dst, g, where); },
              [&] { detail::gather_into(out, in, dst, g, where); });
        });
  m.def("scatter",
        [](py::handle output, py::list inputs, int src, py::handle group, bool async_op) {
          const Group g = group_of(group);
          Tensor out = tensor_of(output, "tensor");
          std::vector<Tensor> in = tensors_of(inputs, "scatter_list");
          const where_t where = python_call_site();
          std::vector<Tensor> kept = in;
          kept.push_back(out);
          return run(
              async_op, std::move(kept), [&] { return scatter_async(out, in, src, g, where); },
              [&] { scatter(out, in, src, g, where); });
        });
  m.def("reduce_scatter", [](py::handle output, py::list inputs, std::string op,
                             py::handle group, bool async_op) {
    const Group g = group_of(group);
    Tensor out = tensor_of(output, "output");
    std::vector<Tensor> in = tensors_of(inputs, "input_list");
    const ReduceOp reduce_op = parse_reduce_op(op);
    const where_t where = python_call_site();
    std::vector<Tensor> kept = in;
    kept.push_back(out);
    return run(
        async_op, std::move(kept),
        [&] { return reduce_scatter_async(out, in, reduce_op, g, where); },
        [&] { reduce_scatter(out, in, reduce_op, g, where); });
  });
  m.def("all_to_all", [](py::list outputs, py::list inputs, py::handle group, bool async_op) {
    const Group g = group_of(group);
    std::vector<Tensor> out = tensors_of(outputs, "output_tensor_list");
    std::vector<Tensor> in = tensors_of(inputs, "input_tensor_list");
    const where_t where = python_call_site();
    std::vector<Tensor> kept = out;
    kept.insert(kept.end(), in.begin(), in.end());
    return run(
        async_op, std::move(kept), [&] { return all_to_all_async(out, in, g, where); },
        [&] { all_to_all(out, in, g, where); });
  });
  m.def("barrier_async", [](py::handle group) {
    return PendingOp{barrier_async(group_of(group), python_call_site()), {}};
  });
  m.def("isend", [](py::handle data, int dst, py::handle group, int tag) {
    const Group g = group_of(group);
    Tensor t = tensor_of(data, "tensor");
    return PendingOp{isend(t, dst, g, tag, python_call_site()), {t}};
  });
  m.def("irecv", [](py::handle data, int src, py::handle group, int tag) {
    const Group g = group_of(group);
    Tensor t = tensor_of(data, "tensor");
    return PendingOp{irecv(t, src, g, tag, python_call_site()), {t}};
  });
  m.def("send", [](py::handle data, int dst, py::handle group, int tag) {
    const Group g = group_of(group);
    Tensor t = tensor_of(data, "tensor");
    const where_t where = python_call_site();
    blocking([&] { send(t, dst, g, tag, where); });
  });
  m.def("recv", [](py::handle data, int src, py::handle group, int tag) {
    const Group g = group_of(group);
    Tensor t = tensor_of(data, "tensor");
    const where_t where = python_call_site();
    int sender = -1;
    blocking([&] { sender = recv(t, src, g, tag, where); });
    return sender;
  });
}

}  // namespace ranks::python
