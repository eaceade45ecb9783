// Object collectives: Python objects travel pickled (dist.py pickles and unpickles, as MMEngine
// and torch do), and the bytes go through ranks' own object collectives, which check lengths
// before allocating and name the API, group and call site in every message and report.

#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "dlpack/dlpack.h"
#include "ranks/objects.hpp"

namespace ranks::python {

namespace {

using Pickles = std::vector<std::string>;

std::vector<py::bytes> as_bytes(const Pickles& pickles) {
  std::vector<py::bytes> out;
  out.reserve(pickles.size());
  for (const std::string& pickle : pickles) out.emplace_back(pickle);
  return out;
}


}  // namespace

void register_objects(py::module_& m) {
  m.def("broadcast_object_list", [](Pickles pickles, int src, py::handle group) {
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    blocking([&] {
      broadcast_object_list(pickles, src, resolved, where);
      return 0;
    });
    return as_bytes(pickles);
  });
  m.def("all_gather_object", [](std::string pickle, py::handle group) {
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    return as_bytes(blocking([&] { return all_gather_object(pickle, resolved, where); }));
  });
  m.def("gather_object",
        [](std::string pickle, int dst, py::handle group) -> std::optional<std::vector<py::bytes>> {
          const Group resolved = group_of(group);
          const std::source_location where = python_call_site();
          auto gathered = blocking([&] { return gather_object(pickle, dst, resolved, where); });
          if (!gathered) return std::nullopt;
          return as_bytes(*gathered);
        });
  m.def("collect_results",
        [](Pickles part, size_t size, std::string device,
           std::optional<std::string> tmpdir) -> std::optional<std::vector<py::bytes>> {
          const std::source_location where = python_call_site();
          std::optional<std::filesystem::path> directory;
          if (tmpdir) directory = *tmpdir;
          auto collected =
              blocking([&] { return collect_results(part, size, device, directory, where); });
          if (!collected) return std::nullopt;
          return as_bytes(*collected);
        });
  m.def("sync_random_seed", [](py::handle group) {
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    return blocking([&] { return sync_random_seed(resolved, where); });
  });
  // Values come back as new tensors (promoted to one dtype, on their own device), as DLPack
  // capsules that dist.py turns into the program's tensor type.
  m.def("all_reduce_dict", [](py::dict data, std::string op, py::handle group) {
    std::map<std::string, Tensor> values;
    for (auto [key, value] : data) {
      const std::string name = py::str(key);
      values.emplace(name, tensor_of(value, "data['" + name + "']"));
    }
    const Group resolved = group_of(group);
    const std::source_location where = python_call_site();
    blocking([&] {
      all_reduce_dict(values, op, resolved, where);
      return 0;
    });
    py::dict out;
    for (auto& [name, value] : values) {
      out[py::str(name)] = py::capsule(value.to_dlpack(), "dltensor", [](PyObject* capsule) {
        if (PyCapsule_IsValid(capsule, "dltensor")) {  // never consumed: still ours to free
          auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
          managed->deleter(managed);
        }
      });
    }
    return out;
  });
}

}  // namespace ranks::python
