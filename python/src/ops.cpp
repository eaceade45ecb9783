// Tensor collectives and point-to-point. Each takes the program's tensors by DLPack (no copy),
// starts the op's asynchronous form with the Python call site, and either returns the Work
// (async_op=True, as torch.distributed) or waits for it. Output lists are allocated by the
// caller (dist.py, with torch.empty_like or numpy.empty_like), so results are the program's own
// tensor type on its own device.

#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <optional>
#include <vector>

#include "bindings.hpp"
#include "ranks/collectives.hpp"
#include "ranks/errors.hpp"
#include "ranks/reduce_op.hpp"

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

}  // namespace

void wait_for(Work& work) {
  if (simulating()) {
    work.wait();
  } else {
    py::gil_scoped_release unlocked;
    work.wait();
  }
}

void wait_for(Work& work, std::chrono::milliseconds timeout) {
  if (simulating()) {
    work.wait(timeout);
  } else {
    py::gil_scoped_release unlocked;
    work.wait(timeout);
  }
}

namespace {

// The op's result for Python: its Work when async_op, else None once it has completed.
py::object finish(Work work, std::vector<Tensor> tensors, bool async_op) {
  if (async_op) return py::cast(PendingOp{std::move(work), std::move(tensors)});
  wait_for(work);
  return py::none();
}

void append(std::vector<Tensor>& to, const std::vector<Tensor>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

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
      .def("is_completed", [](PendingOp& op) { return op.work.is_completed(); })
      .def("source_rank", [](PendingOp& op) { return op.work.source_rank(); });

  m.def("completed_work", [] { return PendingOp{}; });
  m.def("all_reduce", [](py::handle data, std::string op, py::handle group, bool async_op) {
    Tensor tensor = tensor_of(data, "data");
    Work work = all_reduce_async(tensor, op, group_of(group), python_call_site());
    return finish(std::move(work), {tensor}, async_op);
  });
  m.def("reduce", [](py::handle data, int dst, std::string op, py::handle group, bool async_op) {
    Tensor tensor = tensor_of(data, "data");
    Work work = reduce_async(tensor, dst, parse_reduce_op(op), group_of(group), python_call_site());
    return finish(std::move(work), {tensor}, async_op);
  });
  m.def("broadcast", [](py::handle data, int src, py::handle group, bool async_op) {
    Tensor tensor = tensor_of(data, "data");
    Work work = broadcast_async(tensor, src, group_of(group), python_call_site());
    return finish(std::move(work), {tensor}, async_op);
  });
  m.def("all_gather",
        [](py::list outputs, py::handle data, py::handle group, bool async_op) {
          std::vector<Tensor> out = tensors_of(outputs, "tensor_list");
          Tensor in = tensor_of(data, "data");
          Work work = all_gather_async(out, in, group_of(group), python_call_site());
          out.push_back(in);
          return finish(std::move(work), std::move(out), async_op);
        });
  m.def("gather",
        [](py::list outputs, py::handle data, int dst, py::handle group, bool async_op) {
          std::vector<Tensor> out = tensors_of(outputs, "gather_list");
          Tensor in = tensor_of(data, "data");
          Work work = gather_async(out, in, dst, group_of(group), python_call_site());
          out.push_back(in);
          return finish(std::move(work), std::move(out), async_op);
        });
  m.def("scatter",
        [](py::handle output, py::list inputs, int src, py::handle group, bool async_op) {
          Tensor out = tensor_of(output, "tensor");
          std::vector<Tensor> in = tensors_of(inputs, "scatter_list");
          Work work = scatter_async(out, in, src, group_of(group), python_call_site());
          in.push_back(out);
          return finish(std::move(work), std::move(in), async_op);
        });
  m.def("reduce_scatter", [](py::handle output, py::list inputs, std::string op,
                             py::handle group, bool async_op) {
    Tensor out = tensor_of(output, "output");
    std::vector<Tensor> in = tensors_of(inputs, "input_list");
    Work work =
        reduce_scatter_async(out, in, parse_reduce_op(op), group_of(group), python_call_site());
    in.push_back(out);
    return finish(std::move(work), std::move(in), async_op);
  });
  m.def("all_to_all",
        [](py::list outputs, py::list inputs, py::handle group, bool async_op) {
          std::vector<Tensor> out = tensors_of(outputs, "output_tensor_list");
          std::vector<Tensor> in = tensors_of(inputs, "input_tensor_list");
          Work work = all_to_all_async(out, in, group_of(group), python_call_site());
          append(out, in);
          return finish(std::move(work), std::move(out), async_op);
        });
  m.def("barrier_async", [](py::handle group) {
    return PendingOp{barrier_async(group_of(group), python_call_site()), {}};
  });
  m.def("isend", [](py::handle data, int dst, py::handle group, int tag) {
    Tensor tensor = tensor_of(data, "tensor");
    return PendingOp{isend(tensor, dst, group_of(group), tag, python_call_site()), {tensor}};
  });
  m.def("irecv", [](py::handle data, int src, py::handle group, int tag) {
    Tensor tensor = tensor_of(data, "tensor");
    return PendingOp{irecv(tensor, src, group_of(group), tag, python_call_site()), {tensor}};
  });
  m.def("send", [](py::handle data, int dst, py::handle group, int tag) {
    Tensor tensor = tensor_of(data, "tensor");
    Work work = isend(tensor, dst, group_of(group), tag, python_call_site());
    wait_for(work);
  });
  m.def("recv", [](py::handle data, int src, py::handle group, int tag) {
    Tensor tensor = tensor_of(data, "tensor");
    Work work = irecv(tensor, src, group_of(group), tag, python_call_site());
    wait_for(work);
    return work.source_rank();
  });
}

}  // namespace ranks::python
